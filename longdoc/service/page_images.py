"""Page images for people looking at a job (the console's page viewer).

``GET /v1/jobs/{id}/pages/{n}/image`` renders page ``n`` of the job's stored
original, on demand, in the same sandbox that opens every upload: the API
process never parses a document. Someone stepping through pages asks for
one page after another of the same document, so the last few opened
documents stay open (their sandbox child alive) for a short while:

    PageImages.jpeg(job, 7, 100)
        └─ an open SandboxedSource for the job, or a new one over a local
           copy of the original (OriginalCache: fetched once from the store)
              └─ render(7, 100) in the child → rotate like the result → JPEG

A source idle for ``IDLE_CLOSE_S`` is closed on the next request (and all of
them when the service stops); at most ``KEEP_OPEN`` are open at once. An open
source keeps its local copy pinned (its sandbox child reopens the file should
it die), so newer copies never push it out.

When its job is deleted (:meth:`PageImages.forget`) the source is closed and
the local copy removed; a request that was opening the document meanwhile
finds the job gone (``job_not_found``) and removes the copy it made, so
nothing of a deleted job stays in ``WORK/viewer-originals``.
"""

from __future__ import annotations

import io
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from longdoc.config import Settings
from longdoc.errors import JobNotFound
from longdoc.ingest.sandbox import SandboxedSource, open_sandboxed
from longdoc.jobs.models import Job
from longdoc.runner.finisher import fetch_original
from longdoc.storage.base import ObjectStore
from longdoc.storage.scratch import OriginalCache

KEEP_OPEN = 2
IDLE_CLOSE_S = 120.0
JPEG_QUALITY = 82
#: how long a deleted job's id is remembered, to turn away a request that
#: was opening its document when it was deleted (far longer than an open takes)
FORGOTTEN_S = 900.0


@dataclass
class _Open:
    """An open source, when it was last used, and the pin on its local copy."""

    source: SandboxedSource
    used: float
    pin: ExitStack = field(default_factory=ExitStack)

    def close(self) -> None:
        try:
            self.source.close()
        finally:
            self.pin.close()


class PageImages:
    """Renders pages of stored originals as JPEG (see the module docstring)."""

    def __init__(self, settings: Settings, store: ObjectStore, work_dir: str | Path) -> None:
        self.settings, self.store = settings, store
        self.originals = OriginalCache(Path(work_dir) / "viewer-originals", keep=KEEP_OPEN + 2)
        self._lock = threading.Lock()
        self._open: dict[str, _Open] = {}
        #: job id -> when it was forgotten (deleted), for FORGOTTEN_S
        self._forgotten: dict[str, float] = {}

    def page_count(self, job: Job) -> int:
        """Pages in the job's original."""
        return self._source(job).page_count

    def jpeg(self, job: Job, number: int, dpi: float, rotation: int = 0) -> bytes:
        """Page ``number`` (1-based) rendered at ``dpi`` (less when the page
        would pass ``limits.max_render_pixels``), turned ``rotation`` degrees
        clockwise (what the result did to read a scan upright, so its boxes
        fit), as JPEG bytes. Raises the page's render errors."""
        rendered = self._source(job).render(number, dpi)
        image = rendered.image if rendered.image.mode == "RGB" else rendered.image.convert("RGB")
        if rotation % 360:
            image = image.rotate(-rotation, expand=True)
        out = io.BytesIO()
        image.save(out, format="JPEG", quality=JPEG_QUALITY, optimize=True)
        rendered.image.close()
        return out.getvalue()

    def forget(self, job_id: str) -> None:
        """The job was deleted: close its source and remove its local copy;
        a request opening it now raises JobNotFound."""
        now = time.monotonic()
        with self._lock:
            self._forgotten = {jid: t for jid, t in self._forgotten.items() if now - t < FORGOTTEN_S}
            self._forgotten[job_id] = now
            entry = self._open.pop(job_id, None)
        if entry is not None:
            entry.close()
        self.originals.forget(job_id)

    def close(self) -> None:
        with self._lock:
            entries, self._open = list(self._open.values()), {}
        for entry in entries:
            entry.close()

    def _source(self, job: Job) -> SandboxedSource:
        now = time.monotonic()
        stale: list[_Open] = []
        with self._lock:
            for job_id, held in list(self._open.items()):
                if now - held.used > IDLE_CLOSE_S:
                    stale.append(self._open.pop(job_id))
            entry = self._open.get(job.id)
            if entry is not None:
                entry.used = now
        for old in stale:
            old.close()
        if entry is not None:
            return entry.source
        pin = ExitStack()
        try:
            path = pin.enter_context(
                self.originals.use(job.id, job.size_bytes, lambda dest: fetch_original(self.store, job, dest)))
            opened = _Open(open_sandboxed(path, self.settings.limits, name=job.filename), time.monotonic(), pin)
        except BaseException:
            pin.close()
            raise
        with self._lock:
            deleted = job.id in self._forgotten
            closing = [self._open.pop(job.id)] if job.id in self._open else []   # opened meanwhile
            if deleted:
                closing.append(opened)
            else:
                self._open[job.id] = opened
            by_use = sorted(self._open, key=lambda jid: self._open[jid].used)
            closing += [self._open.pop(jid) for jid in by_use[:-KEEP_OPEN]]
        for old in closing:
            old.close()
        if deleted:
            self.originals.forget(job.id)
            raise JobNotFound(f"No job {job.id!r}.")
        return opened.source
