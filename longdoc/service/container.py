"""Everything the service runs on, built once at start-up and closed at
shutdown: database, store, pipeline (engine), runner, dispatcher, webhook
sender, metrics and the readiness state. Routes reach it through
:mod:`longdoc.service.deps`."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from longdoc.config import Settings
from longdoc.engines import check_engine_name
from longdoc.errors import LongdocError, TooManyAttempts
from longdoc.jobs import db
from longdoc.jobs.dispatch import EmbeddedDispatcher
from longdoc.jobs.metrics import Metrics
from longdoc.jobs.repo import JobRepo, KeyRepo
from longdoc.jobs.runner import JobRunner
from longdoc.jobs.states import JobState
from longdoc.jobs.webhooks import WebhookSender
from longdoc.pipeline import ParseOptions, Pipeline
from longdoc.service.auth import Authenticator
from longdoc.service.jobs_service import JobService
from longdoc.storage import keys
from longdoc.storage.factory import store_from_url
from longdoc.storage.scratch import ScratchDir

log = logging.getLogger("longdoc.service")

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "sample.pdf"
WARMUP_PAGE = "4"  # a scanned page of the sample: a real page through the real engine


@dataclass
class Readiness:
    warmed_up: bool = False
    warmup_error: str | None = None
    shutting_down: bool = False
    started_at: float = field(default_factory=time.monotonic)


class Container:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.metrics = Metrics()
        self.db_engine = db.make_engine(settings.database.url)
        db.migrate(self.db_engine)
        sessions = db.session_factory(self.db_engine)
        self.jobs = JobRepo(sessions, retention=timedelta(hours=settings.service.retention_hours))
        self.keys = KeyRepo(sessions)
        admin = settings.service.admin_token
        self.auth = Authenticator(self.keys, rate_per_minute=settings.service.rate_limit_per_minute,
                                  failures_per_minute=settings.service.auth_failures_per_minute,
                                  admin_token=admin.get_secret_value() if admin else None)
        self.store = store_from_url(settings.storage.url, settings.storage.s3)
        self.scratch = ScratchDir(settings.service.work_dir)
        self.pipeline = Pipeline(settings)
        self.runner = JobRunner(settings, self.jobs, self.store, self.pipeline, self.scratch, self.metrics)
        self.dispatcher = EmbeddedDispatcher(
            self.run_job, settings.service.max_concurrency, settings.service.max_queued,
            on_stop=self.runner.shutting_down.set,
        )
        self.webhooks = WebhookSender(record=self._record_delivery, max_attempts=settings.service.webhook_max_attempts,
                                      allow_private=settings.service.allow_private_callbacks)
        self.service = JobService(settings, self.jobs, self.store, self.dispatcher, self.scratch,
                                  on_finished=self.notify_finished)
        self.readiness = Readiness()
        self._stop = threading.Event()
        self._install_metrics()

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> None:
        """Recover interrupted work, start the workers, warm up, retain."""
        removed = self.scratch.clear()   # copies left by a killed process
        if removed:
            log.info("work folder cleared", extra={"entries": removed})
        for job_id in self.jobs.running_ids():   # this process is the only worker: any "running" row is orphaned
            self._recover(job_id)
        self.dispatcher.start()
        for job_id in self.jobs.queued_ids():
            job = self.jobs.get_any(job_id)
            if job is not None:
                self.dispatcher.submit(job.id, job.lane, job.priority)
        threading.Thread(target=self._warm_up, name="longdoc-warmup", daemon=True).start()
        threading.Thread(target=self._retention_loop, name="longdoc-retention", daemon=True).start()

    def _recover(self, job_id: str) -> None:
        """Requeue a job whose process died while running it, unless that
        was its ``service.max_attempts``-th start (then it fails)."""
        max_attempts = self.settings.service.max_attempts
        error = TooManyAttempts(f"The service stopped while running this job {max_attempts} time(s).",
                                attempts=max_attempts).to_dict()
        job = self.jobs.recover(job_id, max_attempts, error)
        if job is None:
            return
        log.info("job recovered after restart", extra={"job_id": job_id, "state": job.state,
                                                       "recoveries": job.recoveries})
        if JobState(job.state).terminal:
            self.notify_finished(job_id)

    def begin_shutdown(self) -> None:
        """The first reaction to SIGTERM; only sets flags, so it is safe in a
        signal handler: /readyz turns 503, event streams and long-polls end,
        no queued job starts, running jobs go back to the queue at their
        next group boundary."""
        self.readiness.shutting_down = True
        self.dispatcher.stop_intake()
        self.runner.shutting_down.set()

    def stop(self, timeout: float = 20.0) -> None:
        """Stop intake, let running jobs checkpoint (they go back to the
        queue and resume after the restart), close everything."""
        self.readiness.shutting_down = True
        self._stop.set()
        self.dispatcher.stop(timeout)
        self.webhooks.close(timeout=5)
        self.pipeline.close()
        self.db_engine.dispose()

    def run_job(self, job_id: str) -> None:
        if self.runner.run(job_id) is not None:
            self.notify_finished(job_id)

    def notify_finished(self, job_id: str) -> None:
        """Queue the job's ``job.finished`` webhook when it has a callback_url."""
        job = self.jobs.get_any(job_id)
        if job is not None and job.callback_url:
            key = self.keys.get(job.api_key_id)
            payload = {"event": "job.finished", "job": self.service.public(job).model_dump(mode="json")}
            self.webhooks.submit(job.id, job.callback_url, payload, key.webhook_secret if key else "")

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

    def run_retention(self) -> int:
        """Expire finished jobs past their retention and delete their data."""
        expired = self.jobs.expire_due(datetime.now(UTC))
        for job in expired:
            self.store.delete_prefix(keys.job_prefix(job.tenant, job.id))
            log.info("job expired", extra={"job_id": job.id, "tenant": job.tenant})
        return len(expired)

    def _retention_loop(self) -> None:
        interval = max(1.0, min(60.0, self.settings.service.retention_hours * 3600 / 10))
        while not self._stop.wait(interval):
            try:
                self.run_retention()
            except Exception:
                log.exception("retention pass failed")

    # -- readiness and metrics -------------------------------------------------

    def checks(self) -> dict[str, bool | str]:
        checks: dict[str, bool | str] = {"warmed_up": self.readiness.warmed_up,
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
        checks["engine"] = self._engine_ready()
        engine = self.pipeline.engines().get(self.settings.inference.engine)
        if engine is not None and self.readiness.warmed_up:
            checks["engine_version"] = engine.version  # rapidocr: …/<backend>, the runtime in use
        return checks

    def _engine_ready(self) -> bool:
        """With warm-up, the engine has run a real page; without it, the
        engine is known (it loads on the first job). Either way it must be
        able to take work now (a model server must answer)."""
        name = self.settings.inference.engine
        if self.settings.service.warmup and name not in self.pipeline.loaded_engines():
            return False
        try:
            check_engine_name(name)
            return self.pipeline.engine_health(name)
        except LongdocError:
            return False

    def _install_metrics(self) -> None:
        m = self.metrics
        default = self.settings.inference.engine
        m.workspace_bytes.set_function(lambda: self.pipeline.admission(default).workspace.in_use)
        m.workspace_limit_bytes.set_function(lambda: self.pipeline.admission(default).workspace.limit)
        m.mirror("longdoc_jobs", "Jobs by state", "state",
                 lambda: {s.value: float(self.jobs.counts_by_state().get(s.value, 0)) for s in JobState})
        m.mirror("longdoc_queue_depth", "Queued jobs per lane (and running)", "lane",
                 lambda: {k: float(v) for k, v in self.dispatcher.depth().items()})
        admissions = self.pipeline.admissions
        m.mirror("longdoc_engine_workspace", "Workspace in use per engine, in its unit (bytes for page engines, "
                 "estimated KV tokens for model engines)", "engine",
                 lambda: {n: float(a.workspace.in_use) for n, a in admissions().items()})
        m.mirror("longdoc_engine_workspace_limit", "kv_cache_watermark × the engine's workspace budget", "engine",
                 lambda: {n: float(a.workspace.limit) for n, a in admissions().items()})
        m.mirror("longdoc_engine_groups_in_flight", "Page groups admitted and running per engine", "engine",
                 lambda: {n: float(a.in_flight) for n, a in admissions().items()})
        m.mirror("longdoc_engine_groups_waiting", "Page groups waiting for room under the watermark", "engine",
                 lambda: {n: float(a.waiting) for n, a in admissions().items()})
        def kv(field: str) -> dict[str, float]:
            return {n: float(getattr(e.kv_figures(), field)) for n, e in self.pipeline.engines().items()
                    if hasattr(e, "kv_figures")}

        m.mirror("longdoc_kv_reserved_bytes", "KV bytes reserved by running sequences (native engine)", "engine",
                 lambda: kv("reserved"))
        m.mirror("longdoc_kv_limit_bytes", "kv_cache_watermark × the KV capacity (native engine)", "engine",
                 lambda: kv("limit"))
        m.mirror("longdoc_kv_sequences", "Sequences holding a KV reservation (native engine)", "engine",
                 lambda: kv("sequences"))
        m.mirror("longdoc_kv_sequences_waiting", "Sequences waiting for KV room (native engine)", "engine",
                 lambda: kv("waiting"))
        m.mirror("longdoc_model_requests_in_flight", "Requests in flight to a model server, per engine", "engine",
                 lambda: {n: float(e.requests_in_flight) for n, e in self.pipeline.engines().items()
                          if hasattr(e, "requests_in_flight")})

    def _record_delivery(self, job_id: str, url: str, attempt: int, status: int | None,
                         error: str | None, duration_ms: int) -> None:
        self.jobs.record_delivery(job_id=job_id, url=url, attempt=attempt, status_code=status,
                                  error=error, duration_ms=duration_ms)
        ok = status is not None and 200 <= status < 300
        self.metrics.webhook_attempts.labels("delivered" if ok else "failed").inc()
        log.info("webhook attempt", extra={"job_id": job_id, "attempt": attempt, "status": status, "error": error})
