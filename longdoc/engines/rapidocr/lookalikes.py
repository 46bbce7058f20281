"""``O`` or ``0``? Settled inside codes by the glyph's own shape.

Part numbers, IBANs, hexadecimal ids and serials mix letters and digits,
so the reader cannot lean on words: ``TOK7F98CD0OP`` holds a zero and an
O side by side. The recognizers guess from context and get it wrong in
both directions: on 504 scanned code tokens (``python bench/codes.py``)
the small model read 93% exactly, and 26 of its 35 misreadings were an O
read as a zero or back, mostly in monospace type, whose O and 0 share a
cell. The glyphs do differ:

- a dotted or slashed zero (DejaVu Sans Mono, Liberation Mono, Consolas,
  most code fonts) has a mark inside its counter; an O never has;
- otherwise a zero is as wide as the other digits of the same font and an
  O clearly wider (Arial: 0.47 em of ink against 0.70; Courier: 0.42
  against 0.50).

:func:`settle` looks at each ``O``, ``0`` or ``o`` of a code-like token
(letters and digits together, :data:`~longdoc.engines.rapidocr.cascade.MIXED_TOKEN`):
it finds the glyph's ink blob at the character's position (from the CTC
frame it was read at, :class:`~longdoc.engines.rapidocr.ctc.LineReading`), then

- an inner mark → ``0``; when another round glyph of the same line has
  such a mark, or (``marks_zero``) a fixed-pitch line of the same page
  does (the font marks its zeros), a round glyph without one → ``O``;
- else, in proportional type (not ``fixed``: a monospace O and 0 share a
  cell and nearly an outline), by width: when the line's round glyphs come
  in two widths (:data:`TWO_KINDS` apart), the wide ones are ``O`` and the
  narrow ones ``0``; when they are all alike, by shape against the digits
  ``2``–``9`` that stand alone in the line (else on the page): a blob whose
  width over height is at most :data:`ZERO_WIDTH` of theirs is a ``0``, at
  least :data:`O_WIDTH` an ``O`` (an ``o`` whose blob is as tall as the
  token's capitals is an ``O``, a zero when narrow);
- anything else stays as read, as does a glyph whose blob it shares with
  a neighbour (touching glyphs: its width says nothing).

A hexadecimal literal's prefix is a zero (``Ox7F3A`` → ``0x7F3A``). The
same tokens (and words whose case flips inside, ``rUwgvdpaDB``) get
the case of their *twins* — ``c o s u v w x z``, whose capitals are the
small letters drawn larger — from the glyph's height against the line's
capitals and small letters.

Only characters read as one of the three change, only to another of them,
and only inside tokens that mix letters and digits — or inside numbers
(an IBAN's digit groups) when zeros of the same line are marked, so that
an unmarked round glyph there is seen to be an O. Words are never touched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from statistics import median

import numpy as np

from longdoc.engines.rapidocr.cascade import CASE_FLIP, MIXED_TOKEN
from longdoc.engines.rapidocr.ctc import LineReading

ROUND = frozenset("O0o")
#: letters whose capital is the small letter drawn larger: only the height tells them apart
TWINS = frozenset("cosuvwxzCOSUVWXZ")
#: lower-case letters without ascender or descender (their height is the x-height)
X_HEIGHT = frozenset("acemnorsuvwxz")
#: digits whose ink width is a font's digit width (1 is narrow, 0 is the question)
WIDTH_DIGITS = frozenset("23456789")
#: round glyphs of one line whose widths differ by this factor are of two kinds: the wide ones O
TWO_KINDS = 1.2
#: otherwise a blob this narrow against the line's digits is a zero ...
ZERO_WIDTH = 1.12
#: ... and this wide an O (Arial, Times: O/digit ink ~1.5; zero ~1.0-1.15, and ±1 pixel at 8 pt)
O_WIDTH = 1.45
#: a blob at least this share of the token's capitals' height is not lower case
TALL = 0.85
_TOKEN = re.compile(r"\S+")
#: a hexadecimal literal: its prefix is a zero, whatever the glyph looked like
_HEX_PREFIX = re.compile(r"(^|[\s(\[{=,:;])[Oo]x(?=[0-9A-Fa-f]{2,}\b)")


@dataclass(frozen=True)
class Blob:
    x0: int
    y0: int
    x1: int
    y1: int

    @property
    def w(self) -> int:
        return self.x1 - self.x0

    @property
    def h(self) -> int:
        return self.y1 - self.y0

    def holds(self, other: Blob) -> bool:
        """``other`` lies inside this blob's box, clear of its edges (a dot in a zero)."""
        return (other is not self and other.x0 > self.x0 and other.x1 < self.x1 and other.y0 > self.y0
                and other.y1 < self.y1 and 0.01 * self.w * self.h <= other.w * other.h < 0.25 * self.w * self.h
                and min(other.w, other.h) >= 2)


