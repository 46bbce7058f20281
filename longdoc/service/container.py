"""Everything the API process runs on, built once at start-up and closed
at shutdown: database, store, authentication, the job service, the task
transport, metrics, the audit trail's writer and the readiness state. Routes
reach it through :mod:`longdoc.service.deps`.

The API side never runs a page. Jobs run as tasks either way
(:mod:`longdoc.runner.steps`), and the API only records a job and sends its
first task (:meth:`~longdoc.service.jobs_service.JobService.submit`). With
``queue.backend: celery`` the broker carries it to ``longdoc worker``
processes; with ``embedded`` this process is the fleet on one machine: it
also holds a :class:`~longdoc.runner.runner.Runner` (pipeline, task
steps, webhook outbox, reconciler) and the in-process transport whose
pools run the tasks (:mod:`longdoc.runner.inprocess`)."""

from __future__ import annotations

import functools
import logging
import math
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

from longdoc.audit.trail import AuditRepo, AuditWriter
from longdoc.config import Settings
from longdoc.engines import check_engine_name, load_plugins
from longdoc.errors import LongdocError
from longdoc.ingest.sandbox import check_helper_sockets
from longdoc.jobs import db
from longdoc.jobs.repo import EXPIRY_WARNING, JobRepo, KeyRepo
from longdoc.jobs.states import JobState
from longdoc.jobs.task_repo import QueueFigures, TaskRepo
from longdoc.pipeline import ParseOptions
from longdoc.runner.inprocess import InProcessTransport
from longdoc.runner.lease import worker_id
from longdoc.runner.metrics import Metrics
from longdoc.runner.runner import Runner, announce
from longdoc.runner.transport import TaskTransport
from longdoc.runtime.loop import Loop
from longdoc.service.auth import Authenticator, rate_limit_storage_url
from longdoc.service.engine_metrics import install_engine_metrics
from longdoc.service.jobs_service import JobService
from longdoc.service.page_images import PageImages
from longdoc.storage import keys
from longdoc.storage.factory import store_from_url
from longdoc.storage.scratch import ScratchDir
from longdoc.webhooks.outbox import Outbox

log = logging.getLogger("longdoc.service")

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "sample.pdf"
WARMUP_PAGE = "4"  # a scanned page of the sample: a real page through the real engine


class RetentionRun(NamedTuple):
    """What one retention pass removed: jobs expired, audit records deleted."""

    expired: int
    audit_purged: int


@dataclass
class Readiness:
    warmed_up: bool = False
    warmup_error: str | None = None
    shutting_down: bool = False
    started_at: float = field(default_factory=time.monotonic)


