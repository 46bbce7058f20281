"""Workspace accounting and admission by watermark.

The workspace is what a group holds while in flight: for a page engine, the
bytes of rendered page images and page results; for a sequence engine, KV
bytes. ``kv_cache_watermark`` W and a budget B give the admission rule:

    admit a reservation of n bytes  iff  in_use + n <= W * B
                                     or  in_use == 0   (always make progress)

Plain bookkeeping: no torch, no threads. Misuse (releasing more than was
reserved) raises.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Workspace:
    budget_bytes: int
    watermark: float
    in_use: int = 0
    peak: int = 0
    _refused: int = field(default=0, repr=False)

    def __post_init__(self) -> None:
        if self.budget_bytes <= 0:
            raise ValueError(f"budget_bytes must be > 0, got {self.budget_bytes}")
        if not 0.0 < self.watermark <= 1.0:
            raise ValueError(f"watermark must be in (0, 1], got {self.watermark}")

    @property
    def limit_bytes(self) -> int:
        return int(self.budget_bytes * self.watermark)

    @property
    def refused(self) -> int:
        """How many reservations were refused (back-pressure events)."""
        return self._refused

    def can_admit(self, num_bytes: int) -> bool:
        return self.in_use == 0 or self.in_use + num_bytes <= self.limit_bytes

    def try_reserve(self, num_bytes: int) -> bool:
        """Reserve ``num_bytes`` if the watermark allows; False otherwise."""
        if num_bytes < 0:
            raise ValueError(f"cannot reserve a negative size ({num_bytes})")
        if not self.can_admit(num_bytes):
            self._refused += 1
            return False
        self.in_use += num_bytes
        self.peak = max(self.peak, self.in_use)
        return True

    def release(self, num_bytes: int) -> None:
        if num_bytes < 0 or num_bytes > self.in_use:
            raise ValueError(
                f"release of {num_bytes} bytes with only {self.in_use} reserved"
            )
        self.in_use -= num_bytes

    def pages_in_flight(self, bytes_per_page: int, held_bytes: int = 0, cap: int | None = None) -> int:
        """How many pages of ``bytes_per_page`` fit beside ``held_bytes``
        under the watermark (at least 1, at most ``cap``)."""
        room = self.limit_bytes - held_bytes
        n = max(1, room // max(1, bytes_per_page))
        return int(min(n, cap) if cap is not None else n)
