"""The reconciler: work a dead worker, a lost message or a restarted broker
dropped is found in the database and run again.

:class:`TaskReconciler`, with real :class:`TaskSteps` whose ``send``
records the messages: stale tasks taken back and sent again (at start also
those naming a dead process of this host: the embedded server killed and
restarted), the job failed with ``too_many_attempts`` on the
``service.max_attempts``-th takeover or ended cancelled when that was
asked, lost messages sent again, jobs with no task given their first one
(also a job left running by a version that ran jobs whole), and two
reconcilers at once sending each stale task once; a job whose task keeps
beating but never stops it (an engine that does not return) failed
``job_timeout`` past its deadline and the grace, or ended cancelled a grace
after its cancel was first seen, its stuck run's lease gone.

SQLite and PostgreSQL, with a clock the test moves; nothing is parsed.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest

from longdoc.config import load_settings
from longdoc.jobs.repo import JobRepo
from longdoc.jobs.states import JobState
from longdoc.jobs.task_repo import TaskRepo, group_task
from longdoc.pipeline import Pipeline
from longdoc.runner.finisher import JobFinisher
from longdoc.runner.lease import worker_id
from longdoc.runner.reconciler import TaskReconciler, too_many_attempts
from longdoc.runner.steps import TaskSteps, job_timed_out
from longdoc.storage.local import LocalStore
from longdoc.storage.scratch import ScratchDir

OPTIONS = {"formats": ["md"], "ocr": "auto"}
LEASE = 60.0
REDELIVER = 120.0
MAX_ATTEMPTS = 3
S = timedelta(seconds=1)
PAST_LEASE = timedelta(seconds=LEASE + 1)
PAST_REDELIVER = timedelta(seconds=REDELIVER + 1)
HOST = socket.gethostname()[:80]


@pytest.fixture
def settings(tmp_path):
    return load_settings(overrides={
        "queue": {"lease_seconds": LEASE, "redeliver_after_seconds": REDELIVER},
        "service": {"max_attempts": MAX_ATTEMPTS, "work_dir": str(tmp_path / "work")},
        "storage": {"url": f"file://{tmp_path}/store"},
        "database": {"url": f"sqlite:///{tmp_path}/unused.db"},
    })


@pytest.fixture
def jobs(db_sessions, fake_clock):
    return JobRepo(db_sessions, clock=fake_clock, retention=timedelta(days=1))


@pytest.fixture
def tasks(db_sessions, fake_clock):
    return TaskRepo(db_sessions, clock=fake_clock)


def new_job(jobs: JobRepo, lane: str = "long", **kw) -> str:
    new_job.n += 1
    values = dict(tenant="acme", filename="doc.pdf", media_type="application/pdf", size_bytes=10,
                  sha256=f"{new_job.n:064x}", options=OPTIONS, lane=lane)
    values.update(kw)
    return jobs.create(**values)[0].id


new_job.n = 0


def dead_pid() -> int:
    """The pid of a process that ran and was reaped."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


# -- the reconciler ------------------------------------------------------------------------


class Fleet:
    """A real TaskSteps (its pipeline never used) whose ``send`` records."""

    def __init__(self, settings, jobs, tasks, tmp_path):
        self.sent: list[tuple[str, str, str, float]] = []
        self.announced: list[str] = []
        self.jobs, self.tasks = jobs, tasks
        self.store = LocalStore(tmp_path / "store")
        self.pipeline = Pipeline(settings)
        self.finisher = JobFinisher(settings, jobs, self.store, None, announce=self.announced.append)
        self.steps = TaskSteps(settings, jobs, tasks, self.store, self.pipeline, ScratchDir(tmp_path / "work"),
                               self.finisher, self.send, worker_id("worker"))

    def send(self, job_id: str, name: str, queue: str, countdown_s: float) -> None:
        self.sent.append((job_id, name, queue, countdown_s))

    def reconciler(self, settings) -> TaskReconciler:
        return TaskReconciler(settings, self.jobs, self.tasks, self.steps, self.finisher)


