"""The lazy, bounded, in-order submission window shared by page engines."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from longdoc.engines.base import PageImage
from longdoc.engines.window import Slot, in_order


def page(n: int) -> PageImage:
    return PageImage(page=n, image=np.zeros((1, 1, 3), np.uint8), dpi=72, width_pt=1, height_pt=1)


def test_results_in_input_order_even_when_later_pages_finish_first():
    release = threading.Event()

    def work(p: PageImage) -> int:
        if p.page == 1:
            release.wait(5)  # page 1 finishes last
        return p.page

    with ThreadPoolExecutor(3) as pool:
        def submit(p):
            if p.page == 3:
                release.set()
            return Slot(p, pool.submit(work, p))

        got = [head.future.result() for head, _ in in_order(map(page, range(1, 6)), submit, 3)]
    assert got == [1, 2, 3, 4, 5]


def test_never_more_than_max_in_flight_pulled_ahead():
    pulled, yielded = 0, 0
    seen_ahead = []

    def pages():
        nonlocal pulled
        for n in range(1, 11):
            pulled += 1
            yield page(n)

    with ThreadPoolExecutor(2) as pool:
        for _head, rest in in_order(pages(), lambda p: Slot(p, pool.submit(lambda: p.page)), 3):
            seen_ahead.append(pulled - yielded)
            assert len(rest) + 1 <= 3
            yielded += 1
    assert seen_ahead[0] == 3 and max(seen_ahead) == 3 and yielded == 10


def test_stopping_early_cancels_queued_work():
    gate = threading.Event()
    with ThreadPoolExecutor(1) as pool:
        slots = []

        def submit(p):
            slots.append(Slot(p, pool.submit(gate.wait, 5)))
            return slots[-1]

        window = in_order(map(page, range(1, 10)), submit, 4)
        next(window)
        window.close()
        gate.set()
    assert len(slots) == 4
    assert all(s.future.cancelled() for s in slots[1:])  # queued behind the running one


def test_window_must_hold_at_least_one_page():
    with pytest.raises(ValueError):
        list(in_order([page(1)], lambda p: Slot(p, None), 0))  # type: ignore[arg-type]
