"""The durable webhook outbox, the one way webhooks are delivered, on
SQLite and PostgreSQL against a real HTTP receiver on 127.0.0.1: one
delivery per (job, event), signed; retries of 5xx, 429, timeouts and
connection trouble with exponential backoff (or ``Retry-After``) on a clock
the tests move; giving up at once on other answers (redirects are not
followed) and after the last attempt; the target checked again at every
attempt and connected to at the address checked; rows that outlive the
process (a new Outbox over a new engine delivers them; a dead one's claim
expires). Two outboxes racing over the same rows send each exactly once."""

from __future__ import annotations

import email.utils
import json
import secrets
import socket
import threading
import time
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from longdoc.errors import JobNotFound
from longdoc.jobs import db
from longdoc.jobs.models import WebhookOutbox
from longdoc.jobs.repo import JobRepo, KeyRepo
from longdoc.runtime.loop import Loop
from longdoc.webhooks.delivery import check_target, verify
from longdoc.webhooks.outbox import DEFAULT_BATCH, Outbox
from tests.webhooks.receiver import Receiver

PAYLOAD = {"event": "job.finished", "job": {"id": "job-1", "state": "succeeded", "title": "Zürich"}}


@pytest.fixture
def receivers():
    made: list[Receiver] = []

    def make(script=None, delay_s: float = 0.0) -> Receiver:
        receiver = Receiver(script=script or [(200, {})], delay_s=delay_s)
        made.append(receiver)
        return receiver

    yield make
    for receiver in made:
        receiver.close()


class World:
    """One database: job and key repositories, outboxes over it (each on
    its own engine when asked, like separate processes)."""

    def __init__(self, engine, clock) -> None:
        self.engine = engine
        self.url = engine.url.render_as_string(hide_password=False)
        self.clock = clock
        self.sessions = db.session_factory(engine)
        self.jobs = JobRepo(self.sessions, clock=clock)
        self.keys = KeyRepo(self.sessions, clock=clock)
        self._engines: list = []

    def job(self, *, with_key: bool = True):
        key = self.keys.create("acme")[0] if with_key else None
        job, _ = self.jobs.create(
            tenant="acme", filename="a.pdf", media_type="application/pdf", size_bytes=1,
            sha256=secrets.token_hex(32), options={}, api_key_id=key.id if key else None,
        )
        return job, key

    def record(self, job_id, url, attempt, status, error, duration_ms) -> None:
        """What the service records for every attempt."""
        self.jobs.record_delivery(job_id=job_id, url=url, attempt=attempt, status_code=status,
                                  error=error, duration_ms=duration_ms)

    def outbox(self, worker_id: str = "w1", *, new_engine: bool = False, **options) -> Outbox:
        sessions = self.sessions
        if new_engine:
            engine = db.make_engine(self.url)
            self._engines.append(engine)
            sessions = db.session_factory(engine)
        options.setdefault("allow_private", True)
        options.setdefault("timeout_s", 5.0)
        return Outbox(sessions, record=self.record, worker_id=worker_id, clock=self.clock, **options)

    def rows(self) -> list[WebhookOutbox]:
        with self.sessions() as s:
            return list(s.scalars(select(WebhookOutbox).order_by(WebhookOutbox.created_at)))

    def row(self, job_id: str) -> WebhookOutbox:
        with self.sessions() as s:
            return s.scalars(select(WebhookOutbox).where(WebhookOutbox.job_id == job_id)).one()

    def attempts(self, job_id: str) -> list[tuple]:
        return [(d.attempt, d.status_code, d.error) for d in self.jobs.deliveries(job_id)]

    def close(self) -> None:
        for engine in self._engines:
            engine.dispose()


@pytest.fixture
def world(db_engine, fake_clock):
    w = World(db_engine, fake_clock)
    yield w
    w.close()


def assert_signed(request, secret: str) -> None:
    headers = request.headers
    assert verify(secret, headers["X-Longdoc-Timestamp"], request.body, headers["X-Longdoc-Signature"])
    assert not verify(secret + "x", headers["X-Longdoc-Timestamp"], request.body, headers["X-Longdoc-Signature"])


