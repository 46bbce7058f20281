"""Lines set in a fixed-pitch (monospace) font, found in the image, and their
spaces set by the character grid.

Code listings are set in monospace type: every character, space included,
takes one cell of the same width. The recognizers drop spaces inside such
lines (``x,y:The``, ``fz_lineto(ctx,x,y)``) because they judge spaces by
the look of proportional type. Here, per line crop:

- the glyphs are the crop's ink blobs (one per character, or a few: ``i``,
  ``:``, ``%``; blobs in one cell are one glyph);
- the line is fixed-pitch when their centres fall on a grid: for some pitch
  ``P`` the Rayleigh statistic ``|mean(exp(2πi·x/P))|`` of the centres
  reaches :data:`MIN_GRID` (1.0 is a perfect grid; proportional text
  stays around 0.3). The largest such ``P`` within
  :data:`PITCH_RANGE` line heights is the pitch (``P/2`` fits a grid too).
  Measured on 685 lines of 12+ characters of real scanned manuals
  (text-layer fonts as truth): at 0.7, 130 of 186 monospace lines are
  found and 7 of 499 proportional ones taken for monospace (short lines,
  rows of digits, which are tabular in most fonts: hence
  :data:`MIN_GLYPHS` and the letter rule);
- when every glyph sits on the grid (within :data:`MAX_OFF_GRID` of a
  cell's centre: no proportional line number or leader in the line) and
  the recognized text has as many characters (spaces aside) as the grid
  has occupied cells, the text is written again with as many spaces
  between two characters as there are empty cells between them. Otherwise
  the recognizer's own spacing stays.

:func:`line_grid` finds a line's grid (None for proportional lines),
:func:`respaced` sets its spaces; the worker turns the pitch into
the line's :attr:`~longdoc.model.Line.pitch` in points, and layout makes
code blocks of runs of such lines (:mod:`~longdoc.layout.code`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Rayleigh statistic of the glyph centres at which a line is on a grid
MIN_GRID = 0.7
#: pitch searched, in crop heights (a monospace cell is ~0.6 em; the crop is ~1.3 em tall)
PITCH_RANGE = (0.25, 1.0)
#: pitches tried are this many cells apart over a line's span (see find_grid)
GRID_DRIFT = 0.05
#: fewer glyphs than this cannot tell a grid from chance
MIN_GLYPHS = 15
#: a blob centre further than this share of the pitch from its cell's centre is off the
#: grid: the line mixes in proportional type (a line number, leaders), and is not respaced
MAX_OFF_GRID = 0.22
#: a short line takes the grid of a fixed-pitch line at most this many line heights away
NEIGHBOUR_LINES = 4.0
#: ... and starts at most this many cells left of it (a closing brace outdented)
OUTDENT_CELLS = 8
#: how well a short line's own glyphs must sit on that pitch
SHORT_GRID = 0.85
#: a blob at the crop's top or bottom edge that reaches no further into it than this share of its
#: height is part of the line above or below (a glyph of the line itself reaches the crop's middle)
EDGE_BAND = 0.25
#: blobs smaller than this share of the crop height in both directions are specks (a full
#: stop at 10 pt is ~0.08 of its crop)
SPECK = 0.06


@dataclass(frozen=True)
class Grid:
    pitch: float  # pixels
    phase: float  # pixels: cell k is centred at phase + k·pitch


def glyph_boxes(crop: np.ndarray) -> list[tuple[float, float]]:
    """(left, right) of the crop's ink blobs, left to right (specks left
    out, and the ends of the lines above and below: a blob at the crop's
    top or bottom edge that stays within :data:`EDGE_BAND` of it)."""
    import cv2

    grey = crop if crop.ndim == 2 else cv2.cvtColor(np.ascontiguousarray(crop), cv2.COLOR_RGB2GRAY)
    _, ink = cv2.threshold(grey, 0, 255, cv2.THRESH_BINARY_INV + cv2.THRESH_OTSU)
    count, _, stats, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
    h = grey.shape[0]
    boxes = [(float(s[0]), float(s[0] + s[2])) for s in stats[1:count]
             if (s[3] >= SPECK * h or s[2] >= SPECK * h) and not _from_next_line(s[1], s[3], h)]
    return sorted(boxes)


def _from_next_line(top: int, height: int, crop_height: int) -> bool:
    """A blob cut by the crop's top or bottom edge and no deeper into it
    than :data:`EDGE_BAND`: a descender of the line above or a cap of the
    line below, which a box drawn a pixel taller takes in (the same line's
    crop had 10 blobs on one runtime's box and 12 on the other's, and lost
    its grid)."""
    band = EDGE_BAND * crop_height
    return (top <= 0 and top + height <= band) or (top + height >= crop_height and top >= crop_height - band)


def find_grid(boxes: list[tuple[float, float]], height: float) -> Grid | None:
    """The character grid the blobs' centres sit on, or None.

    Pitches are tried evenly in frequency (1/pitch), :data:`GRID_DRIFT`
    cells apart over the line's span, so a line's own pitch is never
    missed by more than that between two tries, however long the line
    (even steps of 0.25 px drifted half a cell over a 60-character line:
    whether a listing's longest line was found depended on where its
    pitch fell between two steps). The pitch is the largest one at a
    local maximum of the statistic that reaches 0.85 of the best (``P/2``
    fits a grid too), taken at that maximum."""
    if len(boxes) < MIN_GLYPHS or height <= 0:
        return None
    xs = np.array([(a + b) / 2 for a, b in boxes])
    span = max(float(xs.max() - xs.min()), height)
    low, high = 1 / (PITCH_RANGE[1] * height), 1 / (PITCH_RANGE[0] * height)
    freqs = np.arange(low, high, GRID_DRIFT / span)
    if len(freqs) < 3:
        return None
    vectors = np.exp(2j * np.pi * xs[None, :] * freqs[:, None]).mean(axis=1)
    strength = np.abs(vectors)
    best = float(strength.max())
    if best < MIN_GRID:
        return None
    inner = np.arange(1, len(freqs) - 1)
    peaks = inner[(strength[inner] >= strength[inner - 1]) & (strength[inner] >= strength[inner + 1])]
    strong = [int(k) for k in peaks if strength[k] >= max(MIN_GRID, 0.85 * best)]
    k = min(strong) if strong else int(strength.argmax())  # the lowest frequency: the largest pitch
    pitch = float(1 / freqs[k])
    phase = float(np.angle(vectors[k]) / (2 * np.pi) * pitch) % pitch
    return Grid(pitch, phase)


def cells(boxes: list[tuple[float, float]], grid: Grid) -> list[int]:
    """The grid cells the blobs cover, in order (a blob as wide as two
    cells — touching glyphs — covers both)."""
    taken: set[int] = set()
    for a, b in boxes:
        first = round((a + grid.pitch * 0.3 - grid.phase) / grid.pitch)
        last = round((b - grid.pitch * 0.3 - grid.phase) / grid.pitch)
        taken.update(range(first, max(first, last) + 1))
    return sorted(taken)


def on_grid(boxes: list[tuple[float, float]], grid: Grid) -> bool:
    """Whether every blob centre lies within :data:`MAX_OFF_GRID` of a cell centre."""
    for a, b in boxes:
        offset = ((a + b) / 2 - grid.phase) / grid.pitch
        if abs(offset - round(offset)) > MAX_OFF_GRID:
            return False
    return True


def respace(text: str, occupied: list[int]) -> str | None:
    """``text`` with the spaces between its characters set by the cells its
    characters occupy, or None when the counts disagree or the grid would
    take away a space the recognizer read (a proportional line whose digits
    happen to sit on a grid — tabular figures — is not fixed-pitch: its word
    spaces are narrower than a cell)."""
    chars = [ch for ch in text if not ch.isspace()]
    if not chars or len(chars) != len(occupied):
        return None
    spaced_before = [False] * len(chars)
    k = -1
    for ch in text:
        if ch.isspace():
            if k >= 0 and k + 1 < len(chars):
                spaced_before[k + 1] = True
        else:
            k += 1
    out = chars[0]
    for n, (ch, before, after) in enumerate(zip(chars[1:], occupied, occupied[1:]), start=1):
        gap = after - before - 1
        if spaced_before[n] and gap < 1:
            return None
        out += " " * gap + ch
    return out


@dataclass(frozen=True)
class LineGrid:
    """A fixed-pitch line's glyph blobs and grid."""

    boxes: list[tuple[float, float]]
    grid: Grid


