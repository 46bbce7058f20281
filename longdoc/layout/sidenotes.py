"""Side notes: narrow text in the outer margin (or a narrow boxed callout
beside the text column), kept out of the column flow.

Detection works on the page's x-projection. The lines' horizontal extents
are fused into *strips* separated by gutters no line crosses::

    | col A ........ | col B ........ | note |
      72         290   322        540   550 600

The leftmost or rightmost strip is a margin strip when it is narrow next to
its neighbour (≤ :data:`MAX_WIDTH_RATIO` of its width and ≤
:data:`MAX_PAGE_FRACTION` of the page), carries much less text (≤
:data:`MAX_TEXT_RATIO` of its characters), holds a few letters (not a
stray symbol), and is not mostly bare labels
(the ``[18]`` of a reference list or the numbers of a numbered list,
which hang beside their entries and stay with them in the flow).

Anything spanning into the margin (a wide table or formula) removes the
gutter, and with it the detection: the note then stays in the flow as a
column of its own, which still never splits a paragraph.
"""

from __future__ import annotations

from collections.abc import Sequence

from longdoc.layout.geometry import LineBox, merge_intervals
from longdoc.layout.text import is_label

MAX_WIDTH_RATIO = 0.5
MAX_PAGE_FRACTION = 0.25
MAX_TEXT_RATIO = 0.5
MIN_LETTERS = 4


def find_margin_strips(
    lines: Sequence[LineBox], page_width: float, min_gutter: float
) -> list[list[LineBox]]:
    """The lines of each margin strip (left one first; at most two).

    ``lines`` are the page's non-furniture lines; ``min_gutter`` is the
    narrowest whitespace taken as a gutter (points). Returns ``[]`` when the
    page has fewer than two strips or none is a margin.
    """
    spans = merge_intervals([(l.x0, l.x1) for l in lines], min_gutter)
    if len(spans) < 2:
        return []
    chars = [0] * len(spans)
    members: list[list[LineBox]] = [[] for _ in spans]
    for l in lines:
        k = next(i for i, (lo, hi) in enumerate(spans) if lo <= l.x0 <= hi)
        chars[k] += len(l.text.strip())
        members[k].append(l)
    edges = [(0, 1), (len(spans) - 1, len(spans) - 2)] if len(spans) > 2 else [(0, 1), (1, 0)]
    return [
        members[edge]
        for edge, nb in edges
        if _is_margin(spans[edge], spans[nb], chars[edge], chars[nb], page_width)
        and _has_prose(members[edge])
    ]


def _has_prose(lines: list[LineBox]) -> bool:
    """Real text: mostly not bare labels, and a few letters at least (not a
    stray symbol such as an end-of-proof mark)."""
    letters = sum(ch.isalpha() for l in lines for ch in l.text)
    return letters >= MIN_LETTERS and sum(is_label(l.text) for l in lines) * 2 < len(lines)


def _is_margin(
    strip: tuple[float, float],
    neighbour: tuple[float, float],
    strip_chars: int,
    neighbour_chars: int,
    page_width: float,
) -> bool:
    width = strip[1] - strip[0]
    return (
        width <= MAX_WIDTH_RATIO * (neighbour[1] - neighbour[0])
        and width <= MAX_PAGE_FRACTION * page_width
        and strip_chars <= MAX_TEXT_RATIO * neighbour_chars
    )



def group_notes(strip: Sequence[LineBox], line_height: float) -> list[list[LineBox]]:
    """Stack one margin strip's lines (already in reading order) into
    notes: a new note starts where the vertical gap exceeds one line height."""
    groups: list[list[LineBox]] = []
    for l in strip:
        prev = groups[-1][-1] if groups else None
        if prev is not None and l.y0 - prev.y1 <= line_height:
            groups[-1].append(l)
        else:
            groups.append([l])
    return groups


def pick_anchor(note: tuple[float, float, float, float], candidates: Sequence[tuple[str, tuple[float, float, float, float]]]) -> str | None:
    """Id of the block a note sits beside.

    ``note`` and each candidate's box are ``(x0, y0, x1, y1)``. Among the
    candidates overlapping the note vertically, the horizontally nearest
    column wins (within 20 pt of the nearest), then the largest overlap;
    with no overlap, the vertically nearest block. ``None`` when there are
    no candidates.
    """
    if not candidates:
        return None
    nx0, ny0, nx1, ny1 = note

    def hgap(b: tuple[float, float, float, float]) -> float:
        return max(0.0, b[0] - nx1, nx0 - b[2])

    def vover(b: tuple[float, float, float, float]) -> float:
        return min(ny1, b[3]) - max(ny0, b[1])

    overlapping = [(bid, b) for bid, b in candidates if vover(b) > 0]
    if overlapping:
        nearest = min(hgap(b) for _, b in overlapping)
        close = [(bid, b) for bid, b in overlapping if hgap(b) <= nearest + 20.0]
        return max(close, key=lambda c: vover(c[1]))[0]
    return min(candidates, key=lambda c: (-vover(c[1]), hgap(c[1])))[0]
