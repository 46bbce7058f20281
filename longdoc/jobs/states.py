"""Job states and the transitions between them.

::

    queued ──► running ──► succeeded | partial | failed
      │           │
      └───────────┴──► cancelled          (cancel before or while running)
    succeeded | partial | failed | cancelled ──► expired   (retention elapsed)

A running job that is interrupted (its worker died, the server shut down)
stays running: its task goes back to the queue (:mod:`longdoc.jobs.task_repo`)
and resumes from the checkpoint. Terminal states are never left except for
``expired``.
"""

from __future__ import annotations

from enum import Enum


class JobState(str, Enum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    PARTIAL = "partial"
    FAILED = "failed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL


TERMINAL = frozenset({JobState.SUCCEEDED, JobState.PARTIAL, JobState.FAILED, JobState.CANCELLED, JobState.EXPIRED})
#: the states whose exports can be downloaded
WITH_RESULTS = frozenset({JobState.SUCCEEDED, JobState.PARTIAL})

ALLOWED: dict[JobState, frozenset[JobState]] = {
    JobState.QUEUED: frozenset({JobState.RUNNING, JobState.CANCELLED, JobState.FAILED}),
    JobState.RUNNING: frozenset({JobState.SUCCEEDED, JobState.PARTIAL, JobState.FAILED, JobState.CANCELLED}),
    JobState.SUCCEEDED: frozenset({JobState.EXPIRED}),
    JobState.PARTIAL: frozenset({JobState.EXPIRED}),
    JobState.FAILED: frozenset({JobState.EXPIRED}),
    JobState.CANCELLED: frozenset({JobState.EXPIRED}),
    JobState.EXPIRED: frozenset(),
}


class IllegalTransition(ValueError):
    pass


def check_transition(old: JobState, new: JobState) -> None:
    """Raise :class:`IllegalTransition` unless ``old → new`` is allowed."""
    if new not in ALLOWED[old]:
        raise IllegalTransition(f"job cannot go from {old.value} to {new.value}")
