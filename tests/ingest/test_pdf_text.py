"""Grouping a pdfium glyph stream into line segments (no PDF needed), and
fixed-pitch lines (a code listing) found in a real PDF's text layer."""

from __future__ import annotations

from pathlib import Path

import pytest

from longdoc.ingest.pdf import PdfSource
from longdoc.ingest.pdf_text import Glyph, group_lines, is_fixed_pitch_font, to_display
from tests.docgen import code_listing

BREAK = Glyph("\r", None)
NEWLINE = Glyph("\n", None)
SPACE = Glyph(" ", None)


def _word(
    text: str, x: float, top: float, *, size: float = 10.0, advance: float = 6.0, fixed: bool = False
) -> list[Glyph]:
    """Glyphs of ``text`` set left to right from ``x``, ``size`` tall
    (``fixed``: in a fixed-pitch font)."""
    return [
        SPACE if ch == " " else Glyph(ch, (x + i * advance, top, x + (i + 1) * advance, top + size), fixed)
        for i, ch in enumerate(text)
    ]


def _texts(glyphs: list[Glyph]) -> list[str]:
    return [line.text for line in group_lines(glyphs, 1, 600, 800)]


def test_pdfium_line_breaks_start_new_lines() -> None:
    glyphs = _word("first line", 50, 100) + [BREAK, NEWLINE] + _word("second line", 50, 114)
    lines = group_lines(glyphs, 7, 600, 800)
    assert [line.text for line in lines] == ["first line", "second line"]
    assert lines[0].page == 7
    assert lines[0].bbox.x0 == 50 and lines[0].bbox.y0 == 100 and lines[0].bbox.y1 == 110
    assert lines[0].bbox.x1 == pytest.approx(50 + 10 * 6)


def test_a_superscript_pdfium_broke_out_rejoins_its_line() -> None:
    # "[3H]": pdfium puts line breaks around the raised "3"
    glyphs = (
        _word("[", 50, 100) + [BREAK, NEWLINE] + _word("3", 56, 97, size=6, advance=4)
        + [BREAK, NEWLINE] + _word("H]deltorphin", 60, 100)
    )
    assert _texts(glyphs) == ["[3H]deltorphin"]


def test_a_word_hyphenated_onto_the_next_line_is_split_there() -> None:
    # pdfium joins "Übungsauf-" and "gabe" with no break between them
    glyphs = _word("Übungsauf-", 400, 100) + _word("gabe und", 50, 114)
    assert _texts(glyphs) == ["Übungsauf-", "gabe und"]


def test_a_wide_gap_on_one_baseline_splits_columns() -> None:
    glyphs = _word("left column", 50, 100) + [SPACE] + _word("right column", 320, 100)
    assert _texts(glyphs) == ["left column", "right column"]


def test_justified_word_gaps_do_not_split() -> None:
    # a 15 pt gap: 1.5 line heights
    glyphs = _word("wide", 50, 100) + [SPACE] + _word("gap", 50 + 4 * 6 + 15, 100)
    assert _texts(glyphs) == ["wide gap"]


def _row(cells: list[tuple[str, float]], top: float) -> list[Glyph]:
    """One text-layer line holding ``cells`` at their x positions (spaces between, no break)."""
    glyphs: list[Glyph] = []
    for text, x in cells:
        glyphs += ([SPACE] if glyphs else []) + _word(text, x, top)
    return glyphs + [BREAK, NEWLINE]


def test_a_table_written_one_line_per_row_is_cut_at_its_column_channels() -> None:
    # a financial table whose rows the PDF wrote as single lines, its columns 10-18 pt apart (1-1.8 line
    # heights: under the 20 pt segment gap), ragged, yet with whitespace running down between them
    rows = [(("Revenue total", 50), ("12,418", 142), ("11,902", 194)),
            (("Cost of sales", 50), ("(7,311)", 140), ("(7,045)", 196)),
            (("Gross profit.", 50), ("5,107", 144), ("4,857", 192)),
            (("Net of taxes.", 50), ("4,002", 145), ("3,944", 193))]
    glyphs: list[Glyph] = []
    for n, row in enumerate(rows):
        glyphs += _row(list(row), 100 + 14 * n)
    assert _texts(glyphs) == [text for row in rows for text, _ in row]


def test_wide_word_gaps_that_do_not_line_up_keep_their_lines() -> None:
    # 12 pt gaps (1.2 line heights) at x 80, 104 and 134: wide, but no channel runs down through them
    glyphs = (_row([("loose", 50), ("words", 92)], 100) + _row([("in a just", 50), ("fied", 116)], 114)
              + _row([("paragraph here", 50), ("now", 146)], 128))
    assert _texts(glyphs) == ["loose words", "in a just fied", "paragraph here now"]


def test_right_to_left_text_with_an_embedded_latin_word_stays_one_line() -> None:
    # logical order: arabic word (right), then "Python" which sits to its left
    arabic = [Glyph(ch, (500 - (i + 1) * 6, 100, 500 - i * 6, 110)) for i, ch in enumerate("بلغة")]
    python = _word("Python", 500 - 4 * 6 - 3 - 6 * 6, 100)  # "P" is 2.4 line heights from "ة"
    glyphs = arabic + [SPACE] + python
    assert _texts(glyphs) == ["بلغة Python"]


