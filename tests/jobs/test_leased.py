"""The one leased queue (:class:`longdoc.jobs.leased.LeasedQueue`) over
both tables that keep one: ``job_tasks`` (a token per run, a running state,
leases that lapse when their heartbeat is too old and are taken back) and
``webhook_outbox`` (claims named by holder and expiry, free again by
themselves). Two claimers racing over the same rows never get one row
both; a lapsed lease is taken back (or claimed again) and a renewed one is
not; a release with a delay is not due before it; a lease that was ended
moves nothing. Every case runs on SQLite and on PostgreSQL, with a clock
the test moves."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import select

from longdoc.jobs.leased import Claim, LeasedQueue
from longdoc.jobs.models import JobTask, WebhookOutbox, new_id
from longdoc.jobs.repo import JobRepo
from longdoc.jobs.task_repo import TASKS, TaskRepo
from longdoc.webhooks.outbox import OUTBOX

S = timedelta(seconds=1)
LEASE_S = 60  # the outbox's claims end by themselves after this


class Rows:
    """One of the two tables: a queue over it, rows added to it, and what
    a row holds now."""

    def __init__(self, kind: str, sessions, clock) -> None:
        self.kind, self.sessions, self.clock = kind, sessions, clock
        self.jobs = JobRepo(sessions, clock=clock, retention=timedelta(days=1))
        self.table = TASKS if kind == "tasks" else OUTBOX
        self._n = 0

    def queue(self, sessions=None) -> LeasedQueue:
        lease_s = 0.0 if self.kind == "tasks" else LEASE_S
        return LeasedQueue(sessions or self.sessions, self.table, lease_s=lease_s, clock=self.clock)

    def add(self, n: int) -> list[tuple]:
        """``n`` rows waiting and due now; their keys."""
        job = self._job()
        if self.kind == "tasks":
            names = [f"group:{i:06d}" for i in range(n)]
            TaskRepo(self.sessions, clock=self.clock).add(job, [(name, "engine") for name in names])
            return [(job, name) for name in names]
        keys = []
        with self.sessions.begin() as s:
            for i in range(n):
                row = WebhookOutbox(id=new_id(), job_id=job, event=f"e{i}", url="http://x.test/", payload={},
                                    delivery_id=new_id(), state="pending", attempts=0,
                                    next_attempt_at=self.clock(), created_at=self.clock())
                s.add(row)
                keys.append((row.id,))
        return keys

    def state(self, key: tuple) -> tuple:
        """(state, holder) of the row ``key``."""
        model = self.table.model
        where = [getattr(model, name) == value for name, value in zip(self.table.key, key, strict=True)]
        with self.sessions() as s:
            row = s.scalars(select(model).where(*where)).one()
        return getattr(row, self.table.state), getattr(row, self.table.holder)

    def _job(self) -> str:
        self._n += 1
        return self.jobs.create(tenant="acme", filename="a.pdf", media_type="application/pdf", size_bytes=1,
                                sha256=f"{self._n:064x}", options={}, lane="long")[0].id


@pytest.fixture(params=["tasks", "outbox"])
def rows(request, db_sessions, fake_clock) -> Rows:
    return Rows(request.param, db_sessions, fake_clock)


def held_state(rows: Rows) -> str:
    return "running" if rows.kind == "tasks" else "pending"


# -- claiming -------------------------------------------------------------------------


def test_claim_due_takes_the_due_rows_oldest_first_and_only_once(rows):
    keys = rows.add(3)
    queue = rows.queue()
    first = queue.claim_due("w1", 2)
    assert [c.key for c in first] == keys[:2]
    assert [c.key for c in queue.claim_due("w2", 5)] == keys[2:]
    assert queue.claim_due("w3", 5) == [] and queue.claim_due("w3", 0) == []
    assert rows.state(keys[0]) == (held_state(rows), "w1")
    assert rows.state(keys[2]) == (held_state(rows), "w2")


def test_two_claimers_never_get_the_same_row(rows, db_engine):
    keys = rows.add(24)
    queues = [rows.queue(), rows.queue()]
    barrier = threading.Barrier(len(queues))
    got: list[list[Claim]] = [[] for _ in queues]
    errors: list[BaseException] = []

    def claim(i: int) -> None:
        try:
            barrier.wait()
            while batch := queues[i].claim_due(f"w{i}", 3):
                got[i] += batch
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(len(queues))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    claimed = [c.key for batch in got for c in batch]
    assert sorted(claimed) == sorted(keys)  # every row once, none twice
    for i, batch in enumerate(got):
        assert all(rows.state(c.key) == (held_state(rows), f"w{i}") for c in batch)


def test_a_named_row_is_claimed_once_and_only_while_free(rows, fake_clock):
    [key] = rows.add(1)
    queue = rows.queue()
    claim = queue.claim(key, "w1")
    assert claim is not None and claim.key == key
    assert queue.claim(key, "w2") is None  # held
    assert queue.release(claim, due_in_s=30)
    again = queue.claim(key, "w2")  # named: claimed although not due yet
    assert again is not None and again.lease != claim.lease
    assert queue.claim(rows.add(1)[0][:-1] + ("nothing",), "w3") is None  # no such row


# -- a lease --------------------------------------------------------------------------


def test_a_lapsed_lease_is_taken_back_and_a_renewed_one_is_not(rows, fake_clock):
    keys = rows.add(2)
    queue = rows.queue()
    quiet, busy = queue.claim_due("w1", 2)
    fake_clock.advance(40 * S)
    renewed = queue.renew(busy)
    assert renewed is not None
    fake_clock.advance(30 * S)  # quiet's lease is 70 s old, busy's 30 s

    if rows.kind == "tasks":  # the reconciler's window: 60 s
        [seen] = queue.lapsed(timedelta(seconds=LEASE_S))
        assert queue.claim_of(seen).key == quiet.key
        assert queue.take_back(seen)
        assert not queue.take_back(seen)  # of two reconcilers, one takes it back
        assert rows.state(quiet.key) == ("queued", None)
        [taken] = queue.claim_due("w2", 5)
    else:  # a claim ends by itself: the next claimer takes it
        assert [queue.claim_of(r).key for r in queue.lapsed()] == [quiet.key]
        [taken] = queue.claim_due("w2", 5)
    assert taken.key == quiet.key == keys[0]
    assert rows.state(quiet.key) == (held_state(rows), "w2")
    # the lapsed lease moves nothing any more; the renewed one still holds its row
    assert not queue.holds(quiet) and queue.renew(quiet) is None
    assert not queue.settle(quiet, state="done" if rows.kind == "tasks" else "delivered")
    assert not queue.release(quiet)
    assert queue.holds(renewed) and queue.holds(taken)
    assert rows.state(busy.key) == (held_state(rows), "w1")


def test_a_release_with_a_delay_is_not_due_before_it(rows, fake_clock):
    [key] = rows.add(1)
    queue = rows.queue()
    [claim] = queue.claim_due("w1", 1)
    assert queue.release(claim, due_in_s=30)
    assert rows.state(key)[1] is None
    fake_clock.advance(29 * S)
    assert queue.claim_due("w2", 5) == []
    fake_clock.advance(2 * S)
    [again] = queue.claim_due("w2", 5)
    assert again.key == key and not queue.release(claim)  # the first lease ended with its release


def test_a_settled_row_is_not_claimed_again(rows, fake_clock):
    [key] = rows.add(1)
    queue = rows.queue()
    [claim] = queue.claim_due("w1", 1)
    end = "done" if rows.kind == "tasks" else "delivered"
    assert queue.settle(claim, state=end)
    assert not queue.settle(claim, state=end) and not queue.holds(claim)
    fake_clock.advance(timedelta(days=1))
    assert queue.claim_due("w2", 5) == [] and queue.claim(key, "w2") is None
    assert queue.lapsed() == [] and queue.held_rows() == []
    assert rows.state(key)[0] == end


def test_an_outbox_renewal_names_a_new_claim(db_sessions, fake_clock):
    rows = Rows("outbox", db_sessions, fake_clock)
    rows.add(1)
    queue = rows.queue()
    [claim] = queue.claim_due("w1", 1)
    renewed = queue.renew(claim)
    assert renewed is not None and renewed.lease[0] == "w1" and renewed.lease[1] > claim.lease[1]
    assert not queue.holds(claim) and queue.holds(renewed)  # the claim is named by its expiry


def test_a_lease_that_ends_by_itself_needs_a_length(db_sessions):
    with pytest.raises(ValueError):
        LeasedQueue(db_sessions, OUTBOX)


def test_claims_return_the_columns_asked_for(db_sessions, fake_clock):
    rows = Rows("tasks", db_sessions, fake_clock)
    [key] = rows.add(1)
    queue = rows.queue()
    claim = queue.claim(key, "w1", values={"attempts": JobTask.attempts + 1}, returning=(JobTask.attempts,))
    assert claim is not None and claim.row == (1,) and len(claim.lease[0]) == 32
