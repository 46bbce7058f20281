"""No word ever leaves its line or its order (property tests over
generated pages).

A page of one column is laid out from text-layer segments (a visual line
cut into pieces where the PDF left a wide gap, as pdfium's text often is)
or from OCR lines (boxes padded as a detector pads them). Whatever the
indents, short lines and wide gaps, every visual line's words must come out
contiguous and in order, and the visual lines in page order."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings, strategies as st

from longdoc.model import BBox, Line, Page
from longdoc.pipeline.layout_group import lay_out
from longdoc.pipeline.recognize import TEXT_LAYER_ENGINE

WORDS = ("context", "development", "report", "company", "documents", "internal", "policy", "the", "of", "and",
         "first", "provides", "then", "from", "analysis", "reporting", "standards", "annual", "market", "risk")
CHAR_W, SIZE, PITCH = 4.9, 10.0, 12.5
LEFT, RIGHT = 72.0, 540.0


@st.composite
def single_column(draw):
    """(visual lines as word lists, Page lines) of one column of text. Some
    lines (never two rows running: that would be a table) have a wide gap,
    often at the same place, which is what makes a whitespace channel look
    likely where there is none."""
    visual: list[list[str]] = []
    lines: list[Line] = []
    y = 72.0
    last_cut = -9
    gap_at = draw(st.floats(0.3, 0.7))  # where the wide gaps fall, as a share of the line's words
    for _ in range(draw(st.integers(4, 9))):  # paragraphs
        y += draw(st.sampled_from([0.0, 6.0, 12.0]))
        rows = draw(st.integers(1, 6))
        for r in range(rows):
            words = draw(st.lists(st.sampled_from(WORDS), min_size=2 if r == rows - 1 else 6, max_size=12))
            indent = draw(st.sampled_from([0.0, 12.0, 36.0])) if r == 0 else 0.0
            full = r < rows - 1 and draw(st.booleans())
            cut = len(visual) - last_cut > 1 and len(words) > 2 and draw(st.booleans())
            if cut:
                last_cut = len(visual)
            visual.append(words)
            lines += _segments(words, LEFT + indent, y, full, gap_at if cut else None, draw(st.floats(2.0, 8.0)))
            y += PITCH
    return visual, lines


def _segments(words, x0, y, full, gap_at, gap_em):
    """A visual line as two text segments cut ``gap_at`` of the way through
    its words, ``gap_em`` line heights apart (one segment when ``gap_at`` is
    None); justified to the right margin when ``full``."""
    cut = min(len(words) - 1, max(1, round(len(words) * gap_at))) if gap_at is not None else len(words)
    groups = [g for g in (words[:cut], words[cut:]) if g]
    width = sum(len(" ".join(g)) * CHAR_W for g in groups) + gap_em * SIZE * (len(groups) - 1)
    # a line fills the text block when justified, and never runs past it
    stretch = (RIGHT - x0) / width if full or width > RIGHT - x0 else 1.0
    out, x = [], x0
    for g in groups:
        w = len(" ".join(g)) * CHAR_W * stretch
        out.append(Line(text=" ".join(g), bbox=BBox(x0=x, y0=y, x1=x + w, y1=y + SIZE), confidence=1.0, page=1))
        x += w + gap_em * SIZE * stretch
    return out


def _padded(lines: list[Line]) -> list[Line]:
    """One OCR line per visual line, its box padded like a detector's."""
    rows: dict[float, list[Line]] = {}
    for l in lines:
        rows.setdefault(l.bbox.y0, []).append(l)
    out = []
    for y, segs in sorted(rows.items()):
        x0, x1 = min(s.bbox.x0 for s in segs) - 3, max(s.bbox.x1 for s in segs) + 3
        out.append(Line(text=" ".join(s.text for s in segs), bbox=BBox(x0=x0, y0=y - 2, x1=x1, y1=y + SIZE + 2),
                        confidence=0.9, page=1))
    return out


def _assert_words_in_place(visual: list[list[str]], page: Page) -> None:
    text = " " + " ".join(" ".join(b.text.split()) for b in page.main_blocks()) + " "
    at = 0
    for words in visual:
        needle = " " + " ".join(words) + " "
        found = text.find(needle, at)
        assert found >= 0, f"{' '.join(words)!r} is not whole, or not in order, in:\n{text}"
        at = found + 1


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(single_column())
def test_text_layer_segments_keep_their_words_in_place(column):
    visual, lines = column
    page = Page(number=1, width=612, height=792, lines=lines, engine=TEXT_LAYER_ENGINE)
    _assert_words_in_place(visual, lay_out(page, []))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(single_column())
def test_ocr_lines_of_one_column_keep_their_words_in_place(column):
    visual, lines = column
    page = Page(number=1, width=612, height=792, lines=_padded(lines), engine="rapidocr")
    _assert_words_in_place(visual, lay_out(page, []))
