"""Synthetic recognized pages with realistic geometry, for layout tests.

US Letter (612 × 792 pt), 10 pt text on a 12.5 pt pitch, ~4.9 pt per
character; two columns at x = 72–290 and 322–540, a margin at 550–600.
Paragraphs are wrapped into justified lines (the last line short) with a
12 pt first-line indent. :func:`raster` puts lines in the order an OCR
engine reports them (top to bottom, left to right), interleaving columns.
"""

from __future__ import annotations

import random
import textwrap
from dataclasses import dataclass, field

from longdoc.model import BBox, Line, Page

PAGE_W, PAGE_H = 612.0, 792.0
LEFT = (72.0, 290.0)
RIGHT = (322.0, 540.0)
FULL = (72.0, 540.0)
MARGIN = (550.0, 600.0)
SIZE = 10.0
PITCH = 12.5
CHAR_W = 4.9
INDENT = 12.0

PARAGRAPHS = [
    "Alpha paragraph explains why reading order matters for long scanned reports that are set in several columns of type.",
    "Bravo paragraph describes how the recognizer reports lines row by row, so that the two columns arrive interleaved.",
    "Charlie paragraph is about running headers, running footers and page numbers that repeat on every page of a journal.",
    "Delta paragraph recalls that a person reads one column from top to bottom before moving on to the next column.",
    "Echo paragraph mentions margin notes, which belong right after the paragraph they sit beside and never inside it.",
    "Foxtrot paragraph talks about lists, headings and titles, the other kinds of blocks that a page layout can hold.",
    "Golf paragraph is about headings that span the full width of the text block between two groups of columns.",
    "Hotel paragraph adds a few more words about the experiment, its measurements and the instruments it used.",
    "India paragraph reports the results of the experiment and compares them with those of earlier studies.",
    "Juliet paragraph closes the body text with a short summary of the findings and the questions left open.",
]


def line(text: str, x0: float, y0: float, x1: float | None = None, *, size: float = SIZE, page: int = 1) -> Line:
    """One line whose box is as wide as its text (or ``x1`` when given)."""
    right = x1 if x1 is not None else x0 + CHAR_W * len(text) * size / SIZE
    return Line(text=text, bbox=BBox(x0=x0, y0=y0, x1=right, y1=y0 + size), confidence=0.95, page=page)


def wrap(text: str, span: tuple[float, float], indent: float = INDENT) -> list[str]:
    width = int((span[1] - span[0] - indent) / CHAR_W)
    return textwrap.wrap(text, width=width, break_long_words=False, break_on_hyphens=False)


@dataclass
class Column:
    """Lays paragraphs down a column, tracking the next free baseline."""

    span: tuple[float, float]
    y: float
    page: int = 1
    lines: list[Line] = field(default_factory=list)

    def paragraph(self, text: str, *, indent: float = INDENT, gap: float = 0.0) -> list[Line]:
        """Wrapped, justified lines of one paragraph; returns them."""
        self.y += gap
        rows = wrap(text, self.span, indent)
        out = []
        for i, row in enumerate(rows):
            x0 = self.span[0] + (indent if i == 0 else 0.0)
            x1 = self.span[1] if i < len(rows) - 1 else None
            out.append(line(row, x0, self.y, x1, page=self.page))
            self.y += PITCH
        self.lines.extend(out)
        return out

    def rows(self, texts: list[str], *, x_offset: float = 0.0, gap: float = 0.0) -> list[Line]:
        """Lines laid as given (no wrapping), each at ``span[0] + x_offset``."""
        self.y += gap
        out = []
        for t in texts:
            out.append(line(t, self.span[0] + x_offset, self.y, page=self.page))
            self.y += PITCH
        self.lines.extend(out)
        return out


def raster(lines: list[Line], seed: int = 0) -> list[Line]:
    """Lines in OCR raster order: shuffled, then sorted by row (with a
    little jitter) and x, so two columns come out interleaved."""
    rng = random.Random(seed)
    shuffled = list(lines)
    rng.shuffle(shuffled)
    return sorted(shuffled, key=lambda l: (round(l.bbox.y0 + rng.uniform(-1, 1)), l.bbox.x0))


def page_of(lines: list[Line], number: int = 1, *, width: float = PAGE_W, height: float = PAGE_H) -> Page:
    """A recognized page (lines not laid out yet)."""
    return Page(number=number, width=width, height=height, lines=list(lines))


HEADER_TEXT = "Journal of Examples 2026"


def journal_page(number: int, *, seed: int = 0) -> tuple[Page, dict[str, list[str]]]:
    """A two-column journal page: running header, (title on page 1), six
    paragraphs (the corpus rotated by the page number), a margin note beside
    the fifth, the page number in the footer.

    Returns the page (lines in raster order) and the expected texts:
    ``body`` (paragraphs in reading order), ``note`` (the margin note).
    """
    lines: list[Line] = [line(HEADER_TEXT, 72.0, 40.0, page=number)]
    top = 90.0
    if number == 1:
        title = "Reading Order in Long Documents"
        lines.append(line(title, 156.0, 80.0, 456.0, size=20.0, page=number))
        top = 130.0
    body = (PARAGRAPHS[number % 10 :] + PARAGRAPHS[: number % 10])[:6]
    left, right = Column(LEFT, top, number), Column(RIGHT, top, number)
    for text in body[:3]:
        left.paragraph(text)
    right.paragraph(body[3])
    echo = right.paragraph(body[4])
    right.paragraph(body[5])
    note_rows = ["See also", "Smith and", "Lee 2024."]
    note = Column(MARGIN, echo[0].bbox.y0 + PITCH, number)
    note.rows(note_rows)
    lines += left.lines + right.lines + note.lines
    lines.append(line(str(number), 303.0, 750.0, page=number))
    return page_of(raster(lines, seed), number), {"body": body, "note": [" ".join(note_rows)]}
