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

The child, its cap, the deadline and the request/reply framing are
:class:`longdoc.runtime.capped.CappedChild`'s; this module holds what the
child does with a document (:class:`_Document`) and the errors' wording.

A rendered page's pixels travel in a memory file (``memfd``) whose
descriptor is passed over the pipe, not through it: one copy on each side
instead of pickling 12 MB per A4 page at 200 dpi (measured: 78 → 43 ms a
render round trip, against 23 ms in process).

The child dies with the process that owns it (:func:`longdoc.runtime.procs.die_with`)
and the memory it used goes back to the system with it. One source serves
one thread at a time (a lock guards the pipe).
"""

from __future__ import annotations

import mmap
import os
import threading
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from PIL import Image

from longdoc.config import LimitSettings
from longdoc.errors import ConfigError, LongdocError, ResourceLimit
from longdoc.ingest.open import open_document
from longdoc.ingest.source import DocumentSource, RenderedPage
from longdoc.model import BBox, Line
from longdoc.runtime import capped, procs

_MB = 1024 * 1024
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
        self._child = capped.CappedChild(_Document, (str(self.path), self.name, limits.model_dump()),
                                         memory_bytes=limits.worker_memory_mb * _MB,
                                         replied=(LongdocError, ValueError), name="longdoc-sandbox")
        self._closed = False
        info = self._open(page=None)
        self.media_type: str = info["media_type"]
        self.sha256: str = info["sha256"]
        self.page_count: int = info["page_count"]
        self._labels: list[str | None] | None = info.get("page_labels")

    # -- DocumentSource ----------------------------------------------------

    def page_size(self, page: int) -> tuple[float, float]:
        return self._call("page_size", page)

    def render(self, page: int, dpi: float) -> RenderedPage:
        return _pixels(self._call("render", page, dpi))

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
            self._child.close()

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
        return self._child.pid

    # -- the child's life --------------------------------------------------

    def _open(self, page: int | None) -> dict[str, Any]:
        """Open the document in a fresh child; returns its facts. On any
        failure that child is ended (the next step starts another)."""
        try:
            return self._ask(("open",), page, "opening the document")
        except BaseException:
            self._child.close()
            raise

    def _call(self, method: str, page: int, *args: Any) -> Any:
        with self._lock:
            if self._closed:
                raise ValueError(f"{self!r} is closed")
            if self._child.pid is None:
                self._open(page)  # the last child died: a fresh one reopens the document
            return self._ask((method, page, *args), page, _STEP_NAMES[method])

    def _ask(self, request: tuple[Any, ...], page: int | None, step: str) -> Any:
        """The child's answer to ``request``; raises what the child raised,
        or ResourceLimit when it ran out of time or memory, or died."""
        return self._child.call(request, deadline_s=self.limits.worker_timeout_seconds,
                                failed=lambda overrun: self._overrun(page, step, overrun))

    def _overrun(self, page: int | None, step: str, overrun: capped.Overrun) -> ResourceLimit:
        if overrun.cause == "deadline":
            what = f"{step} took longer than {overrun.deadline_s:g} s (limits.worker_timeout_seconds)"
        else:
            what = (f"{step} needed more memory than the sandbox allows (limits.worker_memory_mb = "
                    f"{self.limits.worker_memory_mb}; {overrun.how})")
        return _limit(page, what, overrun.seconds)


def _pixels(reply: capped.WithFd) -> RenderedPage:
    """The rendered page whose pixels came as a memory file descriptor."""
    meta = reply.value
    try:
        with mmap.mmap(reply.fd, meta["nbytes"], prot=mmap.PROT_READ) as pixels:
            image = Image.frombytes("RGB", meta["size"], pixels)  # type: ignore[arg-type]  # mmap: a buffer, copied
    finally:
        os.close(reply.fd)
    return RenderedPage(page=meta["page"], image=image, dpi=meta["dpi"], downscaled=meta["downscaled"])


_STEP_NAMES = {"page_size": "reading the page's size", "render": "rendering the page",
               "text_layer": "reading the page's text"}


def _limit(page: int | None, what: str, seconds: float) -> ResourceLimit:
    if page is None:
        return ResourceLimit(f"The document: {what}.", seconds=round(seconds, 2))
    return ResourceLimit(f"Page {page}: {what}.", page=page, seconds=round(seconds, 2))


# --- the child ------------------------------------------------------------------


class _Document:
    """The sandbox child's side (built by :class:`~longdoc.runtime.capped.CappedChild`
    in the child): ``("open",)`` opens the document and answers its facts;
    ``(method, page, *args)`` answers one step. A caller's mistake (a page
    out of range) comes back as a plain ValueError; a rendered page as its
    facts with its pixels in a memory file (:func:`_pixels_out`)."""

    def __init__(self, path: str, name: str, limits: dict[str, Any]) -> None:
        self.path, self.name, self.limits = path, name, LimitSettings(**limits)
        self.source: DocumentSource | None = None

    def __call__(self, request: tuple[Any, ...]) -> Any:
        method, *rest = request
        if method == "open":
            return self._open()
        if method not in _METHODS or self.source is None:
            raise ValueError(f"unknown sandbox method {method!r} (or no document open)")
        page, *args = rest
        try:
            value = getattr(self.source, method)(page, *args)
        except ValueError as exc:  # a caller bug (page out of range), not the document's doing
            raise ValueError(str(exc)) from None
        if method == "render":
            return _pixels_out(value)
        if method == "text_layer" and value is not None:
            return [_row(line) for line in value]
        return value

    def _open(self) -> dict[str, Any]:
        self.source = open_document(self.path, self.limits, name=self.name)
        labels = getattr(self.source, "page_labels", None)   # a PDF's /PageLabels, once (None: none)
        return {"media_type": self.source.media_type, "sha256": self.source.sha256,
                "page_count": self.source.page_count, "page_labels": labels() if labels else None}

    def close(self) -> None:
        if self.source is not None:
            self.source.close()


def _pixels_out(rendered: RenderedPage) -> capped.WithFd:
    """A rendered page as its facts, with its RGB pixels in a memory file
    whose descriptor crosses the pipe."""
    data = rendered.image.tobytes()
    fd = os.memfd_create("longdoc-page", os.MFD_CLOEXEC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except BaseException:
        os.close(fd)
        raise
    meta = {"page": rendered.page, "dpi": rendered.dpi, "downscaled": rendered.downscaled,
            "size": rendered.image.size, "nbytes": len(data)}
    return capped.WithFd(meta, fd)


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
