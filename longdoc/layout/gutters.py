"""Column gutters found across a whole page, and the two ways OCR boxes
spoil them: a box that pokes a little into the gutter, and a box that runs
straight across it because the detector merged a line of each column.

::

     col A text ......  │  col B text ......
     col A text ........│...  ← pokes in: clipped back to the gutter
     col A text ...... col B text ......   ← merged: split in two
     col A text ......  │  col B text ......

A gutter is an x position ``c`` that many body lines end before and many
start after (on each side at least :data:`MIN_SIDE_LINES` lines and
:data:`MIN_SIDE_SHARE` of all, each column :data:`MIN_COLUMN_LINES` line
heights wide), with few lines across it (at most :data:`MAX_CROSSING` of
the smaller side): a small table inside a page of prose is not a gutter.
Of the x positions that qualify, the one with the most lines on its
smaller side *less those across it* is the gutter (then each side is
searched again): counting the smaller side alone favoured a cut through
the middle of a page, and on a three-column index it took the gap between
the middle column's entries and their page numbers (58 lines a side, 26
across) over the true gutters (49 and 43 a side, none across), where it
split entries; whether it did changed with a box's edge moving a point
between two runtimes. Lines whose part on one
side is under :data:`POKE_LINES` line heights are clipped back to their
side. A line across it with a real part on both sides is split there, at
the space nearest to where the gutter falls in its text (assuming evenly
spread characters), when lines of both columns sit at most
:data:`SPLIT_PITCH` pitches above or below it (so a full-width heading or
paragraph set apart from the columns stays whole); splits propagate through
a run of merged lines. Split lines are new :class:`~longdoc.model.Line`
objects carrying the parts of the text, with boxes cut at the gutter.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from longdoc.layout.geometry import LineBox
from longdoc.model import BBox

MIN_SIDE_LINES = 3
MIN_SIDE_SHARE = 0.2
MIN_COLUMN_LINES = 6.0
MAX_CROSSING = 0.6
POKE_LINES = 0.8
SPLIT_PITCH = 1.5
TALL_FACTOR = 1.25
#: how far (share of the text length) the split may move to find a space
SPLIT_SLACK = 0.12


@dataclass(frozen=True)
class Gutter:
    left: float  # where the left column's lines end
    right: float  # where the right column's lines start

    @property
    def centre(self) -> float:
        return (self.left + self.right) / 2


def find_gutters(lines: Sequence[LineBox], line_height: float) -> list[Gutter]:
    """Gutters of the page, left to right (see the module docstring); the
    sides of each gutter are searched again for further gutters."""
    body = [l for l in lines if l.h < TALL_FACTOR * line_height and len(l.text.strip()) >= 2]
    found: list[Gutter] = []
    stack = [body]
    while stack:
        part = stack.pop()
        g = _best_gutter(part, line_height)
        if g is not None:
            found.append(g)
            stack.append([l for l in part if l.x1 <= g.centre])
            stack.append([l for l in part if l.x0 >= g.centre])
    return sorted(found, key=lambda g: g.centre)


def _best_gutter(lines: list[LineBox], h: float) -> Gutter | None:
    if len(lines) < 2 * MIN_SIDE_LINES:
        return None
    ends = sorted(l.x1 for l in lines)
    starts = sorted(l.x0 for l in lines)
    lo, hi = starts[0] + MIN_COLUMN_LINES * h, ends[-1] - MIN_COLUMN_LINES * h
    best: tuple[int, float] | None = None
    plateau: list[float] = []
    x = lo
    while x <= hi:
        left = bisect_right(ends, x)
        right = len(starts) - bisect_left(starts, x)
        crossing = len(lines) - left - right
        side = min(left, right)
        if side >= max(MIN_SIDE_LINES, MIN_SIDE_SHARE * len(lines)) and crossing <= MAX_CROSSING * side:
            score = side - crossing
            if best is None or score > best[0]:
                best, plateau = (score, x), [x]
            elif score == best[0] and plateau and x - plateau[-1] <= 1.0:
                plateau.append(x)
        x += 1.0
    if best is None:
        return None
    c = (plateau[0] + plateau[-1]) / 2
    return Gutter(
        left=max((l.x1 for l in lines if l.x1 <= c), default=c),
        right=min((l.x0 for l in lines if l.x0 >= c), default=c),
    )


def mend(lines: Sequence[LineBox], gutters: Sequence[Gutter], line_height: float, min_gap: float) -> list[LineBox]:
    """Lines with pokes into each gutter clipped and merged lines split
    (see the module docstring); the gutter is kept at least ``min_gap``
    wide. Lines not touching a gutter come back as they are."""
    out = list(lines)
    for g in gutters:
        out = _mend_one(out, g, line_height, min_gap)
    return out


def _mend_one(lines: list[LineBox], g: Gutter, h: float, min_gap: float) -> list[LineBox]:
    half = max(min_gap, g.right - g.left) / 2 + 0.5
    edge_l, edge_r = g.centre - half, g.centre + half
    poke = POKE_LINES * h
    out: list[LineBox] = []
    across: list[LineBox] = []
    for l in lines:
        if l.x1 <= edge_l or l.x0 >= edge_r:
            out.append(l)
        elif l.x1 - g.centre <= poke and l.x0 < edge_l:
            out.append(LineBox(l.idx, l.line, l.x0, l.y0, edge_l, l.y1))
        elif g.centre - l.x0 <= poke and l.x1 > edge_r:
            out.append(LineBox(l.idx, l.line, edge_r, l.y0, l.x1, l.y1))
        elif l.x0 < edge_l - poke and l.x1 > edge_r + poke and l.h < TALL_FACTOR * h:
            across.append(l)
        else:
            out.append(l)
    return out + _split_runs(out, across, g, edge_l, edge_r, h)


def _split_runs(
    settled: list[LineBox], across: list[LineBox], g: Gutter, edge_l: float, edge_r: float, h: float
) -> list[LineBox]:
    """Split the lines in ``across`` that have column lines on both sides
    of the gutter near them; repeat so that a run of merged lines next to
    the columns is split line by line."""
    lefts = [l for l in settled if l.x1 <= edge_l]
    rights = [l for l in settled if l.x0 >= edge_r]
    density = (_density(lefts), _density(rights))
    pitch = 1.2 * h
    done: list[LineBox] = []
    pending = sorted(across, key=lambda l: l.cy)
    changed = True
    while pending and changed:
        changed = False
        rest = []
        for l in pending:
            near = SPLIT_PITCH * pitch
            if _near(l, lefts, near) and _near(l, rights, near):
                parts = _split(l, g, edge_l, edge_r, density)
                if parts is not None:
                    done.extend(parts)
                    lefts.append(parts[0])
                    rights.append(parts[1])
                    changed = True
                    continue
            rest.append(l)
        pending = rest
    return done + pending


def _near(l: LineBox, others: list[LineBox], dist: float) -> bool:
    return any(0 < abs(o.cy - l.cy) <= dist for o in others)


def _density(lines: list[LineBox]) -> float | None:
    """Median characters per point of a column's lines."""
    values = sorted(len(l.text) / l.w for l in lines if l.w > 0 and len(l.text) >= 10)
    return values[len(values) // 2] if values else None


def _split(
    l: LineBox, g: Gutter, edge_l: float, edge_r: float, density: tuple[float | None, float | None]
) -> tuple[LineBox, LineBox] | None:
    """Split ``l`` at the space nearest to where the gutter falls in its
    text: estimated from each column's character density when known (the
    left part fills ``x0``–gutter, the right part gutter–``x1``), else from
    the share of the box left of the gutter."""
    text = l.text
    left_d, right_d = density
    if left_d and right_d:
        target = (left_d * (edge_l - l.x0) + len(text) - right_d * (l.x1 - edge_r)) / 2
    else:
        target = (g.centre - l.x0) / (l.x1 - l.x0) * len(text)
    spaces = [i for i, ch in enumerate(text) if ch == " "]
    if not spaces:
        return None
    cut = min(spaces, key=lambda i: abs(i - target))
    if abs(cut - target) > max(2.0, SPLIT_SLACK * len(text)):
        return None
    left_text, right_text = text[:cut].rstrip(), text[cut:].lstrip()
    if not left_text or not right_text:
        return None
    line = l.line
    ox0, oy0, ox1, oy1 = line.bbox.x0, line.bbox.y0, line.bbox.x1, line.bbox.y1
    cut_x = g.centre
    left_line = line.model_copy(update={"text": left_text, "bbox": BBox(x0=min(ox0, ox1), y0=oy0, x1=cut_x, y1=oy1)})
    right_line = line.model_copy(update={"text": right_text, "bbox": BBox(x0=cut_x, y0=oy0, x1=max(ox0, ox1), y1=oy1)})
    return (
        LineBox(l.idx, left_line, l.x0, l.y0, edge_l, l.y1),
        LineBox(l.idx, right_line, edge_r, l.y0, l.x1, l.y1),
    )
