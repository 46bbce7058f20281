"""The reconciler: the database is the source of truth, so work that a dead
worker, a lost message or a restarted broker dropped is found there and
run again from its last checkpointed group. One for both backends: the
fleet runs one in every worker process, the embedded server one in its
own process (the fleet's API runs none: with no worker alive there is
nothing to hand work to).

- a running job past its deadline (``service.timeout_seconds`` from its
  start) by more than a grace of ``queue.lease_seconds`` fails
  ``job_timeout``, and one whose cancel was requested more than that grace
  ago ends cancelled, with its open tasks, when its own task did not end it
  (it checks only between page groups: an engine that never returns on a
  page would hold the job running forever, its heartbeat fresh). The stuck
  run, should it ever return, finds its lease gone and writes nothing (the
  embedded server also gives its pool thread up:
  :mod:`longdoc.runner.inprocess`);
- a running task whose heartbeat went stale is taken back and sent again
  (the job fails with ``too_many_attempts`` when this would be that task's
  ``service.max_attempts``-th silent worker: it is what kills them; a job
  whose cancel was requested ends cancelled instead);
- at start (:meth:`TaskReconciler.run_once` with ``at_start``), a running
  task whose worker id names a dead process of this host is taken back at
  once, without waiting for its lease (the embedded server killed and
  restarted);
- a queued task sent more than ``queue.redeliver_after_seconds`` ago and
  never started is sent again (its message was lost with the broker; not
  with a transport that loses none, ``redeliver=False``: the embedded
  server's pools read the rows themselves);
- a queued or running job with no queued or running task (the API died
  between creating the job and sending it, a worker died between two
  steps, a job left by a version that ran jobs whole) gets its next tasks
  from :meth:`TaskSteps.schedule`;
- this process's copies of originals whose job has ended, expired or was
  deleted are removed (the process that ended a job removes its own copy
  at once; a fleet worker that ran an earlier group of it kept one).

Every move is a compare-and-set, and a second copy of a message starts
nothing, so any number of reconcilers may run at once.
"""

from __future__ import annotations

import contextlib
import logging
from datetime import datetime, timedelta

from longdoc.config import Settings
from longdoc.errors import JobCancelled, JobStopped, TooManyAttempts
from longdoc.jobs.models import Job, JobTask
from longdoc.jobs.repo import JobRepo
from longdoc.jobs.states import IllegalTransition, JobState
from longdoc.jobs.task_repo import TaskRepo, queue_for
from longdoc.runner.finisher import JobFinisher
from longdoc.runner.lease import dead_on_this_host
from longdoc.runner.steps import TaskSteps, job_timed_out

log = logging.getLogger("longdoc.reconciler")


def too_many_attempts(settings: Settings) -> dict:
    n = settings.service.max_attempts
    return TooManyAttempts(f"The worker running this job stopped {n} time(s) while running it.",
                           attempts=n).to_dict()


