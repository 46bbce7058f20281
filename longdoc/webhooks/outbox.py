"""The durable webhook outbox (``webhook_outbox``): deliveries kept in the
database, so a process that dies loses none of them.

A delivery is a row, written once per (job, event) by :meth:`Outbox.enqueue`
and delivered by whichever process runs the outbox::

    pending ──2xx──────────────────────────► delivered
       │ ▲
       │ └─ 5xx, 429, network trouble: attempts + 1, next_attempt_at = now + backoff
       └──── another 4xx or 3xx, a refused target, or the last allowed attempt ──► failed

Each pass of :meth:`Outbox.deliver_due` claims the due rows with one
compare-and-set ``UPDATE`` (``claimed_by``/``claimed_until``; on PostgreSQL
the candidates are picked ``FOR UPDATE SKIP LOCKED``, SQLite has one writer
at a time), makes one attempt per claimed row and settles it, releasing the
claim. Two processes running the outbox therefore never send one row at
once; a process that died holding a claim only delays its rows until
``claimed_until`` passes. A row is sent at least once, and more than once
only when its outcome could not be written back (the database went away
mid-attempt, or an attempt outlived ``claim_seconds``): receivers
de-duplicate on ``X-Longdoc-Delivery``, which stays the same for every
attempt of one row.

Attempts use :func:`longdoc.webhooks.delivery.attempt_delivery` (target checks,
pinned addresses, no redirects, signatures); the signing secret is read from
the job's API key at each attempt ("" when the job has none).

Time comes from the ``clock`` (UTC, aware), so tests can move it. Database
failures raise :class:`~longdoc.errors.DatabaseUnavailable`.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from longdoc.errors import DatabaseUnavailable, JobNotFound
from longdoc.jobs.models import ApiKey, Job, WebhookOutbox, new_id, utcnow
from longdoc.jobs.repo import Clock, _Repo
from longdoc.webhooks.delivery import (
    Outcome,
    attempt_delivery,
    encode_payload,
    make_client,
    retry_delay,
)

log = logging.getLogger("longdoc.webhooks.outbox")

Record = Callable[[str, str, int, int | None, str | None, int], None]
"""``(job_id, url, attempt 1-based, HTTP status or None, error text or None, duration_ms)``."""

PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"
JOB_FINISHED = "job.finished"
DEFAULT_BATCH = 20
_STOP_POLL_S = 0.1
_MAX_WORKER_ID = 128


@dataclass(frozen=True)
class _Claim:
    """A row this outbox holds until ``until``."""

    id: str
    job_id: str
    event: str
    url: str
    payload: dict[str, Any]
    delivery_id: str
    attempts: int
    until: datetime


class Outbox(_Repo):
    """Delivers the ``webhook_outbox`` rows; see the module docstring.

    ``record(job_id, url, attempt, status, error, duration_ms)`` is called
    after every attempt (an exception it raises is logged; the row is
    settled all the same). ``worker_id`` names this process in
    ``claimed_by``. A row is given up after ``max_attempts`` attempts;
    retries wait :func:`~longdoc.webhooks.delivery.retry_delay` (exponential
    from ``base_delay_s`` with jitter, or the receiver's ``Retry-After``,
    capped at ``max_delay_s``). A claim lasts ``claim_seconds`` and is
    renewed just before each attempt, so it must outlast one attempt
    (``timeout_s`` per phase of the request).
    """

    def __init__(
        self,
        sessions: sessionmaker[Session],
        *,
        record: Record,
        worker_id: str,
        max_attempts: int = 5,
        allow_private: bool = False,
        base_delay_s: float = 1.0,
        max_delay_s: float = 300.0,
        claim_seconds: float = 60.0,
        timeout_s: float = 10.0,
        clock: Clock = utcnow,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if not worker_id or len(worker_id) > _MAX_WORKER_ID:
            raise ValueError(f"worker_id must be 1 to {_MAX_WORKER_ID} characters")
        if claim_seconds <= timeout_s:
            raise ValueError("claim_seconds must be longer than timeout_s (a claim must outlast an attempt)")
        super().__init__(sessions, clock=clock)
        self.worker_id = worker_id
        self._record = record
        self._max_attempts = max_attempts
        self._allow_private = allow_private
        self._base_delay_s = base_delay_s
        self._max_delay_s = max_delay_s
        self._claim = timedelta(seconds=claim_seconds)
        self._timeout_s = timeout_s
        self._wake = threading.Event()

    # -- writing ----------------------------------------------------------------

    def enqueue(self, job_id: str, url: str, payload: dict[str, Any], event: str = JOB_FINISHED) -> bool:
        """Queue ``payload`` for ``url`` as ``event`` of ``job_id``, due now,
        and :meth:`wake` a waiting :meth:`run`. False (nothing changed) when
        that job's ``event`` is already queued, delivered or failed: each
        (job, event) is one delivery, whoever announces it. Raises
        JobNotFound when there is no such job."""
        now = self._now()
        row = WebhookOutbox(
            id=new_id(), job_id=job_id, event=event, url=url, payload=payload, delivery_id=str(uuid.uuid4()),
            state=PENDING, attempts=0, next_attempt_at=now, created_at=now,
        )
        try:
            with self._tx() as s:
                s.add(row)
        except IntegrityError as exc:
            if self._exists(job_id, event):
                return False
            if not self._job_exists(job_id):
                raise JobNotFound(f"No job {job_id!r} to queue a webhook for.") from exc
            raise
        self.wake()
        return True

    def _exists(self, job_id: str, event: str) -> bool:
        with self._tx() as s:
            query = select(WebhookOutbox.id).where(WebhookOutbox.job_id == job_id, WebhookOutbox.event == event)
            return s.scalar(query) is not None

    def _job_exists(self, job_id: str) -> bool:
        with self._tx() as s:
            return s.scalar(select(Job.id).where(Job.id == job_id)) is not None

    # -- delivering ---------------------------------------------------------------

    def deliver_due(self, limit: int = DEFAULT_BATCH) -> int:
        """Claim up to ``limit`` due rows (pending, ``next_attempt_at`` passed,
        not claimed or the claim expired), make one attempt for each, settle
        it and release its claim; returns the number of attempts made.

        A row whose claim was lost before its turn (another outbox took it
        after the claim expired) is skipped. Raises DatabaseUnavailable when
        the database goes away mid-pass; the rows not yet attempted are then
        released (best effort; else their claims expire), and the one whose
        attempt went out but whose outcome could not be written keeps its
        claim until it expires and is then sent again (same delivery id)."""
        claims = self._claim_due(limit)
        if not claims:
            return 0
        made = 0
        unsettled = list(claims)
        try:
            with make_client(self._timeout_s) as client:
                while unsettled:
                    made += int(self._deliver_one(client, unsettled[0]))
                    unsettled.pop(0)
        finally:
            self._release(unsettled)
        return made

    def _claim_due(self, limit: int) -> list[_Claim]:
        """Claim the due rows in one compare-and-set UPDATE … RETURNING."""
        if limit < 1:
            return []
        now = self._now()
        until = now + self._claim
        due = _due(now)
        candidates = (
            select(WebhookOutbox.id).where(*due)
            .order_by(WebhookOutbox.next_attempt_at, WebhookOutbox.id)
            .limit(limit)
            .with_for_update(skip_locked=True)  # PostgreSQL; SQLite renders nothing (one writer at a time)
        )
        claim = (
            update(WebhookOutbox)
            .where(WebhookOutbox.id.in_(candidates), *due)
            .values(claimed_by=self.worker_id, claimed_until=until)
            .returning(WebhookOutbox.id, WebhookOutbox.job_id, WebhookOutbox.event, WebhookOutbox.url,
                       WebhookOutbox.payload, WebhookOutbox.delivery_id, WebhookOutbox.attempts)
            .execution_options(synchronize_session=False)
        )
        with self._tx() as s:
            rows = s.execute(claim).all()
        return [_Claim(*row, until=until) for row in rows]

    def _deliver_one(self, client: httpx.Client, claim: _Claim) -> bool:
        """Renew the claim, attempt, record, settle. False when the claim was
        lost before the attempt (nothing sent)."""
        taken = self._renew(claim)
        if taken is None:
            log.warning("webhook outbox row was claimed elsewhere; skipped",
                        extra={"job_id": claim.job_id, "delivery_id": claim.delivery_id})
            return False
        claim, secret = taken
        attempt = claim.attempts + 1
        started = time.monotonic()
        outcome = self._attempt(client, claim, secret)
        duration_ms = int((time.monotonic() - started) * 1000)
        self._record_attempt(claim, attempt, outcome, duration_ms)
        self._settle(claim, attempt, outcome)
        return True

    def _renew(self, claim: _Claim) -> tuple[_Claim, str] | None:
        """Extend a still-held claim from now and read the signing secret;
        None when the claim is no longer this outbox's."""
        now = self._now()
        until = now + self._claim
        with self._tx() as s:
            renewed = s.execute(
                update(WebhookOutbox)
                .where(*_held(claim, self.worker_id), WebhookOutbox.claimed_until > now)
                .values(claimed_until=until)
                .execution_options(synchronize_session=False)
            ).rowcount == 1
            if not renewed:
                return None
            secret = s.scalar(
                select(ApiKey.webhook_secret).select_from(Job)
                .join(ApiKey, ApiKey.id == Job.api_key_id)
                .where(Job.id == claim.job_id)
            )
        return replace(claim, until=until), secret or ""

    def _attempt(self, client: httpx.Client, claim: _Claim, secret: str) -> Outcome:
        """One attempt; a bug in it counts as a retryable failure (it is
        logged) so the row backs off instead of spinning."""
        try:
            return attempt_delivery(client, claim.url, encode_payload(claim.payload), secret,
                                    claim.delivery_id, claim.event, self._allow_private)
        except Exception as exc:
            log.exception("webhook attempt crashed", extra={"job_id": claim.job_id})
            return Outcome(retry=True, error=f"internal error: {type(exc).__name__}")

    def _record_attempt(self, claim: _Claim, attempt: int, outcome: Outcome, duration_ms: int) -> None:
        try:
            self._record(claim.job_id, claim.url, attempt, outcome.status, outcome.error, duration_ms)
        except Exception:
            log.exception("recording webhook attempt failed", extra={"job_id": claim.job_id, "attempt": attempt})

    def _settle(self, claim: _Claim, attempt: int, outcome: Outcome) -> None:
        """Write the attempt's consequence and release the claim (if it is
        still this outbox's: one that outlived its claim only logs)."""
        now = self._now()
        values: dict[str, Any] = dict(attempts=attempt, claimed_by=None, claimed_until=None)
        if outcome.ok:
            values.update(state=DELIVERED, delivered_at=now)
        else:
            values["last_error"] = _error_text(outcome)
            if outcome.retry and attempt < self._max_attempts:
                delay = retry_delay(attempt, base_delay_s=self._base_delay_s, max_delay_s=self._max_delay_s,
                                    retry_after_s=outcome.retry_after_s)
                values["next_attempt_at"] = now + timedelta(seconds=delay)
            else:
                values["state"] = FAILED
        with self._tx() as s:
            settled = s.execute(
                update(WebhookOutbox).where(*_held(claim, self.worker_id)).values(**values)
                .execution_options(synchronize_session=False)
            ).rowcount == 1
        _log_settled(claim, attempt, outcome, values.get("state", PENDING), settled)

    def _release(self, claims: list[_Claim]) -> None:
        """Give back claims that were not attempted (best effort)."""
        if not claims:
            return
        try:
            with self._tx() as s:
                for claim in claims:
                    s.execute(update(WebhookOutbox).where(*_held(claim, self.worker_id))
                              .values(claimed_by=None, claimed_until=None)
                              .execution_options(synchronize_session=False))
        except DatabaseUnavailable:
            log.warning("webhook outbox claims not released; they expire on their own",
                        extra={"rows": len(claims)})

    # -- reading ------------------------------------------------------------------

    def pending_count(self) -> int:
        """Rows still to deliver (claimed or not)."""
        with self._tx() as s:
            return int(s.scalar(select(func.count()).select_from(WebhookOutbox)
                                .where(WebhookOutbox.state == PENDING)) or 0)

    def oldest_pending_age_seconds(self) -> float:
        """Seconds since the oldest still-pending row was queued; 0.0 when none is."""
        with self._tx() as s:
            oldest = s.scalar(select(func.min(WebhookOutbox.created_at)).where(WebhookOutbox.state == PENDING))
        if oldest is None:
            return 0.0
        return max(0.0, (self._now() - oldest).total_seconds())

    # -- the loop -----------------------------------------------------------------

    def wake(self) -> None:
        """Make a :meth:`run` that is waiting start its next pass now."""
        self._wake.set()

    def run(self, stop: threading.Event, interval_s: float = 1.0) -> None:
        """Call :meth:`deliver_due` until ``stop`` is set: again at once after
        a full batch, else after ``interval_s`` or a :meth:`wake`. An
        exception is logged and never ends the loop. Returns within about
        0.1 s of ``stop`` being set (after the pass in progress)."""
        while not stop.is_set():
            self._wake.clear()
            try:
                made = self.deliver_due()
            except Exception:
                log.exception("webhook outbox pass failed", extra={"worker_id": self.worker_id})
                made = 0
            if made < DEFAULT_BATCH:
                self._idle(stop, interval_s)

    def _idle(self, stop: threading.Event, interval_s: float) -> None:
        deadline = time.monotonic() + interval_s
        while not stop.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._wake.wait(min(remaining, _STOP_POLL_S)):
                return


