"""Runs of one repeated symbol at a line's end or start, counted again from
the page image.

A CTC recognizer cannot count a long run of one character: it must see a
blank between every two dashes of ``----------------``, so rules of dashes,
rows of asterisks and dotted lines come out short. The text detector makes
it worse: its box often stops part-way along a sparse rule, so the rest is
never read. Both recognizers in RapidOCR's wheel and in longdoc's cascade
do this ("1. Definitions ----------------" read as "1. Definitions----").

Here, for a line whose text ends (or starts, or consists of) a run of three
or more of ``-=*~.·`` (:data:`RUN_SYMBOLS`), the run's marks are counted
in the page image: the ink marks along the line's band, from the one at the
box's edge, while each next mark has the same size, height and spacing as
the run's, inside the box and beyond its edge up to the next line's box.
The count replaces the run's length when it is larger; a run is never
shortened. A line whose box stopped at its words while a rule of dashes
goes on (three or more flat, thin marks at the line's middle, evenly
spaced, starting right after the box) gets that rule. Underscores (one
joined stroke) and runs inside a line are left as read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

#: symbols whose runs are counted (each mark one connected blob, or two
#: stacked ones for ``=``)
RUN_SYMBOLS = "-=*~.·"
_SYM = re.escape(RUN_SYMBOLS)
TRAILING = re.compile(rf"([{_SYM}])\1{{2,}}\s*$")
LEADING = re.compile(rf"^\s*([{_SYM}])\1{{2,}}")
#: a run is never counted longer than this (a page is ~150 marks wide)
MAX_RUN = 400
#: how far past its box a run is followed, in line heights
MAX_REACH = 40
#: marks nearest the box's edge tried as the run's first (a scanning speck
#: may lie nearer)
SEEDS = 4
#: blobs smaller than this share of a run mark's area are noise between marks
NOISE = 0.4
#: a rule read by no box starts at most this many line heights after a box
RULE_GAP = 1.5


@dataclass(frozen=True)
class Mark:
    """One ink blob of the line's band (pixels of the band)."""

    x: int
    y: int
    w: int
    h: int

    @property
    def cy(self) -> float:
        return self.y + self.h / 2


def recount_runs(image: np.ndarray, quads: list[list[list[float]]], texts: list[str]) -> list[str]:
    """``texts`` with every run at a line's end or start as long as the
    marks in ``image`` (RGB, the pixels ``quads`` are in) show it."""
    boxes = [_box(quad, image.shape) for quad in quads]
    out = list(texts)
    for i, text in enumerate(texts):
        trailing, leading = TRAILING.search(text), LEADING.match(text)
        if trailing is None and leading is None:
            out[i] = _with_rule(image, boxes, i, text)
            continue
        if trailing is not None and leading is not None and leading.end() >= trailing.start():
            count = _count(image, boxes, i, "whole")  # the line is one run
            out[i] = _resized(text, trailing, count) if count else text
            continue
        if trailing is not None:
            count = _count(image, boxes, i, "right")
            text = _resized(text, trailing, count) if count else text
        if leading is not None:
            count = _count(image, boxes, i, "left")
            text = _resized(text, leading, count) if count else text
        out[i] = text
    return out


def _with_rule(image: np.ndarray, boxes: list[tuple[int, int, int, int]], i: int, text: str) -> str:
    """``text`` and the rule of dashes that continues line ``i`` past its
    box unread (the detector's box stopped at the words), if there is one."""
    x0, y0, x1, y1 = boxes[i]
    height = y1 - y0
    if height < 4 or not text.strip():
        return text
    right = _right_limit(image, boxes, i)
    near = slice(max(x0, x1 - height), min(right, x1 + int(RULE_GAP * height) + height))
    if not any(_dash(m, height) for m in _marks(image[y0:y1, near], image[y0:y1, x0:x1], height)):
        return text  # no dash at the box's edge (most lines): the whole band is not looked at
    marks = _marks(image[y0:y1, x0:right], image[y0:y1, x0:x1], height)
    edge = x1 - x0  # the box's right edge in band pixels; the rule may begin a little inside it
    first = next((k for k, m in enumerate(marks) if edge - height <= m.x + m.w / 2 <= edge + RULE_GAP * height
                  and _dash(m, height)), None)
    count = 0 if first is None else _chain(marks, first)
    if count < 3:
        return text
    words = text.rstrip("-")  # a dash or two read at the box's edge are the rule's first: counted in it
    space = "" if words.endswith(" ") or not words else " "
    return f"{words}{space}{'-' * min(count, MAX_RUN)}"


def _dash(mark: Mark, height: int) -> bool:
    """A mark shaped like a dash: flat, thin, at the middle of the line."""
    return mark.w >= 1.8 * mark.h and mark.h <= 0.2 * height and 0.25 * height <= mark.cy <= 0.8 * height


def _right_limit(image: np.ndarray, boxes: list[tuple[int, int, int, int]], i: int) -> int:
    """Where the band of line ``i`` ends on the right: the next line's box
    along it, or :data:`MAX_REACH` line heights on."""
    x0, y0, x1, y1 = boxes[i]
    right = min(image.shape[1], x1 + MAX_REACH * (y1 - y0))
    for j, (bx0, by0, bx1, by1) in enumerate(boxes):
        if j != i and bx0 >= x1 and min(by1, y1) - max(by0, y0) >= 0.5 * min(y1 - y0, by1 - by0):
            right = min(right, bx0)
    return right


