"""Leased queues kept in the database: the one machinery under the job
tasks (:mod:`longdoc.jobs.task_repo`) and the webhook outbox
(:mod:`longdoc.webhooks.outbox`).

A row is due from a moment on; one worker claims it under a lease and
keeps it by renewing it; it ends the lease by settling the row (the
caller's end state) or releasing it (due again after a delay); a lease
that lapsed is taken back::

    waiting ──claim──► held ──settle──► the caller's end (done, failed, delivered)
      ▲                  │
      └──────────────────┴── release (due in N s) / take back (lapsed)

A table says where it keeps these facts (:class:`QueueTable`), and holds
a lease in one of two ways:

- with a token column (``job_tasks``): a claim writes a random token, a
  held row has a state of its own (``running``), and the stamp is the
  last heartbeat; a lease has lapsed when its stamp is older than the
  window the caller names (the reconciler's), and is held until
  :meth:`LeasedQueue.take_back` ends it;
- without one (``webhook_outbox``): a held row keeps the waiting state, the
  lease is named by its holder and its stamp, and the stamp is the claim's
  expiry (now + ``lease_s`` at every claim and renewal, so a renewal
  renames the lease); a lapsed claim is free again by itself.

Every move of a lease is a compare-and-set on the row's key, its held
state and the lease's name, so a worker whose lease was taken back can
never overwrite the one that replaced it. :meth:`LeasedQueue.claim_due` is
one statement::

    WITH due_rows AS MATERIALIZED (SELECT key … LIMIT n FOR UPDATE SKIP LOCKED)
    UPDATE … FROM due_rows WHERE key = due_rows.key AND <still due> RETURNING …

On PostgreSQL two claimers skip each other's rows, and the candidates are
picked once (a ``key IN (SELECT … LIMIT n)`` may be evaluated again for
each row and claim more than ``n``); SQLite renders no lock and has one
writer at a time, so the later claimer's compare-and-set finds the rows
taken.

Time comes from the ``clock`` (UTC, aware). Database failures raise
:class:`~longdoc.errors.DatabaseUnavailable`.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from longdoc.jobs.db import rowcount
from longdoc.jobs.models import utcnow
from longdoc.jobs.repo import Clock, _Repo


@dataclass(frozen=True)
class QueueTable:
    """Where ``model``'s table keeps a leased queue: attribute names of
    ``model`` and the two state values.

    ``held`` equal to ``waiting`` means a held row keeps its state and its
    lease ends by itself (the stamp is its expiry). ``token``: the column a
    claim writes a random token to; None: the lease is named by ``holder``
    and ``stamp``. ``claimed_at``: a column a claim writes its time to."""

    model: type[Any]
    key: tuple[str, ...]
    state: str
    waiting: str
    held: str
    due_at: str
    holder: str
    stamp: str
    token: str | None = None
    claimed_at: str | None = None

    def __getitem__(self, name: str) -> Any:
        """The model's column attribute ``name``."""
        return getattr(self.model, name)

    @property
    def ends_by_itself(self) -> bool:
        return self.held == self.waiting

    @property
    def lease_columns(self) -> tuple[str, ...]:
        """The columns whose values name one lease."""
        return (self.token,) if self.token else (self.holder, self.stamp)


@dataclass(frozen=True)
class Claim:
    """One lease on one row: the row's ``key``, the ``lease``'s name (the
    values of :attr:`QueueTable.lease_columns`) and the ``row``'s columns
    the claimer asked for, in the order asked."""

    key: tuple[Any, ...]
    lease: tuple[Any, ...]
    row: tuple[Any, ...] = ()


