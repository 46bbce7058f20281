"""Code listings: lines set in a fixed-pitch font become CODE blocks.

A line carries :attr:`~longdoc.model.Line.pitch` (points per character)
when it is (nearly) wholly set in a fixed-pitch font on a character grid:
the text layer knows the font (:mod:`longdoc.ingest.pdf_text`), an OCR
engine sees the grid. A paragraph with a monospace word or two in it has no
pitch on its lines and is never code. :func:`take_listings` finds the
listings among the lines in reading order:

- a *listing* is a run of pitch lines, consecutive in reading order, of
  similar pitch (within :data:`PITCH_RATIO`), each below the previous one,
  at most :data:`BLANK_LINES` blank lines below it, starting within
  :data:`DRIFT_PITCHES` of where the listing's rows start (reading order
  keeps columns apart: the next column's first line is above); segments of
  one row (a text layer cuts a line at a wide gap) continue the row;
- a listing of two rows or more is code; a single row is code when it
  stands apart (no text line within a paragraph gap above or below it), or
  when it is indented from the text line right above it (and from the one
  right below, when that is close too), and holds
  :data:`MIN_LONE_CHARS` characters or more;
- heading-tall lines are never code; nor is anything on a page whose body
  is nearly all fixed-pitch (:data:`TYPEWRITTEN_SHARE`) with few code
  symbols (:data:`CODE_SYMBOLS`): a typewritten letter, a plain-text RFC.

A listing's text (:func:`code_text`) keeps its lines, one per line, in
order, and their indentation as spaces, counted on the listing's grid from
its leftmost line; a blank line is put back where the step down to the next
line is a whole extra line pitch or more; a row's later segments are padded
to the column they start in::

    left            indent = round((x0 - left) / pitch) spaces
    │int main(void) {
    │    x0 = fz_lineto(ctx, x, y);   /* comment */
    │                                 ← step of two line pitches: a blank line
    │    return x0;
    │}

The line's own text is kept as it is (a text layer and an OCR engine set
the spaces inside a line by its grid already).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from longdoc.layout.blocks import Draft, Metrics
from longdoc.layout.geometry import LineBox, h_overlap, same_row
from longdoc.model import BlockKind

#: pitches of one listing differ by at most this ratio (a lone glyph's pitch
#: is its own advance, which a letter-spaced listing's columns exceed)
PITCH_RATIO = 1.25
#: blank lines a listing may hold between two of its lines
BLANK_LINES = 2
#: a listing's next row starts at most this many pitches left of its
#: leftmost row or right of its most indented one
DRIFT_PITCHES = 16
#: a lone code line holds at least this many characters
MIN_LONE_CHARS = 3
#: a lone line is indented when it starts this many pitches right of its neighbour
INDENT_PITCHES = 2.0
#: a page whose body lines are at least this share pitch lines (and at least
#: TYPEWRITTEN_LINES of them) is typewritten unless it looks like code
TYPEWRITTEN_SHARE = 0.8
TYPEWRITTEN_LINES = 6
#: …looks like code: at least this share of its characters are code symbols
CODE_SYMBOLS = 0.04
_SYMBOLS = frozenset("{}[];=<>#*/\\|&$_~^@%")


def take_listings(ordered: Sequence[LineBox], m: Metrics) -> list[list[LineBox] | Draft]:
    """``ordered`` (lines in reading order) cut at its code listings: each
    listing as a CODE :class:`~longdoc.layout.blocks.Draft`, the lines
    between listings as lists of lines, all in their order. Every line is in
    exactly one piece; a page without listings gives ``[list(ordered)]``
    (``[]`` for no lines)."""
    pieces: list[list[LineBox] | Draft] = []
    prose: list[LineBox] = []
    step = _line_step(ordered, m)
    for run in _runs(ordered, m, step):
        if _is_code(run, ordered, m):
            if prose:
                pieces.append(prose)
                prose = []
            pieces.append(Draft(BlockKind.CODE, run, code_text(run, step)))
        else:
            prose.extend(run)
    if prose:
        pieces.append(prose)
    return pieces


def shared_pitch(a: float | None, b: float | None) -> float | None:
    """The pitch two pieces of fixed-pitch text share (their mean), or None
    when either has none or they differ by more than :data:`PITCH_RATIO`."""
    if not a or not b or max(a, b) > PITCH_RATIO * min(a, b):
        return None
    return (a + b) / 2


def code_text(lines: Sequence[LineBox], step: float) -> str:
    """The listing's text (see the module docstring): ``lines`` in order,
    rows joined by ``\\n``; ``step`` is the listing's line pitch (points,
    centre to centre), which tells blank lines."""
    pitch = statistics.median(l.line.pitch or 0.0 for l in lines) or 1.0
    left = min(l.x0 for l in lines)
    rows: list[str] = []
    prev: LineBox | None = None
    for l in lines:
        text = l.text.strip()
        if prev is not None and same_row(prev, l):
            column = round((l.x0 - left) / pitch)
            rows[-1] += " " * max(1, column - len(rows[-1])) + text
        else:
            if prev is not None:
                rows.extend([""] * min(BLANK_LINES, max(0, round((l.cy - prev.cy) / step) - 1)))
            rows.append(" " * max(0, round((l.x0 - left) / pitch)) + text)
        prev = l
    return "\n".join(rows)


def _runs(ordered: Sequence[LineBox], m: Metrics, step: float) -> list[list[LineBox]]:
    """``ordered`` cut into candidate listings (runs of pitch lines that
    continue each other) and single other lines."""
    if _typewritten(ordered):
        return [[l] for l in ordered]
    runs: list[list[LineBox]] = []
    for l in ordered:
        if runs and _candidate(runs[-1][-1], m) and _candidate(l, m) and _continues(runs[-1], l, step):
            runs[-1].append(l)
        else:
            runs.append([l])
    return runs


def _candidate(l: LineBox, m: Metrics) -> bool:
    return l.line.pitch is not None and not m.tall(l)


def _continues(run: list[LineBox], l: LineBox, step: float) -> bool:
    """``l`` is the listing's next segment on the same row, or its next row
    down, at most BLANK_LINES blank lines below, starting within
    DRIFT_PITCHES of where the listing's rows start."""
    last = run[-1]
    pitch = shared_pitch(statistics.median(r.line.pitch or 0.0 for r in run), l.line.pitch)
    if pitch is None:
        return False
    if same_row(last, l):
        return l.x0 >= last.x1 - 0.5 * pitch
    drift = DRIFT_PITCHES * pitch
    below = 0 < l.cy - last.cy <= (BLANK_LINES + 1.4) * step
    return below and min(r.x0 for r in run) - drift <= l.x0 <= max(r.x0 for r in run) + drift


