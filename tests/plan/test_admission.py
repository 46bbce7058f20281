"""Admission: a group waits for room under the watermark, and stops
waiting when its document stops."""

from __future__ import annotations

import threading
import time

import pytest

from longdoc.errors import JobCancelled
from longdoc.plan import Admission, Workspace


def test_a_group_waits_until_earlier_ones_release_room():
    admission = Admission(Workspace(budget=100, watermark=0.8))
    first = admission.admit(60)
    admitted = threading.Event()

    def second() -> None:
        with admission.admit(30):
            admitted.set()

    t = threading.Thread(target=second)
    t.start()
    deadline = time.monotonic() + 5
    while admission.waiting == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert admission.waiting == 1 and not admitted.is_set()  # 60 + 30 > 80
    assert admission.workspace.in_use == 60 and admission.in_flight == 1
    first.release()
    t.join(5)
    assert admitted.is_set() and admission.workspace.in_use == 0 and admission.in_flight == 0
    assert admission.workspace.peak <= admission.workspace.limit


def test_an_oversized_group_runs_alone_rather_than_never():
    admission = Admission(Workspace(budget=100, watermark=0.8))
    with admission.admit(500):
        assert admission.workspace.in_use == 500


def test_waiting_ends_when_the_document_stops():
    admission = Admission(Workspace(budget=100, watermark=1.0))
    held = admission.admit(100)
    abort = threading.Event()
    outcome: list[BaseException] = []

    def waiter() -> None:
        try:
            admission.admit(10, abort)
        except JobCancelled as exc:
            outcome.append(exc)

    t = threading.Thread(target=waiter)
    t.start()
    abort.set()
    t.join(5)
    assert outcome and admission.waiting == 0
    held.release()
    held.release()  # releasing twice gives back once
    assert admission.workspace.in_use == 0


def test_kept_results_count_against_the_room():
    admission = Admission(Workspace(budget=100, watermark=1.0))
    admission.hold(90)
    assert not admission.workspace.try_reserve(20)
    admission.release(90)
    with pytest.raises(ValueError):
        admission.release(1)
