"""A PDF page's text layer as positioned lines (pdfium char boxes → lines).

pdfium gives a page's characters in content order, with a box per character
and generated ``\\r\\n`` where it detects a line break. Lines are built from
that stream: a new line starts at a pdfium line break (unless the next glyph
sits right after the previous one on the same line: pdfium breaks around
super- and subscripts), and also where pdfium did not break but the geometry
does (a hyphenated word carried on to the next line, two columns or table
cells sharing a baseline with a wide gap). So one
:class:`~longdoc.model.Line` is one visual line *segment*. Characters
without a usable box (rare) join the segment being built.

Coordinates: pdfium reports boxes in PDF user space (origin bottom-left,
unrotated page). They are converted to the page **as displayed**, which is
what :meth:`PdfSource.render` draws: relative to the page's crop box, turned
by its ``/Rotate``, with the origin at the top-left. Text drawn rotated
within the page (a vertical side banner) keeps a box around its glyphs.

Fixed pitch: each glyph records whether its font is fixed-pitch (pdfium's
FixedPitch flag, or a monospace font known by name: TeX's Type 1 fonts such
as ``CMTT10`` leave the flag unset; see :func:`is_fixed_pitch_font`). A
segment whose glyphs are (nearly) all fixed-pitch and sit on one character
grid gets :attr:`~longdoc.model.Line.pitch` (points per character, the
median advance between neighbouring glyphs), and its inner spaces are set by
that grid (pdfium gives one space for a run of them): a code line keeps its
alignment. Segmentation is the same for every font.

Characters: a glyph pdfium reports as having no valid Unicode mapping
becomes U+FFFD (pdfium would otherwise give its raw code, often a control
character or a wrong letter); a hyphen pdfium found at a line break (which it
reports as U+0002) becomes ``-``. Other control characters and private-use
glyphs are kept as-is so that
:func:`longdoc.ingest.textlayer.judge_text_layer` can see them.
"""

from __future__ import annotations

import ctypes
import re
import statistics
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from longdoc.model import BBox, Line

#: A gap wider than this many line heights between two glyphs on one line
#: starts a new segment. Word and sentence spaces in justified text reach
#: ~1.6; column gutters and table cell gaps are usually wider.
SEGMENT_GAP_EM = 2.0
#: The same for a segment with right-to-left letters: there pdfium's logical
#: order jumps across embedded left-to-right runs ("... R و Python ..."), so
#: consecutive glyphs can sit a whole word apart.
RTL_SEGMENT_GAP_EM = 4.0

#: A narrower gap inside a segment, at least this many line heights, is a
#: column channel when a strip of whitespace runs through it and the gaps of
#: CHANNEL_ROWS consecutive rows
#: (a table whose rows the PDF wrote as single lines: "Revenue   1,234   5,678")
CHANNEL_GAP_EM = 0.8
CHANNEL_ROWS = 4
#: the part of two gaps that must be common for them to be one channel, in line heights
CHANNEL_OVERLAP_EM = 0.3

#: What a glyph without a known Unicode value becomes.
UNMAPPED = "\ufffd"

_NEWLINES = frozenset("\r\n")

#: pdfium's font flag for a fixed-pitch font (PDF 32000 table 123, bit 1)
FIXED_PITCH_FLAG = 1
#: a segment carries a pitch when at least this share of its glyphs are
#: fixed-pitch (a stray glyph from a fallback font is allowed) and at least
#: this share of its neighbouring glyphs sit a whole number of pitches apart
FIXED_SHARE = 0.9
#: two glyphs whose widths differ by at most this share have the same advance
SAME_ADVANCE = 0.01
#: how far from a whole number of pitches a glyph may sit and still be on the grid
GRID_TOLERANCE = 0.2
#: monospace fonts known by name (a subset prefix ``ABCDEF+`` is stripped
#: first), for fonts that leave the FixedPitch flag unset: TeX's typewriter
#: fonts (Computer Modern, cm-super, Latin Modern, txfonts, PSNFSS Courier,
#: Bera Mono) and the usual programming fonts
_FIXED_NAME = re.compile(
    r"""mono(?!type|prop)                       # DejaVuSansMono, LiberationMono, NimbusMonoPS, LMMono10
      | nimbusmon | courier | consol | inconsolata | menlo | monaco | sourcecodepro | firacode | cascadia
      | lucida(?:sans)?typewriter | texgyrecursor
      | ^(?:cm(?:sl|i)?tt | cmtcsc | sf(?:tt|it|st) | ec(?:tt|it|st) | lmtt | txtt | t1xtt | pcr[rb]) \d*
    """,
    re.IGNORECASE | re.VERBOSE,
)
#: fonts that set the FixedPitch flag but are not typewriter type: the
#: invisible one-glyph fonts of OCR text layers (their glyphs are stretched
#: word by word)
_NOT_FIXED_NAME = re.compile(r"glyphless", re.IGNORECASE)
_SUBSET = re.compile(r"^[A-Z]{6}\+")