@pytest.fixture
def fleet(settings, jobs, tasks, tmp_path):
    f = Fleet(settings, jobs, tasks, tmp_path)
    yield f
    f.pipeline.close()


def running_task(jobs, tasks, job_id: str, name: str, queue: str, worker: str = "worker:w1:1:0badf00d"):
    jobs.start(job_id)  # its first task started it (a no-op for a later one)
    tasks.add(job_id, [(name, queue)])
    lease = tasks.start(job_id, name, worker)
    assert lease is not None
    return lease


def task_row(tasks, job_id, name):
    return next(t for t in tasks.of_job(job_id) if t.name == name)


def test_a_task_taken_while_its_process_stops_is_not_run_and_its_attempt_not_counted(fleet, jobs, tasks):
    """A shutdown put a task back; a pool of the same process, stopping too,
    took it again: it goes back untouched (the job's attempts stay 0), so
    the restart runs it as its second attempt, not its third."""
    job = new_job(jobs, "long")
    first = running_task(jobs, tasks, job, group_task(0), "engine")
    assert tasks.release(first)  # put back for the shutdown
    fleet.steps.stopping.set()
    again = tasks.start(job, group_task(0), "embedded:w1:1:0badf00d")
    assert again is not None and again.attempt == 2
    assert fleet.steps.run_started(again) == "stopped"
    back = task_row(tasks, job, group_task(0))
    assert (back.state, back.attempts, back.takeovers) == ("queued", 1, 0)
    assert jobs.get_any(job).attempts == 0 and jobs.get_any(job).state == "running"


def test_copies_of_originals_of_ended_or_deleted_jobs_are_removed_and_the_others_kept(settings, fleet, jobs, tasks):
    """A fleet worker that ran an earlier group of a job keeps a copy of its
    original; when another process ends the job, or the tenant deletes it,
    that copy must not stay on this machine: the reconciler's pass removes it."""
    running, finished, deleted = new_job(jobs, "long"), new_job(jobs, "long"), new_job(jobs, "long")
    jobs.start(running)
    jobs.start(finished)
    jobs.finish(finished, JobState.SUCCEEDED)
    for job in (running, finished, deleted):
        with fleet.steps.originals.use(job, 8, lambda dest: dest.write_bytes(b"%PDF-1.7")):
            pass
    jobs.delete(deleted)
    assert fleet.steps.originals.job_ids() == sorted([running, finished, deleted])
    assert fleet.reconciler(settings).run_once()["copies_removed"] == 2
    assert fleet.steps.originals.job_ids() == [running]


def test_a_stale_running_task_is_taken_back_and_sent_again_to_its_queue(settings, fleet, jobs, tasks, fake_clock):
    rec = fleet.reconciler(settings)
    long_job, short_job, alive = new_job(jobs, "long"), new_job(jobs, "short"), new_job(jobs, "long")
    old = running_task(jobs, tasks, long_job, group_task(2), "engine")
    running_task(jobs, tasks, short_job, "whole", "short")
    beating = running_task(jobs, tasks, alive, "ingest", "cpu")
    fake_clock.advance(30 * S)
    tasks.heartbeat(beating)
    fake_clock.advance(31 * S)
    assert rec.run_once() == {"taken_back": 2, "resent": 0, "scheduled": 0, "ended": 0, "copies_removed": 0}
    assert sorted(fleet.sent) == sorted([(long_job, group_task(2), "engine", 0.0), (short_job, "whole", "short", 0.0)])
    back = task_row(tasks, long_job, group_task(2))
    assert (back.state, back.lease, back.worker_id, back.takeovers) == ("queued", None, None, 1)
    assert not tasks.heartbeat(old)  # the silent worker, should it wake, stops
    assert task_row(tasks, alive, "ingest").state == "running"
    assert {jobs.get_any(j).state for j in (long_job, short_job, alive)} == {"running"}
    assert rec.run_once() == {"taken_back": 0, "resent": 0, "scheduled": 0, "ended": 0, "copies_removed": 0}
    assert len(fleet.sent) == 2


