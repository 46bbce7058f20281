"""The embedded server's transport: the fleet's three queues served by
bounded pools of threads in the server process, instead of Celery::

    short   service.max_concurrency threads          a short document's ``whole``
    cpu     max(1, service.max_concurrency - 1)      ingest, render:N, assemble
    engine  max(1, service.max_concurrency - 1)      group:N

The same task rows, leases, heartbeats and reconciler as on the fleet: a
pool's feeder thread takes the next due task of its queue from the
database when one of its threads is free (:meth:`TaskRepo.next_due`: the
most urgent job first, then first queued, then page groups in order),
starts it (its lease) and hands it to the thread, which runs it with
:meth:`TaskSteps.run_started`, the step a Celery worker runs. No message
can be lost: :meth:`InProcessTransport.send` only wakes the feeder of the
task's queue (after its countdown), and every feeder also looks every
:data:`POLL_S` seconds (a task due after a backoff, room freed elsewhere).

A queued job's first task starts only while there is room to start it
(:mod:`longdoc.runner.starts`): fewer than
``service.max_concurrency`` jobs run (counted in the database), of which
at most ``max_concurrency - 1`` long ones (when it is above 1): a short
document always has room, and a pool of its own, so it is never stuck
behind long ones.

A pool keeps its size in working threads: a thread still busy on a task
whose lease is gone (its job was ended under it, e.g. by the reconciler
past its deadline or a cancel, because an engine never returned on a page;
or the task was taken back) on two looks of the transport's watchdog
(every :data:`POLL_S` seconds, on tasks running longer than
``queue.lease_seconds``) is abandoned, with a warning naming job and task:
its slot goes to a new thread, and the abandoned one, should it ever
return, exits instead of taking more work (its run, finding its lease
gone, writes nothing).

:meth:`InProcessTransport.begin_stop` (SIGTERM) stops the feeders and
tells running tasks to stop at their next group boundary
(:attr:`TaskSteps.stopping`: they go back to the queue with their finished
groups checkpointed and resume after the restart). A task still running
``service.shutdown_grace_seconds`` after it (its group takes longer) is
handed back all the same (:meth:`TaskSteps.hand_back`): its group in
flight is abandoned, writes nothing more, and runs again after the
restart. Either way it is a put-back, never a takeover, so rolling
restarts never use up a job's ``service.max_attempts``; the grace is
counted from the signal, so it fits a process manager's stop timeout
whatever else the shutdown waits for. Threads busy on a task that is no
longer their own (its job ended under it) are not waited for.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

from longdoc.config import Settings
from longdoc.jobs.repo import JobRepo
from longdoc.jobs.states import JobState
from longdoc.jobs.task_repo import QUEUES, Lease, TaskRepo
from longdoc.runner.starts import lanes_with_room
from longdoc.runner.steps import TaskSteps
from longdoc.runtime.loop import Loop

log = logging.getLogger("longdoc.dispatch")

#: how often an idle feeder looks at its queue without being woken, in seconds
POLL_S = 2.0
_START_TRIES = 5


def pool_sizes(max_concurrency: int) -> dict[str, int]:
    """Threads per queue for ``service.max_concurrency`` jobs at once."""
    long_ones = max(1, max_concurrency - 1)
    return {"short": max_concurrency, "cpu": long_ones, "engine": long_ones}


class InProcessTransport:
    """The embedded backend's :class:`~longdoc.runner.transport.TaskTransport`."""

    #: the rows are the queue: nothing sent can be lost on the way
    redelivers = False

    def __init__(self, settings: Settings, tasks: TaskRepo, jobs: JobRepo) -> None:
        self.max_jobs = settings.service.max_concurrency
        self.lease_s = settings.queue.lease_seconds
        self.grace_s = settings.service.shutdown_grace_seconds
        self.sizes = pool_sizes(self.max_jobs)
        self.tasks, self.jobs = tasks, jobs
        self._steps: TaskSteps | None = None
        self._pools: dict[str, _Pool] = {}
        self._stopping = threading.Event()
        self._lock = threading.Lock()  # one pick at a time: the room to start counts what is starting
        self._starting: dict[str, str] = {}  # job id → lane: first tasks started here, still running
        self._lost: set[tuple[int, str]] = set()  # (thread id, lease token): lease gone at the last look
        self._watchdog = Loop(self._watch, POLL_S, "longdoc-pool-watchdog")
        self._closer = threading.Thread(target=self._close_when_stopping, name="longdoc-pool-closer", daemon=True)

    # -- what the task steps call -------------------------------------------------

    def send(self, job_id: str, name: str, queue_name: str, countdown_s: float = 0.0) -> None:
        """The task's row is queued: wake its queue's feeder (after
        ``countdown_s``). Before :meth:`start` and after :meth:`stop` it
        does nothing: the row waits in the database."""
        pool = self._pools.get(queue_name)
        if pool is None or self._stopping.is_set():
            return
        if countdown_s > 0:
            timer = threading.Timer(countdown_s, pool.wake)
            timer.daemon = True
            timer.start()
        else:
            pool.wake()

    # -- lifecycle ----------------------------------------------------------------

    def start(self, steps: TaskSteps | None) -> None:
        """Start a pool per queue running tasks with ``steps``."""
        if steps is None:
            raise ValueError("the embedded transport runs the tasks it carries: it needs the task steps")
        self._steps = steps
        for name in QUEUES:
            self._pools[name] = _Pool(name, self.sizes[name], self._pick, self._run, self._stopping)
        for pool in self._pools.values():
            pool.start()
        self._watchdog.start()
        self._closer.start()

    def ready(self) -> bool:
        """Started, not stopping, and every pool's feeder alive."""
        return bool(self._pools) and not self._stopping.is_set() and all(p.alive() for p in self._pools.values())

    def begin_stop(self) -> None:
        """Take no more tasks; running ones stop at their next group, and
        are handed back ``grace_s`` seconds from now if they have not.
        Only sets flags, so safe in a signal handler."""
        self._stopping.set()
        if self._steps is not None:
            self._steps.stopping.set()
        self._watchdog.begin_stop()
        for pool in self._pools.values():
            pool.begin_stop()

    def stop(self) -> None:
        """:meth:`begin_stop`, then wait until every running task went back
        to the queue (or ended), or was handed back at the end of the grace."""
        self.begin_stop()
        if self._closer.is_alive():
            self._closer.join()

    def _close_when_stopping(self) -> None:
        """From :meth:`begin_stop`: wait up to ``grace_s`` for the running
        tasks, then hand back those still running."""
        self._stopping.wait()
        deadline = time.monotonic() + self.grace_s
        for pool in self._pools.values():
            pool.wake()
        for pool in self._pools.values():
            pool.join(deadline, self._still_held)
        assert self._steps is not None
        try:
            handed = self._steps.hand_back()
        except Exception as exc:  # the database is gone: the leases run out, the reconciler takes them back
            log.warning("could not hand the running tasks back", extra={"error": type(exc).__name__})
            return
        if handed:
            log.info("running tasks handed back at the end of the shutdown grace", extra={
                "tasks": len(handed), "grace_s": self.grace_s})

    def _still_held(self, lease: Lease) -> bool:
        """Whether a stop waits for the thread running ``lease``'s task: not
        when the task is no longer its own (its job ended under it: an engine
        that never returns would hold the stop up to its timeout)."""
        try:
            return self.tasks.holds(lease)
        except Exception:  # the database is gone: wait, as before
            return True

    # -- the pools' two calls -------------------------------------------------------

    def _pick(self, queue_name: str) -> Lease | None:
        """Start the next task of ``queue_name`` this process may run now."""
        assert self._steps is not None
        with self._lock:
            lanes = self._room()
            for _ in range(_START_TRIES):  # another process may start the same row first
                due = self.tasks.next_due(queue_name, lanes)
                if due is None:
                    return None
                lease = self.tasks.start(due.job_id, due.name, self._steps.worker_id)
                if lease is not None:
                    if due.job_state == JobState.QUEUED.value:
                        self._starting[due.job_id] = due.lane
                    return lease
        return None

    def _room(self) -> tuple[str, ...]:
        """The lanes a new job may start in now."""
        running = self.jobs.running_lanes()
        running.update(self._starting)  # started here, maybe not yet running in the database
        return lanes_with_room(running, self.max_jobs)

    def _run(self, lease: Lease) -> None:
        assert self._steps is not None
        try:
            self._steps.run_started(lease)
        finally:
            with self._lock:
                self._starting.pop(lease.job_id, None)
            for pool in self._pools.values():  # a job may have ended: room for another
                pool.wake()

    # -- the watchdog -----------------------------------------------------------------

    def _watch(self) -> None:
        """Every :data:`POLL_S` seconds until :meth:`begin_stop`: :meth:`_look`."""
        try:
            self._lost = self._look(self._lost)
        except Exception as exc:  # the database blinked: look again next time
            log.warning("could not look at the pools' threads", extra={"error": type(exc).__name__}, exc_info=True)

    def _look(self, lost: set[tuple[int, str]]) -> set[tuple[int, str]]:
        """Abandon the threads busy on a task whose lease was already gone at
        the previous look (``lost``: ``(thread id, lease token)``); returns
        those whose lease is gone now. Only tasks running longer than the
        lease are looked up: one ended under its thread was ended at least
        that long after it started."""
        now = time.monotonic()
        gone: set[tuple[int, str]] = set()
        for pool in self._pools.values():
            for thread, lease, since in pool.busy():
                if now - since < self.lease_s:
                    continue
                key = (id(thread), lease.token)
                if key in lost:
                    if pool.abandon(thread, lease):
                        self._abandoned(pool, thread, lease, now - since)
                elif not self.tasks.holds(lease):
                    gone.add(key)
        return gone

    def _abandoned(self, pool: _Pool, thread: threading.Thread, lease: Lease, busy_s: float) -> None:
        with self._lock:
            self._starting.pop(lease.job_id, None)
        for each in self._pools.values():  # its slot is free again, and its job no longer counts
            each.wake()
        log.warning("pool thread abandoned: its task's lease is gone and it has not returned; a new thread "
                    "takes its place", extra={"job_id": lease.job_id, "task": lease.name, "queue": pool.name,
                                              "pool_thread": thread.name, "busy_s": round(busy_s, 1)})


