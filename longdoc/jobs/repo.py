"""Repositories: the only code that reads and writes job and key records.

Each method runs in its own short transaction and returns detached rows
(readable after the session closed). Every state change goes through
:func:`~longdoc.jobs.states.check_transition` (an illegal one raises
:class:`~longdoc.jobs.states.IllegalTransition`) and is written as a
compare-and-set ``UPDATE … WHERE state = <the state just read>``, so two
processes racing on one job cannot both move it: exactly one ``start``
wins, and a cancel racing a start ends as "cancel requested while running".

Time comes from the ``clock`` given to the repository (UTC, aware), so tests
can move it. Connection failures raise
:class:`~longdoc.errors.DatabaseUnavailable`.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import hashlib
import hmac
import json
import secrets
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, NamedTuple

from sqlalchemy import and_, delete, func, literal, or_, select, update
from sqlalchemy.exc import IntegrityError, InterfaceError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from longdoc.errors import (
    DatabaseUnavailable,
    IdempotencyKeyReused,
    InvalidOption,
    KeyExpired,
    KeyNotFound,
    KeyNotRotatable,
    QueueFull,
)
from longdoc.jobs.db import rowcount
from longdoc.jobs.models import (
    LANES,
    MAX_IDEMPOTENCY_KEY,
    PAGE_STATUSES,
    ApiKey,
    Job,
    JobPage,
    JobTask,
    UTCDateTime,
    WebhookDelivery,
    WebhookOutbox,
    new_id,
    utcnow,
)
from longdoc.jobs.states import TERMINAL, IllegalTransition, JobState, check_transition
from longdoc.storage.keys import check_tenant

Clock = Callable[[], datetime]

API_KEY_PREFIX = "ld_"
LAST_USED_RESOLUTION = timedelta(minutes=1)
#: keys that stop working within this long are counted by ``longdoc_api_keys_expiring``
EXPIRY_WARNING = timedelta(days=7)
MAX_LIST_LIMIT = 200
_CAS_TRIES = 5
# What a dedupe may hand back: work that is, or will be, a usable result.
_REUSABLE = (JobState.QUEUED.value, JobState.RUNNING.value, JobState.SUCCEEDED.value)
_FINISH_FIELDS = frozenset({
    "pages_total", "pages_done", "failed_pages", "review_pages", "error", "engine", "engine_version",
    "timings", "peak_rss_bytes", "expires_at", "stored_bytes",
})
_PAGE_FIELDS = frozenset({"page", "status", "error", "text_source", "seconds", "confidence", "flags"})


def hash_api_key(key: str) -> str:
    """sha256 hex of an API key (keys are 32 random bytes: a fast hash is enough)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def hash_options(options: dict[str, Any]) -> str:
    """Stable sha256 of a job's options (key order does not matter)."""
    return hashlib.sha256(json.dumps(options, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class _Repo:
    def __init__(self, sessions: sessionmaker[Session], *, clock: Clock = utcnow) -> None:
        self._sessions = sessions
        self._now = clock

    def now(self) -> datetime:
        """The repository's clock (UTC, aware): what its cutoffs are measured against."""
        return self._now()

    @contextmanager
    def _tx(self) -> Iterator[Session]:
        """A session in a transaction, committed on a clean exit."""
        try:
            with self._sessions.begin() as session:
                yield session
        except (OperationalError, InterfaceError) as exc:
            raise DatabaseUnavailable(f"The database is unavailable ({type(exc.orig).__name__}).") from exc


# --- API keys -----------------------------------------------------------------


class KeyState(str, Enum):
    """Where a key stands at a moment (see :func:`key_state`)."""

    ACTIVE = "active"
    EXPIRED = "expired"
    REVOKED = "revoked"


def key_state(key: ApiKey, now: datetime) -> KeyState:
    """``revoked`` once revoked (whatever its expiry), ``expired`` from its
    ``expires_at`` on, ``active`` otherwise (a rotated key in its grace
    period is active)."""
    if key.revoked_at is not None:
        return KeyState.REVOKED
    if key.expires_at is not None and now >= key.expires_at:
        return KeyState.EXPIRED
    return KeyState.ACTIVE


class Rotated(NamedTuple):
    """What :meth:`KeyRepo.rotate` made: the new key, its plaintext (shown
    once), and the old key as it now stands (``expires_at`` at the end of its
    grace, ``replaced_by`` the new key's id)."""

    key: ApiKey
    plaintext: str
    old: ApiKey


class KeyRepo(_Repo):
    """API keys: ``ld_`` + 43 url-safe characters, stored as sha256 only."""

    def create(self, tenant: str, rate_limit_per_minute: int | None = None,
               expires_in: timedelta | None = None) -> tuple[ApiKey, str]:
        """A new key for ``tenant``: ``(row, plaintext)``; the plaintext is
        not stored and cannot be shown again. ``expires_in`` (positive): the
        key stops working that long from now; None: never. Raises
        InvalidTenant, InvalidOption."""
        check_tenant(tenant)
        if rate_limit_per_minute is not None and rate_limit_per_minute < 1:
            raise InvalidOption("rate_limit_per_minute must be at least 1 (or omitted for the default).")
        if expires_in is not None and expires_in <= timedelta(0):
            raise InvalidOption(f"expires_in must be positive, not {expires_in}.")
        row, plaintext = _new_key(tenant, rate_limit_per_minute, secrets.token_urlsafe(32), self._now(), expires_in)
        with self._tx() as s:
            s.add(row)
        return row, plaintext

    def authenticate(self, key: str) -> ApiKey | None:
        """The active key row for the plaintext ``key``, or None (unknown,
        malformed or revoked). Raises :class:`~longdoc.errors.KeyExpired` for
        a known, unrevoked key past its ``expires_at``. Records
        ``last_used_at`` at most once a minute."""
        if not isinstance(key, str) or not key.startswith(API_KEY_PREFIX) or len(key) > 256:
            return None
        digest = hash_api_key(key)
        with self._tx() as s:
            row = s.scalar(select(ApiKey).where(ApiKey.key_hash == digest))
            if row is None or not hmac.compare_digest(row.key_hash, digest) or row.revoked_at is not None:
                return None
            now = self._now()
            if key_state(row, now) is KeyState.EXPIRED:
                assert row.expires_at is not None
                raise KeyExpired(f"API key {row.key_prefix}… expired at {row.expires_at.isoformat()}.",
                                 key_id=row.id, tenant=row.tenant, expired_at=row.expires_at.isoformat())
            if row.last_used_at is None or now - row.last_used_at >= LAST_USED_RESOLUTION:
                row.last_used_at = now
        return row

    def rotate(self, key_id: str, *, grace: timedelta, expires_in: timedelta | None = None) -> Rotated:
        """A new key for the same tenant, rate limit and webhook secret, and
        the old one set to expire ``grace`` from now (``0``: now; callers
        default it to ``service.key_rotation_grace``) or at its own expiry
        if that comes first. The new key lasts ``expires_in`` (positive);
        by default as long as the old one was made to last (never, for a key
        without an expiry). One transaction; the old key is changed only if
        it is still unrotated and unrevoked (compare-and-set), so two
        rotations of one key racing give one new key.

        Raises KeyNotFound (no such key), KeyNotRotatable (revoked, expired,
        or already rotated), InvalidOption (a negative grace, an expires_in
        that is not positive)."""
        if grace < timedelta(0):
            raise InvalidOption(f"grace must not be negative, not {grace}.")
        if expires_in is not None and expires_in <= timedelta(0):
            raise InvalidOption(f"expires_in must be positive, not {expires_in}.")
        with self._tx() as s:
            old = s.get(ApiKey, key_id)
            if old is None:
                raise KeyNotFound(f"No key {key_id!r}.")
            now = self._now()
            _check_rotatable(old, now)
            if expires_in is None and old.expires_at is not None:
                expires_in = old.expires_at - old.created_at
            new, plaintext = _new_key(old.tenant, old.rate_limit_per_minute, old.webhook_secret, now, expires_in)
            s.add(new)
            s.flush()
            old_expires_at = now + grace if old.expires_at is None else min(old.expires_at, now + grace)
            changed = rowcount(s.execute(
                update(ApiKey)
                .where(ApiKey.id == key_id, ApiKey.replaced_by.is_(None), ApiKey.revoked_at.is_(None))
                .values(replaced_by=new.id, expires_at=old_expires_at)
                .execution_options(synchronize_session=False)
            ))
            if changed != 1:  # rotated or revoked since it was read: the new key is rolled back
                raise KeyNotRotatable(f"Key {key_id} was rotated or revoked meanwhile.", key_id=key_id)
            s.refresh(old)
        return Rotated(new, plaintext, old)

    def get(self, key_id: str | None) -> ApiKey | None:
        if key_id is None:
            return None
        with self._tx() as s:
            return s.get(ApiKey, key_id)

    def list(self, tenant: str | None = None) -> list[ApiKey]:
        """Keys (revoked ones included), oldest first, optionally of one tenant."""
        query = select(ApiKey).order_by(ApiKey.created_at, ApiKey.id)
        if tenant is not None:
            query = query.where(ApiKey.tenant == tenant)
        with self._tx() as s:
            return list(s.scalars(query))

    def revoke(self, key_id: str) -> bool:
        """Revoke the key; False when there is no such key. Revoking twice
        keeps the first ``revoked_at``."""
        with self._tx() as s:
            row = s.get(ApiKey, key_id)
            if row is None:
                return False
            if row.revoked_at is None:
                row.revoked_at = self._now()
            return True

    def count_expiring(self, within: timedelta = EXPIRY_WARNING) -> int:
        """Keys that work now and stop within ``within``, rotated ones (which
        have their replacement already) left out: the keys someone still has
        to replace. One COUNT over the keys table."""
        now = self._now()
        query = select(func.count()).select_from(ApiKey).where(
            ApiKey.revoked_at.is_(None), ApiKey.replaced_by.is_(None),
            ApiKey.expires_at > now, ApiKey.expires_at <= now + within,
        )
        with self._tx() as s:
            return int(s.scalar(query) or 0)


def _new_key(tenant: str, rate_limit_per_minute: int | None, webhook_secret: str, now: datetime,
             expires_in: timedelta | None) -> tuple[ApiKey, str]:
    plaintext = API_KEY_PREFIX + secrets.token_urlsafe(32)
    row = ApiKey(
        id=new_id(), tenant=tenant, key_prefix=plaintext[:8], key_hash=hash_api_key(plaintext),
        webhook_secret=webhook_secret, rate_limit_per_minute=rate_limit_per_minute, created_at=now,
        expires_at=now + expires_in if expires_in is not None else None,
    )
    return row, plaintext


def _check_rotatable(key: ApiKey, now: datetime) -> None:
    state = key_state(key, now)
    if state is not KeyState.ACTIVE:
        raise KeyNotRotatable(f"Key {key.id} is {state.value}; only an active key can be rotated.",
                              key_id=key.id, state=state.value)
    if key.replaced_by is not None:
        raise KeyNotRotatable(f"Key {key.id} was already rotated; its replacement is {key.replaced_by}.",
                              key_id=key.id, replaced_by=key.replaced_by)


# --- jobs -------------------------------------------------------------------------


class Reused(str, Enum):
    """Why :meth:`JobRepo.create` returned an existing job instead of a new one."""

    IDEMPOTENCY_KEY = "idempotency_key"
    SAME_CONTENT = "same_content"


class JobList(NamedTuple):
    items: list[Job]
    next: str | None  # opaque cursor of the next page, None on the last


class JobRepo(_Repo):
    """Job records. ``retention``: how long a finished job is kept when
    :meth:`finish` is not given ``expires_at`` (None: until deleted)."""

    def __init__(self, sessions: sessionmaker[Session], *, clock: Clock = utcnow,
                 retention: timedelta | None = None) -> None:
        super().__init__(sessions, clock=clock)
        self.retention = retention

    # -- create and read ------------------------------------------------------

    def create(
        self,
        *,
        tenant: str,
        filename: str,
        media_type: str,
        size_bytes: int,
        sha256: str,
        options: dict[str, Any],
        options_hash: str | None = None,
        api_key_id: str | None = None,
        priority: int = 0,
        lane: str = "short",
        idempotency_key: str | None = None,
        callback_url: str | None = None,
        pages_total: int | None = None,
        id: str | None = None,  # noqa: A002 - the column's name
        max_queued: int | None = None,
    ) -> tuple[Job, Reused | None]:
        """A new queued job, or an existing one of the same tenant:

        - the job submitted with the same ``idempotency_key`` (any state) →
          ``Reused.IDEMPOTENCY_KEY``; if that job was for other content or
          options, :class:`IdempotencyKeyReused` is raised instead;
        - else the newest queued, running or succeeded job with the same
          ``sha256`` and options → ``Reused.SAME_CONTENT``.

        ``options_hash`` defaults to :func:`hash_options`. Raises
        InvalidTenant / InvalidOption for bad values. Two concurrent
        creates with the same idempotency key yield one job.

        ``max_queued``: a new job is refused with :class:`QueueFull` while
        that many jobs are queued. The count and the insert are one
        transaction, serialized across processes (PostgreSQL: an advisory
        transaction lock; SQLite: one writer at a time), so API replicas
        sharing the database never pass the bound together.
        """
        check_tenant(tenant)
        _check_job_values(priority, lane, idempotency_key)
        options_hash = options_hash or hash_options(options)
        try:
            with self._tx() as s:
                found = self._find_reusable(s, tenant, idempotency_key, sha256, options_hash)
                if found is not None:
                    return found
                if max_queued is not None:
                    _check_queue_room(s, max_queued)
                now = self._now()
                job = Job(
                    id=id or new_id(), tenant=tenant, api_key_id=api_key_id, state=JobState.QUEUED.value,
                    priority=priority, lane=lane, filename=filename, media_type=media_type,
                    size_bytes=size_bytes, sha256=sha256, options=options, options_hash=options_hash,
                    idempotency_key=idempotency_key, callback_url=callback_url, pages_total=pages_total,
                    pages_done=0, failed_pages=[], review_pages=[], timings={}, attempts=0, cancel_requested=False,
                    created_at=now, queued_at=now, stored_bytes=size_bytes,
                )
                s.add(job)
        except IntegrityError:
            if idempotency_key is None:
                raise
            with self._tx() as s:  # lost a race on the same key: answer with the winner
                found = self._find_reusable(s, tenant, idempotency_key, sha256, options_hash)
            if found is None:
                raise
            return found
        return job, None

    def find_reusable(self, tenant: str, idempotency_key: str | None, sha256: str,
                      options_hash: str) -> Job | None:
        """The job :meth:`create` would hand back for these values, if any
        (raises IdempotencyKeyReused as it would)."""
        with self._tx() as s:
            found = self._find_reusable(s, tenant, idempotency_key, sha256, options_hash)
        return found[0] if found is not None else None

    @staticmethod
    def _find_reusable(s: Session, tenant: str, idempotency_key: str | None, sha256: str,
                       options_hash: str) -> tuple[Job, Reused] | None:
        if idempotency_key is not None:
            job = s.scalar(select(Job).where(Job.tenant == tenant, Job.idempotency_key == idempotency_key))
            if job is not None:
                if (job.sha256, job.options_hash) != (sha256, options_hash):
                    raise IdempotencyKeyReused(
                        f"Idempotency-Key {idempotency_key!r} was used for job {job.id} with another file or other options.",
                        job_id=job.id,
                    )
                return job, Reused.IDEMPOTENCY_KEY
        job = s.scalar(
            select(Job)
            .where(Job.tenant == tenant, Job.sha256 == sha256, Job.options_hash == options_hash,
                   Job.state.in_(_REUSABLE))
            .order_by(Job.created_at.desc(), Job.id.desc())
            .limit(1)
        )
        return (job, Reused.SAME_CONTENT) if job is not None else None

    def get(self, tenant: str, job_id: str) -> Job | None:
        """The job if it belongs to ``tenant``; None otherwise (also for
        another tenant's job, which must look exactly like a missing one)."""
        with self._tx() as s:
            return s.scalar(select(Job).where(Job.id == job_id, Job.tenant == tenant))

    def get_any(self, job_id: str) -> Job | None:
        """The job whatever its tenant (workers, admin)."""
        with self._tx() as s:
            return s.get(Job, job_id)

    def list(self, tenant: str, state: str | None = None, limit: int = 50, cursor: str | None = None) -> JobList:
        """``tenant``'s jobs, newest first, ``limit`` (1–200) at a time;
        pass the returned ``next`` as ``cursor`` for the following page.
        Raises InvalidOption for a bad state, limit or cursor."""
        if not 1 <= limit <= MAX_LIST_LIMIT:
            raise InvalidOption(f"limit must be between 1 and {MAX_LIST_LIMIT}, not {limit}.", hint="Pass a smaller ?limit=.")
        query = select(Job).where(Job.tenant == tenant)
        if state is not None:
            query = query.where(Job.state == _state(state).value)
        if cursor is not None:
            created_at, last_id = _decode_cursor(cursor)
            query = query.where(or_(Job.created_at < created_at, and_(Job.created_at == created_at, Job.id < last_id)))
        query = query.order_by(Job.created_at.desc(), Job.id.desc()).limit(limit + 1)
        with self._tx() as s:
            jobs = list(s.scalars(query))
        if len(jobs) <= limit:
            return JobList(jobs, None)
        jobs = jobs[:limit]
        return JobList(jobs, _encode_cursor(jobs[-1]))

    def pages(self, job_id: str) -> builtins.list[JobPage]:
        """Per-page outcomes recorded by :meth:`progress`, by page number."""
        with self._tx() as s:
            return list(s.scalars(select(JobPage).where(JobPage.job_id == job_id).order_by(JobPage.page)))

    # -- the queue ------------------------------------------------------------

    def queue_position(self, job: Job) -> int | None:
        """How many queued jobs go before ``job`` (0 = next), in dispatch
        order (priority high to low, then first queued first); None when
        ``job`` is not queued."""
        if job.state != JobState.QUEUED.value:
            return None
        ahead = or_(
            Job.priority > job.priority,
            and_(Job.priority == job.priority,
                 or_(Job.queued_at < job.queued_at, and_(Job.queued_at == job.queued_at, Job.id < job.id))),
        )
        with self._tx() as s:
            return s.scalar(select(func.count()).select_from(Job).where(Job.state == JobState.QUEUED.value, ahead)) or 0

    def queued_count(self) -> int:
        """Jobs waiting to start (what ``service.max_queued`` bounds)."""
        with self._tx() as s:
            return int(s.scalar(select(func.count()).select_from(Job).where(Job.state == JobState.QUEUED.value)) or 0)

    def running_lanes(self) -> dict[str, str]:
        """``{job id: lane}`` of the running jobs (what the embedded server's
        admission counts against ``service.max_concurrency``)."""
        with self._tx() as s:
            return dict(s.execute(select(Job.id, Job.lane).where(Job.state == JobState.RUNNING.value)).all())

    def running_overdue(self, started_before: timedelta) -> builtins.list[Job]:
        """Running jobs started more than ``started_before`` ago, or whose
        cancel was requested: those the reconciler ends when their tasks
        did not (an engine that never returns)."""
        cutoff = self._now() - started_before
        with self._tx() as s:
            return list(s.scalars(select(Job).where(
                Job.state == JobState.RUNNING.value, or_(Job.started_at < cutoff, Job.cancel_requested.is_(True)))
                .order_by(Job.started_at).limit(500)))

    def queue_depth_by_lane(self) -> dict[str, int]:
        """Queued jobs per lane, every lane present."""
        with self._tx() as s:
            rows = s.execute(select(Job.lane, func.count()).where(Job.state == JobState.QUEUED.value).group_by(Job.lane))
            depth = {lane: 0 for lane in LANES}
            depth.update({lane: n for lane, n in rows})
        return depth

    def tenant_stored_bytes(self, tenant: str) -> int:
        """Bytes stored for ``tenant``'s jobs whose data still exists (every
        state but expired; deleted jobs have no row)."""
        with self._tx() as s:
            total = s.scalar(select(func.coalesce(func.sum(Job.stored_bytes), 0))
                             .where(Job.tenant == tenant, Job.state != JobState.EXPIRED.value))
        return int(total or 0)

    def counts_by_state(self) -> dict[str, int]:
        """Jobs per state, every state present."""
        with self._tx() as s:
            rows = s.execute(select(Job.state, func.count()).group_by(Job.state))
            counts = {state.value: 0 for state in JobState}
            counts.update({state: n for state, n in rows})
        return counts

    # -- running ----------------------------------------------------------------

    def start(self, job_id: str) -> Job | None:
        """queued → running, only if the job is still queued and no cancel
        was requested; None otherwise. Atomic: of two tasks starting the
        same job, exactly one gets it. ``started_at`` is set once, at the
        first start (the job's deadline counts from it)."""
        check_transition(JobState.QUEUED, JobState.RUNNING)
        now = self._now()
        with self._tx() as s:
            result = s.execute(
                update(Job)
                .where(Job.id == job_id, Job.state == JobState.QUEUED.value, Job.cancel_requested.is_(False))
                .values(state=JobState.RUNNING.value,
                        started_at=func.coalesce(Job.started_at, literal(now, UTCDateTime())))
                .execution_options(synchronize_session=False)
            )
            if rowcount(result) != 1:
                return None
            return s.get(Job, job_id, populate_existing=True)

    def count_attempt(self, job_id: str, attempts: int) -> None:
        """Record that one of the job's tasks is being run for the
        ``attempts + 1``-th time (after a dead worker, a shutdown or a
        transient fault): ``attempts`` is the most any of its tasks was run
        again."""
        with self._tx() as s:
            s.execute(update(Job).where(Job.id == job_id, Job.attempts < attempts).values(attempts=attempts)
                      .execution_options(synchronize_session=False))

    def set_total(self, job_id: str, pages_total: int) -> bool:
        """Record how many pages the running job will produce."""
        return self._update_running(job_id, pages_total=pages_total)

    def progress(self, job_id: str, pages: Iterable[dict[str, Any]] = ()) -> bool:
        """Record progress of a running job: one row per page (``{"page",
        "status": "ok"|"failed", "error", "text_source", "seconds",
        "confidence", "flags"}``; a page reported again is overwritten) and
        ``pages_done``, the number of page rows, so workers reporting groups
        in any order, or one group twice, count each page once. False
        (nothing written) when the job is not running."""
        rows = [_page_row(job_id, p) for p in pages]
        with self._tx() as s:
            # the job row is locked first: a concurrent report of other pages commits before this one
            # counts, so the count sees its rows (PostgreSQL, read committed: counted under the lock,
            # a report's snapshot would miss rows committed while it waited, and the job would end short)
            state = s.scalar(select(Job.state).where(Job.id == job_id).with_for_update())
            if state != JobState.RUNNING.value:
                return False
            for row in rows:
                s.merge(row)
            s.flush()
            done = select(func.count()).select_from(JobPage).where(JobPage.job_id == job_id).scalar_subquery()
            return self._update_running_in(s, job_id, pages_done=done)

    def is_cancel_requested(self, job_id: str) -> bool:
        """True once a cancel was requested (or the job is already cancelled)."""
        with self._tx() as s:
            row = s.execute(select(Job.cancel_requested, Job.state).where(Job.id == job_id)).first()
        return row is not None and (bool(row[0]) or row[1] == JobState.CANCELLED.value)

    def _update_running(self, job_id: str, **values: Any) -> bool:
        with self._tx() as s:
            return self._update_running_in(s, job_id, **values)

    @staticmethod
    def _update_running_in(s: Session, job_id: str, **values: Any) -> bool:
        result = s.execute(
            update(Job).where(Job.id == job_id, Job.state == JobState.RUNNING.value).values(**values)
            .execution_options(synchronize_session=False)
        )
        return rowcount(result) == 1

    # -- state changes -------------------------------------------------------------

    def finish(self, job_id: str, state: JobState | str, **fields: Any) -> Job | None:
        """Move the job to the terminal ``state`` (from running, or from
        queued for failed/cancelled) and record ``fields``: any of
        pages_total, pages_done, failed_pages, review_pages, error, engine,
        engine_version, timings, peak_rss_bytes, expires_at (default: now +
        retention).
        None when there is no such job; IllegalTransition when the move is
        not allowed (e.g. the job already finished)."""
        new = _state(state)
        if not new.terminal or new is JobState.EXPIRED:
            raise IllegalTransition(f"finish() takes a final state, not {new.value}")
        return self._transition(job_id, new, self._finish_values(fields))

    def _finish_values(self, fields: dict[str, Any]) -> dict[str, Any]:
        unknown = set(fields) - _FINISH_FIELDS
        if unknown:
            raise TypeError(f"finish() got unknown fields: {', '.join(sorted(unknown))}")
        now = self._now()
        values = {"finished_at": now, "cancel_requested": False, **fields}
        if "expires_at" not in fields:
            values["expires_at"] = now + self.retention if self.retention is not None else None
        return values

    def request_cancel(self, job_id: str) -> Job | None:
        """Cancel: a queued job becomes cancelled at once; a running one gets
        ``cancel_requested`` (its running task stops between groups and finishes it
        cancelled); a finished one is returned unchanged. None when missing."""
        for _ in range(_CAS_TRIES):
            job = self.get_any(job_id)
            if job is None or JobState(job.state).terminal:
                return job
            if job.state == JobState.QUEUED.value:
                try:
                    return self._transition(job_id, JobState.CANCELLED, self._finish_values({}),
                                            only_from=JobState.QUEUED)
                except IllegalTransition:
                    continue  # it started meanwhile: request it from its task
            if self._update_running(job_id, cancel_requested=True):
                return self.get_any(job_id)
        raise IllegalTransition(f"job {job_id} kept changing state while being cancelled")

    def expire_due(self, now: datetime | None = None) -> builtins.list[Job]:
        """Finished jobs whose ``expires_at`` has passed become expired;
        returns them (the caller deletes their stored data)."""
        now = now or self._now()
        finished = [s.value for s in TERMINAL if s is not JobState.EXPIRED]
        with self._tx() as s:
            due = list(s.scalars(select(Job.id).where(Job.state.in_(finished), Job.expires_at <= now)))
        expired = []
        for job_id in due:
            try:
                job = self._transition(job_id, JobState.EXPIRED, {})
            except IllegalTransition:
                continue  # expired or deleted concurrently
            if job is not None:
                expired.append(job)
        return expired

    def delete(self, job_id: str) -> bool:
        """Delete the job row with its page, delivery, outbox and task rows; False when missing."""
        with self._tx() as s:
            s.execute(delete(JobPage).where(JobPage.job_id == job_id))
            s.execute(delete(WebhookDelivery).where(WebhookDelivery.job_id == job_id))
            s.execute(delete(WebhookOutbox).where(WebhookOutbox.job_id == job_id))
            s.execute(delete(JobTask).where(JobTask.job_id == job_id))
            return rowcount(s.execute(delete(Job).where(Job.id == job_id))) == 1

    def _transition(self, job_id: str, new: JobState, values: dict[str, Any], *,
                    only_from: JobState | None = None) -> Job | None:
        """Compare-and-set ``state → new`` plus ``values``; re-reads and
        re-checks when another process changed the row in between. None
        when there is no such job. Raises IllegalTransition when the move is
        not allowed from the current state, or the state is not
        ``only_from``."""
        for _ in range(_CAS_TRIES):
            with self._tx() as s:
                job = s.get(Job, job_id)
                if job is None:
                    return None
                old = JobState(job.state)
                if only_from is not None and old is not only_from:
                    raise IllegalTransition(f"job is {old.value}, not {only_from.value}")
                check_transition(old, new)
                where = [Job.id == job_id, Job.state == old.value]
                result = s.execute(
                    update(Job).where(*where).values(state=new.value, **values)
                    .execution_options(synchronize_session=False)
                )
                if rowcount(result) == 1:
                    return s.get(Job, job_id, populate_existing=True)
        raise IllegalTransition(f"job {job_id} kept changing; gave up moving it to {new.value}")

    # -- webhooks ----------------------------------------------------------------

    def record_delivery(self, *, job_id: str, url: str, attempt: int, status_code: int | None = None,
                        error: str | None = None, duration_ms: int = 0) -> WebhookDelivery:
        row = WebhookDelivery(id=new_id(), job_id=job_id, url=url, attempt=attempt, status_code=status_code,
                              error=error, duration_ms=duration_ms, created_at=self._now())
        with self._tx() as s:
            s.add(row)
        return row

    def deliveries(self, job_id: str) -> builtins.list[WebhookDelivery]:
        """Every recorded attempt for the job, oldest first."""
        query = (select(WebhookDelivery).where(WebhookDelivery.job_id == job_id)
                 .order_by(WebhookDelivery.created_at, WebhookDelivery.attempt))
        with self._tx() as s:
            return list(s.scalars(query))


# --- helpers ----------------------------------------------------------------------


def _state(value: JobState | str) -> JobState:
    try:
        return JobState(value)
    except ValueError:
        raise InvalidOption(f"{value!r} is not a job state.",
                            hint=f"Use one of {', '.join(s.value for s in JobState)}.") from None


#: pg_advisory_xact_lock key serializing admissions: "ldqueue" in ASCII
_ADMISSION_LOCK = int.from_bytes(b"ldqueue", "big")


def _check_queue_room(s: Session, max_queued: int) -> None:
    """Inside the creating transaction: raise QueueFull when ``max_queued``
    jobs are queued (after taking the admission lock on PostgreSQL)."""
    if s.get_bind().dialect.name == "postgresql":
        s.execute(select(func.pg_advisory_xact_lock(_ADMISSION_LOCK)))
    queued = s.scalar(select(func.count()).select_from(Job).where(Job.state == JobState.QUEUED.value)) or 0
    if queued >= max_queued:
        raise QueueFull(f"The queue holds {max_queued} jobs already.", retry_after=30)


def _check_job_values(priority: int, lane: str, idempotency_key: str | None) -> None:
    if not 0 <= priority <= 9:
        raise InvalidOption(f"priority must be between 0 and 9, not {priority}.", hint="Use 0 (default) to 9 (most urgent).")
    if lane not in LANES:
        raise InvalidOption(f"lane must be one of {', '.join(LANES)}, not {lane!r}.")
    if idempotency_key is not None and not 1 <= len(idempotency_key) <= MAX_IDEMPOTENCY_KEY:
        raise InvalidOption(f"The Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY} characters.",
                            hint="Use a UUID or another short unique string.")


def _page_row(job_id: str, values: dict[str, Any]) -> JobPage:
    unknown = set(values) - _PAGE_FIELDS
    if unknown:
        raise TypeError(f"page row has unknown fields: {', '.join(sorted(unknown))}")
    if values.get("status") not in PAGE_STATUSES:
        raise ValueError(f"page status must be one of {PAGE_STATUSES}, not {values.get('status')!r}")
    page = values["page"]
    if not isinstance(page, int) or page < 1:
        raise ValueError(f"page numbers are 1-based integers, not {page!r}")
    return JobPage(job_id=job_id, page=page, status=values["status"], error=values.get("error"),
                   text_source=values.get("text_source"), seconds=values.get("seconds"),
                   confidence=values.get("confidence"), flags=values.get("flags"))


def _encode_cursor(job: Job) -> str:
    raw = json.dumps([job.created_at.isoformat(), job.id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created, job_id = json.loads(raw)
        created_at = datetime.fromisoformat(created)
        if created_at.tzinfo is None or not isinstance(job_id, str):
            raise ValueError("not a cursor")
    except (ValueError, TypeError, binascii.Error):
        raise InvalidOption("The cursor is not one this server returned.",
                            hint="Pass the `next` value of the previous page unchanged.") from None
    return created_at, job_id
