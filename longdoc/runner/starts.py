"""Job starts: whether a queued job may start now (room to start), the same rule
on both transports.

At most ``max_jobs`` jobs run at once, of which at most ``max_jobs - 1``
long ones (when ``max_jobs`` is above 1): a short document always has room,
so it is never stuck behind long ones. The embedded server counts against
``service.max_concurrency`` when its pools pick a job's first task
(:class:`~longdoc.runner.inprocess.InProcessTransport`); the fleet against
``queue.max_running_jobs`` when a worker is handed one
(:meth:`~longdoc.runner.steps.TaskSteps.run`): a first task that finds no
room goes back to the queue and is sent again after :data:`RETRY_S`.
"""

from __future__ import annotations

from collections.abc import Mapping

#: how long a first task that found no room on the fleet waits before it is offered again, in seconds
RETRY_S = 5.0


def lanes_with_room(running: Mapping[str, str], max_jobs: int | None) -> tuple[str, ...]:
    """The lanes (``short``, ``long``) a new job may start in now, given the
    running jobs ``{job id: lane}``; ``max_jobs`` None: no limit."""
    if max_jobs is None:
        return ("short", "long")
    if len(running) >= max_jobs:
        return ()
    long_running = sum(1 for lane in running.values() if lane == "long")
    if max_jobs > 1 and long_running >= max_jobs - 1:
        return ("short",)
    return ("short", "long")
