"""The CLI as a user runs it: outputs, exit codes and messages."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from longdoc import __version__
from longdoc.cli import main
from longdoc.errors import EXIT_BAD_INPUT, EXIT_CONFIG, EXIT_ENCRYPTED, EXIT_LIMIT, EXIT_UNREADABLE, EXIT_USAGE
from tests.docgen import english_report, long_textlayer
from tests.ingest.files import encrypted_pdf, png_claiming_size, truncated


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_console_script_version():
    proc = subprocess.run([sys.executable, "-m", "longdoc.cli", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == f"longdoc {__version__}"


def test_parse_writes_the_asked_formats(tmp_path, capsys):
    doc = english_report(tmp_path, pages=3)
    code, out, err = run_cli(capsys, "parse", doc.pdf_path, "-o", tmp_path / "o", "--format", "md,txt", "--ocr", "off")
    assert code == 0, err
    stem = doc.pdf_path.stem
    assert (tmp_path / "o" / f"{stem}.md").is_file() and (tmp_path / "o" / f"{stem}.txt").is_file()
    assert not (tmp_path / "o" / f"{stem}.json").exists()
    assert f"md: {tmp_path / 'o' / stem}.md" in out
    assert "3/3 pages" in err  # plain progress lines when not on a terminal


def test_parse_writes_the_export_formats_under_their_file_names(tmp_path, capsys):
    doc = english_report(tmp_path, pages=3)
    code, out, err = run_cli(capsys, "parse", doc.pdf_path, "-o", tmp_path / "o", "--format", "pdf,chunks,docling",
                             "--ocr", "off")
    assert code == 0, err
    stem = tmp_path / "o" / doc.pdf_path.stem
    for fmt, name in (("pdf", f"{stem}.pdf"), ("chunks", f"{stem}.chunks.jsonl"), ("docling", f"{stem}.docling.json")):
        assert f"{fmt}: {name}" in out
    assert (tmp_path / "o" / f"{doc.pdf_path.stem}.pdf").read_bytes()[:5] == b"%PDF-"
    assert json.loads((tmp_path / "o" / f"{doc.pdf_path.stem}.docling.json").read_text())["schema_name"] == \
        "DoclingDocument"
    assert not list((tmp_path / "o").glob("*.partial")) and not list((tmp_path / "o").glob("*.part"))


def test_the_profile_chosen_is_recorded_with_what_it_set(tmp_path, capsys):
    doc = english_report(tmp_path, pages=3)
    code, _, err = run_cli(capsys, "parse", doc.pdf_path, "-o", tmp_path / "o", "--format", "json", "--ocr", "off",
                           "--profile", "fast")
    assert code == 0, err
    options = json.loads((tmp_path / "o" / f"{doc.pdf_path.stem}.json").read_text())["options"]
    assert options["profile"] == "fast" and options["regions"] is False  # fast's own: no layout models


def test_config_file_and_environment_reach_the_run(tmp_path, capsys, monkeypatch):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("inference: {page_chunk_size: 5, chunk_overlap: 1}\nlimits: {max_pages: 7}\n")
    monkeypatch.setenv("LONGDOC_INFERENCE__DPI", "123")
    code, out, _ = run_cli(capsys, "config", "show", "--config", cfg)
    assert code == 0
    assert "page_chunk_size: 5" in out and "max_pages: 7" in out and "dpi: 123" in out


def test_config_show_gives_the_native_engines_architecture_defaults_as_null(capsys):
    """``window: null`` is the checkpoint's sliding_window and
    ``kv_budget_mb: null`` room for max_sequences, not fixed numbers."""
    import yaml

    code, out, _ = run_cli(capsys, "config", "show")
    assert code == 0
    native = yaml.safe_load(out)["inference"]["native"]
    assert native["window"] is None and native["kv_budget_mb"] is None and native["max_sequences"] == 16
    lines = out.splitlines()
    start = lines.index("  native:")
    block = lines[start + 1:next(i for i in range(start + 1, len(lines)) if not lines[i].startswith("    "))]
    assert "    window: null" in block and "    kv_budget_mb: null" in block


@pytest.mark.parametrize("make, code, exit_code", [
    (lambda p: encrypted_pdf(p / "e.pdf", user_password="pw"), "encrypted_pdf", EXIT_ENCRYPTED),
    (lambda p: truncated(english_report(p, pages=3).pdf_path, 0.3), "corrupt_file", EXIT_BAD_INPUT),
    (lambda p: (p / "x.pdf").write_bytes(b"PK\x03\x04 not a pdf at all") and p / "x.pdf", "unsupported_type", EXIT_BAD_INPUT),
    (lambda p: png_claiming_size(p / "bomb.png", 100_000, 100_000), "image_too_large", EXIT_LIMIT),
    (lambda p: p / "missing.pdf", "unreadable_path", EXIT_UNREADABLE),
    (lambda p: p, "unreadable_path", EXIT_UNREADABLE),  # a directory
    (lambda p: (p / "empty.pdf").write_bytes(b"") is not None and p / "empty.pdf", "empty_document", EXIT_BAD_INPUT),
])
def test_bad_input_gets_code_hint_and_exit_code(tmp_path, capsys, make, code, exit_code):
    path = make(tmp_path)
    rc, _, err = run_cli(capsys, "parse", path, "-o", tmp_path / "o")
    assert rc == exit_code, err
    assert f"error [{code}]" in err and "hint: " in err
    assert "Traceback" not in err


def test_an_output_folder_it_cannot_write_is_the_outputs_error(tmp_path, capsys):
    doc = english_report(tmp_path, pages=3)
    out = tmp_path / "o"
    out.mkdir()
    (out / ".longdoc").write_text("a file where the checkpoint folder goes")
    rc, _, err = run_cli(capsys, "parse", doc.pdf_path, "-o", out, "--ocr", "off")
    assert rc == EXIT_UNREADABLE and "error [output_unwritable]" in err and ".longdoc" in err, err
    assert "Traceback" not in err


def test_too_many_pages_names_the_limit(tmp_path, capsys):
    doc = long_textlayer(tmp_path, pages=12)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("limits: {max_pages: 10}\n")
    rc, _, err = run_cli(capsys, "parse", doc.pdf_path, "--config", cfg, "-o", tmp_path / "o")
    assert rc == EXIT_LIMIT and "error [too_many_pages]" in err and "12" in err and "10" in err


@pytest.mark.parametrize("args, code, exit_code", [
    (["--pages", "5-99"], "invalid_page_range", EXIT_USAGE),
    (["--ocr", "sometimes"], "invalid_option", EXIT_USAGE),
    (["--format", "docx"], "invalid_option", EXIT_USAGE),
    (["--profile", "fastest"], "invalid_option", EXIT_USAGE),
    (["--engine", "nope"], "unknown_engine", EXIT_CONFIG),
    (["--chunk-size", "2", "--overlap", "2"], "invalid_config", EXIT_CONFIG),
])
def test_bad_options_are_usage_errors(tmp_path, capsys, args, code, exit_code):
    doc = english_report(tmp_path, pages=3)
    rc, _, err = run_cli(capsys, "parse", doc.pdf_path, "-o", tmp_path / "o", "--ocr", "force", *args) \
        if "--ocr" not in args else run_cli(capsys, "parse", doc.pdf_path, "-o", tmp_path / "o", *args)
    assert rc == exit_code, err
    assert f"error [{code}]" in err


def test_one_bad_file_does_not_stop_the_others(tmp_path, capsys):
    good = english_report(tmp_path, pages=3)
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(b"%PDF-1.7\n garbage")
    rc, out, err = run_cli(capsys, "parse", bad, good.pdf_path, "-o", tmp_path / "o", "--ocr", "off")
    assert rc == EXIT_BAD_INPUT
    assert "error [corrupt_file]" in err and str(bad) in err
    assert json.loads((tmp_path / "o" / f"{good.pdf_path.stem}.json").read_text())["status"] == "succeeded"


def test_parse_of_a_stream_bomb_fails_that_page_and_writes_the_others(tmp_path):
    """The CLI used to read the bomb in its own process (and abort under an
    address-space limit); now the page fails alone in its sandbox (exit 10)."""
    from tests.ingest.files import good_page, pdf_with_pages, stream_bomb_page

    bomb = pdf_with_pages(tmp_path / "bomb.pdf", [good_page(1), stream_bomb_page(320), good_page(3)])
    cfg = tmp_path / "c.yaml"
    cfg.write_text("limits: {worker_memory_mb: 128}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "longdoc.cli", "parse", str(bomb), "-o", str(tmp_path / "o"), "--format", "txt",
         "--config", str(cfg)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 10, proc.stderr
    text = (tmp_path / "o" / "bomb.txt").read_text(encoding="utf-8")
    assert "Good page 1 " in text and "Good page 3 " in text
    assert "resource_limit" in proc.stderr or "resource_limit" in proc.stdout