def line_grid(crop: np.ndarray, text: str) -> LineGrid | None:
    """The character grid of a line crop the recognizer read as ``text``,
    when it is set in a fixed-pitch font with letters in it; else None.
    Lines of Chinese or Japanese (mostly full-width characters, which every
    CJK font sets on a grid) are not code, and not looked at."""
    if sum(ch.isalpha() for ch in text) < 3 or _full_width(text):
        return None
    boxes = glyph_boxes(crop)
    grid = find_grid(boxes, float(crop.shape[0]))
    return None if grid is None else LineGrid(boxes, grid)


def _full_width(text: str) -> bool:
    import unicodedata

    chars = [ch for ch in text if not ch.isspace()]
    return sum(unicodedata.east_asian_width(ch) in "WF" for ch in chars) * 2 >= len(chars)


def respaced(text: str, found: LineGrid) -> str:
    """``text`` with its spaces set by the grid when every glyph sits on it
    and the counts agree (see the module docstring); else ``text``."""
    if not on_grid(found.boxes, found.grid):
        return text
    spaced = respace(text, cells(found.boxes, found.grid))
    return text if spaced is None else spaced


@dataclass(frozen=True)
class PlacedLine:
    """A line crop's place on the page: its left edge (page pixels, where
    crop x 0 lies), its vertical centre and height."""

    left: float
    cy: float
    height: float