def test_vertical_text_is_one_segment() -> None:
    # set bottom to top, as a side banner turned 90 degrees
    glyphs = [
        Glyph(ch, (560, 500 - (i + 1) * 6, 570, 500 - i * 6)) for i, ch in enumerate("Downloaded")
    ]
    assert _texts(glyphs) == ["Downloaded"]


def test_lines_are_clipped_to_the_page_and_hidden_ones_dropped() -> None:
    glyphs = _word("off page", 700, 100) + [BREAK] + _word("edge", 590, 100)
    lines = group_lines(glyphs, 1, 600, 800)
    assert [line.text for line in lines] == ["edge"]
    assert lines[0].bbox.x1 == 600


@pytest.mark.parametrize(
    ("rotation", "expected"),
    [
        (0, (10, 30, 20, 50)),
        (90, (30, 10, 50, 20)),  # turned clockwise: the left edge becomes the top
        (180, (80, 30, 90, 50)),
        (270, (30, 80, 50, 90)),
    ],
)
def test_to_display(rotation: int, expected) -> None:
    # crop box x 0..100, y 0..80 (user space, y up); box x 10..20, y 30..50
    assert to_display((10, 30, 20, 50), (0, 0, 100, 80), rotation) == expected


def test_a_character_without_a_box_is_kept_in_its_line() -> None:
    glyphs = _word("caf", 50, 100) + [Glyph("\u0301", None)] + _word(" noir", 68, 100)
    assert _texts(glyphs) == ["caf\u0301 noir"]


# --- fixed pitch ----------------------------------------------------------------------------


def _collapsed(text: str, x: float, top: float, advance: float = 6.0) -> list[Glyph]:
    """A fixed-pitch line as pdfium reports it: one space for each run of
    spaces, the glyphs where the grid puts them."""
    glyphs: list[Glyph] = []
    for i, ch in enumerate(text):
        if ch != " ":
            glyphs.append(Glyph(ch, (x + i * advance, top, x + (i + 1) * advance, top + 10.0), True))
        elif not glyphs or glyphs[-1] is not SPACE:
            glyphs.append(SPACE)
    return glyphs


def test_a_fixed_pitch_line_gets_its_pitch_and_its_spaces_back_from_the_grid() -> None:
    glyphs = _collapsed("x0 = f(y);   /* c */", 80, 100) + [BREAK, NEWLINE] + _word("prose line", 50, 114)
    lines = group_lines(glyphs, 1, 600, 800)
    assert [(line.text, line.pitch) for line in lines] == [("x0 = f(y);   /* c */", 6.0), ("prose line", None)]


def test_a_line_with_a_few_monospace_words_has_no_pitch() -> None:
    glyphs = _word("call ", 50, 100) + _word("\\foo", 80, 100, fixed=True) + [SPACE] + _word("to draw it", 110, 100)
    (line,) = group_lines(glyphs, 1, 600, 800)
    assert line.text == "call \\foo to draw it" and line.pitch is None


def test_fixed_pitch_glyphs_off_one_grid_or_full_width_are_no_pitch() -> None:
    # stretched word by word (an OCR text layer's glyph-less font): off the grid
    stretched = _word("abc", 50, 100, fixed=True) + [SPACE] + _word("defgh", 71.5, 100, advance=4.3, fixed=True)
    cjk = _word("长文档识别", 50, 200, advance=10.0, fixed=True)
    assert [line.pitch for line in group_lines([*stretched, BREAK, NEWLINE, *cjk], 1, 600, 800)] == [None, None]


@pytest.mark.parametrize(("name", "flags", "fixed"), [
    ("CMTT10", 4, True), ("SFTT0900", 4, True), ("WQWONW+DejaVuSansMono", 524292, True),
    ("LMMono10-Regular", 4, True), ("NimbusMonoPS-Regular", 4, True), ("Courier-Bold", 0, True),
    ("ABCDEF+Inconsolata-zi4r", 4, True), ("BeraSansMono-Roman", 4, True), ("txtt", 4, True),
    ("Menlo-Regular", 4, True), ("SourceCodePro-Regular", 4, True),
    ("ABCDEF+AnyName", 5, True),                                         # the FixedPitch flag
    ("CMR10", 4, False), ("SFRM1000", 4, False), ("DejaVuSans", 524292, False), ("LMMonoProp10-Regular", 4, False),
    ("MonotypeCorsiva", 4, False), ("GlyphLessFont", 5, False),
])
def test_fixed_pitch_fonts_by_flag_or_name(name: str, flags: int, fixed: bool) -> None:
    assert is_fixed_pitch_font(name, flags) is fixed


def test_a_real_pdf_listing_has_pitch_on_its_lines_only(tmp_path: Path) -> None:
    generated = code_listing(tmp_path)
    with PdfSource(generated.pdf_path) as source:
        lines = source.text_layer(1)
    mono = [line for line in lines if line.pitch is not None]
    rows = [row.strip() for row in generated.listing.split("\n") if row.strip()]
    # the text layer cuts the row at its wide gap (segments rejoin in layout)
    assert [line.text for line in mono] == rows[:9] + ["return -1;", "/* give up */"] + rows[10:]
    assert all(line.pitch == pytest.approx(9 * 1233 / 2048, abs=0.01) for line in mono)   # DejaVu Sans Mono, 9 pt
    prose = [line.text for line in lines if line.pitch is None]
    assert any(text.startswith("The call to \\foo moves") for text in prose)      # the inline word: no pitch
