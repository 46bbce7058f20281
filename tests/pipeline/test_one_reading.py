"""One reading on both runtimes: the same scanned pages, parsed with
``inference.backend: onnxruntime`` and with ``openvino`` (everything else
the same), come out as the same blocks: the same kinds in the same order,
their texts nearly equal (the recognizers may read a character
differently; OpenVINO runs the detector and the fast recognizer in
bfloat16 where the processor has it, AMD's Zen 4 and Intel's AMX both).

The layout's decisions must have margins: a box a pixel taller on one
runtime must not turn a listing line into prose, move a column gutter or
split a paragraph. Pages: generated documents (tests/docgen) scanned as an
office scanner would (200 dpi grey, skewed, JPEG): a report with a title,
headings, paragraphs, a bulleted list and running furniture; two columns;
a code listing; a table; a three-column index. The listing and index
scans are ones on which the runtimes parted before (bench/runtimes.py:
the listing cut in three blocks against two, the index read in 21 blocks
against 2).
"""

from __future__ import annotations

import pytest
from rapidfuzz.distance import Levenshtein

from longdoc.engines import backends
from longdoc.model import BlockKind, Page
from longdoc.pipeline import ParseOptions, Pipeline
from tests.conftest import make_settings
from tests.docgen import code_listing, english_report, two_column
from tests.docgen.layouts import bordered_table
from tests.docgen.manuals import index_page
from tests.docgen.raster import office_scan
from tests.pipeline.helpers import load_doc

pytestmark = pytest.mark.skipif(not backends.available("openvino"), reason="openvino is not installed")

RUNTIMES = ("onnxruntime", "openvino")
#: a block's text may differ this much (edit distance over the longer text) between the runtimes
BLOCK_CER = 0.03

#: name → (document maker, office_scan seed, pages parsed)
SCANS = {
    "report": (lambda d: english_report(d, pages=3), 0, "1-2"),
    "two_column": (lambda d: two_column(d, pages=2), 1, "1"),
    "listing": (code_listing, 2, None),
    "table": (bordered_table, 3, None),
    "index": (index_page, 7, None),
}


@pytest.fixture(scope="module")
def readings(tmp_path_factory) -> dict[str, dict[str, list[Page]]]:
    """Each scan's pages as read on each runtime."""
    tmp = tmp_path_factory.mktemp("one-reading")
    scans = {}
    for name, (make, seed, pages) in SCANS.items():
        folder = tmp / name
        folder.mkdir()
        office_scan(make(folder).pdf_path, folder / "scan.pdf", seed=seed)
        scans[name] = (folder / "scan.pdf", pages)
    out: dict[str, dict[str, list[Page]]] = {name: {} for name in SCANS}
    for runtime in RUNTIMES:
        with Pipeline(make_settings(backend=runtime)) as pipeline:
            for name, (scan, pages) in scans.items():
                options = ParseOptions(pages=pages, ocr="force", dpi=200, page_chunk_size=2, chunk_overlap=1)
                result = pipeline.parse(scan, tmp / "out" / runtime / name, options)
                out[name][runtime] = load_doc(result).pages
    return out


def _cer(a: str, b: str) -> float:
    return Levenshtein.distance(a, b) / max(len(a), len(b), 1)


@pytest.mark.parametrize("name", list(SCANS))
def test_both_runtimes_read_the_same_blocks(readings, name):
    ort, ov = readings[name]["onnxruntime"], readings[name]["openvino"]
    assert [p.number for p in ort] == [p.number for p in ov]
    for a, b in zip(ort, ov):
        kinds = ([x.kind.value for x in a.blocks], [x.kind.value for x in b.blocks])
        assert kinds[0] == kinds[1], f"page {a.number}: block kinds differ\n  onnxruntime {kinds[0]}\n  openvino    {kinds[1]}"
        for x, y in zip(a.blocks, b.blocks):
            assert _cer(x.text, y.text) <= BLOCK_CER, (a.number, x.kind.value, x.text[:80], y.text[:80])
        assert [x.level for x in a.blocks] == [y.level for y in b.blocks]


def test_the_pages_hold_the_decisions_compared(readings):
    """What the comparison covers: a title, headings, a list, furniture,
    a code listing, a table, paragraphs in two columns, an index."""
    kinds = {b.kind for runtime in RUNTIMES for pages in readings.values() for p in pages[runtime] for b in p.blocks}
    assert {BlockKind.TITLE, BlockKind.HEADING, BlockKind.LIST, BlockKind.PARAGRAPH, BlockKind.CODE,
            BlockKind.TABLE, BlockKind.HEADER, BlockKind.PAGE_NUMBER} <= kinds
    listing = [b for p in readings["listing"]["openvino"] for b in p.blocks if b.kind is BlockKind.CODE]
    assert len(listing) == 1
