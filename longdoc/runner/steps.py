"""A job, one task at a time: the one way jobs run, on the Celery fleet
and in the embedded server alike (there the queues are served by pools of
threads in the server process: :mod:`longdoc.runner.inprocess`)::

    ingest (cpu) ──► render:000000 (cpu) ──► group:000000 (engine) ┐
                     render:000001       ──► group:000001          ├──► assemble (cpu) ──► webhook outbox
                     …                                            ┘

The same pipeline as one process runs (:mod:`longdoc.pipeline.run`), cut
at its stage boundaries so page groups can spread over many workers. A
render task opens the document in its sandbox and leaves in the store
what its group needs (sizes, text layers, page images:
:mod:`longdoc.ingest.prepared`); the group task recognizes, lays out and
checkpoints from that, so engine workers (GPU machines) never open a
document nor spend their CPU rendering. Renders run at most
``queue.render_ahead_groups`` groups ahead of the engine; engines that
carry state between groups (the native engine) get their groups one at a
time, in order.

Documents up to ``service.short_doc_pages`` run as one task, ``whole``, on
the ``short`` queue: they never wait behind long ones, and a page or two
does not pay for three tasks.

:meth:`TaskSteps.run` is what a worker calls with ``(job_id, name)``. It
starts the task only if its row is queued (a message delivered twice runs
once), holds the task's lease with a heartbeat, and stops between groups
when the lease is lost, the job is cancelled, the job is past its
deadline (``service.timeout_seconds`` from the job's start) or this
process is shutting down (:attr:`TaskSteps.stopping`: the task goes back to
the queue, its finished groups checkpointed). Results go to the job's
checkpoint in the object store, page by page and keyed by page number, so
a group run twice writes the same objects again and never duplicates a
page. What comes next is decided from the database and the checkpoint
alone (:meth:`TaskSteps.schedule`), which is also what the reconciler
calls for a job whose tasks were lost.

Faults: a transient one (database, store or broker unreachable) puts the
task back in the queue to be sent again after a backoff, up to
``queue.task_retries`` times; the job's own failures (a corrupt file, a
cancel, a timeout) end the job as one process would.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from longdoc.config import Settings
from longdoc.errors import (
    BrokerUnavailable,
    DatabaseUnavailable,
    JobCancelled,
    JobTimedOut,
    LeaseLost,
    LongdocError,
    ObjectNotFound,
    ShuttingDown,
    StorageError,
)
from longdoc.ingest import parse_page_range
from longdoc.ingest.prepared import PreparedSource, prepare_group
from longdoc.jobs.models import Job
from longdoc.jobs.repo import JobRepo
from longdoc.jobs.states import IllegalTransition, JobState
from longdoc.jobs.task_repo import (
    ASSEMBLE,
    DONE,
    INGEST,
    QUEUED,
    RUNNING,
    WHOLE,
    Lease,
    TaskKind,
    TaskRepo,
    first_task,
    group_task,
    queue_for,
    render_task,
    task_kind,
)
from longdoc.model import Page
from longdoc.pipeline import ParseOptions, ParseResult, Pipeline
from longdoc.pipeline.recognize import renders_wanted
from longdoc.pipeline.run import TEXT_LAYER_VERSION, OpenDocument
from longdoc.runner.finisher import JobFinisher, JobProgress, PeakRss, fetch_original, job_options
from longdoc.runner.lease import Heartbeat
from longdoc.runner.starts import RETRY_S, lanes_with_room
from longdoc.storage import keys
from longdoc.storage.base import ObjectStore
from longdoc.storage.checkpoint import StoreCheckpoint
from longdoc.storage.scratch import ScratchDir

log = logging.getLogger("longdoc.jobs")

#: ``send(job_id, task name, queue, countdown_s)``: hand a queued task to the
#: transport (the broker, or the embedded server's pools)
Send = Callable[[str, str, str, float], None]
TRANSIENT = (DatabaseUnavailable, StorageError, BrokerUnavailable)
#: ``held(confirm=False)``: raise LeaseLost unless the run still holds its task
Held = Callable[..., None]


def _ahead(names: list[str], rows: dict[str, str], limit: int) -> list[str]:
    """Render tasks to queue: the next groups not yet rendered, while fewer
    than ``limit`` groups are rendered (or rendering) and not yet taken by
    an engine worker. Groups the engine runs do not count: a document may
    use every engine worker, with at most ``limit`` groups waiting."""
    waiting = sum(1 for i, n in enumerate(names) if render_task(i) in rows and rows.get(n) not in (RUNNING, DONE))
    fresh = [render_task(i) for i in range(len(names)) if render_task(i) not in rows]
    return fresh[:max(0, limit - waiting)]


class TaskSteps:
    def __init__(self, settings: Settings, repo: JobRepo, tasks: TaskRepo, store: ObjectStore, pipeline: Pipeline,
                 scratch: ScratchDir, finisher: JobFinisher, send: Send, worker_id: str) -> None:
        self.settings, self.repo, self.tasks, self.store = settings, repo, tasks, store
        self.pipeline, self.scratch, self.finisher = pipeline, scratch, finisher
        self.send, self.worker_id = send, worker_id
        self.originals = scratch.originals
        #: set when this process shuts down: running tasks go back to the queue at their next group
        self.stopping = threading.Event()
        #: lease token → (lease, heartbeat) of every task running in this process
        self._running: dict[str, tuple[Lease, Heartbeat]] = {}
        self._handed_back: set[str] = set()
        self._running_lock = threading.Lock()

    # -- one task -------------------------------------------------------------------

    def run(self, job_id: str, name: str) -> str:
        """Run the task ``name`` of ``job_id`` if it is queued; returns what
        happened (``done``, ``skipped``, ``retry``, ``failed``, ``lost``,
        ``stopped``: back in the queue for a shutdown; ``waiting``: a job's
        first task with no room under ``queue.max_running_jobs``, sent again
        in :data:`~longdoc.runner.starts.RETRY_S`). The fleet's entry."""
        if not self._admitted(job_id, name):
            return "waiting"
        lease = self.tasks.start(job_id, name, self.worker_id)
        if lease is None:
            return "skipped"
        return self.run_started(lease)

    def _admitted(self, job_id: str, name: str) -> bool:
        """Whether the job may start now (:mod:`longdoc.runner.starts`);
        if not, its first task stays queued and is sent again later (marked
        sent, so the reconciler does not send it a second time)."""
        limit = self.settings.queue.max_running_jobs
        if limit is None or name not in (INGEST, WHOLE):
            return True
        job = self.repo.get_any(job_id)
        if job is None or job.state != JobState.QUEUED.value:
            return True
        if job.lane in lanes_with_room(self.repo.running_lanes(), limit):
            return True
        self.tasks.touch(job_id, name)
        try:
            self.send(job_id, name, queue_for(job.lane, name), RETRY_S)
        except BrokerUnavailable as exc:  # the task stays queued: the reconciler sends it again
            log.warning("job waits for room; not sent again", extra={"job_id": job_id, "error": exc.code})
        log.info("job waits for room", extra={"job_id": job_id, "lane": job.lane, "max_running_jobs": limit})
        return False

    def run_started(self, lease: Lease) -> str:
        """Run a task this process just started (took its lease): what
        :meth:`run` does after the start, for a transport that starts the
        tasks it picks itself (the embedded server's pools)."""
        job_id, name = lease.job_id, lease.name
        if self.stopping.is_set():  # taken while this process stops (maybe a task just put back): not run here
            self.tasks.unstart(lease)
            return "stopped"
        job = self.repo.start(job_id) if name in (INGEST, WHOLE) else None  # a first task starts its job
        if job is not None:
            log.info("job started", extra={"job_id": job_id, "tenant": job.tenant, "lane": job.lane})
        else:
            job = self.repo.get_any(job_id)
        if job is None or job.state != JobState.RUNNING.value:
            self.tasks.finish(lease)
            return "skipped"
        if lease.attempt > 1:
            self.repo.count_attempt(job_id, lease.attempt - 1)
        rss = PeakRss()
        beat = Heartbeat(lambda: self.tasks.heartbeat(lease), self.settings.queue.lease_seconds / 3)

        def held(confirm: bool = False, undo: Callable[[], None] | None = None) -> None:
            """Raise LeaseLost unless this run still holds its task: checked
            before it writes what outlives the task (a group's checkpoint;
            with ``confirm``, in the database, the exports), so a run whose
            job was ended under it (the reconciler ends a job whose engine
            never returned) writes nothing when it comes back.

            With ``undo``, checked in the database *after* such a write (a
            group's prepared pages, its checkpoint): if the job ended while
            it was being written (a cancel seen by another task, a timeout,
            a delete), ``undo`` removes it. The job's end removes its files
            after it ends the job's tasks, so what was written before this
            check is removed by the end, and what was written after, here:
            nothing of an ended job stays in the store."""
            if beat.lost.is_set() or ((confirm or undo is not None) and not self.tasks.heartbeat(lease)):
                if undo is not None and self._ended(job_id):
                    undo()
                raise LeaseLost("The task's lease is gone (taken back, or its job ended); it writes nothing more.")

        with self._running_lock:
            self._running[lease.token] = (lease, beat)
        try:
            with beat:
                self._step(job, name, lambda: self._control(job, beat, rss), rss, held)
        except LeaseLost:
            if lease.token in self._handed_back:
                log.info("handed-back task stopped; it wrote nothing more", extra={"job_id": job_id, "task": name})
                return "stopped"
            log.warning("task lease lost; another worker runs it", extra={"job_id": job_id, "task": name})
            return "lost"
        except ShuttingDown:
            return self._put_back(job, lease)
        except BaseException as exc:
            if lease.token in self._handed_back:  # what an engine closed under it raised: not the job's end
                log.info("handed-back task stopped", extra={"job_id": job_id, "task": name,
                                                            "error": type(exc).__name__})
                return "stopped"
            if isinstance(exc, TRANSIENT):
                return self._transient(job, lease, exc)
            if not isinstance(exc, Exception):
                raise
            return self._job_failed(job, lease, exc, rss)  # the job's own end: cancelled, bad input, timeout, a crash
        finally:
            with self._running_lock:
                self._running.pop(lease.token, None)
        if not self.tasks.finish(lease):
            return "lost"
        self.schedule(self.repo.get_any(job_id))
        return "done"

    def _step(self, job: Job, name: str, control: Callable[[], None], rss: PeakRss, held: Held) -> None:
        match task_kind(name):
            case TaskKind.INGEST:
                self._ingest(job, control, held)
            case TaskKind.WHOLE:
                self._whole(job, control, rss, held)
            case TaskKind.RENDER:
                self._render(job, int(name.partition(":")[2]), control, held)
            case TaskKind.GROUP:
                self._group(job, int(name.partition(":")[2]), control, held)
            case TaskKind.ASSEMBLE:
                self._assemble(job, control, rss, held)

    def _control(self, job: Job, beat: Heartbeat, rss: PeakRss) -> None:
        """Called when a task starts its work and between page groups: raise
        to stop here (everything done so far is checkpointed)."""
        rss.sample()
        if beat.lost.is_set():
            raise LeaseLost("The task's lease was taken back by another worker.")
        if self.stopping.is_set():
            raise ShuttingDown("This process is shutting down; the task goes back to the queue.")
        if self.repo.is_cancel_requested(job.id):
            raise JobCancelled("The job was cancelled.")
        limit = self.settings.service.timeout_seconds
        if job.started_at is not None and datetime.now(UTC) > job.started_at + timedelta(seconds=limit):
            raise job_timed_out(self.settings)

    # -- the three kinds of task ---------------------------------------------------------

    def _ingest(self, job: Job, control: Callable[[], None], held: Held) -> None:
        """Open the document, plan its groups, begin its checkpoint."""
        control()
        options = job_options(job)
        with self._original(job) as original, \
                self.pipeline.open_document(original, options, self._checkpoint(job, held), name=job.filename) as doc:
            self.repo.set_total(job.id, len(doc.numbers))

    def _whole(self, job: Job, control: Callable[[], None], rss: PeakRss, held: Held) -> None:
        """The whole pipeline in this task, as one process runs it."""
        options = job_options(job)
        progress = JobProgress(self.repo, job.id, self.finisher.metrics)
        with self.scratch.task(job.id) as tmp:
            with self._original(job) as original:
                result = self.pipeline.parse(original, tmp / "out", options, progress=progress,
                                             checkpoint=self._checkpoint(job, held), stem="result", control=control,
                                             name=job.filename, owner=job.tenant)
            rss.sample()
            held(True)
            self._finish_parsed(job, options, result, rss)

    def _finish_parsed(self, job: Job, options: ParseOptions, result: ParseResult, rss: PeakRss) -> None:
        try:
            self.finisher.parsed(job, options, result, self.pipeline, _seconds_since(job.started_at), rss.peak)
        except IllegalTransition:  # ended twice (a redelivered message): the first one ended it
            log.info("job already finished", extra={"job_id": job.id})
        self.originals.forget(job.id)  # the job ended: no task of it needs the copy here

    def _render(self, job: Job, index: int, control: Callable[[], None], held: Held) -> None:
        """Leave in the store what group ``index`` needs (see :mod:`longdoc.ingest.prepared`)."""
        control()
        options = job_options(job)
        needs_context = options.ocr != "off" and self.pipeline.host.capabilities(options.engine).needs_context
        prefix = keys.work_prefix(job.tenant, job.id, index)
        with self._original(job) as original, \
                self.pipeline.open_document(original, options, self._checkpoint(job), name=job.filename,
                                            begin=False) as doc:
            group = doc.groups[index]
            held()
            context = [doc.numbers[i] for i in group.context] if needs_context else []
            prepare_group(doc.source, [doc.numbers[i] for i in group.owned], context,
                          renders_wanted(options, TEXT_LAYER_VERSION), options.ocr, options.dpi, self.store, prefix)
        held(undo=lambda: self.store.delete_prefix(prefix))

    def _ended(self, job_id: str) -> bool:
        """Whether the job is no longer running (ended, or deleted)."""
        job = self.repo.get_any(job_id)
        return job is None or job.state != JobState.RUNNING.value

    def _group(self, job: Job, index: int, control: Callable[[], None], held: Held) -> None:
        """Recognize, lay out and checkpoint one page group from what its
        render task prepared (or, should that be gone, from the document)."""
        control()
        options = job_options(job)
        checkpoint = self._checkpoint(job, held)
        progress = JobProgress(self.repo, job.id, self.finisher.metrics)
        prefix = keys.work_prefix(job.tenant, job.id, index)
        try:
            source = PreparedSource(self.store, prefix)
        except ObjectNotFound:
            log.warning("prepared group missing; reading the document here", extra={"job_id": job.id, "group": index})
            with self._original(job) as original, \
                    self.pipeline.open_document(original, options, checkpoint, name=job.filename, begin=False) as doc:
                self.pipeline.run_groups(doc, options, checkpoint, progress, control, job.tenant, only={index})
            return
        numbers = parse_page_range(options.pages, source.page_count)
        doc = OpenDocument(source, numbers, options.plan.groups(len(numbers)))
        self.pipeline.run_groups(doc, options, checkpoint, progress, control, job.tenant, only={index})
        self.store.delete_prefix(prefix)

    def _assemble(self, job: Job, control: Callable[[], None], rss: PeakRss, held: Held) -> None:
        """Stitch the checkpointed pages, store the exports, end the job."""
        control()
        options = job_options(job)
        with self.scratch.task(job.id) as tmp:
            with self._original(job) as original, \
                    self.pipeline.open_document(original, options, self._checkpoint(job), name=job.filename,
                                                begin=False) as doc:
                result = self.pipeline.assemble(doc, options, self._checkpoint(job), tmp / "out", "result")
            rss.sample()
            held(True)
            self._finish_parsed(job, options, result, rss)
        self.store.delete_prefix(keys.work_prefix(job.tenant, job.id))

    def _original(self, job: Job) -> AbstractContextManager[Path]:
        """The local copy of the job's original, pinned while the block runs."""
        return self.originals.use(job.id, job.size_bytes, lambda dest: fetch_original(self.store, job, dest))

    def _checkpoint(self, job: Job, held: Held | None = None) -> StoreCheckpoint:
        prefix = keys.checkpoint_prefix(job.tenant, job.id)
        return StoreCheckpoint(self.store, prefix) if held is None else _HeldCheckpoint(self.store, prefix, held)

    # -- what comes next ------------------------------------------------------------------

    def schedule(self, job: Job | None) -> list[str]:
        """Queue and send what ``job`` needs next, judged from its task rows
        and checkpoint: its ingest; then its page groups (all at once, or
        the next one only for engines whose groups run in order); then its
        assembly. Returns the task names sent. Safe to call at any time, by
        any number of processes."""
        if job is None or job.state not in (JobState.QUEUED.value, JobState.RUNNING.value):
            return []
        rows = self.tasks.states(job.id)
        first = first_task(job.lane)
        if rows.get(first) != DONE:
            wanted = [first]
        elif first == WHOLE:
            wanted = []
        else:
            wanted = self._next_tasks(job, rows)
        added = self.tasks.add(job.id, [(n, queue_for(job.lane, n)) for n in wanted])
        for name, queue in added:
            self.send_task(job.id, name, queue)
        return [n for n, _ in added]

    def _next_tasks(self, job: Job, rows: dict[str, str]) -> list[str]:
        options = job_options(job)
        groups = options.plan.groups(job.pages_total or 0)
        names = [group_task(g.index) for g in groups]
        if all(rows.get(n) == DONE for n in names):
            return [ASSEMBLE]
        renders = _ahead(names, rows, self.settings.queue.render_ahead_groups)
        ready = [n for i, n in enumerate(names) if rows.get(render_task(i)) == DONE and n not in rows]
        if self._in_order(options.engine, options.ocr):
            busy = any(rows.get(n) in (QUEUED, RUNNING) for n in names)
            first = next((n for n in names if n not in rows), None)
            ready = [first] if not busy and first in ready else []
        return renders + ready

    def _in_order(self, engine: str, ocr: str) -> bool:
        if ocr == "off":
            return False
        return self.pipeline.host.capabilities(engine).sequential_groups

    def send_task(self, job_id: str, name: str, queue: str, countdown_s: float = 0.0) -> None:
        """Hand a queued task to the transport; a failure is logged (the row stays queued)."""
        try:
            self.send(job_id, name, queue, countdown_s)
        except Exception as exc:  # the row is queued: the reconciler sends it again
            log.warning("could not send a task; the reconciler will", extra={
                "job_id": job_id, "task": name, "error": type(exc).__name__})

    # -- ends ---------------------------------------------------------------------------------

    def _transient(self, job: Job, lease: Lease, exc: BaseException) -> str:
        error = exc.to_dict() if hasattr(exc, "to_dict") else {"code": type(exc).__name__}
        if lease.attempt > self.settings.queue.task_retries:
            return self._job_failed(job, lease, exc, None)
        delay_s = min(300.0, 2.0 ** lease.attempt)
        try:
            released = self.tasks.release(lease, error, due_in_s=delay_s)
        except DatabaseUnavailable:
            return "retry"  # the lease runs out; the reconciler queues it again
        if released:
            log.warning("task hit a transient fault; retrying", extra={
                "job_id": job.id, "task": lease.name, "error": error.get("code"), "delay_s": delay_s})
            self.send_task(job.id, lease.name, queue_for(job.lane, lease.name), delay_s)
        return "retry"

    def _put_back(self, job: Job, lease: Lease) -> str:
        """Shutdown: the task back in the queue, due at once (its finished
        groups are checkpointed); the next process to serve its queue
        resumes it. Not a takeover: it does not count towards
        ``service.max_attempts``."""
        try:
            released = self.tasks.release(lease)
        except DatabaseUnavailable:
            return "stopped"  # the lease runs out; the reconciler queues it again
        if released:
            log.info("job requeued for shutdown", extra={"job_id": job.id, "tenant": job.tenant, "task": lease.name})
            self.send_task(job.id, lease.name, queue_for(job.lane, lease.name))
        return "stopped"

    def hand_back(self) -> list[Lease]:
        """A shutdown whose wait is over: every task still running in this
        process goes back to the queue, due at once, as :meth:`_put_back`
        puts one back (not a takeover: ``service.max_attempts`` does not
        count it). Its run is told first that its lease is gone, so it
        writes nothing more (its group in flight is abandoned: the next
        process runs it again from the checkpoint, which holds every group
        finished before). Returns the leases handed back."""
        with self._running_lock:
            running = list(self._running.values())
        handed: list[Lease] = []
        for lease, beat in running:
            self._handed_back.add(lease.token)
            beat.lost.set()  # before the row moves: no write of this run can follow the put-back
            try:
                released = self.tasks.release(lease)
            except DatabaseUnavailable:
                continue  # the lease runs out; the reconciler takes it back
            if released:
                handed.append(lease)
                log.info("job requeued for shutdown", extra={"job_id": lease.job_id, "task": lease.name,
                                                             "in_flight": True})
        return handed

    def _job_failed(self, job: Job, lease: Lease, exc: BaseException, rss: PeakRss | None) -> str:
        if not isinstance(exc, JobCancelled):
            log.error("task ended its job", extra={"job_id": job.id, "task": lease.name,
                                                   "error": type(exc).__name__}, exc_info=exc)
        fresh = self.repo.get_any(job.id) or job
        if fresh.state == JobState.RUNNING.value:
            with contextlib.suppress(IllegalTransition):
                self.finisher.stopped(fresh, exc, _seconds_since(fresh.started_at), rss.peak if rss else 0)
        error = exc.to_dict() if hasattr(exc, "to_dict") else {"code": "internal_error"}
        self.tasks.finish(lease, failed=not isinstance(exc, JobCancelled), error=error)
        self.tasks.fail_open(job.id, error)
        self.originals.forget(job.id)
        with contextlib.suppress(LongdocError):  # retention removes it with the job
            self.store.delete_prefix(keys.work_prefix(job.tenant, job.id))
        return "failed"


