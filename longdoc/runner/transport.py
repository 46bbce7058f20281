"""The task transport: what carries ``(job_id, task name)`` from whoever
queued a task (the API's job service, a task step queueing the next one, the
reconciler) to a process that runs it with :class:`~longdoc.runner.steps.TaskSteps`.

The database is the source of truth (every task is a ``job_tasks`` row
first, :mod:`longdoc.jobs.task_repo`); a transport only says "look". Two
implement it:

=========================================  ===========================================================
:class:`~longdoc.runner.inprocess.InProcessTransport`  the embedded server: a pool of threads per queue in this
                                           process takes due rows from the database; nothing can be lost
:class:`~longdoc.runner.celery_app.CeleryTransport`    the fleet: a message on the broker per task, taken by
                                           ``longdoc worker`` processes; a message can be lost (the
                                           reconciler sends a task again that stayed queued too long)
=========================================  ===========================================================

Every process that queues or runs tasks holds exactly one, and calls it
the same way whichever it is: the API (:mod:`longdoc.service.container`),
a worker process's :class:`~longdoc.runner.runner.Runner`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from longdoc.runner.steps import TaskSteps


@runtime_checkable
class TaskTransport(Protocol):
    #: whether a sent task can be lost on the way (a broker): the reconciler
    #: then sends again a task that stayed queued too long
    redelivers: bool

    def send(self, job_id: str, name: str, queue: str, countdown_s: float = 0.0) -> None:
        """The task's row is queued: have a process look at it (after
        ``countdown_s``). Raises BrokerUnavailable when it cannot (the row
        stays queued; the reconciler sends it again)."""

    def start(self, steps: TaskSteps | None) -> None:
        """Begin running tasks in this process with ``steps`` (``None``: this
        process only sends, e.g. the fleet's API)."""

    def begin_stop(self) -> None:
        """Take no more tasks; running ones stop at their next group boundary.
        Only sets flags, so safe in a signal handler."""

    def stop(self) -> None:
        """:meth:`begin_stop`, then wait (bounded by the shutdown grace) until
        the running tasks went back to the queue or ended."""

    def ready(self) -> bool:
        """Whether tasks sent now would be carried (readiness)."""