def _is_code(run: list[LineBox], ordered: Sequence[LineBox], m: Metrics) -> bool:
    if not _candidate(run[0], m):
        return False
    if any(not same_row(run[0], l) for l in run[1:]):
        return True
    if len(" ".join(l.text for l in run).strip()) < MIN_LONE_CHARS:
        return False
    row = LineBox(run[0].idx, run[0].line, min(l.x0 for l in run), min(l.y0 for l in run),
                  max(l.x1 for l in run), max(l.y1 for l in run))
    return _stands_apart(row, ordered, m)


def _stands_apart(row: LineBox, ordered: Sequence[LineBox], m: Metrics) -> bool:
    """A lone row is set apart: no close text line above or below it, or it
    is indented from the close line above it (and from the close one below)."""
    above, below = _close_neighbour(row, ordered, m, -1), _close_neighbour(row, ordered, m, +1)
    indent = INDENT_PITCHES * (row.line.pitch or 0.0)
    if above is None:
        return below is None
    return row.x0 >= above.x0 + indent and (below is None or row.x0 >= below.x0 + indent)


def _close_neighbour(row: LineBox, ordered: Sequence[LineBox], m: Metrics, direction: int) -> LineBox | None:
    """The nearest line above (``direction`` -1) or below (+1) ``row`` that
    overlaps it horizontally, when it is no further than a paragraph gap."""
    near = [l for l in ordered if 0 < direction * (l.cy - row.cy) <= m.paragraph_step and h_overlap(l, row) > 0
            and not same_row(l, row)]
    return min(near, key=lambda l: abs(l.cy - row.cy), default=None)


def _line_step(ordered: Sequence[LineBox], m: Metrics) -> float:
    """The pitch lines' own line pitch: the median step down between
    consecutive pitch lines that follow each other with no blank line; the
    page's pitch when there are none."""
    steps = [b.cy - a.cy for a, b in zip(ordered, ordered[1:])
             if a.line.pitch and b.line.pitch and not same_row(a, b) and 0 < b.cy - a.cy <= 1.6 * max(a.h, b.h)]
    return statistics.median(steps) if steps else m.pitch


def _typewritten(ordered: Sequence[LineBox]) -> bool:
    """Nearly every line is fixed-pitch and little of it is code (see the
    module docstring): there, a fixed pitch says nothing about code."""
    texts = [l.text for l in ordered if len(l.text.strip()) >= 2]
    pitched = [l.text for l in ordered if len(l.text.strip()) >= 2 and l.line.pitch]
    if len(pitched) < TYPEWRITTEN_LINES or len(pitched) < TYPEWRITTEN_SHARE * len(texts):
        return False
    chars = [ch for t in pitched for ch in t if not ch.isspace()]
    return sum(ch in _SYMBOLS for ch in chars) < CODE_SYMBOLS * len(chars)
