"""Task records (``job_tasks``): the only code that reads and writes them.

A job is a few tasks, on the Celery fleet and in the embedded server
alike, each a row keyed by (job id, name) and named for what it does::

    ingest            open the document, plan its page groups, queue them
    render:000003     open the document, write what group 3 needs (sizes,
                      text layers, page images) to the store (cpu)
    group:000003      recognize, lay out and checkpoint page group 3 from
                      what its render left (engine: never opens the document)
    assemble          stitch the checkpointed pages, write the exports
    whole             all of that on one worker (short documents)

Each task goes to one queue (:func:`queue_for`): ``short`` (a short
document's ``whole``), ``engine`` (page groups) or ``cpu`` (the rest). The
transport (a Celery broker, or the embedded server's pools) only carries
``(job_id, name)``; the row says what is true::

    queued ──start──► running ──finish──► done | failed
      ▲                  │
      └── release / take back (transient fault; stale heartbeat)

Every move is a compare-and-set, so a message delivered twice (broker
redelivery, a reconciler's resend) starts the task once: the second start
finds it running or done. A run holds a random ``lease`` token; its
heartbeat, finish and release name it, and fail (False) once the
reconciler took the task back, so a worker that lost its lease can never
overwrite the run that replaced it. The leases are those of
:class:`~longdoc.jobs.leased.LeasedQueue` (the webhook outbox's too), over
the columns :data:`TASKS` names.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy import and_, case, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session, sessionmaker

from longdoc.jobs.db import rowcount
from longdoc.jobs.leased import Claim, LeasedQueue, QueueTable
from longdoc.jobs.models import Job, JobTask, utcnow
from longdoc.jobs.repo import Clock, _Repo
from longdoc.jobs.states import JobState


class TaskKind(StrEnum):
    """What a task does. A task's name is its kind, with the page group's
    index for the per-group kinds (``render:000003``, ``group:000003``)."""

    WHOLE = "whole"          # a short document's one task: the whole pipeline on one worker
    INGEST = "ingest"        # open the document, plan its page groups, queue them
    RENDER = "render"        # per group: what its engine task needs, into the store (cpu)
    GROUP = "group"          # per group: recognize, lay out, checkpoint (engine)
    ASSEMBLE = "assemble"    # stitch the checkpointed pages, write the exports, end the job

    def named(self, index: int | None = None) -> str:
        """This kind's task name (``index``: the group, for the per-group kinds)."""
        if self in (TaskKind.RENDER, TaskKind.GROUP):
            if index is None:
                raise ValueError(f"a {self.value} task names its page group")
            return f"{self.value}:{index:06d}"
        return self.value


class QueueName(StrEnum):
    """The queues tasks wait in (Celery queues on the fleet, pools in the embedded server)."""

    CPU = "cpu"          # ingest, renders, assembly
    ENGINE = "engine"    # page groups
    SHORT = "short"      # a short document's whole task


#: the names of the tasks that have no group (plain strings, as stored)
INGEST, ASSEMBLE, WHOLE = TaskKind.INGEST.value, TaskKind.ASSEMBLE.value, TaskKind.WHOLE.value
QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
QUEUES: tuple[str, ...] = tuple(q.value for q in QueueName)
#: where ``job_tasks`` keeps its leased queue: a run's token in ``lease``,
#: its heartbeat in ``heartbeat_at``
TASKS = QueueTable(JobTask, key=("job_id", "name"), state="state", waiting=QUEUED, held=RUNNING,
                   due_at="enqueued_at", holder="worker_id", stamp="heartbeat_at", token="lease",
                   claimed_at="started_at")


def task_kind(name: str) -> TaskKind:
    """The kind of the task called ``name``; ValueError for a name no task has."""
    prefix, _, rest = name.partition(":")
    kind = TaskKind(prefix)
    if (kind in (TaskKind.RENDER, TaskKind.GROUP)) != bool(rest.isdigit()):
        raise ValueError(f"{name!r} is not a task name")
    return kind


