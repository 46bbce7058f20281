"""The one background loop: passes every interval or when woken, a step's
own wait, errors that never end it, and a stop that ends it."""

from __future__ import annotations

import threading
import time

from longdoc.runtime.loop import Loop


def wait_for(check, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_a_loop_runs_every_interval_until_stopped():
    calls: list[float] = []
    loop = Loop(lambda: calls.append(time.monotonic()), 0.02, "test-loop").start()
    wait_for(lambda: len(calls) >= 5)
    loop.stop()
    done = len(calls)
    time.sleep(0.08)
    assert len(calls) == done
    assert not loop.is_alive()
    assert all(b - a >= 0.015 for a, b in zip(calls, calls[1:], strict=False))


def test_the_first_pass_waits_an_interval_unless_asked_to_run_at_start():
    late, early = [], []
    slow = Loop(lambda: late.append(1), 10.0, "test-late").start()
    fast = Loop(lambda: early.append(1), 10.0, "test-early", at_start=True).start()
    wait_for(lambda: early)
    assert late == []
    slow.stop()
    fast.stop()


def test_wake_runs_the_next_pass_at_once():
    calls = []
    loop = Loop(lambda: calls.append(1), 60.0, "test-wake").start()
    time.sleep(0.02)
    assert calls == []
    loop.wake()
    wait_for(lambda: calls == [1])
    loop.stop(timeout=1)
    assert not loop.is_alive()   # a stop does not wait the interval out


def test_a_step_chooses_its_own_wait():
    calls = []

    def step():
        calls.append(time.monotonic())
        return 0.0 if len(calls) < 3 else None   # three passes at once, then the interval

    loop = Loop(step, 60.0, "test-own-wait", at_start=True).start()
    wait_for(lambda: len(calls) == 3)
    time.sleep(0.05)
    assert len(calls) == 3
    loop.stop()


def test_a_step_that_raises_is_logged_and_the_loop_goes_on(caplog):
    calls = []

    def step():
        calls.append(1)
        if len(calls) < 3:
            raise RuntimeError("blink")

    loop = Loop(step, 0.01, "test-raises").start()
    wait_for(lambda: len(calls) >= 4)
    loop.stop()
    assert [r.message for r in caplog.records].count("background pass failed") >= 2
    assert all(getattr(r, "loop", None) == "test-raises" for r in caplog.records
               if r.message == "background pass failed")


def test_a_step_can_end_its_own_loop():
    calls = []
    holder: dict[str, Loop] = {}

    def step():
        calls.append(1)
        if len(calls) == 2:
            holder["loop"].begin_stop()

    holder["loop"] = loop = Loop(step, 0.01, "test-self-stop").start()
    loop.join(5)
    assert not loop.is_alive()
    assert len(calls) == 2


def test_stop_from_another_thread_while_a_step_runs_waits_for_it():
    started, release = threading.Event(), threading.Event()
    finished = []

    def step():
        started.set()
        release.wait(5)
        finished.append(1)

    loop = Loop(step, 0.0, "test-busy", at_start=True).start()
    assert started.wait(5)
    threading.Timer(0.05, release.set).start()
    loop.stop(timeout=5)
    assert finished == [1]
    assert not loop.is_alive()