class _HeldCheckpoint(StoreCheckpoint):
    """A job's checkpoint that writes only while the run holds its task."""

    def __init__(self, store: ObjectStore, prefix: str, held: Held) -> None:
        super().__init__(store, prefix)
        self._held = held

    def begin(self, fingerprint: str) -> None:
        self._held()
        super().begin(fingerprint)

    def _start_afresh(self, fingerprint: str) -> None:
        super()._start_afresh(fingerprint)
        self._held(undo=lambda: self.store.delete(self._key("manifest.json")))

    def save_group(self, group_index: int, pages: Iterable[Page], complete: bool) -> None:
        self._held()
        pages = list(pages)
        super().save_group(group_index, pages, complete)
        self._held(undo=lambda: self.forget_group(group_index, [p.number for p in pages]))


def job_timed_out(settings: Settings) -> JobTimedOut:
    """The error of a job past its deadline (``service.timeout_seconds``),
    raised by its task or, should the task never get there (an engine
    that does not return), recorded by the reconciler."""
    limit = settings.service.timeout_seconds
    return JobTimedOut(f"The job ran past its {limit} s limit (counted from its start).")


def _seconds_since(moment: datetime | None) -> float:
    if moment is None:
        return 0.0
    return max(0.0, (datetime.now(UTC) - moment).total_seconds())



