"""Workspace accounting and admission by watermark.

The workspace is what an engine's groups hold while in flight, in the
engine's unit: bytes of rendered images and activations for a page engine,
tokens of KV cache for a model engine. ``kv_cache_watermark`` W and a budget
B give the admission rule::

    admit a reservation of n  iff  in_use + n <= W * B
                              or  in_use == 0   (always make progress)

:class:`Workspace` is plain bookkeeping (no threads, no torch): it answers
"reserved" or "no room". :class:`~longdoc.plan.admission.Admission` is the
policy on top that makes a group wait for room. ``hold`` adds what must be
kept whatever the room (the boundary cache's pages) and is never refused.
Misuse (releasing more than was reserved) raises.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Workspace:
    budget: int
    watermark: float
    unit: str = "bytes"
    in_use: int = 0
    peak: int = 0
    _refused: int = field(default=0, repr=False)

    def __post_init__(self) -> None:
        if self.budget <= 0:
            raise ValueError(f"budget must be > 0, got {self.budget}")
        if not 0.0 < self.watermark <= 1.0:
            raise ValueError(f"watermark must be in (0, 1], got {self.watermark}")

    @property
    def limit(self) -> int:
        """The most that may be in use: watermark × budget."""
        return int(self.budget * self.watermark)

    @property
    def refused(self) -> int:
        """How many reservations were refused (back-pressure events)."""
        return self._refused

    def can_admit(self, amount: int) -> bool:
        return self.in_use == 0 or self.in_use + amount <= self.limit

    def try_reserve(self, amount: int) -> bool:
        """Reserve ``amount`` if the watermark allows; False otherwise."""
        _check(amount)
        if not self.can_admit(amount):
            self._refused += 1
            return False
        self._add(amount)
        return True

    def hold(self, amount: int) -> None:
        """Add ``amount`` whatever the room (kept results); release it later."""
        _check(amount)
        self._add(amount)

    def release(self, amount: int) -> None:
        if amount < 0 or amount > self.in_use:
            raise ValueError(f"release of {amount} {self.unit} with only {self.in_use} reserved")
        self.in_use -= amount

    def _add(self, amount: int) -> None:
        self.in_use += amount
        self.peak = max(self.peak, self.in_use)


def _check(amount: int) -> None:
    if amount < 0:
        raise ValueError(f"cannot reserve a negative amount ({amount})")
