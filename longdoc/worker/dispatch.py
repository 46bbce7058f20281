"""The Celery dispatcher: the API side of the fleet.

:meth:`CeleryDispatcher.submit` records the job's first task (``ingest``,
or ``whole`` for a short document) and sends it to the broker; everything after that is the workers'
(:mod:`longdoc.jobs.steps`). A broker that is down when a job is accepted
loses nothing: the job is in the database, its task row queued, and a
worker's reconciler sends it once the broker is back.
"""

from __future__ import annotations

import logging

from celery import Celery

from longdoc.jobs.task_repo import TaskRepo, first_task
from longdoc.worker.celery_app import sender

log = logging.getLogger("longdoc.dispatch")


class CeleryDispatcher:
    def __init__(self, app: Celery, tasks: TaskRepo) -> None:
        self.app = app
        self.tasks = tasks
        self._send = sender(app)
        self._stopping = False

    def start(self) -> None:
        """Nothing to start: workers pull from the broker."""

    def submit(self, job_id: str, lane: str, priority: int) -> None:
        queue = "short" if lane == "short" else "cpu"
        for name, q in self.tasks.add(job_id, [(first_task(lane), queue)]):
            try:
                self._send(job_id, name, q, 0.0)
            except Exception as exc:
                log.warning("job accepted but not sent; a worker's reconciler will send it",
                            extra={"job_id": job_id, "error": type(exc).__name__})

    def discard(self, job_id: str) -> None:
        """A cancelled queued job: its ingest task sees the job ended and does nothing."""

    @property
    def accepting(self) -> bool:
        return not self._stopping

    def stop_intake(self) -> None:
        self._stopping = True

    def stop(self, timeout: float) -> None:
        self._stopping = True

    def broker_ok(self) -> bool:
        """Whether the broker answers now (readiness)."""
        try:
            with self.app.connection_for_write() as conn:
                conn.ensure_connection(max_retries=1, timeout=2)
            return True
        except Exception:
            return False
