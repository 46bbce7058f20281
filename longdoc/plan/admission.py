"""Admission: a group waits until its cost fits under the watermark.

The policy over :class:`~longdoc.plan.workspace.Workspace` (which only says
"reserved" or "no room"): :meth:`Admission.admit` blocks until the cost is
reserved, then hands back a :class:`Reservation` that releases it (and wakes
the waiters) when the group ends. Waiting stops when ``abort`` is set (a
cancelled or stopped document). The counters are what ``/metrics`` shows.
"""

from __future__ import annotations

import threading
from types import TracebackType

from longdoc.errors import JobCancelled
from longdoc.plan.workspace import Workspace

#: how often a waiting group looks at its abort flag
POLL_S = 0.2


class Admission:
    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self._cv = threading.Condition()
        self.waiting = 0
        self.in_flight = 0

    def admit(self, cost: int, abort: threading.Event | None = None) -> Reservation:
        """Block until ``cost`` is reserved. Raises JobCancelled when
        ``abort`` is set while waiting."""
        with self._cv:
            self.waiting += 1
            try:
                while not self.workspace.try_reserve(cost):
                    if abort is not None and abort.is_set():
                        raise JobCancelled("The document stopped while its group waited for room.")
                    self._cv.wait(POLL_S)
            finally:
                self.waiting -= 1
            self.in_flight += 1
        return Reservation(self, cost)

    def try_admit(self, cost: int) -> Reservation | None:
        """``cost`` reserved now, or None when there is no room (never waits)."""
        with self._cv:
            if not self.workspace.try_reserve(cost):
                return None
            self.in_flight += 1
        return Reservation(self, cost)

    def hold(self, amount: int) -> None:
        """Count kept results (never refused)."""
        with self._cv:
            self.workspace.hold(amount)

    def release(self, amount: int) -> None:
        with self._cv:
            self.workspace.release(amount)
            self._cv.notify_all()

    def _end(self, cost: int) -> None:
        with self._cv:
            self.in_flight -= 1
            self.workspace.release(cost)
            self._cv.notify_all()


class Reservation:
    """A group's admitted cost; released once, on :meth:`release` or on
    leaving its ``with`` block."""

    def __init__(self, admission: Admission, cost: int) -> None:
        self._admission = admission
        self.cost = cost
        self._released = False

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._admission._end(self.cost)

    def __enter__(self) -> Reservation:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()