Box = tuple[float, float, float, float]  # x0, y0, x1, y1; top-left origin


@dataclass(frozen=True)
class Glyph:
    """One character of the text stream. ``box`` is None for whitespace and
    characters without a usable box; ``text`` may be ``\\r``/``\\n``;
    ``fixed``: set in a fixed-pitch font (known for placed glyphs only)."""

    text: str
    box: Box | None
    fixed: bool = False


def is_fixed_pitch_font(name: str, flags: int) -> bool:
    """Whether a font is fixed-pitch (monospace), from its base font name as
    the PDF gives it (``"WQWONW+DejaVuSansMono"``, ``"CMTT10"``) and its
    font descriptor flags: the FixedPitch flag, or a known monospace name
    (:data:`_FIXED_NAME`). The invisible glyph-less fonts of OCR text layers
    are never fixed-pitch, whatever their flags say."""
    base = _SUBSET.sub("", name)
    if _NOT_FIXED_NAME.search(base):
        return False
    return bool(flags & FIXED_PITCH_FLAG) or bool(_FIXED_NAME.search(base))


class _Fonts:
    """Asks pdfium for each character's font (name and flags) and answers
    :func:`is_fixed_pitch_font` for it, once per font."""

    NAME_BYTES = 256

    def __init__(self, raw_textpage: object) -> None:
        self._textpage = raw_textpage
        self._name = ctypes.create_string_buffer(self.NAME_BYTES)
        self._flags = ctypes.c_int(0)
        self._flags_ref = ctypes.byref(self._flags)
        self._known: dict[tuple[int, bytes], bool] = {}

    def fixed(self, index: int) -> bool:
        """Whether character ``index`` is set in a fixed-pitch font (False
        when pdfium knows no font for it)."""
        length = pdfium_c.FPDFText_GetFontInfo(self._textpage, index, self._name, self.NAME_BYTES, self._flags_ref)
        if length == 0:
            return False
        key = (self._flags.value, self._name.value if length <= self.NAME_BYTES else b"")
        known = self._known.get(key)
        if known is None:
            known = self._known[key] = is_fixed_pitch_font(key[1].decode("latin-1"), key[0])
        return known


def read_glyphs(textpage: pdfium.PdfTextPage, page_box: Box, rotation: int) -> list[Glyph]:
    """All characters of a pdfium text page, boxes in display coordinates.

    ``page_box``: (left, bottom, right, top) of the page's displayed area in
    user space (pdfium's page bounding box); ``rotation``: the page's
    /Rotate in degrees (0, 90, 180, 270). A character pdfium flags as having
    no valid Unicode mapping becomes U+FFFD; a hyphen pdfium found at a line
    break (reported as U+0002) becomes ``-``. A placed glyph's ``fixed`` says
    whether its font is fixed-pitch (:func:`is_fixed_pitch_font`).
    """
    raw = textpage.raw  # the raw handle: the wrapper costs a conversion on every call
    glyphs: list[Glyph] = []
    placed: list[tuple[int, int]] = []  # (position in glyphs, pdfium index) of glyphs with a box
    count = textpage.count_chars()
    index = 0
    while index < count:
        code = pdfium_c.FPDFText_GetUnicode(raw, index)
        step = 1
        if 0xD800 <= code <= 0xDBFF and index + 1 < count:  # UTF-16 pair?
            low = pdfium_c.FPDFText_GetUnicode(raw, index + 1)
            if 0xDC00 <= low <= 0xDFFF:
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                step = 2
        if pdfium_c.FPDFText_IsHyphen(raw, index) == 1:
            text = "-"
        elif pdfium_c.FPDFText_HasUnicodeMapError(raw, index) == 1:
            text = UNMAPPED
        else:
            text = _char_text(code)
        box = None if text.isspace() else _char_box(textpage, index, page_box, rotation)
        if box is not None:
            placed.append((len(glyphs), index))
        glyphs.append(Glyph(text, box))
        index += step
    _mark_fixed(glyphs, placed, _Fonts(raw))
    return glyphs