# --- one delivery ---------------------------------------------------------------


def test_a_row_is_delivered_once_signed_and_recorded(world, receivers):
    receiver = receivers()
    job, key = world.job()
    outbox = world.outbox()

    assert outbox.enqueue(job.id, receiver.url(), PAYLOAD) is True
    assert outbox.pending_count() == 1
    assert outbox.deliver_due() == 1
    assert outbox.deliver_due() == 0  # nothing left to do

    [request] = receiver.requests
    row = world.row(job.id)
    assert request.path == "/hook" and json.loads(request.body) == PAYLOAD
    assert request.headers["X-Longdoc-Event"] == "job.finished"
    assert request.headers["X-Longdoc-Delivery"] == row.delivery_id
    assert request.headers["Content-Type"] == "application/json"
    assert_signed(request, key.webhook_secret)
    assert (row.state, row.attempts, row.claimed_by, row.claimed_until) == ("delivered", 1, None, None)
    assert row.delivered_at is not None and row.last_error is None
    assert world.attempts(job.id) == [(1, 200, None)]
    assert outbox.pending_count() == 0 and outbox.oldest_pending_age_seconds() == 0.0


def test_a_job_without_a_key_is_signed_with_an_empty_secret(world, receivers):
    receiver = receivers()
    job, _ = world.job(with_key=False)
    outbox = world.outbox()
    outbox.enqueue(job.id, receiver.url(), PAYLOAD)
    assert outbox.deliver_due() == 1
    assert_signed(receiver.requests[0], "")


def test_enqueue_twice_keeps_one_row_and_sends_once(world, receivers):
    receiver = receivers()
    job, _ = world.job()
    first, second = world.outbox("api-1"), world.outbox("api-2", new_engine=True)

    assert first.enqueue(job.id, receiver.url(), PAYLOAD) is True
    assert second.enqueue(job.id, receiver.url("/other"), {"event": "job.finished", "job": {}}) is False
    assert len(world.rows()) == 1 and world.rows()[0].url == receiver.url()
    assert first.deliver_due() + second.deliver_due() == 1
    assert first.enqueue(job.id, receiver.url(), PAYLOAD) is False  # delivered: still not again
    assert first.deliver_due() + second.deliver_due() == 0
    assert len(receiver.requests) == 1 and receiver.requests[0].path == "/hook"
    assert first.enqueue(job.id, receiver.url(), PAYLOAD, event="job.other") is True  # another event


def test_enqueue_for_a_missing_job_is_job_not_found(world, receivers):
    with pytest.raises(JobNotFound):
        world.outbox().enqueue("0" * 32, receivers().url(), PAYLOAD)
    assert world.rows() == []


# --- retries and failures ---------------------------------------------------------


def test_server_error_is_retried_after_the_backoff_with_the_same_delivery_id(world, receivers, fake_clock):
    receiver = receivers([(500, {}), (200, {})])
    job, key = world.job()
    outbox = world.outbox(base_delay_s=2.0)
    outbox.enqueue(job.id, receiver.url(), PAYLOAD)

    before = fake_clock.now
    assert outbox.deliver_due() == 1
    after = fake_clock.now
    row = world.row(job.id)
    assert (row.state, row.attempts, row.last_error, row.claimed_by) == ("pending", 1, "HTTP 500", None)
    # exponential from 2 s, with up to 2 s of jitter
    assert before + timedelta(seconds=2) <= row.next_attempt_at <= after + timedelta(seconds=4)

    assert outbox.deliver_due() == 0 and len(receiver.requests) == 1  # not due yet
    fake_clock.advance(row.next_attempt_at - fake_clock.now)
    assert outbox.deliver_due() == 1

    row = world.row(job.id)
    assert (row.state, row.attempts) == ("delivered", 2)
    assert world.attempts(job.id) == [(1, 500, None), (2, 200, None)]
    assert [r.headers["X-Longdoc-Delivery"] for r in receiver.requests] == [row.delivery_id] * 2
    for request in receiver.requests:
        assert_signed(request, key.webhook_secret)


