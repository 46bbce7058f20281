"""A job as clients see it: the body of ``GET /v1/jobs/{id}`` and of the
``job.finished`` webhook (built here so that whatever finishes a job, the
service or a fleet worker, sends the same view without importing the
service)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from longdoc.webhooks.outbox import JOB_FINISHED


class JobLinks(BaseModel):
    self: str
    events: str
    result: str
    pages: str


class JobPublic(BaseModel):
    id: str
    state: str
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    expires_at: datetime | None = None
    filename: str
    media_type: str | None = None
    size_bytes: int | None = None
    pages_total: int | None = None
    pages_done: int = 0
    failed_pages: list[int] = Field(default_factory=list)
    review_pages: list[int] = Field(default_factory=list, description="pages a person should check by eye "
                                    "(flagged fallback, truncated, repetition or low_confidence), once the job "
                                    "has finished; the JSON result's review_pages")
    queue_position: int | None = None
    priority: int = 0
    lane: str
    options: dict[str, Any]
    engine: str | None = None
    engine_version: str | None = None
    timings: dict[str, float] = Field(default_factory=dict)
    peak_rss_bytes: int | None = None
    attempts: int = Field(default=0, description="times the job's work was taken up again after an interruption "
                          "(a restart, a dead worker, a transient fault): the most any one of its tasks was rerun")
    cancel_requested: bool = Field(default=False, description="a cancel was asked; the job stops after its current group")
    error: dict[str, Any] | None = None
    links: JobLinks


def job_public(job: Any, queue_position: int | None = None) -> JobPublic:
    """The client's view of a job record (``queue_position`` for a queued one)."""
    base = f"/v1/jobs/{job.id}"
    return JobPublic(
        id=job.id, state=job.state, created_at=job.created_at, started_at=job.started_at,
        finished_at=job.finished_at, expires_at=job.expires_at, filename=job.filename,
        media_type=job.media_type, size_bytes=job.size_bytes, pages_total=job.pages_total,
        pages_done=job.pages_done or 0, failed_pages=list(job.failed_pages or []),
        review_pages=list(job.review_pages or []), queue_position=queue_position,
        priority=job.priority, lane=job.lane, options=dict(job.options or {}), engine=job.engine,
        engine_version=job.engine_version, timings=dict(job.timings or {}), peak_rss_bytes=job.peak_rss_bytes,
        attempts=job.attempts or 0, cancel_requested=bool(job.cancel_requested), error=job.error,
        links=JobLinks(self=base, events=f"{base}/events", result=f"{base}/result", pages=f"{base}/pages"),
    )


def finished_payload(job: Any) -> dict[str, Any]:
    """The ``job.finished`` webhook's body for a job record."""
    return {"event": JOB_FINISHED, "job": job_public(job).model_dump(mode="json")}