def test_the_max_attempts_th_takeover_fails_the_job_and_its_open_tasks(settings, fleet, jobs, tasks, fake_clock):
    rec = fleet.reconciler(settings)
    job = new_job(jobs, "long", callback_url="https://example.com/hook")
    tasks.finish(running_task(jobs, tasks, job, "ingest", "cpu"))
    name = group_task(0)
    for n in range(1, MAX_ATTEMPTS):
        running_task(jobs, tasks, job, name, "engine")
        fake_clock.advance(PAST_LEASE)
        assert rec.run_once() == {"taken_back": 1, "resent": 0, "scheduled": 0, "ended": 0, "copies_removed": 0}
        assert task_row(tasks, job, name).takeovers == n
        assert fleet.sent[-1] == (job, name, "engine", 0.0) and len(fleet.sent) == n
    tasks.add(job, [(group_task(1), "engine")])
    tasks.finish(running_task(jobs, tasks, job, group_task(5), "engine"))
    running_task(jobs, tasks, job, name, "engine")
    fake_clock.advance(PAST_LEASE)
    assert rec.run_once()["taken_back"] == 0
    assert len(fleet.sent) == MAX_ATTEMPTS - 1  # not sent again
    failed = jobs.get_any(job)
    assert failed.state == "failed" and failed.error["code"] == "too_many_attempts"
    assert failed.error == too_many_attempts(settings)
    assert fleet.announced == [job]
    states = {t.name: (t.state, (t.error or {}).get("code")) for t in tasks.of_job(job)}
    assert states == {
        "ingest": ("done", None),
        name: ("failed", "too_many_attempts"),
        group_task(1): ("failed", "too_many_attempts"),
        group_task(5): ("done", None),
    }
    assert tasks.open_count(job) == 0
    assert rec.run_once() == {"taken_back": 0, "resent": 0, "scheduled": 0, "ended": 0, "copies_removed": 0}
    assert fleet.announced == [job]


def test_a_queued_task_never_started_is_sent_again_once_per_pass_that_finds_it(settings, fleet, jobs, tasks,
                                                                                  fake_clock):
    rec = fleet.reconciler(settings)
    job = new_job(jobs, "long")
    tasks.add(job, [("ingest", "cpu")])  # its message was lost
    fake_clock.advance(100 * S)
    tasks.add(job, [(group_task(0), "engine")])  # sent 100 s later
    fake_clock.advance(21 * S)
    assert rec.run_once() == {"taken_back": 0, "resent": 1, "scheduled": 0, "ended": 0, "copies_removed": 0}
    assert fleet.sent == [(job, "ingest", "cpu", 0.0)]
    assert rec.run_once()["resent"] == 0  # touch moved its enqueued_at
    fake_clock.advance(100 * S)
    assert rec.run_once()["resent"] == 1  # the group's turn
    assert fleet.sent[-1] == (job, group_task(0), "engine", 0.0)
    fake_clock.advance(21 * S)
    assert rec.run_once()["resent"] == 1  # the ingest again
    assert fleet.sent == [(job, "ingest", "cpu", 0.0), (job, group_task(0), "engine", 0.0), (job, "ingest", "cpu", 0.0)]
    assert jobs.get_any(job).state == "queued"
    assert tasks.start(job, "ingest", "w1") is not None  # a copy starts it once
    assert tasks.start(job, "ingest", "w2") is None


