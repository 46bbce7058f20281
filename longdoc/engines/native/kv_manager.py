"""The KV workspace manager: admission of sequences by their known peak.

Like vLLM's KV-cache manager, and apart from the scheduler that batches the
steps: a sequence (one document's decode) reserves the most KV it will ever
hold before its first prefill, and keeps that reservation until it finishes
or is cancelled. Nothing is preempted, so a running sequence never stalls
or recomputes; a new one waits until its peak fits::

    admit(peak)  iff  reserved + peak <= kv_cache_watermark × capacity

A peak larger than the limit itself can never fit and is refused at once
(:class:`KvBudgetExceeded`). Plain bookkeeping plus a condition variable;
the figures are what ``/metrics`` shows.

The capacity is either configured (``inference.native.kv_budget_mb``) or,
by default, sized from the architecture by :func:`capacity_for`: the
smallest capacity under whose watermark ``max_sequences`` peaks fit, so
the budget admits as many documents as the batch steps together.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

from longdoc.errors import JobCancelled, KvBudgetExceeded

POLL_S = 0.2


@dataclass(frozen=True)
class KvFigures:
    capacity: int
    limit: int
    reserved: int
    sequences: int
    waiting: int
    admitted_total: int
    peak_reserved: int


def capacity_for(peak: int, sequences: int, watermark: float) -> int:
    """The smallest capacity whose ``int(capacity × watermark)`` holds
    ``sequences`` reservations of ``peak`` bytes each."""
    if peak <= 0 or sequences < 1:
        raise ValueError(f"need a positive peak and at least one sequence, got {peak} and {sequences}")
    need = peak * sequences
    capacity = math.ceil(need / watermark)
    while int(capacity * watermark) < need:  # float rounding of the watermark
        capacity += 1
    return capacity


class KVWorkspaceManager:
    def __init__(self, capacity: int, watermark: float) -> None:
        if capacity <= 0:
            raise ValueError(f"capacity must be > 0, got {capacity}")
        if not 0.0 < watermark <= 1.0:
            raise ValueError(f"watermark must be in (0, 1], got {watermark}")
        self.capacity = capacity
        self.watermark = watermark
        self._held: dict[int, int] = {}
        self._next = 0
        self._cv = threading.Condition()
        self._waiting = 0
        self._admitted = 0
        self._peak = 0

    @property
    def limit(self) -> int:
        return int(self.capacity * self.watermark)

    @property
    def reserved(self) -> int:
        return sum(self._held.values())

    def sequences_fit(self, peak: int) -> int:
        """How many reservations of ``peak`` bytes fit under the watermark at once."""
        return self.limit // peak

    def try_admit(self, peak: int) -> int | None:
        """A ticket if ``peak`` bytes fit under the watermark now, else None."""
        self._check(peak)
        with self._cv:
            return self._take(peak)

    def admit(self, peak: int, abort: threading.Event | None = None) -> int:
        """Block until ``peak`` fits; returns the ticket to :meth:`release`.
        Raises KvBudgetExceeded when it can never fit, JobCancelled when
        ``abort`` is set while waiting."""
        self._check(peak)
        with self._cv:
            self._waiting += 1
            try:
                while (ticket := self._take(peak)) is None:
                    if abort is not None and abort.is_set():
                        raise JobCancelled("The document stopped while waiting for KV workspace.")
                    self._cv.wait(POLL_S)
            finally:
                self._waiting -= 1
            return ticket

    def release(self, ticket: int) -> None:
        """Free a sequence's reservation (finished or cancelled). Idempotent."""
        with self._cv:
            if self._held.pop(ticket, None) is not None:
                self._cv.notify_all()

    def figures(self) -> KvFigures:
        with self._cv:
            return KvFigures(self.capacity, self.limit, self.reserved, len(self._held), self._waiting,
                             self._admitted, self._peak)

    def _take(self, peak: int) -> int | None:
        if self.reserved + peak > self.limit:
            return None
        self._next += 1
        self._held[self._next] = peak
        self._admitted += 1
        self._peak = max(self._peak, self.reserved)
        return self._next

    def _check(self, peak: int) -> None:
        if peak <= 0:
            raise ValueError(f"a reservation must be positive, got {peak}")
        if peak > self.limit:
            raise KvBudgetExceeded(
                f"One document's KV cache needs {peak / 2**20:.0f} MiB, more than the "
                f"{self.limit / 2**20:.0f} MiB the watermark allows ({self.watermark} of "
                f"{self.capacity / 2**20:.0f} MiB).", needed=peak, limit=self.limit)
