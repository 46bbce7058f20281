"""Progress reporting: a small interface; library code never prints.

The pipeline calls ``start`` once, ``advance`` after each checkpointed group
with the pages that group finished (or that were resumed from an earlier
run), and ``finish``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from longdoc.model import Page


class Progress(Protocol):
    def start(self, name: str, total_pages: int) -> None: ...

    def advance(self, pages: Sequence[Page], *, resumed: bool = False) -> None: ...

    def finish(self) -> None: ...


class NullProgress:
    """Reports nothing."""

    def start(self, name: str, total_pages: int) -> None:
        pass

    def advance(self, pages: Sequence[Page], *, resumed: bool = False) -> None:
        pass

    def finish(self) -> None:
        pass


class RecordingProgress:
    """Keeps every event (page counts and the pages' numbers); used by tests."""

    def __init__(self) -> None:
        self.total = 0
        self.done = 0
        self.resumed = 0
        self.events: list[tuple[str, int]] = []
        self.numbers: list[int] = []

    def start(self, name: str, total_pages: int) -> None:
        self.total = total_pages
        self.events.append(("start", total_pages))

    def advance(self, pages: Sequence[Page], *, resumed: bool = False) -> None:
        self.done += len(pages)
        self.numbers.extend(p.number for p in pages)
        if resumed:
            self.resumed += len(pages)
        self.events.append(("resumed" if resumed else "advance", len(pages)))

    def finish(self) -> None:
        self.events.append(("finish", self.done))
