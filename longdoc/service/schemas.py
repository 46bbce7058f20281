"""Request and response bodies (the ``Create`` / ``Public`` families)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from longdoc.export import DEFAULT_FORMATS


class JobOptions(BaseModel):
    """The ``options`` JSON field of a submit."""

    model_config = ConfigDict(extra="forbid")

    formats: list[Literal["md", "json", "txt", "pdf", "chunks", "docling"]] = Field(
        default_factory=lambda: list(DEFAULT_FORMATS), min_length=1)
    pages: str | None = Field(default=None, max_length=1000, description="1-based pages, e.g. 1-20,35")
    ocr: Literal["auto", "force", "off"] | None = None
    engine: str | None = Field(default=None, max_length=64)
    dpi: int | None = Field(default=None, ge=50, le=600)
    regions: bool | None = Field(default=None, description="layout and table models (tables with cells, "
                                 "figures, captions, furniture); default inference.regions")
    priority: int = Field(default=0, ge=0, le=9)
    callback_url: str | None = Field(default=None, max_length=2048)


class ErrorBody(BaseModel):
    code: str
    message: str
    hint: str | None = None
    retryable: bool = False
    context: dict[str, Any] = Field(default_factory=dict)


class ErrorResponse(BaseModel):
    error: ErrorBody


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
    queue_position: int | None = None
    priority: int = 0
    lane: str
    options: dict[str, Any]
    engine: str | None = None
    engine_version: str | None = None
    timings: dict[str, float] = Field(default_factory=dict)
    peak_rss_bytes: int | None = None
    attempts: int = 0
    cancel_requested: bool = Field(default=False, description="a cancel was asked; the job stops after its current group")
    error: dict[str, Any] | None = None
    links: JobLinks


class JobList(BaseModel):
    items: list[JobPublic]
    next: str | None = None


class PageSummary(BaseModel):
    number: int = Field(description="1-based page number in the source document")
    status: Literal["ok", "failed", "pending"]
    error: dict[str, Any] | None = Field(default=None, description="code and message of a failed page")
    text_source: str | None = None
    seconds: float | None = None


class PageList(BaseModel):
    """Every selected page of a job with its outcome so far."""

    job_id: str
    state: str
    pages_total: int | None = None
    pages: list[PageSummary]


class KeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tenant: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,62}$")
    rate_limit_per_minute: int | None = Field(default=None, ge=1, le=100_000)


class KeyPublic(BaseModel):
    id: str
    tenant: str
    key_prefix: str
    rate_limit_per_minute: int | None
    created_at: datetime
    revoked_at: datetime | None = None
    last_used_at: datetime | None = None


class KeyCreated(KeyPublic):
    key: str = Field(description="shown once")
    webhook_secret: str = Field(description="signs this key's webhooks; shown once")


class Readiness(BaseModel):
    ready: bool
    checks: dict[str, bool | int | str]


def job_public(job: Any, queue_position: int | None = None) -> JobPublic:
    """The client's view of a job record (``queue_position`` for a queued one)."""
    base = f"/v1/jobs/{job.id}"
    return JobPublic(
        id=job.id, state=job.state, created_at=job.created_at, started_at=job.started_at,
        finished_at=job.finished_at, expires_at=job.expires_at, filename=job.filename,
        media_type=job.media_type, size_bytes=job.size_bytes, pages_total=job.pages_total,
        pages_done=job.pages_done or 0, failed_pages=list(job.failed_pages or []), queue_position=queue_position,
        priority=job.priority, lane=job.lane, options=dict(job.options or {}), engine=job.engine,
        engine_version=job.engine_version, timings=dict(job.timings or {}), peak_rss_bytes=job.peak_rss_bytes,
        attempts=job.attempts or 0, cancel_requested=bool(job.cancel_requested), error=job.error,
        links=JobLinks(self=base, events=f"{base}/events", result=f"{base}/result", pages=f"{base}/pages"),
    )
