"""The Celery side of the fleet: one app per process, one task type, and
the per-process runtime of worker processes.

Messages carry ids only::

    longdoc.run_task(job_id, name)      one task of a job (whole, ingest, render:N, group:N, assemble)

Queues: ``cpu`` (ingest, render, assemble), ``engine`` (page groups),
``short`` (a short document, run whole as one task); which task goes where
is :func:`longdoc.jobs.task_repo.queue_for`. Delivery is at least once and the
database decides what runs (see :mod:`longdoc.runner.steps`): late
acknowledgement (a message is acknowledged after its task ran, so a worker
killed mid-task leaves it to be delivered again), a worker that dies takes
its message back to the queue (``task_reject_on_worker_lost``), one
message prefetched per process, a hard time limit per task, and workers
reconnect to a restarted broker forever.

Each worker process (Celery's prefork children) builds its own
:class:`~longdoc.runner.runner.Runner` after the fork, with a
scratch folder of its own, and starts it (:meth:`Runner.start`: the
reconciler and the webhook outbox, the one way webhooks are delivered, on
background loops); the
parent process holds no connection and no thread, so forking a fresh
child (``queue.max_tasks_per_child``) is safe.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from celery import Celery, signals
from kombu import Queue

from longdoc.config import Settings
from longdoc.errors import BrokerUnavailable
from longdoc.jobs.task_repo import QUEUES
from longdoc.runner.lease import worker_id
from longdoc.tls import redis_options

if TYPE_CHECKING:
    from longdoc.runner.runner import Runner
    from longdoc.runner.steps import TaskSteps

log = logging.getLogger("longdoc.runner")

RUN_TASK = "longdoc.run_task"

#: this process's settings and runtime (worker processes only)
_state: dict[str, Any] = {}


def make_app(settings: Settings) -> Celery:
    """The Celery app for ``settings.queue`` (sending and working). A
    ``rediss://`` broker is reached over TLS, its certificate checked against
    ``queue.tls_ca_file`` (ConfigError when that file cannot be read)."""
    q = settings.queue
    app = Celery("longdoc", broker=q.broker_url, set_as_current=False)
    tls = redis_options(q.broker_url or "", q.tls_ca_file)
    if tls:
        app.conf.broker_use_ssl = tls
    app.conf.update(
        task_queues=[Queue(name) for name in QUEUES],
        task_default_queue="cpu",
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_acks_on_failure_or_timeout=True,
        worker_prefetch_multiplier=1,
        task_time_limit=q.task_time_limit_seconds,
        task_ignore_result=True,
        result_backend=None,
        worker_max_tasks_per_child=q.max_tasks_per_child,
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,
        broker_transport_options={"visibility_timeout": max(3600, q.task_time_limit_seconds * 2)},
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
        task_send_sent_event=False,
        enable_utc=True,
    )
    app.task(name=RUN_TASK, bind=False, ignore_result=True)(_run_task)
    return app


class CeleryTransport:
    """The fleet's :class:`~longdoc.runner.transport.TaskTransport`: a
    message per task on ``app``'s broker. Celery's own worker loop takes the
    messages and runs them (:func:`_run_task`), so :meth:`start` and the
    stops have nothing of their own to start or stop; a worker process's
    :class:`~longdoc.runner.runner.Runner` tells its steps to stop."""

    #: a broker can lose a message (restarted without persistence, purged)
    redelivers = True

    def __init__(self, app: Celery) -> None:
        self.app = app

    def send(self, job_id: str, name: str, queue: str, countdown_s: float = 0.0) -> None:
        """Raises BrokerUnavailable when the broker cannot take the message."""
        try:
            self.app.send_task(RUN_TASK, args=[job_id, name], queue=queue, countdown=countdown_s or None,
                               retry=True, retry_policy={"max_retries": 2, "interval_start": 0.2,
                                                         "interval_step": 0.5, "interval_max": 1.0})
        except Exception as exc:  # kombu's OperationalError and friends, mapped here once
            raise BrokerUnavailable(f"The broker did not take the task ({type(exc).__name__}).") from exc

    def start(self, steps: TaskSteps | None) -> None:
        """Nothing to start: Celery's worker runs what the broker delivers."""

    def begin_stop(self) -> None:
        """Nothing to flag: Celery's warm shutdown stops taking messages."""

    def stop(self) -> None:
        """Nothing to wait for here (Celery's worker does)."""

    def ready(self) -> bool:
        """Whether the broker answers now."""
        try:
            with self.app.connection_for_write() as conn:
                conn.ensure_connection(max_retries=1, timeout=2)
            return True
        except Exception:
            return False


