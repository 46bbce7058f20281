"""Task records (``job_tasks``): the one mapping from lane to queue,
idempotent queueing, what the embedded pools take next (priority, lanes
with room, backoff), starts as compare-and-set, leases that stop working
once taken back, what the reconciler reads (stale, unstarted, jobs with no
open task) and what an autoscaler reads (figures per queue and worker). Every case runs on SQLite
and on PostgreSQL, with a clock the test moves."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from threading import Barrier

import pytest

from longdoc.jobs.repo import JobRepo
from longdoc.jobs.states import JobState
from longdoc.jobs.task_repo import (
    QUEUES,
    Lease,
    QueueFigures,
    TaskRepo,
    first_task,
    first_tasks,
    group_index,
    group_task,
    queue_for,
    render_task,
)

OPTIONS = {"formats": ["md"], "ocr": "auto"}
S = timedelta(seconds=1)
ERR = {"code": "too_many_attempts", "message": "it died"}


@pytest.fixture
def jobs(db_sessions, fake_clock):
    return JobRepo(db_sessions, clock=fake_clock, retention=timedelta(days=1))


@pytest.fixture
def tasks(db_sessions, fake_clock):
    return TaskRepo(db_sessions, clock=fake_clock)


def new_job(jobs: JobRepo, lane: str = "long", **kw) -> str:
    """A queued job (a distinct sha each time, so no reuse)."""
    new_job.n += 1
    values = dict(tenant="acme", filename="doc.pdf", media_type="application/pdf", size_bytes=10,
                  sha256=f"{new_job.n:064x}", options=OPTIONS, lane=lane)
    values.update(kw)
    return jobs.create(**values)[0].id


new_job.n = 0


def row(tasks: TaskRepo, job_id: str, name: str):
    return next(t for t in tasks.of_job(job_id) if t.name == name)


def started(tasks: TaskRepo, job_id: str, name: str, queue: str = "cpu", worker: str = "w1") -> Lease:
    tasks.add(job_id, [(name, queue)])
    lease = tasks.start(job_id, name, worker)
    assert lease is not None
    return lease


# -- names ---------------------------------------------------------------------------


def test_first_task_by_lane():
    assert first_task("short") == "whole"
    assert first_task("long") == "ingest"
    assert first_tasks("short") == [("whole", "short")]
    assert first_tasks("long") == [("ingest", "cpu")]


def test_one_mapping_from_lane_and_task_to_queue():
    assert queue_for("short", "whole") == "short"
    for name in ("ingest", render_task(3), "assemble"):
        assert queue_for("long", name) == "cpu", name
    assert queue_for("long", group_task(3)) == "engine"
    assert {queue_for(lane, n) for lane in ("short", "long") for n in ("whole", "ingest", group_task(0))} == set(QUEUES)


@pytest.mark.parametrize("index", [0, 1, 3, 41, 999_999, 1_234_567])
def test_group_task_and_group_index_round_trip(index):
    name = group_task(index)
    assert name.startswith("group:") and len(name) >= len("group:000000")
    assert group_index(name) == index


def test_group_names_sort_in_group_order_and_others_have_no_index():
    assert group_task(3) == "group:000003"
    assert sorted([group_task(i) for i in (10, 2, 100, 0)]) == [group_task(i) for i in (0, 2, 10, 100)]
    for name in ("ingest", "assemble", "whole", "group:", "group:x1", "grouping:000001", "group:-1"):
        assert group_index(name) is None, name


# -- queueing ----------------------------------------------------------------------------


def test_add_is_idempotent_and_returns_only_new_rows(jobs, tasks, fake_clock):
    job = new_job(jobs)
    assert tasks.add(job, []) == []
    assert tasks.add(job, [("ingest", "cpu")]) == [("ingest", "cpu")]
    first = row(tasks, job, "ingest")
    fake_clock.advance(10 * S)
    again = tasks.add(job, [("ingest", "engine"), (group_task(0), "engine"), (group_task(1), "engine")])
    assert again == [(group_task(0), "engine"), (group_task(1), "engine")]
    assert tasks.add(job, [("ingest", "cpu"), (group_task(0), "engine")]) == []
    rows = tasks.of_job(job)
    assert [r.name for r in rows] == [group_task(0), group_task(1), "ingest"]  # by name
    assert all((r.state, r.attempts, r.takeovers, r.lease, r.worker_id) == ("queued", 0, 0, None, None) for r in rows)
    ingest = row(tasks, job, "ingest")
    assert (ingest.queue, ingest.enqueued_at) == ("cpu", first.enqueued_at)  # the second add changed nothing
    assert row(tasks, job, group_task(0)).enqueued_at >= first.enqueued_at + 10 * S
    assert tasks.open_count(job) == 3


def test_add_does_not_requeue_a_done_task(jobs, tasks):
    job = new_job(jobs)
    assert tasks.finish(started(tasks, job, "ingest"))
    assert tasks.add(job, [("ingest", "cpu")]) == []
    assert row(tasks, job, "ingest").state == "done"
    assert tasks.open_count(job) == 0


def test_touch_moves_only_a_queued_tasks_enqueued_at(jobs, tasks, fake_clock):
    job = new_job(jobs)
    tasks.add(job, [("ingest", "cpu"), (group_task(0), "engine")])
    before = row(tasks, job, "ingest").enqueued_at
    fake_clock.advance(5 * S)
    assert tasks.touch(job, "ingest")
    assert row(tasks, job, "ingest").enqueued_at > before + 5 * S - S
    tasks.start(job, group_task(0), "w1")
    assert not tasks.touch(job, group_task(0))  # running: not a resend
    assert not tasks.touch(job, "assemble")  # no such task


def test_touch_older_than_moves_a_task_only_while_it_is_unstarted_that_long(jobs, tasks, fake_clock):
    job = new_job(jobs)
    tasks.add(job, [("ingest", "cpu")])
    fake_clock.advance(100 * S)
    assert not tasks.touch(job, "ingest", older_than=timedelta(seconds=101))
    assert tasks.touch(job, "ingest", older_than=timedelta(seconds=99))
    assert not tasks.touch(job, "ingest", older_than=timedelta(seconds=99))  # a second reconciler: already resent
    fake_clock.advance(100 * S)
    assert tasks.touch(job, "ingest", older_than=timedelta(seconds=99))


# -- a run: start, heartbeat, finish, release ------------------------------------------------


def test_start_is_a_compare_and_set(jobs, tasks):
    job = new_job(jobs)
    tasks.add(job, [("ingest", "cpu")])
    lease = tasks.start(job, "ingest", "w1")
    assert isinstance(lease, Lease)
    assert (lease.job_id, lease.name, lease.attempt) == (job, "ingest", 1) and len(lease.token) == 32
    assert tasks.start(job, "ingest", "w2") is None  # running: the second copy starts nothing
    r = row(tasks, job, "ingest")
    assert (r.state, r.lease, r.worker_id, r.attempts) == ("running", lease.token, "w1", 1)
    assert r.started_at is not None and r.heartbeat_at == r.started_at
    assert tasks.finish(lease)
    assert tasks.start(job, "ingest", "w2") is None  # done
    assert tasks.start(job, "assemble", "w2") is None  # no such task
    assert tasks.start("0" * 32, "ingest", "w2") is None


def test_a_failed_task_does_not_start_again(jobs, tasks):
    job = new_job(jobs)
    assert tasks.finish(started(tasks, job, "ingest"), failed=True, error=ERR)
    r = row(tasks, job, "ingest")
    assert (r.state, r.error, r.lease) == ("failed", ERR, None) and r.finished_at is not None
    assert tasks.start(job, "ingest", "w2") is None


def test_of_many_racing_starts_exactly_one_gets_the_lease(jobs, tasks):
    job = new_job(jobs)
    names = [group_task(i) for i in range(3)]
    tasks.add(job, [(n, "engine") for n in names])
    for name in names:
        barrier = Barrier(8)

        def one(i, name=name, barrier=barrier):
            barrier.wait()
            return tasks.start(job, name, f"w{i}")

        with ThreadPoolExecutor(8) as pool:
            leases = list(pool.map(one, range(8)))
        winners = [lease for lease in leases if lease is not None]
        assert len(winners) == 1, leases
        r = row(tasks, job, name)
        assert (r.state, r.attempts, r.lease) == ("running", 1, winners[0].token)
        assert r.worker_id == f"w{leases.index(winners[0])}"


def test_heartbeat_refreshes_the_lease(jobs, tasks, fake_clock):
    job = new_job(jobs)
    lease = started(tasks, job, "ingest")
    first = row(tasks, job, "ingest").heartbeat_at
    fake_clock.advance(20 * S)
    assert tasks.heartbeat(lease)
    assert row(tasks, job, "ingest").heartbeat_at > first + 20 * S - S
    assert not tasks.heartbeat(Lease(job, "ingest", "f" * 32, 1))  # not its lease


def test_release_queues_the_task_again_for_the_next_attempt(jobs, tasks, fake_clock):
    job = new_job(jobs)
    lease = started(tasks, job, "ingest")
    fake_clock.advance(3 * S)
    assert tasks.release(lease, {"code": "storage_error"})
    r = row(tasks, job, "ingest")
    assert (r.state, r.lease, r.worker_id, r.error, r.takeovers) == ("queued", None, None, {"code": "storage_error"}, 0)
    assert r.enqueued_at > r.started_at + 3 * S - S
    assert not tasks.release(lease) and not tasks.heartbeat(lease) and not tasks.finish(lease)
    second = tasks.start(job, "ingest", "w2")
    assert second is not None and second.attempt == 2 and second.token != lease.token


def test_unstart_undoes_a_start_as_if_it_had_not_happened(jobs, tasks):
    job = new_job(jobs)
    first = started(tasks, job, "ingest")
    assert tasks.release(first)  # a shutdown put it back after its first run
    taken = tasks.start(job, "ingest", "w2")  # a stopping process took it again
    assert taken is not None and taken.attempt == 2
    assert tasks.unstart(taken)
    r = row(tasks, job, "ingest")
    assert (r.state, r.lease, r.worker_id, r.attempts, r.takeovers) == ("queued", None, None, 1, 0)
    assert not tasks.unstart(taken) and not tasks.finish(taken)  # its lease is gone
    again = tasks.start(job, "ingest", "w3")
    assert again is not None and again.attempt == 2  # the next process runs it as the attempt it was


def test_a_taken_back_lease_can_neither_beat_nor_finish_nor_release(jobs, tasks):
    job = new_job(jobs)
    lease = started(tasks, job, group_task(0), "engine")
    [seen] = tasks.stale(timedelta(0))
    assert tasks.take_back(seen)
    after = row(tasks, job, group_task(0))
    assert (after.state, after.lease, after.worker_id, after.takeovers) == ("queued", None, None, 1)
    assert not tasks.heartbeat(lease)
    assert not tasks.finish(lease)
    assert not tasks.finish(lease, failed=True, error=ERR)
    assert not tasks.release(lease, ERR)
    unchanged = row(tasks, job, group_task(0))
    assert (unchanged.state, unchanged.error, unchanged.finished_at, unchanged.enqueued_at, unchanged.heartbeat_at) == (
        "queued", None, None, after.enqueued_at, after.heartbeat_at)
    # the run that replaced it holds the task; the old lease still cannot touch it
    new = tasks.start(job, group_task(0), "w2")
    assert new is not None and new.attempt == 2
    assert not tasks.finish(lease)
    assert row(tasks, job, group_task(0)).state == "running"
    assert tasks.finish(new)
    assert row(tasks, job, group_task(0)).state == "done"


# -- the reconciler's reads and moves ---------------------------------------------------


def test_take_back_needs_the_lease_it_saw_and_counts_takeovers(jobs, tasks):
    job = new_job(jobs)
    started(tasks, job, "ingest")
    [first_seen] = tasks.stale(timedelta(0))
    assert tasks.take_back(first_seen)
    assert not tasks.take_back(first_seen)  # already queued
    second = tasks.start(job, "ingest", "w2")
    assert not tasks.take_back(first_seen)  # restarted meanwhile: a new lease, not the one seen
    r = row(tasks, job, "ingest")
    assert (r.state, r.lease, r.worker_id, r.takeovers) == ("running", second.token, "w2", 1)
    [second_seen] = tasks.stale(timedelta(0))
    assert tasks.take_back(second_seen)
    r = row(tasks, job, "ingest")
    assert (r.state, r.takeovers, r.attempts) == ("queued", 2, 2)
    third = tasks.start(job, "ingest", "w3")
    assert tasks.finish(third)
    assert not tasks.take_back(second_seen) and row(tasks, job, "ingest").state == "done"


def test_stale_picks_exactly_the_running_tasks_past_the_cutoff(jobs, tasks, fake_clock):
    job = new_job(jobs)
    old = started(tasks, job, group_task(0), "engine")
    tasks.add(job, [("ingest", "cpu")])  # queued, as old: not running
    done = started(tasks, job, group_task(9), "engine")
    tasks.finish(done)
    fake_clock.advance(30 * S)
    older = started(tasks, job, group_task(1), "engine")
    beating = started(tasks, job, group_task(2), "engine")
    fake_clock.advance(30 * S)
    tasks.heartbeat(beating)
    fake_clock.advance(2 * S)
    # heartbeats: group 0 62 s ago, group 1 32 s ago, group 2 2 s ago
    assert [t.name for t in tasks.stale(timedelta(seconds=61))] == [group_task(0)]
    assert [t.name for t in tasks.stale(timedelta(seconds=63))] == []
    assert [t.name for t in tasks.stale(timedelta(seconds=31))] == [group_task(0), group_task(1)]  # oldest first
    assert [t.name for t in tasks.stale(timedelta(seconds=1))] == [group_task(0), group_task(1), group_task(2)]
    seen = tasks.stale(timedelta(seconds=61))[0]
    assert (seen.lease, seen.worker_id, seen.takeovers) == (old.token, "w1", 0)  # what take_back needs
    assert older.token != old.token


def test_unstarted_picks_exactly_the_queued_tasks_sent_before_the_cutoff(jobs, tasks, fake_clock):
    job = new_job(jobs)
    tasks.add(job, [(group_task(0), "engine"), (group_task(1), "engine")])
    tasks.start(job, group_task(1), "w1")  # running: not unstarted however old
    fake_clock.advance(100 * S)
    tasks.add(job, [(group_task(2), "engine")])
    fake_clock.advance(30 * S)
    # sent 130 s and 30 s ago
    assert [t.name for t in tasks.unstarted(timedelta(seconds=129))] == [group_task(0)]
    assert [t.name for t in tasks.unstarted(timedelta(seconds=131))] == []
    assert [t.name for t in tasks.unstarted(timedelta(seconds=29))] == [group_task(0), group_task(2)]  # oldest first
    tasks.touch(job, group_task(0))
    assert [t.name for t in tasks.unstarted(timedelta(seconds=29))] == [group_task(2)]


def test_fail_open_fails_only_the_queued_and_running_tasks_of_that_job(jobs, tasks):
    job, other = new_job(jobs), new_job(jobs)
    tasks.add(job, [(group_task(0), "engine")])
    running = started(tasks, job, group_task(1), "engine")
    tasks.finish(started(tasks, job, "ingest"))
    tasks.finish(started(tasks, job, group_task(2), "engine"), failed=True, error={"code": "earlier"})
    tasks.add(other, [("ingest", "cpu")])
    assert tasks.fail_open(job, ERR) == 2
    states = {t.name: (t.state, t.error, t.lease) for t in tasks.of_job(job)}
    assert states == {
        group_task(0): ("failed", ERR, None),
        group_task(1): ("failed", ERR, None),
        "ingest": ("done", None, None),
        group_task(2): ("failed", {"code": "earlier"}, None),
    }
    assert row(tasks, job, group_task(0)).finished_at is not None
    assert not tasks.finish(running) and not tasks.heartbeat(running)
    assert (row(tasks, other, "ingest").state, tasks.open_count(other)) == ("queued", 1)
    assert tasks.open_count(job) == 0
    assert tasks.fail_open(job, ERR) == 0


def test_jobs_without_open_tasks(jobs, tasks, fake_clock):
    grace = timedelta(seconds=60)
    finished = new_job(jobs)  # running, every task done, quiet: its next tasks were lost
    jobs.start(finished)
    tasks.finish(started(tasks, finished, "ingest"))
    recently = new_job(jobs)  # running, every task done, the last one just now: its worker is queueing more
    jobs.start(recently)
    lease = started(tasks, recently, "ingest")
    left = new_job(jobs)  # running with no task at all (left by a version that ran jobs whole)
    jobs.start(left)
    lost = new_job(jobs)  # queued and never sent
    waiting = new_job(jobs)  # queued with its first task queued
    tasks.add(waiting, [("ingest", "cpu")])
    busy = new_job(jobs)  # running with a running task
    jobs.start(busy)
    started(tasks, busy, group_task(0), "engine")
    retried = new_job(jobs)  # running with a task back in the queue
    jobs.start(retried)
    tasks.release(started(tasks, retried, group_task(0), "engine"))
    ended = new_job(jobs)  # finished: nothing to schedule
    jobs.start(ended)
    jobs.finish(ended, JobState.SUCCEEDED)
    cancelled = new_job(jobs)
    jobs.request_cancel(cancelled)
    fake_clock.advance(61 * S)
    tasks.finish(lease)
    recent = new_job(jobs)  # queued, within the grace
    assert {j.id for j in tasks.jobs_without_open_tasks(grace)} == {finished, left, lost}
    assert [j.id for j in tasks.jobs_without_open_tasks(grace)][-1] == lost  # first queued first
    assert {j.id for j in tasks.jobs_without_open_tasks(timedelta(seconds=62))} == {left}
    assert {j.id for j in tasks.jobs_without_open_tasks(timedelta(0))} == {finished, left, lost, recently, recent}
    fake_clock.advance(61 * S)
    assert {j.id for j in tasks.jobs_without_open_tasks(grace)} == {finished, left, lost, recently, recent}


# -- what the embedded pools take next ----------------------------------------------------------


def test_next_due_takes_the_most_urgent_job_first_then_groups_in_order(jobs, tasks):
    low, high = new_job(jobs, priority=0), new_job(jobs, priority=7)
    for job in (low, high):
        jobs.start(job)
        tasks.add(job, [(group_task(2), "engine"), (group_task(0), "engine"), (group_task(1), "engine")])
    taken = []
    while (due := tasks.next_due("engine")) is not None:
        assert due.job_state == "running" and due.lane == "long"
        taken.append((due.job_id, due.name))
        assert tasks.start(due.job_id, due.name, "w1") is not None
    assert taken == [(high, group_task(i)) for i in range(3)] + [(low, group_task(i)) for i in range(3)]
    assert tasks.next_due("cpu") is None


def test_next_due_starts_a_queued_job_only_in_a_lane_with_room(jobs, tasks):
    short, long_ = new_job(jobs, "short"), new_job(jobs, "long")
    tasks.add(short, first_tasks("short"))
    tasks.add(long_, first_tasks("long"))
    assert tasks.next_due("short") is None and tasks.next_due("cpu") is None  # no lane has room
    assert tasks.next_due("cpu", ("short",)) is None
    due = tasks.next_due("short", ("short",))
    assert (due.job_id, due.name, due.job_state, due.lane) == (short, "whole", "queued", "short")
    assert tasks.next_due("cpu", ("short", "long")).job_id == long_
    jobs.request_cancel(long_)  # a job that ended is never taken, whatever its rows say
    assert tasks.next_due("cpu", ("short", "long")) is None


def test_next_due_waits_out_a_backoff(jobs, tasks, fake_clock):
    job = new_job(jobs)
    jobs.start(job)
    tasks.release(started(tasks, job, "ingest"), {"code": "storage_error"}, due_in_s=4)
    assert tasks.next_due("cpu") is None
    fake_clock.advance(5 * S)
    assert tasks.next_due("cpu").name == "ingest"


def test_running_lists_every_running_task(jobs, tasks):
    job = new_job(jobs)
    started(tasks, job, group_task(0), "engine", worker="w1")
    tasks.finish(started(tasks, job, group_task(1), "engine", worker="w2"))
    tasks.add(job, [(group_task(2), "engine")])
    assert [(t.name, t.worker_id) for t in tasks.running()] == [(group_task(0), "w1")]


# -- reading ---------------------------------------------------------------------------------


def test_figures_per_queue(jobs, tasks, fake_clock):
    assert tasks.figures() == {q: QueueFigures() for q in QUEUES}
    job = new_job(jobs)
    tasks.add(job, [("ingest", "cpu")])
    fake_clock.advance(10 * S)
    tasks.add(job, [("assemble", "cpu")])
    started(tasks, job, "other", "cpu")
    retried = started(tasks, job, group_task(0), "engine")
    tasks.release(retried)
    tasks.finish(tasks.start(job, group_task(0), "w2"))
    tasks.finish(started(tasks, job, group_task(1), "engine"), failed=True, error=ERR)
    started(tasks, job, group_task(2), "engine")
    fake_clock.advance(20 * S)
    figures = tasks.figures()
    assert set(figures) == set(QUEUES)
    cpu, engine = figures["cpu"], figures["engine"]
    assert (cpu.depth, cpu.in_flight, cpu.retried, cpu.failed) == (2, 1, 0, 0)
    assert cpu.oldest_age_s == pytest.approx(30, abs=1e-3)  # the ingest, queued first
    assert (engine.depth, engine.oldest_age_s, engine.in_flight, engine.retried, engine.failed) == (0, 0.0, 1, 1, 1)
    assert figures["short"] == QueueFigures()
    tasks.start(job, "ingest", "w1")
    assert tasks.figures()["cpu"].oldest_age_s == pytest.approx(20, abs=1e-3)  # now the assemble


def test_running_by_worker(jobs, tasks):
    assert tasks.running_by_worker() == {}
    job = new_job(jobs)
    started(tasks, job, group_task(0), "engine", worker="w1")
    started(tasks, job, group_task(1), "engine", worker="w1")
    started(tasks, job, group_task(2), "engine", worker="w2")
    tasks.finish(started(tasks, job, group_task(3), "engine", worker="w3"))
    tasks.add(job, [(group_task(4), "engine")])
    assert tasks.running_by_worker() == {"w1": 2, "w2": 1}


def test_deleting_a_job_deletes_its_tasks(jobs, tasks):
    job = new_job(jobs)
    tasks.add(job, [("ingest", "cpu"), (group_task(0), "engine")])
    assert jobs.delete(job)
    assert tasks.of_job(job) == [] and tasks.open_count(job) == 0


def test_task_names_are_made_and_read_by_kind():
    from longdoc.jobs.task_repo import TaskKind, task_kind

    assert TaskKind.GROUP.named(3) == group_task(3) == "group:000003"
    assert TaskKind.WHOLE.named() == "whole"
    for name, kind in (("ingest", TaskKind.INGEST), ("render:000012", TaskKind.RENDER),
                       (group_task(7), TaskKind.GROUP), ("assemble", TaskKind.ASSEMBLE)):
        assert task_kind(name) is kind
    for bad in ("group", "render:x", "ingest:000001", "merge", ""):
        with pytest.raises(ValueError):
            task_kind(bad)
    with pytest.raises(ValueError):
        TaskKind.RENDER.named()
