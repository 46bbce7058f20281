"""The access audit trail's records: :class:`AuditRepo` reads and writes
``audit_events``; :class:`AuditWriter` takes records from request handling
without blocking it and writes them in batches on a thread of its own.

::

    request ─► record() ─► bounded queue ─► writer thread ─► INSERT … (one
               (never      (full: the        (a batch: up    transaction per
               waits)      record dropped,   to batch_max    batch)
                           counted)          records, or
                                             what came in
                                             linger_s)

A transaction per record would cost more than the request it records (a
commit is ~1 ms of SQLAlchemy and SQLite); waiting ``linger_s`` (0.25 s)
for more records makes it one per batch under load.

A record names who (tenant, key id, never the key), from where (client
address), what (action, job id) and how it ended (HTTP status, error code).
It never holds document text or file contents: there is no column for them.

Every API replica runs its own writer into the shared database, so the
trail of a fleet is one table. A database that fails keeps the batch in
hand and is retried (0.5 s, doubling to 5 s) while the queue fills; once it
is full, new records are dropped and counted (``on_drop``) and a warning is
logged at most every 30 s.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import delete, insert, select

from longdoc.errors import DatabaseUnavailable
from longdoc.jobs.db import rowcount
from longdoc.jobs.models import AuditEvent
from longdoc.jobs.repo import _Repo
from longdoc.runtime.loop import Loop

log = logging.getLogger("longdoc.audit")

MAX_LIST_LIMIT = 1000
DROP_WARNING_INTERVAL_S = 30.0
RETRY_FIRST_S, RETRY_MAX_S = 0.5, 5.0
#: column widths of ``audit_events`` (longer values are cut, never refused)
_WIDTHS = {c.name: width for c in AuditEvent.__table__.columns if (width := getattr(c.type, "length", None))}


class AuditRecord(NamedTuple):
    """One audited request, as the middleware saw it (``at``: aware UTC)."""

    at: datetime
    action: str
    status: int
    tenant: str | None = None
    key_id: str | None = None
    client: str | None = None
    job_id: str | None = None
    error_code: str | None = None
    request_id: str | None = None

    def row(self) -> dict[str, object]:
        """The record as column values, strings cut to their column's width."""
        return {k: v[:_WIDTHS[k]] if isinstance(v, str) and k in _WIDTHS else v for k, v in self._asdict().items()}


def audit_public(event: AuditEvent) -> dict[str, object]:
    """A stored record as JSON-ready values (``at`` in ISO 8601, UTC): what
    ``GET /admin/audit`` and ``longdoc audit list`` print."""
    return {"id": event.id, "at": event.at.isoformat(timespec="microseconds").replace("+00:00", "Z"), "tenant": event.tenant, "key_id": event.key_id,
            "client": event.client, "action": event.action, "job_id": event.job_id, "status": event.status,
            "error_code": event.error_code, "request_id": event.request_id}


class AuditRepo(_Repo):
    """``audit_events``: added in batches, listed newest first, purged by age."""

    def add_many(self, records: Sequence[AuditRecord]) -> None:
        """Insert ``records`` in one transaction. Raises DatabaseUnavailable."""
        if not records:
            return
        with self._tx() as s:
            s.execute(insert(AuditEvent), [r.row() for r in records])

    def list(self, tenant: str | None = None, since: datetime | None = None,
             limit: int = 100) -> list[AuditEvent]:
        """Records at or after ``since`` (aware), of one ``tenant`` or all,
        newest first, at most ``limit`` (1 … MAX_LIST_LIMIT)."""
        if not 1 <= limit <= MAX_LIST_LIMIT:
            raise ValueError(f"limit must be 1 … {MAX_LIST_LIMIT}, not {limit}")
        query = select(AuditEvent).order_by(AuditEvent.at.desc(), AuditEvent.id.desc()).limit(limit)
        if tenant is not None:
            query = query.where(AuditEvent.tenant == tenant)
        if since is not None:
            query = query.where(AuditEvent.at >= since)
        with self._tx() as s:
            return list(s.scalars(query))

    def purge(self, before: datetime) -> int:
        """Delete the records older than ``before``; how many went."""
        with self._tx() as s:
            return rowcount(s.execute(delete(AuditEvent).where(AuditEvent.at < before)))


