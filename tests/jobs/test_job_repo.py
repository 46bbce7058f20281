"""Job records: creation and reuse, tenant isolation, the queue, atomic
starts, state transitions, retention, deliveries."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from functools import partial
from threading import Barrier, Event

import pytest

from longdoc.errors import IdempotencyKeyReused, InvalidOption
from longdoc.jobs.repo import JobRepo, Reused
from longdoc.jobs.states import IllegalTransition, JobState

OPTIONS = {"formats": ["md"], "ocr": "auto"}


@pytest.fixture
def jobs(db_sessions, fake_clock):
    return JobRepo(db_sessions, clock=fake_clock, retention=timedelta(days=1))


def submit(jobs: JobRepo, tenant: str = "acme", sha: str = "a", **kw):
    values = dict(tenant=tenant, filename="report.pdf", media_type="application/pdf", size_bytes=10,
                  sha256=sha * 64 if len(sha) == 1 else sha, options=OPTIONS)
    values.update(kw)
    return jobs.create(**values)


# -- create, reuse, isolation --------------------------------------------------


def test_new_job_is_queued_with_its_values(jobs):
    job, reused = submit(jobs, priority=3, lane="long", callback_url="https://example.com/h", pages_total=12)
    assert reused is None
    stored = jobs.get("acme", job.id)
    assert (stored.state, stored.priority, stored.lane, stored.pages_total, stored.attempts) == ("queued", 3, "long", 12, 0)
    assert stored.options == OPTIONS and stored.failed_pages == [] and stored.timings == {}
    assert stored.queued_at is not None and stored.callback_url == "https://example.com/h"
    assert len(stored.id) == 32


def test_same_idempotency_key_returns_the_first_job(jobs):
    first, _ = submit(jobs, idempotency_key="k1")
    jobs.finish(first.id, JobState.FAILED)  # any state: the key names that request
    again, reused = submit(jobs, idempotency_key="k1")
    assert (again.id, reused) == (first.id, Reused.IDEMPOTENCY_KEY)


def test_idempotency_key_reused_for_another_file_is_refused(jobs):
    submit(jobs, idempotency_key="k1")
    with pytest.raises(IdempotencyKeyReused):
        submit(jobs, sha="b", idempotency_key="k1")
    with pytest.raises(IdempotencyKeyReused):
        submit(jobs, idempotency_key="k1", options={"formats": ["txt"]})


def test_idempotency_keys_are_per_tenant(jobs):
    a, _ = submit(jobs, tenant="acme", idempotency_key="k1")
    b, reused = submit(jobs, tenant="bravo", idempotency_key="k1")
    assert reused is None and a.id != b.id


def test_concurrent_submits_with_one_key_make_one_job(jobs):
    barrier = Barrier(4)

    def one(_):
        barrier.wait()
        return submit(jobs, idempotency_key="same")

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(one, range(4)))
    assert len({job.id for job, _ in results}) == 1
    assert sum(reused is None for _, reused in results) == 1
    assert jobs.counts_by_state()["queued"] == 1


@pytest.mark.parametrize("state", ["queued", "running", "succeeded"])
def test_same_content_and_options_reuse_live_or_succeeded_job(jobs, state):
    first, _ = submit(jobs)
    if state != "queued":
        jobs.start(first.id)
    if state == "succeeded":
        jobs.finish(first.id, JobState.SUCCEEDED)
    again, reused = submit(jobs)
    assert (again.id, reused) == (first.id, Reused.SAME_CONTENT)


@pytest.mark.parametrize("end", [JobState.FAILED, JobState.PARTIAL, JobState.CANCELLED])
def test_failed_partial_or_cancelled_job_is_not_reused(jobs, end):
    first, _ = submit(jobs)
    jobs.start(first.id)
    jobs.finish(first.id, end)
    again, reused = submit(jobs)
    assert reused is None and again.id != first.id


def test_other_options_or_other_tenant_make_a_new_job(jobs):
    first, _ = submit(jobs)
    assert submit(jobs, options={"formats": ["txt"]})[1] is None
    assert submit(jobs, tenant="bravo")[1] is None
    assert submit(jobs, sha="c")[1] is None
    assert jobs.counts_by_state()["queued"] == 4 and jobs.get_any(first.id) is not None


def test_caller_chosen_id_is_kept(jobs):
    job, _ = submit(jobs, id="f" * 32)
    assert jobs.get("acme", "f" * 32).id == job.id == "f" * 32


def test_another_tenants_job_is_invisible(jobs):
    job, _ = submit(jobs, tenant="acme")
    assert jobs.get("bravo", job.id) is None
    assert jobs.get("acme", job.id) is not None
    assert jobs.list("bravo").items == []
    assert jobs.get_any(job.id).tenant == "acme"
    assert jobs.get("acme", "0" * 32) is None


@pytest.mark.parametrize("bad", [dict(priority=10), dict(priority=-1), dict(lane="huge"), dict(idempotency_key="x" * 256)])
def test_bad_values_are_refused(jobs, bad):
    with pytest.raises(InvalidOption):
        submit(jobs, **bad)


# -- listing ----------------------------------------------------------------------


def test_list_pages_newest_first_with_an_opaque_cursor(jobs):
    ids = [submit(jobs, sha=f"{i:064x}")[0].id for i in range(5)]
    page1 = jobs.list("acme", limit=2)
    page2 = jobs.list("acme", limit=2, cursor=page1.next)
    page3 = jobs.list("acme", limit=2, cursor=page2.next)
    assert [j.id for j in page1.items + page2.items + page3.items] == ids[::-1]
    assert page3.next is None
    items, nxt = jobs.list("acme", limit=5)
    assert len(items) == 5 and nxt is None


def test_list_filters_by_state(jobs):
    a, _ = submit(jobs, sha="a")
    b, _ = submit(jobs, sha="b")
    jobs.request_cancel(a.id)
    assert [j.id for j in jobs.list("acme", state="cancelled").items] == [a.id]
    assert [j.id for j in jobs.list("acme", state="queued").items] == [b.id]


@pytest.mark.parametrize("kw", [dict(limit=0), dict(limit=201), dict(state="done"), dict(cursor="garbage!"),
                                dict(cursor="WyJ4Il0")])
def test_list_refuses_bad_arguments(jobs, kw):
    with pytest.raises(InvalidOption):
        jobs.list("acme", **kw)


# -- the queue -------------------------------------------------------------------


def test_queue_position_is_priority_then_first_queued(jobs):
    low1, _ = submit(jobs, sha="1", priority=0)
    high, _ = submit(jobs, sha="2", priority=5)
    low2, _ = submit(jobs, sha="3", priority=0, lane="long")
    assert [jobs.queue_position(j) for j in (high, low1, low2)] == [0, 1, 2]
    assert jobs.queue_depth_by_lane() == {"short": 2, "long": 1}
    started = jobs.start(high.id)
    assert jobs.queue_position(started) is None
    assert jobs.queue_position(jobs.get_any(low1.id)) == 0
    assert jobs.running_lanes() == {high.id: "short"}
    jobs.start(low2.id)
    assert jobs.running_lanes() == {high.id: "short", low2.id: "long"}


# -- running --------------------------------------------------------------------


def test_two_tasks_starting_one_job_yield_exactly_one_winner(jobs):
    for i in range(8):
        job, _ = submit(jobs, sha=f"{i:064x}")
        start = partial(_start_together, jobs, Barrier(2), job.id)
        with ThreadPoolExecutor(2) as pool:
            results = [f.result() for f in [pool.submit(start), pool.submit(start)]]
        winners = [r for r in results if r is not None]
        assert len(winners) == 1
        assert jobs.get_any(job.id).state == "running"


def _start_together(jobs, barrier, job_id):
    """Start ``job_id`` once every party has reached ``barrier``."""
    barrier.wait()
    return jobs.start(job_id)


def test_start_sets_running_fields_and_only_from_queued(jobs):
    job, _ = submit(jobs)
    started = jobs.start(job.id)
    assert started.state == "running" and started.started_at is not None
    assert jobs.start(job.id) is None
    jobs.finish(job.id, JobState.SUCCEEDED)
    assert jobs.start(job.id) is None
    assert jobs.start("0" * 32) is None


def test_attempts_is_the_most_any_task_was_run_again(jobs):
    job, _ = submit(jobs)
    jobs.start(job.id)
    jobs.count_attempt(job.id, 2)
    jobs.count_attempt(job.id, 1)  # another task's first rerun: the job's figure stays
    assert jobs.get_any(job.id).attempts == 2
    jobs.count_attempt(job.id, 3)
    assert jobs.get_any(job.id).attempts == 3


def test_progress_records_pages_and_overwrites_a_page_reported_again(jobs):
    job, _ = submit(jobs)
    assert jobs.progress(job.id, [{"page": 1, "status": "ok"}]) is False  # not running yet
    jobs.start(job.id)
    jobs.set_total(job.id, 3)
    assert jobs.progress(job.id, [
        {"page": 1, "status": "ok", "text_source": "ocr", "seconds": 0.5},
        {"page": 2, "status": "failed", "error": {"code": "engine_failed"}},
    ])
    assert jobs.progress(job.id, [{"page": 2, "status": "ok", "text_source": "text_layer", "seconds": 0.1}])
    stored = jobs.get_any(job.id)
    assert (stored.pages_done, stored.pages_total) == (2, 3)
    pages = jobs.pages(job.id)
    assert [(p.page, p.status, p.text_source, p.error) for p in pages] == [
        (1, "ok", "ocr", None), (2, "ok", "text_layer", None)]


def test_two_workers_reporting_pages_at_once_count_every_page(jobs, monkeypatch):
    """Two group tasks report their pages together: the second waits for the
    first's transaction, and ``pages_done`` counts both (on PostgreSQL the
    second once counted from a snapshot taken before the first committed,
    and a succeeded 600-page job said 597 pages done)."""
    job, _ = submit(jobs)
    jobs.start(job.id)
    inside, release = Event(), Event()
    update = JobRepo._update_running_in

    def held_open(s, job_id, **values):   # the first report stops inside its transaction, its rows written
        done = update(s, job_id, **values)
        if not inside.is_set():
            inside.set()
            assert release.wait(30)
        return done

    monkeypatch.setattr(JobRepo, "_update_running_in", staticmethod(held_open))
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(jobs.progress, job.id, [{"page": n, "status": "ok"} for n in (1, 2, 3)])
        assert inside.wait(30)
        second = pool.submit(jobs.progress, job.id, [{"page": n, "status": "ok"} for n in (4, 5, 6)])
        time.sleep(0.5)                   # the second report is now waiting on the first
        release.set()
        assert first.result(30) and second.result(30)
    assert len(jobs.pages(job.id)) == 6
    assert jobs.get_any(job.id).pages_done == 6


@pytest.mark.parametrize("row", [{"page": 0, "status": "ok"}, {"page": 1, "status": "done"}, {"page": 1, "status": "ok", "x": 1}])
def test_progress_refuses_malformed_page_rows(jobs, row):
    job, _ = submit(jobs)
    jobs.start(job.id)
    with pytest.raises((ValueError, TypeError)):
        jobs.progress(job.id, [row])
    assert jobs.pages(job.id) == []


def test_finish_records_the_outcome_and_retention(jobs, fake_clock):
    job, _ = submit(jobs)
    jobs.start(job.id)
    done = jobs.finish(job.id, "partial", failed_pages=[2], timings={"total": 1.5}, engine="rapidocr",
                       engine_version="3.10", peak_rss_bytes=123, error=None, pages_done=3)
    assert (done.state, done.failed_pages, done.timings, done.engine, done.peak_rss_bytes, done.pages_done) == (
        "partial", [2], {"total": 1.5}, "rapidocr", 123, 3)
    assert done.finished_at is not None and done.expires_at - done.finished_at == timedelta(days=1)
    with pytest.raises(TypeError):
        jobs.finish(job.id, "failed", colour="red")


# -- transitions --------------------------------------------------------------------


def test_illegal_transitions_are_refused_and_change_nothing(jobs):
    job, _ = submit(jobs)
    with pytest.raises(IllegalTransition):
        jobs.finish(job.id, JobState.SUCCEEDED)  # queued → succeeded skips running
    jobs.start(job.id)
    jobs.finish(job.id, JobState.SUCCEEDED)
    for move in (lambda: jobs.finish(job.id, JobState.FAILED), lambda: jobs.finish(job.id, JobState.EXPIRED)):
        with pytest.raises(IllegalTransition):
            move()
    assert jobs.get_any(job.id).state == "succeeded"
    assert jobs.finish("0" * 32, JobState.FAILED) is None


def test_cancel_of_a_queued_job_is_immediate(jobs):
    job, _ = submit(jobs)
    cancelled = jobs.request_cancel(job.id)
    assert cancelled.state == "cancelled" and cancelled.finished_at is not None
    assert jobs.start(job.id) is None
    assert jobs.is_cancel_requested(job.id)


def test_cancel_of_a_running_job_is_a_request_the_runner_acts_on(jobs):
    job, _ = submit(jobs)
    jobs.start(job.id)
    assert not jobs.is_cancel_requested(job.id)
    requested = jobs.request_cancel(job.id)
    assert (requested.state, requested.cancel_requested) == ("running", True)
    assert jobs.is_cancel_requested(job.id)
    assert jobs.finish(job.id, JobState.CANCELLED).state == "cancelled"


def test_cancel_racing_a_start_never_cancels_a_running_job_under_its_runner(jobs, monkeypatch):
    job, _ = submit(jobs)
    stale = jobs.get_any(job.id)  # what the canceller read: still queued
    jobs.start(job.id)      # ...then a worker started it
    reads = iter([stale])
    real_get_any = jobs.get_any
    monkeypatch.setattr(jobs, "get_any", lambda job_id: next(reads, None) or real_get_any(job_id))
    requested = jobs.request_cancel(job.id)
    assert (requested.state, requested.cancel_requested) == ("running", True)
    assert jobs.finish(job.id, JobState.CANCELLED).state == "cancelled"  # the runner's move still works


def test_cancel_of_a_finished_job_changes_nothing(jobs):
    job, _ = submit(jobs)
    jobs.start(job.id)
    jobs.finish(job.id, JobState.SUCCEEDED)
    assert jobs.request_cancel(job.id).state == "succeeded"
    assert jobs.request_cancel("0" * 32) is None


# -- retention, deletion --------------------------------------------------


def test_finished_jobs_expire_after_their_retention(jobs, fake_clock):
    done, _ = submit(jobs, sha="1")
    jobs.start(done.id)
    jobs.finish(done.id, JobState.SUCCEEDED)
    waiting, _ = submit(jobs, sha="2")
    assert jobs.expire_due() == []
    fake_clock.advance(timedelta(days=1, seconds=1))
    expired = jobs.expire_due()
    assert [j.id for j in expired] == [done.id] and expired[0].state == "expired"
    assert jobs.get_any(waiting.id).state == "queued"
    assert jobs.expire_due() == []


def test_delete_removes_the_job_its_pages_and_deliveries(jobs):
    job, _ = submit(jobs)
    other, _ = submit(jobs, sha="b")
    jobs.start(job.id)
    jobs.progress(job.id, [{"page": 1, "status": "ok"}])
    jobs.finish(job.id, JobState.SUCCEEDED)
    jobs.record_delivery(job_id=job.id, url="https://example.com/h", attempt=1, status_code=500, duration_ms=12)
    assert jobs.delete(job.id) is True
    assert jobs.get_any(job.id) is None and jobs.pages(job.id) == [] and jobs.deliveries(job.id) == []
    assert jobs.delete(job.id) is False
    assert jobs.get_any(other.id) is not None


def test_counts_by_state_lists_every_state(jobs):
    a, _ = submit(jobs, sha="1")
    submit(jobs, sha="2")
    jobs.start(a.id)
    counts = jobs.counts_by_state()
    assert counts == {s.value: {"queued": 1, "running": 1}.get(s.value, 0) for s in JobState}


def test_every_delivery_attempt_is_recorded_in_order(jobs):
    job, _ = submit(jobs)
    jobs.record_delivery(job_id=job.id, url="https://example.com/h", attempt=1, error="ConnectError", duration_ms=3)
    jobs.record_delivery(job_id=job.id, url="https://example.com/h", attempt=2, status_code=200, duration_ms=40)
    rows = jobs.deliveries(job.id)
    assert [(d.attempt, d.status_code, d.error, d.duration_ms) for d in rows] == [
        (1, None, "ConnectError", 3), (2, 200, None, 40)]
