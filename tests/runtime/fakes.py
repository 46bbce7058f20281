"""Fake handlers for capped children: one that answers, sleeps, allocates,
aborts or fails as each request asks (the misbehaviour a hostile document
causes in a real one)."""

from __future__ import annotations

import os
import time
from typing import Any

_MB = 1024 * 1024


class FakeMisbehaving:
    """Built in the child; ``tag`` comes back with every answer (so a
    caller sees its factory arguments arrived). Requests:
    ``("echo", x)``, ``("pid",)``, ``("sleep", seconds)``,
    ``("allocate", mib)``, ``("abort",)``, ``("refuse", message)``
    (a LookupError, the replied type in these tests), ``("crash",)``
    (a RuntimeError, not replied), ``("fd", text)`` (a pipe's read end)."""

    def __init__(self, tag: str) -> None:
        self.tag = tag

    def __call__(self, request: tuple[Any, ...]) -> Any:
        from longdoc.runtime.capped import WithFd

        what, *args = request
        if what == "echo":
            return (self.tag, args[0])
        if what == "pid":
            return os.getpid()
        if what == "sleep":
            time.sleep(args[0])
            return "woke"
        if what == "allocate":
            block = bytearray(args[0] * _MB)
            return len(block)
        if what == "abort":
            os.abort()
        if what == "refuse":
            raise LookupError(args[0])
        if what == "fd":
            read, write = os.pipe()
            os.write(write, args[0].encode())
            os.close(write)
            return WithFd("a pipe", read)
        raise RuntimeError(f"the fake has no {what!r}")
