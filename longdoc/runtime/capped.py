"""Capped calls: a request answered by a helper process with an
address-space cap, within a deadline. The one way longdoc runs code on
untrusted bytes in a child (the document sandbox, the searchable-PDF
writer). Depends on :mod:`procs` only.

A :class:`CappedChild` owns one child at a time, forked from the fork
server (:func:`procs.context`); the child builds a handler from
``factory(*args)`` and answers one request at a time::

    parent (CappedChild)                       child (dies with its owner, RLIMIT_AS capped)
    ────────────────────                       ─────────────────────────────────────────────
    .call(request, deadline_s, failed) ──────► handler(request)
                   ◄── ("ok", value)             a value
                   ◄── ("error", exc)            an exception of a ``replied`` type (re-raised)
                   ◄── ("fd", value) + a descriptor   a :class:`WithFd` (the descriptor crosses
                                                 the pipe, the bytes behind it do not)
                   ◄── ("spent", None)           MemoryError: the child exits
    .close()       ── None ──────────────────► exits (killed after CLOSE_WAIT_S if it does not)

What ends a child, and what the caller sees:

- no answer within ``deadline_s``: the child is killed, and the call
  raises ``failed(Overrun("deadline", …))``;
- a ``MemoryError`` in the handler, or the child dying (a native library
  aborting at the cap, any uncaught exception, a kill): the child is
  killed and reaped, and the call raises ``failed(Overrun("memory", …))``;
- the next call starts a fresh child (the handler is built again).

A child never answers with an exception outside ``replied``: such a bug
ends the child (its traceback on stderr) and reads as ``"memory"``, as a
native abort would. One call at a time (a lock guards the pipe).
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import reduction
from types import TracebackType
from typing import Any, Literal, Self

from longdoc.runtime import procs

log = logging.getLogger(__name__)

#: how long a child asked to exit (:meth:`CappedChild.close`) may take before it is killed
CLOSE_WAIT_S = 2.0


@dataclass(frozen=True)
class Overrun:
    """Why a capped call got no answer, for the caller to word as its own
    typed error. ``cause``: ``"deadline"`` (no answer in ``deadline_s``)
    or ``"memory"`` (the child ran out of memory or died); ``how``: how
    the child ended, as a clause ("it ran out of memory", "it was killed
    by SIGABRT"); ``seconds``: from the request to the overrun."""

    cause: Literal["deadline", "memory"]
    seconds: float
    deadline_s: float
    how: str


@dataclass(frozen=True)
class WithFd:
    """A reply with a file descriptor beside it (a memory file of pixels):
    the child hands over ``fd`` (closed there once sent); in the parent
    ``fd`` is a new descriptor the caller must close."""

    value: Any
    fd: int


class CappedChild:
    """Requests answered in a capped child; see the module docstring.

    ``factory(*args)``, called in the child, builds the handler: a
    callable of one request (its ``close()``, if it has one, is called when
    the child ends). ``factory``, ``args``, requests and replies cross the
    pipe pickled. ``memory_bytes``: what the child may add to its address
    space once started. ``replied``: the exception types the handler's
    failures come back as (others end the child)."""

    def __init__(self, factory: Callable[..., Callable[[Any], Any]], args: tuple[Any, ...] = (), *,
                 memory_bytes: int, replied: tuple[type[BaseException], ...] = (), name: str = "longdoc-capped"
                 ) -> None:
        self.factory, self.args, self.memory_bytes = factory, args, memory_bytes
        self.replied, self.name = replied, name
        self._lock = threading.Lock()
        self._proc: Any = None
        self._conn: Any = None

    @property
    def pid(self) -> int | None:
        """Process id of the current child (None between children)."""
        return self._proc.pid if self._proc is not None else None

    def call(self, request: Any, *, deadline_s: float, failed: Callable[[Overrun], BaseException]) -> Any:
        """Send ``request`` (starting a child if none runs) and return the
        handler's value (a :class:`WithFd` as such). Raises the handler's
        ``replied`` exception, or ``failed(overrun)`` when the child missed
        ``deadline_s`` or ran out of memory (that child is gone then)."""
        with self._lock:
            if self._proc is None:
                self._start()
            t0 = time.monotonic()
            status, value = self._exchange(request, deadline_s)
            if status == "ok":
                return value
            if status == "error":
                raise value
            ended = self._kill()
            how = "it ran out of memory" if status == "spent" else ended
            cause: Literal["deadline", "memory"] = "deadline" if status == "late" else "memory"
            raise failed(Overrun(cause, time.monotonic() - t0, deadline_s, how))

    def close(self) -> None:
        """Ask the child to exit (killed after :data:`CLOSE_WAIT_S` if it
        does not, on a background thread: closing costs the caller
        nothing). Idempotent; a later call starts a fresh child."""
        with self._lock:
            proc, conn = self._proc, self._conn
            self._proc = self._conn = None
            if proc is None:
                return
            with contextlib.suppress(OSError):
                conn.send(None)
            conn.close()
            _reap(proc, self.name)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _start(self) -> None:
        ctx = procs.context()
        parent_conn, child_conn = ctx.Pipe()
        self._proc = ctx.Process(
            target=_child, name=self.name, daemon=True,
            args=(child_conn, os.getpid(), self.memory_bytes, self.factory, self.args, self.replied),
        )
        self._proc.start()
        child_conn.close()
        self._conn = parent_conn

    def _exchange(self, request: Any, deadline_s: float) -> tuple[str, Any]:
        """``(status, value)`` of the child's answer; ``"late"`` when none
        came in time, ``"died"`` when the pipe ended."""
        try:
            self._conn.send(request)
            if not self._conn.poll(deadline_s):
                return "late", None
            status, value = self._conn.recv()
            if status == "fd":
                return "ok", WithFd(value, reduction.recv_handle(self._conn))
            return status, value
        except (EOFError, OSError, RuntimeError):  # RuntimeError: recv_handle found no descriptor
            return "died", None

    def _kill(self) -> str:
        """Kill and reap the current child; returns how it ended, as a clause."""
        proc, conn = self._proc, self._conn
        self._proc = self._conn = None
        proc.kill()
        proc.join()
        conn.close()
        return _how(proc.exitcode)


def _how(exitcode: int | None) -> str:
    if exitcode is None:
        return "it was still running"
    if exitcode < 0:
        try:
            return f"it was killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"it was killed by signal {-exitcode}"
    return f"it exited with status {exitcode}"


_closing: queue.SimpleQueue[tuple[Any, str, float]] = queue.SimpleQueue()
_reaper_started = False
_reaper_lock = threading.Lock()


def _reap(proc: Any, name: str) -> None:
    """Wait for a child asked to exit (up to :data:`CLOSE_WAIT_S`, then kill
    it) on the one background reaper thread."""
    global _reaper_started
    with _reaper_lock:
        if not _reaper_started:
            threading.Thread(target=_reaper, name="longdoc-capped-reaper", daemon=True).start()
            _reaper_started = True
    _closing.put((proc, name, time.monotonic() + CLOSE_WAIT_S))


def _reaper() -> None:
    while True:
        proc, name, deadline = _closing.get()
        proc.join(max(0.0, deadline - time.monotonic()))
        if proc.is_alive():
            log.warning("helper child did not exit when asked; killing it", extra={"pid": proc.pid, "child": name})
            proc.kill()
            proc.join()


# --- the child ------------------------------------------------------------------


def _child(conn: Any, owner_pid: int, memory_bytes: int, factory: Callable[..., Callable[[Any], Any]],
           args: tuple[Any, ...], replied: tuple[type[BaseException], ...]) -> None:
    """The child's main: tie its life to the owner, cap its address space,
    build the handler and answer requests until ``None`` or end of pipe."""
    procs.die_with(owner_pid)
    procs.limit_address_space(memory_bytes)
    handler = factory(*args)
    try:
        _answer(conn, handler, replied, owner_pid)
    finally:
        close = getattr(handler, "close", None)
        if close is not None:
            close()


def _answer(conn: Any, handler: Callable[[Any], Any], replied: tuple[type[BaseException], ...],
            owner_pid: int) -> None:
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        try:
            value = handler(request)
        except MemoryError:
            conn.send(("spent", None))   # its heap is not reused: the parent ends this child
            return
        except replied as exc:
            conn.send(("error", exc))
            continue
        if isinstance(value, WithFd):
            try:
                conn.send(("fd", value.value))
                reduction.send_handle(conn, value.fd, owner_pid)
            finally:
                os.close(value.fd)
        else:
            conn.send(("ok", value))
