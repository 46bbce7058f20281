"""Everything a process needs to run jobs' tasks, built once per process
and started and stopped as one: database, store, scratch space, pipeline
(engines), the task steps, the finisher, the reconciler and the webhook
outbox, with the process's :class:`~longdoc.runner.transport.TaskTransport`.
A ``longdoc worker`` process holds one (its transport the Celery broker,
:class:`~longdoc.runner.celery_app.CeleryTransport`); so does the embedded
server (its transport the in-process pools,
:class:`~longdoc.runner.inprocess.InProcessTransport`). The API side
(:mod:`longdoc.service`) holds one in embedded mode and none on the fleet.

:meth:`Runner.start` is the one place a process's background work starts::

    clear the scratch folder ─► take back tasks of dead processes ─► transport.start(steps)
                                 (reconciler, at start)                 ─► Loop: reconciler every queue.reconcile_interval_seconds
                                                                        ─► Loop: webhook outbox

and :meth:`Runner.begin_stop` / :meth:`Runner.stop` the one place it stops.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

from sqlalchemy import Engine

from longdoc.config import Settings
from longdoc.jobs import db
from longdoc.jobs.public import finished_payload
from longdoc.jobs.repo import JobRepo, KeyRepo
from longdoc.jobs.task_repo import TaskRepo
from longdoc.pipeline import Pipeline
from longdoc.pipeline.host import EngineHost
from longdoc.runner.finisher import JobFinisher
from longdoc.runner.metrics import Metrics
from longdoc.runner.reconciler import TaskReconciler
from longdoc.runner.steps import TaskSteps
from longdoc.runner.transport import TaskTransport
from longdoc.runtime.loop import Loop
from longdoc.storage.base import ObjectStore
from longdoc.storage.factory import store_from_url
from longdoc.storage.scratch import ScratchDir
from longdoc.webhooks.outbox import Outbox

log = logging.getLogger("longdoc.runner")

#: how often the webhook outbox looks for due deliveries without being woken, in seconds
OUTBOX_INTERVAL_S = 1.0


class Runner:
    """The tasks' side of one process. ``transport`` carries the tasks its
    steps queue (and, in the embedded server, brings it the tasks to run);
    whether it can lose one (:attr:`TaskTransport.redelivers`) tells the
    reconciler whether to send again a task that stayed queued too long."""

    def __init__(self, settings: Settings, worker_id: str, transport: TaskTransport, *, db_engine: Engine | None = None,
                 store: ObjectStore | None = None, metrics: Metrics | None = None,
                 scratch_root: str | Path | None = None) -> None:
        self.settings, self.worker_id, self.transport = settings, worker_id, transport
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
                               self.finisher, transport.send, worker_id)
        self.reconciler = TaskReconciler(settings, self.jobs, self.tasks, self.steps, self.finisher,
                                         redeliver=transport.redelivers)
        self._loops: list[Loop] = []

    def start(self, *, take_back_dead: bool = True) -> None:
        """Start this process's background work (see the module docstring).
        ``take_back_dead``: the tasks of a dead process of this host are
        taken back at once (the embedded server, restarted); otherwise when
        their lease runs out."""
        removed = self.scratch.clear()   # copies left by a killed process
        if removed:
            log.info("work folder cleared", extra={"entries": removed})
        if take_back_dead:
            self.reconciler.run_once(at_start=True)
        self.transport.start(self.steps)
        q = self.settings.queue
        self._loops.append(Loop(self.reconciler.run_once, q.reconcile_interval_seconds, "longdoc-reconciler").start())
        outbox = Loop(self.outbox.step, OUTBOX_INTERVAL_S, "longdoc-outbox", at_start=True)
        self.outbox.wake_with(outbox.wake)
        self._loops.append(outbox.start())

    def begin_stop(self) -> None:
        """Take no more tasks; running ones go back to the queue at their
        next group boundary. Only sets flags, so safe in a signal handler."""
        self.steps.stopping.set()
        self.transport.begin_stop()

    def stop(self) -> None:
        """:meth:`begin_stop`, wait for the running tasks (the transport's
        shutdown grace), then stop the background loops."""
        self.begin_stop()
        self.transport.stop()
        for loop in self._loops:
            loop.stop()
        self._loops.clear()

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