def _mark_fixed(glyphs: list[Glyph], placed: list[tuple[int, int]], fonts: _Fonts) -> None:
    """Set ``fixed`` on the placed glyphs whose font is fixed-pitch.

    Only glyphs as wide as a placed glyph next to them in the stream are
    asked about (a fixed-pitch font's glyphs share one advance, which is the
    width of a loose box): asking pdfium costs about a microsecond a
    character, and in proportional text most neighbours differ in width.
    """
    widths = [glyphs[at].box[2] - glyphs[at].box[0] for at, _ in placed]  # type: ignore[index]  # placed: has a box
    asked = -1
    for k, (a, b) in enumerate(zip(widths, widths[1:])):
        if abs(b - a) > SAME_ADVANCE * a:
            continue
        for j in (k, k + 1):
            if j > asked:
                asked = j
                at, index = placed[j]
                if fonts.fixed(index):
                    glyphs[at] = Glyph(glyphs[at].text, glyphs[at].box, True)


def _char_text(code: int) -> str:
    if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
        return UNMAPPED
    return chr(code)


def _char_box(
    textpage: pdfium.PdfTextPage, index: int, page_box: Box, rotation: int
) -> Box | None:
    """Loose (font-height) box of a character, else its tight box, else None."""
    for loose in (True, False):
        try:
            left, bottom, right, top = textpage.get_charbox(index, loose=loose)
        except pdfium.PdfiumError:
            continue
        if right - left > 0.01 and top - bottom > 0.01:
            return to_display((left, bottom, right, top), page_box, rotation)
    return None


def to_display(user_box: Box, page_box: Box, rotation: int) -> Box:
    """A user-space box (l, b, r, t) as a top-left-origin box on the displayed page.

    The page's displayed area is ``page_box`` (l, b, r, t) turned clockwise by
    ``rotation`` degrees::

        rotation 0:  x = u - L,  y = T - v        rotation 90:  x = v - B,  y = u - L
        rotation 180: x = R - u, y = v - B        rotation 270: x = T - v,  y = R - u

    where (u, v) is a user-space point.
    """
    left, bottom, right, top = user_box
    L, B, R, T = page_box
    rotation %= 360
    if rotation == 90:
        return (bottom - B, left - L, top - B, right - L)
    if rotation == 180:
        return (R - right, bottom - B, R - left, top - B)
    if rotation == 270:
        return (T - top, R - right, T - bottom, R - left)
    return (left - L, T - top, right - L, T - bottom)


def group_lines(glyphs: Iterable[Glyph], page: int, width: float, height: float) -> list[Line]:
    """Lines (segments) from a glyph stream, clipped to the page.

    ``width``/``height``: the displayed page size in points. A pdfium line
    break is kept unless the next glyph sits on the same line right after
    the previous one (pdfium breaks around super- and subscripts). Lines that
    fall entirely outside the page (text hidden outside the crop box) are
    dropped. Segments are cut at column channels (:func:`split_at_channels`).
    A segment set in a fixed-pitch font on one character grid gets its
    ``pitch`` and grid spacing (:func:`fixed_pitch`).
    """
    builder = _SegmentBuilder(page, width, height)
    pending_break = False
    for glyph in glyphs:
        if glyph.text in _NEWLINES:
            pending_break = True
        elif glyph.box is None:
            if not glyph.text.isspace():
                builder.add_unplaced(glyph.text)
            elif not pending_break:
                builder.add_space()
        else:
            builder.add(glyph.text, glyph.box, after_break=pending_break, fixed=glyph.fixed)
            pending_break = False
    builder.flush()
    return [line for segment in split_at_channels(builder.segments) if (line := segment.line()) is not None]


