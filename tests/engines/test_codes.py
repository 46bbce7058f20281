"""Codes read exactly: part numbers, invoice ids, IBANs, hexadecimal keys,
mixed-case keys and serials set in real fonts, scanned as an office scanner
would, read by the default engine through the pipeline (real OCR).

Before the cascade re-read codes and settled ``O``/``0`` and twin letters'
case by the glyph, the default engine read 80% of such tokens exactly
(``TOK44B2CoP1X`` for ``TOK44B2C0P1X``, ``QZX2wQ`` for ``QZX2WQ``); the
full set of 504 is ``python bench/codes.py``.
"""

from __future__ import annotations

import pytest

from longdoc.pipeline import ParseOptions
from tests.docgen.codes import available_fonts, code_pages
from tests.docgen.raster import office_scan
from tests.pipeline.helpers import load_doc

FONTS = ["LiberationSans", "DejaVuSansMono", "Carlito", "DejaVuSerif"]


@pytest.fixture(scope="module")
def read(tmp_path_factory, ocr_pipeline):
    fonts = [f for f in FONTS if f in available_fonts()]
    if len(fonts) < 2:
        pytest.skip("the code test's fonts are not installed (fonts-liberation2, fonts-crosextra-carlito)")
    tmp = tmp_path_factory.mktemp("codes")
    truth = code_pages(tmp / "codes.pdf", per_page=21, seed=11, fonts=fonts, sizes=(8.0, 10.0))
    office_scan(tmp / "codes.pdf", tmp / "scan.pdf", seed=11)
    result = ocr_pipeline.parse(tmp / "scan.pdf", tmp / "out", ParseOptions(ocr="force", dpi=200))
    pages = [" ".join(" ".join(b.text for b in sorted(p.blocks, key=lambda b: b.order)).split())
             for p in load_doc(result).pages]
    return truth, pages


def test_codes_are_read_exactly(read):
    truth, pages = read
    wrong = [(t.token, t.font, t.size) for t in truth if " ".join(t.token.split()) not in pages[t.page - 1]]
    assert len(wrong) <= len(truth) // 50, f"{len(wrong)} of {len(truth)} misread: {wrong[:8]}"


def test_mixed_case_and_hex_keys_are_read_exactly(read):
    truth, pages = read
    keys = [t for t in truth if t.kind in ("mixed", "hex")]
    wrong = [t.token for t in keys if t.token not in pages[t.page - 1]]
    assert len(keys) >= 40 and len(wrong) <= 1, wrong