@pytest.mark.parametrize("lane, first, queue", [("short", "whole", "short"), ("long", "ingest", "cpu")])
def test_a_queued_job_with_no_task_gets_its_first_task(settings, fleet, jobs, tasks, fake_clock, lane, first, queue):
    rec = fleet.reconciler(settings)
    job = new_job(jobs, lane)  # the API died before sending it
    fake_clock.advance(30 * S)
    recent = new_job(jobs, lane)
    assert rec.run_once()["scheduled"] == 0  # within the grace
    fake_clock.advance(31 * S)
    assert rec.run_once() == {"taken_back": 0, "resent": 0, "scheduled": 1, "ended": 0, "copies_removed": 0}
    assert fleet.sent == [(job, first, queue, 0.0)]
    assert [(t.name, t.queue, t.state) for t in tasks.of_job(job)] == [(first, queue, "queued")]
    assert tasks.of_job(recent) == []
    assert rec.run_once()["scheduled"] == 0  # it has a task now
    fake_clock.advance(30 * S)
    assert rec.run_once()["scheduled"] == 1
    assert fleet.sent[-1] == (recent, first, queue, 0.0)


def test_a_running_job_whose_tasks_are_all_done_and_quiet_gets_its_next_tasks(settings, fleet, jobs, tasks,
                                                                             fake_clock):
    """Its worker died between finishing a task and queueing the next ones."""
    rec = fleet.reconciler(settings)
    options = {"formats": ["md"], "ocr": "off"}
    quiet = new_job(jobs, "long", options=options, pages_total=3)
    tasks.finish(running_task(jobs, tasks, quiet, "ingest", "cpu"))
    beating = new_job(jobs, "long", options=options, pages_total=3)
    lease = running_task(jobs, tasks, beating, "ingest", "cpu")
    fake_clock.advance(PAST_LEASE)
    tasks.heartbeat(lease)
    tasks.finish(lease)  # its worker finished it just now and is still queueing the next
    counts = rec.run_once()
    assert counts["scheduled"] == len(fleet.sent) >= 1
    queued = {(quiet, t.name, t.queue, 0.0) for t in tasks.of_job(quiet) if t.state == "queued"}
    assert set(fleet.sent) == queued and len(queued) == len(fleet.sent)
    assert [t.name for t in tasks.of_job(beating)] == ["ingest"]
    assert rec.run_once()["scheduled"] == 0  # it has open tasks now


def race(reconcilers: list[TaskReconciler]) -> list[dict[str, int]]:
    """One pass of every reconciler, all at once."""
    barrier = threading.Barrier(len(reconcilers))

    def one(rec):
        barrier.wait()
        return rec.run_once()

    with ThreadPoolExecutor(len(reconcilers)) as pool:
        return list(pool.map(one, reconcilers))


def test_two_reconcilers_at_once_take_back_and_send_each_stale_task_once(settings, fleet, jobs, tasks, fake_clock,
                                                                         db_engine):
    stale = []
    for i in range(12):
        job = new_job(jobs, "long")
        running_task(jobs, tasks, job, group_task(i), "engine")
        stale.append((job, group_task(i), "engine", 0.0))
    fake_clock.advance(PAST_LEASE)
    counts = race([fleet.reconciler(settings), fleet.reconciler(settings)])
    assert sorted(fleet.sent) == sorted(stale), counts  # each once
    assert sum(c["taken_back"] for c in counts) == len(stale)
    assert all(t.takeovers == 1 and t.state == "queued" for job, *_ in stale for t in tasks.of_job(job))


def test_two_reconcilers_at_once_resend_each_lost_message_once(settings, fleet, jobs, tasks, fake_clock, db_engine):
    lost = []
    for _ in range(12):
        job = new_job(jobs, "long")
        tasks.add(job, [("ingest", "cpu")])
        lost.append((job, "ingest", "cpu", 0.0))
    fake_clock.advance(PAST_REDELIVER)
    counts = race([fleet.reconciler(settings), fleet.reconciler(settings)])
    assert sorted(fleet.sent) == sorted(lost), counts  # each once
    assert sum(c["resent"] for c in counts) == len(lost)


