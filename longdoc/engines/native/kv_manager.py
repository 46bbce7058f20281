"""The KV workspace manager: admission of sequences by their known peak.

Like vLLM's KV-cache manager, and apart from the scheduler that batches the
steps: a sequence (one document's decode) reserves the most KV it will ever
hold before its first prefill, and keeps that reservation until it finishes
or is cancelled. Nothing is preempted, so a running sequence never stalls
or recomputes; a new one waits until its peak fits::

    admit(peak)  iff  reserved + peak <= kv_cache_watermark × capacity

A peak larger than the limit itself can never fit and is refused at once
(:class:`KvBudgetExceeded`). The waiting is the pipeline's own
:class:`~longdoc.plan.Admission` (one mechanism, one condition variable);
the figures are what ``/metrics`` shows. The group images a document's
pages are encoded from have their own budget (the engine's
``workspace_budget``, admitted by the pipeline).

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
from longdoc.plan.admission import Admission, Reservation
from longdoc.plan.workspace import Workspace


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
    """The KV admission: :class:`~longdoc.plan.Admission` (the pipeline's
    one admission mechanism) over a byte :class:`~longdoc.plan.Workspace`
    of ``capacity``, plus the refusal of a peak that can never fit. A
    sequence's handle is the :class:`~longdoc.plan.admission.Reservation`
    it holds until it ends."""

    def __init__(self, capacity: int, watermark: float) -> None:
        self.admission = Admission(Workspace(budget=capacity, watermark=watermark, unit="bytes"))
        self._admitted = 0

    @property
    def capacity(self) -> int:
        return self.admission.workspace.budget

    @property
    def watermark(self) -> float:
        return self.admission.workspace.watermark

    @property
    def limit(self) -> int:
        return self.admission.workspace.limit

    @property
    def reserved(self) -> int:
        return self.admission.workspace.in_use

    def sequences_fit(self, peak: int) -> int:
        """How many reservations of ``peak`` bytes fit under the watermark at once."""
        return self.limit // peak

    def try_admit(self, peak: int) -> Reservation | None:
        """A reservation if ``peak`` bytes fit under the watermark now, else None."""
        self._check(peak)
        return self._count(self.admission.try_admit(peak))

    def admit(self, peak: int, abort: threading.Event | None = None) -> Reservation:
        """Block until ``peak`` fits; returns the reservation to :meth:`release`.
        Raises KvBudgetExceeded when it can never fit, JobCancelled when
        ``abort`` is set while waiting."""
        self._check(peak)
        try:
            reservation = self.admission.admit(peak, abort)
        except JobCancelled as exc:
            raise JobCancelled("The document stopped while waiting for KV workspace.") from exc
        self._count(reservation)
        return reservation

    def release(self, reservation: Reservation) -> None:
        """Free a sequence's reservation (finished or cancelled). Idempotent."""
        reservation.release()

    def figures(self) -> KvFigures:
        a = self.admission
        return KvFigures(self.capacity, self.limit, self.reserved, a.in_flight, a.waiting, self._admitted,
                         a.workspace.peak)

    def _count(self, reservation: Reservation | None) -> Reservation | None:
        if reservation is not None:
            with self.admission._cv:
                self._admitted += 1
        return reservation

    def _check(self, peak: int) -> None:
        if peak <= 0:
            raise ValueError(f"a reservation must be positive, got {peak}")
        if peak > self.limit:
            raise KvBudgetExceeded(
                f"One document's KV cache needs {peak / 2**20:.0f} MiB, more than the "
                f"{self.limit / 2**20:.0f} MiB the watermark allows ({self.watermark} of "
                f"{self.capacity / 2**20:.0f} MiB).", needed=peak, limit=self.limit)
