"""Fair turns on the engine: owners alternate, whoever asks first."""

from __future__ import annotations

import threading
import time

import pytest

from longdoc.plan import FairTurns


def _run(turns: FairTurns, requests: list[str], hold_s: float = 0.01) -> list[str]:
    """Start one thread per request (in list order, each queued before the
    next starts) while a blocker holds the only slot; return the order in
    which the requests got their turn."""
    order: list[str] = []
    lock = threading.Lock()
    turns.acquire("blocker")

    def worker(owner: str) -> None:
        with turns.turn(owner):
            with lock:
                order.append(owner)
            time.sleep(hold_s)

    threads = []
    for owner in requests:
        t = threading.Thread(target=worker, args=(owner,))
        t.start()
        threads.append(t)
        deadline = time.monotonic() + 5
        while sum(turns.waiting().values()) < len(threads) and time.monotonic() < deadline:
            time.sleep(0.001)
    turns.release()
    for t in threads:
        t.join(10)
    return order


def test_a_tenant_with_many_groups_queued_does_not_starve_a_one_group_tenant():
    order = _run(FairTurns(), ["a", "a", "a", "a", "b", "c", "c"])
    assert order == ["a", "b", "c", "a", "c", "a", "a"]


def test_one_owner_alone_gets_its_turns_in_order():
    assert _run(FairTurns(), ["a"] * 4) == ["a"] * 4


def test_two_slots_are_used_at_once():
    turns = FairTurns(slots=2)
    inside = threading.Barrier(2, timeout=5)

    def worker(owner: str) -> None:
        with turns.turn(owner):
            inside.wait()  # both must hold a turn together, or this times out

    threads = [threading.Thread(target=worker, args=(o,)) for o in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not inside.broken


def test_misuse_raises():
    with pytest.raises(ValueError):
        FairTurns(slots=0)
    with pytest.raises(RuntimeError):
        FairTurns().release()
