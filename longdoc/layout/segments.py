"""Visual lines back together: segments of one row rejoined unless a
real whitespace channel runs between them.

A text layer cuts a visual line wherever the PDF leaves a wide gap
(justified text, a tab, a table cell). Left apart, a piece on the right can look like a margin note or the
start of a second column and be read somewhere else: words leave their
line. Two neighbouring segments of a row are therefore joined again, left to
right (right to left for right-to-left script), unless the gap between
them is a *channel*, by one of two rules::

    structure (columns, tables, two        margin (a note beside the column)
    columns of author names)
    text text text │ text text             text text text text │   note
    text text text │ text text   ◄ gap     text text text text │   note  ◄ gap
    text text text │ text text             text text text text │
    an empty stretch of ≥ MIN_CHANNEL_ROWS  nothing across it nearby, and the
    line heights with text beside it on     column's lines end at its left edge
    both sides over most of its height

A single wide space in a line of prose is neither: the rows around it run
across it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from longdoc.layout.code import shared_pitch
from longdoc.layout.geometry import LineBox, merge_intervals, same_row
from longdoc.model import BBox

#: how far above and below the line the page is looked at, in line heights
REACH_LINES = 10.0
#: the empty stretch must be this many line heights tall (and, for a margin,
#: this many column lines must end at its edge)
MIN_CHANNEL_ROWS = 3
#: a structure has text beside the gap on both sides over this share of the stretch
MIN_COVERAGE = 0.6
#: column lines ending this close (line heights) to a margin gap make its edge
EDGE_LINES = 1.5
#: a gap narrower than this many line heights is a word space, always joined
#: (the narrowest column gutter the layout knows, ``GUTTER_LINES``)
WORD_GAP_LINES = 0.4
#: only lines of about the typical height are joined (not a giant box or a zero one)
JOIN_HEIGHT_RANGE = (0.5, 1.6)


def rejoin(lines: Sequence[LineBox], line_height: float) -> list[LineBox]:
    """``lines`` with the segments of each visual line joined (see the
    module docstring). A joined line is a new :class:`~longdoc.model.Line`
    (text joined with a space, the union of the boxes) under the first
    segment's index; two segments of one fixed-pitch line (a code line and
    its comment) are joined with as many spaces as the character grid has
    between them, and the line keeps their pitch (other joined lines have
    none). Lines not joined come back as they are."""
    lo, hi = (f * line_height for f in JOIN_HEIGHT_RANGE)
    regular = [l for l in lines if lo <= l.h <= hi]
    out: list[LineBox] = [l for l in lines if not lo <= l.h <= hi]
    for row in _rows(regular):
        row = sorted(row, key=lambda l: l.x0)
        current = row[0]
        for nxt in row[1:]:
            gap = nxt.x0 - current.x1
            if gap < WORD_GAP_LINES * line_height or not _is_channel(current.x1, nxt.x0, current, lines, line_height):
                current = _join(current, nxt)
            else:
                out.append(current)
                current = nxt
        out.append(current)
    return out


def _rows(lines: Sequence[LineBox]) -> list[list[LineBox]]:
    rows: list[list[LineBox]] = []
    for l in sorted(lines, key=lambda l: (l.cy, l.x0)):
        for row in rows[-3:]:
            if all(same_row(l, o) for o in row):
                row.append(l)
                break
        else:
            rows.append([l])
    return rows


def _is_channel(gx0: float, gx1: float, at: LineBox, lines: Sequence[LineBox], h: float) -> bool:
    """Whether the whitespace between ``gx0`` and ``gx1`` beside ``at`` is a
    column or table gap, or a margin's edge (see the module docstring)."""
    near = [l for l in lines if abs(l.cy - at.cy) <= REACH_LINES * h]
    top, bottom = _open_extent(near, at, gx0, gx1)
    if bottom - top >= MIN_CHANNEL_ROWS * h:
        left = [l for l in near if l.x0 < gx0 and l.x1 <= gx1]
        right = [l for l in near if l.x1 > gx1 and l.x0 >= gx0]
        if min(_coverage(left, top, bottom), _coverage(right, top, bottom)) >= MIN_COVERAGE:
            return True
    if any(_crosses([l], gx0, gx1) for l in near):
        return False
    tolerance = EDGE_LINES * h
    if any(l.x0 < gx0 and gx0 + tolerance < l.x1 for l in near):
        return False  # a line of the column runs on into the gap: the column does not end at its edge
    edge = sum(1 for l in near if l is not at and l.x0 < gx0 and abs(l.x1 - gx0) <= tolerance)
    return edge >= MIN_CHANNEL_ROWS


def _open_extent(near: Sequence[LineBox], at: LineBox, gx0: float, gx1: float) -> tuple[float, float]:
    """The vertical stretch around ``at`` in which no line runs across the gap."""
    across = [l for l in near if _crosses([l], gx0, gx1)]
    top = max((l.y1 for l in across if l.cy < at.cy), default=min(l.y0 for l in near))
    bottom = min((l.y0 for l in across if l.cy > at.cy), default=max(l.y1 for l in near))
    return top, bottom


def _coverage(lines: Sequence[LineBox], top: float, bottom: float) -> float:
    """Share of ``top``–``bottom`` that the lines' heights cover."""
    spans = merge_intervals([(max(l.y0, top), min(l.y1, bottom)) for l in lines if l.y1 > top and l.y0 < bottom], 0.0)
    return sum(b - a for a, b in spans) / max(bottom - top, 1e-9)


def _crosses(row: Sequence[LineBox], gx0: float, gx1: float) -> bool:
    return any(l.x0 < gx0 and l.x1 > gx1 for l in row)


def _join(a: LineBox, b: LineBox) -> LineBox:
    first, second = (b, a) if _right_to_left(a.text + b.text) else (a, b)
    box = BBox(x0=min(a.line.bbox.x0, b.line.bbox.x0), y0=min(a.line.bbox.y0, b.line.bbox.y0),
               x1=max(a.line.bbox.x1, b.line.bbox.x1), y1=max(a.line.bbox.y1, b.line.bbox.y1))
    pitch = shared_pitch(a.line.pitch, b.line.pitch)
    spaces = max(1, round((b.x0 - a.x0) / pitch) - len(a.text.rstrip())) if pitch else 1
    line = a.line.model_copy(update={
        "text": f"{first.text.rstrip()}{' ' * spaces}{second.text.lstrip()}", "bbox": box,
        "confidence": min(a.line.confidence, b.line.confidence), "pitch": pitch,
    })
    return LineBox(a.idx, line, min(a.x0, b.x0), min(a.y0, b.y0), max(a.x1, b.x1), max(a.y1, b.y1))


def _right_to_left(text: str) -> bool:
    strong = [unicodedata.bidirectional(ch) for ch in text if unicodedata.bidirectional(ch) in ("L", "R", "AL")]
    return bool(strong) and sum(d in ("R", "AL") for d in strong) * 2 > len(strong)
