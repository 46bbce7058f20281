"""What a job's tasks write to its record: progress page by page
(:class:`JobProgress`) and its end (:class:`JobFinisher`: final state,
figures, exports in the store, metrics, the webhook), the same on the
fleet and in the embedded server (:mod:`longdoc.runner.steps` calls them).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, BinaryIO

import psutil

from longdoc.config import Settings
from longdoc.errors import JobCancelled, LongdocError
from longdoc.jobs.models import Job
from longdoc.jobs.repo import JobRepo
from longdoc.jobs.states import JobState
from longdoc.model import DocumentStatus, Page
from longdoc.pipeline import ParseOptions, ParseResult, Pipeline
from longdoc.runner.metrics import Metrics
from longdoc.storage import keys
from longdoc.storage.base import ObjectStore

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
    """Pipeline progress → job row (pages done, per-page status)
    and metrics. Called after each checkpointed group with its pages."""

    def __init__(self, repo: JobRepo, job_id: str, metrics: Metrics | None) -> None:
        self.repo, self.job_id, self.metrics = repo, job_id, metrics
        self.done = 0

    def start(self, name: str, total_pages: int) -> None:
        self.repo.set_total(self.job_id, total_pages)

    def advance(self, pages: Sequence[Page], *, resumed: bool = False) -> None:
        self.done += len(pages)
        if self.metrics is not None and not resumed:
            for page in pages:
                self._observe(page)
        self.repo.progress(self.job_id, [_page_row(p) for p in pages])

    def _observe(self, page: Page) -> None:
        assert self.metrics is not None
        self.metrics.pages.labels(page.status.value, page.text_source.value if page.text_source else "none").inc()
        for flag in page.flags:
            self.metrics.page_flags.labels(flag.value).inc()
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
        "confidence": page.confidence,
        "flags": [flag.value for flag in page.flags],
    }


def job_options(job: Job) -> ParseOptions:
    """The pipeline options a job was accepted with (its plan among them)."""
    return ParseOptions.stored(job.options)


def fetch_original(store: ObjectStore, job: Job, dest: Path) -> Path:
    """Copy the job's uploaded bytes to ``dest`` (a fixed local name; the
    uploaded name is metadata)."""
    with store.open_read(keys.original_key(job.tenant, job.id)) as src, open(dest, "wb") as dst:
        _copy(src, dst)
    return dest


class JobFinisher:
    """Writes a job's end: its final state and figures in the database,
    its metrics, and (through ``announce``) its webhook."""

    def __init__(self, settings: Settings, repo: JobRepo, store: ObjectStore, metrics: Metrics | None,
                 announce: Callable[[str], None] | None = None) -> None:
        self.settings, self.repo, self.store, self.metrics = settings, repo, store, metrics
        self.announce = announce

    def parsed(self, job: Job, options: ParseOptions, result: ParseResult, pipeline: Pipeline, seconds: float,
               peak_rss: int) -> Finished:
        """The job parsed to the end: its exports are stored; record the
        outcome (``timings``: the page stages summed over its pages, and the
        run's own figures)."""
        for fmt, path in result.outputs.items():
            self.store.put_file(keys.export_key(job.tenant, job.id, fmt), path)
        engine = pipeline.engine_name_version(options)
        return self.finish(
            job, _STATE[result.status], seconds, peak_rss, error=_all_failed(result),
            failed_pages=result.failed_pages, review_pages=result.review_pages,
            timings={**{k: round(v, 4) for k, v in result.stage_seconds.items()}, **result.timings},
            engine=engine[0], engine_version=engine[1],
        )

    def stopped(self, job: Job, exc: BaseException, seconds: float, peak_rss: int) -> Finished:
        """The job ended by ``exc``: cancelled, a typed error, or a crash."""
        if isinstance(exc, JobCancelled):
            return self.finish(job, JobState.CANCELLED, seconds, peak_rss, error=None)
        if isinstance(exc, LongdocError):
            return self.finish(job, JobState.FAILED, seconds, peak_rss, error=exc.to_dict())
        err = {"code": "internal_error", "message": f"{type(exc).__name__} while processing the job.",
               "hint": LongdocError.hint, "retryable": True, "context": {}}
        return self.finish(job, JobState.FAILED, seconds, peak_rss, error=err)

    def finish(self, job: Job, state: JobState, seconds: float, peak_rss: int, **fields: Any) -> Finished:
        expires = datetime.now(UTC) + timedelta(hours=self.settings.service.retention_hours)
        self.repo.finish(job.id, state, peak_rss_bytes=peak_rss, expires_at=expires,
                         stored_bytes=self._stored_bytes(job.tenant, job.id), **fields)
        if self.metrics is not None:
            self.metrics.jobs_finished.labels(state.value).inc()
            self.metrics.stage_seconds.labels("job").observe(seconds)
        log.info("job finished", extra={"job_id": job.id, "tenant": job.tenant, "state": state.value,
                                        "seconds": round(seconds, 3)})
        if self.announce is not None:
            self.announce(job.id)
        return Finished(job.id, state)

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


class PeakRss:
    """Peak resident memory of this process and its children (OCR workers),
    sampled between groups."""

    def __init__(self) -> None:
        self.peak = 0
        self.sample()

    def sample(self) -> None:
        self.peak = max(self.peak, _tree_rss())


#: how long a measure of the process tree's memory stands for every task of
#: the process (finding the children reads every process's ``/proc`` entry:
#: done between each page group of each task, it cost a born-digital
#: 600-page job a tenth of its time)
RSS_SAMPLE_S = 0.5
_rss_lock = threading.Lock()
_rss_last: tuple[float, int] = (float("-inf"), 0)


def _tree_rss() -> int:
    """This process's and its children's resident memory, measured at most
    every :data:`RSS_SAMPLE_S`."""
    global _rss_last
    with _rss_lock:
        at, total = _rss_last
        if time.monotonic() - at < RSS_SAMPLE_S:
            return total
        proc = psutil.Process()
        total = proc.memory_info().rss
        for child in proc.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                total += child.memory_info().rss
        _rss_last = (time.monotonic(), total)
        return total


def _copy(src: BinaryIO, dst: BinaryIO, chunk: int = 1 << 20) -> None:
    while block := src.read(chunk):
        dst.write(block)
