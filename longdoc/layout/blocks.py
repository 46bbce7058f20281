"""Lines in reading order → blocks (paragraphs, headings, lists, title).

:func:`segment` walks the ordered lines and starts a new block when the
next line does not continue the current one:

- it is not below the previous line in the same column (a column or
  region change), or not horizontally overlapping the block;
- the distance between line centres exceeds :data:`PARA_PITCH_FACTOR` ×
  the typical line pitch (a paragraph gap);
- its text size class changes (heading-tall vs body);
- it starts with a list marker (a new item) or is a bare label boxed apart
  (the ``[18]`` of a reference), or it or the previous line is a numbered
  heading ("2.1 Methods");
- the previous row is a contents or index entry (it ends with a page
  number, :mod:`~longdoc.layout.contents`) — but an entry's first line
  and the indented line below it that carries its page number stay one
  block (an entry wrapped over two lines);
- paragraphs only: it is indented by more than :data:`INDENT_LINES` line
  heights relative to the previous line (a first-line indent) — unless the
  block so far is one full-width line, which is a hanging indent; it is
  outdented back after the block's second line (a hanging-indent entry
  ends); or the previous line ends a sentence and stops short of the
  column's right edge, or is followed by a step down of more than
  :data:`SENTENCE_GAP_PITCH` pitches (a paragraph gap set tight).

Lines in the same row (OCR fragments of one line) always continue.

:func:`classify` names each block: LIST (items; consecutive items form
**one LIST block whose text has one line per item**, markers kept as
printed; two or more consecutive contents entries form one such LIST
too, see :func:`classify`), HEADING (numbered on its own line → level =
number of parts, or set noticeably larger than the body text → level by
size; a line whose box alone is taller, running on as body text, is no
heading: :func:`_runs_on_as_body`), TITLE (on page 1
only: the largest of the headings that come before any other text, in the
top third of the page, set much larger than the body: :func:`_title_sized`),
PARAGRAPH otherwise. :func:`join_across_columns` then merges a paragraph
continued from the bottom of one column to the top of the next. Code
listings are found before (:mod:`~longdoc.layout.code`) and pass through
:func:`classify` as they are.

How large a line's type is (:meth:`Metrics.ratio`, against the body's):

- the body is the page's running text: its proportional lines, not the
  lines of a code listing (``Line.pitch``), which are usually set smaller
  (a listing in 9 pt under 11 pt prose put the prose at 1.22 × "the body",
  against a heading threshold of 1.25) — unless the page has fewer than
  :data:`MIN_TEXT_LINES` of them;
- on OCR boxes a line's size is read from its **width per character cell**
  (:func:`~longdoc.layout.text.cells`) against the body's, not from its box
  height. Type set larger is wider in proportion, and an OCR box's width
  hardly moves with anything but the type, whereas its height does: a
  skewed scan adds the line's width × the skew angle to it (a 450 pt line
  at 0.3° gains 2.4 pt, a 120 pt heading 0.6 pt), the letters in the line
  add or take ascenders and descenders ("reached." has a box 20 % lower
  than a line with a "p" in it), and the detector's coordinates come on a
  grid of ~0.85 pt at 200 dpi (5 % of a body line). On scans of 11 pt prose
  under 14 pt bold headings (``tests/docgen``, skewed up to 1°, both
  runtimes) the headings' boxes came out 0.7–1.2 × the body's and body
  lines' 0.6–1.4 ×: a height threshold sat inside both spreads, and which
  side a line fell on changed with the runtime, the recognizer and the
  processor. Widths per cell on the same scans: body lines at most 1.10,
  headings 1.37–1.59, titles (20 pt bold) 2.09–2.25 — the thresholds
  (:data:`TALL_FACTOR` 1.25, :data:`TITLE_WIDTH` 1.8) lie well clear of
  each side. A line as wide as the body's full lines needs
  :data:`WIDE_TALL_FACTOR` (1.4): justifying it stretched its spaces (a
  loose line's characters read up to ~1.3 × the body's). A line of fewer
  than :data:`WIDTH_CELLS` cells (a lone "1", "ix") has too few characters
  to measure that way and is measured by its height;
- a text layer's boxes are exact (their height is the font's size, and a
  row joined across a wide gap would read as wide type): there the height
  is the measure;
- a line set in a fixed-pitch font (``Line.pitch``, a code line) is
  measured by that pitch, which the engine read off the image's character
  grid: a recognizer that drops the spaces of ``if (x0 < 0)`` shortens the
  text by a third but not the pitch.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from longdoc.layout.contents import entry_lines
from longdoc.layout.geometry import LineBox, h_overlap, same_row
from longdoc.layout.text import (
    cells,
    ends_sentence,
    has_list_marker,
    is_label,
    join_lines,
    join_pair,
    runs_on,
    starts_with_reference,
)
from longdoc.model import BlockKind, TableCell

#: a line set this many times the body's size (:meth:`Metrics.ratio`) or more is heading-tall ...
TALL_FACTOR = 1.25
#: ... and one as wide as the body's full lines (WIDE_FRACTION) this many: a justified line's spaces are
#: stretched (a loose one's characters read up to ~1.3 × wide), an OCR box may be drawn loose around it
WIDE_TALL_FACTOR = 1.4
WIDE_FRACTION = 0.9
#: the title is set this many times the body's size by its box's height (:func:`_title_sized`) ...
TITLE_FACTOR = 1.5
#: ... or this many times by its characters' width: bold type widens a section heading set
#: 1.27 × the body to 1.4–1.66 × by width, a title (1.8 × and more) is wider still
TITLE_WIDTH = 1.8
#: fewest character cells a line needs to be measured by its width per cell
WIDTH_CELLS = 4
#: fewest cells of the lines the body's width per cell is measured on
ADVANCE_CELLS = 8
#: fewest proportional (non-listing) lines for them alone to be the body
MIN_TEXT_LINES = 3
PARA_PITCH_FACTOR = 1.45
INDENT_LINES = 0.6
SHORT_LINE_FRACTION = 0.15
SENTENCE_SHORT_FRACTION = 0.35
#: a line after one that ends a sentence starts a paragraph when it steps down more than this many body
#: pitches: a paragraph gap set tight. Alone, the gap rule (PARA_PITCH_FACTOR) sat on a knife edge for
#: paragraphs spaced at 1.45 pitches: their step read 1.446 pitches on ONNX Runtime and 1.474 on OpenVINO,
#: one paragraph on one runtime and two on the other; within a paragraph a step this long after a
#: finished sentence is rare (box jitter is a few percent of the pitch)
SENTENCE_GAP_PITCH = 1.25
#: a line with a tall box runs on as body text when the next is at most this
#: many body pitches below, the upper one is this share of the body's line
#: width, and the tall one's characters are within this share of the body's
RUN_ON_PITCH = 1.2
FULL_LINE = 0.75
SAME_CHAR_WIDTH = 0.2
#: the line of a wrapped contents entry that carries its page number is at
#: most this many line heights below the entry's first line
WRAP_STEP_LINES = 1.6
MAX_HEADING_CHARS = 200
MAX_HEADING_ROWS = 3
#: heading level by size ratio to the body text: (min ratio, level)
SIZE_LEVELS = ((1.7, 1), (1.4, 2), (0.0, 3))

_NUMBERED_HEADING = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){1,5}\.?|\d{1,2})\s+(\S.*)$")
_ENUM_HEADING = re.compile(r"^\d{1,2}\.\s+(\S.*)$")


@dataclass(frozen=True)
class Metrics:
    """Page-level measures the rules compare against (points)."""

    line_height: float
    size: float  # typical height of the engine's boxes of the body's running text (text size)
    pitch: float
    line_width: float
    page_height: float
    page: int
    char_width: float = 0.0  # typical points per character of the body's lines
    #: typical points per character cell (:func:`~longdoc.layout.text.cells`) of the body's running text
    advance: float = 0.0
    #: the boxes are a text layer's (exact: a box's height is its type's size), not an OCR engine's
    exact: bool = False

    @property
    def paragraph_step(self) -> float:
        """The longest step down (centre to centre) between two body lines
        of one paragraph; a longer one is a paragraph gap."""
        return max(PARA_PITCH_FACTOR * self.pitch, self.pitch + 0.5 * self.line_height)

    def height_ratio(self, l: LineBox) -> float:
        """The line's box height against the body's."""
        return l.size / self.size if self.size > 0 else 1.0

    def width_ratio(self, l: LineBox) -> float | None:
        """The line's width per character cell (:func:`per_cell`) against the
        body's; None for a text layer's line, a line too short to measure, or
        a page with nothing to compare with."""
        width = per_cell(l)
        if self.exact or self.advance <= 0 or width is None:
            return None
        return width / self.advance

    def ratio(self, l: LineBox) -> float:
        """How many times the body's size the line's type is: by its width per
        cell on OCR boxes, by its height otherwise (module docstring)."""
        width = self.width_ratio(l)
        return self.height_ratio(l) if width is None else width

    def tall(self, l: LineBox) -> bool:
        """Heading-tall: set :data:`TALL_FACTOR` × the body's size or more —
        :data:`WIDE_TALL_FACTOR` × for a line as wide as the body's full
        lines (not wider): a justified line's stretched spaces widen it, an
        OCR box drawn a little loose around a body line heightens it; neither
        makes it a heading. A line measured by its fixed pitch has neither."""
        by_pitch = bool(l.line.pitch) and self.width_ratio(l) is not None
        wide = (self.line_width > 0 and not by_pitch
                and WIDE_FRACTION * self.line_width <= l.w <= self.line_width / WIDE_FRACTION)
        return self.ratio(l) >= (WIDE_TALL_FACTOR if wide else TALL_FACTOR)


def per_cell(l: LineBox, min_cells: int = WIDTH_CELLS) -> float | None:
    """Points per character cell of ``l``: the grid's pitch that the engine
    measured in the image for a line in a fixed-pitch font (``Line.pitch``;
    a recognizer that drops the spaces of ``if (x0 < 0)`` does not change
    it), else the box's width over its text's :func:`~longdoc.layout.text.cells`
    — None when those are fewer than ``min_cells``."""
    if l.line.pitch:
        return l.line.pitch
    n = cells(l.text)
    return l.w / n if n >= min_cells else None


def measure(ordered: Sequence[LineBox], line_height: float, page_height: float, page: int, *,
            exact: bool = False) -> Metrics:
    """The body's size (box height and width per cell, medians over its
    running text: the lines without a ``pitch`` when there are
    :data:`MIN_TEXT_LINES` of them, else all), then the typical pitch
    (centre-to-centre distance of consecutive lines in one column) and full
    line width (upper quartile: paragraphs' last lines are short) of the
    lines not set larger than it. ``exact``: the boxes are a text layer's."""
    text = [l for l in ordered if l.line.pitch is None]
    if len(text) < MIN_TEXT_LINES:
        text = list(ordered)
    sizes = [l.size for l in text if l.size > 0 and len(l.text.strip()) >= 2]
    size = statistics.median(sizes) if sizes else line_height
    advances = [w for l in text if (w := per_cell(l, ADVANCE_CELLS)) is not None]
    sized = Metrics(line_height=line_height, size=size, pitch=0.0, line_width=0.0, page_height=page_height,
                    page=page, advance=statistics.median(advances) if advances else 0.0, exact=exact)
    body = [l for l in ordered if not sized.tall(l)]
    pitches = [
        b.cy - a.cy
        for a, b in zip(body, body[1:])
        if h_overlap(a, b) > 0 and 0 < b.cy - a.cy < 3 * line_height and not same_row(a, b)
    ]
    widths = [l.w for l in body if len(l.text.strip()) >= 2]
    per_char = [l.w / len(l.text.strip()) for l in body if len(l.text.strip()) >= 8]
    return replace(
        sized,
        pitch=statistics.median(pitches) if pitches else 1.2 * line_height,
        line_width=statistics.quantiles(widths, n=4)[-1] if len(widths) > 1 else sum(widths),
        char_width=statistics.median(per_char) if per_char else 0.5 * line_height,
    )


def numbered_heading_level(l: LineBox, m: Metrics) -> int | None:
    """Level of a numbered heading standing on its own line ("2 Methods" →
    1, "2.1.3 Setup" → 3), or None. ``"1. Eggs"`` is a list item, not a
    heading; the title part must start with a capital (or an uncased
    letter), run ≤ 12 words, not end with ``. , ; :`` and the line must be
    clearly shorter than the typical line."""
    match = _NUMBERED_HEADING.match(l.text.strip())
    if not match:
        return None
    title = match.group(2)
    first = title[0]
    if not (first.isupper() or (first.isalpha() and not first.islower())):
        return None
    if len(title.split()) > 12 or title.rstrip()[-1] in ".,;:" or (m.line_width and l.w > 0.7 * m.line_width):
        return None
    return min(6, match.group(1).rstrip(".").count(".") + 1)


def segment(ordered: Sequence[LineBox], m: Metrics) -> list[list[LineBox]]:
    """Split ``ordered`` (lines in reading order) into runs of lines that
    belong to one block (a paragraph, a heading, one list item or one
    contents entry)."""
    entries = entry_lines(ordered, m.line_height, m.char_width)
    blocks: list[list[LineBox]] = []
    for l in ordered:
        if blocks and _continues(blocks[-1], l, m, entries):
            blocks[-1].append(l)
        else:
            blocks.append([l])
    return blocks


def _continues(block: list[LineBox], l: LineBox, m: Metrics, entries: set[int]) -> bool:
    last = block[-1]
    if same_row(last, l):
        return l.x0 >= last.x0
    if last.idx in entries:
        return False  # an entry ends with its page number
    # the previous row as one line (OCR may box a row in fragments)
    row = [b for b in block if same_row(b, last)]
    prev = LineBox(last.idx, last.line, min(b.x0 for b in row), min(b.y0 for b in row),
                   max(b.x1 for b in row), max(b.y1 for b in row))
    if l.idx in entries and _wraps_to(block, prev, l, m):
        return True
    return _follows(block, prev, l, m) and not _opens_block(block, row, prev, l, m)


def _wraps_to(block: list[LineBox], prev: LineBox, l: LineBox, m: Metrics) -> bool:
    """``l`` (on an entry row) ends the entry that ``block`` (one row, not
    an entry, not a finished sentence) starts: it is the next line down, at
    most :data:`WRAP_STEP_LINES` line heights below (set solid, as one
    entry's lines are: a heading above the entries stands further off), and
    indented under it as a wrapped entry is."""
    one_row = all(same_row(b, block[0]) for b in block)
    below = 0 < l.cy - prev.cy <= WRAP_STEP_LINES * m.line_height
    return one_row and below and l.x0 >= block[0].x0 + INDENT_LINES * m.line_height and not ends_sentence(prev.text)


def _follows(block: list[LineBox], prev: LineBox, l: LineBox, m: Metrics) -> bool:
    """``l`` is the next line down in the same column, of the same size
    class (or running on from ``prev`` as body text does,
    :func:`_runs_on_as_body`), without a paragraph gap."""
    x0, x1 = min(b.x0 for b in block), max(b.x1 for b in block)
    if l.cy <= prev.cy or min(x1, l.x1) <= max(x0, l.x0):
        return False
    if m.tall(prev) != m.tall(l):
        return _runs_on_as_body(prev, l, m)
    # lines set larger step down further, by their size; two heading-tall lines of different sizes (a title,
    # the author's line under it) are one heading only within the smaller one's step
    scale = min(m.ratio(prev), m.ratio(l)) if m.tall(l) else 1.0
    return l.cy - prev.cy <= scale * m.paragraph_step


def _runs_on_as_body(upper: LineBox, lower: LineBox, m: Metrics) -> bool:
    """Two lines of which one has a taller box than the body's are still
    one paragraph's lines when nothing but the box says otherwise: the
    lower one is at the body's pitch below (:data:`RUN_ON_PITCH`; type set
    larger needs more room), both start at the same left edge, the upper
    one is a full line (:data:`FULL_LINE` of the body's width) that does not
    end a sentence, and the taller one's characters are as wide as the
    body's (:data:`SAME_CHAR_WIDTH`; larger type has wider ones). An OCR box
    drawn loose around a line with tall letters, or a scan's first line of a
    column, is not a heading."""
    tall = upper if m.tall(upper) else lower
    chars = len(tall.text.strip())
    same_type = m.char_width > 0 and chars >= 8 and abs(tall.w / chars - m.char_width) <= SAME_CHAR_WIDTH * m.char_width
    return (same_type and lower.cy - upper.cy <= RUN_ON_PITCH * m.pitch
            and abs(lower.x0 - upper.x0) <= INDENT_LINES * m.line_height
            and upper.w >= FULL_LINE * m.line_width and not ends_sentence(upper.text))


def _opens_block(block: list[LineBox], row: list[LineBox], prev: LineBox, l: LineBox, m: Metrics) -> bool:
    """``l`` starts something new: an item, a label, a numbered heading, or
    (paragraphs) a new paragraph by indent, outdent or a short finished line."""
    if has_list_marker(l.text) or is_label(l.text) or starts_with_reference(l.text):
        return True
    if numbered_heading_level(l, m) or numbered_heading_level(block[0], m):
        return True
    if m.tall(l):
        return False  # a heading wrapped over lines, possibly centred
    indent = INDENT_LINES * m.line_height
    right = max(max(b.x1 for b in block), l.x1)
    width = right - min(min(b.x0 for b in block), l.x0)
    if ends_sentence(block[-1].text) and (prev.x1 < right - SENTENCE_SHORT_FRACTION * width
                                          or l.cy - prev.cy > SENTENCE_GAP_PITCH * m.pitch):
        return True
    if has_list_marker(first_row_text(block)):
        return l.x0 < block[0].x0 - indent
    first_row = block[0] in row
    if l.x0 > prev.x0 + indent:
        return not (first_row and prev.x1 >= right - SHORT_LINE_FRACTION * width)
    return l.x0 < prev.x0 - indent and not first_row


@dataclass
class Draft:
    """A block before ids and order are assigned."""

    kind: BlockKind
    lines: list[LineBox]
    text: str
    level: int | None = None
    notes: list[Draft] = field(default_factory=list)  # side notes placed after it
    cells: list[TableCell] | None = None  # a table's
    contents: bool = False  # a LIST of contents or index entries


def classify(runs: Sequence[list[LineBox] | Draft], m: Metrics) -> list[Draft]:
    """Name each run (see the module docstring); consecutive list items in
    one column become one LIST block. A run already named (a CODE listing,
    :mod:`~longdoc.layout.code`) is kept as it is, in its place.

    Consecutive contents or index entries (a run whose last row ends with
    a page number, :mod:`~longdoc.layout.contents`) become one LIST block
    as well, with ``contents`` set, its text one entry per line as printed
    (leaders and page number included; a wrapped entry's lines joined). A
    LIST, not a TABLE: an entry is one line of text to read, the leaders
    and the number's place are not cells of a grid, an entry wraps where
    a cell would not, and every export already writes a LIST one item per
    line (Markdown ``- item``, text one line each, docling list items). A
    single entry (nothing like it above or below) is classified as any
    other run."""
    drafts: list[Draft] = []
    for run in runs:
        d = run if isinstance(run, Draft) else (_entry(run, m) or _classify_run(run, m))
        prev = drafts[-1] if drafts else None
        if d.kind is BlockKind.LIST and prev is not None and prev.kind is BlockKind.LIST \
                and prev.contents == d.contents and _same_list(prev, d, m):
            prev.lines.extend(d.lines)
            prev.text = f"{prev.text}\n{d.text}"
        else:
            drafts.append(d)
    drafts = [_classify_run(d.lines, m) if d.contents and "\n" not in d.text else d for d in drafts]
    for d in drafts:
        _lone_enumerated_heading(d, m)
    _mark_title(drafts, m)
    return drafts


def _entry(run: list[LineBox], m: Metrics) -> Draft | None:
    """A one-entry contents LIST when the run's last row is an entry row."""
    if run[-1].idx not in entry_lines(run, m.line_height, m.char_width):
        return None
    return Draft(BlockKind.LIST, list(run), join_lines([l.text for l in run]), contents=True)


def first_row_text(run: Sequence[LineBox]) -> str:
    """Text of the run's first row (its first line plus OCR fragments
    beside it)."""
    return join_lines([l.text for l in run if same_row(l, run[0])])


def _classify_run(run: list[LineBox], m: Metrics) -> Draft:
    text = join_lines([l.text for l in run])
    if has_list_marker(first_row_text(run)):
        return Draft(BlockKind.LIST, list(run), text)
    level = numbered_heading_level(run[0], m)
    if level is not None and len(run) == 1:
        return Draft(BlockKind.HEADING, list(run), text, level)
    ratio = statistics.median(m.ratio(l) for l in run)
    rows = 1 + sum(not same_row(a, b) for a, b in zip(run, run[1:]))
    if ratio >= TALL_FACTOR and any(m.tall(l) for l in run) and rows <= MAX_HEADING_ROWS \
            and len(text) <= MAX_HEADING_CHARS:
        size_level = next(lv for r, lv in SIZE_LEVELS if ratio >= r)
        return Draft(BlockKind.HEADING, list(run), text, size_level)
    return Draft(BlockKind.PARAGRAPH, list(run), text)


def _same_list(prev: Draft, item: Draft, m: Metrics) -> bool:
    """The item follows the list directly below it, in the same column."""
    last, first = prev.lines[-1], item.lines[0]
    overlap = min(max(l.x1 for l in prev.lines), max(l.x1 for l in item.lines)) - max(
        min(l.x0 for l in prev.lines), min(l.x0 for l in item.lines)
    )
    return first.cy > last.cy and overlap > 0 and first.y0 - last.y1 <= 2 * m.pitch


def join_across_columns(drafts: list[Draft]) -> list[Draft]:
    """Merge a paragraph (or list) that runs on from the bottom of one
    column to the top of the next: the next block starts above and to the
    right of the previous one's last line, and its text runs on
    (:func:`~longdoc.layout.text.runs_on`; for two lists, when the next
    starts with an item). The merged block's box spans both columns."""
    out: list[Draft] = []
    for d in drafts:
        prev = out[-1] if out else None
        if prev is not None and _column_break(prev, d):
            if prev.kind is BlockKind.LIST and d.kind is BlockKind.LIST and (has_list_marker(d.text)
                                                                         or prev.contents and d.contents):
                prev.text = f"{prev.text}\n{d.text}"
            elif runs_on(prev.text, d.text):
                prev.text = join_pair(prev.text, d.text)
            else:
                out.append(d)
                continue
            prev.lines.extend(d.lines)
        else:
            out.append(d)
    return out


def _column_break(a: Draft, b: Draft) -> bool:
    flowing = (BlockKind.PARAGRAPH, BlockKind.LIST)
    last, first = a.lines[-1], b.lines[0]
    return a.kind in flowing and b.kind in flowing and first.y1 <= last.y0 and first.x0 >= last.x1


def _lone_enumerated_heading(d: Draft, m: Metrics) -> None:
    """A one-item, one-line "1. Introduction" is a heading, not a list."""
    if d.kind is not BlockKind.LIST or "\n" in d.text or not all(same_row(l, d.lines[0]) for l in d.lines):
        return
    match = _ENUM_HEADING.match(d.text)
    if not match:
        return
    title = match.group(1)
    if title[0].isupper() and len(title.split()) <= 6 and title.rstrip()[-1] not in ".,;:":
        d.kind, d.level = BlockKind.HEADING, 1


def _mark_title(drafts: list[Draft], m: Metrics) -> None:
    if m.page != 1:
        return
    first_text = next((i for i, d in enumerate(drafts) if d.kind is not BlockKind.HEADING), len(drafts))
    heads = [d for d in drafts[:first_text] if d.lines[0].y0 < m.page_height / 3]
    if not heads:
        return
    best = max(heads, key=lambda d: statistics.median(m.ratio(l) for l in d.lines))
    if _title_sized(best, m):
        best.kind, best.level = BlockKind.TITLE, None


def _title_sized(d: Draft, m: Metrics) -> bool:
    """The heading ``d`` is set as a title: (OCR) its characters
    :data:`TITLE_WIDTH` × the body's width per cell or more, or its box
    :data:`TITLE_FACTOR` × the body's height or more with its characters
    set larger too (:data:`TALL_FACTOR`; a text layer's line by its box
    alone). Bold type widens a section heading's characters beyond its
    size (a 14 pt bold heading over 11 pt text reads 1.4–1.66 × by width,
    1.27 × by size) but not to 1.8 ×, which a title set 1.8 × the body or
    more reaches by its size alone; and a section heading's box on a scan
    reads 0.7–1.2 × the body's, well under the 1.5 × a smaller title's box
    must show (with its characters wider too) to be a title."""
    widths = [w for l in d.lines if (w := m.width_ratio(l)) is not None]
    width = statistics.median(widths) if widths else None
    if width is not None and width >= TITLE_WIDTH:
        return True
    height = statistics.median(m.height_ratio(l) for l in d.lines)
    return height >= TITLE_FACTOR and (width is None or width >= TALL_FACTOR)