def page_grids(crops: list[np.ndarray], texts: list[str], places: list[PlacedLine]) -> list[LineGrid | None]:
    """:func:`line_grid` for every line of a page, then the short lines of
    a listing (``{``, ``}``, ``return x0;``: too few glyphs to show a grid
    by themselves) on the pitch of the nearest fixed-pitch line above or
    below that starts at most :data:`OUTDENT_CELLS` cells right of them,
    within :data:`NEIGHBOUR_LINES` line heights, when their own glyphs sit
    on a grid of that pitch (Rayleigh statistic :data:`SHORT_GRID`; a line
    of one glyph always does). A line given a grid so lends it on, so a
    listing's closing braces are reached from its last long line."""
    grids = [line_grid(crop, text) for crop, text in zip(crops, texts)]
    for _ in range(len(grids)):
        lent = False
        for i, (crop, text, place) in enumerate(zip(crops, texts, places)):
            if grids[i] is not None or not text.strip():
                continue
            found = _nearest_grid(place, places, grids)
            if found is not None and (grid := _short_grid(crop, found.grid.pitch)) is not None:
                grids[i], lent = grid, True
        if not lent:
            break
    return grids


def _nearest_grid(place: PlacedLine, places: list[PlacedLine], grids: list[LineGrid | None]) -> LineGrid | None:
    near = [(abs(a.cy - place.cy), g) for a, g in zip(places, grids) if g is not None
            and abs(a.cy - place.cy) <= NEIGHBOUR_LINES * place.height and place.left >= a.left - OUTDENT_CELLS * g.grid.pitch]
    return min(near, key=lambda n: n[0])[1] if near else None


def _short_grid(crop: np.ndarray, pitch: float) -> LineGrid | None:
    boxes = glyph_boxes(crop)
    if not boxes:
        return None
    vector = np.exp(2j * np.pi * np.array([(a + b) / 2 for a, b in boxes]) / pitch).mean()
    if abs(vector) < SHORT_GRID:
        return None
    return LineGrid(boxes, Grid(pitch, float(np.angle(vector) / (2 * np.pi) * pitch) % pitch))
