"""Layout on a real PDF text layer: a LaTeX two-column document.

The lines come from pypdfium2's text segments (built here, not through the
ingest stage), are put in OCR raster order so the columns interleave, and
the reading order that comes out is compared with the ground truth's.
"""

import random
from pathlib import Path

import pytest

from longdoc.assemble import stitch
from longdoc.layout import find_furniture, layout_page
from longdoc.model import BBox, BlockKind, Line, Page

pdfium = pytest.importorskip("pypdfium2")

EVAL = Path(__file__).resolve().parents[3] / "shared" / "eval" / "dev" / "py-pdf"
PDF = EVAL / "multicolumn.pdf"
TRUTH = EVAL / "multicolumn.textlayer.txt"

pytestmark = pytest.mark.skipif(not PDF.is_file(), reason="shared eval data not available")

#: distinctive phrases, each within one line of the ground truth, in its order
PHRASES = [
    "Two-Column Document with Lorem Ipsum",
    "This is a sample document",
    "Lorem ipsum dolor sit amet",
    "Nam dui ligula",
    "Vivamus viverra fermentum felis",  # bottom of the left column, page 1
    "pellentesque ante. Phasellus",  # top of the right column, page 1
    "Quisque ullamcorper placerat ipsum",
    "Fusce mauris",
    "Nam feugiat",  # last words of page 1 …
    "lacus vel est. Curabitur consectetuer.",  # … continued on page 2
    "Suspendisse vel felis",
    "primis in faucibus orci",  # bottom of the left column, page 2
    "luctus et ultrices posuere",  # top of the right column, page 2
    "Nulla nec lacus",
    "Suspendisse vitae elit",
    "sem sed wisi",
    "Table 1: EU Countries Information",
    "Finland",
]


def _recognized(doc) -> list[Page]:
    pages = []
    for i in range(len(doc)):
        page = doc[i]
        width, height = page.get_size()
        text = page.get_textpage()
        lines = []
        for j in range(text.count_rects()):
            left, bottom, right, top = text.get_rect(j)
            # pdfium marks a line-end hyphen as U+0002
            content = text.get_text_bounded(left, bottom, right, top).replace("\x02", "-")
            box = BBox(x0=left, y0=height - top, x1=right, y1=height - bottom)
            lines.append(Line(text=content, bbox=box, confidence=1.0, page=i + 1))
        rng = random.Random(i)
        rng.shuffle(lines)
        lines.sort(key=lambda l: (round(l.bbox.y0 / 3), l.bbox.x0))  # raster order
        pages.append(Page(number=i + 1, width=width, height=height, lines=lines))
    return pages


@pytest.fixture(scope="module")
def pages() -> list[Page]:
    doc = pdfium.PdfDocument(str(PDF))
    try:
        recs = _recognized(doc)
    finally:
        doc.close()
    out = []
    for rec in recs:
        blocks = layout_page(rec, find_furniture(rec, [r for r in recs if r is not rec]))
        out.append(rec.model_copy(update={"blocks": blocks, "lines": []}))
    return out


def _main_text(pages: list[Page]) -> str:
    return "\n".join(b.text for p in pages for b in p.main_blocks())


def test_phrases_are_in_ground_truth_order():
    truth = " ".join(TRUTH.read_text(encoding="utf-8").split())
    positions = [truth.find(p) for p in PHRASES]
    assert -1 not in positions and positions == sorted(positions)


def test_reading_order_follows_the_columns(pages):
    text = _main_text(pages)
    positions = [text.find(p) for p in PHRASES]
    missing = [p for p, at in zip(PHRASES, positions) if at < 0]
    assert not missing
    assert positions == sorted(positions), [p for _, p in sorted(zip(positions, PHRASES))]


def test_folios_are_page_numbers_not_text(pages):
    for page in pages:
        folios = [b.text for b in page.blocks if b.kind is BlockKind.PAGE_NUMBER]
        assert folios == [str(page.number)]
        assert all(b.text != str(page.number) for b in page.main_blocks())


def test_title_and_dehyphenated_words(pages):
    assert pages[0].main_blocks()[0].kind is BlockKind.TITLE
    text = _main_text(pages)
    assert "consectetuer adipiscing elit" in text  # "adip-" / "iscing" in the PDF
    assert "adip-" not in text


def test_stitching_joins_the_sentence_over_the_page_break(pages):
    stitched = list(stitch(pages))
    assert [p.number for p in stitched] == [1, 2, 3]
    merged = [b for b in stitched[0].blocks if b.source_pages == [1, 2]]
    assert len(merged) == 1
    assert "Nam feugiat lacus vel est. Curabitur consectetuer." in merged[0].text
    assert not any("lacus vel est" in b.text for b in stitched[1].blocks)
