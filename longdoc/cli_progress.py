"""Progress for the CLI: a rich progress bar (pages done/total, pages/s,
ETA) on a terminal, plain log lines to stderr otherwise."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress as RichProgress,
    ProgressColumn,
    Task,
    TaskID,
    TaskProgressColumn,
    TextColumn,
    TimeRemainingColumn,
)

from longdoc.model import Page
from longdoc.progress import NullProgress, Progress


class _Rate(ProgressColumn):
    def render(self, task: Task) -> str:
        speed = task.finished_speed or task.speed
        return f"{speed:.2f} pages/s" if speed else "… pages/s"


class BarProgress:
    def __init__(self, console: Console) -> None:
        self._bar = RichProgress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TaskProgressColumn(), _Rate(), TimeRemainingColumn(), console=console, transient=False,
        )
        self._task: TaskID | None = None

    def start(self, name: str, total_pages: int) -> None:
        self._bar.start()
        self._task = self._bar.add_task(name, total=total_pages)

    def advance(self, pages: Sequence[Page], *, resumed: bool = False) -> None:
        if self._task is not None:
            self._bar.advance(self._task, len(pages))

    def finish(self) -> None:
        self._bar.stop()


class LogProgress:
    """One line per finished group: ``name: 64/300 pages, 1.21 pages/s, ETA 195 s``."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream or sys.stderr
        self._name = ""
        self._total = 0
        self._done = 0
        self._counted = 0
        self._t0 = time.monotonic()

    def start(self, name: str, total_pages: int) -> None:
        self._name, self._total, self._t0 = name, total_pages, time.monotonic()

    def advance(self, pages: Sequence[Page], *, resumed: bool = False) -> None:
        self._done += len(pages)
        if resumed:
            self._t0 = time.monotonic()
            self._stream.write(f"{self._name}: {self._done}/{self._total} pages (resumed)\n")
            return
        self._counted += len(pages)
        elapsed = max(time.monotonic() - self._t0, 1e-9)
        rate = self._counted / elapsed
        eta = (self._total - self._done) / rate if rate > 0 else float("inf")
        self._stream.write(f"{self._name}: {self._done}/{self._total} pages, {rate:.2f} pages/s, ETA {eta:.0f} s\n")
        self._stream.flush()

    def finish(self) -> None:
        pass


@contextmanager
def make_progress(quiet: bool) -> Iterator[Progress]:
    if quiet:
        yield NullProgress()
        return
    console = Console(stderr=True)
    progress: Progress = BarProgress(console) if console.is_terminal else LogProgress()
    try:
        yield progress
    finally:
        if isinstance(progress, BarProgress):
            progress.finish()
