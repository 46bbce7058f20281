"""Is a model's answer whole? The checks that keep a truncated page from
being reported as done.

- ``finish_reason == "length"``: the answer hit ``max_tokens``;
- a repetition loop: the tail of the answer is one piece of text over and
  over (the failure mode OCR decoders are known for, and what the models'
  no-repeat-n-gram processors fight), told from the repetition documents
  hold (see :func:`repetition_loop`);
- a multi-page answer whose page count is not the number of pages sent;
- an empty answer: nothing but whitespace, end-of-answer tokens and page
  separators (Unlimited-OCR's answer to any prompt but its own).

Each failed check is an :class:`Incomplete` naming the reason, which the
engine's recovery ladder records on the pages it then produces.
"""

from __future__ import annotations

import re

from longdoc.engines.parsers import clean, split_pages

#: the tail looked at for a loop, the longest repeated piece, and how often
#: and over how many characters a piece of text must repeat to be a loop
LOOP_TAIL_CHARS = 3000
LOOP_MAX_PERIOD = 200
LOOP_MIN_REPEATS = 8
LOOP_MIN_CHARS = 160
#: structure's limits: identical cells in one table row, fill characters
#: (leaders, rules, signature lines) in one line, text in one cell of a run
MAX_ROW_CELLS = 64
MAX_FILL_CHARS = 400
MAX_CELL_CHARS = 16

_TAGS = re.compile(r"<[^<>]*>")
_HTML_CELL = re.compile(r"<t[dh][\s>]|</t[dh]>", re.IGNORECASE)
_OTSL_CELL = re.compile(r"<(?:fcel|ecel|lcel|ucel|xcel)>")
_FILL = re.compile(r"[_.\-=·…—–*~]{4,}")
_FILL_CHARS = re.compile(r"[\s_.\-=·…—–*~:]+")
_PIECES = re.compile(r"<[^<>]*>|\||\n")


class Incomplete(Exception):
    """An answer that cannot be used as it is; ``reason`` is a short stable word."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


def repetition_loop(text: str) -> str | None:
    """The piece a decoding loop repeats at the end of ``text``, or None.

    The tail is a run of one piece (its period at most
    :data:`LOOP_MAX_PERIOD` characters) repeated back to back. The run is a
    loop when the piece is text (:data:`LOOP_MIN_REPEATS` times or more,
    over :data:`LOOP_MIN_CHARS` characters or more), and structure only
    past what a page holds::

        <tr><td>Name</td><td></td><td></td>…     cells in an open row: a loop past MAX_ROW_CELLS
        | Date |   |   |   |…                     (HTML, Markdown, OTSL), or with no row open
        Signature: ______________…               fill in one line: past MAX_FILL_CHARS
        <tr><td></td>…</tr><tr><td></td>…</tr>    whole rows or form lines: never by themselves;
        | Name: | ____ |\\n| Name: | ____ |\\n      rows end, and rows repeated until max_tokens
                                                  are caught as ``truncated``

    Structure is cells with at most :data:`MAX_CELL_CHARS` characters of
    text each, or lines of a short label and a fill (``____``, ``....``).
    Used on a stream as it comes and on the whole answer alike."""
    tail = clean(text)[-LOOP_TAIL_CHARS:].rstrip()
    for period in range(1, min(LOOP_MAX_PERIOD, len(tail) // 2) + 1):
        unit = tail[-period:]
        if not unit.strip():
            continue
        repeats = _repeats(tail, period)
        if repeats < 2:
            continue
        run_start = len(tail) - repeats * period
        if _structure(tail[run_start:]):
            if not _beyond_structure(tail, run_start, unit):
                continue
        elif repeats < LOOP_MIN_REPEATS or repeats * period < LOOP_MIN_CHARS:
            continue
        return unit
    return None


def _repeats(tail: str, period: int) -> int:
    """How many times the last ``period`` characters repeat back to back at the end of ``tail``."""
    unit, repeats = tail[-period:], 1
    while (repeats + 1) * period <= len(tail) and tail[-(repeats + 1) * period:-repeats * period] == unit:
        repeats += 1
    return repeats


def _structure(run: str) -> bool:
    """``run`` is table cells or fill, each piece of text in it short."""
    if not (_HTML_CELL.search(run) or _OTSL_CELL.search(run) or "|" in _TAGS.sub("", run) or _FILL.search(run)):
        return False
    whole = re.sub(r"<[^<>]*$", "", re.sub(r"^[^<>]*>", "", run))  # partial tags at either edge
    return all(len(_FILL_CHARS.sub("", piece)) <= MAX_CELL_CHARS for piece in _PIECES.split(whole))


def _beyond_structure(tail: str, run_start: int, unit: str) -> bool:
    """A run of structure (starting at ``run_start``) that no page holds:
    cells with no row open or more than :data:`MAX_ROW_CELLS` in one row,
    or more than :data:`MAX_FILL_CHARS` fill in one line. Whole rows never are."""
    run, before = tail[run_start:], tail[:run_start]
    if _HTML_CELL.search(run):
        if re.search(r"</tr\s*>", unit, re.IGNORECASE):
            return False
        opened, closed = before.lower().rfind("<tr"), before.lower().rfind("</tr")
        return opened <= closed or len(re.findall(r"<t[dh][\s>]", run, re.IGNORECASE)) > MAX_ROW_CELLS
    if _OTSL_CELL.search(run):
        if "<nl>" in unit:
            return False
        row_open = bool(_OTSL_CELL.search(before)) or "<nl>" in before
        return not row_open or len(_OTSL_CELL.findall(run)) > MAX_ROW_CELLS
    if "\n" in unit:
        return False
    cells = _TAGS.sub("", run).count("|")
    if cells:
        line = before[before.rfind("\n") + 1:]
        return not (line + run).lstrip().startswith("|") or cells > MAX_ROW_CELLS
    return len(run) > MAX_FILL_CHARS


def is_empty(text: str) -> bool:
    """Nothing in the answer but whitespace, end-of-answer tokens and page separators."""
    return not "".join(split_pages(text)).strip()


def check_answer(text: str, finish_reason: str | None) -> None:
    """Raise :class:`Incomplete` for a looping, truncated or empty answer."""
    loop = repetition_loop(text)
    if loop is not None:
        raise Incomplete("repetition", f"the answer ends repeating {loop[:40]!r}")
    if finish_reason == "length":
        raise Incomplete("truncated", "the answer reached max_tokens")
    if is_empty(text):
        raise Incomplete("empty", f"the answer holds no text (finish_reason {finish_reason!r})")


def check_pages(chunks: list[str], expected: int) -> None:
    """Raise :class:`Incomplete` when a multi-page answer does not hold one
    chunk per page sent."""
    if len(chunks) != expected:
        raise Incomplete("page_count", f"{len(chunks)} pages in the answer for {expected} sent")