class _Pool:
    """One queue's threads and their feeder."""

    def __init__(self, name: str, size: int, pick: Callable[[str], Lease | None], run: Callable[[Lease], None],
                 stopping: threading.Event) -> None:
        self.name, self.size = name, size
        self._pick, self._run, self._stopping = pick, run, stopping
        self._free = threading.Semaphore(size)
        self._handoff: queue.SimpleQueue[Lease | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._made = 0
        self._threads = [self._thread() for _ in range(size)]  # the working ones (never an abandoned one)
        self._busy: dict[threading.Thread, tuple[Lease, float]] = {}  # thread → its task, since (monotonic)
        self._abandoned: set[threading.Thread] = set()
        self._feeder = Loop(self._feed, POLL_S, f"longdoc-{name}-feeder", at_start=True)

    def _thread(self) -> threading.Thread:
        self._made += 1
        return threading.Thread(target=self._work, name=f"longdoc-{self.name}-{self._made - 1}", daemon=True)

    def start(self) -> None:
        for thread in self._threads:
            thread.start()
        self._feeder.start()

    def begin_stop(self) -> None:
        """The feeder takes no more tasks (flags only)."""
        self._feeder.begin_stop()

    def alive(self) -> bool:
        return self._feeder.is_alive()

    def busy(self) -> list[tuple[threading.Thread, Lease, float]]:
        """``(thread, its task's lease, since)`` of every working thread busy now."""
        with self._lock:
            return [(t, lease, since) for t, (lease, since) in self._busy.items() if t not in self._abandoned]

    def abandon(self, thread: threading.Thread, lease: Lease) -> bool:
        """Give up ``thread``, still busy on ``lease``'s task: its slot goes to
        a new thread; it exits should it ever return. False when it is no
        longer busy on that task."""
        with self._lock:
            busy = self._busy.get(thread)
            if busy is None or busy[0] is not lease or thread in self._abandoned:
                return False
            self._abandoned.add(thread)
            self._threads.remove(thread)
            fresh = None if self._stopping.is_set() else self._thread()
            if fresh is not None:
                self._threads.append(fresh)
        if fresh is not None:
            fresh.start()
        self._free.release()
        return True

    def wake(self) -> None:
        self._feeder.wake()

    def join(self, deadline: float, held: Callable[[Lease], bool]) -> None:
        """Wait until ``deadline`` for the feeder and the working threads,
        except those busy on a task ``held`` says is no longer theirs."""
        self._feeder.join(max(0.0, deadline - time.monotonic()))
        self._release_workers()
        with self._lock:
            threads = list(self._threads)
            busy = {t: lease for t, (lease, _) in self._busy.items()}
        for thread in threads:
            if thread in busy and not held(busy[thread]):
                continue
            thread.join(max(0.0, deadline - time.monotonic()))

    def _feed(self) -> float | None:
        """Hand the next due task to a free thread: at once while there are
        tasks and free threads; otherwise after :data:`POLL_S` or a wake.
        :meth:`begin_stop` ends the loop between passes; a stop that comes
        while this pass waits for a free thread takes nothing more."""
        if not self._free.acquire(timeout=POLL_S):
            return 0.0
        if self._stopping.is_set():
            self._free.release()
            self._feeder.begin_stop()
            return None
        lease = None
        try:
            lease = self._pick(self.name)
        except Exception as exc:  # the database blinked: look again shortly
            log.warning("could not take a task", extra={"queue": self.name, "error": type(exc).__name__})
        if lease is None:
            self._free.release()
            return None
        self._handoff.put(lease)
        return 0.0

    def _release_workers(self) -> None:
        """The feeder ended: each working thread exits once its task is done."""
        with self._lock:
            working = len(self._threads)
        for _ in range(working):
            self._handoff.put(None)

    def _work(self) -> None:
        me = threading.current_thread()
        while (lease := self._handoff.get()) is not None:
            with self._lock:
                self._busy[me] = (lease, time.monotonic())
            try:
                self._run(lease)
            except Exception:  # the steps record failures themselves; never lose a thread
                log.exception("task raised", extra={"job_id": lease.job_id, "task": lease.name})
            finally:
                with self._lock:
                    del self._busy[me]
                    abandoned = me in self._abandoned
                    self._abandoned.discard(me)
                if not abandoned:
                    self._free.release()
            if abandoned:  # its slot went to a new thread
                log.info("an abandoned pool thread returned; it exits", extra={
                    "job_id": lease.job_id, "task": lease.name, "queue": self.name})
                return
