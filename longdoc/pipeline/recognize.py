"""Recognize stage: one group's pages → :class:`RecognizedPage` per page.

Per page, the OCR mode decides where the text comes from:

- ``off``: the PDF text layer only (a page without one comes out empty);
- ``force``: render and OCR every page;
- ``auto``: the text layer where :func:`judge_text_layer` finds it sound,
  OCR where it is missing or garbage. The reason is recorded per page.

Pages for OCR are rendered lazily as the engine pulls them, within the
workspace admission window; a page that fails to render or to recognize
fails alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from longdoc.engines.base import Engine, PageImage, RecognizedPage
from longdoc.errors import LongdocError, ResourceLimit
from longdoc.ingest.source import DocumentSource
from longdoc.ingest.textlayer import judge_text_layer
from longdoc.model import ErrorInfo, TextSource
from longdoc.plan import Workspace
from longdoc.render import iter_page_images

TEXT_LAYER_ENGINE = "text_layer"


@dataclass
class PageOutcome:
    """A recognized (or failed) page plus how it was obtained.

    ``render_dpi`` is the DPI the page was rendered at for OCR (None when it
    was not rendered); ``downscaled`` says it was rendered below the DPI
    asked for, to stay within the render pixel cap."""

    rec: RecognizedPage
    text_source: TextSource | None
    ocr_reason: str
    timings: dict[str, float] = field(default_factory=dict)
    render_dpi: float | None = None
    downscaled: bool = False

    def approx_bytes(self) -> int:
        return self.rec.approx_bytes()


def error_info(exc: LongdocError, page: int) -> ErrorInfo:
    return ErrorInfo(code=exc.code, message=exc.message, hint=exc.hint, page=page, retryable=exc.retryable)


def failed_outcome(number: int, exc: LongdocError, size: tuple[float, float], reason: str) -> PageOutcome:
    """The outcome of a page that failed before an engine saw it (its size
    is (0, 0) when even that could not be read)."""
    rec = RecognizedPage(page=number, width_pt=size[0], height_pt=size[1], error=error_info(exc, number))
    return PageOutcome(rec, None, reason)


def recognize_group(
    source: DocumentSource,
    numbers: Sequence[int],
    *,
    ocr: str,
    dpi: int,
    engine: Callable[[], Engine],
    workspace: Workspace,
    text_layer_version: str,
) -> dict[int, PageOutcome]:
    """Recognize the 1-based pages ``numbers``; returns an outcome for
    every one of them, by number. Every step is per page: a page whose size,
    text or render fails (or trips a sandbox limit) fails alone.

    ``engine`` is called only if some page needs OCR (text-layer-only
    documents never start OCR workers).
    """
    outcomes: dict[int, PageOutcome] = {}
    to_ocr: list[int] = []
    reasons: dict[int, str] = {}
    sizes: dict[int, tuple[float, float]] = {}
    for number in numbers:
        t0 = time.perf_counter()
        try:
            sizes[number] = width, height = source.page_size(number)
        except LongdocError as exc:
            outcomes[number] = failed_outcome(number, exc, (0.0, 0.0), exc.code)
            continue
        if ocr == "force":
            to_ocr.append(number)
            reasons[number] = "ocr_forced"
            continue
        try:
            lines = source.text_layer(number)
        except ResourceLimit as exc:  # rendering the same page would trip it again
            outcomes[number] = failed_outcome(number, exc, sizes[number], exc.code)
            continue
        except LongdocError as exc:
            lines, reason = None, exc.code
        else:
            use, reason = judge_text_layer(lines, width, height)
            if use or ocr == "off":
                rec = RecognizedPage(
                    page=number, width_pt=width, height_pt=height, lines=list(lines or []),
                    seconds=time.perf_counter() - t0, engine=TEXT_LAYER_ENGINE,
                    engine_version=text_layer_version,
                )
                outcomes[number] = PageOutcome(
                    rec, TextSource.TEXT_LAYER if use else None,
                    reason if use else f"ocr_off:{reason}", {"text_layer": rec.seconds},
                )
                continue
        to_ocr.append(number)
        reasons[number] = reason
    if to_ocr:
        _ocr_pages(source, to_ocr, reasons, sizes, dpi, engine(), workspace, outcomes)
    return outcomes


def admitted_window(size_pt: tuple[float, float], dpi: int, engine: Engine, workspace: Workspace) -> int:
    """Pages that may be in flight so the workspace stays under the
    watermark, estimated from one page of ``size_pt`` points at ``dpi``."""
    width_pt, height_pt = size_pt
    shape = (max(1, round(height_pt * dpi / 72)), max(1, round(width_pt * dpi / 72)), 3)
    probe = PageImage(  # a zero-stride view: the size without the memory
        page=1, image=np.broadcast_to(np.zeros(1, np.uint8), shape), dpi=dpi,
        width_pt=width_pt, height_pt=height_pt,
    )
    return workspace.pages_in_flight(engine.workspace_bytes(probe), held_bytes=workspace.in_use)


def _ocr_pages(
    source: DocumentSource,
    numbers: list[int],
    reasons: dict[int, str],
    sizes: dict[int, tuple[float, float]],
    dpi: int,
    engine: Engine,
    workspace: Workspace,
    outcomes: dict[int, PageOutcome],
) -> None:
    reserved: dict[int, int] = {}
    rendered_as: dict[int, tuple[float, float, bool]] = {}  # page -> (seconds, dpi, downscaled)

    def failed(number: int, exc: LongdocError) -> None:
        outcomes[number] = failed_outcome(number, exc, sizes[number], reasons[number])

    def rendered(page: PageImage, seconds: float) -> None:
        cost = engine.workspace_bytes(page)
        # The engine's in-flight window was sized from the workspace, so a
        # refusal here only means the estimate was off; it is counted.
        reserved[page.page] = cost if workspace.try_reserve(cost) else 0
        rendered_as[page.page] = (seconds, page.dpi, page.downscaled)

    images = iter_page_images(source, numbers, dpi, on_error=failed, on_rendered=rendered)
    window = admitted_window(sizes[numbers[0]], dpi, engine, workspace)
    for rec in engine.recognize(images, max_in_flight=window):
        workspace.release(reserved.pop(rec.page, 0))
        seconds, used_dpi, downscaled = rendered_as[rec.page]
        timings = {"render": seconds, "recognize": rec.seconds}
        outcomes[rec.page] = PageOutcome(
            rec, None if rec.error else TextSource.OCR, reasons[rec.page], timings, used_dpi, downscaled
        )
