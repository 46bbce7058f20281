"""Recognize stage: one group's owned pages → one :class:`~longdoc.model.Page` each.

Per page, the OCR mode decides where the text comes from:

- ``off``: the PDF text layer only (a page without one comes out empty);
- ``force``: render and OCR every page;
- ``auto``: the text layer where :func:`judge_text_layer` finds it sound,
  OCR where it is missing or garbage. The reason is recorded per page.

The pages that need OCR go to the engine as one group: its cost is
reserved in the engine's workspace (waiting for room under the watermark)
and the engine's turn taken (shared fairly between owners) before it
starts; both are given back when it ends. Pages are rendered lazily as the
engine pulls them. Every step is per page: a page whose size, text, render
or recognition fails (or trips a sandbox limit) fails alone, and a page the
engine did not return fails with ``engine_failed`` rather than vanish.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from longdoc.engines.base import Engine, EngineSession, GroupPlan, PageGroup, PageImage, open_session
from longdoc.errors import EngineFailed, LongdocError, ResourceLimit
from longdoc.ingest.source import DocumentSource, TextLayerView
from longdoc.ingest.textlayer import judge_text_layer
from longdoc.model import ErrorInfo, Page, PageStatus, TextSource
from longdoc.pipeline.options import ParseOptions
from longdoc.pipeline.regions import worth_analyzing
from longdoc.pipeline.render import iter_page_images
from longdoc.plan import Admission, DocumentPlan, FairTurns
from longdoc.regions.detector import REGION_DPI

TEXT_LAYER_ENGINE = "text_layer"

log = logging.getLogger("longdoc.pipeline")


def failed_page(number: int, exc: LongdocError, size: tuple[float, float], reason: str | None) -> Page:
    """A page that failed before (or instead of) an engine's result; its
    size is (0, 0) when even that could not be read."""
    return Page(number=number, width=size[0], height=size[1], status=PageStatus.FAILED,
                error=ErrorInfo.of(exc, number), ocr_reason=reason)


@dataclass
class EngineLane:
    """What the recognize stage needs of one engine for one document: the
    engine, its admission and turns (shared by all documents) and this
    document's session (opened on first use, from any thread, for the
    document's ``plan``)."""

    engine: Engine
    admission: Admission
    turns: FairTurns
    owner: str
    abort: threading.Event
    plan: DocumentPlan

    def __post_init__(self) -> None:
        self._session: EngineSession | None = None
        self._lock = threading.Lock()

    def session(self) -> EngineSession:
        with self._lock:
            if self._session is None:
                self._session = open_session(self.engine, self.plan)
            return self._session

    def cancel(self) -> None:
        """Stop everything this document has in flight (from any thread)."""
        self.abort.set()
        with self._lock:
            if self._session is not None:
                self._session.cancel()

    def close(self) -> None:
        with self._lock:
            if self._session is not None:
                self._session.close()
                self._session = None


def recognize_group(
    source: DocumentSource,
    index: int,
    owned: Sequence[int],
    context: Sequence[int],
    *,
    ocr: str,
    dpi: int,
    lane: Callable[[], EngineLane],
    text_layer_version: str,
) -> dict[int, Page]:
    """Recognize the 1-based pages ``owned`` of group ``index`` (``context``:
    the overlap pages before them); returns a Page for every owned page.

    ``lane`` is called only if some page needs OCR (text-layer-only
    documents never start an engine)."""
    pages: dict[int, Page] = {}
    to_ocr: dict[int, str] = {}
    sizes: dict[int, tuple[float, float]] = {}
    for number in owned:
        decided = from_text_layer(source, number, ocr, sizes, text_layer_version)
        if isinstance(decided, Page):
            pages[number] = decided
        else:
            to_ocr[number] = decided
    if to_ocr:
        pages.update(_ocr_group(source, index, to_ocr, context, sizes, dpi, lane()))
    return pages


def from_text_layer(source: TextLayerView, number: int, ocr: str, sizes: dict[int, tuple[float, float]],
                     version: str) -> Page | str:
    """The page from its text layer, a failed page, or why it needs OCR."""
    t0 = time.perf_counter()
    try:
        sizes[number] = width, height = source.page_size(number)
    except LongdocError as exc:
        return failed_page(number, exc, (0.0, 0.0), exc.code)
    if ocr == "force":
        return "ocr_forced"
    try:
        lines = source.text_layer(number)
    except ResourceLimit as exc:  # rendering the same page would trip it again
        return failed_page(number, exc, sizes[number], exc.code)
    except LongdocError as exc:
        return exc.code
    use, reason = judge_text_layer(lines, width, height)
    if not (use or ocr == "off"):
        return reason
    seconds = time.perf_counter() - t0
    return Page(
        number=number, width=width, height=height, lines=list(lines or []), engine=TEXT_LAYER_ENGINE,
        engine_version=version, text_source=TextSource.TEXT_LAYER if use else None,
        ocr_reason=reason if use else f"ocr_off:{reason}", timings={"text_layer": seconds},
    )


