"""Job starts, one rule on both transports: at most N jobs at
once, at most N - 1 of them long, a short one always with room. The
embedded pools' side is in test_inprocess.py; here the fleet's side, where
a worker is handed a job's first task (``queue.max_running_jobs``)."""

from __future__ import annotations

import pytest

from longdoc.config import load_settings
from longdoc.jobs.states import JobState
from longdoc.runner.starts import RETRY_S, lanes_with_room
from tests.runner.test_reconciler import Fleet, jobs, new_job, running_task, task_row, tasks  # noqa: F401


@pytest.mark.parametrize(("running", "limit", "room"), [
    ({}, None, ("short", "long")),
    ({"a": "long", "b": "long", "c": "long"}, None, ("short", "long")),
    ({}, 1, ("short", "long")),
    ({"a": "short"}, 1, ()),
    ({"a": "long"}, 2, ("short",)),          # the last place is a short document's
    ({"a": "short"}, 2, ("short", "long")),
    ({"a": "long", "b": "short"}, 2, ()),
])
def test_the_lanes_with_room(running, limit, room):
    assert lanes_with_room(running, limit) == room


def fleet_settings(tmp_path, limit):
    return load_settings(overrides={
        "queue": {"max_running_jobs": limit},
        "service": {"work_dir": str(tmp_path / "work")},
        "storage": {"url": f"file://{tmp_path}/store"},
        "database": {"url": f"sqlite:///{tmp_path}/unused.db"},
    })


def first_task_queued(tasks, job, name, queue):
    tasks.add(job, [(name, queue)])


def test_a_first_task_without_room_stays_queued_and_is_sent_again(jobs, tasks, tmp_path):
    fleet = Fleet(fleet_settings(tmp_path, 2), jobs, tasks, tmp_path)
    try:
        busy = new_job(jobs, "long")
        running_task(jobs, tasks, busy, "ingest", "cpu")
        waiting = new_job(jobs, "long")
        first_task_queued(tasks, waiting, "ingest", "cpu")

        assert fleet.steps.run(waiting, "ingest") == "waiting"
        assert jobs.get_any(waiting).state == JobState.QUEUED.value     # not started
        row = task_row(tasks, waiting, "ingest")
        assert row.state == "queued" and row.attempts == 0               # no attempt spent
        assert fleet.sent == [(waiting, "ingest", "cpu", RETRY_S)]       # offered again later

        jobs.finish(busy, JobState.SUCCEEDED)                            # room again
        assert fleet.steps.run(waiting, "ingest") != "waiting"
        assert jobs.get_any(waiting).state != JobState.QUEUED.value      # it started
    finally:
        fleet.pipeline.close()


def test_a_short_document_has_room_beside_long_ones(jobs, tasks, tmp_path):
    fleet = Fleet(fleet_settings(tmp_path, 2), jobs, tasks, tmp_path)
    try:
        busy = new_job(jobs, "long")
        running_task(jobs, tasks, busy, "ingest", "cpu")
        short = new_job(jobs, "short")
        first_task_queued(tasks, short, "whole", "short")
        assert fleet.steps.run(short, "whole") != "waiting"
        assert jobs.get_any(short).state != JobState.QUEUED.value
    finally:
        fleet.pipeline.close()


def test_without_a_limit_the_fleet_starts_every_job(jobs, tasks, tmp_path):
    fleet = Fleet(fleet_settings(tmp_path, None), jobs, tasks, tmp_path)
    try:
        for _ in range(3):
            running_task(jobs, tasks, new_job(jobs, "long"), "ingest", "cpu")
        job = new_job(jobs, "long")
        first_task_queued(tasks, job, "ingest", "cpu")
        assert fleet.steps.run(job, "ingest") != "waiting"
        assert jobs.get_any(job).state != JobState.QUEUED.value
    finally:
        fleet.pipeline.close()
