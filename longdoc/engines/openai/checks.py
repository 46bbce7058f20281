"""Is a model's answer whole? The checks that keep a truncated page from
being reported as done.

- ``finish_reason == "length"``: the answer hit ``max_tokens``;
- a repetition loop: the tail of the answer is one short piece of text
  over and over (the failure mode OCR decoders are known for, and what the
  models' no-repeat-n-gram processors fight);
- a multi-page answer whose page count is not the number of pages sent;
- an empty answer for a page.

Each failed check is an :class:`Incomplete` naming the reason, which the
engine's recovery ladder records on the pages it then produces.
"""

from __future__ import annotations

#: the tail looked at for a loop, the longest repeated piece, and how much
#: of the tail the repeats must cover
LOOP_TAIL_CHARS = 3000
LOOP_MAX_PERIOD = 200
LOOP_MIN_REPEATS = 8
LOOP_MIN_CHARS = 160


class Incomplete(Exception):
    """An answer that cannot be used as it is; ``reason`` is a short stable word."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


def repetition_loop(text: str) -> str | None:
    """The piece the answer ends repeating (at least
    :data:`LOOP_MIN_REPEATS` times back to back, over at least
    :data:`LOOP_MIN_CHARS` characters), or None."""
    tail = text[-LOOP_TAIL_CHARS:].rstrip()
    for period in range(1, min(LOOP_MAX_PERIOD, len(tail) // LOOP_MIN_REPEATS) + 1):
        unit = tail[-period:]
        repeats = 1
        while repeats * period < len(tail) and tail[-(repeats + 1) * period:-repeats * period] == unit:
            repeats += 1
        if repeats >= LOOP_MIN_REPEATS and repeats * period >= LOOP_MIN_CHARS and unit.strip():
            return unit
    return None


def check_answer(text: str, finish_reason: str | None) -> None:
    """Raise :class:`Incomplete` for a truncated or looping answer."""
    loop = repetition_loop(text)
    if loop is not None:
        raise Incomplete("repetition", f"the answer ends repeating {loop[:40]!r}")
    if finish_reason == "length":
        raise Incomplete("truncated", "the answer reached max_tokens")


def check_pages(chunks: list[str], expected: int) -> None:
    """Raise :class:`Incomplete` when a multi-page answer does not hold one
    chunk per page sent."""
    if len(chunks) != expected:
        raise Incomplete("page_count", f"{len(chunks)} pages in the answer for {expected} sent")