# -- worker processes ---------------------------------------------------------------


def configure_worker(settings: Settings) -> None:
    """Called by ``longdoc worker`` before Celery starts: the settings its
    processes build their runtime from."""
    _state["settings"] = settings


def runtime() -> Runner:
    """This worker process's runtime (built on first use, after the fork)."""
    if "runtime" not in _state:
        from longdoc.runner.runner import Runner

        settings: Settings = _state["settings"]
        app = _state.setdefault("app", make_app(settings))
        scratch = Path(settings.service.work_dir) / f"fleet-{os.getpid()}"
        rt = Runner(settings, worker_id("worker"), CeleryTransport(app), scratch_root=scratch)
        _remove_dead_scratch(Path(settings.service.work_dir))
        _state["runtime"] = rt
    return _state["runtime"]


def _remove_dead_scratch(work_dir: Path) -> None:
    """Scratch folders of worker processes of this host that are gone
    (replaced after max_tasks_per_child, or killed): their copies of
    originals would otherwise stay on disk."""
    import psutil

    from longdoc.storage.scratch import remove_tree

    for folder in work_dir.glob("fleet-*"):
        pid = folder.name.removeprefix("fleet-")
        if pid.isdigit() and int(pid) != os.getpid() and not psutil.pid_exists(int(pid)):
            remove_tree(folder)


def _run_task(job_id: str, name: str) -> str:
    outcome = runtime().steps.run(job_id, name)
    if outcome == "done":
        runtime().outbox.wake()
    return outcome


@signals.worker_process_init.connect
def _start_background(**_: Any) -> None:
    if "settings" not in _state:
        return
    # Celery's pool marks its processes daemonic, and multiprocessing then
    # refuses them children; a task needs its own (the document sandbox, the
    # OCR pool), which it stops itself.
    # Billiard also leaves its own authkey type in the process config, which
    # multiprocessing refuses to pickle when it starts a child: a fresh one.
    config = multiprocessing.current_process()._config  # type: ignore[attr-defined]  # billiard's process config
    config["daemon"] = False
    authkey = multiprocessing.process.AuthenticationString  # type: ignore[attr-defined]  # not in typeshed
    config["authkey"] = authkey(os.urandom(32))
    rt = runtime()
    q = rt.settings.queue
    if q.worker_metrics_port is not None:
        _serve_metrics(rt, q.worker_metrics_port)
    rt.start(take_back_dead=False)


def _serve_metrics(rt: Any, base_port: int) -> None:
    """This process's registry on ``base_port`` + its pool index (a process
    replaced after ``max_tasks_per_child`` takes its predecessor's index)."""
    from billiard.process import current_process
    from prometheus_client import start_http_server

    index = getattr(current_process(), "index", 0) or 0
    try:
        start_http_server(base_port + index, addr=rt.settings.service.host, registry=rt.metrics.registry)
    except OSError as exc:  # the port is taken (e.g. by a predecessor not yet gone): run without
        log.warning("worker metrics not served", extra={"port": base_port + index, "error": str(exc)})


@signals.worker_process_shutdown.connect
def _stop_background(**_: Any) -> None:
    rt = _state.pop("runtime", None)
    if rt is not None:
        rt.stop()
        rt.close()
