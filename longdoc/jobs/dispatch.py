"""Dispatch: which queued job runs next, on which worker.

The database is the source of truth; a dispatcher only carries job ids.
Room in the queue and its depth are read from the database by whoever
needs them (the job service, /metrics), the same for every backend.
:class:`Dispatcher` is what the job service and the container use;
:class:`EmbeddedDispatcher` runs jobs on threads inside the server process
and :class:`~longdoc.worker.dispatch.CeleryDispatcher` hands them to the
fleet:

- two lanes, ``short`` and ``long`` (by page count); within a lane, higher
  priority first, then first come first served;
- ``max_concurrency`` jobs at once, of which at most ``max_concurrency - 1``
  long ones, so a short document is never stuck behind long ones;
- :meth:`submit` never refuses an accepted job (the bound
  ``service.max_queued`` is checked when the job row is created), so a race
  past the bound cannot lose one;
- ``stop()`` stops intake and asks running jobs to checkpoint and go back to
  the queue between groups (see :class:`~longdoc.jobs.runner.JobRunner`).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
from collections.abc import Callable
from typing import Protocol

from longdoc.errors import ShuttingDown

log = logging.getLogger("longdoc.dispatch")

LANES = ("short", "long")


class Dispatcher(Protocol):
    def start(self) -> None:
        """Start taking jobs (and pick up those the database says are queued)."""

    def submit(self, job_id: str, lane: str, priority: int) -> None:
        """Run the queued job ``job_id`` when its turn comes (idempotent)."""

    def discard(self, job_id: str) -> None:
        """Forget a queued job that was cancelled or deleted before it ran."""

    @property
    def accepting(self) -> bool:
        """False once shutdown began: new jobs are refused (503)."""

    def stop_intake(self) -> None:
        """Accept no more jobs; safe in a signal handler."""

    def stop(self, timeout: float) -> None:
        """Stop intake and let running work checkpoint, up to ``timeout`` s."""


class EmbeddedDispatcher:
    def __init__(
        self,
        run: Callable[[str], object],
        max_concurrency: int,
        on_stop: Callable[[], None] | None = None,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be >= 1")
        self._run = run
        self._on_stop = on_stop
        self.max_concurrency = max_concurrency
        self._lanes: dict[str, list[tuple[int, int, str]]] = {lane: [] for lane in LANES}
        self._queued: set[str] = set()
        self._running: dict[str, str] = {}  # job id -> lane
        self._seq = itertools.count()
        self._cv = threading.Condition()
        self._stopping = False
        self._threads: list[threading.Thread] = []

    # -- interface -------------------------------------------------------

    def start(self) -> None:
        for i in range(self.max_concurrency):
            t = threading.Thread(target=self._worker, name=f"longdoc-job-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def submit(self, job_id: str, lane: str, priority: int) -> None:
        """Queue ``job_id`` (idempotent: a job already queued or running is
        not queued twice). Raises ShuttingDown once :meth:`stop` began; the
        job then stays queued in the database and runs after the restart."""
        if lane not in self._lanes:
            raise ValueError(f"unknown lane {lane!r}")
        with self._cv:
            if self._stopping:
                raise ShuttingDown("The server is shutting down and accepts no new jobs.")
            if job_id in self._queued or job_id in self._running:
                return
            heapq.heappush(self._lanes[lane], (-priority, next(self._seq), job_id))
            self._queued.add(job_id)
            self._cv.notify()

    def discard(self, job_id: str) -> None:
        """Forget a queued job (cancelled or deleted before it ran)."""
        with self._cv:
            self._queued.discard(job_id)

    def stop_intake(self) -> None:
        """Accept and start no more jobs (running ones carry on). Takes no
        lock, so it may be called from a signal handler; :meth:`stop` follows."""
        self._stopping = True

    def stop(self, timeout: float) -> None:
        """Stop intake; running jobs are told to stop between groups (via
        ``on_stop``) and are waited for up to ``timeout`` seconds."""
        with self._cv:
            self._stopping = True
            self._cv.notify_all()
        if self._on_stop is not None:
            self._on_stop()
        for t in self._threads:
            t.join(timeout)

    @property
    def accepting(self) -> bool:
        return not self._stopping

    # -- workers -----------------------------------------------------------

    def _next(self) -> tuple[str, str] | None:
        """Under the lock: the next job to run, or None."""
        long_running = sum(1 for lane in self._running.values() if lane == "long")
        order = ["short", "long"]
        for lane in order:
            if lane == "long" and self.max_concurrency > 1 and long_running >= self.max_concurrency - 1:
                continue
            queue = self._lanes[lane]
            while queue:
                _, _, job_id = heapq.heappop(queue)
                if job_id in self._queued:  # skip discarded entries
                    self._queued.discard(job_id)
                    return job_id, lane
        return None

    def _worker(self) -> None:
        while True:
            with self._cv:
                picked = None
                while not self._stopping and (picked := self._next()) is None:
                    self._cv.wait()
                if self._stopping:
                    return
                assert picked is not None
                job_id, lane = picked
                self._running[job_id] = lane
            try:
                self._run(job_id)
            except Exception:  # the runner records failures itself; never kill a worker
                log.exception("dispatcher: job runner raised", extra={"job_id": job_id})
            finally:
                with self._cv:
                    self._running.pop(job_id, None)
                    self._cv.notify_all()