class Container:
    def __init__(self, settings: Settings) -> None:
        check_helper_sockets()  # every upload is measured in a sandbox
        self.settings = settings
        load_plugins(settings.inference.plugins)  # engines the jobs may name
        self.metrics = Metrics()
        self.db_engine = db.make_engine(settings.database.url, **settings.database.engine_options())
        db.migrate(self.db_engine)
        sessions = db.session_factory(self.db_engine)
        self.jobs = JobRepo(sessions, retention=timedelta(hours=settings.service.retention_hours))
        self.keys = KeyRepo(sessions)
        self.tasks = TaskRepo(sessions)
        self.audit_events = AuditRepo(sessions)
        #: the audit trail's writer (None with service.audit off)
        self.audit = (AuditWriter(self.audit_events, queue_size=settings.service.audit_queue_size,
                                  on_drop=self.metrics.audit_dropped.inc) if settings.service.audit else None)
        admin = settings.service.admin_token
        self.auth = Authenticator(self.keys, rate_per_minute=settings.service.rate_limit_per_minute,
                                  failures_per_minute=settings.service.auth_failures_per_minute,
                                  admin_token=admin.get_secret_value() if admin else None,
                                  storage_url=rate_limit_storage_url(settings),
                                  storage_tls_ca_file=settings.queue.tls_ca_file)
        self.store = store_from_url(settings.storage.url, settings.storage.s3)
        self.scratch = ScratchDir(settings.service.work_dir)
        self.embedded = settings.queue.backend == "embedded"
        #: the tasks' side of this process: embedded only (on the fleet the workers hold theirs)
        self.runtime: Runner | None = None
        self.transport: TaskTransport
        if self.embedded:
            self.transport = InProcessTransport(settings, self.tasks, self.jobs)
            self.runtime = Runner(settings, worker_id("embedded"), self.transport, db_engine=self.db_engine,
                                  store=self.store, metrics=self.metrics, scratch_root=settings.service.work_dir)
            self.pipeline = self.runtime.pipeline
            self.outbox = self.runtime.outbox
        else:
            from longdoc.runner.celery_app import CeleryTransport, make_app

            self.transport = CeleryTransport(make_app(settings))
            self.outbox = Outbox(sessions, record=lambda *a: None, worker_id=worker_id("api"))  # enqueue only
        self.images = PageImages(settings, self.store, settings.service.work_dir)
        self.service = JobService(settings, self.jobs, self.store, self.tasks, self.transport, self.scratch,
                                  self.images, on_finished=self.notify_finished)
        self.readiness = Readiness(warmed_up=not self.embedded)
        self._loops: list[Loop] = []
        self._figures: tuple[float, dict[str, QueueFigures]] | None = None
        self._install_metrics()

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> None:
        """Start the background work. Embedded: take back the tasks of a
        dead process of this host at once (others when their lease runs
        out), give a job with no task its next one, start the pools, the
        reconciler, the outbox, warm up."""
        if self.audit is not None:
            self.audit.start()
        self._apply_store_retention()
        self._loops.append(Loop(self.run_retention, self._retention_interval(), "longdoc-retention").start())
        if self.runtime is None:
            return
        self.runtime.start()
        threading.Thread(target=self._warm_up, name="longdoc-warmup", daemon=True).start()

    def begin_shutdown(self) -> None:
        """The first reaction to SIGTERM; only sets flags, so it is safe in a
        signal handler: /readyz turns 503, event streams and long-polls end,
        no queued task starts, running tasks go back to the queue at their
        next group boundary."""
        self.readiness.shutting_down = True
        self.service.stop_intake()
        if self.runtime is not None:
            self.runtime.begin_stop()

    def stop(self) -> None:
        """Stop intake, let running tasks checkpoint (they go back to the
        queue and resume after the restart; those still running
        ``service.shutdown_grace_seconds`` after the signal are handed back),
        close everything."""
        self.readiness.shutting_down = True
        self.service.stop_intake()
        if self.runtime is not None:
            self.runtime.stop()
        for loop in self._loops:
            loop.stop()
        if self.runtime is not None:
            self.runtime.host.close()
        self.images.close()
        if self.audit is not None:
            self.audit.close()  # the last requests' records are written before the database goes
        self.db_engine.dispose()

    def notify_finished(self, job_id: str) -> None:
        """Queue the job's ``job.finished`` webhook (when it has a callback_url)."""
        announce(self.jobs, self.outbox, job_id)

    def _warm_up(self) -> None:
        if not self.settings.service.warmup:
            self.readiness.warmed_up = True
            return
        try:
            with self.scratch.upload() as tmp:
                opts = ParseOptions.from_settings(self.settings, pages=WARMUP_PAGE, ocr="force", formats=("txt",))
                result = self.pipeline.parse(SAMPLE, tmp, opts)
                if result.failed_pages:
                    raise RuntimeError(f"warm-up page failed: {result.errors[0].code}")
            self.readiness.warmed_up = True
            log.info("warm-up done", extra={"seconds": round(time.monotonic() - self.readiness.started_at, 2)})
        except Exception as exc:
            self.readiness.warmup_error = f"{type(exc).__name__}: {exc}"
            log.error("warm-up failed", extra={"error": self.readiness.warmup_error})

    def run_retention(self) -> RetentionRun:
        """Expire finished jobs past their retention and delete their data;
        delete audit records older than ``service.audit_retention_days``."""
        now = datetime.now(UTC)
        expired = self.jobs.expire_due(now)
        for job in expired:
            self.store.delete_prefix(keys.job_prefix(job.tenant, job.id))
            self.images.forget(job.id)        # the page viewer's copy
            self.scratch.remove_job(job.id)   # copies of the original in the work folder
            log.info("job expired", extra={"job_id": job.id, "tenant": job.tenant})
        purged = self.audit_events.purge(now - timedelta(days=self.settings.service.audit_retention_days))
        if purged:
            log.info("audit records purged", extra={"records": purged})
        return RetentionRun(expired=len(expired), audit_purged=purged)

    def _apply_store_retention(self) -> None:
        """Where the store has its own expiry (an S3 lifecycle rule), set it
        a day past ``service.retention_hours``: a backstop should the
        service's own retention pass ever stop running."""
        apply = getattr(self.store, "apply_retention", None)
        if apply is None:
            return
        try:
            apply(math.ceil(self.settings.service.retention_hours / 24) + 1)
        except LongdocError as exc:  # e.g. no s3:PutLifecycleConfiguration permission
            log.warning("store retention rule not set", extra={"error": exc.code})

    def _retention_interval(self) -> float:
        return max(1.0, min(60.0, self.settings.service.retention_hours * 3600 / 10))

    # -- readiness and metrics -------------------------------------------------

    def checks(self) -> dict[str, bool | int | str]:
        """What ``/readyz`` shows: warm-up, intake, database, storage, and
        the broker (fleet) or the default engine (embedded: whether it can
        take work, its version and its ``ready_details()`` once warmed up)."""
        checks: dict[str, bool | int | str] = {"warmed_up": self.readiness.warmed_up,
                                               "accepting": not self.readiness.shutting_down}
        if self.readiness.warmup_error:
            checks["warmup_error"] = self.readiness.warmup_error
        try:
            db.ping(self.db_engine)
            checks["database"] = True
        except Exception as exc:
            checks["database"] = False
            checks["database_error"] = type(exc).__name__
        try:
            self.store.ping()
            checks["storage"] = True
        except Exception as exc:
            checks["storage"] = False
            checks["storage_error"] = type(exc).__name__
        if not self.embedded:
            checks["broker"] = checks["engine"] = self.transport.ready()
            return checks
        checks["engine"] = self._engine_ready()
        host, name = self.pipeline.host, self.settings.inference.engine
        if name in host.engines() and self.readiness.warmed_up:
            checks["engine_version"] = host.version(name)  # rapidocr: …/<backend>, the runtime in use
            checks.update(host.ready_details(name))  # native: how many sequences its KV budget admits
        return checks

    def _engine_ready(self) -> bool:
        """With warm-up, the engine has run a real page; without it, the
        engine is known (it loads on the first job). Either way it must be
        able to take work now (a model server must answer)."""
        name = self.settings.inference.engine
        if self.settings.service.warmup and name not in self.pipeline.host.engines():
            return False
        try:
            check_engine_name(name)
            return self.pipeline.host.health(name)
        except LongdocError:
            return False

    def _install_metrics(self) -> None:
        m = self.metrics
        m.mirror("longdoc_jobs", "Jobs by state", "state",
                 lambda: {s.value: float(self.jobs.counts_by_state().get(s.value, 0)) for s in JobState})
        m.mirror("longdoc_queue_depth", "Queued jobs per lane (and running), from the database", "lane",
                 self._queue_depth)
        m.mirror("longdoc_webhooks_pending", "Webhook deliveries waiting in the outbox, and the age in seconds "
                 "of the oldest", "figure", lambda: {"pending": float(self.outbox.pending_count()),
                                                     "oldest_age_seconds": self.outbox.oldest_pending_age_seconds()})
        m.mirror_value("longdoc_api_keys_expiring", f"API keys that stop working within {EXPIRY_WARNING.days} days "
                       "(not revoked, not yet expired, not rotated: a rotated key has its replacement)",
                       self._keys_expiring)
        self._install_fleet_metrics()
        if self.embedded:
            install_engine_metrics(m, self.pipeline.host, self.settings.inference.engine)

    def _keys_expiring(self) -> float:
        return float(self.keys.count_expiring(EXPIRY_WARNING))

    def _queue_depth(self) -> dict[str, float]:
        depth = {k: float(v) for k, v in self.jobs.queue_depth_by_lane().items()}
        depth["running"] = float(self.jobs.counts_by_state().get(JobState.RUNNING.value, 0))
        return depth

    def _install_fleet_metrics(self) -> None:
        """Per queue of the fleet (what an autoscaler reads), from the task records."""
        m = self.metrics
        for name, attr, doc in (
            ("longdoc_task_queue_depth", "depth", "Tasks queued per queue (scale workers on this)"),
            ("longdoc_task_oldest_age_seconds", "oldest_age_s", "Age of the oldest queued task per queue"),
            ("longdoc_tasks_in_flight", "in_flight", "Tasks running per queue"),
            ("longdoc_tasks_retried", "retried", "Tasks started more than once (retries, taken-back leases) "
             "per queue, among tasks on record"),
            ("longdoc_tasks_failed", "failed", "Tasks that failed per queue, among tasks on record"),
        ):
            m.mirror(name, doc, "queue", functools.partial(self._figure_per_queue, attr))
        m.mirror("longdoc_worker_tasks_running", "Tasks running per worker process", "worker",
                 lambda: {w: float(n) for w, n in self.tasks.running_by_worker().items()})

    def _figure_per_queue(self, attr: str) -> dict[str, float]:
        """Figure ``attr`` of :class:`QueueFigures`, per queue."""
        return {q: float(getattr(f, attr)) for q, f in self._task_figures().items()}

    def _task_figures(self) -> dict[str, QueueFigures]:
        """The task records' figures, read once per scrape (five gauges use them)."""
        now = time.monotonic()
        if self._figures is None or now - self._figures[0] > 1.0:
            self._figures = (now, self.tasks.figures())
        return self._figures[1]
