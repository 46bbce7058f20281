"""Lazy, bounded, in-order submission of pages to an executor.

Page engines that recognize pages in parallel (processes or threads) share
one pattern: pull pages from the caller's iterable only as room frees up,
keep at most ``max_in_flight`` of them submitted, and hand results back in
input order::

    input iterable ─► [ head | rest … ]  (≤ max_in_flight submitted)
                        │
                        └─► caller waits on head.future, yields its page,
                            then the window pulls one more page

The caller gets the head *and* the live rest of the window, so an engine that
has to restart its executor can resubmit the pages still in flight.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from longdoc.engines.base import PageImage


@dataclass
class Slot:
    """One submitted page and the future of its result."""

    page: PageImage
    future: Future[Any]


def in_order(
    pages: Iterable[PageImage],
    submit: Callable[[PageImage], Slot],
    max_in_flight: int,
) -> Generator[tuple[Slot, deque[Slot]], None, None]:
    """Yield ``(head, rest)`` for every page of ``pages``, in input order.

    ``submit`` starts work on one page and returns its :class:`Slot`. At most
    ``max_in_flight`` pages are pulled from ``pages`` and not yet yielded at
    any time; the first yield happens after exactly
    ``min(max_in_flight, len(pages))`` pulls. ``rest`` is the live window
    behind ``head`` (the caller may replace futures in it, never add or
    remove slots). When the consumer stops early, futures still in the window
    are cancelled (work already running finishes and is discarded).

    Raises ``ValueError`` if ``max_in_flight < 1``.
    """
    if max_in_flight < 1:
        raise ValueError(f"max_in_flight must be at least 1, got {max_in_flight}")
    source = iter(pages)
    window: deque[Slot] = deque()
    exhausted = False
    try:
        while True:
            while not exhausted and len(window) < max_in_flight:
                try:
                    page = next(source)
                except StopIteration:
                    exhausted = True
                    break
                window.append(submit(page))
            if not window:
                return
            head = window.popleft()
            yield head, window
    finally:
        for slot in window:
            slot.future.cancel()