def _ocr_group(
    source: DocumentSource,
    index: int,
    reasons: dict[int, str],
    context: Sequence[int],
    sizes: dict[int, tuple[float, float]],
    dpi: int,
    lane: EngineLane,
) -> dict[int, Page]:
    engine = lane.engine
    shown = tuple(context) if engine.capabilities.needs_context else ()
    for number in shown:
        sizes.setdefault(number, _size_or_zero(source, number))
    plan = GroupPlan(index=index, owned=tuple(reasons), context=shown, sizes=dict(sizes), dpi=dpi)
    pages: dict[int, Page] = {}
    rendered: dict[int, tuple[float, float, bool]] = {}  # page -> (seconds, dpi, downscaled)

    def failed(number: int, exc: LongdocError) -> None:
        if number in reasons:  # a context page that fails to render is simply not shown
            pages[number] = failed_page(number, exc, sizes.get(number, (0.0, 0.0)), reasons[number])

    def on_rendered(page: PageImage, seconds: float) -> None:
        rendered[page.page] = (seconds, page.dpi, page.downscaled)

    with lane.turns.turn(lane.owner), lane.admission.admit(engine.group_cost(plan), lane.abort):
        images = iter_page_images(source, [*plan.context, *plan.owned], dpi, on_error=failed,
                                  on_rendered=on_rendered)

        def render(numbers: Sequence[int]) -> Iterator[PageImage]:
            return iter_page_images(source, numbers, dpi, on_error=lambda n, e: None, on_rendered=on_rendered)

        try:
            for page in lane.session().recognize(PageGroup(plan, images, render)):
                if page.number in reasons:
                    pages[page.number] = _ocr_facts(page, reasons[page.number], rendered.get(page.number))
        except LongdocError:
            raise  # typed: a cancel, a stop, an engine that cannot run at all
        except Exception as exc:  # an engine's own failure (a bug, MemoryError): its pages, one at a time
            log.warning("engine failed on a group; reading its pages one at a time",
                        extra={"engine": engine.name, "group": index, "error": f"{type(exc).__name__}: {exc}"})
            for number in [n for n in plan.owned if n not in pages]:
                _ocr_alone(number, plan, lane, render, pages, reasons, rendered)
    for number in reasons:
        if number not in pages:  # never lose a page: the engine owed a result
            owed = EngineFailed(f"Page {number}: the engine {engine.name} returned no result for it.")
            pages[number] = failed_page(number, owed, sizes[number], reasons[number])
    return pages


def _ocr_alone(number: int, plan: GroupPlan, lane: EngineLane, render: Callable[[Sequence[int]], Iterator[PageImage]],
               pages: dict[int, Page], reasons: dict[int, str], rendered: dict[int, tuple[float, float, bool]]) -> None:
    """Page ``number`` of a group whose engine failed, read alone; if the
    engine fails on it again, it fails alone (``engine_failed``, the
    engine's error in the message)."""
    alone = GroupPlan(index=plan.index, owned=(number,), context=(), sizes=plan.sizes, dpi=plan.dpi)
    try:
        for page in lane.session().recognize(PageGroup(alone, render([number]), render)):
            if page.number == number:
                pages[number] = _ocr_facts(page, reasons[number], rendered.get(number))
    except LongdocError:
        raise
    except Exception as exc:
        message = f"Page {number}: the engine {lane.engine.name} failed on it ({type(exc).__name__}: {exc})."
        pages[number] = failed_page(number, EngineFailed(message), plan.sizes.get(number, (0.0, 0.0)), reasons[number])


def _ocr_facts(page: Page, reason: str, rendered: tuple[float, float, bool] | None) -> Page:
    seconds, used_dpi, downscaled = rendered or (0.0, None, False)
    return page.model_copy(update={
        "text_source": TextSource.OCR if page.status is PageStatus.OK else None,
        "ocr_reason": reason, "render_dpi": used_dpi, "downscaled": downscaled,
        "timings": {"render": seconds, **page.timings},
    })


def _size_or_zero(source: DocumentSource, number: int) -> tuple[float, float]:
    try:
        return source.page_size(number)
    except LongdocError:
        return (0.0, 0.0)


def renders_wanted(options: ParseOptions, text_layer_version: str) -> Callable[[TextLayerView, int], set[int]]:
    """Which renders (DPIs) a page needs before its engine reads it, judged
    the way the recognize stage will judge it: none for a page its text layer
    reads (the region models' render when its regions are worth analyzing),
    the engine's DPI (and the region models') for a page that needs OCR.
    A render task (:func:`longdoc.ingest.prepared.prepare_group`) asks this
    so the engine task never opens the document."""

    def wanted(read: TextLayerView, number: int) -> set[int]:
        decided = from_text_layer(read, number, options.ocr, {}, text_layer_version)
        if isinstance(decided, Page):
            return {REGION_DPI} if options.regions and decided.lines and worth_analyzing(decided) else set()
        return {options.dpi, REGION_DPI} if options.regions else {options.dpi}

    return wanted
