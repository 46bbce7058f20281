"""Database records: API keys, jobs, per-page results, webhook deliveries, the audit trail.

SQLAlchemy 2 declarative models, portable between SQLite and PostgreSQL:
ids are uuid4 hex strings, states and lanes plain strings (validated in
Python, see :mod:`longdoc.jobs.states`), structured fields JSON, and every
timestamp a timezone-aware UTC ``datetime`` (:class:`UTCDateTime`; SQLite,
which has no time zones, stores naive UTC). The schema itself is created by
the Alembic migrations in ``longdoc/jobs/migrations``; a test checks that
they match these models.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from longdoc.errors import InvalidTime

MAX_IDEMPOTENCY_KEY = 255
LANES = ("short", "long")
PAGE_STATUSES = ("ok", "failed")


def new_id() -> str:
    return uuid.uuid4().hex


def utcnow() -> datetime:
    return datetime.now(UTC)


def parse_utc(text: str) -> datetime:
    """An ISO 8601 date or time as an aware UTC datetime: ``2026-12-05``
    (midnight), ``2026-12-05T14:30``, ``…Z`` or ``…+01:00``; a date alone or
    a time without a zone is taken as UTC. Raises InvalidTime."""
    try:
        value = datetime.fromisoformat(text.strip())
    except (ValueError, AttributeError):
        raise InvalidTime(f"Not an ISO 8601 date or time: {text!r}.") from None
    if value.tzinfo is None or value.utcoffset() is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00+01:00
        raise InvalidTime(f"{text!r} is out of range in UTC.") from None


class UTCDateTime(TypeDecorator[datetime]):
    """``DateTime(timezone=True)`` that only accepts aware datetimes and
    always returns them in UTC (also on SQLite, which drops the zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"naive datetime {value!r}: longdoc stores timezone-aware UTC times")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


# Named constraints, so migrations (and SQLite's batch mode) can address them.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {datetime: UTCDateTime, dict[str, Any]: JSON, list[int]: JSON, list[str]: JSON}


class ApiKey(Base):
    """An API key bound to one tenant. Only the sha256 of the key is kept;
    the plaintext is shown once, at creation."""

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    tenant: Mapped[str] = mapped_column(String(63), index=True)
    key_prefix: Mapped[str] = mapped_column(String(16))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    webhook_secret: Mapped[str] = mapped_column(String(128))
    rate_limit_per_minute: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    revoked_at: Mapped[datetime | None]
    last_used_at: Mapped[datetime | None]
    #: when the key stops working (None: never); a rotated key's is the end of its grace period
    expires_at: Mapped[datetime | None]
    #: the key that replaced it (``longdoc keys rotate``)
    replaced_by: Mapped[str | None] = mapped_column(String(32))


class Job(Base):
    """One submitted document and everything known about its processing."""

    __tablename__ = "jobs"
    __table_args__ = (
        UniqueConstraint("tenant", "idempotency_key", name="uq_jobs_tenant_idempotency_key"),
        Index("ix_jobs_tenant_created", "tenant", "created_at"),
        Index("ix_jobs_tenant_sha256", "tenant", "sha256"),
        Index("ix_jobs_dispatch", "state", "priority", "queued_at"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    tenant: Mapped[str] = mapped_column(String(63))  # indexed by ix_jobs_tenant_created
    api_key_id: Mapped[str | None] = mapped_column(String(32), ForeignKey("api_keys.id"))
    state: Mapped[str] = mapped_column(String(16))  # indexed by ix_jobs_dispatch
    priority: Mapped[int] = mapped_column(Integer, default=0)
    lane: Mapped[str] = mapped_column(String(8), default="short")
    filename: Mapped[str] = mapped_column(Text)
    media_type: Mapped[str] = mapped_column(String(127))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))
    options: Mapped[dict[str, Any]] = mapped_column(default=dict)
    options_hash: Mapped[str] = mapped_column(String(64))
    idempotency_key: Mapped[str | None] = mapped_column(String(MAX_IDEMPOTENCY_KEY))
    callback_url: Mapped[str | None] = mapped_column(Text)
    pages_total: Mapped[int | None] = mapped_column(Integer)
    pages_done: Mapped[int] = mapped_column(Integer, default=0)
    failed_pages: Mapped[list[int]] = mapped_column(default=list)
    #: pages a person should check by eye (the JSON export's ``review_pages``), set when the job finishes
    review_pages: Mapped[list[int]] = mapped_column(default=list, server_default="[]")
    error: Mapped[dict[str, Any] | None]
    engine: Mapped[str | None] = mapped_column(String(64))
    engine_version: Mapped[str | None] = mapped_column(String(255))
    timings: Mapped[dict[str, Any]] = mapped_column(default=dict)
    peak_rss_bytes: Mapped[int | None] = mapped_column(BigInteger)
    #: the most times one of its tasks was run again (a dead worker, a shutdown, a transient fault)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    #: bytes stored for the job (original, then checkpoint and exports): the tenant quota sums these
    stored_bytes: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    queued_at: Mapped[datetime | None]
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    expires_at: Mapped[datetime | None]
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)


