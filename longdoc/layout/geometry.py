"""Geometry helpers shared by the layout modules.

Boxes are plain ``(x0, y0, x1, y1)`` tuples in points, top-left origin
(the convention of :mod:`longdoc.model`), already normalized so that
``x0 <= x1`` and ``y0 <= y1``.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from longdoc.model import BBox, Line

#: line height assumed when a page gives no usable box heights (10 pt type)
DEFAULT_LINE_HEIGHT_PT = 10.0

Box = tuple[float, float, float, float]


def norm_box(b: BBox) -> Box:
    """``b`` as a tuple with ``x0 <= x1`` and ``y0 <= y1`` (engines may hand
    over flipped or zero-size boxes)."""
    return (min(b.x0, b.x1), min(b.y0, b.y1), max(b.x0, b.x1), max(b.y0, b.y1))


@dataclass(frozen=True)
class LineBox:
    """One line of a page with its index in the engine's list and its
    normalized box; what every layout step works on."""

    idx: int
    line: Line
    x0: float
    y0: float
    x1: float
    y1: float

    @staticmethod
    def of(idx: int, line: Line) -> LineBox:
        return LineBox(idx, line, *norm_box(line.bbox))

    @property
    def text(self) -> str:
        return self.line.text

    @property
    def h(self) -> float:
        return self.y1 - self.y0

    @property
    def w(self) -> float:
        return self.x1 - self.x0

    @property
    def size(self) -> float:
        """Height of the box the engine drew (before :func:`depad`): what
        text size is compared by."""
        return abs(self.line.bbox.y1 - self.line.bbox.y0)

    @property
    def cy(self) -> float:
        return (self.y0 + self.y1) / 2

    @property
    def box(self) -> Box:
        return (self.x0, self.y0, self.x1, self.y1)


def typical_line_height(lines: Sequence[LineBox]) -> float:
    """Median height of lines that carry at least two characters; falls back
    to :data:`DEFAULT_LINE_HEIGHT_PT` when there is nothing to measure."""
    heights = [l.h for l in lines if l.h > 0 and len(l.text.strip()) >= 2]
    if not heights:
        heights = [l.h for l in lines if l.h > 0]
    return statistics.median(heights) if heights else DEFAULT_LINE_HEIGHT_PT


def rough_pitch(lines: Sequence[LineBox], line_height: float) -> float | None:
    """Median distance between the centres of a line and the next line
    below it in the same column (overlapping it horizontally by half the
    narrower width), before any reading order is known. ``None`` when no
    such pairs exist."""
    by_y = sorted(lines, key=lambda l: l.cy)
    steps = []
    for i, a in enumerate(by_y):
        for b in by_y[i + 1 : i + 9]:
            d = b.cy - a.cy
            if d > 3 * line_height:
                break
            if not same_row(a, b) and h_overlap(a, b) >= 0.5 * min(a.w, b.w) > 0:
                steps.append(d)
                break
    return statistics.median(steps) if steps else None


#: a glyph box is about this share of the line pitch (type at 1.2 leading)
GLYPH_PITCH_RATIO = 0.8


def depad(lines: Sequence[LineBox], line_height: float) -> list[LineBox]:
    """Lines with the padding an OCR detector puts around text taken off.

    OCR boxes are taller than the type (consecutive lines' boxes touch or
    overlap) and wider by about as much, which closes narrow column
    gutters. The excess ``line_height - GLYPH_PITCH_RATIO × pitch`` is
    taken off each side horizontally and half of it vertically; a text
    layer's tight boxes have no excess and come back unchanged. The
    ``line`` (and its ``bbox``) is never modified.
    """
    pitch = rough_pitch(lines, line_height)
    if pitch is None:
        return list(lines)
    excess = line_height - GLYPH_PITCH_RATIO * pitch
    if excess <= 0.1 * line_height:
        return list(lines)
    px, py = min(excess, 0.45 * line_height), excess / 2
    return [_shrunk(l, px, py) for l in lines]


def _shrunk(l: LineBox, px: float, py: float) -> LineBox:
    cx, cy = (l.x0 + l.x1) / 2, l.cy
    x0, x1 = min(l.x0 + px, cx - 0.5), max(l.x1 - px, cx + 0.5)
    y0, y1 = min(l.y0 + py, cy - 0.5), max(l.y1 - py, cy + 0.5)
    return LineBox(l.idx, l.line, x0, y0, x1, y1)


def v_overlap(a: LineBox, b: LineBox) -> float:
    """Length of the vertical overlap of two lines (0 when disjoint)."""
    return max(0.0, min(a.y1, b.y1) - max(a.y0, b.y0))


def h_overlap(a: LineBox, b: LineBox) -> float:
    """Length of the horizontal overlap of two lines (0 when disjoint)."""
    return max(0.0, min(a.x1, b.x1) - max(a.x0, b.x0))


def same_row(a: LineBox, b: LineBox) -> bool:
    """Two lines share a row when they overlap vertically by at least half
    the smaller height (zero-height lines: when their centres are close)."""
    lo = min(a.h, b.h)
    if lo <= 0:
        return abs(a.cy - b.cy) <= max(a.h, b.h, 1.0) / 2
    return v_overlap(a, b) >= 0.5 * lo


def merge_intervals(spans: Sequence[tuple[float, float]], min_gap: float) -> list[tuple[float, float]]:
    """Union of 1-D intervals; intervals closer than ``min_gap`` are fused.
    The result is sorted and disjoint."""
    out: list[list[float]] = []
    for lo, hi in sorted(spans):
        if out and lo - out[-1][1] < min_gap:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [(lo, hi) for lo, hi in out]


def column_spans(
    spans: Sequence[tuple[float, float]], min_gap: float, min_width: float
) -> list[tuple[float, float]]:
    """Like :func:`merge_intervals`, then spans narrower than ``min_width``
    (a bullet boxed apart from its item, a column of list numbers) are
    fused with the nearer neighbour: they do not make a column of their own."""
    out = [list(s) for s in merge_intervals(spans, min_gap)]
    while len(out) > 1:
        narrow = [i for i, (lo, hi) in enumerate(out) if hi - lo < min_width]
        if not narrow:
            break
        i = narrow[0]
        gap_left = out[i][0] - out[i - 1][1] if i > 0 else float("inf")
        gap_right = out[i + 1][0] - out[i][1] if i + 1 < len(out) else float("inf")
        j = i - 1 if gap_left <= gap_right else i + 1
        lo, hi = min(out[i][0], out[j][0]), max(out[i][1], out[j][1])
        out[min(i, j)] = [lo, hi]
        del out[max(i, j)]
    return [(lo, hi) for lo, hi in out]


def enclosing(lines: Sequence[LineBox]) -> BBox:
    """Normalized box enclosing ``lines`` (must not be empty)."""
    return BBox(
        x0=min(l.x0 for l in lines),
        y0=min(l.y0 for l in lines),
        x1=max(l.x1 for l in lines),
        y1=max(l.y1 for l in lines),
    )
