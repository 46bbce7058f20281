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
claim: the leases of :class:`~longdoc.jobs.leased.LeasedQueue` (the job
tasks' too), over the columns :data:`OUTBOX` names, a claim ending by
itself at ``claimed_until``. Two processes running the outbox therefore never send one row at
once; a process that died holding a claim only delays its rows until
``claimed_until`` passes. A row is sent at least once, and more than once
only when its outcome could not be written back (the database went away
mid-attempt, or an attempt outlived ``claim_seconds``): receivers
de-duplicate on ``X-Longdoc-Delivery``, which stays the same for every
attempt of one row.

Attempts use :func:`longdoc.webhooks.delivery.attempt_delivery` (target checks,
pinned addresses, no redirects, signatures); the signing secret is read from
the job's API key at each attempt ("" when the job has none).

The owner runs :meth:`Outbox.step` on a
:class:`~longdoc.runtime.loop.Loop` and hands the outbox that loop's wake
(:meth:`Outbox.wake_with`), so a queued delivery goes out at once.

Time comes from the ``clock`` (UTC, aware), so tests can move it. Database
failures raise :class:`~longdoc.errors.DatabaseUnavailable`.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import httpx
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from longdoc.errors import DatabaseUnavailable, JobNotFound
from longdoc.jobs.leased import Claim, LeasedQueue, QueueTable
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
_MAX_WORKER_ID = 128
#: where ``webhook_outbox`` keeps its leased queue: a claim is named by
#: ``claimed_by`` and ``claimed_until`` and ends by itself then
OUTBOX = QueueTable(WebhookOutbox, key=("id",), state="state", waiting=PENDING, held=PENDING,
                    due_at="next_attempt_at", holder="claimed_by", stamp="claimed_until")


@dataclass(frozen=True)
class _Claim:
    """A row this outbox holds under ``lease``."""

    lease: Claim
    job_id: str
    event: str
    url: str
    payload: dict[str, Any]
    delivery_id: str
    attempts: int


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
        self._timeout_s = timeout_s
        self._queue = LeasedQueue(sessions, OUTBOX, lease_s=claim_seconds, clock=clock)
        self._wake: Callable[[], None] = _nothing

    # -- writing ----------------------------------------------------------------

    def enqueue(self, job_id: str, url: str, payload: dict[str, Any], event: str = JOB_FINISHED) -> bool:
        """Queue ``payload`` for ``url`` as ``event`` of ``job_id``, due now,
        and :meth:`wake` the loop. False (nothing changed) when
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
        """Claim the due rows, the longest due first, in one compare-and-set
        UPDATE … RETURNING."""
        claims = self._queue.claim_due(self.worker_id, limit, returning=(
            WebhookOutbox.job_id, WebhookOutbox.event, WebhookOutbox.url, WebhookOutbox.payload,
            WebhookOutbox.delivery_id, WebhookOutbox.attempts))
        return [_Claim(claim, *claim.row) for claim in claims]

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
        lease = self._queue.renew(claim.lease)
        if lease is None:
            return None
        with self._tx() as s:
            secret = s.scalar(
                select(ApiKey.webhook_secret).select_from(Job)
                .join(ApiKey, ApiKey.id == Job.api_key_id)
                .where(Job.id == claim.job_id)
            )
        return replace(claim, lease=lease), secret or ""

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
        """Write the attempt's consequence and end the claim (if it is still
        this outbox's: one that outlived its claim only logs): delivered,
        failed, or back in the queue after the backoff."""
        if outcome.ok:
            state = DELIVERED
            settled = self._queue.settle(claim.lease, state=state, attempts=attempt, delivered_at=self._now())
        elif outcome.retry and attempt < self._max_attempts:
            state = PENDING
            delay = retry_delay(attempt, base_delay_s=self._base_delay_s, max_delay_s=self._max_delay_s,
                                retry_after_s=outcome.retry_after_s)
            settled = self._queue.release(claim.lease, delay, attempts=attempt, last_error=_error_text(outcome))
        else:
            state = FAILED
            settled = self._queue.settle(claim.lease, state=state, attempts=attempt, last_error=_error_text(outcome))
        _log_settled(claim, attempt, outcome, state, settled)

    def _release(self, claims: list[_Claim]) -> None:
        """Give back claims that were not attempted (best effort)."""
        if not claims:
            return
        try:
            for claim in claims:
                self._queue.release(claim.lease, None)  # due as it was
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

    def step(self) -> float | None:
        """One pass of :meth:`deliver_due`, as a
        :class:`~longdoc.runtime.loop.Loop` runs it: returns 0.0 (the next
        pass at once) after a full batch, None (the loop's interval, or a
        :meth:`wake`) otherwise. Raises what the pass raises (the loop logs
        it and goes on)."""
        return 0.0 if self.deliver_due() >= DEFAULT_BATCH else None

    def wake_with(self, wake: Callable[[], None]) -> None:
        """Make :meth:`wake` call ``wake``: the wake of the loop running
        :meth:`step`."""
        self._wake = wake

    def wake(self) -> None:
        """Make the loop running :meth:`step` start its next pass now (nothing
        before :meth:`wake_with`: an outbox that only queues)."""
        self._wake()


# --- helpers ----------------------------------------------------------------------


def _nothing() -> None:
    pass


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
