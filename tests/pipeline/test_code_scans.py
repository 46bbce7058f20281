"""A code listing on a scanned page comes out as code: real OCR, the
listing's lines and indentation kept (failure class 3 of issue 21 on scans).

The page is the generated listing (``tests/docgen/listing.py``: prose in
DejaVu Sans, a C function in DejaVu Sans Mono with nested indentation and
a blank line) scanned as an office scanner would (200 dpi grey, skewed,
JPEG 75). Before fixed-pitch lines were found in the image, its lines were
joined into paragraphs and their indentation lost.
"""

from __future__ import annotations

import pytest

from evaluation.metrics import cer
from longdoc.model import BlockKind
from longdoc.pipeline import ParseOptions
from tests.docgen import code_listing
from tests.docgen.raster import office_scan
from tests.pipeline.helpers import load_doc


@pytest.fixture(scope="module")
def scanned(tmp_path_factory, ocr_pipeline):
    tmp = tmp_path_factory.mktemp("code-scan")
    generated = code_listing(tmp)
    office_scan(generated.pdf_path, tmp / "scan.pdf", seed=3)
    result = ocr_pipeline.parse(tmp / "scan.pdf", tmp / "out", ParseOptions(ocr="force", dpi=200))
    return generated, load_doc(result)


def test_the_scanned_listing_is_one_code_block_with_every_line_and_its_indentation(scanned):
    generated, doc = scanned
    (page,) = doc.pages
    code = [b for b in page.blocks if b.kind is BlockKind.CODE]
    assert len(code) == 1, [(b.kind.value, b.text[:30]) for b in page.blocks]
    got, want = code[0].text.split("\n"), generated.listing.split("\n")
    assert len(got) == len(want)
    for read, line in zip(got, want):
        assert len(read) - len(read.lstrip(" ")) == len(line) - len(line.lstrip(" ")), (read, line)
    assert cer(code[0].text, generated.listing) <= 0.02
    assert all(line.pitch for line in code[0].lines)


def test_the_prose_around_the_scanned_listing_stays_paragraphs(scanned):
    generated, doc = scanned
    paragraphs = [b.text for b in doc.pages[0].blocks if b.kind is BlockKind.PARAGRAPH]
    assert any(cer(p, generated.before) <= 0.02 for p in paragraphs)
    assert any(cer(p, generated.after) <= 0.02 for p in paragraphs)
    assert all(line.pitch is None for b in doc.pages[0].blocks if b.kind is BlockKind.PARAGRAPH for line in b.lines)