# -- at start, cancel, jobs left by the whole-job runner ----------------------------------------


def test_at_start_the_tasks_of_a_dead_process_of_this_host_are_taken_back_at_once(settings, fleet, jobs, tasks,
                                                                                  caplog):
    rec = fleet.reconciler(settings)
    gone = dead_pid()
    held = {
        "dead": f"embedded:{HOST}:{gone}:0badf00d",
        "restarted": f"embedded:{HOST}:{os.getpid()}:0badf00d",  # this pid, another token: a container restarted
        "mine": worker_id("embedded"),
        "other_host": f"embedded:not-{HOST}:{gone}:0badf00d",
        "unreadable": "embedded",
    }
    ids = {}
    for what, worker in held.items():
        ids[what] = new_job(jobs, "long")
        running_task(jobs, tasks, ids[what], group_task(0), "engine", worker=worker)
        running_task(jobs, tasks, ids[what], group_task(1), "engine", worker=worker)
    # every heartbeat is fresh: without at_start nothing is taken back
    assert rec.run_once()["taken_back"] == 0
    with caplog.at_level("INFO", logger="longdoc.reconciler"):
        assert rec.run_once(at_start=True)["taken_back"] == 4
    recovered = [r for r in caplog.records if r.getMessage() == "job recovered after restart"]
    assert sorted(r.job_id for r in recovered) == sorted([ids["dead"], ids["restarted"]])  # once per job
    assert sorted(fleet.sent) == sorted((ids[w], group_task(i), "engine", 0.0)
                                        for w in ("dead", "restarted") for i in (0, 1))
    for what, job in ids.items():
        states = {t.state for t in tasks.of_job(job)}
        assert states == ({"queued"} if what in ("dead", "restarted") else {"running"}), what
        assert jobs.get_any(job).state == "running"
    assert rec.run_once(at_start=True)["taken_back"] == 0


def test_a_silent_task_of_a_job_whose_cancel_was_requested_ends_it_cancelled(settings, fleet, jobs, tasks,
                                                                             fake_clock):
    rec = fleet.reconciler(settings)
    job = new_job(jobs, "long", callback_url="https://example.com/hook")
    running_task(jobs, tasks, job, group_task(0), "engine")
    tasks.add(job, [(group_task(1), "engine")])
    jobs.request_cancel(job)
    fake_clock.advance(PAST_LEASE)
    assert rec.run_once()["taken_back"] == 0
    assert jobs.get_any(job).state == "cancelled"
    assert fleet.announced == [job] and fleet.sent == []
    assert tasks.open_count(job) == 0


@pytest.mark.parametrize("state", ["queued", "running"])
def test_a_job_left_by_the_whole_job_runner_gets_its_first_task_at_start(settings, fleet, jobs, tasks, state):
    """Upgraded from a version that ran embedded jobs whole: a job row queued
    or running, and no task row. At start it is given its first task at
    once; running, it resumes from its checkpoint."""
    rec = fleet.reconciler(settings)
    job = new_job(jobs, "long")
    if state == "running":
        jobs.start(job)
    assert rec.run_once(at_start=True)["scheduled"] == 1
    assert fleet.sent == [(job, "ingest", "cpu", 0.0)]
    assert [(t.name, t.state) for t in tasks.of_job(job)] == [("ingest", "queued")]


def test_with_a_transport_that_loses_nothing_no_queued_task_is_sent_again(settings, fleet, jobs, tasks, fake_clock):
    """The embedded server's pools read the rows themselves: a task queued
    long (waiting for room) is no lost message."""
    rec = TaskReconciler(settings, jobs, tasks, fleet.steps, fleet.finisher, redeliver=False)
    job = new_job(jobs, "long")
    tasks.add(job, [("ingest", "cpu")])
    fake_clock.advance(PAST_REDELIVER)
    assert rec.run_once() == {"taken_back": 0, "resent": 0, "scheduled": 0, "ended": 0, "copies_removed": 0}
    assert fleet.sent == []


