"""Request and response bodies (the ``Create`` / ``Public`` families)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from longdoc.config import FurnitureMode, OcrMode, Profile
from longdoc.export.formats import DEFAULT_FORMATS, ExportFormat
from longdoc.jobs.public import JobLinks, JobPublic, job_public
from longdoc.jobs.repo import KeyState
from longdoc.model import PageFlag
from longdoc.pipeline.options import option_field

__all__ = ["JobLinks", "JobPublic", "job_public"]  # the job's public view lives with the jobs (webhooks send it)


class JobOptions(BaseModel):
    """The ``options`` JSON field of a submit: the options of
    :class:`~longdoc.pipeline.options.ParseOptions` a request may set
    (their bounds, choices and descriptions are taken from there; null: the
    service's setting), and what only a request has (``priority``,
    ``callback_url``). A job's page groups (``page_chunk_size``,
    ``chunk_overlap``) are the service's: they are not a request's."""

    model_config = ConfigDict(extra="forbid")

    formats: tuple[ExportFormat, ...] = option_field("formats", default=DEFAULT_FORMATS)
    pages: str | None = option_field("pages")
    ocr: OcrMode | None = option_field("ocr", unset="inference.ocr")
    engine: str | None = option_field("engine", unset="inference.engine")
    dpi: int | None = option_field("dpi", unset="inference.dpi")
    profile: Profile | None = option_field("profile", unset="inference.profile")
    regions: bool | None = option_field("regions", unset="inference.regions")
    furniture: FurnitureMode | None = option_field("furniture", unset="export.furniture")
    priority: int = Field(default=0, ge=0, le=9, description="0-9: a higher priority runs first")
    callback_url: str | None = Field(default=None, max_length=2048, description="the job.finished webhook's URL")


class ErrorBody(BaseModel):
    code: str
    message: str
    hint: str | None = None
    retryable: bool = False
    context: dict[str, Any] = Field(default_factory=dict)


class ErrorResponse(BaseModel):
    error: ErrorBody


class JobList(BaseModel):
    items: list[JobPublic]
    next: str | None = None


class PageSummary(BaseModel):
    number: int = Field(description="1-based page number in the source document")
    status: Literal["ok", "failed", "pending"]
    error: dict[str, Any] | None = Field(default=None, description="code and message of a failed page")
    text_source: str | None = None
    seconds: float | None = None
    confidence: float | None = Field(default=None, description="the page's confidence (Page.confidence): the "
                                     "mean of its OCR lines', weighted by characters; null without OCR lines")
    flags: list[PageFlag] = Field(default_factory=list, description="the page's flags (Page.flags)")
    review: bool = Field(default=False, description="a page to check by eye (one of its flags is fallback, "
                         "truncated, repetition or low_confidence)")


class PageList(BaseModel):
    """Every selected page of a job with its outcome so far."""

    job_id: str
    state: str
    pages_total: int | None = None
    pages: list[PageSummary]


DURATION_DESCRIPTION = "a duration: a whole number and a unit, e.g. 90d, 12h, 30m, 45s, or 1d12h"


class KeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tenant: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,62}$")
    rate_limit_per_minute: int | None = Field(default=None, ge=1, le=100_000)
    expires_in: str | None = Field(default=None, max_length=64, examples=["90d"],
                                   description="the key stops working this long after its creation "
                                   f"({DURATION_DESCRIPTION}); null: never")


class KeyRotate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    grace: str | None = Field(default=None, max_length=64, examples=["7d"],
                              description=f"how long the old key keeps working ({DURATION_DESCRIPTION}; 0s: it stops "
                              "now); null: service.key_rotation_grace")
    expires_in: str | None = Field(default=None, max_length=64, examples=["90d"],
                                   description=f"the new key's lifetime ({DURATION_DESCRIPTION}); null: as long as the "
                                   "old key was made to last (never, for a key without an expiry)")


class KeyPublic(BaseModel):
    id: str
    tenant: str
    key_prefix: str
    rate_limit_per_minute: int | None
    created_at: datetime
    revoked_at: datetime | None = None
    last_used_at: datetime | None = None
    expires_at: datetime | None = Field(default=None, description="when the key stops working (null: never); "
                                        "a rotated key's is the end of its grace period")
    replaced_by: str | None = Field(default=None, description="the id of the key that replaced it (rotation)")
    state: KeyState = Field(description="active, expired or revoked, now")


class KeyCreated(KeyPublic):
    key: str = Field(description="shown once")
    webhook_secret: str = Field(description="signs this key's webhooks; shown once (a rotation keeps it)")


class KeyRotated(KeyCreated):
    replaces: KeyPublic = Field(description="the old key, now expiring at the end of its grace period")


class AuditEventPublic(BaseModel):
    """One audit record (:func:`longdoc.audit.trail.audit_public`)."""

    id: int
    at: datetime
    tenant: str | None = Field(description="the caller's tenant; for an admin action the tenant acted on")
    key_id: str | None = Field(description="the caller's key id (never the key); for an admin action the key "
                               "acted on")
    client: str | None = Field(description="the client's address")
    action: str = Field(description="job.submit, job.status, …, admin.keys.create, …, auth.failed")
    job_id: str | None
    status: int = Field(description="the HTTP status answered")
    error_code: str | None = Field(description="the error's code when the answer was an error")
    request_id: str | None = Field(description="the request's X-Request-ID, when it sent a well-formed one")


class Readiness(BaseModel):
    ready: bool
    checks: dict[str, bool | int | str]


class MetaFormat(BaseModel):
    name: str
    label: str
    file_suffix: str = Field(description="the export's file name is the document's stem + this")
    media_type: str
    default: bool = Field(description="written when a job names no formats")


class Meta(BaseModel):
    version: str
    formats: list[MetaFormat]
    states: list[str]
    terminal_states: list[str]
    result_states: list[str] = Field(description="states whose exports can be downloaded")
    block_kinds: list[str]
    engines: list[str]
    options: dict[str, Any] = Field(description="the JSON schema of a job's `options` (JobOptions): each "
                                    "option's type, choices (enum), bounds (minimum, maximum, maxLength), default "
                                    "and description; the console builds its form from it")
