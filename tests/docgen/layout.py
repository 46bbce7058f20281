"""A tiny typesetter: measure, wrap, flow lines through frames, draw with fpdf2.

Every line's text and position is decided here, not by fpdf2, so the ground
truth (:mod:`tests.docgen.truth`) knows exactly which words sit on which page.

Coordinates are PDF points with the origin at the top-left (fpdf2 ``unit="pt"``).
A line occupies a box ``leading`` points tall; its baseline sits inside it::

    y ──────────────── top of the line box (Flow cursor)
        (leading - size) / 2
      ┌─ glyphs ─────┐
      └──────────────┘ ← baseline = y + (leading - size) / 2 + 0.8 * size
    y + leading ─────── next line box

fpdf2 applies no kerning without text shaping, so the width of a string is the
sum of its words' widths plus the spaces; widths are cached per word.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from fpdf import FPDF

FONT_FILES = {
    "sans": Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"),
    "sansbold": Path("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"),
    "mono": Path("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"),
    "serif": Path("/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf"),
    # Debian fonts-wqy-microhei; fpdf2 2.8 embeds the first face of the .ttc.
    "cjk": Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"),
}

A4 = (595.28, 841.89)
A5 = (419.53, 595.28)

FIXED_DATE = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

# Characters that must not start a line (they hang at the end of the previous
# one) and that must not end one (they move to the next), for CJK wrapping.
_NO_LINE_START = set("，。、；：！？）」』”》〉,.;:!?)")
_NO_LINE_END = set("（「『“《〈(")
_CJK_TOKEN = re.compile(r"[A-Za-z0-9.%]+|\S")


@dataclass(frozen=True)
class Style:
    """A font (key of :data:`FONT_FILES`), its size and the baseline-to-baseline distance, in points."""

    font: str
    size: float
    leading: float

    @property
    def ascent_offset(self) -> float:
        """Distance from the top of the line box to the baseline."""
        return (self.leading - self.size) / 2 + 0.8 * self.size


class Canvas:
    """One fpdf2 document in points, fonts registered once, with cached text widths.

    ``Canvas((w, h), fonts)`` raises ``FileNotFoundError`` when a font file is
    missing. The creation date is fixed so that output bytes are reproducible.
    """

    def __init__(self, page_size: tuple[float, float], fonts: Iterable[str]) -> None:
        self.page_size = page_size
        self.pdf = FPDF(unit="pt", format=page_size)
        self.pdf.set_auto_page_break(False)
        self.pdf.set_creation_date(FIXED_DATE)
        for name in fonts:
            path = FONT_FILES[name]
            if not path.is_file():
                raise FileNotFoundError(f"font {name!r} not found at {path}")
            self.pdf.add_font(name, fname=str(path))
        self._em: dict[tuple[str, str], float] = {}

    def width(self, text: str, style: Style) -> float:
        """Width of ``text`` in points when set in ``style``."""
        key = (style.font, text)
        em = self._em.get(key)
        if em is None:
            self.pdf.set_font(style.font, size=100)
            em = self.pdf.get_string_width(text) / 100
            self._em[key] = em
        return em * style.size

    def words_width(self, words: list[str], style: Style) -> float:
        """Width of ``" ".join(words)``."""
        if not words:
            return 0.0
        return sum(self.width(w, style) for w in words) + (len(words) - 1) * self.width(" ", style)


@dataclass
class LineSpec:
    """One line before placement.

    ``tokens`` are words (Latin, joined by spaces) or characters (CJK, joined
    by nothing); ``item`` numbers the list item the line belongs to (0 for
    anything but lists); ``indent`` is the x offset inside the frame;
    ``hyphen`` marks a line broken inside a word, drawn with a trailing "-".
    """

    tokens: list[str]
    item: int = 0
    indent: float = 0.0
    hyphen: bool = False


@dataclass(frozen=True)
class Frame:
    """A rectangle text flows through: left edge, top, bottom, width (points)."""

    x: float
    top: float
    bottom: float
    width: float

    def capacity(self, leading: float) -> int:
        return int((self.bottom - self.top) // leading)


@dataclass
class PlacedLine:
    """A line with its page (0-based), frame index on that page and baseline position."""

    page: int
    frame: int
    x: float
    baseline: float
    text: str
    style: Style
    spec: LineSpec
    draw_key: float = 0.0


@dataclass
class Block:
    """A unit of main text in reading order: title, heading, paragraph, list, sidenote.

    ``joiner`` is what joins tokens within a line and lines within an item:
    ``" "`` for Latin text, ``""`` for CJK.
    """

    kind: str
    style: Style
    lines: list[LineSpec]
    joiner: str = " "
    space_before: float = 0.0
    placed: list[PlacedLine] = field(default_factory=list)

    def line_text(self, spec: LineSpec) -> str:
        return self.joiner.join(spec.tokens) + ("-" if spec.hyphen else "")


# --- wrapping -------------------------------------------------------------


def wrap_words(
    canvas: Canvas,
    words: list[str],
    style: Style,
    width: float,
    *,
    first_indent: float = 0.0,
    rest_indent: float = 0.0,
) -> list[list[str]]:
    """Greedy word wrap: each line takes as many words as fit. Never hyphenates."""
    space = canvas.width(" ", style)
    lines: list[list[str]] = []
    cur: list[str] = []
    cur_w = 0.0
    for word in words:
        ww = canvas.width(word, style)
        limit = width - (first_indent if not lines else rest_indent)
        if cur and cur_w + space + ww > limit:
            lines.append(cur)
            cur, cur_w = [word], ww
        else:
            cur_w = ww if not cur else cur_w + space + ww
            cur.append(word)
    if cur:
        lines.append(cur)
    return lines


def wrap_cjk(
    canvas: Canvas, text: str, style: Style, width: float, *, first_indent: float = 0.0
) -> list[list[str]]:
    """Character wrap for CJK text with simple line-break rules.

    Runs of ASCII letters/digits stay together; closing punctuation never
    starts a line (it hangs past the edge), opening punctuation never ends one.
    """
    lines: list[list[str]] = []
    cur: list[str] = []
    cur_w = 0.0
    for tok in _CJK_TOKEN.findall(text):
        tw = canvas.width(tok, style)
        limit = width - (first_indent if not lines else 0.0)
        if cur and cur_w + tw > limit and tok not in _NO_LINE_START:
            carry: list[str] = []
            while cur and cur[-1] in _NO_LINE_END:
                carry.insert(0, cur.pop())
            lines.append(cur)
            cur = carry + [tok]
            cur_w = sum(canvas.width(t, style) for t in cur)
        else:
            cur.append(tok)
            cur_w += tw
    if cur:
        lines.append(cur)
    return lines


# --- flowing ----------------------------------------------------------------


class Flow:
    """Places blocks line by line through frames, page after page.

    ``frames(page)`` gives the frames of a 0-based page in reading order. The
    cursor starts at the top of page 0's first frame. A block's
    ``space_before`` is skipped at the top of a frame. Blocks are kept in
    ``self.blocks`` in the order added, which is the reading order.
    """

    def __init__(self, frames: Callable[[int], list[Frame]]) -> None:
        self.frames = frames
        self.page = 0
        self.frame_index = 0
        self.y = frames(0)[0].top
        self.blocks: list[Block] = []
        self._seq = 0

    @property
    def frame(self) -> Frame:
        return self.frames(self.page)[self.frame_index]

    def at_frame_top(self) -> bool:
        return self.y == self.frame.top

    def lines_left_in_frame(self, style: Style, space_before: float = 0.0) -> int:
        y = self.y if self.at_frame_top() else self.y + space_before
        return max(0, int((self.frame.bottom - y) // style.leading))

    def lines_left_on_page(self, style: Style, space_before: float = 0.0) -> int:
        """Lines of ``style`` that still fit on this page (this frame and the later ones)."""
        later = self.frames(self.page)[self.frame_index + 1 :]
        return self.lines_left_in_frame(style, space_before) + sum(f.capacity(style.leading) for f in later)

    def next_frame(self) -> None:
        self.frame_index += 1
        if self.frame_index >= len(self.frames(self.page)):
            self.page += 1
            self.frame_index = 0
        self.y = self.frame.top

    def next_page(self) -> None:
        self.page += 1
        self.frame_index = 0
        self.y = self.frame.top

    def add(self, block: Block) -> Block:
        """Place every line of ``block``, moving to the next frame/page when one is full."""
        if not self.at_frame_top():
            self.y += block.space_before
        for spec in block.lines:
            if self.y + block.style.leading > self.frame.bottom + 1e-6:
                self.next_frame()
            frame = self.frame
            block.placed.append(
                PlacedLine(
                    page=self.page,
                    frame=self.frame_index,
                    x=frame.x + spec.indent,
                    baseline=self.y + block.style.ascent_offset,
                    text=block.line_text(spec),
                    style=block.style,
                    spec=spec,
                    draw_key=self._next_key(),
                )
            )
            self.y += block.style.leading
        self.blocks.append(block)
        return block

    def add_fixed(self, block: Block, page: int, x: float, top: float) -> Block:
        """Place ``block`` at a fixed position (e.g. a margin note); the cursor does not move."""
        y = top
        for spec in block.lines:
            block.placed.append(
                PlacedLine(
                    page=page,
                    frame=-1,
                    x=x + spec.indent,
                    baseline=y + block.style.ascent_offset,
                    text=block.line_text(spec),
                    style=block.style,
                    spec=spec,
                    draw_key=self._next_key(),
                )
            )
            y += block.style.leading
        self.blocks.append(block)
        return block

    def _next_key(self) -> float:
        self._seq += 1
        return float(self._seq)


# --- drawing ----------------------------------------------------------------


@dataclass(frozen=True)
class Furniture:
    """A header/footer/page-number string drawn at a fixed place on one page."""

    page: int
    text: str
    x: float
    baseline: float
    style: Style
    draw_key: float


def centered_x(canvas: Canvas, text: str, style: Style) -> float:
    """Left x that centres ``text`` on the page."""
    return (canvas.page_size[0] - canvas.width(text, style)) / 2


def draw(canvas: Canvas, n_pages: int, lines: list[PlacedLine], furniture: list[Furniture], out: Path) -> None:
    """Draw every line and furniture string, page by page in ``draw_key`` order, and write ``out``."""
    by_page: list[list[tuple[float, str, float, float, Style]]] = [[] for _ in range(n_pages)]
    for ln in lines:
        by_page[ln.page].append((ln.draw_key, ln.text, ln.x, ln.baseline, ln.style))
    for f in furniture:
        by_page[f.page].append((f.draw_key, f.text, f.x, f.baseline, f.style))
    pdf = canvas.pdf
    for items in by_page:
        pdf.add_page()
        for _, text, x, baseline, style in sorted(items, key=lambda t: t[0]):
            pdf.set_font(style.font, size=style.size)
            pdf.text(x, baseline, text)
    out.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(out))
