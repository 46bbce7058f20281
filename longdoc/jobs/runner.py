"""Run one job: the same pipeline as the CLI, with the database as the
source of truth and the object store holding input, checkpoint and exports.

``run(job_id)`` is short-lived and safe to call twice: it starts the job
only if it is still queued (an atomic conditional update), resumes from the
job's checkpoint in the store, and stops between groups on cancel, timeout
or shutdown. Every outcome is written to the job row; an accepted job never
vanishes (an unexpected error fails it with ``internal_error``; a shutdown
puts it back in the queue).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import psutil

from longdoc.config import Settings
from longdoc.errors import JobCancelled, JobStopped, JobTimedOut, LongdocError, ShuttingDown
from longdoc.jobs.metrics import Metrics
from longdoc.jobs.repo import JobRepo
from longdoc.jobs.states import JobState
from longdoc.model import DocumentStatus, Page
from longdoc.pipeline import ParseOptions, ParseResult, Pipeline
from longdoc.storage import keys
from longdoc.storage.base import ObjectStore
from longdoc.storage.checkpoint import StoreCheckpoint
from longdoc.storage.scratch import ScratchDir

log = logging.getLogger("longdoc.jobs")

_STATE = {
    DocumentStatus.SUCCEEDED: JobState.SUCCEEDED,
    DocumentStatus.PARTIAL: JobState.PARTIAL,
    DocumentStatus.FAILED: JobState.FAILED,
}


@dataclass
class Finished:
    """What a finished job means for the caller (e.g. to send a webhook)."""

    job_id: str
    state: JobState


class JobProgress:
    """Pipeline progress → job row (pages done, per-page status, heartbeat)
    and metrics. Called after each checkpointed group with its pages."""

    def __init__(self, repo: JobRepo, job_id: str, metrics: Metrics | None) -> None:
        self.repo, self.job_id, self.metrics = repo, job_id, metrics
        self.done = 0
        #: seconds per page stage (render, recognize, layout, text_layer),
        #: summed over the job's pages, resumed ones included
        self.stage_seconds: dict[str, float] = {}

    def start(self, name: str, total_pages: int) -> None:
        self.repo.set_total(self.job_id, total_pages)

    def advance(self, pages: Sequence[Page], *, resumed: bool = False) -> None:
        self.done += len(pages)
        for page in pages:
            for stage, seconds in page.timings.items():
                self.stage_seconds[stage] = self.stage_seconds.get(stage, 0.0) + seconds
            if self.metrics is not None and not resumed:
                self._observe(page)
        self.repo.progress(self.job_id, self.done, [_page_row(p) for p in pages])

    def _observe(self, page: Page) -> None:
        assert self.metrics is not None
        self.metrics.pages.labels(page.status.value, page.text_source.value if page.text_source else "none").inc()
        for stage, seconds in page.timings.items():
            self.metrics.stage_seconds.labels(stage).observe(seconds)

    def finish(self) -> None:
        pass


def _page_row(page: Page) -> dict:
    return {
        "page": page.number,
        "status": page.status.value,
        "error": page.error.model_dump(mode="json") if page.error else None,
        "text_source": page.text_source.value if page.text_source else None,
        "seconds": round(sum(page.timings.values()), 4),
    }


class JobRunner:
    def __init__(
        self,
        settings: Settings,
        repo: JobRepo,
        store: ObjectStore,
        pipeline: Pipeline,
        scratch: ScratchDir,
        metrics: Metrics | None = None,
        worker_id: str = "embedded",
    ) -> None:
        self.settings, self.repo, self.store, self.pipeline = settings, repo, store, pipeline
        self.scratch = scratch
        self.metrics = metrics
        self.worker_id = worker_id
        self.shutting_down = threading.Event()

    def run(self, job_id: str) -> Finished | None:
        """Run ``job_id`` if it is still queued; returns its final state, or
        None when it was not started (taken elsewhere, cancelled) or was put
        back in the queue (shutdown)."""
        job = self.repo.start(job_id, self.worker_id)
        if job is None:
            return None
        t0 = time.monotonic()
        deadline = t0 + self.settings.service.timeout_seconds
        tenant = job.tenant
        options = ParseOptions(**{**job.options, "formats": tuple(job.options.get("formats", ("md", "json", "txt")))})
        checkpoint = StoreCheckpoint(self.store, keys.checkpoint_prefix(tenant, job_id))
        progress = JobProgress(self.repo, job_id, self.metrics)
        rss = _PeakRss()

        def control() -> None:
            rss.sample()
            if self.shutting_down.is_set():
                raise ShuttingDown("The server is shutting down; the job goes back to the queue.")
            if self.repo.is_cancel_requested(job_id):
                raise JobCancelled("The job was cancelled.")
            if time.monotonic() > deadline:
                raise JobTimedOut(f"The job ran past its {self.settings.service.timeout_seconds} s limit.")
            self.repo.heartbeat(job_id)

        log.info("job started", extra={"job_id": job_id, "tenant": tenant, "attempt": job.attempts})
        try:
            with self.scratch.job(job_id) as tmp:
                original = tmp / "original"   # a fixed local name; the uploaded name is metadata
                with self.store.open_read(keys.original_key(tenant, job_id)) as src, open(original, "wb") as dst:
                    _copy(src, dst)
                result = self.pipeline.parse(
                    original, tmp / "out", options, progress=progress, checkpoint=checkpoint,
                    stem="result", control=control, name=job.filename, owner=tenant,
                )
                for fmt, path in result.outputs.items():
                    self.store.put_file(keys.export_key(tenant, job_id, fmt), path)
        except ShuttingDown:
            self.repo.requeue(job_id)
            log.info("job requeued for shutdown", extra={"job_id": job_id, "tenant": tenant})
            return None
        except JobCancelled:
            return self._finish(job_id, tenant, JobState.CANCELLED, t0, rss, error=None)
        except (JobStopped, LongdocError) as exc:
            return self._finish(job_id, tenant, JobState.FAILED, t0, rss, error=exc.to_dict())
        except Exception as exc:  # never lose an accepted job
            log.exception("job crashed", extra={"job_id": job_id, "tenant": tenant})
            err = {"code": "internal_error", "message": f"{type(exc).__name__} while processing the job.",
                   "hint": LongdocError.hint, "retryable": True, "context": {}}
            return self._finish(job_id, tenant, JobState.FAILED, t0, rss, error=err)
        rss.sample()
        engine = self.pipeline.engine_name_version(options)
        return self._finish(
            job_id, tenant, _STATE[result.status], t0, rss, error=_all_failed(result),
            failed_pages=result.failed_pages,
            timings={**{k: round(v, 4) for k, v in progress.stage_seconds.items()}, **result.timings},
            engine=engine[0], engine_version=engine[1],
        )

    def _finish(self, job_id: str, tenant: str, state: JobState, t0: float, rss: _PeakRss, **fields) -> Finished:
        seconds = time.monotonic() - t0
        expires = datetime.now(UTC) + timedelta(hours=self.settings.service.retention_hours)
        self.repo.finish(job_id, state, peak_rss_bytes=rss.peak, expires_at=expires,
                         stored_bytes=self._stored_bytes(tenant, job_id), **fields)
        if self.metrics is not None:
            self.metrics.jobs_finished.labels(state.value).inc()
            self.metrics.stage_seconds.labels("job").observe(seconds)
        log.info("job finished", extra={"job_id": job_id, "tenant": tenant, "state": state.value,
                                        "seconds": round(seconds, 3)})
        return Finished(job_id, state)

    def _stored_bytes(self, tenant: str, job_id: str) -> int:
        """What the job now holds in the store (its share of the tenant quota)."""
        prefix = keys.job_prefix(tenant, job_id)
        total = 0
        for key in self.store.list(prefix):
            try:
                total += self.store.size(key)
            except LongdocError:  # deleted meanwhile
                continue
        return total


def _all_failed(result: ParseResult) -> dict | None:
    """The job's error when every page failed: the first page's, saying so."""
    if result.status is not DocumentStatus.FAILED or not result.errors:
        return None
    first = result.errors[0]
    return {"code": first.code, "message": f"Every page failed ({len(result.failed_pages)}); page "
            f"{first.page}: {first.message}", "hint": first.hint, "retryable": first.retryable,
            "context": {"failed_pages": len(result.failed_pages)}}


class _PeakRss:
    """Peak resident memory of this process and its children (OCR workers),
    sampled between groups."""

    def __init__(self) -> None:
        self.peak = 0
        self.sample()

    def sample(self) -> None:
        proc = psutil.Process()
        total = proc.memory_info().rss
        for child in proc.children(recursive=True):
            try:
                total += child.memory_info().rss
            except psutil.Error:
                pass
        self.peak = max(self.peak, total)


def _copy(src, dst, chunk: int = 1 << 20) -> None:
    while block := src.read(chunk):
        dst.write(block)
