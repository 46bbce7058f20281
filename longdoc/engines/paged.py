"""Page engines behind the group protocol.

RapidOCR and Tesseract recognize one page image at a time, in their own
bounded window (:class:`PageRecognizer`). :class:`PagedEngine` makes such a
recognizer an :class:`~longdoc.engines.base.Engine`: a session hands a
group's owned page images to it lazily and maps each
:class:`~longdoc.engines.base.RecognizedPage` into a
:class:`~longdoc.model.Page` with ``lines`` (layout comes later).

Cost of a group: the pages the recognizer may hold at once (its window, or
fewer when the group is smaller) × what one page holds in it (image copies
plus activations, estimated from the first page's size at the group's DPI),
in bytes. The recognizer is not re-entrant: one group at a time per
process (``groups_in_flight`` 1). Pages are read independently, so a
document's groups carry nothing from one to the next: on the fleet they
spread over engine workers.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from typing import Protocol, runtime_checkable

import numpy as np

from longdoc.engines.base import EngineCapabilities, GroupPlan, PageGroup, PageImage, RecognizedPage
from longdoc.errors import JobCancelled
from longdoc.model import Page, PageStatus
from longdoc.plan.groups import DocumentPlan


@runtime_checkable
class PageRecognizer(Protocol):
    """What RapidOCR and Tesseract provide."""

    name: str
    capabilities: EngineCapabilities
    max_in_flight: int

    @property
    def version(self) -> str: ...  # read-only: Tesseract's is known once it is found

    def load(self) -> None: ...

    def recognize(self, pages: Iterable[PageImage], max_in_flight: int | None = None) -> Iterator[RecognizedPage]:
        ...

    def workspace_bytes(self, page: PageImage) -> int: ...

    def close(self) -> None: ...


class PagedEngine:
    """An :class:`~longdoc.engines.base.Engine` over a :class:`PageRecognizer`.

    ``workspace_budget`` (bytes) is what ``kv_cache_watermark`` applies to."""

    def __init__(self, recognizer: PageRecognizer, workspace_budget: int) -> None:
        self.recognizer = recognizer
        self.name = recognizer.name
        self.capabilities = EngineCapabilities(languages=recognizer.capabilities.languages, output="lines")
        self.workspace_budget = workspace_budget

    @property
    def version(self) -> str:  # Tesseract knows its version only once found
        return self.recognizer.version

    def load(self) -> None:
        self.recognizer.load()

    def open_session(self, plan: DocumentPlan | None = None) -> PagedSession:
        """A session for one document; ``plan`` is not read (each group comes with its pages and DPI)."""
        self.load()
        return PagedSession(self.recognizer)

    def group_cost(self, plan: GroupPlan) -> int:
        """Bytes the group holds in the recognizer's window (see the module docstring)."""
        if not plan.owned:
            return 0
        pages = min(len(plan.owned), self.recognizer.max_in_flight)
        return pages * self.recognizer.workspace_bytes(_probe(plan))

    def health(self) -> bool:
        """Local workers: they are (re)started on demand."""
        return True

    def close(self) -> None:
        self.recognizer.close()


class PagedSession:
    """One document's pages through a page recognizer. :meth:`cancel` stops
    it between pages (a page already in a worker finishes there)."""

    def __init__(self, recognizer: PageRecognizer) -> None:
        self.recognizer = recognizer
        self._cancelled = threading.Event()

    def recognize(self, group: PageGroup) -> Iterator[Page]:
        for rec in self.recognizer.recognize(self._until_cancelled(group.images)):
            yield page_from(rec)

    def _until_cancelled(self, images: Iterable[PageImage]) -> Iterator[PageImage]:
        for image in images:
            if self._cancelled.is_set():
                raise JobCancelled("The document's recognition was cancelled.")
            yield image

    def cancel(self) -> None:
        self._cancelled.set()

    def close(self) -> None:
        self._cancelled.set()


def page_from(rec: RecognizedPage) -> Page:
    """A page engine's result as the document model's Page (lines not laid out)."""
    return Page(
        number=rec.page, width=rec.width_pt, height=rec.height_pt, lines=list(rec.lines),
        status=PageStatus.FAILED if rec.error is not None else PageStatus.OK, error=rec.error,
        engine=rec.engine or None, engine_version=rec.engine_version or None, rotation=rec.rotation,
        timings={"recognize": rec.seconds},
    )


def _probe(plan: GroupPlan) -> PageImage:
    """A page image of the first owned page's size at the plan's DPI, as a
    zero-stride view: the size without the memory."""
    first = plan.owned[0]
    width_pt, height_pt = plan.sizes.get(first, (612.0, 792.0))
    shape = (max(1, round(height_pt * plan.dpi / 72)), max(1, round(width_pt * plan.dpi / 72)), 3)
    return PageImage(page=first, image=np.broadcast_to(np.zeros(1, np.uint8), shape), dpi=plan.dpi,
                     width_pt=width_pt, height_pt=height_pt)