@dataclass
class _Segment:
    """One segment's characters and placed glyphs (see :func:`fixed_pitch`
    for the fields), before it becomes a :class:`~longdoc.model.Line`."""

    text: list[str]
    boxes: list[Box]
    fixed: list[bool]
    slots: list[int]
    page: int
    width: float
    height: float

    def line(self) -> Line | None:
        pitch = fixed_pitch(self.text, self.boxes, self.fixed, self.slots)
        text = grid_text(self.text, self.boxes, self.slots, pitch) if pitch else self.text
        return _make_line(text, self.boxes, self.page, self.width, self.height, pitch)

    def wide_gaps(self) -> list[tuple[int, float, float]]:
        """``(k, x0, x1)`` of each gap of at least :data:`CHANNEL_GAP_EM`
        line heights between placed glyph ``k`` and the next, left to right."""
        return [(k, a[2], b[0]) for k, (a, b) in enumerate(zip(self.boxes, self.boxes[1:]))
                if b[0] - a[2] >= CHANNEL_GAP_EM * _height(a, b)]

    def split(self, at: list[int]) -> list[_Segment]:
        """The segment cut after each placed glyph in ``at``."""
        parts, start = [], 0
        for k in [*sorted(at), len(self.boxes) - 1]:
            lo = self.slots[start] if start else 0
            hi = self.slots[k + 1] if k + 1 < len(self.slots) else len(self.text)
            parts.append(_Segment(self.text[lo:hi], self.boxes[start:k + 1], self.fixed[start:k + 1],
                                  [s - lo for s in self.slots[start:k + 1]], self.page, self.width, self.height))
            start = k + 1
        return parts


def split_at_channels(segments: list[_Segment]) -> list[_Segment]:
    """``segments`` with each cut at its column channels: a gap of at least
    :data:`CHANNEL_GAP_EM` line heights (narrower than a segment gap)
    through which a strip of whitespace, :data:`CHANNEL_OVERLAP_EM` line
    heights wide or more, runs down :data:`CHANNEL_ROWS` consecutive rows
    or more (each row's gap holds it) — the whitespace between columns of
    a table whose rows the PDF wrote as one line each. Wide word spaces
    of justified text in a narrow column do not line up row after row."""
    rows = _gap_rows(segments)
    cuts: dict[int, list[int]] = {}
    for r, row in enumerate(rows):
        for i, k, x0, x1, h in row:
            if _strip_rows(rows, r, x0, x1, CHANNEL_OVERLAP_EM * h) >= CHANNEL_ROWS:
                cuts.setdefault(i, []).append(k)
    if not cuts:
        return segments
    return [part for i, s in enumerate(segments) for part in (s.split(cuts[i]) if i in cuts else [s])]


def _gap_rows(segments: list[_Segment]) -> list[list[tuple[int, int, float, float, float]]]:
    """The wide gaps ``(segment, glyph, x0, x1, line height)`` of every
    text row, rows top to bottom (a row: segments sharing a baseline band;
    a row without a wide gap is in the list too, empty, as it breaks strips)."""
    placed = sorted(((s.boxes[0][1] + s.boxes[0][3]) / 2, max(b[3] - b[1] for b in s.boxes), i)
                    for i, s in enumerate(segments) if s.boxes)
    rows: list[list[tuple[int, int, float, float, float]]] = []
    last_cy = None
    for cy, h, i in placed:
        if last_cy is None or cy - last_cy > 0.5 * h:
            rows.append([])
        last_cy = cy
        rows[-1].extend((i, k, x0, x1, h) for k, x0, x1 in segments[i].wide_gaps())
    return rows