class LeasedQueue(_Repo):
    """The queue kept in ``table``; see the module docstring. ``lease_s``:
    how far ahead of now a claim or renewal writes the stamp (0 for a
    heartbeat; the claim's length for a lease that ends by itself, which
    needs one)."""

    def __init__(self, sessions: sessionmaker[Session], table: QueueTable, *, lease_s: float = 0.0,
                 clock: Clock = utcnow) -> None:
        if table.ends_by_itself and lease_s <= 0:
            raise ValueError("a lease that ends by itself needs lease_s > 0")
        super().__init__(sessions, clock=clock)
        self.table = table
        self._ahead = timedelta(seconds=lease_s)

    # -- conditions -------------------------------------------------------------------

    def free(self, now: datetime) -> list[Any]:
        """Conditions of a row no lease holds at ``now``."""
        t = self.table
        where = [t[t.state] == t.waiting]
        if t.ends_by_itself:
            where.append(or_(t[t.holder].is_(None), t[t.stamp] <= now))
        return where

    def due(self, now: datetime) -> list[Any]:
        """Conditions of a row that may be claimed at ``now`` (free and due)."""
        return [*self.free(now), self.table[self.table.due_at] <= now]

    def _held(self) -> list[Any]:
        t = self.table
        where = [t[t.state] == t.held]
        if t.ends_by_itself:
            where.append(t[t.holder].is_not(None))
        return where

    def _is(self, key: tuple[Any, ...]) -> list[Any]:
        return [self.table[name] == value for name, value in zip(self.table.key, key, strict=True)]

    def _holding(self, claim: Claim) -> list[Any]:
        """Conditions of the row still under exactly ``claim``."""
        named = zip(self.table.lease_columns, claim.lease, strict=True)
        return [*self._is(claim.key), *self._held(), *(self.table[c] == v for c, v in named)]

    # -- claiming ---------------------------------------------------------------------

    def claim_due(self, holder: str, limit: int, *, where: tuple[Any, ...] = (), order_by: tuple[Any, ...] = (),
                  values: dict[str, Any] | None = None, returning: tuple[Any, ...] = ()) -> list[Claim]:
        """Claim for ``holder`` up to ``limit`` rows due now that also meet
        ``where``, first by ``order_by`` (default: due time, then key),
        writing ``values`` too; [] when none is."""
        if limit < 1:
            return []
        t = self.table
        now = self._now()
        keys = [t[name] for name in t.key]
        candidates = (
            select(*keys).where(*self.due(now), *where)
            .order_by(*(order_by or (t[t.due_at], *keys)))
            .limit(limit)
            .with_for_update(skip_locked=True)  # PostgreSQL; SQLite renders nothing (one writer at a time)
            .cte("due_rows").prefix_with("MATERIALIZED")  # picked once
        )
        picked = [key == candidates.c[key.key] for key in keys]
        return self._claim([*picked, *self.due(now)], holder, now, values, returning)

    def claim(self, key: tuple[Any, ...], holder: str, *, values: dict[str, Any] | None = None,
              returning: tuple[Any, ...] = ()) -> Claim | None:
        """Claim the row ``key`` for ``holder`` if it is free, due or not
        (whoever names a row chose when to hand it over); None otherwise."""
        now = self._now()
        claims = self._claim([*self._is(key), *self.free(now)], holder, now, values, returning)
        return claims[0] if claims else None

    def _claim(self, where: list[Any], holder: str, now: datetime, values: dict[str, Any] | None,
               returning: tuple[Any, ...]) -> list[Claim]:
        t = self.table
        written: dict[str, Any] = {t.state: t.held, t.holder: holder, t.stamp: now + self._ahead, **(values or {})}
        if t.token:
            written[t.token] = secrets.token_hex(16)
        if t.claimed_at:
            written[t.claimed_at] = now
        lease = tuple(written[c] for c in t.lease_columns)
        statement = (update(t.model).where(*where).values(**written)
                     .returning(*(t[name] for name in t.key), *returning)
                     .execution_options(synchronize_session=False))
        n = len(t.key)
        with self._tx() as s:
            rows = s.execute(statement).all()
        return [Claim(tuple(row[:n]), lease, tuple(row[n:])) for row in rows]

    # -- a lease ----------------------------------------------------------------------

    def renew(self, claim: Claim) -> Claim | None:
        """Write the stamp again from now; the claim as it now stands (renamed
        when the stamp names it), None when ``claim`` no longer holds its row."""
        t = self.table
        stamp = self._now() + self._ahead
        if not self._move(claim, {t.stamp: stamp}):
            return None
        return replace(claim, lease=tuple(stamp if c == t.stamp else v
                                          for c, v in zip(t.lease_columns, claim.lease, strict=True)))

    def holds(self, claim: Claim) -> bool:
        """Whether ``claim`` still holds its row (read only)."""
        with self._tx() as s:
            return s.scalar(select(func.count()).select_from(self.table.model).where(*self._holding(claim))) == 1

    def settle(self, claim: Claim, **values: Any) -> bool:
        """End ``claim`` writing ``values`` (the caller's end state and
        facts); False, and nothing written, when it no longer holds its row."""
        return self._move(claim, {**dict.fromkeys(self.table.lease_columns), **values})

    def release(self, claim: Claim, due_in_s: float | None = 0.0, **values: Any) -> bool:
        """End ``claim`` and put its row back, due in ``due_in_s`` seconds
        (None: its due time unchanged), writing ``values`` too; False, and
        nothing written, when it no longer holds its row."""
        t = self.table
        back: dict[str, Any] = {t.state: t.waiting, t.holder: None, **dict.fromkeys(t.lease_columns)}
        if due_in_s is not None:
            back[t.due_at] = self._now() + timedelta(seconds=due_in_s)
        return self._move(claim, {**back, **values})

    def _move(self, claim: Claim, values: dict[str, Any]) -> bool:
        with self._tx() as s:
            return rowcount(s.execute(update(self.table.model).where(*self._holding(claim)).values(**values)
                                      .execution_options(synchronize_session=False))) == 1

    # -- lapsed leases ---------------------------------------------------------------

    def held_rows(self) -> list[Any]:
        """Every held row, by key."""
        with self._tx() as s:
            return list(s.scalars(select(self.table.model).where(*self._held())
                                  .order_by(*(self.table[name] for name in self.table.key))))

    def lapsed(self, older_than: timedelta = timedelta(0)) -> list[Any]:
        """Held rows whose stamp is older than ``older_than`` (a heartbeat
        that long silent; with the default, a claim past its expiry), the
        oldest first."""
        stamp = self.table[self.table.stamp]
        with self._tx() as s:
            return list(s.scalars(select(self.table.model).where(*self._held(), stamp < self._now() - older_than)
                                  .order_by(stamp)))

    def claim_of(self, row: Any) -> Claim:
        """The lease ``row`` (a model instance read earlier) was under."""
        t = self.table
        return Claim(tuple(getattr(row, name) for name in t.key), tuple(getattr(row, c) for c in t.lease_columns))

    def take_back(self, row: Any, **values: Any) -> bool:
        """Put ``row`` (one :meth:`lapsed` returned) back, due now, writing
        ``values`` too, if the lease it was under still holds it: of
        reconcilers taking one row back at once, one wins."""
        return self.release(self.claim_of(row), **values)
