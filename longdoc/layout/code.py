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
- a line the engine gave no pitch still belongs to a listing (the grid of
  a short or noisy line is found or not by a few pixels of its box, which
  two runtimes draw differently): a segment of at most
  :data:`SHORT_SEGMENT` characters (a line number, a brace) on the same
  row as a pitch line next to it in reading order takes that line's pitch;
  and a row of such lines between two rows of one listing, within its
  drift and with no blank line above it or none below it, is part of it
  when it holds a code symbol or is a bare number and does not read as
  prose (:func:`_reads_as_prose`). A listing's first or last row without a
  pitch is still left out;
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

import re
import statistics
from collections.abc import Sequence
from typing import TypeGuard

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
#: a segment of at most this many characters on a pitch line's row takes its pitch (a line number)
SHORT_SEGMENT = 4
#: a row with at least this many plain words, half of its words or more, reads as prose ...
PROSE_WORDS = 3
#: ... unless this share of its characters or more are code symbols
PROSE_SYMBOLS = 0.1
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
#: how comments start (C, C++, shell, Python, TeX, SQL, Lisp)
_COMMENTS = ("/*", "*", "//", "#", "%", "--", ";")
#: a plain word: letters only (two or more), maybe ending a clause
_WORD = re.compile(r"[A-Za-z][a-z]+[,.;:]?")


def take_listings(ordered: Sequence[LineBox], m: Metrics) -> list[list[LineBox] | Draft]:
    """``ordered`` (lines in reading order) cut at its code listings: each
    listing as a CODE :class:`~longdoc.layout.blocks.Draft`, the lines
    between listings as lists of lines, all in their order. Every line is in
    exactly one piece; a page without listings gives ``[list(ordered)]``
    (``[]`` for no lines)."""
    pieces: list[list[LineBox] | Draft] = []
    prose: list[LineBox] = []
    pitches = _pitches(ordered)
    step = _line_step(ordered, m)
    first = {id(l): p for l, p in zip(ordered, pitches)}
    for run in _runs(ordered, m, step, pitches):
        if _is_code(run, ordered, m, first[id(run[0])]):
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
    pitch = statistics.median([l.line.pitch for l in lines if l.line.pitch] or [1.0])
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


def _pitches(ordered: Sequence[LineBox]) -> list[float | None]:
    """Each line's pitch (by position in ``ordered``): its own, or for a
    segment of at most :data:`SHORT_SEGMENT` characters on the row of a
    pitch line next to it in reading order, that line's (a listing's line
    numbers are set in another type, or have too few glyphs for a grid)."""
    out: list[float | None] = [l.line.pitch for l in ordered]
    for k, l in enumerate(ordered):
        if out[k] is None and len("".join(l.text.split())) <= SHORT_SEGMENT:
            for j in (k + 1, k - 1):
                if 0 <= j < len(ordered) and ordered[j].line.pitch and same_row(ordered[j], l):
                    out[k] = ordered[j].line.pitch
                    break
    return out


def _runs(ordered: Sequence[LineBox], m: Metrics, step: float, pitches: list[float | None]) -> list[list[LineBox]]:
    """``ordered`` cut into candidate listings (runs of pitch lines that
    continue each other, with the rows they bridge: :func:`_bridge`) and
    single other lines."""
    if _typewritten(ordered):
        return [[l] for l in ordered]
    runs: list[list[LineBox]] = []
    run_pitches: list[float] = []  # the pitches of the last run's pitch lines
    k = 0
    while k < len(ordered):
        l, pitch = ordered[k], pitches[k]
        listing = bool(runs) and bool(run_pitches)
        if listing and _candidate(pitch, l, m) and _continues(runs[-1], run_pitches, l, pitch, step):
            runs[-1].append(l)
            run_pitches.append(pitch)
            k += 1
            continue
        row = _bridge(runs[-1], run_pitches, ordered, pitches, k, m, step) if listing else 0
        if row:
            runs[-1].extend(ordered[k:k + row])
            k += row
            continue
        runs.append([l])
        run_pitches = [pitch] if _candidate(pitch, l, m) else []
        k += 1
    return runs


def _candidate(pitch: float | None, l: LineBox, m: Metrics) -> TypeGuard[float]:
    """``l`` can be a listing's line: it has a ``pitch`` (then not None) and is not tall."""
    return pitch is not None and not m.tall(l)


