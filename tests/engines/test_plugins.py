"""Engines as plugins, through the real CLI (a process of its own, as a user
runs it): ``inference.plugins`` modules, the ``longdoc.engines`` entry-point
group of an installed package, and the test plugins of
``tests/plugins/misbehaving.py`` — each misbehaviour gets a clear per-page
error or a clean document, never a traceback or a lost page."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from longdoc.errors import EXIT_CONFIG, EXIT_PARTIAL
from tests.docgen import english_report

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "tests" / "plugins" / "misbehaving.py"


def _parse(tmp_path: Path, engine: str, plugins: list[str], *, pages: int = 3, env: dict | None = None,
           formats: str = "json,md,txt") -> tuple[subprocess.CompletedProcess, Path]:
    doc = english_report(tmp_path, pages=max(3, pages))
    cfg = tmp_path / "plugins.yaml"
    cfg.write_text(json.dumps({"inference": {"engine": engine, "plugins": plugins, "page_chunk_size": 2,
                                             "chunk_overlap": 0, "regions": False}}))
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "longdoc.cli", "parse", str(doc.pdf_path), "-o", str(out), "-q",
                           "--ocr", "force", "--format", formats, "--config", str(cfg)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, **(env or {})})
    return proc, out / f"{doc.pdf_path.stem}.json"


def _pages(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["pages"]


def test_a_plugin_file_registers_an_engine_the_cli_can_choose(tmp_path):
    proc, out = _parse(tmp_path, "noop", [str(PLUGIN)])
    assert proc.returncode == 0, proc.stderr
    pages = _pages(out)
    assert [p["number"] for p in pages] == [1, 2, 3]
    assert all(p["status"] == "ok" and p["engine"] == "noop" and not p["blocks"] for p in pages)


def test_the_fake_engine_is_chosen_by_name_without_any_plugin(tmp_path):
    proc, out = _parse(tmp_path, "fake", [])
    assert proc.returncode == 0, proc.stderr
    texts = ["\n".join(b["text"] for b in p["blocks"]) for p in _pages(out)]
    assert texts == [f"Fake text of page {n}" for n in (1, 2, 3)]


def test_an_engine_that_crashes_on_one_page_fails_that_page_alone(tmp_path):
    proc, out = _parse(tmp_path, "crash", [str(PLUGIN)], pages=4, env={"LONGDOC_TEST_CRASH_PAGE": "3"})
    assert proc.returncode == EXIT_PARTIAL, proc.stderr
    assert "Traceback" not in proc.stderr
    pages = {p["number"]: p for p in _pages(out)}
    assert sorted(pages) == [1, 2, 3, 4]
    assert pages[3]["status"] == "failed" and pages[3]["error"]["code"] == "engine_failed"
    assert "crashed on page 3" in pages[3]["error"]["message"]
    for n in (1, 2, 4):
        assert pages[n]["status"] == "ok" and f"Read page {n}" in pages[n]["blocks"][0]["text"]


def test_an_engine_that_runs_out_of_memory_on_a_page_fails_that_page_alone(tmp_path):
    proc, out = _parse(tmp_path, "oom", [str(PLUGIN)], env={"LONGDOC_TEST_OOM_PAGE": "2"})
    assert proc.returncode == EXIT_PARTIAL, proc.stderr
    pages = {p["number"]: p for p in _pages(out)}
    assert pages[2]["status"] == "failed" and pages[2]["error"]["code"] == "engine_failed"
    assert pages[1]["status"] == pages[3]["status"] == "ok"


def test_garbage_from_an_engine_never_reaches_the_outputs(tmp_path):
    proc, out = _parse(tmp_path, "garbage", [str(PLUGIN)])
    assert proc.returncode == 0, proc.stderr
    for path in out.parent.iterdir():
        if path.is_file():
            text = path.read_bytes().decode("utf-8")  # valid UTF-8: no lone surrogate
            assert not any(ord(ch) < 0x20 and ch not in "\n\t\r\f" for ch in text), path.name
    assert "\\u0000" not in out.read_text(encoding="utf-8") and "\\ud800" not in out.read_text(encoding="utf-8")
    assert "\ufffd[2J" in out.read_text(encoding="utf-8")  # what could not be written is marked, not hidden


def test_a_plugin_that_cannot_be_loaded_is_a_config_error(tmp_path):
    proc, _ = _parse(tmp_path, "noop", ["tests.plugins.no_such_module"])
    assert proc.returncode == EXIT_CONFIG, proc.stderr
    assert "error [invalid_config]" in proc.stderr and "no_such_module" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_installed_package_declares_engines_by_entry_point(tmp_path):
    site = tmp_path / "site"
    (site / "acme_ocr-1.0.dist-info").mkdir(parents=True)
    (site / "acme_ocr-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-ocr\nVersion: 1.0\n")
    (site / "acme_ocr-1.0.dist-info" / "entry_points.txt").write_text("[longdoc.engines]\nacme = acme_ocr:factory\n")
    (site / "acme_ocr.py").write_text(
        "from longdoc.engines import FakeEngine\n"
        "from longdoc.model import BBox, Line\n\n"
        "def factory(settings):\n"
        "    return FakeEngine(handler=lambda image: [Line(text=f'ACME {image.page}', page=image.page, confidence=1.0,\n"
        "                      bbox=BBox(x0=72, y0=72, x1=300, y1=86))], name='acme', version='acme-1.0')\n")
    proc, out = _parse(tmp_path, "acme", [], env={"PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])})
    assert proc.returncode == 0, proc.stderr
    assert [p["blocks"][0]["text"] for p in _pages(out)] == ["ACME 1", "ACME 2", "ACME 3"]
    assert all(p["engine_version"] == "acme-1.0" for p in _pages(out))


def test_an_unknown_engine_lists_the_plugin_ones_too(tmp_path):
    proc, _ = _parse(tmp_path, "nope", [str(PLUGIN)])
    assert proc.returncode == EXIT_CONFIG and "error [unknown_engine]" in proc.stderr
    assert "crash" in proc.stderr and "fake" in proc.stderr and "rapidocr" in proc.stderr