# -- jobs whose tasks never stop them (an engine that does not return) ----------------------------


def test_a_job_past_its_deadline_whose_task_still_beats_fails_job_timeout_after_the_grace(settings, fleet, jobs,
                                                                                          tasks, fake_clock):
    rec = TaskReconciler(settings, jobs, tasks, fleet.steps, fleet.finisher, redeliver=False)  # the queued group waits
    limit = settings.service.timeout_seconds
    job = new_job(jobs, "long", callback_url="https://example.com/hook")
    stuck = running_task(jobs, tasks, job, group_task(0), "engine")
    tasks.add(job, [(group_task(1), "engine")])
    fake_clock.advance(timedelta(seconds=limit + LEASE - 1))
    assert tasks.heartbeat(stuck)  # its heartbeat thread keeps the lease fresh
    assert rec.run_once() == {"taken_back": 0, "resent": 0, "scheduled": 0, "ended": 0, "copies_removed": 0}  # within the grace
    fake_clock.advance(2 * S)
    assert tasks.heartbeat(stuck)
    assert rec.run_once() == {"taken_back": 0, "resent": 0, "scheduled": 0, "ended": 1, "copies_removed": 0}
    failed = jobs.get_any(job)
    assert failed.state == "failed" and failed.error == job_timed_out(settings).to_dict()
    assert failed.error["code"] == "job_timeout"
    assert fleet.announced == [job] and fleet.sent == []
    assert {t.name: (t.state, t.error["code"]) for t in tasks.of_job(job)} == {
        group_task(0): ("failed", "job_timeout"), group_task(1): ("failed", "job_timeout")}
    assert not tasks.heartbeat(stuck) and not tasks.holds(stuck) and not tasks.finish(stuck)  # should it return
    assert rec.run_once() == {"taken_back": 0, "resent": 0, "scheduled": 0, "ended": 0, "copies_removed": 0}
    assert fleet.announced == [job]


def test_a_cancel_its_running_task_never_sees_ends_the_job_cancelled_after_the_grace(settings, fleet, jobs, tasks,
                                                                                   fake_clock):
    rec = fleet.reconciler(settings)
    job = new_job(jobs, "short")
    stuck = running_task(jobs, tasks, job, "whole", "short")
    fake_clock.advance(10 * S)
    jobs.request_cancel(job)
    assert rec.run_once()["ended"] == 0  # seen now: its task has the grace to stop
    fake_clock.advance(timedelta(seconds=LEASE - 1))
    assert tasks.heartbeat(stuck)
    assert rec.run_once()["ended"] == 0
    assert jobs.get_any(job).state == "running"
    fake_clock.advance(2 * S)
    assert tasks.heartbeat(stuck)
    assert rec.run_once() == {"taken_back": 0, "resent": 0, "scheduled": 0, "ended": 1, "copies_removed": 0}
    ended = jobs.get_any(job)
    assert ended.state == "cancelled" and ended.error is None and not ended.cancel_requested
    assert [(t.state, t.error["code"]) for t in tasks.of_job(job)] == [("failed", "job_cancelled")]
    assert not tasks.heartbeat(stuck)
    assert tasks.open_count(job) == 0 and fleet.sent == []


def test_a_healthy_job_within_its_deadline_is_left_alone(settings, fleet, jobs, tasks, fake_clock):
    rec = fleet.reconciler(settings)
    job = new_job(jobs, "long")
    lease = running_task(jobs, tasks, job, group_task(0), "engine")
    fake_clock.advance(timedelta(seconds=settings.service.timeout_seconds - 1))
    assert tasks.heartbeat(lease)
    assert rec.run_once()["ended"] == 0
    assert jobs.get_any(job).state == "running" and tasks.holds(lease)
