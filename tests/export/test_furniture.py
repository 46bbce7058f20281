"""The furniture switch as a user of the CLI meets it: ``longdoc parse
--furniture keep`` keeps each page's running header before its body and
its footer after it in md, txt and chunks; the default (export.furniture
drop) and ``--furniture drop`` leave them out; a config file's
``export.furniture: keep`` makes keep the default.

Born-digital input read from its text layer (``--ocr auto``, no regions
needed): no OCR or region model is loaded, so this file is in the fast tier.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from longdoc.export import ExportContext, open_exports
from longdoc.model import BBox, Block, BlockKind, DocumentStatus, Line, Page
from tests.docgen import english_report

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: object) -> subprocess.CompletedProcess[str]:
    """``python -m longdoc.cli`` in a child process importing this checkout."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env = {k: v for k, v in env.items() if not k.startswith("LONGDOC_")}
    return subprocess.run([sys.executable, "-m", "longdoc.cli", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=300, cwd=ROOT)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return english_report(tmp_path_factory.mktemp("furniture-doc"), pages=4, seed=3)


@pytest.fixture(scope="module")
def parsed(report, tmp_path_factory):
    """``parsed(*flags, config=None) -> folder`` of one CLI run (each run once)."""
    runs: dict[tuple, Path] = {}

    def run(*flags: str, config: str | None = None) -> Path:
        key = (flags, config)
        if key not in runs:
            out = tmp_path_factory.mktemp("furniture-out")
            extra: list[object] = []
            if config is not None:
                cfg = out / "longdoc.yaml"
                cfg.write_text(config)
                extra = ["--config", cfg]
            proc = cli("parse", report.pdf_path, "-o", out / "o", "--ocr", "auto", "--format", "md,txt,chunks,json",
                       "-q", *flags, *extra)
            assert proc.returncode == 0, proc.stderr
            runs[key] = out / "o"
        return runs[key]

    return run


def read(folder: Path, stem: str) -> tuple[str, str, list[dict], dict]:
    md = (folder / f"{stem}.md").read_text(encoding="utf-8")
    txt = (folder / f"{stem}.txt").read_text(encoding="utf-8")
    chunks = [json.loads(line) for line in (folder / f"{stem}.chunks.jsonl").read_text(encoding="utf-8").splitlines()]
    doc = json.loads((folder / f"{stem}.json").read_text(encoding="utf-8"))
    return md, txt, chunks, doc


def md_pages(md: str, n: int) -> list[list[str]]:
    """Each page's Markdown blocks (the ``<!-- page N -->`` marker left out)."""
    out = []
    for k in range(1, n + 1):
        start = md.index(f"<!-- page {k} -->") + len(f"<!-- page {k} -->")
        end = md.index(f"<!-- page {k + 1} -->") if k < n else len(md)
        out.append([b.strip() for b in md[start:end].split("\n\n") if b.strip()])
    return out


def txt_pages(txt: str) -> list[list[str]]:
    """Each page's blocks of the text export (pages split at the form feed)."""
    return [[b.strip() for b in page.split("\n\n") if b.strip()] for page in txt.split("\f")]


def assert_text_layer_only(doc: dict) -> None:
    """No model read these pages: the fast tier's guard cannot see a child process."""
    for page in doc["pages"]:
        assert page["text_source"] == "text_layer", page["number"]
        assert set(page["timings"]) <= {"text_layer", "layout"}, page["timings"]


def test_keep_puts_each_pages_header_first_and_its_footer_last(report, parsed):
    md, txt, chunks, doc = read(parsed("--furniture", "keep"), report.pdf_path.stem)
    assert_text_layer_only(doc)
    assert doc["options"]["furniture"] == "keep"
    n = report.pages
    assert all(len(f) == 2 for f in report.furniture)
    for view in (md_pages(md, n), txt_pages(txt)):
        assert len(view) == n
        for k, (blocks, (header, footer)) in enumerate(zip(view, report.furniture), start=1):
            assert blocks[0] == header, (k, blocks[:2])
            assert blocks[-1] == footer, (k, blocks[-2:])
            assert sum(b in (header, footer) for b in blocks) == 2, k
    # the body is what the default prints: only the furniture was added
    md_drop, txt_drop, _, _ = read(parsed(), report.pdf_path.stem)
    furniture = {s for page in report.furniture for s in page}
    assert [[b for b in page if b not in furniture] for page in txt_pages(txt)] == txt_pages(txt_drop)
    # (in Markdown a list continued over a page break is one list, its page's marker after it, where no
    # kept header or footer stands between its parts: compare the lines, not where the markers fall)
    body = [line for page in md_pages(md, n) for b in page if b not in furniture for line in b.splitlines()]
    assert body == [line for page in md_pages(md_drop, n) for b in page for line in b.splitlines()]
    # chunks: every header and footer is in them, in page order, as header / page_number blocks
    text = "\n".join(c["text"] for c in chunks)
    for header, footer in report.furniture:
        assert header in text and footer in text
    assert text.count(report.furniture[0][0]) == n
    positions = [text.index(f"Page {k} of {n}") for k in range(1, n + 1)]
    assert positions == sorted(positions)
    kinds = {k for c in chunks for k in c["kinds"]}
    assert "header" in kinds and kinds & {"footer", "page_number"}


@pytest.mark.parametrize("flags", [(), ("--furniture", "drop")], ids=["default", "drop"])
def test_default_and_drop_leave_headers_and_footers_out(report, parsed, flags):
    md, txt, chunks, doc = read(parsed(*flags), report.pdf_path.stem)
    assert_text_layer_only(doc)
    assert doc["options"]["furniture"] == "drop"
    chunk_text = "\n".join(c["text"] for c in chunks)
    for header, footer in report.furniture:
        for view in (md, txt, chunk_text):
            assert header not in view and footer not in view
    # the JSON has them either way
    kinds = [b["kind"] for p in doc["pages"] for b in p["blocks"]]
    assert kinds.count("header") == report.pages
    assert report.main_text_per_page[0].split()[0] in txt


def test_config_file_makes_keep_the_default_and_the_flag_overrides_it(report, parsed):
    config = "export:\n  furniture: keep\n"
    header = report.furniture[0][0]
    md, txt, chunks, doc = read(parsed(config=config), report.pdf_path.stem)
    assert doc["options"]["furniture"] == "keep"
    assert txt_pages(txt)[0][0] == header and md.count(header) == report.pages
    assert header in "\n".join(c["text"] for c in chunks)
    _, txt, _, doc = read(parsed("--furniture", "drop", config=config), report.pdf_path.stem)
    assert doc["options"]["furniture"] == "drop" and header not in txt


def test_an_unknown_value_is_a_usage_error(report, tmp_path):
    proc = cli("parse", report.pdf_path, "-o", tmp_path / "o", "--furniture", "maybe", "-q")
    assert proc.returncode == 2
    assert "invalid_option" in proc.stderr and "keep or drop" in proc.stderr
    assert not (tmp_path / "o").exists()


def _block(i: int, kind: BlockKind, text: str) -> Block:
    box = BBox(x0=72, y0=40 + 20 * i, x1=500, y1=52 + 20 * i)
    return Block(id=f"p1-b{i}", kind=kind, bbox=box, order=i, text=text,
                 lines=[Line(text=text, bbox=box, confidence=1.0, page=1)], source_pages=[1])


def test_the_writers_keep_furniture_in_reading_order(tmp_path):
    """Blocks given out of order come out by ``order``: header, body, footer, page number."""
    page = Page(number=1, width=612, height=792, blocks=[
        _block(3, BlockKind.PAGE_NUMBER, "7"), _block(1, BlockKind.PARAGRAPH, "Body text."),
        _block(0, BlockKind.HEADER, "Case 2026-0042"), _block(2, BlockKind.FOOTER, "Confidential"),
    ])
    header = {"schema": "longdoc.document/1", "longdoc_version": "x", "options": {},
              "source": {"name": "d.pdf", "sha256": "0", "media_type": "application/pdf", "page_count": 1,
                         "selected_pages": [1]}}
    for keep, want in ((True, ["Case 2026-0042", "Body text.", "Confidential", "7"]), (False, ["Body text."])):
        ex = open_exports(tmp_path / str(keep), "d", ("md", "txt", "chunks"), header, ExportContext(furniture=keep))
        ex.write_page(page)
        paths = ex.close(DocumentStatus.SUCCEEDED, [], {})
        assert paths["txt"].read_text().strip().split("\n\n") == want
        assert paths["md"].read_text().strip().split("\n\n") == ["<!-- page 1 -->", *want]
        chunk = json.loads(paths["chunks"].read_text())
        assert chunk["text"].split("\n\n") == want