def first_task(lane: str) -> str:
    """The task a job of ``lane`` starts with: a short document runs whole
    on one worker (three tasks would cost more than its pages), a long one
    is planned and spread."""
    return WHOLE if lane == "short" else INGEST


def queue_for(lane: str, name: str) -> str:
    """The queue task ``name`` of a job in ``lane`` goes to (the one mapping
    from lane to queue): the short lane's one task to ``short``, page groups
    to ``engine``, everything else (ingest, renders, assembly) to ``cpu``."""
    if lane == "short":
        return QueueName.SHORT.value
    return (QueueName.ENGINE if group_index(name) is not None else QueueName.CPU).value


def first_tasks(lane: str) -> list[tuple[str, str]]:
    """``[(name, queue)]`` of what a new job of ``lane`` is queued with."""
    name = first_task(lane)
    return [(name, queue_for(lane, name))]


def group_task(index: int) -> str:
    """The task name of page group ``index`` (0-based) on an engine worker."""
    return TaskKind.GROUP.named(index)


def render_task(index: int) -> str:
    """The task name of page group ``index``'s render stage on a cpu worker."""
    return TaskKind.RENDER.named(index)


def group_index(name: str) -> int | None:
    """The group index a group task's name names, None for any other task."""
    prefix, _, rest = name.partition(":")
    return int(rest) if prefix == TaskKind.GROUP and rest.isdigit() else None


def render_index(name: str) -> int | None:
    """The group index a render task's name names, None for any other task."""
    prefix, _, rest = name.partition(":")
    return int(rest) if prefix == TaskKind.RENDER and rest.isdigit() else None


@dataclass(frozen=True)
class Lease:
    """One run of one task."""

    job_id: str
    name: str
    token: str
    attempt: int


@dataclass(frozen=True)
class Due:
    """A queued task that may start now, with what admission needs of its job."""

    job_id: str
    name: str
    job_state: str
    lane: str


@dataclass(frozen=True)
class QueueFigures:
    """What an autoscaler reads per queue."""

    depth: int = 0
    oldest_age_s: float = 0.0
    in_flight: int = 0
    retried: int = 0
    failed: int = 0


