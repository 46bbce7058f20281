"""Helper processes: how longdoc starts them, bounds them and ties their
life to the process that owns them. Depends on nothing else in longdoc.

Every helper process (RapidOCR workers, document sandboxes) is forked from
one fork server per owning process (:func:`context`), which imports the
libraries every helper uses once, so a sandbox starts in milliseconds. A helper:

- dies with its owner (:func:`die_with`): the kernel's parent-death signal
  covers the fork server, and a watchdog thread on a pidfd of the owner
  covers the owner itself (a helper's parent is the fork server, which
  outlives a ``kill -9`` of the owner only while a helper keeps it busy);
- may cap its own address space (:func:`limit_address_space`), so a hostile
  input fails an allocation inside the helper instead of growing the owner.

Helpers that answer requests on untrusted bytes (the document sandbox, the
searchable-PDF writer) do so through :mod:`longdoc.runtime.capped`, which
adds the per-call deadline and the request/reply framing to the above.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import resource
import select
import signal
import tempfile
import threading
from collections.abc import Sequence
from typing import Any

log = logging.getLogger(__name__)

#: Modules the fork server imports before it forks helpers (missing ones are
#: skipped by multiprocessing): what every helper uses. Third-party libraries
#: with thread pools (ONNX Runtime sessions) are only *imported* here; they
#: start threads after the fork, in each helper. The CLI's imports are here
#: because multiprocessing re-runs the parent's main module (``python -m
#: longdoc.cli``) in every child, as ``__mp_main__``: with them preloaded that
#: costs milliseconds, not the ~150 ms of importing typer, rich and the
#: pipeline per sandbox. (``longdoc.cli`` itself is not preloaded: runpy warns
#: when the module it re-runs is already imported.) A pool's own library (the
#: OCR engine's) is added by the pool (:func:`context`'s ``preload``).
FORKSERVER_PRELOAD = (
    "numpy",
    "PIL.Image",
    "pypdfium2",
    "onnxruntime",
    "longdoc.ingest.sandbox",
    "typer",
    "longdoc.cli_progress",
    "longdoc.cli_service",
    "longdoc.pipeline",
)

_PR_SET_PDEATHSIG = 1
#: the longest path a Unix socket may have (``sun_path`` less its terminating NUL)
UNIX_PATH_MAX = 107
#: what multiprocessing adds to the temporary folder for the fork server's
#: socket: ``/pymp-XXXXXXXX/listener-XXXXXXXX``
_SOCKET_SUFFIX = len("/pymp-xxxxxxxx/listener-xxxxxxxx")
_preload: list[str] = list(FORKSERVER_PRELOAD)
_lock = threading.Lock()


def context(preload: Sequence[str] = ()) -> Any:
    """The ``forkserver`` multiprocessing context every helper starts from.
    ``preload``: modules the caller's helpers import on top of
    :data:`FORKSERVER_PRELOAD` (RapidOCR for its workers: ~0.8 s of CPU),
    imported by the fork server if it is not running yet, else by each
    helper itself. So a process that only opens documents (an API process,
    a CLI run on a born-digital PDF) never imports the OCR library, and one
    whose OCR pool starts first forks its OCR workers ready."""
    ctx = multiprocessing.get_context("forkserver")
    with _lock:
        _preload.extend(m for m in preload if m not in _preload)
        ctx.set_forkserver_preload(list(_preload))  # read when the fork server (re)starts
    return ctx


def socket_path_problem() -> str | None:
    """Why no helper could start here, or None: the fork server listens on
    a Unix socket in the temporary folder (``TMPDIR``), and past
    :data:`UNIX_PATH_MAX` bytes its path cannot be bound, so every helper
    start would fail. Checked at start-up, where it can be said plainly."""
    folder = tempfile.gettempdir()
    if len(os.fsencode(folder)) + _SOCKET_SUFFIX > UNIX_PATH_MAX:
        return (f"The temporary folder {folder} is too long a path ({len(os.fsencode(folder))} bytes) for the "
                f"helper processes' Unix socket: at most {UNIX_PATH_MAX - _SOCKET_SUFFIX} bytes.")
    return None


def die_with(owner_pid: int) -> None:
    """Make this process exit when ``owner_pid`` exits (call it first thing
    in a helper). Also asks the kernel to kill it when its own parent (the
    fork server) dies. Never raises: on a system without pidfds the
    watchdog polls the pid once a second instead."""
    _parent_death_signal(signal.SIGKILL)
    if owner_pid == os.getpid() or not _alive(owner_pid):
        os._exit(0)
    threading.Thread(target=_watch, args=(owner_pid,), name="longdoc-owner-watch", daemon=True).start()


def _parent_death_signal(sig: int) -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the watchdog alone
        pass


def _watch(owner_pid: int) -> None:
    try:
        fd = os.pidfd_open(owner_pid)
    except (AttributeError, OSError):
        fd = None
    if fd is not None:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while not poller.poll(None):
            pass
        os._exit(0)
    while _alive(owner_pid):
        threading.Event().wait(1.0)
    os._exit(0)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def address_space_bytes() -> int:
    """This process's current virtual address space (VmSize), in bytes."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise OSError("VmSize not found in /proc/self/status")


def limit_address_space(extra_bytes: int) -> int:
    """Cap this process's address space at its current size plus
    ``extra_bytes`` (``RLIMIT_AS``); returns the cap. Past it, allocations
    fail (``MemoryError`` in Python; native libraries may abort)."""
    cap = address_space_bytes() + extra_bytes
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    return cap


def raise_open_files_limit(wanted: int = 65536) -> int:
    """Raise this process's soft limit on open files towards ``wanted``
    (never above the hard limit); returns the soft limit in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            log.warning("could not raise the open-files limit", extra={"soft": soft, "hard": hard})
    return soft
