"""A pool of model worker processes, the one both CPU model stages use
(RapidOCR's pages, the region models' pages).

:class:`WorkerPool` is a ``ProcessPoolExecutor`` started from longdoc's
fork server (:func:`longdoc.runtime.procs.context`; workers exit with their owner,
which the initializer arranges) that can be replaced: a page that hangs
cannot be cancelled, and a worker that died breaks the executor, so the
owner kills the workers and starts a fresh pool. With ``wait_ready`` it
starts every worker and waits until each has run its initializer (a model
load and warm-up), so a broken installation fails at start, not on a page.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from longdoc.runtime import procs


def ping(delay_s: float = 0.05) -> int:
    """A no-op task returning the worker's pid (used to see every worker start)."""
    time.sleep(delay_s)
    return os.getpid()


class WorkerPool:
    """``workers`` processes running ``initializer(*initargs)`` once each
    (``start_method``: ``forkserver``, longdoc's, or ``spawn``; ``preload``:
    the modules the workers import, for the fork server,
    :func:`longdoc.runtime.procs.context`). Started
    on first :meth:`submit` (or :meth:`start`); :meth:`replace` kills it
    and the next submit starts a fresh one. Thread-safe."""

    def __init__(self, workers: int, initializer: Callable[..., None], initargs: Callable[[], tuple[Any, ...]], *,
                 start_method: str = "forkserver", wait_ready: bool = False, start_timeout_s: float = 180.0,
                 preload: tuple[str, ...] = ()) -> None:
        self.workers = max(1, workers)
        self.initializer, self.initargs, self.preload = initializer, initargs, preload
        self.start_method, self.wait_ready, self.start_timeout_s = start_method, wait_ready, start_timeout_s
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.RLock()
        #: the workers' pids (known when started with ``wait_ready``)
        self.pids: list[int] = []

    @property
    def started(self) -> bool:
        return self._pool is not None

    def start(self) -> None:
        """Start the pool if it is not running (waiting for every worker
        with ``wait_ready``; a pool that fails to start is killed and the
        error raised)."""
        with self._lock:
            if self._pool is not None:
                return
            context = procs.context(self.preload) if self.start_method == "forkserver" else \
                multiprocessing.get_context("spawn")
            pool = ProcessPoolExecutor(self.workers, mp_context=context, initializer=self.initializer,
                                       initargs=self.initargs())
            if self.wait_ready:
                try:
                    self.pids = _await_workers(pool, self.workers, self.start_timeout_s)
                except BaseException:
                    _kill(pool)
                    pool.shutdown(wait=True, cancel_futures=True)
                    raise
            self._pool = pool

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        with self._lock:
            self.start()
            assert self._pool is not None
            return self._pool.submit(fn, *args)

    def replace(self, *, kill: bool = True, wait: bool = True) -> None:
        """Stop the pool (killing its workers first if ``kill``: a hung page
        is not waited for); the next :meth:`submit` starts a fresh one."""
        with self._lock:
            pool, self._pool = self._pool, None
            self.pids = []
        if pool is not None:
            if kill:
                _kill(pool)
            pool.shutdown(wait=wait, cancel_futures=True)

    def close(self) -> None:
        self.replace(kill=True, wait=True)


def _await_workers(pool: ProcessPoolExecutor, workers: int, timeout_s: float) -> list[int]:
    """Ping ``pool`` until ``workers`` distinct processes have answered (each
    answers only after its initializer ran)."""
    deadline = time.monotonic() + timeout_s
    pids: set[int] = set()
    pending: set[Future[int]] = set()
    while len(pids) < workers:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"only {len(pids)} of {workers} workers started within {timeout_s:g} s")
        while len(pending) < workers:
            pending.add(pool.submit(ping))
        done, pending = wait(pending, timeout=remaining, return_when=FIRST_COMPLETED)
        pids.update(f.result() for f in done)
    for extra in pending:
        extra.cancel()
    return sorted(pids)


def _kill(pool: ProcessPoolExecutor) -> None:
    """Kill the pool's worker processes (a hung task cannot be cancelled)."""
    terminate = getattr(pool, "terminate_workers", None)  # Python ≥ 3.14
    if terminate is not None:
        terminate()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        if process.is_alive():
            process.kill()