def _strip_rows(rows: list[list[tuple[int, int, float, float, float]]], at: int, x0: float, x1: float,
                narrowest: float) -> int:
    """How many consecutive rows around row ``at`` a strip of whitespace
    starting as ``[x0, x1]`` runs through, staying at least ``narrowest`` wide."""
    count = 1
    for step in (-1, 1):
        lo, hi, r = x0, x1, at + step
        while 0 <= r < len(rows):
            best = max(((max(lo, g0), min(hi, g1)) for _, _, g0, g1, _ in rows[r]), key=lambda s: s[1] - s[0],
                       default=None)
            if best is None or best[1] - best[0] < narrowest:
                break
            lo, hi = best
            count += 1
            r += step
    return count


class _SegmentBuilder:
    """Accumulates glyphs into the current segment; ``lines`` collects the
    finished ones."""

    def __init__(self, page: int, width: float, height: float) -> None:
        self.page, self.width, self.height = page, width, height
        self.segments: list[_Segment] = []
        self._text: list[str] = []
        self._boxes: list[Box] = []
        self._fixed: list[bool] = []  # per box: set in a fixed-pitch font
        self._slots: list[int] = []  # per box: its index in _text
        self._top = self._bottom = 0.0
        self._gap_em = SEGMENT_GAP_EM

    def add_space(self) -> None:
        if self._text and not self._text[-1].isspace():
            self._text.append(" ")

    def add_unplaced(self, text: str) -> None:
        """A character without a usable box joins the current segment."""
        self._text.append(text)

    def add(self, text: str, box: Box, *, after_break: bool, fixed: bool = False) -> None:
        if self._boxes:
            prev = self._boxes[-1]
            if not after_break:
                if not _continues(prev, box, self._gap_em):
                    self.flush()
            elif _same_line(self._top, self._bottom, prev, box, self._gap_em):
                if _gap_x(prev, box) > 0.2 * _height(prev, box):
                    self.add_space()
            else:
                self.flush()
        if self._boxes:
            self._top, self._bottom = min(self._top, box[1]), max(self._bottom, box[3])
        else:
            self._top, self._bottom = box[1], box[3]
        self._slots.append(len(self._text))
        self._text.append(text)
        self._boxes.append(box)
        self._fixed.append(fixed)
        if unicodedata.bidirectional(text[0]) in ("R", "AL"):
            self._gap_em = RTL_SEGMENT_GAP_EM

    def flush(self) -> None:
        if self._boxes:
            self.segments.append(_Segment(list(self._text), list(self._boxes), list(self._fixed), list(self._slots),
                                          self.page, self.width, self.height))
        self._text.clear()
        self._boxes.clear()
        self._fixed.clear()
        self._slots.clear()
        self._gap_em = SEGMENT_GAP_EM


def fixed_pitch(text: Sequence[str], boxes: Sequence[Box], fixed: Sequence[bool], slots: Sequence[int]) -> float | None:
    """Points per character of a segment set in a fixed-pitch font, or None.

    ``text``: the segment's characters (placed glyphs, spaces, unplaced
    characters); ``boxes``, ``fixed``, ``slots``: per placed glyph, its box,
    whether its font is fixed-pitch, its index in ``text``. The pitch is the
    median advance between neighbouring glyphs with nothing between them
    (the median glyph width when there are none). None unless at least
    :data:`FIXED_SHARE` of the glyphs are fixed-pitch and narrow (a CJK
    font's full-width glyphs are fixed-pitch too, but not code), and as many
    of the steps between consecutive glyphs are whole multiples of the pitch
    (glyphs on one grid, left to right).
    """
    if not boxes or sum(f and unicodedata.east_asian_width(text[i]) not in "WF"
                        for f, i in zip(fixed, slots)) < FIXED_SHARE * len(boxes):
        return None
    adjacent = [b[0] - a[0] for a, b, i, j in zip(boxes, boxes[1:], slots, slots[1:]) if j == i + 1 and b[0] > a[0]]
    pitch = statistics.median(adjacent) if adjacent else statistics.median(b[2] - b[0] for b in boxes)
    if pitch <= 0.01:
        return None
    steps = [(b[0] - a[0]) / pitch for a, b in zip(boxes, boxes[1:])]
    on_grid = sum(round(k) >= 1 and abs(k - round(k)) <= GRID_TOLERANCE for k in steps)
    return pitch if on_grid >= FIXED_SHARE * len(steps) else None