class TaskRepo(_Repo):
    def __init__(self, sessions: sessionmaker[Session], *, clock: Clock = utcnow) -> None:
        super().__init__(sessions, clock=clock)
        self._queue = LeasedQueue(sessions, TASKS, clock=clock)

    # -- queueing --------------------------------------------------------------

    def add(self, job_id: str, tasks: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """Queue ``(name, queue)`` tasks of ``job_id`` that have no row yet;
        returns those it inserted (the caller sends them). Safe to call twice."""
        if not tasks:
            return []
        now = self._now()
        with self._tx() as s:
            existing = set(s.scalars(select(JobTask.name).where(JobTask.job_id == job_id,
                                                                JobTask.name.in_([n for n, _ in tasks]))))
            fresh = [(n, q) for n, q in tasks if n not in existing]
            if fresh:
                rows = [dict(job_id=job_id, name=n, queue=q, state=QUEUED, attempts=0, takeovers=0, enqueued_at=now)
                        for n, q in fresh]
                s.execute(_insert_ignore(s, rows))
        return fresh

    def touch(self, job_id: str, name: str, older_than: timedelta | None = None) -> bool:
        """Mark a queued task as sent again now (the reconciler's resend).
        With ``older_than``, only if it is still unstarted that long: of
        reconcilers resending one lost message at once, one wins."""
        now = self._now()
        where = [JobTask.job_id == job_id, JobTask.name == name, JobTask.state == QUEUED]
        if older_than is not None:
            where.append(JobTask.enqueued_at < now - older_than)
        with self._tx() as s:
            return _changed(s, update(JobTask).where(*where).values(enqueued_at=now))

    def next_due(self, queue: str, new_job_lanes: tuple[str, ...] = ()) -> Due | None:
        """The queued task of ``queue`` to run next (what a pool of the
        embedded server takes): due now (not waiting out a backoff), of a
        running job, or of a queued job whose lane is in ``new_job_lanes``
        (the lanes that have room for another job); most urgent job first
        (priority high to low, then queued first), then by task name (page
        groups in order). None when there is none."""
        now = self._now()
        live = Job.state == JobState.RUNNING.value
        if new_job_lanes:
            live = or_(live, and_(Job.state == JobState.QUEUED.value, Job.lane.in_(new_job_lanes)))
        query = (select(JobTask.job_id, JobTask.name, Job.state, Job.lane).join(Job, Job.id == JobTask.job_id)
                 .where(*self._queue.due(now), JobTask.queue == queue, live)
                 .order_by(Job.priority.desc(), Job.queued_at, Job.id, JobTask.name).limit(1))
        with self._tx() as s:
            row = s.execute(query).first()
        return Due(*row) if row is not None else None

    # -- a run ----------------------------------------------------------------------

    def start(self, job_id: str, name: str, worker_id: str) -> Lease | None:
        """queued → running under a new lease; None when the task is not
        queued (running elsewhere, done, failed, or no such task)."""
        claim = self._queue.claim((job_id, name), worker_id, values={"attempts": JobTask.attempts + 1},
                                  returning=(JobTask.attempts,))
        if claim is None:
            return None
        return Lease(job_id, name, claim.lease[0], int(claim.row[0]))

    def heartbeat(self, lease: Lease) -> bool:
        """Refresh the lease; False once it was taken back."""
        return self._queue.renew(_claim(lease)) is not None

    def holds(self, lease: Lease) -> bool:
        """Whether ``lease`` still holds its task (read only): False once the
        task was taken back, or failed because its job ended."""
        return self._queue.holds(_claim(lease))

    def finish(self, lease: Lease, *, failed: bool = False, error: dict[str, Any] | None = None) -> bool:
        """running → done (or failed) if ``lease`` still holds the task."""
        return self._queue.settle(_claim(lease), state=FAILED if failed else DONE, error=error,
                                  finished_at=self._now())

    def release(self, lease: Lease, error: dict[str, Any] | None = None, due_in_s: float = 0.0) -> bool:
        """running → queued after a transient fault; the caller sends it
        again to be run in ``due_in_s`` (its backoff), and ``enqueued_at``
        is set to that moment, so the reconciler does not take the wait for
        a lost message."""
        return self._queue.release(_claim(lease), due_in_s, error=error)

    def unstart(self, lease: Lease) -> bool:
        """running → queued as if :meth:`start` had not happened (its attempt
        uncounted): a process that took the task while it was stopping runs
        nothing, and the next process runs it as the attempt it was."""
        return self._queue.release(_claim(lease), None, attempts=JobTask.attempts - 1)

    # -- the reconciler ---------------------------------------------------------------

    def stale(self, older_than: timedelta) -> list[JobTask]:
        """Running tasks whose heartbeat is older than ``older_than``."""
        return self._queue.lapsed(older_than)

    def running(self) -> list[JobTask]:
        """Every running task (at start, the reconciler looks for those of
        dead processes of its own host)."""
        return self._queue.held_rows()

    def take_back(self, task: JobTask) -> bool:
        """A stale running task → queued, if its lease is still the one seen."""
        return self._queue.take_back(task, takeovers=JobTask.takeovers + 1)

    def unstarted(self, older_than: timedelta) -> list[JobTask]:
        """Queued tasks sent more than ``older_than`` ago and not started."""
        cutoff = self._now() - older_than
        with self._tx() as s:
            return list(s.scalars(select(JobTask).where(JobTask.state == QUEUED, JobTask.enqueued_at < cutoff)
                                  .order_by(JobTask.enqueued_at)))

    def fail_open(self, job_id: str, error: dict[str, Any]) -> int:
        """Every queued or running task of ``job_id`` → failed (the job ended)."""
        with self._tx() as s:
            result = s.execute(update(JobTask).where(JobTask.job_id == job_id, JobTask.state.in_((QUEUED, RUNNING)))
                               .values(state=FAILED, error=error, lease=None, finished_at=self._now())
                               .execution_options(synchronize_session=False))
            return rowcount(result)

    def jobs_without_open_tasks(self, grace: timedelta) -> list[Job]:
        """Queued or running jobs with no queued or running task, quiet for
        longer than ``grace`` (queued that long; running with no task started
        or finished that recently, so a worker that just finished one is not
        raced while it queues the next)."""
        cutoff = self._now() - grace
        open_task = select(JobTask.job_id).where(JobTask.job_id == Job.id, JobTask.state.in_((QUEUED, RUNNING)))
        recent_task = select(JobTask.job_id).where(JobTask.job_id == Job.id, or_(
            JobTask.started_at >= cutoff, JobTask.finished_at >= cutoff))
        quiet = or_(and_(Job.state == JobState.QUEUED.value, Job.queued_at < cutoff),
                    and_(Job.state == JobState.RUNNING.value, ~recent_task.exists()))
        with self._tx() as s:
            return list(s.scalars(select(Job).where(quiet, ~open_task.exists()).order_by(Job.queued_at).limit(500)))

    # -- reading ----------------------------------------------------------------------

    def of_job(self, job_id: str) -> list[JobTask]:
        with self._tx() as s:
            return list(s.scalars(select(JobTask).where(JobTask.job_id == job_id).order_by(JobTask.name)))

    def states(self, job_id: str) -> dict[str, str]:
        """``{task name: state}`` of every task of ``job_id`` (two columns,
        no task objects: the scheduler reads them after every task)."""
        with self._tx() as s:
            rows = s.execute(select(JobTask.name, JobTask.state).where(JobTask.job_id == job_id))
            return {name: state for name, state in rows}

    def open_count(self, job_id: str) -> int:
        """Tasks of ``job_id`` still queued or running."""
        with self._tx() as s:
            return int(s.scalar(select(func.count()).select_from(JobTask).where(
                JobTask.job_id == job_id, JobTask.state.in_((QUEUED, RUNNING)))) or 0)

    def figures(self) -> dict[str, QueueFigures]:
        """Per queue: queued tasks, age of the oldest, running ones, tasks
        started more than once, failed ones. Every queue present."""
        now = self._now()
        with self._tx() as s:
            rows = s.execute(select(
                JobTask.queue, func.sum(_when(JobTask.state == QUEUED)), func.sum(_when(JobTask.state == RUNNING)),
                func.sum(_when(JobTask.attempts > 1)), func.sum(_when(JobTask.state == FAILED)),
            ).group_by(JobTask.queue)).all()
            oldest = dict(s.execute(select(JobTask.queue, func.min(JobTask.enqueued_at))
                                    .where(JobTask.state == QUEUED).group_by(JobTask.queue)).all())
        out = {q: QueueFigures() for q in QUEUES}
        for queue, depth, running, retried, failed in rows:
            first = oldest.get(queue)
            age = max(0.0, (now - first).total_seconds()) if first is not None else 0.0
            out[queue] = QueueFigures(int(depth or 0), age, int(running or 0), int(retried or 0), int(failed or 0))
        return out

    def running_by_worker(self) -> dict[str, int]:
        """Running tasks per worker id."""
        with self._tx() as s:
            rows = s.execute(select(JobTask.worker_id, func.count()).where(JobTask.state == RUNNING)
                             .group_by(JobTask.worker_id)).all()
        return {w or "unknown": int(n) for w, n in rows}


# -- helpers ----------------------------------------------------------------------------


def _claim(lease: Lease) -> Claim:
    """The queue's name for ``lease``."""
    return Claim((lease.job_id, lease.name), (lease.token,))


def _changed(s: Session, statement: Any) -> bool:
    return rowcount(s.execute(statement.execution_options(synchronize_session=False))) == 1


def _insert_ignore(s: Session, rows: list[dict[str, Any]]) -> Any:
    insert = pg_insert if s.get_bind().dialect.name == "postgresql" else sqlite_insert
    return insert(JobTask).values(rows).on_conflict_do_nothing(index_elements=["job_id", "name"])


def _when(condition: Any) -> Any:
    return case((condition, 1), else_=0)