def _continues(run: list[LineBox], run_pitches: list[float], l: LineBox, pitch: float | None, step: float,
               *, blank_lines: int = BLANK_LINES) -> bool:
    """``l`` is the listing's next segment on the same row, or its next row
    down, at most ``blank_lines`` blank lines below, starting within
    DRIFT_PITCHES of where the listing's rows start."""
    last = run[-1]
    shared = shared_pitch(statistics.median(run_pitches), pitch)
    if shared is None:
        return False
    if same_row(last, l):
        return l.x0 >= last.x1 - 0.5 * shared
    drift = DRIFT_PITCHES * shared
    below = 0 < l.cy - last.cy <= (blank_lines + 1.4) * step
    return below and min(r.x0 for r in run) - drift <= l.x0 <= max(r.x0 for r in run) + drift


def _bridge(run: list[LineBox], run_pitches: list[float], ordered: Sequence[LineBox], pitches: list[float | None],
            k: int, m: Metrics, step: float) -> int:
    """How many lines from ``ordered[k]`` on (its row: it and the segments
    of its row after it) the listing ``run`` takes in although the row's
    first line has no pitch: the row is the listing's next one, not
    heading-tall, holds a code symbol or is a bare number and does not read
    as prose, and the line after it continues the listing (a pitch line on
    the next row down), with no blank line above the row or none below it
    (a line set apart on both sides between two listings is not theirs).
    0 otherwise."""
    row = [ordered[k]]
    while k + len(row) < len(ordered) and same_row(ordered[k + len(row)], ordered[k]):
        row.append(ordered[k + len(row)])
    if pitches[k] is not None or any(m.tall(l) for l in row):
        return 0
    text = " ".join(l.text.strip() for l in row)
    code_like = any(ch in _SYMBOLS for ch in text) or text.replace(" ", "").isdigit()
    if not code_like or _reads_as_prose(text):
        return 0
    after = k + len(row)
    if after >= len(ordered) or not _candidate(pitches[after], ordered[after], m):
        return 0
    pitch, nxt = statistics.median(run_pitches), ordered[after]
    into = _continues(run, run_pitches, row[0], pitch, step)
    out = not same_row(nxt, row[0]) and _continues([*run, *row], run_pitches, nxt, pitches[after], step)
    tight = (_continues(run, run_pitches, row[0], pitch, step, blank_lines=0)
             or _continues([*run, *row], run_pitches, nxt, pitches[after], step, blank_lines=0))
    return len(row) if into and out and tight else 0


def _reads_as_prose(text: str) -> bool:
    """At least :data:`PROSE_WORDS` plain words, and they are half of its
    words or more ("Call \\@BTswitch at end of macro"; not "return -1;",
    "} else {", "%\\ENDIF\\ENDIF"); a comment ("* - each point is drawn
    once", :data:`_COMMENTS`) or a row whose characters are
    :data:`PROSE_SYMBOLS` code symbols or more ("return -1; /* give up */")
    never does. (A row that starts with a TeX macro may: "\\LT@xtabularcr
    This just looks for an optional argument.")"""
    chars = "".join(text.split())
    if not chars or chars.startswith(_COMMENTS) or sum(ch in _SYMBOLS for ch in chars) >= PROSE_SYMBOLS * len(chars):
        return False
    words = text.split()
    plain = sum(1 for w in words if _WORD.fullmatch(w))
    return plain >= PROSE_WORDS and 2 * plain >= len(words)


def _is_code(run: list[LineBox], ordered: Sequence[LineBox], m: Metrics, pitch: float | None) -> bool:
    """``run`` (from :func:`_runs`; ``pitch``: its first line's) is a listing."""
    if not _candidate(pitch, run[0], m):
        return False
    if any(not same_row(run[0], l) for l in run[1:]):
        return True
    if len(" ".join(l.text for l in run).strip()) < MIN_LONE_CHARS:
        return False
    row = LineBox(run[0].idx, run[0].line, min(l.x0 for l in run), min(l.y0 for l in run),
                  max(l.x1 for l in run), max(l.y1 for l in run))
    return _stands_apart(row, pitch, ordered, m)


def _stands_apart(row: LineBox, pitch: float, ordered: Sequence[LineBox], m: Metrics) -> bool:
    """A lone row (of ``pitch``) is set apart: no close text line above or below it, or it
    is indented from the close line above it (and from the close one below)."""
    above, below = _close_neighbour(row, ordered, m, -1), _close_neighbour(row, ordered, m, +1)
    indent = INDENT_PITCHES * pitch
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
