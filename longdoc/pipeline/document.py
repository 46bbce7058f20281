"""One document's page groups: recognize, lay out, checkpoint, in order.

::

    group g:   [resume from checkpoint] or [recognize ─► regions ─► layout ─► review ─► checkpoint ─► progress]
                                              ▲
               up to ``lookahead`` groups recognize at once (engines whose
               groups are independent); layout, checkpoints and progress
               always follow page order, one group at a time

Lookahead is 1 for engines that carry state from group to group
(``sequential_groups``) and for documents with no OCR at all; otherwise it
is the engine's ``groups_in_flight``: a model server gets the next groups of
a long document while earlier ones decode. Admission (the watermark) and
the engine's fair turns bound what is really in flight.

The boundary cache keeps the laid-out last ``chunk_overlap`` pages of the
previous group for the next group's cross-page analysis; its bytes count in
a byte-unit engine's workspace. When a group fails to start or a control
check stops the run, everything in flight is cancelled (the engine
session's requests, groups waiting for room) and finished groups stay
checkpointed.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType

from longdoc.ingest.source import DocumentSource
from longdoc.model import Page, PageStatus
from longdoc.pipeline.checkpoint import Checkpoint
from longdoc.pipeline.labels import with_label
from longdoc.pipeline.layout_group import layout_pages
from longdoc.pipeline.options import ParseOptions
from longdoc.pipeline.recognize import EngineLane, recognize_group
from longdoc.pipeline.regions import find_regions
from longdoc.pipeline.review import with_review
from longdoc.plan import BoundaryCache, Group
from longdoc.progress import Progress
from longdoc.regions.detector import RegionDetector


class DocumentRun:
    """Runs the groups of one opened document. Use as a context manager:
    leaving it cancels what is still in flight and closes the engine
    session."""

    def __init__(
        self,
        source: DocumentSource,
        numbers: list[int],
        options: ParseOptions,
        checkpoint: Checkpoint,
        progress: Progress,
        control: Callable[[], None],
        lane: Callable[[], EngineLane] | None,
        lookahead: int,
        text_layer_version: str,
        review_below: float,
        regions: RegionDetector | None = None,
    ) -> None:
        self.source, self.numbers, self.options = source, numbers, options
        self.checkpoint, self.progress, self.control = checkpoint, progress, control
        self._lane_factory = lane
        self._lane: EngineLane | None = None
        self._lane_lock = threading.Lock()
        self.lookahead = max(1, lookahead)
        self.text_layer_version = text_layer_version
        self.review_below = review_below
        self.regions = regions
        self.boundary: BoundaryCache[Page] = BoundaryCache()
        self._held = 0  # boundary bytes counted in the engine's workspace
        self._pool = ThreadPoolExecutor(self.lookahead, thread_name_prefix="longdoc-group") if self.lookahead > 1 else None

    # -- the loop ------------------------------------------------------------

    def run(self, groups: list[Group], only: set[int] | None = None) -> int:
        """Every group, in order (or only the indexes in ``only``: one task
        of the fleet); returns how many pages were resumed from an earlier
        run. With ``only``, a group just before one to run lends its
        checkpointed pages to the boundary cache when it is done, and is
        otherwise left alone."""
        resumed = 0
        pending: deque[tuple[Group, Future[dict[int, Page]]]] = deque()
        for group in groups:
            if only is not None and group.index not in only:
                if group.index + 1 in only and (saved := self._load_done_group(group)) is not None:
                    self._keep_boundary(group, {p.number: p for p in saved})
                continue
            saved = self._load_done_group(group)
            if saved is not None:
                while pending:
                    self._finish(*pending.popleft())
                self._keep_boundary(group, {p.number: p for p in saved})
                resumed += len(saved)
                self.progress.advance(saved, resumed=True)
                continue
            self.control()                                                    # cancel, timeout, shutdown
            pending.append((group, self._start(group)))
            while len(pending) >= self.lookahead:
                self._finish(*pending.popleft())
        while pending:
            self._finish(*pending.popleft())
        return resumed

    def _start(self, group: Group) -> Future[dict[int, Page]]:
        if self._pool is None:
            done: Future[dict[int, Page]] = Future()
            done.set_result(self._recognize(group))
            return done
        return self._pool.submit(self._recognize, group)

    def _recognize(self, group: Group) -> dict[int, Page]:
        pages = recognize_group(
            self.source, group.index, [self.numbers[i] for i in group.owned],
            [self.numbers[i] for i in group.context], ocr=self.options.ocr, dpi=self.options.dpi,
            lane=self._get_lane, text_layer_version=self.text_layer_version,
        )
        if self.regions is not None:
            pages = find_regions(self.source, pages, self.regions)                # regions
        return pages

    def _finish(self, group: Group, future: Future[dict[int, Page]]) -> None:
        """Lay out, checkpoint and report a recognized group (in order)."""
        recognized = future.result()
        owned = [self.numbers[i] for i in group.owned]
        available = {self.numbers[i]: p for i in self.boundary.indexes() if (p := self.boundary.get(i))}
        available.update(recognized)
        pages = [with_review(with_label(p, self.source), self.review_below)         # layout, page labels,
                 for p in layout_pages(owned, available)]                              # confidence and flags
        complete = all(p.status is PageStatus.OK or not _retryable(p) for p in pages)
        self.checkpoint.save_group(group.index, pages, complete)              # checkpoint
        self._keep_boundary(group, {p.number: p for p in pages})
        self.progress.advance(pages)

    # -- boundary cache ----------------------------------------------------------

    def _keep_boundary(self, group: Group, pages: dict[int, Page]) -> None:
        """Keep the last O pages of ``group`` (laid out) for the next group."""
        for i in group.owned:
            self.boundary.put(i, pages[self.numbers[i]])
        self.boundary.keep_only(range(group.end - self.options.chunk_overlap, group.end))
        self._count_held(self.boundary.approx_bytes())

    def _count_held(self, held: int) -> None:
        lane = self._lane
        if lane is None or lane.engine.capabilities.cost_unit != "bytes":
            return
        if held > self._held:
            lane.admission.hold(held - self._held)
        elif held < self._held:
            lane.admission.release(self._held - held)
        self._held = held

    def _load_done_group(self, group: Group) -> list[Page] | None:
        if not self.checkpoint.group_done(group.index):
            return None
        pages = [self.checkpoint.load_page(self.numbers[i]) for i in group.owned]
        loaded = [p for p in pages if p is not None]
        return loaded if len(loaded) == len(pages) else None

    # -- the engine ------------------------------------------------------------

    def _get_lane(self) -> EngineLane:
        with self._lane_lock:
            if self._lane is None:
                assert self._lane_factory is not None, "a page needs OCR but the run has no engine"
                self._lane = self._lane_factory()
            return self._lane

    # -- lifecycle ---------------------------------------------------------------

    def __enter__(self) -> DocumentRun:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        lane = self._lane
        if exc_type is not None and lane is not None:
            lane.cancel()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        if lane is not None:
            self._count_held(0)
            lane.close()


def _retryable(page: Page) -> bool:
    return page.error is not None and page.error.retryable