def test_retry_after_sets_the_next_attempt(world, receivers, fake_clock):
    receiver = receivers([(429, {"Retry-After": "120"}), (503, {"Retry-After": "86400"})])
    job, _ = world.job()
    outbox = world.outbox(max_delay_s=600)
    outbox.enqueue(job.id, receiver.url(), PAYLOAD)

    outbox.deliver_due()
    due = world.row(job.id).next_attempt_at
    assert timedelta(seconds=119) < due - fake_clock.now <= timedelta(seconds=120)
    fake_clock.advance(timedelta(seconds=120))
    outbox.deliver_due()
    due = world.row(job.id).next_attempt_at
    assert timedelta(seconds=599) < due - fake_clock.now <= timedelta(seconds=600)  # capped at max_delay_s


def test_backoff_doubles_from_attempt_to_attempt_and_every_attempt_is_signed(world, receivers, fake_clock):
    receiver = receivers([(500, {}), (503, {}), (200, {})])
    job, key = world.job()
    outbox = world.outbox(base_delay_s=1.0)
    outbox.enqueue(job.id, receiver.url(), PAYLOAD)
    waits = []
    for _ in range(3):
        fake_clock.advance(world.row(job.id).next_attempt_at - fake_clock.now)
        before = fake_clock.now
        assert outbox.deliver_due() == 1
        row = world.row(job.id)
        if row.state == "pending":
            waits.append((row.next_attempt_at - before).total_seconds())
    # exponential backoff from 1 s with up to 1 s of jitter
    assert len(waits) == 2 and 1 <= waits[0] <= 2 + 1e-3 and 2 <= waits[1] <= 3 + 1e-3, waits
    assert world.attempts(job.id) == [(1, 500, None), (2, 503, None), (3, 200, None)]
    assert all(d.duration_ms >= 0 for d in world.jobs.deliveries(job.id))
    assert len({r.headers["X-Longdoc-Delivery"] for r in receiver.requests}) == 1
    for request in receiver.requests:
        assert json.loads(request.body) == PAYLOAD
        assert_signed(request, key.webhook_secret)
        headers = request.headers
        tampered = request.body.replace(b"succeeded", b"failed")
        assert not verify(key.webhook_secret, headers["X-Longdoc-Timestamp"], tampered, headers["X-Longdoc-Signature"])


def test_retry_after_as_an_http_date(world, receivers, fake_clock):
    past = email.utils.formatdate(time.time() - 30, usegmt=True)
    receiver = receivers([(503, {"Retry-After": past}), (503, {"Retry-After": "soon"}), (200, {})])
    job, _ = world.job()
    outbox = world.outbox(base_delay_s=2.0)
    outbox.enqueue(job.id, receiver.url(), PAYLOAD)
    outbox.deliver_due()
    assert world.row(job.id).next_attempt_at <= fake_clock.now  # a date already past: due at once
    before = fake_clock.now
    assert outbox.deliver_due() == 1
    wait = (world.row(job.id).next_attempt_at - before).total_seconds()
    assert 4 <= wait <= 6 + 1e-3  # unparsable: the exponential backoff (2 s · 2 + jitter)
    fake_clock.advance(timedelta(seconds=7))
    assert outbox.deliver_due() == 1 and world.row(job.id).state == "delivered"


@pytest.mark.parametrize("status", [400, 401, 404, 410, 422, 307])
def test_a_refusal_fails_the_row_after_one_attempt(world, receivers, fake_clock, status):
    elsewhere = receivers()
    receiver = receivers([(status, {"Location": elsewhere.url()}), (200, {})])
    job, _ = world.job()
    outbox = world.outbox()
    outbox.enqueue(job.id, receiver.url(), PAYLOAD)

    assert outbox.deliver_due() == 1
    fake_clock.advance(timedelta(days=1))
    assert outbox.deliver_due() == 0
    row = world.row(job.id)
    assert (row.state, row.attempts, row.last_error, row.claimed_by) == ("failed", 1, f"HTTP {status}", None)
    assert len(receiver.requests) == 1 and world.attempts(job.id) == [(1, status, None)]
    assert elsewhere.requests == []  # a redirect is not followed
    assert outbox.pending_count() == 0


