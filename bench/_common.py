"""Shared bits of the benchmark scripts (run from the repo root)."""

from __future__ import annotations

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
                    try:
                        total += p.memory_info().rss
                    except psutil.Error:
                        pass
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