# --- helpers ----------------------------------------------------------------------


def _due(now: datetime) -> list[Any]:
    """Conditions of a row that may be claimed at ``now``."""
    return [
        WebhookOutbox.state == PENDING,
        WebhookOutbox.next_attempt_at <= now,
        or_(WebhookOutbox.claimed_until.is_(None), WebhookOutbox.claimed_until <= now),
    ]


def _held(claim: _Claim, worker_id: str) -> list[Any]:
    """Conditions of a row still under exactly this claim."""
    return [
        WebhookOutbox.id == claim.id,
        WebhookOutbox.state == PENDING,
        WebhookOutbox.claimed_by == worker_id,
        WebhookOutbox.claimed_until == claim.until,
    ]


def _error_text(outcome: Outcome) -> str:
    if outcome.error:
        return outcome.error
    return f"HTTP {outcome.status}" if outcome.status is not None else "not delivered"


def _log_settled(claim: _Claim, attempt: int, outcome: Outcome, state: str, settled: bool) -> None:
    extra = {"job_id": claim.job_id, "delivery_id": claim.delivery_id, "attempt": attempt,
             "status": outcome.status, "state": state}
    if not settled:
        log.warning("webhook attempt outlived its claim; its outcome was not written", extra=extra)
    elif state == DELIVERED:
        log.info("webhook delivered", extra=extra)
    elif state == FAILED:
        log.warning("webhook not delivered; given up", extra={**extra, "error": _error_text(outcome)})
    else:
        log.info("webhook attempt failed; will retry", extra={**extra, "error": _error_text(outcome)})
