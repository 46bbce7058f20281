"""Printed page labels as a user of the CLI meets them: each page of the
JSON export has ``label`` (the PDF's /PageLabels, else the number on its
page-number block, else null) and each chunk ``page_labels`` beside
``pages``; a resumed run keeps them, and a checkpoint written before labels
existed still loads and gets them back.

Born-digital input read from its text layer (``--ocr auto``, no regions
needed): no OCR or region model is loaded, so this file is in the fast tier.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pikepdf
import pypdfium2 as pdfium
import pytest

from longdoc.ingest.pdf import PdfSource
from longdoc.layout.furniture import folio_token
from longdoc.model import BBox, Block, BlockKind, Page
from longdoc.pipeline.labels import printed_label
from longdoc.storage.checkpoint import folder_checkpoint
from tests.docgen import english_report, side_note

ROOT = Path(__file__).resolve().parents[2]
LABELS = ["i", "ii", "1", "2", "3"]


def cli(*args: object) -> subprocess.CompletedProcess[str]:
    """``python -m longdoc.cli`` in a child process importing this checkout."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env = {k: v for k, v in env.items() if not k.startswith("LONGDOC_")}
    return subprocess.run([sys.executable, "-m", "longdoc.cli", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=300, cwd=ROOT)


def labelled_pdf(folder: Path) -> Path:
    """english_report's five pages with /PageLabels i, ii, 1, 2, 3 (roman
    front matter, then arabic restarting at 1)."""
    born = english_report(folder, pages=5).pdf_path
    out = folder / "labelled.pdf"
    with pikepdf.open(born) as pdf:
        pdf.Root.PageLabels = pikepdf.Dictionary(Nums=pikepdf.Array(
            [0, pikepdf.Dictionary(S=pikepdf.Name.r), 2, pikepdf.Dictionary(S=pikepdf.Name.D)]))
        pdf.save(out)
    return out


def parse(pdf: Path, out: Path) -> tuple[dict, list[dict], str]:
    proc = cli("parse", pdf, "-o", out, "--ocr", "auto", "--format", "json,chunks")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / f"{pdf.stem}.json").read_text(encoding="utf-8"))
    chunks = [json.loads(line) for line in (out / f"{pdf.stem}.chunks.jsonl").read_text(encoding="utf-8").splitlines()]
    return doc, chunks, proc.stderr


def assert_chunk_labels(doc: dict, chunks: list[dict]) -> None:
    by_number = {p["number"]: p["label"] for p in doc["pages"]}
    assert chunks
    for chunk in chunks:
        assert chunk["page_labels"] == [by_number[n] for n in chunk["pages"]], chunk["pages"]


@pytest.fixture(scope="module")
def labelled(tmp_path_factory) -> Path:
    return labelled_pdf(tmp_path_factory.mktemp("labels-doc"))


def test_the_generated_pdf_has_the_labels_pdfium_reads(labelled):
    pdf = pdfium.PdfDocument(str(labelled))
    try:
        assert [pdf.get_page_label(i) for i in range(len(pdf))] == LABELS
    finally:
        pdf.close()
    with PdfSource(labelled) as source:
        assert [source.page_label(n) for n in range(1, 6)] == LABELS
        assert source.page_labels() == LABELS
    with PdfSource(english_report(labelled.parent / "plain", pages=3).pdf_path) as source:
        assert source.page_labels() is None and source.page_label(1) is None


def test_page_labels_come_from_the_pdf(labelled, tmp_path):
    doc, chunks, _ = parse(labelled, tmp_path / "out")
    assert [p["label"] for p in doc["pages"]] == LABELS
    assert [p["number"] for p in doc["pages"]] == [1, 2, 3, 4, 5]       # physical numbers unchanged
    assert_chunk_labels(doc, chunks)
    # a chunk crossing from the front matter into the body cites both
    assert any(c["page_labels"] == ["ii", "1"] for c in chunks), [c["page_labels"] for c in chunks]


def test_without_page_labels_the_printed_page_number_is_the_label(tmp_path):
    """english_report prints "Page n of 5" (a page_number block); with its
    first page cut, physical page 1 prints "Page 2 of 5"."""
    born = english_report(tmp_path, pages=5).pdf_path
    cut = tmp_path / "cut.pdf"
    with pikepdf.open(born) as pdf:
        del pdf.pages[0]
        pdf.save(cut)
    doc, chunks, _ = parse(cut, tmp_path / "out")
    for page in doc["pages"]:
        numbers = [b["text"] for b in page["blocks"] if b["kind"] == "page_number"]
        assert numbers == [f"Page {page['number'] + 1} of 5"], numbers
    assert [p["label"] for p in doc["pages"]] == ["2", "3", "4", "5"]
    assert_chunk_labels(doc, chunks)


def test_no_labels_and_no_page_number_is_null(tmp_path):
    doc, chunks, _ = parse(side_note(tmp_path).pdf_path, tmp_path / "out")
    assert [p["label"] for p in doc["pages"]] == [None]
    assert all(c["page_labels"] == [None, None] for c in chunks)


def test_labels_survive_a_resume_and_an_old_checkpoint(labelled, tmp_path):
    out = tmp_path / "out"
    parse(labelled, out)
    checkpoint = folder_checkpoint(out / ".longdoc" / labelled.stem)
    assert [checkpoint.load_page(n).label for n in range(1, 6)] == LABELS   # checkpointed with the page

    doc, chunks, stderr = parse(labelled, out)
    assert "resumed 5 of 5 pages" in stderr
    assert [p["label"] for p in doc["pages"]] == LABELS

    # a checkpoint written before pages had labels: no "label" key at all
    pages_dir = out / ".longdoc" / labelled.stem / "checkpoint" / "pages"
    files = sorted(pages_dir.glob("*.json"))
    assert len(files) == 5
    for f in files:
        page = json.loads(f.read_text())
        del page["label"]
        f.write_text(json.dumps(page))
    assert [checkpoint.load_page(n).label for n in range(1, 6)] == [None] * 5  # loads, label None
    doc, chunks, stderr = parse(labelled, out)
    assert "resumed 5 of 5 pages" in stderr
    assert [p["label"] for p in doc["pages"]] == LABELS                    # read again from /PageLabels
    assert_chunk_labels(doc, chunks)


def _page(*texts: str) -> Page:
    box = BBox(x0=0, y0=800, x1=50, y1=810)
    blocks = [Block(id=f"p1-b{i}", kind=BlockKind.PAGE_NUMBER, bbox=box, order=i, text=t, source_pages=[1])
              for i, t in enumerate(texts)]
    return Page(number=1, width=595, height=842, blocks=blocks)


@pytest.mark.parametrize(("text", "label"), [
    ("Page 3 of 8", "3"), ("- xiv -", "xiv"), ("12", "12"), ("第 3 页", "3"), ("[ 7 ]", "7"),
    ("A-3", "3"), ("Folio  twelve ", "Folio twelve"),
])
def test_the_printed_label_rule(text, label):
    assert printed_label(_page(text)) == label


def test_the_first_page_number_block_counts_and_none_without_one():
    assert printed_label(_page("ix", "Page 4")) == "ix"
    assert printed_label(Page(number=1, width=1, height=1)) is None
    assert folio_token("1. Introduction") is None
