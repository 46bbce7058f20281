"""Code listings: lines with a pitch (fixed-pitch type) become CODE blocks.

The pages are OCR-like (lines in raster order, boxes as an engine draws
them, ``pitch`` set as an engine that sees the character grid sets it),
built from :mod:`tests.layout.synth`; one test builds text-layer segments,
one reads a real TeX manual (Debian's texlive-latex-base-doc) set in
Computer Modern, its listings in CMTT.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from longdoc.ingest.pdf import PdfSource
from longdoc.layout import find_furniture, layout_page
from longdoc.model import BBox, Block, BlockKind, Line, Page

from .synth import FULL, LEFT, PARAGRAPHS, PITCH, RIGHT, SIZE, Column, line, page_of, raster

#: points per character of the synthetic monospace type
MONO = 6.0
#: the prose before and after a listing: a few lines each, so the page has a typical line pitch
BEFORE, AFTER = " ".join(PARAGRAPHS[0:3]), " ".join(PARAGRAPHS[3:6])

LISTING = """\
int main(int argc, char **argv)
{
    int x0 = 0;

    for (int i = 1; i < argc; i++) {
        x0 = fz_lineto(ctx, x0, i); /* comment */
    }
    return x0;
}"""


def code_lines(listing: str, x: float, y: float, *, pitch: float = MONO, step: float = PITCH) -> list[Line]:
    """One line per non-blank row of ``listing``, indented by its leading
    spaces on a ``pitch`` grid from ``x``, rows ``step`` apart from ``y``."""
    out = []
    for i, row in enumerate(listing.split("\n")):
        if row.strip():
            x0 = x + (len(row) - len(row.lstrip(" "))) * pitch
            text = row.strip()
            out.append(Line(text=text, bbox=BBox(x0=x0, y0=y + i * step, x1=x0 + len(text) * pitch,
                                                 y1=y + i * step + SIZE), confidence=0.9, page=1, pitch=pitch))
    return out


def _blocks(lines: list[Line], *, seed: int = 0, exact_lines: bool = False) -> list[Block]:
    rec = page_of(raster(lines, seed))
    return [b for b in layout_page(rec, find_furniture(rec, []), exact_lines=exact_lines)
            if b.kind not in (BlockKind.HEADER, BlockKind.FOOTER, BlockKind.PAGE_NUMBER)]


def _listing_page(listing: str = LISTING, *, gap: float = 8.0) -> tuple[list[Line], list[Line]]:
    """A paragraph, the listing ``gap`` below it, a paragraph ``gap`` below
    that: (all lines, the listing's lines)."""
    col = Column(FULL, 90.0)
    col.paragraph(BEFORE)
    code = code_lines(listing, FULL[0] + 18.0, col.y + gap)
    col.y = code[-1].bbox.y0 + PITCH + gap
    col.paragraph(AFTER)
    return col.lines + code, code


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_an_ocr_listing_is_one_code_block_with_its_indentation_and_blank_line(seed):
    lines, code = _listing_page()
    blocks = _blocks(lines, seed=seed)
    assert [(b.kind, b.text) for b in blocks] == [
        (BlockKind.PARAGRAPH, BEFORE), (BlockKind.CODE, LISTING), (BlockKind.PARAGRAPH, AFTER)]
    assert blocks[1].lines == code                                       # every line, in order


def test_code_lines_are_not_list_items_headings_or_paragraph_breaks():
    listing = "- removed line\n+ added line\n1. not an item\n2 Methods\n# comment\n    * bullet-like\nend."
    lines, _ = _listing_page(listing)
    blocks = _blocks(lines)
    assert [b.kind for b in blocks] == [BlockKind.PARAGRAPH, BlockKind.CODE, BlockKind.PARAGRAPH]
    assert blocks[1].text == listing


def test_two_blank_lines_stay_inside_the_listing_more_split_it():
    two = "def a():\n    pass\n\n\ndef b():\n    pass"
    lines, _ = _listing_page(two)
    assert [b.text for b in _blocks(lines) if b.kind is BlockKind.CODE] == [two]
    three = "def a():\n    pass\n\n\n\ndef b():\n    pass"
    lines, _ = _listing_page(three)
    assert [b.text for b in _blocks(lines) if b.kind is BlockKind.CODE] == ["def a():\n    pass", "def b():\n    pass"]


def test_a_wholly_monospace_line_inside_a_paragraph_stays_in_it():
    col = Column(FULL, 90.0)
    rows = col.paragraph(PARAGRAPHS[2] + " " + PARAGRAPHS[3])
    # a line of the paragraph that happens to be set in the monospace font (a long \url, a path)
    rows[2] = rows[2].model_copy(update={"pitch": MONO})
    col.lines[2] = rows[2]
    blocks = _blocks(col.lines)
    assert [(b.kind, b.text) for b in blocks] == [(BlockKind.PARAGRAPH, PARAGRAPHS[2] + " " + PARAGRAPHS[3])]


def test_inline_monospace_words_leave_the_paragraph_a_paragraph():
    # only a line wholly in the fixed-pitch font carries a pitch: a paragraph
    # mentioning \foo and fz_lineto has none on its lines
    col = Column(FULL, 90.0)
    text = "Call \\foo before fz_lineto so that the pen is placed; " + PARAGRAPHS[4]
    col.paragraph(text)
    blocks = _blocks(col.lines)
    assert [(b.kind, b.text) for b in blocks] == [(BlockKind.PARAGRAPH, text)]


def test_a_lone_monospace_line_set_apart_is_code():
    lines, _ = _listing_page("make install")
    assert [(b.kind, b.text) for b in _blocks(lines)] == [
        (BlockKind.PARAGRAPH, BEFORE), (BlockKind.CODE, "make install"), (BlockKind.PARAGRAPH, AFTER)]


def test_a_lone_monospace_line_indented_right_under_prose_is_code():
    col = Column(FULL, 90.0)
    col.paragraph(BEFORE + " To update every package, run:")
    command = code_lines("tlmgr update --all", FULL[0] + 24.0, col.y)
    col.y += PITCH + 8.0
    col.paragraph(AFTER)
    blocks = _blocks(col.lines + command)
    assert [(b.kind, b.text) for b in blocks] == [(BlockKind.PARAGRAPH, BEFORE + " To update every package, run:"),
                                                  (BlockKind.CODE, "tlmgr update --all"), (BlockKind.PARAGRAPH, AFTER)]


def test_a_listing_in_a_two_column_page_stays_in_its_column():
    left, right = Column(LEFT, 90.0), Column(RIGHT, 90.0)
    left.paragraph(PARAGRAPHS[0])
    listing = "for (i = 0; i < n; i++) {\n    draw(i);\n\n    next(i);\n}"
    code = code_lines(listing, LEFT[0] + 12.0, left.y + 8.0)
    left.y = code[-1].bbox.y0 + PITCH + 8.0
    left.paragraph(PARAGRAPHS[1])
    for text in PARAGRAPHS[2:5]:
        right.paragraph(text)
    blocks = _blocks(left.lines + code + right.lines, seed=3)
    assert [(b.kind, b.text) for b in blocks] == [
        (BlockKind.PARAGRAPH, PARAGRAPHS[0]), (BlockKind.CODE, listing), (BlockKind.PARAGRAPH, PARAGRAPHS[1]),
        *[(BlockKind.PARAGRAPH, t) for t in PARAGRAPHS[2:5]]]
    assert all(l.bbox.x1 <= LEFT[1] for l in blocks[1].lines)


def test_listings_side_by_side_in_two_columns_stay_apart():
    left_code = code_lines("left()\n{\n    one();\n}", LEFT[0], 120.0)
    right_code = code_lines("right()\n{\n    two();\n}", RIGHT[0], 120.0)
    left, right = Column(LEFT, 90.0), Column(RIGHT, 90.0)
    left.rows(["Left column listing:"])
    right.rows(["Right column listing:"])
    blocks = _blocks(left.lines + right.lines + left_code + right_code, seed=5)
    assert [b.text for b in blocks if b.kind is BlockKind.CODE] == ["left()\n{\n    one();\n}",
                                                                   "right()\n{\n    two();\n}"]


def test_a_typewritten_page_is_prose_not_code():
    col = Column(FULL, 90.0)
    for text in PARAGRAPHS[:4]:
        col.paragraph(text, gap=8.0)
    typed = [l.model_copy(update={"pitch": MONO}) for l in col.lines]
    blocks = _blocks(typed)
    assert [(b.kind, b.text) for b in blocks] == [(BlockKind.PARAGRAPH, t) for t in PARAGRAPHS[:4]]


def test_a_heading_set_in_monospace_is_still_a_heading():
    heading = line("fz_lineto", FULL[0], 90.0, size=16.0).model_copy(update={"pitch": 9.6})
    col = Column(FULL, 120.0)
    col.paragraph(PARAGRAPHS[0])
    blocks = _blocks([heading, *col.lines])
    assert [b.kind for b in blocks] == [BlockKind.TITLE, BlockKind.PARAGRAPH]


def test_text_layer_segments_of_a_code_row_keep_their_columns():
    # a text layer cuts "return -1;        /* give up */" at its wide gap; the
    # segments come back as one row, the comment in its column
    listing = "if (x0 < 0) {\n    return -1;        /* give up */\n}"
    code = code_lines(listing, 90.0, 200.0, step=11.5)
    row = code[1]
    cut = len("return -1;")
    left = row.model_copy(update={"text": "return -1;", "bbox": row.bbox.model_copy(
        update={"x1": row.bbox.x0 + cut * MONO})})
    comment = row.model_copy(update={"text": "/* give up */", "bbox": row.bbox.model_copy(
        update={"x0": row.bbox.x0 + (cut + 8) * MONO})})
    col = Column(FULL, 90.0)
    col.paragraph(PARAGRAPHS[0])
    blocks = _blocks([*col.lines, code[0], left, comment, code[2]], exact_lines=True)
    assert [(b.kind, b.text) for b in blocks] == [(BlockKind.PARAGRAPH, PARAGRAPHS[0]), (BlockKind.CODE, listing)]


KVOPTIONS = Path("/usr/share/doc/texlive-doc/latex/kvoptions/kvoptions.pdf")


@pytest.mark.skipif(not KVOPTIONS.is_file(), reason="texlive-latex-base-doc is not installed")
def test_a_tex_manual_listing_in_cmtt_is_code_and_its_prose_is_not():
    blocks: list[Block] = []
    with PdfSource(KVOPTIONS) as source:
        for number in range(1, 8):
            width, height = source.page_size(number)
            rec = Page(number=number, width=width, height=height, lines=source.text_layer(number))
            blocks += layout_page(rec, {}, exact_lines=True)
    code = [b.text for b in blocks if b.kind is BlockKind.CODE]
    assert "\\define@key{foobar}{name}{%\n  \\renewcommand*{\\foobar@name}{#1}%\n}" in code
    assert "\\documentclass[verbose=false,name=me]{myclass}\n\\usepackage[format=print]{mylayout}" in code
    prose = [b.text for b in blocks if b.kind is BlockKind.PARAGRAPH]
    assert any("\\ProcessOptionsWithKV is often copied" in t for t in prose)   # inline CMTT stays in its paragraph


def _scanned_listing(without_pitch: set[int]) -> Page:
    from .test_page import SCANNED_LISTING

    return page_of([Line(text=text, bbox=BBox(x0=x0, y0=y0, x1=x1, y1=y1), confidence=0.95, page=1,
                         pitch=None if k in without_pitch else pitch)
                    for k, (text, x0, y0, x1, y1, pitch) in enumerate(SCANNED_LISTING)], 1,
                   width=595.28, height=841.89)


#: the rows inside the recorded scanned listing (tests/layout/test_page.py SCANNED_LISTING: 4-17 are its
#: lines; 4 and 17, its first and last, are not between two of its rows)
INNER_ROWS = range(5, 17)


@pytest.mark.parametrize("row", INNER_ROWS)
def test_a_listing_line_the_engine_gave_no_pitch_stays_in_its_listing(row):
    """Whether a short line's glyphs show the grid is decided by a few
    pixels of its box: ``return -1;`` had a pitch on one runtime's boxes
    and none on the other's, and the listing came out as one CODE block or
    as three blocks with a paragraph between. A row without a pitch between
    two rows of a listing, at its pitch and indentation, that looks like
    code (a code symbol, no run of plain words), is part of it."""
    rec = _scanned_listing({row})
    blocks = [b for b in layout_page(rec, find_furniture(rec, [])) if b.kind is not BlockKind.PAGE_NUMBER]
    assert [b.kind for b in blocks] == [BlockKind.HEADING, BlockKind.PARAGRAPH, BlockKind.CODE, BlockKind.PARAGRAPH]
    assert len(blocks[2].lines) == 14


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_line_numbers_boxed_apart_from_their_code_stay_with_it(seed):
    """A listing's line numbers set in another type (a .dtx's), each a
    box of its own beside its code line: the engine finds a grid on one of
    those two-digit boxes or not by chance (``62`` had one on one runtime's
    boxes and not on the other's), and a number without one cut the
    listing. A segment of a few characters on a code line's row takes its
    pitch."""
    import random

    rng = random.Random(seed)
    col = Column(FULL, 90.0)
    col.paragraph(BEFORE)
    code = code_lines(LISTING.replace("\n\n", "\n"), FULL[0] + 30.0, col.y + 8.0)
    numbers = [Line(text=str(60 + k), bbox=BBox(x0=FULL[0], y0=c.bbox.y0, x1=FULL[0] + 10.0, y1=c.bbox.y1),
                    confidence=0.9, page=1, pitch=MONO if rng.random() < 0.3 else None)
               for k, c in enumerate(code)]
    col.y = code[-1].bbox.y0 + PITCH + 8.0
    col.paragraph(AFTER)
    blocks = _blocks(col.lines + code + numbers, seed=seed)
    assert [b.kind for b in blocks] == [BlockKind.PARAGRAPH, BlockKind.CODE, BlockKind.PARAGRAPH]
    assert blocks[1].text.split("\n")[0].split() == ["60", "int", "main(int", "argc,", "char", "**argv)"]
    assert len(blocks[1].lines) == 2 * len(code)