def test_a_refused_target_fails_without_a_request(world, receivers):
    receiver = receivers()
    job, _ = world.job()
    outbox = world.outbox(allow_private=False)
    outbox.enqueue(job.id, receiver.url(), PAYLOAD)

    assert outbox.deliver_due() == 1
    row = world.row(job.id)
    assert row.state == "failed" and row.last_error.startswith("callback_refused")
    assert receiver.requests == []
    [(attempt, status, error)] = world.attempts(job.id)
    assert (attempt, status) == (1, None) and error.startswith("callback_refused")


def test_max_attempts_reached_fails_the_row(world, receivers, fake_clock):
    receiver = receivers([(500, {})])
    job, _ = world.job()
    outbox = world.outbox(max_attempts=3, max_delay_s=10)
    outbox.enqueue(job.id, receiver.url(), PAYLOAD)

    for _ in range(5):
        before = fake_clock.now
        outbox.deliver_due()
        row = world.row(job.id)
        if row.state == "pending":
            assert row.next_attempt_at - before <= timedelta(seconds=10)  # capped at max_delay_s
        fake_clock.advance(timedelta(seconds=10))
    row = world.row(job.id)
    assert (row.state, row.attempts, row.last_error) == ("failed", 3, "HTTP 500")
    assert [a[:2] for a in world.attempts(job.id)] == [(1, 500), (2, 500), (3, 500)]
    assert len(receiver.requests) == 3


def test_connection_trouble_is_retried_until_the_last_attempt(world, receivers, fake_clock):
    receiver = receivers()
    url = receiver.url()
    receiver.close()  # nothing listens there now
    job, _ = world.job()
    outbox = world.outbox(max_attempts=3)
    outbox.enqueue(job.id, url, PAYLOAD)

    assert outbox.deliver_due() == 1
    row = world.row(job.id)
    assert (row.state, row.attempts) == ("pending", 1) and "ConnectError" in row.last_error
    assert row.next_attempt_at > fake_clock.now
    for _ in range(2):
        fake_clock.advance(world.row(job.id).next_attempt_at - fake_clock.now)
        assert outbox.deliver_due() == 1  # never raises
    assert world.row(job.id).state == "failed"
    assert [(a, s) for a, s, _ in world.attempts(job.id)] == [(1, None), (2, None), (3, None)]
    assert all("ConnectError" in e for *_, e in world.attempts(job.id))


def test_a_receiver_that_answers_too_late_is_retried(world, receivers, fake_clock):
    receiver = receivers([(200, {})], delay_s=1.0)
    job, _ = world.job()
    outbox = world.outbox(max_attempts=2, timeout_s=0.2)
    outbox.enqueue(job.id, receiver.url(), PAYLOAD)
    assert outbox.deliver_due() == 1
    row = world.row(job.id)
    assert (row.state, row.attempts) == ("pending", 1) and "Timeout" in row.last_error
    fake_clock.advance(row.next_attempt_at - fake_clock.now)
    assert outbox.deliver_due() == 1
    assert world.row(job.id).state == "failed"
    assert all(status is None and "Timeout" in error for _, status, error in world.attempts(job.id))


# --- the target, checked again at every attempt ------------------------------------------


def test_dns_rebinding_after_submit_is_refused_at_delivery(world, receivers, fake_dns):
    receiver = receivers()
    answers, _ = fake_dns
    answers["rebind.example.test"] = [["8.8.8.8"], ["127.0.0.1"]]
    url = f"http://rebind.example.test:{receiver.port}/hook"
    check_target(url, allow_private=False)  # public when the job was submitted
    job, _ = world.job()
    outbox = world.outbox(allow_private=False)
    outbox.enqueue(job.id, url, PAYLOAD)
    assert outbox.deliver_due() == 1
    row = world.row(job.id)
    assert row.state == "failed" and row.last_error.startswith("callback_refused") and "loopback" in row.last_error
    assert receiver.requests == []


