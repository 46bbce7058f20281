"""Reconcilers: the database is the source of truth, so work that a dead
worker, a lost message or a restarted broker dropped is found there and
run again from its last checkpointed group.

Embedded (:class:`JobReconciler`, jobs run whole in one process): a
running job whose heartbeat is older than ``queue.lease_seconds`` (or
whose worker id names a dead process of this host) goes back to the queue,
or fails with ``too_many_attempts`` on its ``service.max_attempts``-th
death.

Fleet (:class:`TaskReconciler`, jobs run as tasks on Celery workers):

- a running task whose heartbeat went stale is taken back and sent again
  (the job fails with ``too_many_attempts`` when this would be that task's
  ``service.max_attempts``-th silent worker: it is what kills them);
- a queued task sent more than ``queue.redeliver_after_seconds`` ago and
  never started is sent again (its message was lost with the broker);
- a queued or running job with no queued or running task (the API died
  between creating the job and sending it, a worker died between two
  steps) gets its next tasks from :meth:`FleetSteps.schedule`.

Every move is a compare-and-set, and a second copy of a message starts
nothing, so any number of reconcilers may run at once: the fleet runs one
in every worker process (the API runs none: with no worker alive there is
nothing to hand work to).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import timedelta

from longdoc.config import Settings
from longdoc.errors import TooManyAttempts
from longdoc.jobs.lease import dead_on_this_host
from longdoc.jobs.models import Job
from longdoc.jobs.repo import JobRepo
from longdoc.jobs.runner import JobFinisher
from longdoc.jobs.states import IllegalTransition, JobState
from longdoc.jobs.steps import FleetSteps, queue_for
from longdoc.jobs.task_repo import TaskRepo

log = logging.getLogger("longdoc.reconciler")


def too_many_attempts(settings: Settings) -> dict:
    n = settings.service.max_attempts
    return TooManyAttempts(f"The worker running this job stopped {n} time(s) while running it.",
                           attempts=n).to_dict()


class JobReconciler:
    """Embedded backend: stale running jobs back to the queue."""

    def __init__(self, settings: Settings, repo: JobRepo, submit: Callable[[Job], None],
                 announce: Callable[[str], None]) -> None:
        self.settings, self.repo, self.submit, self.announce = settings, repo, submit, announce

    def run_once(self, *, at_start: bool = False) -> int:
        """Recover what is stale (at start also what names a dead process
        of this host, without waiting for its lease); returns how many."""
        lease = timedelta(seconds=self.settings.queue.lease_seconds)
        stale = set(self.repo.interrupted(lease))
        if at_start:
            stale |= {j for j in self.repo.running_ids() if dead_on_this_host(_owner(self.repo, j))}
        for job_id in sorted(stale):
            self._recover(job_id, "job recovered after restart" if at_start else "job recovered after its lease ran out")
        return len(stale)

    def _recover(self, job_id: str, why: str) -> None:
        job = self.repo.recover(job_id, self.settings.service.max_attempts, too_many_attempts(self.settings))
        if job is None:
            return
        log.info(why, extra={"job_id": job_id, "state": job.state, "recoveries": job.recoveries})
        if JobState(job.state).terminal:
            self.announce(job_id)
        elif job.state == JobState.QUEUED.value:
            self.submit(job)


class TaskReconciler:
    """Fleet backend: stale leases, lost messages, jobs with no task."""

    def __init__(self, settings: Settings, repo: JobRepo, tasks: TaskRepo, steps: FleetSteps,
                 finisher: JobFinisher) -> None:
        self.settings, self.repo, self.tasks, self.steps, self.finisher = settings, repo, tasks, steps, finisher

    def run_once(self) -> dict[str, int]:
        """One pass; returns how many tasks it took back, resent, and jobs it scheduled."""
        q = self.settings.queue
        counts = {"taken_back": 0, "resent": 0, "scheduled": 0}
        for task in self.tasks.stale(timedelta(seconds=q.lease_seconds)):
            counts["taken_back"] += self._take_back(task)
        redeliver = timedelta(seconds=q.redeliver_after_seconds)
        for task in self.tasks.unstarted(redeliver):
            if self.tasks.touch(task.job_id, task.name, older_than=redeliver):  # one reconciler resends it
                self.steps.send_task(task.job_id, task.name, task.queue)
                counts["resent"] += 1
        for job in self.tasks.jobs_without_open_tasks(timedelta(seconds=q.lease_seconds)):
            counts["scheduled"] += len(self.steps.schedule(job))
        if any(counts.values()):
            log.info("reconciled", extra=counts)
        return counts

    def _take_back(self, task) -> int:
        job = self.repo.get_any(task.job_id)
        if job is None:
            return 0
        if task.takeovers + 1 >= self.settings.service.max_attempts and job.state == JobState.RUNNING.value:
            error = too_many_attempts(self.settings)
            try:
                self.finisher.finish(job, JobState.FAILED, 0.0, 0, error=error)
            except IllegalTransition:
                pass
            self.tasks.fail_open(job.id, error)
            return 0
        if not self.tasks.take_back(task):
            return 0
        log.warning("task taken back from a silent worker", extra={
            "job_id": task.job_id, "task": task.name, "worker": task.worker_id, "takeovers": task.takeovers + 1})
        self.steps.send_task(task.job_id, task.name, queue_for(job, task.name))
        return 1


class Loop:
    """Runs ``step`` every ``interval_s`` on a daemon thread until stopped
    (exceptions are logged, never end the loop)."""

    def __init__(self, step: Callable[[], object], interval_s: float, name: str) -> None:
        self.step, self.interval_s = step, interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Loop:
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.step()
            except Exception:
                log.exception("background pass failed", extra={"loop": self._thread.name})


def _owner(repo: JobRepo, job_id: str) -> str | None:
    job = repo.get_any(job_id)
    return job.worker_id if job is not None else None
