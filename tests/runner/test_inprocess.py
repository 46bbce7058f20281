"""The embedded server's transport (:class:`InProcessTransport`) over real
task rows on SQLite and PostgreSQL: one bounded pool per queue, at most
``service.max_concurrency`` jobs at once of which at most
``max_concurrency - 1`` long ones (a short document always has room), the
most urgent job first, tasks due after a backoff waited for, a stop that
puts running tasks back in the queue, and a thread stuck on a task whose
job was ended under it replaced (the pool keeps its size).

The pools run a stand-in for :class:`TaskSteps` that moves the rows as the
real steps do (the job started, the task finished or put back) and holds
each task until the test lets it go; nothing is parsed (the real steps run
in ``tests/service``, through the server).
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest

from longdoc.config import load_settings
from longdoc.jobs.repo import JobRepo
from longdoc.jobs.states import JobState
from longdoc.jobs.task_repo import DONE, Lease, TaskRepo, first_tasks, group_task
from longdoc.runner import inprocess
from longdoc.runner.inprocess import InProcessTransport, pool_sizes
from tests.jobs.conftest import db_engine, db_sessions, pg_migrated_url  # noqa: F401  (fixtures)
from tests.pg import pg_server  # noqa: F401  (fixture)

OPTIONS = {"formats": ["md"], "ocr": "auto"}
WAIT_S = 20.0


class HeldSteps:
    """What the pools call: starts the job (as the real first task does),
    then holds the task until :meth:`finish` (the job ends) or
    :meth:`finish_task` (only the task), or until ``stopping`` is set
    (the task goes back to the queue, as the real steps do at a group)."""

    worker_id = "embedded:test-host:1:0badf00d"

    def __init__(self, jobs: JobRepo, tasks: TaskRepo) -> None:
        self.jobs, self.tasks = jobs, tasks
        self.stopping = threading.Event()
        self.order: list[tuple[str, str]] = []
        self.put_back: list[tuple[str, str]] = []
        self.handed_back: list[tuple[str, str]] = []
        #: a task that does not stop at ``stopping`` (a page group longer than the shutdown's grace)
        self.stubborn = False
        self._leases: dict[tuple[str, str], Lease] = {}
        self._gates: dict[tuple[str, str], tuple[threading.Event, bool]] = {}
        self._cv = threading.Condition()

    def run_started(self, lease: Lease) -> str:
        key = (lease.job_id, lease.name)
        self.jobs.start(lease.job_id)  # a first task starts its job (a no-op for a later one)
        gate = threading.Event()
        with self._cv:
            self._gates[key] = (gate, False)
            self._leases[key] = lease
            self.order.append(key)
            self._cv.notify_all()
        while not gate.is_set():
            if self.stopping.wait(0.02) and not self.stubborn:
                with self._cv:  # recorded first: a stop stops waiting once the row is released
                    self.put_back.append(key)
                    self._gates.pop(key, None)
                self.tasks.release(lease)
                return "stopped"
        with self._cv:
            _, end_job = self._gates[key]
        self.tasks.finish(lease)
        if end_job:
            self.jobs.finish(lease.job_id, JobState.SUCCEEDED)
        with self._cv:
            self._gates.pop(key)
            self._cv.notify_all()
        return "done"

    def hand_back(self) -> list[Lease]:
        """As the real steps do at the end of the grace: every task still
        held goes back to the queue (its run is abandoned)."""
        handed = []
        with self._cv:
            held = [(key, self._leases[key]) for key in self._gates]
        for key, lease in held:
            if self.tasks.release(lease):
                handed.append(lease)
                with self._cv:
                    self.handed_back.append(key)
        return handed

    def running(self) -> set[tuple[str, str]]:
        with self._cv:
            return set(self._gates)

    def wait_running(self, expected: set[tuple[str, str]]) -> None:
        """Wait until exactly the ``expected`` tasks are held, and check that
        nothing more starts for a while."""
        deadline = time.monotonic() + WAIT_S
        with self._cv:
            while set(self._gates) != expected:
                assert time.monotonic() < deadline, f"running {sorted(self._gates)}, not {sorted(expected)}"
                self._cv.wait(0.1)
            self._cv.wait(0.5)
            assert set(self._gates) == expected, f"running {sorted(self._gates)}, not {sorted(expected)}"

    def finish(self, key: tuple[str, str], end_job: bool = True) -> None:
        with self._cv:
            gate, _ = self._gates[key]
            self._gates[key] = (gate, end_job)
        gate.set()


@pytest.fixture
def repos(db_sessions):
    return JobRepo(db_sessions, retention=timedelta(days=1)), TaskRepo(db_sessions)


@pytest.fixture
def world(repos, tmp_path):
    made: list[InProcessTransport] = []

    def make(max_concurrency: int, lease_seconds: float = 60.0, grace_seconds: float = 8.0):
        jobs, tasks = repos
        settings = load_settings(overrides={"service": {"max_concurrency": max_concurrency,
                                                        "shutdown_grace_seconds": grace_seconds},
                                            "queue": {"lease_seconds": lease_seconds},
                                            "database": {"url": f"sqlite:///{tmp_path}/unused.db"}})
        transport = InProcessTransport(settings, tasks, jobs)
        steps = HeldSteps(jobs, tasks)
        made.append(transport)
        return transport, steps

    yield make
    for transport in made:
        transport.stop()


def new_job(repos, lane: str, priority: int = 0) -> str:
    """A job as the service records it: its row and its first task."""
    jobs, tasks = repos
    new_job.n += 1
    job, _ = jobs.create(tenant="acme", filename="doc.pdf", media_type="application/pdf", size_bytes=10,
                         sha256=f"{new_job.n:064x}", options=OPTIONS, lane=lane, priority=priority)
    tasks.add(job.id, first_tasks(lane))
    return job.id


new_job.n = 0


def test_pool_sizes():
    assert pool_sizes(16) == {"short": 16, "cpu": 15, "engine": 15}
    assert pool_sizes(1) == {"short": 1, "cpu": 1, "engine": 1}


def test_at_most_max_concurrency_jobs_and_a_short_one_is_never_stuck_behind_long_ones(world, repos):
    transport, steps = world(max_concurrency=3)
    longs = [new_job(repos, "long") for _ in range(4)]
    transport.start(steps)
    steps.wait_running({(longs[0], "ingest"), (longs[1], "ingest")})  # long ones: at most max - 1
    shorts = [new_job(repos, "short") for _ in range(2)]
    for job in shorts:
        transport.send(job, "whole", "short")
    steps.wait_running({(longs[0], "ingest"), (longs[1], "ingest"), (shorts[0], "whole")})  # max in all
    steps.finish((shorts[0], "whole"))  # room for one job, and long ones are at their bound: the short one
    steps.wait_running({(longs[0], "ingest"), (longs[1], "ingest"), (shorts[1], "whole")})
    steps.finish((shorts[1], "whole"))
    steps.finish((longs[0], "ingest"))  # that job ends: the next long one starts
    steps.wait_running({(longs[1], "ingest"), (longs[2], "ingest")})
    assert repos[0].get_any(longs[3]).state == "queued"


def test_a_running_jobs_next_tasks_need_no_room_and_run_in_their_own_pools(world, repos):
    jobs, tasks = repos
    transport, steps = world(max_concurrency=2)  # pools: short 2, cpu 1, engine 1
    job = new_job(repos, "long")
    transport.start(steps)
    steps.wait_running({(job, "ingest")})
    other = new_job(repos, "long")  # no room: long ones are at their bound (max - 1)
    tasks.add(job, [(group_task(i), "engine") for i in (2, 0, 1)] + [("render:000003", "cpu")])
    transport.send(job, group_task(0), "engine")
    steps.wait_running({(job, "ingest"), (job, group_task(0))})  # groups in order
    steps.finish((job, "ingest"), end_job=False)
    steps.wait_running({(job, group_task(0)), (job, "render:000003")})  # the one cpu thread is free again
    assert jobs.get_any(other).state == "queued"
    steps.finish((job, group_task(0)), end_job=False)
    steps.wait_running({(job, group_task(1)), (job, "render:000003")})


def test_the_most_urgent_job_goes_first(world, repos):
    transport, steps = world(max_concurrency=1)
    low = new_job(repos, "short", priority=0)
    high = new_job(repos, "short", priority=9)
    middle = new_job(repos, "short", priority=5)
    transport.start(steps)
    for job in (high, middle, low):
        steps.wait_running({(job, "whole")})
        steps.finish((job, "whole"))
    assert steps.order == [(high, "whole"), (middle, "whole"), (low, "whole")]


def test_a_task_due_after_a_backoff_waits_for_it(world, repos):
    jobs, tasks = repos
    transport, steps = world(max_concurrency=2)
    job = new_job(repos, "short")
    jobs.start(job)
    tasks.release(tasks.start(job, "whole", "w0"), {"code": "storage_error"}, due_in_s=1.5)
    t0 = time.monotonic()
    transport.start(steps)
    transport.send(job, "whole", "short", 1.5)
    steps.wait_running({(job, "whole")})
    assert time.monotonic() - t0 >= 1.4


def test_stop_puts_running_tasks_back_in_the_queue(world, repos):
    jobs, tasks = repos
    transport, steps = world(max_concurrency=2)
    short, long_ = new_job(repos, "short"), new_job(repos, "long")
    transport.start(steps)
    steps.wait_running({(short, "whole"), (long_, "ingest")})
    t0 = time.monotonic()
    transport.begin_stop()  # what SIGTERM does: flags only
    transport.stop()
    assert time.monotonic() - t0 < 5
    assert sorted(steps.put_back) == sorted([(short, "whole"), (long_, "ingest")])
    assert steps.handed_back == []  # they went back themselves, within the grace
    for job in (short, long_):
        assert {t.state for t in tasks.of_job(job)} == {"queued"}  # ready for the next start
        assert jobs.get_any(job).state == "running"
    transport.send(short, "whole", "short")  # after stop: nothing runs
    time.sleep(0.3)
    assert steps.running() == set() and {t.state for t in tasks.of_job(short)} == {"queued"}
    assert not any(t.state == DONE for t in tasks.of_job(long_))


def test_a_task_still_running_at_the_end_of_the_grace_is_handed_back_not_left_to_a_takeover(world, repos):
    """A page group longer than ``service.shutdown_grace_seconds``: the
    stop does not wait for it past the grace, counted from the signal, and
    its task goes back to the queue as a put-back (no takeover), so the next
    start runs it at once and ``service.max_attempts`` is not used up."""
    jobs, tasks = repos
    transport, steps = world(max_concurrency=1, grace_seconds=1.0)
    steps.stubborn = True
    job = new_job(repos, "short")
    transport.start(steps)
    steps.wait_running({(job, "whole")})
    t0 = time.monotonic()
    transport.begin_stop()
    time.sleep(0.5)  # the rest of the shutdown (open requests) takes some of the grace
    transport.stop()
    waited = time.monotonic() - t0
    assert 0.9 <= waited < 4, waited
    assert steps.handed_back == [(job, "whole")]
    (task,) = tasks.of_job(job)
    assert (task.state, task.takeovers, task.lease) == ("queued", 0, None)
    assert jobs.get_any(job).state == "running"


def test_a_thread_stuck_on_a_task_whose_job_was_ended_under_it_is_replaced(world, repos, monkeypatch, caplog):
    """An engine that never returns: the reconciler ended the job and closed
    its task; the pool (one thread) gives that thread up and runs the next
    job, and the stuck thread, when it returns at last, exits."""
    monkeypatch.setattr(inprocess, "POLL_S", 0.2)
    jobs, tasks = repos
    transport, steps = world(max_concurrency=1, lease_seconds=1.0)
    stuck = new_job(repos, "short")
    transport.start(steps)
    steps.wait_running({(stuck, "whole")})
    pool = transport._pools["short"]
    [stuck_thread] = [t for t, *_ in pool.busy()]
    nxt = new_job(repos, "short")
    time.sleep(1.5)
    assert steps.running() == {(stuck, "whole")}  # its lease holds: nothing is given up
    with caplog.at_level("WARNING", logger="longdoc.dispatch"):
        jobs.finish(stuck, JobState.FAILED)  # what the reconciler does past the job's deadline
        tasks.fail_open(stuck, {"code": "job_timeout"})
        steps.wait_running({(stuck, "whole"), (nxt, "whole")})
    [warning] = [r for r in caplog.records if r.getMessage().startswith("pool thread abandoned")]
    assert (warning.job_id, warning.task, warning.queue) == (stuck, "whole", "short")
    steps.finish((nxt, "whole"))
    steps.finish((stuck, "whole"), end_job=False)  # it returns at last (its finish changes nothing)
    stuck_thread.join(WAIT_S)
    assert not stuck_thread.is_alive()
    assert len(pool._threads) == 1 and all(t.is_alive() for t in pool._threads)
    last = new_job(repos, "short")
    transport.send(last, "whole", "short")
    steps.wait_running({(last, "whole")})  # one thread, working
    steps.finish((last, "whole"))
    assert jobs.get_any(stuck).state == "failed"