def test_delivery_connects_to_the_checked_address_and_keeps_the_host(world, receivers, fake_dns):
    receiver = receivers()
    answers, lookups = fake_dns
    # If anything resolved the name a second time it would get a dead address.
    answers["hooks.example.test"] = [["127.0.0.1"], ["127.0.0.2"]]
    job, _ = world.job()
    outbox = world.outbox()
    outbox.enqueue(job.id, f"http://hooks.example.test:{receiver.port}/in", PAYLOAD)
    assert outbox.deliver_due() == 1
    assert world.row(job.id).state == "delivered" and [a[1] for a in world.attempts(job.id)] == [200]
    assert lookups == ["hooks.example.test"]
    assert receiver.requests[0].headers["Host"] == f"hooks.example.test:{receiver.port}"
    assert receiver.requests[0].path == "/in"


def test_delivery_falls_back_to_the_next_checked_address(world, receivers, fake_dns):
    receiver = receivers()
    answers, _ = fake_dns
    # 127.0.0.2 is loopback too, but the receiver listens on 127.0.0.1 only.
    answers["two.example.test"] = [["127.0.0.2", "127.0.0.1"]]
    with socket.socket() as probe:  # skip where 127.0.0.2 is not a loopback alias
        if probe.connect_ex(("127.0.0.2", receiver.port)) == 0:
            pytest.skip("127.0.0.2 reaches the receiver on this machine")
    job, _ = world.job()
    outbox = world.outbox()
    outbox.enqueue(job.id, f"http://two.example.test:{receiver.port}/hook", PAYLOAD)
    assert outbox.deliver_due() == 1
    assert world.row(job.id).state == "delivered"
    assert len(world.attempts(job.id)) == 1 and len(receiver.requests) == 1


# --- durability and claims ------------------------------------------------------------


def test_a_pending_row_is_delivered_by_a_new_process(world, receivers, fake_clock):
    receiver = receivers([(503, {}), (200, {})])
    job, key = world.job()
    first = world.outbox("process-1", new_engine=True)
    first.enqueue(job.id, receiver.url(), PAYLOAD)
    assert first.deliver_due() == 1  # a 503; then the process is gone
    world.close()

    fake_clock.advance(timedelta(minutes=10))
    second = world.outbox("process-2", new_engine=True)  # a new process: new engine, new outbox
    assert second.pending_count() == 1
    assert second.deliver_due() == 1

    row = world.row(job.id)
    assert (row.state, row.attempts) == ("delivered", 2)
    assert [r.headers["X-Longdoc-Delivery"] for r in receiver.requests] == [row.delivery_id] * 2
    assert_signed(receiver.requests[1], key.webhook_secret)
    assert world.attempts(job.id) == [(1, 503, None), (2, 200, None)]


def test_a_row_claimed_by_a_dead_outbox_is_delivered_once_its_claim_expires(world, receivers, fake_clock):
    receiver = receivers()
    job, _ = world.job()
    dead = world.outbox("dead", claim_seconds=60)
    dead.enqueue(job.id, receiver.url(), PAYLOAD)
    with world.sessions.begin() as s:  # it claimed the row, then the process died
        s.execute(update(WebhookOutbox).values(claimed_by="dead", claimed_until=fake_clock.now + timedelta(seconds=60)))

    alive = world.outbox("alive")
    assert alive.deliver_due() == 0 and receiver.requests == []  # the claim still holds
    fake_clock.advance(timedelta(seconds=61))
    assert alive.deliver_due() == 1

    row = world.row(job.id)
    assert (row.state, row.claimed_by, row.claimed_until) == ("delivered", None, None)
    assert len(receiver.requests) == 1