class AuditWriter:
    """A queue of at most ``queue_size`` records and the thread that writes
    them (:meth:`start`). :meth:`record` never blocks; :meth:`close` writes
    what is queued, then stops. ``on_drop(n)`` is told of every record
    dropped (queue full, the database failing at close, a batch it refused)."""

    #: a batch is written once it has ``batch_max`` records or its first waited ``linger_s``
    batch_max = 500
    linger_s = 0.25

    def __init__(self, repo: AuditRepo, *, queue_size: int, on_drop: Callable[[int], None] = lambda n: None) -> None:
        self.repo = repo
        self.on_drop = on_drop
        self.dropped = 0
        self._queue: queue.Queue[AuditRecord] = queue.Queue(maxsize=queue_size)
        self._stopping = threading.Event()
        self._closed = False
        self._lock = threading.Lock()
        self._warned_at: dict[str, float] = {}
        self._loop = Loop(self._step, 0.0, "longdoc-audit", at_start=True)

    def start(self) -> AuditWriter:
        self._loop.start()
        return self

    def record(self, record: AuditRecord) -> None:
        """Queue ``record`` for writing; when the queue is full (or the
        writer closed) drop it and count it."""
        if self._closed:
            self._drop(1, "closed")
            return
        try:
            self._queue.put_nowait(record)
        except queue.Full:
            self._drop(1, "queue full")

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every record queued so far is written (or dropped);
        False when ``timeout`` passed first."""
        deadline = time.monotonic() + timeout
        with self._queue.all_tasks_done:
            while self._queue.unfinished_tasks:
                left = deadline - time.monotonic()
                if left <= 0 or not self._loop.is_alive():
                    return False
                self._queue.all_tasks_done.wait(min(left, 0.5))
        return True

    def close(self, timeout: float = 10.0) -> None:
        """Write what is queued (for at most ``timeout`` s), then stop the
        thread; records that arrive later are dropped."""
        self._closed = True
        self._stopping.set()
        self._loop.join(timeout)
        left = self._queue.qsize()
        if left:
            self._drop(left, "not written at shutdown")

    # -- the writer thread -----------------------------------------------------

    def _step(self) -> float | None:
        """Write the next batch; ends the loop once closing and the queue is empty."""
        try:
            batch = [self._queue.get(timeout=0.2)]
        except queue.Empty:
            if self._stopping.is_set():
                self._loop.begin_stop()
            return 0.0
        until = time.monotonic() + self.linger_s
        while len(batch) < self.batch_max:
            left = until - time.monotonic()
            try:
                if left > 0 and not self._stopping.is_set():
                    batch.append(self._queue.get(timeout=left))
                else:
                    batch.append(self._queue.get_nowait())
            except queue.Empty:
                break
        try:
            self._write(batch)
        finally:
            for _ in batch:
                self._queue.task_done()
        return 0.0

    def _write(self, batch: list[AuditRecord]) -> None:
        """Insert ``batch``; retried while the database is unavailable (one
        last try once closing), dropped when the database refuses it."""
        delay = RETRY_FIRST_S
        while True:
            try:
                self.repo.add_many(batch)
                return
            except DatabaseUnavailable as exc:
                if self._stopping.is_set():
                    self._drop(len(batch), f"database unavailable at shutdown ({exc.message})")
                    return
                self._warn("audit records wait: the database is unavailable", error=exc.message)
                self._stopping.wait(delay)
                delay = min(delay * 2, RETRY_MAX_S)
            except Exception:
                log.exception("audit records refused by the database; dropped", extra={"records": len(batch)})
                self._drop(len(batch), None)
                return

    def _drop(self, n: int, why: str | None) -> None:
        with self._lock:
            self.dropped += n
        self.on_drop(n)
        if why is not None:
            self._warn("audit records dropped", why=why, dropped_total=self.dropped)

    def _warn(self, message: str, **extra: object) -> None:
        """Log ``message`` at most every DROP_WARNING_INTERVAL_S seconds."""
        now = time.monotonic()
        with self._lock:
            last = self._warned_at.get(message)
            if last is not None and now - last < DROP_WARNING_INTERVAL_S:
                return
            self._warned_at[message] = now
        log.warning(message, extra=extra)
