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

**Leaders.** A contents or index entry joins its words to its page number
with leader dots, and OCR reads them short or not at all: ``2.2 Describing
argument types .`` with ``2`` in a box of its own, the dots between never
boxed. So for a line whose box ends with dots or has dots right after it,
the dots after its words are counted in the image (:func:`_with_leaders`):
a chain of equal, evenly spaced marks of a period's size (far smaller than
a lowercase letter) in the lower half of the line's band, starting at the
end of its words (inside the box or in the gap after it) and running
towards the next box of the row, not past other ink, each dot level with
the one before (a skewed scan's row climbs). With :data:`MIN_LEADER_DOTS`
or more, the line's trailing dots are replaced by the chain as printed:
spaced leaders as ``. . . .``, solid ones as ``....`` — spaced when the gap
between two dots is more than :data:`SPACED_GAP` dot widths (a period and
a space, or TeX's leader boxes, leave 3–5 dot widths between dots; periods
set solid leave under 2, more than one dot width though, so "a gap wider
than a dot" would not tell them apart). The line's quad is stretched to
its last dot. A chain shorter than the dots read is left as read, and a
line with no such chain keeps its text: no dot is invented.

**Dots that are not there.** A mark the band's top or bottom edge cuts is
never a dot: the tops of the next line's letters poking into a box (the
``Issu`` of ``Issue 34`` under a page number ``42``) are small, round and
low in the band, and were counted as leaders (``42.....``, the box
stretched across the column gutter). A detector box that runs on past the
words into blank paper gives the recognizer noise to read, and it reads
dots: ``(a . . .``. When a line's text
ends with two dots or more and its box holds at most one dot-shaped mark
after its last other ink, the dots are dropped and the box's right edge
is moved back to that ink (:func:`_without_invented_dots`), so the box no
longer bridges a column gutter either.
"""

from __future__ import annotations

import re
import unicodedata
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
#: fewest dots taken as leaders (fewer are left as read)
MIN_LEADER_DOTS = 3
#: a leader dot is at most this share of the line's (box) height wide and
#: tall: a period is a tenth of an em, the box about one and a half ems, a
#: lowercase letter (which must not pass for one) half an em
DOT_SIZE = 0.16
#: blobs this small (pixels) still count as dots: a 1 pt dot at 150 dpi is ~4
DOT_SPECK = 3
#: one dot to the next is at most this many line heights
MAX_DOT_STEP = 1.2
#: leaders start within this many line heights of the box's right edge
LEADER_REACH = 2.0
#: a gap between two dots wider than this many dot widths makes spaced leaders
SPACED_GAP = 2.5
TRAILING_DOTS = re.compile(r"[.·](?:\s*[.·])*\s*$")


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


Quad = list[list[float]]


def recount_runs(image: np.ndarray, quads: list[Quad], texts: list[str]) -> tuple[list[str], list[Quad]]:
    """``texts`` with every run at a line's end or start, and the leader
    dots after a line's words, as long as the marks in ``image`` (RGB, the
    pixels ``quads`` are in) show them (see the module docstring); and
    ``quads``, a line's right edge moved out to the last leader dot counted
    past it (its box holds its text)."""
    boxes = [_box(quad, image.shape) for quad in quads]
    out, out_quads = list(texts), [list(map(list, q)) for q in quads]
    for i, text in enumerate(texts):
        led = _with_leaders(image, boxes, i, text)
        if led is not None:
            out[i], right = led
            out_quads[i] = _stretched(out_quads[i], right)
            continue
        bare = _without_invented_dots(image, boxes, i, text)
        if bare is not None:
            out[i], right = bare
            out_quads[i] = _cut_back(out_quads[i], right)
            continue
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
    return out, out_quads


def _stretched(quad: Quad, right: float) -> Quad:
    """``quad`` (clockwise from the top-left corner) with its right corners
    moved out to ``right`` when that is further right."""
    return [[max(x, right), y] if k in (1, 2) else [x, y] for k, (x, y) in enumerate(quad)]


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


def _with_leaders(image: np.ndarray, boxes: list[tuple[int, int, int, int]], i: int,
                  text: str) -> tuple[str, float] | None:
    """``text`` with the leader dots after its words as printed, and the
    right edge (image pixels) of the last dot (of the box, when the page
    number is in it); ``None`` when line ``i`` has no leaders to recount (see the module docstring): the row is looked at
    only when dots lie at its box's right edge, or (:func:`_inner_leaders`)
    when its text ends with a page number boxed with it."""
    x0, y0, x1, y1 = boxes[i]
    height = y1 - y0
    if height < 4 or not text.strip():
        return None
    cjk = _mostly_full_width(text)
    inner = _inner_leaders(image, boxes[i], text, cjk)
    if inner is not None:
        return inner, float(x1)
    tail = TRAILING_DOTS.search(text)
    right = _right_limit(image, boxes, i)
    own = image[y0:y1, x0:x1]
    near = image[y0:y1, max(x0, x1 - height):min(right, x1 + int(LEADER_REACH * height))]
    if sum(_dot(m, height) for m in _marks(near, own, height, DOT_SPECK, stacked=False)) < 2:
        return None  # no dots at the box's edge (most lines): the row is not looked at
    marks = _marks(image[y0:y1, x0:right], own, height, DOT_SPECK, stacked=False)
    edge = x1 - x0
    seeds = sorted((m for m in marks if _dot(m, height) and edge - 2 * height <= m.x <= edge + LEADER_REACH * height),
                   key=lambda m: abs(m.x - edge))
    chain = max((_dot_chain(marks, seed, height) for seed in seeds[:SEEDS]), key=len, default=[])
    read = tail.group().count(".") + tail.group().count("·") if tail else 0
    if len(chain) < max(MIN_LEADER_DOTS, read) or (cjk and not _cjk_leaders(chain, marks, height)):
        return None
    words = text[:tail.start()].rstrip() if tail else text.rstrip()
    return _leader_text(words, chain, marks), float(x0 + chain[-1].x + chain[-1].w)


#: a line's text ending with a page number (arabic or roman), leader dots read before it or not
_ENDS_WITH_NUMBER = re.compile(r"(?<=[^\s.·])(?:\s*[.·])*\s*(\d{1,4}|[ivxlc]{1,6})\s*$")
#: leaders of CJK contents lines sit on the baseline, well below a CJK
#: ellipsis's centred dots: a dot's bottom at least this share down from the
#: top of the words' ink to its bottom (leaders ~0.9-1.0, an ellipsis ~0.55)
CJK_LEADER_LEVEL = 0.75
#: a CJK line's leaders are at least this many dots, over at least
#: CJK_LEADER_SPAN box heights: the dot strokes of a character (the four of
#: 灬 in 点) sit on the baseline too, evenly spaced, within one character
CJK_MIN_LEADER_DOTS = 6
CJK_LEADER_SPAN = 1.5


def _cjk_leaders(chain: list[Mark], marks: list[Mark], height: int) -> bool:
    """Leaders of a CJK line: long enough not to be a character's dot
    strokes, and on the words' baseline (:func:`_on_baseline`)."""
    span = max(m.x + m.w for m in chain) - min(m.x for m in chain)
    return (len(chain) >= CJK_MIN_LEADER_DOTS and span >= CJK_LEADER_SPAN * height
            and _on_baseline(chain, marks, height))


def _on_baseline(chain: list[Mark], marks: list[Mark], height: int) -> bool:
    """The dots of ``chain`` nearest the words sit on the words' baseline:
    their bottom in the lowest quarter (:data:`CJK_LEADER_LEVEL`) of the
    span from the top to the bottom of the words' ink next to them, where a
    CJK ellipsis's dots sit at its middle. Only the dots and glyphs near
    where the chain starts are measured: a skewed scan's row climbs or falls
    along a long chain. Without glyphs beside them, the box's height is the
    span."""
    near = sorted(chain, key=lambda m: m.x)[:5]
    start = near[0].x
    glyphs = [m for m in marks if not _dot(m, height) and m.h >= 0.3 * height
              and start - 10 * height <= m.x + m.w <= start]
    if glyphs:
        tops, bottoms = sorted(m.y for m in glyphs), sorted(m.y + m.h for m in glyphs)
        top, bottom = tops[len(tops) // 2], bottoms[len(bottoms) // 2]
    else:
        top, bottom = 0, height
    dots = sorted(m.y + m.h for m in near)
    return bottom > top and dots[len(dots) // 2] - top >= CJK_LEADER_LEVEL * (bottom - top)


def _inner_leaders(image: np.ndarray, box: tuple[int, int, int, int], text: str, cjk: bool) -> str | None:
    """``text`` with the leaders inside its own box: a contents line the
    detector boxed whole, words, leaders and page number, whose leaders the
    recognizer read short or not at all (``12 哪里可以下载CTEX中文套装软件？7``).
    The dots are counted where they stand: a chain of
    :data:`MIN_LEADER_DOTS` or more ending just before the page number's
    ink, after the words' ink. ``None`` when the text does not end with a
    number or no such chain is there."""
    number = _ENDS_WITH_NUMBER.search(text)
    if number is None:
        return None
    x0, y0, x1, y1 = box
    height = y1 - y0
    own = image[y0:y1, x0:x1]
    marks = _marks(own, own, height, DOT_SPECK, stacked=False)
    if len(marks) < MIN_LEADER_DOTS + 2:
        return None
    k = len(marks)
    while k > 0 and not _dot(marks[k - 1], height):  # the number's ink, from the right
        k -= 1
    if k == len(marks) or k == 0 or marks[-1].x - marks[k].x > 3 * height:
        return None  # no dot before ink at the box's end, or that ink too wide for a page number
    start = marks[k].x
    seed = marks[k - 1]
    if start - (seed.x + seed.w) > 2 * height:
        return None
    chain = _dot_chain(marks, seed, height)
    if len(chain) < MIN_LEADER_DOTS or chain[-1] is not seed or (cjk and not _cjk_leaders(chain, marks, height)):
        return None
    if not any(not _dot(m, height) and m.x + m.w <= chain[0].x for m in marks):
        return None  # no words before the dots
    words = text[:number.start()].rstrip()
    return f"{_leader_text(words, chain, marks)} {number.group(1)}"


def _without_invented_dots(image: np.ndarray, boxes: list[tuple[int, int, int, int]], i: int,
                           text: str) -> tuple[str, float] | None:
    """``text`` without the dots it ends with, and the right edge (image
    pixels) of its last ink, when the recognizer read two dots or more
    after the words where the image has at most one dot-shaped mark: a box
    that ran on into blank paper (a margin, a column gutter) and a
    recognizer that read its noise, or the tops of the next line's letters
    poking into the box, as ``.....`` or `` . . .``. ``None``
    when the dots are there (an ellipsis, leaders), or the line is not
    such a line."""
    tail = TRAILING_DOTS.search(text)
    if tail is None or tail.group().count(".") + tail.group().count("·") < 2 or not text[:tail.start()].strip():
        return None
    x0, y0, x1, y1 = boxes[i]
    height = y1 - y0
    if height < 4 or x1 - x0 < 2:
        return None
    own = image[y0:y1, x0:x1]
    # marks cut by the box's top or bottom edge are the lines above and
    # below poking in (the tops of their letters look like dots)
    marks = [m for m in _marks(own, own, height, DOT_SPECK, stacked=False) if m.y > 0 and m.y + m.h < height]
    words_end = max((m.x + m.w for m in marks if not _dot(m, height)), default=None)
    if words_end is None:
        return None
    if sum(_dot(m, height) for m in marks if m.x >= words_end) >= 2:
        return None
    return text[:tail.start()].rstrip(), float(x0 + words_end)


def _cut_back(quad: Quad, right: float) -> Quad:
    """``quad`` with its right corners moved in to ``right`` when that is
    further left (and right of its left corners)."""
    left = max(quad[0][0], quad[3][0])
    edge = max(right, left + 1.0)
    return [[min(x, edge), y] if k in (1, 2) else [x, y] for k, (x, y) in enumerate(quad)]


def _mostly_full_width(text: str) -> bool:
    chars = [ch for ch in text if not ch.isspace()]
    return bool(chars) and sum(unicodedata.east_asian_width(ch) in "WF" for ch in chars) * 2 >= len(chars)


def _dot_chain(marks: list[Mark], seed: Mark, height: int) -> list[Mark]:
    """The run of dots through ``seed``, left to right: from each dot the
    next mark level with it (a skewed scan's row climbs or falls, and the
    dots of the rows above and below that an OCR box takes in at its edges
    are not level with it), as long as that mark is a dot of the seed's size
    one pitch on (the first step at most :data:`MAX_DOT_STEP` line heights,
    the next ones within 30 % of the mean); scanning specks are passed over."""
    chain, pitch = [seed], None
    for direction in (1, -1):
        at = seed
        while (nxt := _next_level(marks, at, direction, seed)) is not None and _same_dot(nxt, seed):
            step = abs(nxt.x - at.x)
            if not (0 < step <= MAX_DOT_STEP * height if pitch is None else 0.7 * pitch <= step <= 1.3 * pitch):
                break
            chain.append(nxt)
            at = nxt
            pitch = (max(m.x for m in chain) - min(m.x for m in chain)) / (len(chain) - 1)
    return sorted(chain, key=lambda m: m.x) if len(chain) > 1 else []


def _next_level(marks: list[Mark], at: Mark, direction: int, seed: Mark) -> Mark | None:
    """The nearest mark past ``at`` (right for ``direction`` 1, left for
    -1) level with it, scanning specks (far smaller than ``seed``) left out."""
    level = [m for m in marks if (m.x - at.x) * direction > 0 and m.y < at.y + 1.5 * at.h and at.y - 0.5 * at.h
             < m.y + m.h and m.w * m.h >= NOISE * seed.w * seed.h]
    return min(level, key=lambda m: abs(m.x - at.x), default=None)


def _same_dot(mark: Mark, seed: Mark) -> bool:
    return abs(mark.w - seed.w) <= 0.35 * seed.w + 1 and abs(mark.h - seed.h) <= 0.35 * seed.h + 1


def _dot(mark: Mark, height: int) -> bool:
    """A mark shaped like a period: small, roughly round, low in the line,
    and whole inside the band: a mark the band's top or bottom edge cuts is
    a letter of the line above or below poking into the box (the tops of
    ``Issue`` under a page number look like a row of dots)."""
    small = mark.w <= DOT_SIZE * height and mark.h <= DOT_SIZE * height
    inside = mark.y > 0 and mark.y + mark.h < height
    return small and inside and 0.5 * mark.h <= mark.w <= 2 * mark.h and mark.y + mark.h >= 0.5 * height


def _leader_text(words: str, chain: list[Mark], marks: list[Mark]) -> str:
    """``words`` and the ``chain`` of dots after them as printed: spaced
    (``. . .``) when two dots stand more than :data:`SPACED_GAP` dot widths
    apart, solid (``...``) otherwise; solid dots follow the words without a
    space when they start about as close to the ink before them as to each
    other."""
    width = sorted(m.w for m in chain)[len(chain) // 2]
    gaps = sorted(b.x - (a.x + a.w) for a, b in zip(chain, chain[1:]))
    gap = gaps[len(gaps) // 2]
    if gap > SPACED_GAP * width:
        dots = " ".join("." * len(chain))
        return f"{words} {dots}" if words else dots
    before = [m for m in marks if m.x + m.w <= chain[0].x]
    apart = not before or chain[0].x - max(m.x + m.w for m in before) > 1.5 * gap + 1
    return f"{words}{' ' if words and apart else ''}{'.' * len(chain)}"


def _dash(mark: Mark, height: int) -> bool:
    """A mark shaped like a dash: flat, thin, at the middle of the line."""
    return mark.w >= 1.8 * mark.h and mark.h <= 0.2 * height and 0.25 * height <= mark.cy <= 0.8 * height


def _right_limit(image: np.ndarray, boxes: list[tuple[int, int, int, int]], i: int) -> int:
    """Where the band of line ``i`` ends on the right: the next line's box
    along it, or :data:`MAX_REACH` line heights on."""
    x0, y0, x1, y1 = boxes[i]
    right = min(image.shape[1], x1 + MAX_REACH * (y1 - y0))
    for j, (bx0, by0, _, by1) in enumerate(boxes):
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


def _marks(band: np.ndarray, own: np.ndarray, height: int, speck: int | None = None, *,
           stacked: bool = True) -> list[Mark]:
    """Ink blobs of ``band`` (its ink threshold from the line's own box
    ``own``), left to right; blobs stacked at one x (``=``) are one mark
    unless ``stacked`` is false. Blobs under ``speck`` pixels (by default a
    share of the line's height squared) are scanning noise and left out."""
    import cv2

    grey = cv2.cvtColor(np.ascontiguousarray(band), cv2.COLOR_RGB2GRAY)
    level, _ = cv2.threshold(cv2.cvtColor(np.ascontiguousarray(own), cv2.COLOR_RGB2GRAY), 0, 255,
                             cv2.THRESH_BINARY_INV + cv2.THRESH_OTSU)
    ink = (grey <= level).astype(np.uint8)
    count, _, stats, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
    speck = max(4, int(0.004 * height * height)) if speck is None else speck
    blobs = sorted((Mark(int(s[0]), int(s[1]), int(s[2]), int(s[3])) for s in stats[1:count] if s[4] >= speck),
                   key=lambda m: m.x)
    marks: list[Mark] = []
    for blob in blobs:
        last = marks[-1] if marks else None
        if stacked and last is not None and \
                min(last.x + last.w, blob.x + blob.w) - max(last.x, blob.x) > 0.5 * min(last.w, blob.w):
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
