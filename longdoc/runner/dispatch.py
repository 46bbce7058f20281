"""Dispatch: the API side of running a job, the same for both backends.

The database is the source of truth; a transport only carries
``(job_id, task name)``. :meth:`Dispatcher.submit` records a new job's
first task (``whole`` on the ``short`` queue for a short document,
``ingest`` on ``cpu`` for a long one: :func:`~longdoc.jobs.task_repo.first_tasks`)
and hands it to the transport's ``send``: the Celery broker
(:func:`longdoc.runner.celery_app.sender`) or the embedded server's pools
(:class:`longdoc.runner.inprocess.InProcessTransport`). Everything after that
is the task steps' (:mod:`longdoc.runner.steps`).

- :meth:`submit` never refuses an accepted job (the bound
  ``service.max_queued`` is checked when the job row is created), and a
  transport that cannot take the task loses nothing: its row is queued and
  the reconciler sends it again;
- :meth:`stop_intake` makes the service refuse new jobs (503) from then on.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from longdoc.errors import JobCancelled
from longdoc.jobs.task_repo import TaskRepo, first_tasks

if TYPE_CHECKING:
    from longdoc.runner.steps import Send

log = logging.getLogger("longdoc.dispatch")


class Dispatcher:
    def __init__(self, tasks: TaskRepo, send: Send) -> None:
        self.tasks = tasks
        self._send = send
        self._stopping = False

    def submit(self, job_id: str, lane: str) -> None:
        """Queue the new job's first task and send it (idempotent)."""
        for name, queue in self.tasks.add(job_id, first_tasks(lane)):
            try:
                self._send(job_id, name, queue, 0.0)
            except Exception as exc:
                log.warning("job accepted but not sent; the reconciler will send it",
                            extra={"job_id": job_id, "error": type(exc).__name__})

    def discard(self, job_id: str) -> None:
        """A job that ended before it ran (a queued job cancelled): close
        its queued task, so no queue counts it and nothing starts it."""
        self.tasks.fail_open(job_id, JobCancelled("The job was cancelled before it ran.").to_dict())

    @property
    def accepting(self) -> bool:
        """False once shutdown began: new jobs are refused (503)."""
        return not self._stopping

    def stop_intake(self) -> None:
        """Accept no more jobs; only sets a flag, so safe in a signal handler."""
        self._stopping = True
