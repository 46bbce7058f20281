"""Layout stage for one group: recognized pages → laid-out :class:`Page`s.

Cross-page analysis (running headers, footers) looks at neighbouring pages:
those of the group itself plus the boundary cache, so the first owned page
of a group still sees the last pages of the previous one. A page whose
layout raises fails alone (:class:`~longdoc.errors.LayoutFailed`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence

from longdoc.engines.base import RecognizedPage
from longdoc.errors import LayoutFailed
from longdoc.layout import find_furniture, layout_page
from longdoc.model import Block, Page, PageStatus
from longdoc.pipeline.recognize import PageOutcome, error_info

log = logging.getLogger(__name__)

#: how many pages on each side a page is compared with for running headers
NEIGHBOR_WINDOW = 3


def layout_pages(
    owned: Sequence[int], available: Mapping[int, PageOutcome]
) -> list[Page]:
    """Lay out the ``owned`` page numbers; ``available`` holds every page
    result in reach (owned, context and boundary pages), by page number."""
    numbers = sorted(available)
    pages: list[Page] = []
    for number in owned:
        outcome = available[number]
        rec = outcome.rec
        page = Page(
            number=number,
            width=rec.width_pt,
            height=rec.height_pt,
            text_source=outcome.text_source,
            ocr_reason=outcome.ocr_reason,
            engine=rec.engine or None,
            engine_version=rec.engine_version or None,
            rotation=rec.rotation,
            render_dpi=outcome.render_dpi,
            downscaled=outcome.downscaled,
            timings=dict(outcome.timings),
        )
        if rec.error is not None:
            page.status = PageStatus.FAILED
            page.error = rec.error
            pages.append(page)
            continue
        t0 = time.perf_counter()
        pos = numbers.index(number)
        neighbors = [
            available[n].rec
            for n in numbers[max(0, pos - NEIGHBOR_WINDOW) : pos + NEIGHBOR_WINDOW + 1]
            if n != number and available[n].rec.error is None
        ]
        try:
            page.blocks = _blocks(rec, neighbors)
        except Exception as exc:  # a layout bug must not take the other pages with it
            log.exception("layout failed", extra={"page": number})
            page.status = PageStatus.FAILED
            page.error = error_info(LayoutFailed(f"Page {number}: layout failed ({type(exc).__name__})."), number)
        page.timings["layout"] = time.perf_counter() - t0
        pages.append(page)
    return pages


def _blocks(rec: RecognizedPage, neighbors: list[RecognizedPage]) -> list[Block]:
    return layout_page(rec, find_furniture(rec, neighbors))
