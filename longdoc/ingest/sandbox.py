"""Untrusted documents are parsed only here: in a helper process with an
address-space cap and a time limit on every step.

:func:`open_sandboxed` returns a :class:`SandboxedSource`, a
:class:`~longdoc.ingest.source.DocumentSource` whose every call (open,
page size, text layer, render) runs in a child process that opened the
document with :func:`~longdoc.ingest.open.open_document`::

    caller (API or pipeline)              sandbox child (forked from the fork server)
    ───────────────────────               ─────────────────────────────────────────
    SandboxedSource(path) ── open ──────► RLIMIT_AS = start + limits.worker_memory_mb
                          ◄─ name, type,  open_document(path): sniff, count pages, …
                             sha256, pages, page labels
    .render(7, 200)      ── ("render", 7, 200) ──► pdfium / Pillow
                          ◄─ RenderedPage (pickled image) or a LongdocError

Limits and what trips them:

- every step must answer within ``limits.worker_timeout_seconds``, else the
  child is killed;
- the child may grow its address space by ``limits.worker_memory_mb``; past
  it an allocation fails (Python's ``MemoryError``, or pdfium aborts);
- a killed or dead child fails the step with :class:`ResourceLimit`: a page
  step fails that page alone (the next step starts a fresh child, which
  reopens the document); the opening step refuses the document.

A rendered page's pixels travel in a memory file (``memfd``) whose
descriptor is passed over the pipe, not through it: one copy on each side
instead of pickling 12 MB per A4 page at 200 dpi (measured: 78 → 43 ms a
render round trip, against 23 ms in process).

The child dies with the process that owns it (:func:`longdoc.runtime.procs.die_with`)
and the memory it used goes back to the system with it. One source serves
one thread at a time (a lock guards the pipe).
"""

from __future__ import annotations

import logging
import mmap
import os
import queue
import signal
import threading
import time
from pathlib import Path
from types import TracebackType
from multiprocessing import reduction
from typing import Any, Self

from PIL import Image

from longdoc.runtime import procs
from longdoc.config import LimitSettings
from longdoc.errors import ConfigError, LongdocError, ResourceLimit
from longdoc.ingest.open import open_document
from longdoc.ingest.source import DocumentSource, RenderedPage
from longdoc.model import BBox, Line

log = logging.getLogger(__name__)

_MB = 1024 * 1024
_CLOSE_WAIT_S = 2.0
_METHODS = ("page_size", "render", "text_layer")


def check_helper_sockets() -> None:
    """Raise ConfigError (at start-up) when no sandbox could start in this
    process: the temporary folder is too long a path for the fork server's
    Unix socket (:func:`longdoc.runtime.procs.socket_path_problem`), which would
    otherwise fail every document opened, each an internal error."""
    if (problem := procs.socket_path_problem()) is not None:
        raise ConfigError(problem, hint="Set TMPDIR to a shorter folder (e.g. /tmp), or unset it.")


def open_sandboxed(path: str | Path, limits: LimitSettings, *, name: str | None = None) -> SandboxedSource:
    """Open ``path`` in a sandbox child; see the module docstring.

    Raises what :func:`~longdoc.ingest.open.open_document` raises, and
    :class:`ResourceLimit` when opening the document trips a limit."""
    return SandboxedSource(path, limits, name=name)