def _resized(text: str, match: re.Match[str], count: int) -> str:
    symbol = match.group(1)
    start = text.index(symbol * 3, match.start())
    end = start
    while end < len(text) and text[end] == symbol:
        end += 1
    if count <= end - start:
        return text
    return text[:start] + symbol * min(count, MAX_RUN) + text[end:]


def _count(image: np.ndarray, boxes: list[tuple[int, int, int, int]], i: int, side: str) -> int:
    """Marks of the run at ``side`` (right, left, whole) of line ``i``;
    0 when the marks do not form a run."""
    x0, y0, x1, y1 = boxes[i]
    height = y1 - y0
    if height < 4:
        return 0
    reach = MAX_REACH * height
    left = x0 if side == "right" else max(0, x0 - reach)
    right = x1 if side == "left" else min(image.shape[1], x1 + reach)
    for j, (bx0, by0, bx1, by1) in enumerate(boxes):  # stop at the next line's box along the band
        if j == i or min(by1, y1) - max(by0, y0) < 0.5 * min(height, by1 - by0):
            continue
        if bx0 >= x1 and side != "left":
            right = min(right, bx0)
        if bx1 <= x0 and side != "right":
            left = max(left, bx1)
    marks = _marks(image[y0:y1, left:right], image[y0:y1, x0:x1], height)
    if len(marks) < 2:
        return 0
    edge = {"right": x1 - left, "left": x0 - left, "whole": (x0 + x1) / 2 - left}[side]
    nearest = sorted(range(len(marks)), key=lambda k: abs(marks[k].x + marks[k].w / 2 - edge))
    return max(_chain(marks, seed) for seed in nearest[:SEEDS])


def _marks(band: np.ndarray, own: np.ndarray, height: int) -> list[Mark]:
    """Ink blobs of ``band`` (its ink threshold from the line's own box
    ``own``), left to right; blobs stacked at one x (``=``) are one mark."""
    import cv2

    grey = cv2.cvtColor(np.ascontiguousarray(band), cv2.COLOR_RGB2GRAY)
    level, _ = cv2.threshold(cv2.cvtColor(np.ascontiguousarray(own), cv2.COLOR_RGB2GRAY), 0, 255,
                             cv2.THRESH_BINARY_INV + cv2.THRESH_OTSU)
    ink = (grey <= level).astype(np.uint8)
    count, _, stats, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
    speck = max(4, int(0.004 * height * height))
    blobs = sorted((Mark(int(s[0]), int(s[1]), int(s[2]), int(s[3])) for s in stats[1:count] if s[4] >= speck),
                   key=lambda m: m.x)
    marks: list[Mark] = []
    for blob in blobs:
        last = marks[-1] if marks else None
        if last is not None and min(last.x + last.w, blob.x + blob.w) - max(last.x, blob.x) > 0.5 * min(last.w, blob.w):
            x, y = min(last.x, blob.x), min(last.y, blob.y)
            marks[-1] = Mark(x, y, max(last.x + last.w, blob.x + blob.w) - x, max(last.y + last.h, blob.y + blob.h) - y)
        else:
            marks.append(blob)
    return marks


def _chain(marks: list[Mark], seed: int) -> int:
    """How many marks the longest stretch around ``seed`` holds that looks
    like one run: marks of the seed's size and height, evenly spaced (blobs
    far smaller than the seed's, scanning noise, are passed over); 0 when
    the seed has no such neighbour."""
    first = marks[seed]
    run = [m for k, m in enumerate(marks) if k == seed or m.w * m.h >= NOISE * first.w * first.h]
    at = run.index(first)

    def alike(mark: Mark) -> bool:
        return (abs(mark.w - first.w) <= 0.35 * first.w + 1 and abs(mark.h - first.h) <= 0.35 * first.h + 1
                and abs(mark.cy - first.cy) <= 0.5 * first.h + 1)

    def spaced(a: Mark, b: Mark, pitch: float | None) -> bool:
        step = b.x - a.x
        if pitch is None:
            return 0 < step <= 3 * max(first.w, first.h)
        return 0.7 * pitch <= step <= 1.3 * pitch

    lo = hi = at
    pitch: float | None = None
    while hi + 1 < len(run) and alike(run[hi + 1]) and spaced(run[hi], run[hi + 1], pitch):
        hi += 1
        pitch = (run[hi].x - run[lo].x) / (hi - lo)
    while lo > 0 and alike(run[lo - 1]) and spaced(run[lo - 1], run[lo], pitch):
        lo -= 1
        pitch = (run[hi].x - run[lo].x) / (hi - lo)
    return hi - lo + 1 if hi > lo else 0


def _box(quad: list[list[float]], shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    xs, ys = [p[0] for p in quad], [p[1] for p in quad]
    return (max(0, int(min(xs))), max(0, int(min(ys))), min(shape[1], int(np.ceil(max(xs)))),
            min(shape[0], int(np.ceil(max(ys)))))