def blobs(crop: np.ndarray) -> list[Blob]:
    import cv2

    grey = crop if crop.ndim == 2 else cv2.cvtColor(np.ascontiguousarray(crop), cv2.COLOR_RGB2GRAY)
    _, ink = cv2.threshold(grey, 0, 255, cv2.THRESH_BINARY_INV + cv2.THRESH_OTSU)
    count, _, stats, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
    return [Blob(int(s[0]), int(s[1]), int(s[0] + s[2]), int(s[1] + s[3])) for s in stats[1:count] if s[4] >= 3]


def _at(found: list[Blob], x: float, height: int) -> Blob | None:
    """The glyph blob at ``x``: the tallest blob whose span holds it (the
    nearest within a third of the line height otherwise)."""
    spanning = [b for b in found if b.x0 - 1 <= x <= b.x1 + 1 and b.h >= 0.2 * height]
    if spanning:
        return max(spanning, key=lambda b: b.h)
    near = [b for b in found if b.h >= 0.2 * height and min(abs(b.x0 - x), abs(b.x1 - x)) <= height / 3]
    return min(near, key=lambda b: min(abs(b.x0 - x), abs(b.x1 - x))) if near else None


def marks_zeros(crop: np.ndarray, reading: LineReading) -> bool:
    """Whether a glyph of the line read as ``0`` or ``O`` has a mark in its
    counter (the line's font dots or slashes its zeros)."""
    if not {"0", "O"} & set(reading.text) or len(reading.cols) != len(reading.text):
        return False
    found = blobs(crop)
    for ch, p in zip(reading.text, reading.positions()):
        blob = _at(found, p * crop.shape[1], crop.shape[0]) if ch in "0O" else None
        if blob is not None and _marked(blob, found):
            return True
    return False


def digit_aspects(crop: np.ndarray, reading: LineReading) -> list[float]:
    """Width over height of the line's digits ``2``-``9`` that stand alone
    (a blob of their own): a font's digit shape, to tell a ``0`` from an
    ``O`` on lines without digits of their own."""
    if not WIDTH_DIGITS & set(reading.text) or len(reading.cols) != len(reading.text):
        return []
    found = blobs(crop)
    at = [_at(found, p * crop.shape[1], crop.shape[0]) for p in reading.positions()]
    return [b.w / b.h for i, (ch, b) in enumerate(zip(reading.text, at))
            if ch in WIDTH_DIGITS and b is not None and b.h and not _shared(reading.text, at, i)]


