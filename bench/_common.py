"""Shared bits of the benchmark scripts (run from the repo root)."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

EVAL = ROOT.parent / "shared" / "eval" / "dev"


class TreeRssSampler:
    """Samples the summed RSS of a process and all its descendants every
    ``interval`` seconds; ``peak`` is the largest sum seen."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        self.proc = psutil.Process(pid)
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                procs = [self.proc, *self.proc.children(recursive=True)]
                total = 0
                for p in procs:
                    with contextlib.suppress(psutil.Error):
                        total += p.memory_info().rss
                self.peak = max(self.peak, total)
            except psutil.Error:
                return
            time.sleep(self.interval)

    def __enter__(self) -> TreeRssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def mib(n: float) -> str:
    return f"{n / 2**20:.0f} MiB"


def tree_rss(proc: psutil.Process) -> int:
    """Summed RSS in bytes of ``proc`` and all its descendants (processes that
    vanish while being read count as 0). Raises psutil.Error when ``proc``
    itself is gone."""
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            total += p.memory_info().rss
    return total


class RssTrace(TreeRssSampler):
    """A :class:`TreeRssSampler` that also keeps every sample:
    ``samples`` is a list of ``(time.monotonic(), tree RSS bytes)``."""

    def __init__(self, pid: int, interval: float = 0.5) -> None:
        super().__init__(pid, interval)
        self.samples: list[tuple[float, int]] = []

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                total = tree_rss(self.proc)
            except psutil.Error:
                return
            self.samples.append((time.monotonic(), total))
            self.peak = max(self.peak, total)
            self._stop.wait(self.interval)
