"""Everything a process needs to run jobs' tasks, built once per process:
database, store, scratch space, pipeline (engines), the task steps, the
finisher, the webhook outbox. A ``longdoc worker`` process holds one (its
transport the Celery broker); so does the embedded server (its transport
the in-process pools, :mod:`longdoc.runner.inprocess`). The API side
(:mod:`longdoc.service`) holds one in embedded mode and none on the fleet."""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

from longdoc.config import Settings
from longdoc.jobs import db
from longdoc.runner.finisher import JobFinisher
from longdoc.runner.metrics import Metrics
from longdoc.webhooks.outbox import Outbox
from longdoc.jobs.public import finished_payload
from longdoc.runner.reconciler import TaskReconciler
from longdoc.jobs.repo import JobRepo, KeyRepo
from longdoc.runner.steps import Send, TaskSteps
from longdoc.jobs.task_repo import TaskRepo
from longdoc.pipeline import Pipeline
from longdoc.pipeline.host import EngineHost
from longdoc.storage.base import ObjectStore
from longdoc.storage.factory import store_from_url
from longdoc.storage.scratch import ScratchDir

log = logging.getLogger("longdoc.runner")


class Runner:
    """``send`` hands a queued task to the transport; ``redeliver``: whether
    the transport can lose a message (a broker), so the reconciler sends a
    task again that stayed queued too long."""

    def __init__(self, settings: Settings, worker_id: str, send: Send, *, redeliver: bool = True, db_engine=None,
                 store: ObjectStore | None = None, metrics: Metrics | None = None,
                 scratch_root: str | Path | None = None) -> None:
        self.settings, self.worker_id = settings, worker_id
        self.metrics = metrics or Metrics()
        self.db_engine = db_engine or db.make_engine(settings.database.url, **settings.database.engine_options())
        sessions = db.session_factory(self.db_engine)
        self.jobs = JobRepo(sessions, retention=timedelta(hours=settings.service.retention_hours))
        self.keys = KeyRepo(sessions)
        self.tasks = TaskRepo(sessions)
        self.store = store or store_from_url(settings.storage.url, settings.storage.s3)
        self.scratch = ScratchDir(scratch_root or settings.service.work_dir)
        self.host = EngineHost(settings)  # the engines, shared by every task this process runs
        self.pipeline = Pipeline(settings, host=self.host)
        self.outbox = Outbox(sessions, record=self._record_delivery, worker_id=worker_id,
                             max_attempts=settings.service.webhook_max_attempts,
                             allow_private=settings.service.allow_private_callbacks)
        self.finisher = JobFinisher(settings, self.jobs, self.store, self.metrics, announce=self.announce)
        self.steps = TaskSteps(settings, self.jobs, self.tasks, self.store, self.pipeline, self.scratch,
                               self.finisher, send, worker_id)
        self.reconciler = TaskReconciler(settings, self.jobs, self.tasks, self.steps, self.finisher,
                                         redeliver=redeliver)

    def announce(self, job_id: str) -> None:
        announce(self.jobs, self.outbox, job_id)

    def _record_delivery(self, job_id: str, url: str, attempt: int, status: int | None,
                         error: str | None, duration_ms: int) -> None:
        self.jobs.record_delivery(job_id=job_id, url=url, attempt=attempt, status_code=status,
                                  error=error, duration_ms=duration_ms)
        ok = status is not None and 200 <= status < 300
        self.metrics.webhook_attempts.labels("delivered" if ok else "failed").inc()
        log.info("webhook attempt", extra={"job_id": job_id, "attempt": attempt, "status": status, "error": error})

    def close(self) -> None:
        self.host.close()
        self.db_engine.dispose()


def announce(jobs: JobRepo, outbox: Outbox, job_id: str) -> None:
    """Queue the finished job's ``job.finished`` webhook (when it has a
    callback URL) in the outbox, and wake the outbox's delivery loop."""
    job = jobs.get_any(job_id)
    if job is None or not job.callback_url:
        return
    if outbox.enqueue(job.id, job.callback_url, finished_payload(job)):
        outbox.wake()
