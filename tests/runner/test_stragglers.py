"""A task still writing when its job ends leaves nothing of the job behind.

A cancel is seen by one task at its next group while others of the same
job are in the middle of theirs; a timeout or a delete can end the job
under a task too. The job's end removes its work files; a task that was
writing (a render task preparing its group, a group task saving its
checkpoint) must not put files back afterwards: a deleted job's data
would stay on disk, and a cancelled one's work folder would never go.
A task whose lease was merely taken over (its job still running) keeps
what it wrote: the new owner writes the same keys.

Real :class:`TaskSteps` over a real store and database (SQLite and
PostgreSQL) and a real born-digital document; the job is ended from inside
the write, exactly where the race lands.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from longdoc.jobs.repo import JobRepo
from longdoc.jobs.states import JobState
from longdoc.jobs.task_repo import TaskRepo, group_task, render_task
from longdoc.runner import steps as steps_module
from longdoc.storage import keys
from longdoc.storage.checkpoint import StoreCheckpoint
from tests.docgen import english_report
from tests.runner.test_reconciler import Fleet, new_job, settings  # noqa: F401  (fixture)


@pytest.fixture
def jobs(db_sessions):
    return JobRepo(db_sessions, retention=timedelta(days=1))  # the real clock: the job's deadline is ahead


@pytest.fixture
def tasks(db_sessions):
    return TaskRepo(db_sessions)


@pytest.fixture
def fleet(settings, jobs, tasks, tmp_path):  # noqa: F811
    f = Fleet(settings, jobs, tasks, tmp_path)
    yield f
    f.pipeline.close()


@pytest.fixture
def job(fleet, jobs, tmp_path_factory):  # noqa: F811
    """A running long-lane job of 8 born-digital pages, its original in the store."""
    pdf = english_report(tmp_path_factory.mktemp("straggler"), pages=8, seed=3).pdf_path.read_bytes()
    job_id = new_job(jobs, "long", size_bytes=len(pdf))
    fleet.store.put_bytes(keys.original_key("acme", job_id), pdf)
    jobs.start(job_id)
    return job_id


def end(fleet, job_id: str, state: JobState = JobState.CANCELLED) -> None:
    """What another task does when it sees the cancel: the job ends, its
    open tasks fail, its work files go."""
    fleet.jobs.finish(job_id, state)
    fleet.tasks.fail_open(job_id, {"code": "cancelled"})
    fleet.store.delete_prefix(keys.work_prefix("acme", job_id))


def stored(fleet, prefix: str) -> list[str]:
    return list(fleet.store.list(prefix))


def test_a_render_task_whose_job_ends_while_it_prepares_its_group_leaves_no_work_files(fleet, job, monkeypatch):
    real = steps_module.prepare_group

    def ended_meanwhile(*args, **kwargs):
        end(fleet, job)
        return real(*args, **kwargs)

    monkeypatch.setattr(steps_module, "prepare_group", ended_meanwhile)
    fleet.tasks.add(job, [(render_task(0), "cpu")])
    assert fleet.steps.run(job, render_task(0)) == "lost"
    assert stored(fleet, keys.work_prefix("acme", job)) == []


def test_a_group_task_whose_job_ends_while_it_saves_its_checkpoint_leaves_no_pages(fleet, job, monkeypatch):
    real = StoreCheckpoint.save_group

    def ended_meanwhile(self, *args, **kwargs):
        end(fleet, job)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(StoreCheckpoint, "save_group", ended_meanwhile)
    fleet.tasks.add(job, [(group_task(0), "engine")])
    assert fleet.steps.run(job, group_task(0)) == "lost"
    assert [k for k in stored(fleet, keys.checkpoint_prefix("acme", job)) if "/pages/" in k or "/groups/" in k] == []


def test_a_group_task_whose_lease_was_taken_over_keeps_its_pages_for_the_new_owner(fleet, job, monkeypatch):
    real = StoreCheckpoint.save_group

    def taken_meanwhile(self, *args, **kwargs):
        running = next(t for t in fleet.tasks.of_job(job) if t.name == group_task(0))
        assert fleet.tasks.take_back(running)  # the reconciler thought this worker silent
        return real(self, *args, **kwargs)

    monkeypatch.setattr(StoreCheckpoint, "save_group", taken_meanwhile)
    fleet.tasks.add(job, [(group_task(0), "engine")])
    assert fleet.steps.run(job, group_task(0)) == "lost"
    assert fleet.jobs.get_any(job).state == JobState.RUNNING.value
    assert [k for k in stored(fleet, keys.checkpoint_prefix("acme", job)) if "/pages/" in k]
