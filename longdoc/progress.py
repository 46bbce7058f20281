"""Progress reporting: a small interface; library code never prints.

The pipeline calls ``start`` once, ``advance`` after each checkpointed group
(with the number of pages that group finished, or resumed), and ``finish``.
"""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    def start(self, name: str, total_pages: int) -> None: ...

    def advance(self, pages: int, *, resumed: bool = False) -> None: ...

    def finish(self) -> None: ...


class NullProgress:
    """Reports nothing."""

    def start(self, name: str, total_pages: int) -> None:
        pass

    def advance(self, pages: int, *, resumed: bool = False) -> None:
        pass

    def finish(self) -> None:
        pass


class RecordingProgress:
    """Keeps every event; used by tests and by the service's job records."""

    def __init__(self) -> None:
        self.total = 0
        self.done = 0
        self.resumed = 0
        self.events: list[tuple[str, int]] = []

    def start(self, name: str, total_pages: int) -> None:
        self.total = total_pages
        self.events.append(("start", total_pages))

    def advance(self, pages: int, *, resumed: bool = False) -> None:
        self.done += pages
        if resumed:
            self.resumed += pages
        self.events.append(("resumed" if resumed else "advance", pages))

    def finish(self) -> None:
        self.events.append(("finish", self.done))