class TaskReconciler:
    """Overdue jobs, stale leases, lost messages, jobs with no task."""

    def __init__(self, settings: Settings, repo: JobRepo, tasks: TaskRepo, steps: TaskSteps,
                 finisher: JobFinisher, *, redeliver: bool = True) -> None:
        self.settings, self.repo, self.tasks, self.steps, self.finisher = settings, repo, tasks, steps, finisher
        self.redeliver = redeliver
        #: job id → when this reconciler first saw its cancel requested (the row keeps no time for it)
        self._cancel_seen: dict[str, datetime] = {}

    def run_once(self, *, at_start: bool = False) -> dict[str, int]:
        """One pass; returns how many tasks it took back, resent, and jobs it
        scheduled. ``at_start``: also take back at once the tasks of dead
        processes of this host, and schedule jobs with no task without
        waiting for their grace (this process just started: nothing of its
        own is between two steps)."""
        q = self.settings.queue
        counts = {"taken_back": 0, "resent": 0, "scheduled": 0, "ended": self._end_overdue()}
        stale = self.tasks.stale(timedelta(seconds=q.lease_seconds))
        if at_start:
            seen = {(t.job_id, t.name) for t in stale}
            stale += [t for t in self.tasks.running() if (t.job_id, t.name) not in seen
                      and dead_on_this_host(t.worker_id)]
        recovered: set[str] = set()
        for task in stale:
            taken = self._take_back(task)
            counts["taken_back"] += taken
            if taken and at_start and task.job_id not in recovered:
                recovered.add(task.job_id)
                log.info("job recovered after restart", extra={"job_id": task.job_id, "task": task.name})
        redeliver = timedelta(seconds=q.redeliver_after_seconds)
        for task in self.tasks.unstarted(redeliver) if self.redeliver else []:
            if self.tasks.touch(task.job_id, task.name, older_than=redeliver):  # one reconciler resends it
                self.steps.send_task(task.job_id, task.name, task.queue)
                counts["resent"] += 1
        grace = timedelta(0) if at_start else timedelta(seconds=q.lease_seconds)
        for job in self.tasks.jobs_without_open_tasks(grace):
            counts["scheduled"] += len(self.steps.schedule(job))
        counts["copies_removed"] = self._forget_ended_copies()
        if any(counts.values()):
            log.info("reconciled", extra=counts)
        return counts

    def _forget_ended_copies(self) -> int:
        """Remove this process's copies of originals of jobs no longer
        queued or running (gone included); returns how many."""
        removed = 0
        for job_id in self.steps.originals.job_ids():
            job = self.repo.get_any(job_id)
            if job is None or job.state not in (JobState.QUEUED.value, JobState.RUNNING.value):
                self.steps.originals.forget(job_id)
                removed += 1
        return removed

    def _end_overdue(self) -> int:
        """End the running jobs whose tasks did not stop them in time: past
        their deadline by more than the grace (``queue.lease_seconds``) →
        failed ``job_timeout``; cancel requested more than the grace ago →
        cancelled. Returns how many it ended. The request's time is when
        this reconciler first saw it (the row keeps none), so a cancel
        takes effect within the grace and a pass."""
        grace = timedelta(seconds=self.settings.queue.lease_seconds)
        limit = timedelta(seconds=self.settings.service.timeout_seconds)
        now = self.repo.now()
        ended = 0
        overdue = self.repo.running_overdue(limit + grace)
        cancelled = {job.id for job in overdue if job.cancel_requested}
        self._cancel_seen = {j: self._cancel_seen.get(j, now) for j in cancelled}
        for job in overdue:  # a cancel first, as a task's own control checks it
            if job.cancel_requested and now - self._cancel_seen[job.id] > grace:
                ended += self._end_stuck(job, JobCancelled("The job was cancelled."), "cancel requested")
            elif job.started_at is not None and now - job.started_at > limit + grace:
                ended += self._end_stuck(job, job_timed_out(self.settings), "past its deadline")
        return ended

    def _end_stuck(self, job: Job, exc: JobStopped, why: str) -> int:
        """End ``job`` as its task would have with ``exc`` (the same final
        state and error) and close its open tasks; their runs, should they
        return, find their leases gone."""
        seconds = max(0.0, (self.repo.now() - job.started_at).total_seconds()) if job.started_at else 0.0
        try:
            self.finisher.stopped(job, exc, seconds, 0)
        except IllegalTransition:
            return 0  # its task (or another reconciler) ended it meanwhile
        closed = self.tasks.fail_open(job.id, exc.to_dict())
        self._cancel_seen.pop(job.id, None)
        log.warning("job ended: its task did not stop it", extra={
            "job_id": job.id, "why": why, "error": exc.code, "open_tasks": closed})
        return 1

    def _take_back(self, task: JobTask) -> int:
        job = self.repo.get_any(task.job_id)
        if job is None:
            return 0
        if job.state == JobState.RUNNING.value and job.cancel_requested:
            return self._end(job, task, JobState.CANCELLED, None)
        if task.takeovers + 1 >= self.settings.service.max_attempts and job.state == JobState.RUNNING.value:
            return self._end(job, task, JobState.FAILED, too_many_attempts(self.settings))
        if not self.tasks.take_back(task):
            return 0
        log.warning("task taken back from a silent worker", extra={
            "job_id": task.job_id, "task": task.name, "worker": task.worker_id, "takeovers": task.takeovers + 1})
        self.steps.send_task(task.job_id, task.name, queue_for(job.lane, task.name))
        return 1

    def _end(self, job: Job, task: JobTask, state: JobState, error: dict | None) -> int:
        """End the job of a silent task (cancelled as asked, or failed: its
        workers keep dying) and close its open tasks."""
        with contextlib.suppress(IllegalTransition):
            self.finisher.finish(job, state, 0.0, 0, error=error)
        self.tasks.fail_open(job.id, error or {"code": "job_cancelled"})
        log.warning("job ended with a silent task", extra={"job_id": job.id, "task": task.name,
                                                            "state": state.value})
        return 0