def grid_text(text: Sequence[str], boxes: Sequence[Box], slots: Sequence[int], pitch: float) -> list[str]:
    """The segment's characters with the spaces between glyphs set by the
    character grid: a glyph ``k`` pitches right of the first one stands in
    column ``k``, so runs of spaces pdfium reported as one come back whole.
    A character without a box follows the glyph before it and takes a column.
    A space pdfium reported where the grid has no room for one is dropped
    (pdfium makes one up where letter-spaced glyphs stand a little apart),
    unless the glyphs stand half a pitch apart or more (a wider fallback
    glyph before pushed the grid on): then it is one space."""
    out: list[str] = []
    start, base, previous = boxes[0][0], 0, -1
    for n, (box, slot) in enumerate(zip(boxes, slots)):
        between = text[previous + 1:slot]
        unplaced = [ch for ch in between if not ch.isspace()]
        out.extend(unplaced)
        if n == 0:
            base = len(out)
        else:
            spaces = base + round((box[0] - start) / pitch) - len(out)
            if spaces <= 0 and len(unplaced) < len(between) and box[0] - boxes[n - 1][2] >= 0.5 * pitch:
                spaces = 1
            out.extend(" " * max(0, spaces))
        out.append(text[slot])
        previous = slot
    out.extend(text[previous + 1:])
    return out


def _gap_x(a: Box, b: Box) -> float:
    return max(0.0, b[0] - a[2], a[0] - b[2])


def _gap_y(a: Box, b: Box) -> float:
    return max(0.0, b[1] - a[3], a[1] - b[3])


def _height(a: Box, b: Box) -> float:
    return max(a[3] - a[1], b[3] - b[1])


def _continues(prev: Box, new: Box, gap_em: float) -> bool:
    """Whether glyph ``new`` carries on the segment whose last glyph is
    ``prev`` when pdfium saw no line break between them.

    Horizontal writing: the glyphs overlap vertically and the gap between them
    is at most ``gap_em`` line heights (either direction, so right-to-left
    text works). Vertical writing (rotated text): the same with axes swapped.
    """
    gap_x, gap_y = _gap_x(prev, new), _gap_y(prev, new)
    if gap_y == 0.0 and gap_x <= gap_em * _height(prev, new):
        return True
    width = max(prev[2] - prev[0], new[2] - new[0])
    return gap_x == 0.0 and gap_y <= gap_em * width


def _same_line(line_top: float, line_bottom: float, prev: Box, new: Box, gap_em: float) -> bool:
    """Whether ``new``, after a pdfium line break, is really the next glyph on
    the current line (a super- or subscript, or the text after one): its
    vertical centre lies within the line so far, it is next to ``prev``
    horizontally and not stacked under it."""
    centre = (new[1] + new[3]) / 2
    if not line_top <= centre <= line_bottom:
        return False
    overlap = min(prev[2], new[2]) - max(prev[0], new[0])
    narrower = min(prev[2] - prev[0], new[2] - new[0])
    if overlap > 0.5 * narrower:
        return False
    return _gap_x(prev, new) <= gap_em * _height(prev, new)


def _make_line(
    text: list[str], boxes: list[Box], page: int, width: float, height: float, pitch: float | None = None
) -> Line | None:
    content = "".join(text).strip()
    if not content or not boxes:
        return None
    x0 = max(0.0, min(b[0] for b in boxes))
    y0 = max(0.0, min(b[1] for b in boxes))
    x1 = min(width, max(b[2] for b in boxes))
    y1 = min(height, max(b[3] for b in boxes))
    if x1 <= x0 or y1 <= y0:  # entirely off the displayed page
        return None
    return Line(text=content, bbox=BBox(x0=x0, y0=y0, x1=x1, y1=y1), confidence=1.0, page=page, pitch=pitch)
