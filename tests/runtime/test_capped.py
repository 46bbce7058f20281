"""A capped call answers from a child that is killed when it overruns its
deadline or its memory cap, the caller's own typed error raised, and the
next call served by a fresh child (real helper processes, no mocks)."""

from __future__ import annotations

import os
import time

import psutil
import pytest

from longdoc.errors import ResourceLimit
from longdoc.runtime.capped import CappedChild, Overrun
from tests.runtime.fakes import FakeMisbehaving

_MB = 1024 * 1024
CAP_MB = 64


def limit(overrun: Overrun) -> ResourceLimit:
    """The caller's typed error, worded from the overrun."""
    return ResourceLimit(f"The fake {overrun.cause}: {overrun.how}.", seconds=round(overrun.seconds, 2))


@pytest.fixture
def child():
    with CappedChild(FakeMisbehaving, ("tag-7",), memory_bytes=CAP_MB * _MB, replied=(LookupError,),
                     name="longdoc-test-capped") as capped:
        yield capped


def ask(child: CappedChild, *request, deadline_s: float = 10.0):
    return child.call(request, deadline_s=deadline_s, failed=limit)


def gone(pid: int, within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_calls_are_answered_by_one_child_and_its_refusals_come_back_as_themselves(child) -> None:
    assert child.pid is None                       # started by the first call
    assert ask(child, "echo", [1, "two"]) == ("tag-7", [1, "two"])
    pid = ask(child, "pid")
    assert pid == child.pid and pid != os.getpid()
    with pytest.raises(LookupError, match="no such page"):
        ask(child, "refuse", "no such page")
    reply = ask(child, "fd", "pixels here")        # a descriptor crosses the pipe with the reply
    try:
        assert reply.value == "a pipe" and os.read(reply.fd, 100) == b"pixels here"
    finally:
        os.close(reply.fd)
    assert ask(child, "pid") == pid                 # the same child throughout


def test_a_call_past_its_deadline_kills_the_child_and_the_next_call_gets_a_fresh_one(child) -> None:
    first = ask(child, "pid")
    t0 = time.monotonic()
    with pytest.raises(ResourceLimit) as caught:
        ask(child, "sleep", 60, deadline_s=0.5)
    assert time.monotonic() - t0 < 5
    assert caught.value.message == "The fake deadline: it was killed by SIGKILL."
    assert 0.5 <= caught.value.context["seconds"] < 5
    assert child.pid is None and gone(first, within_s=0)
    assert ask(child, "echo", "again") == ("tag-7", "again")
    assert ask(child, "pid") != first


def test_a_child_past_its_memory_cap_fails_the_call_and_costs_this_process_nothing(child) -> None:
    first = ask(child, "pid")
    assert ask(child, "allocate", CAP_MB // 4) == CAP_MB // 4 * _MB     # within the cap
    rss_before = psutil.Process().memory_info().rss
    with pytest.raises(ResourceLimit) as caught:
        ask(child, "allocate", CAP_MB * 4)
    assert caught.value.message == "The fake memory: it ran out of memory."
    assert psutil.Process().memory_info().rss - rss_before < 16 * _MB
    assert child.pid is None and gone(first, within_s=0)
    assert ask(child, "echo", "after") == ("tag-7", "after")
    assert ask(child, "pid") != first


@pytest.mark.parametrize(("request_", "how"), [
    (("abort",), "it was killed by SIGABRT"),      # a native library aborting at the cap
    (("crash",), "it exited with status 1"),       # an exception the caller did not ask to be replied
])
def test_a_child_that_dies_fails_the_call_saying_how(child, request_, how) -> None:
    with pytest.raises(ResourceLimit) as caught:
        ask(child, *request_)
    assert caught.value.message == f"The fake memory: {how}."
    assert ask(child, "echo", "fresh") == ("tag-7", "fresh")


def test_a_closed_child_exits_and_a_later_call_starts_another(child) -> None:
    pid = ask(child, "pid")
    child.close()
    assert child.pid is None and gone(pid)
    child.close()                                  # idempotent
    assert ask(child, "pid") not in (None, pid)