class JobPage(Base):
    """The outcome of one page of a job (1-based ``page``)."""

    __tablename__ = "job_pages"

    job_id: Mapped[str] = mapped_column(String(32), ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    page: Mapped[int] = mapped_column(Integer, primary_key=True)
    status: Mapped[str] = mapped_column(String(8))
    error: Mapped[dict[str, Any] | None]
    text_source: Mapped[str | None] = mapped_column(String(16))
    seconds: Mapped[float | None] = mapped_column(Float)
    confidence: Mapped[float | None] = mapped_column(Float)
    #: the page's flags (``Page.flags``); None on a row written before flags existed
    flags: Mapped[list[str] | None]


class WebhookDelivery(Base):
    """One attempt to deliver a job's webhook."""

    __tablename__ = "webhook_deliveries"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    job_id: Mapped[str] = mapped_column(String(32), ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    url: Mapped[str] = mapped_column(Text)
    attempt: Mapped[int] = mapped_column(Integer)
    status_code: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    duration_ms: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class JobTask(Base):
    """One unit of a job's work (``whole``, ``ingest``, ``render:000003``,
    ``group:000003``, ``assemble``), on the fleet or in the embedded server:
    the database's record of it, so a lost message or a dead worker is
    found and the task run again.

    ``state``: queued → running → done (or failed). ``lease`` is the token of
    the run that holds it; a run whose lease was taken back (its heartbeat
    went stale and the reconciler queued the task again) stops."""

    __tablename__ = "job_tasks"
    __table_args__ = (Index("ix_job_tasks_state_queue", "state", "queue", "enqueued_at"),)

    job_id: Mapped[str] = mapped_column(String(32), ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    queue: Mapped[str] = mapped_column(String(16))
    state: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    #: times the reconciler took it back from a silent worker (``service.max_attempts`` caps these)
    takeovers: Mapped[int] = mapped_column(Integer, default=0)
    worker_id: Mapped[str | None] = mapped_column(String(128))
    lease: Mapped[str | None] = mapped_column(String(32))
    error: Mapped[dict[str, Any] | None]
    enqueued_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None]
    heartbeat_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]


class WebhookOutbox(Base):
    """A webhook to deliver (the durable outbox): written in the same
    place as the job's final state, delivered by whichever process runs the
    outbox, retried on ``next_attempt_at`` until delivered or out of attempts.
    The signing secret is read from the job's API key at delivery time.
    One row per (job, event): a job's ``job.finished`` is queued once, even
    when two processes announce it."""

    __tablename__ = "webhook_outbox"
    __table_args__ = (
        UniqueConstraint("job_id", "event", name="uq_webhook_outbox_job_id_event"),
        Index("ix_webhook_outbox_due", "state", "next_attempt_at"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    job_id: Mapped[str] = mapped_column(String(32), ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    event: Mapped[str] = mapped_column(String(64))
    url: Mapped[str] = mapped_column(Text)
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    #: the X-Longdoc-Delivery id, the same for every attempt of this delivery
    delivery_id: Mapped[str] = mapped_column(String(36))
    state: Mapped[str] = mapped_column(String(16), default="pending")  # pending | delivered | failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(default=utcnow)
    #: who is delivering it now, until when (so two outbox runners never send one row at once)
    claimed_by: Mapped[str | None] = mapped_column(String(128))
    claimed_until: Mapped[datetime | None]
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    delivered_at: Mapped[datetime | None]


class AuditEvent(Base):
    """One access to a tenant's data, one admin action or one failed
    authentication: who (tenant, key id, never the key), from where
    (client address), what (action, job id) and how it ended (HTTP status,
    error code). Never document text or file contents."""

    __tablename__ = "audit_events"
    __table_args__ = (Index("ix_audit_events_tenant_at", "tenant", "at"),)

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer(), "sqlite"), primary_key=True,
                                    autoincrement=True)
    at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    tenant: Mapped[str | None] = mapped_column(String(63))
    key_id: Mapped[str | None] = mapped_column(String(32))
    client: Mapped[str | None] = mapped_column(String(64))
    action: Mapped[str] = mapped_column(String(32))
    job_id: Mapped[str | None] = mapped_column(String(32))
    status: Mapped[int] = mapped_column(Integer)
    error_code: Mapped[str | None] = mapped_column(String(64))
    request_id: Mapped[str | None] = mapped_column(String(64))