def settle(crop: np.ndarray, reading: LineReading, *, fixed: bool = False, marks_zero: bool = False,
           digit_aspect: float | None = None) -> str:
    """``reading.text`` with each ``O``/``0``/``o`` of a code-like token read
    by its glyph (see the module docstring); ``fixed``: the line is set in
    a fixed-pitch font; ``marks_zero``: another fixed-pitch line of the page
    shows a marked zero; ``digit_aspect``: the page's digits' width over
    height (:func:`digit_aspects`), for a line with no digits of its own."""
    text = reading.text
    if not ROUND & set(text) or len(reading.cols) != len(text):
        return text
    tokens = [(m.start(), m.end(), _kind(m.group())) for m in _TOKEN.finditer(text)]
    tokens = [t for t in tokens if t[2] and any(ch in ROUND for ch in text[t[0]:t[1]])]
    if not tokens:
        return text
    found = blobs(crop)
    at = [_at(found, p * crop.shape[1], crop.shape[0]) for p in reading.positions()]
    own = [b for i, (ch, b) in enumerate(zip(text, at))
           if ch in WIDTH_DIGITS and b is not None and b.h and not _shared(text, at, i)]
    digit: tuple[str, float] | None = None
    if not fixed and own:
        digit = ("width", median(b.w for b in own))
    elif not fixed and digit_aspect:
        digit = ("aspect", digit_aspect)
    marked = {i for i, (ch, b) in enumerate(zip(text, at)) if ch in ROUND and b is not None and _marked(b, found)}
    font_marks = bool(marked) or (fixed and marks_zero)
    rounds = [b.w for i, (ch, b) in enumerate(zip(text, at)) if ch in "O0" and b is not None and not _shared(text, at, i)]
    split = (min(rounds) + max(rounds)) / 2 if rounds and not fixed and max(rounds) >= TWO_KINDS * min(rounds) else None
    chars = list(text)
    for a, b, kind in tokens:
        if kind == "number" and not marked:
            continue  # a plain number: only zeros marked in the same line can show an O in it
        tall = [blob.h for ch, blob in zip(text[a:b], at[a:b]) if blob is not None and (ch.isupper() or ch.isdigit())]
        cap = median(tall) if tall else None
        for i in range(a, b):
            blob = at[i]
            if text[i] not in ROUND or blob is None or _shared(text, at, i):
                continue
            if text[i] == "o" and (cap is None or blob.h < TALL * cap):
                continue  # a real lower-case o (or nothing to compare with)
            if i in marked or font_marks:
                chars[i] = "0" if i in marked else "O"
            elif split is not None:
                chars[i] = "O" if blob.w > split else "0"
            else:
                chars[i] = _by_width(text[i], blob, digit)
    return _HEX_PREFIX.sub(r"\g<1>0x", _cases("".join(chars), at))


def _cases(text: str, at: list[Blob | None]) -> str:
    """Each of :data:`TWINS` inside a code-like token in the case its
    height says: nearer the line's capital height than its x-height
    (medians of the capitals and of the small letters without ascenders
    read in the line) is a capital."""
    caps = [b.h for ch, b in zip(text, at) if b is not None and ch.isupper() and ch not in TWINS]
    smalls = [b.h for ch, b in zip(text, at) if b is not None and ch in X_HEIGHT]
    if not caps or not smalls or median(caps) < 1.2 * median(smalls):
        return text
    middle = (median(caps) + median(smalls)) / 2
    chars = list(text)
    for m in _TOKEN.finditer(text):
        if _kind(m.group()) != "code" and not CASE_FLIP.search(m.group()):
            continue
        for i in range(m.start(), m.end()):
            blob = at[i]
            if text[i] in TWINS and text[i] not in "Oo" and blob is not None and not _shared(text, at, i):
                chars[i] = text[i].upper() if blob.h >= middle else text[i].lower()
    return "".join(chars)


def _kind(token: str) -> str | None:
    """``code`` (letters and digits together), ``number`` (digits, no
    letters) or None (a word: never touched)."""
    if MIXED_TOKEN.fullmatch(token):
        return "code"
    if any(ch.isdigit() for ch in token) and not any(ch.isalpha() for ch in token.replace("O", "").replace("o", "")):
        return "number"
    return None


def _shared(text: str, at: list[Blob | None], i: int) -> bool:
    """Whether character ``i``'s blob is also that of a letter or digit
    beside it (touching glyphs; a hyphen or slash, too small to be looked
    for, says nothing)."""
    return any(0 <= j < len(text) and text[j].isalnum() and at[j] is at[i] for j in (i - 1, i + 1))


def _marked(blob: Blob, found: list[Blob]) -> bool:
    """A mark inside the glyph's counter (a dotted or slashed zero)."""
    return any(blob.holds(other) for other in found)


def _by_width(read: str, blob: Blob, digit: tuple[str, float] | None) -> str:
    """By the blob's width against the line's digits' (``("width", px)``),
    or its width over height against the page's (``("aspect", ratio)``)."""
    if digit is None or not blob.h:
        return read
    measure, reference = digit
    value = blob.w if measure == "width" else blob.w / blob.h
    if value <= ZERO_WIDTH * reference:
        return "0"
    if value >= O_WIDTH * reference:
        return "O"
    return read
