"""Leases: who runs a task, and how the others know it is alive.

A run holds its task's ``job_tasks`` row (on the fleet and in the embedded
server alike) under a worker id and a lease token, and refreshes
``heartbeat_at`` from a :class:`Heartbeat` thread every third of
``queue.lease_seconds``. A task whose heartbeat is older than the lease
belongs to a worker that died (or hangs, or lost the database): the
reconciler takes it back and queues it again from its last checkpointed
group. The run that lost it notices at its next heartbeat (the
compare-and-set finds another lease or state) and stops without writing
anything more.

Worker ids are ``role:host:pid:token``, the token new in every process, so
a process can tell that a record names a dead predecessor on its own host
(:func:`dead_on_this_host`): its pid is gone, or it is this very pid with
another token (a container restarted as pid 1).
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
from collections.abc import Callable
from types import TracebackType

import psutil

from longdoc.runtime.loop import Loop

log = logging.getLogger("longdoc.jobs")

_TOKEN = secrets.token_hex(4)


def worker_id(role: str) -> str:
    """This process's id: ``role:host:pid:token`` (at most 128 characters)."""
    return f"{role}:{socket.gethostname()[:80]}:{os.getpid()}:{_TOKEN}"[:128]


def dead_on_this_host(owner: str | None) -> bool:
    """Whether ``owner`` (a worker id) names a process of this host that is
    gone. False when it names another host or cannot be read: only the
    lease can tell then."""
    if not owner:
        return False
    parts = owner.rsplit(":", 3)
    if len(parts) != 4 or not parts[2].isdigit():
        return False
    _, host, pid, token = parts
    if host != socket.gethostname()[:80]:
        return False
    if int(pid) == os.getpid():
        return token != _TOKEN
    return not psutil.pid_exists(int(pid))


class Heartbeat:
    """Calls ``beat()`` every ``interval_s`` on a thread while inside its
    ``with`` block. ``beat`` returns False when the lease is lost (or raises
    when the database is unreachable: logged, tried again next time); then
    :attr:`lost` is set and beating stops. Use :meth:`check` where the run
    can stop safely."""

    def __init__(self, beat: Callable[[], bool], interval_s: float, name: str = "longdoc-heartbeat") -> None:
        self._beat = beat
        self.interval_s = interval_s
        self.lost = threading.Event()
        self._loop = Loop(self._step, interval_s, name)

    def __enter__(self) -> Heartbeat:
        self._loop.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._loop.stop(timeout=5)

    def is_alive(self) -> bool:
        """Whether it still beats (False once stopped or the lease was lost)."""
        return self._loop.is_alive()

    def _step(self) -> None:
        try:
            alive = self._beat()
        except Exception as exc:  # the database blinked: the lease lasts a while longer
            log.warning("heartbeat failed", extra={"error": type(exc).__name__})
            return
        if not alive:
            self.lost.set()
            self._loop.begin_stop()
