"""Checkpoints: after each group, its owned pages are written out, so a
rerun (or a restarted worker) resumes at the next group instead of redoing.

:class:`Checkpoint` is what the pipeline needs of one. There is one
implementation, :class:`~longdoc.storage.checkpoint.StoreCheckpoint`, over
any object store: jobs keep theirs in the service's store (so any worker
can resume any job), the CLI in a local folder beside its outputs
(``OUT/.longdoc/<stem>/checkpoint``, :func:`~longdoc.storage.checkpoint.folder_checkpoint`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from longdoc.model import Page


class Checkpoint(Protocol):
    def begin(self, fingerprint: str) -> None: ...
    def group_done(self, group_index: int) -> bool: ...
    def save_group(self, group_index: int, pages: Iterable[Page], complete: bool) -> None: ...
    def load_page(self, number: int) -> Page | None: ...