class SandboxedSource:
    """A :class:`DocumentSource` served by a sandbox child process."""

    def __init__(self, path: str | Path, limits: LimitSettings, *, name: str | None = None) -> None:
        self.path = Path(path)
        self.limits = limits
        self.name = name or self.path.name
        self._lock = threading.Lock()
        self._proc: Any = None
        self._conn: Any = None
        self._closed = False
        info = self._start(page=None)
        self.media_type: str = info["media_type"]
        self.sha256: str = info["sha256"]
        self.page_count: int = info["page_count"]
        self._labels: list[str | None] | None = info.get("page_labels")

    # -- DocumentSource ----------------------------------------------------

    def page_size(self, page: int) -> tuple[float, float]:
        return self._call("page_size", page)

    def render(self, page: int, dpi: float) -> RenderedPage:
        return self._call("render", page, dpi)

    def text_layer(self, page: int) -> list[Line] | None:
        rows = self._call("text_layer", page)
        return None if rows is None else [_line(row) for row in rows]

    def page_label(self, page: int) -> str | None:
        """The label the child read with the document (no round trip)."""
        if not 1 <= page <= self.page_count:
            raise ValueError(f"page {page} is outside 1..{self.page_count}")
        return None if self._labels is None else self._labels[page - 1]

    def close(self) -> None:
        """Stop the child (asking first, killing after a short wait). Idempotent."""
        with self._lock:
            self._closed = True
            self._stop(ask=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SandboxedSource({self.name!r}, pages={getattr(self, 'page_count', '?')})"

    def child_pid(self) -> int | None:
        """Process id of the current sandbox child (None between children)."""
        return self._proc.pid if self._proc is not None else None

    # -- the child's life --------------------------------------------------

    def _start(self, page: int | None) -> dict[str, Any]:
        ctx = procs.context()
        parent_conn, child_conn = ctx.Pipe()
        self._proc = ctx.Process(
            target=serve, name="longdoc-sandbox", daemon=True,
            args=(child_conn, str(self.path), self.name, self.limits.model_dump(), os.getpid()),
        )
        self._proc.start()
        child_conn.close()
        self._conn = parent_conn
        return self._receive(page, "opening the document")

    def _call(self, method: str, page: int, *args: Any) -> Any:
        with self._lock:
            if self._closed:
                raise ValueError(f"{self!r} is closed")
            if self._proc is None:
                self._start(page)  # the last child died: a fresh one reopens the document
            self._conn.send((method, page, *args))
            return self._receive(page, _STEP_NAMES[method])

    def _receive(self, page: int | None, step: str) -> Any:
        """The child's answer to the step just sent; raises what the child
        raised, or ResourceLimit when it ran out of time or died."""
        timeout = self.limits.worker_timeout_seconds
        t0 = time.monotonic()
        try:
            ready = self._conn.poll(timeout)
            status, value = self._conn.recv() if ready else (None, None)
        except (EOFError, OSError):
            status, value = "died", None
        if status == "ok":
            return value
        if status == "pixels":
            return self._pixels(value)
        if status == "bug":  # the caller asked for something invalid (a page out of range)
            raise ValueError(value)
        if status == "error":
            if isinstance(value, ResourceLimit):
                self._stop(ask=False)  # it ran out of memory: its heap is not reused
            raise value
        if status is None:
            self._stop(ask=False)
            raise _limit(page, f"{step} took longer than {timeout:g} s (limits.worker_timeout_seconds)",
                         time.monotonic() - t0)
        how = self._stop(ask=False)
        raise _limit(page, f"{step} needed more memory than the sandbox allows (limits.worker_memory_mb = "
                           f"{self.limits.worker_memory_mb}; the sandbox was {how})", time.monotonic() - t0)

    def _pixels(self, meta: dict[str, Any]) -> RenderedPage:
        """The rendered page whose pixels follow as a memory file descriptor."""
        fd = reduction.recv_handle(self._conn)
        try:
            with mmap.mmap(fd, meta["nbytes"], prot=mmap.PROT_READ) as pixels:
                image = Image.frombytes("RGB", meta["size"], pixels)
        finally:
            os.close(fd)
        return RenderedPage(page=meta["page"], image=image, dpi=meta["dpi"], downscaled=meta["downscaled"])

    def _stop(self, *, ask: bool) -> str:
        """End the current child; returns how it ended (for messages).
        ``ask``: tell it to exit and let :func:`_reap` wait for it (the
        caller does not); otherwise kill it now."""
        proc, conn = self._proc, self._conn
        self._proc = self._conn = None
        if proc is None:
            return "not running"
        if ask:
            try:
                conn.send(None)
            except OSError:
                pass
            conn.close()
            _reap(proc)
            return "asked to exit"
        proc.kill()
        proc.join()
        conn.close()
        return _how(proc.exitcode)


_closing: queue.SimpleQueue[tuple[Any, float]] = queue.SimpleQueue()
_reaper_started = False
_reaper_lock = threading.Lock()


def _reap(proc: Any) -> None:
    """Wait for a child asked to exit (up to :data:`_CLOSE_WAIT_S`, then kill
    it) on a background thread, so closing a source costs its caller nothing."""
    global _reaper_started
    with _reaper_lock:
        if not _reaper_started:
            threading.Thread(target=_reaper, name="longdoc-sandbox-reaper", daemon=True).start()
            _reaper_started = True
    _closing.put((proc, time.monotonic() + _CLOSE_WAIT_S))


def _reaper() -> None:
    while True:
        proc, deadline = _closing.get()
        proc.join(max(0.0, deadline - time.monotonic()))
        if proc.is_alive():
            log.warning("sandbox child did not exit when asked; killing it", extra={"pid": proc.pid})
            proc.kill()
            proc.join()


_STEP_NAMES = {"page_size": "reading the page's size", "render": "rendering the page",
               "text_layer": "reading the page's text"}


def _limit(page: int | None, what: str, seconds: float) -> ResourceLimit:
    if page is None:
        return ResourceLimit(f"The document: {what}.", seconds=round(seconds, 2))
    return ResourceLimit(f"Page {page}: {what}.", page=page, seconds=round(seconds, 2))


def _how(exitcode: int | None) -> str:
    if exitcode is None:
        return "still running"
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit status {exitcode}"


# --- the child ------------------------------------------------------------------


def serve(conn: Any, path: str, name: str, limits: dict[str, Any], owner_pid: int) -> None:
    """The sandbox child's main loop: open the document, then answer
    ``(method, page, *args)`` requests until ``None`` or end of pipe.

    Answers are ``("ok", value)`` or ``("error", LongdocError)``. A
    ``MemoryError`` is answered as ResourceLimit and ends the child."""
    procs.die_with(owner_pid)
    settings = LimitSettings(**limits)
    procs.limit_address_space(settings.worker_memory_mb * _MB)
    try:
        source = open_document(path, settings, name=name)
    except LongdocError as exc:
        conn.send(("error", exc))
        return
    except MemoryError:
        conn.send(("error", _limit(None, "opening the document needed more memory than the sandbox "
                                         "allows (limits.worker_memory_mb)", 0.0)))
        return
    with source:
        labels = getattr(source, "page_labels", None)   # a PDF's /PageLabels, once (None: none)
        conn.send(("ok", {"media_type": source.media_type, "sha256": source.sha256,
                          "page_count": source.page_count, "page_labels": labels() if labels else None}))
        _answer(conn, source)


def _answer(conn: Any, source: DocumentSource) -> None:
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        method, page, *args = request
        if method not in _METHODS:
            raise ValueError(f"unknown sandbox method {method!r}")
        try:
            value = getattr(source, method)(page, *args)
            if method == "render":
                _send_pixels(conn, value)
                continue
            if method == "text_layer" and value is not None:
                value = [_row(line) for line in value]
        except LongdocError as exc:
            conn.send(("error", exc))
            continue
        except ValueError as exc:  # a caller bug (page out of range), not the document's doing
            conn.send(("bug", str(exc)))
            continue
        except MemoryError:
            conn.send(("error", _limit(page, f"{_STEP_NAMES[method]} needed more memory than the "
                                             "sandbox allows (limits.worker_memory_mb)", 0.0)))
            return
        conn.send(("ok", value))


def _send_pixels(conn: Any, rendered: RenderedPage) -> None:
    """Send a rendered page as its facts, then its RGB pixels in a memory
    file whose descriptor crosses the pipe."""
    data = rendered.image.tobytes()
    fd = os.memfd_create("longdoc-page", os.MFD_CLOEXEC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        meta = {"page": rendered.page, "dpi": rendered.dpi, "downscaled": rendered.downscaled,
                "size": rendered.image.size, "nbytes": len(data)}
        conn.send(("pixels", meta))
        reduction.send_handle(conn, fd, os.getppid())
    finally:
        os.close(fd)


_Row = tuple[str, float, float, float, float, float, int, float | None]


def _row(line: Line) -> _Row:
    """A line as plain values (pickling pydantic models costs ~3 ms a page)."""
    box = line.bbox
    return (line.text, box.x0, box.y0, box.x1, box.y1, line.confidence, line.page, line.pitch)


def _line(row: _Row) -> Line:
    """Back from :func:`_row`; the values were validated in the child."""
    text, x0, y0, x1, y1, confidence, page, pitch = row
    return Line.model_construct(text=text, bbox=BBox.model_construct(x0=x0, y0=y0, x1=x1, y1=y1),
                                confidence=confidence, page=page, pitch=pitch)
