"""Fair turns on a shared engine: round-robin across owners (tenants).

Concurrent documents take turns on the engine one page group at a time. A
plain lock lets whoever grabs it first go again, so one tenant with many
long documents can keep another's one-page job waiting for minutes.
:class:`FairTurns` hands each free slot to the *next owner* in a rotation
(and, within one owner, to its longest waiter)::

    waiting:  A: [a1, a2, a3]   B: [b1]   C: [c1, c2]
    turns:    a1 → b1 → c1 → a2 → c2 → a3

An owner that gets a turn goes to the back of the rotation. Plain
bookkeeping, no engine or torch import.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict, deque
from collections.abc import Iterator
from contextlib import contextmanager


class FairTurns:
    """``slots`` concurrent turns, granted round-robin by owner.

    Use ``with turns.turn(owner): ...``. Raises ``ValueError`` for
    ``slots < 1``. Thread-safe."""

    def __init__(self, slots: int = 1) -> None:
        if slots < 1:
            raise ValueError(f"slots must be at least 1, got {slots}")
        self.slots = slots
        self._cv = threading.Condition()
        self._busy = 0
        self._tickets = itertools.count()
        self._waiting: OrderedDict[str, deque[int]] = OrderedDict()  # rotation order = key order
        self._granted: set[int] = set()

    @contextmanager
    def turn(self, owner: str) -> Iterator[None]:
        """Wait for a turn for ``owner``, hold it for the block."""
        self.acquire(owner)
        try:
            yield
        finally:
            self.release()

    def acquire(self, owner: str) -> None:
        with self._cv:
            ticket = next(self._tickets)
            self._waiting.setdefault(owner, deque()).append(ticket)
            self._grant()
            while ticket not in self._granted:
                self._cv.wait()
            self._granted.discard(ticket)

    def release(self) -> None:
        with self._cv:
            if self._busy <= 0:
                raise RuntimeError("release() without a turn held")
            self._busy -= 1
            self._grant()

    def waiting(self) -> dict[str, int]:
        """Waiters per owner (for metrics and tests)."""
        with self._cv:
            return {owner: len(q) for owner, q in self._waiting.items()}

    def _grant(self) -> None:
        """Under the lock: give free slots to the owners at the front of the
        rotation, moving each to the back."""
        granted = False
        while self._busy < self.slots and self._waiting:
            owner, queue = next(iter(self._waiting.items()))
            self._granted.add(queue.popleft())
            self._busy += 1
            del self._waiting[owner]
            if queue:
                self._waiting[owner] = queue  # back of the rotation
            granted = True
        if granted:
            self._cv.notify_all()
