"""Leases: worker ids that say whose process holds a record, telling a
dead process of this host from a live one, and the heartbeat thread."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time

import pytest

from longdoc.runner import lease
from longdoc.runner.lease import Heartbeat, dead_on_this_host, worker_id

HOST = socket.gethostname()[:80]
TOKEN = worker_id("x").rsplit(":", 1)[1]


def wait_for(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


@pytest.fixture
def sleeper():
    """A live process that is not this one."""
    proc = subprocess.Popen(["sleep", "30"])
    yield proc.pid
    proc.kill()
    proc.wait()


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


# -- worker ids ---------------------------------------------------------------------


def test_worker_id_is_role_host_pid_token():
    wid = worker_id("worker")
    assert re.fullmatch(rf"worker:{re.escape(HOST)}:{os.getpid()}:[0-9a-f]{{8}}", wid), wid
    assert worker_id("worker") == wid  # one token per process
    assert worker_id("api") == f"api:{HOST}:{os.getpid()}:{TOKEN}"
    assert len(wid) <= 128


def test_worker_id_is_at_most_128_characters():
    assert len(worker_id("r" * 500)) == 128
    assert len(worker_id("")) <= 128


def test_this_process_is_not_dead():
    assert not dead_on_this_host(worker_id("worker"))
    assert not dead_on_this_host(worker_id("role:with:colons"))


def test_this_pid_with_another_token_is_a_dead_predecessor():
    """A container restarted with the same pid (1) as the process that died."""
    other = "0" * 8 if TOKEN != "0" * 8 else "1" * 8
    assert dead_on_this_host(f"worker:{HOST}:{os.getpid()}:{other}")


def test_a_pid_that_is_gone_is_dead():
    assert dead_on_this_host(f"worker:{HOST}:{dead_pid()}:{TOKEN}")
    assert dead_on_this_host(f"embedded:{HOST}:{dead_pid()}:abcd1234")


def test_a_live_other_process_is_not_dead(sleeper):
    assert not dead_on_this_host(f"worker:{HOST}:{sleeper}:abcd1234")
    assert not dead_on_this_host(f"worker:{HOST}:{os.getppid()}:abcd1234")


def test_another_host_cannot_be_judged():
    assert not dead_on_this_host(f"worker:not-{HOST}:{dead_pid()}:abcd1234")
    assert not dead_on_this_host(f"worker:{HOST}.example:{os.getpid()}:abcd1234")


@pytest.mark.parametrize("owner", [
    None, "", "embedded", "worker:host", f"worker:{HOST}:abc:abcd1234", f"{HOST}:123:abcd1234",
    f"worker:{HOST}:-5:abcd1234", f"worker:{HOST}::abcd1234",
])
def test_a_malformed_worker_id_cannot_be_judged(owner):
    assert not dead_on_this_host(owner)


def test_the_token_is_new_in_every_process():
    code = "from longdoc.runner.lease import worker_id; print(worker_id('w'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    role, host, pid, token = out.split(":")
    assert (role, host) == ("w", HOST) and int(pid) != os.getpid() and token != TOKEN
    assert dead_on_this_host(out)  # that process has ended


# -- the heartbeat thread ---------------------------------------------------------------


class Beats:
    """A beat function that answers from a script, then ``then``."""

    def __init__(self, *script, then=True):
        self.script, self.then = list(script), then
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self) -> bool:
        with self.lock:
            self.calls += 1
            answer = self.script.pop(0) if self.script else self.then
        if isinstance(answer, BaseException):
            raise answer
        return answer


def test_heartbeat_calls_beat_periodically_while_inside_its_block():
    beat = Beats()
    hb = Heartbeat(beat, 0.01)
    assert beat.calls == 0
    with hb:
        wait_for(lambda: beat.calls >= 5)
    after = beat.calls
    time.sleep(0.05)
    assert beat.calls == after  # stopped at exit
    assert not hb.lost.is_set()
    assert not hb.is_alive()


def test_heartbeat_does_not_beat_before_its_first_interval():
    beat = Beats()
    with Heartbeat(beat, 10.0):
        time.sleep(0.05)
    assert beat.calls == 0  # and leaving the block does not wait the interval out


def test_a_lost_lease_sets_lost_and_stops_beating():
    beat = Beats(True, True, False)
    with Heartbeat(beat, 0.01) as hb:
        assert hb.lost.wait(5)
        time.sleep(0.05)
        assert beat.calls == 3
        assert not hb.is_alive()


def test_a_beat_that_raises_is_tried_again():
    beat = Beats(ConnectionError("db down"), RuntimeError("blink"), True, ConnectionError("again"))
    with Heartbeat(beat, 0.01) as hb:
        wait_for(lambda: beat.calls >= 8)
        assert not hb.lost.is_set()
        assert hb.is_alive()


def test_a_lease_lost_after_errors_still_sets_lost():
    beat = Beats(ConnectionError("db down"), ConnectionError("db down"), False)
    with Heartbeat(beat, 0.01) as hb:
        assert hb.lost.wait(5)
        time.sleep(0.05)
        assert beat.calls == 3


def test_the_token_is_the_modules():
    assert TOKEN == lease._TOKEN and re.fullmatch(r"[0-9a-f]{8}", TOKEN)