def test_pending_count_and_oldest_age(world, receivers, fake_clock):
    receiver = receivers([(500, {})])
    outbox = world.outbox()
    assert (outbox.pending_count(), outbox.oldest_pending_age_seconds()) == (0, 0.0)
    first, _ = world.job()
    outbox.enqueue(first.id, receiver.url(), PAYLOAD)
    fake_clock.advance(timedelta(seconds=30))
    second, _ = world.job()
    outbox.enqueue(second.id, receiver.url(), PAYLOAD)
    assert outbox.pending_count() == 2
    assert 30 <= outbox.oldest_pending_age_seconds() < 31


def test_two_outboxes_send_each_row_exactly_once(world, receivers):
    receiver = receivers(delay_s=0.02)
    job_ids = [world.job()[0].id for _ in range(16)]
    outboxes = [world.outbox(f"process-{i}", new_engine=True) for i in range(2)]
    for job_id in job_ids:
        outboxes[0].enqueue(job_id, receiver.url(), PAYLOAD)
    start = threading.Barrier(len(outboxes))
    made = [0] * len(outboxes)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            start.wait()
            deadline = time.monotonic() + 60
            while outboxes[i].pending_count() and time.monotonic() < deadline:
                n = outboxes[i].deliver_due(limit=3)
                made[i] += n
                if n == 0:
                    time.sleep(0.01)  # the other holds the rest
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(outboxes))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(90)
    assert errors == []

    rows = world.rows()
    sent = [r.headers["X-Longdoc-Delivery"] for r in receiver.requests]
    assert sorted(sent) == sorted(r.delivery_id for r in rows)  # each row once, none twice
    assert all((r.state, r.attempts) == ("delivered", 1) for r in rows)
    assert sum(made) == len(job_ids)
    assert sum(len(world.attempts(job_id)) for job_id in job_ids) == len(job_ids)


# --- the loop ----------------------------------------------------------------------


def outbox_loop(outbox: Outbox, interval_s: float) -> Loop:
    """The loop an owner runs the outbox on, woken by the outbox."""
    loop = Loop(outbox.step, interval_s, "longdoc-outbox", at_start=True)
    outbox.wake_with(loop.wake)
    return loop.start()


def test_run_delivers_on_wake_and_stops(world, receivers):
    receiver = receivers()
    job, _ = world.job()
    outbox = world.outbox()
    loop = outbox_loop(outbox, 60)
    try:
        time.sleep(0.2)  # the loop is waiting out its interval now
        outbox.enqueue(job.id, receiver.url(), PAYLOAD)  # wakes it
        deadline = time.monotonic() + 10
        while not receiver.requests and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(receiver.requests) == 1
    finally:
        loop.stop()
    assert not loop.is_alive()


def test_a_full_batch_asks_for_the_next_pass_at_once(world, receivers):
    receiver = receivers()
    outbox = world.outbox()
    for _ in range(DEFAULT_BATCH + 1):
        outbox.enqueue(world.job()[0].id, receiver.url(), PAYLOAD)
    assert outbox.step() == 0.0  # a full batch: more may be waiting
    assert len(receiver.requests) == DEFAULT_BATCH
    assert outbox.step() is None  # the rest: the loop's interval next
    assert len(receiver.requests) == DEFAULT_BATCH + 1 and outbox.pending_count() == 0


def test_run_survives_a_failing_pass(world, receivers, monkeypatch):
    receiver = receivers()
    job, _ = world.job()
    outbox = world.outbox()
    real = outbox.deliver_due
    calls = []

    def flaky(limit: int = 20) -> int:
        calls.append(limit)
        if len(calls) == 1:
            raise RuntimeError("database hiccup")
        return real(limit)

    monkeypatch.setattr(outbox, "deliver_due", flaky)
    outbox.enqueue(job.id, receiver.url(), PAYLOAD)
    loop = outbox_loop(outbox, 0.05)
    try:
        deadline = time.monotonic() + 10
        while not receiver.requests and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        loop.stop()
    assert len(calls) >= 2 and len(receiver.requests) == 1


def test_options_are_checked(world):
    with pytest.raises(ValueError):
        world.outbox(max_attempts=0)
    with pytest.raises(ValueError):
        world.outbox(claim_seconds=5, timeout_s=10)
    with pytest.raises(ValueError):
        world.outbox(worker_id="")
