"""Layout stage for one group: recognized pages → laid-out pages.

A page with ``lines`` (a line engine's or the text layer's) is laid out
here: spaces an OCR engine dropped between words put back
(:mod:`~longdoc.layout.spacing`), furniture against its neighbours, then
blocks in reading order; its ``lines`` move into the blocks. A page that came with ``blocks`` (a model
engine's, already in reading order) keeps them, numbered as layout numbers
its own.

Cross-page analysis (running headers, footers) looks at neighbouring pages:
those of the group itself plus the boundary cache (pages of the previous
group, already laid out), so the first owned page of a group still sees the
last pages of the previous one. A page whose layout raises fails alone
(:class:`~longdoc.errors.LayoutFailed`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence

from longdoc.errors import LayoutFailed
from longdoc.layout import find_furniture, layout_page
from longdoc.layout.spacing import restore_spaces
from longdoc.model import ErrorInfo, Page, PageStatus, TextSource
from longdoc.pipeline.recognize import TEXT_LAYER_ENGINE

log = logging.getLogger(__name__)

#: how many pages on each side a page is compared with for running headers
NEIGHBOR_WINDOW = 3


def layout_pages(owned: Sequence[int], available: Mapping[int, Page]) -> list[Page]:
    """Lay out the ``owned`` page numbers; ``available`` holds every page
    in reach (owned, context and boundary pages), by number."""
    numbers = sorted(available)
    pages: list[Page] = []
    for number in owned:
        page = available[number]
        if page.status is PageStatus.FAILED:
            pages.append(page)
            continue
        t0 = time.perf_counter()
        pos = numbers.index(number)
        neighbors = [
            available[n]
            for n in numbers[max(0, pos - NEIGHBOR_WINDOW) : pos + NEIGHBOR_WINDOW + 1]
            if n != number and available[n].status is PageStatus.OK
        ]
        try:
            laid_out = lay_out(page, neighbors)
        except Exception as exc:  # a layout bug must not take the other pages with it
            log.exception("layout failed", extra={"page": number})
            error = ErrorInfo.of(LayoutFailed(f"Page {number}: layout failed ({type(exc).__name__})."), number)
            laid_out = page.model_copy(update={"status": PageStatus.FAILED, "error": error, "lines": []})
        laid_out.timings["layout"] = time.perf_counter() - t0
        pages.append(laid_out)
    return pages


def lay_out(page: Page, neighbors: Sequence[Page]) -> Page:
    """``page`` with its blocks in reading order and no loose lines."""
    if page.blocks and not page.lines:
        blocks = [b.model_copy(update={"order": i, "id": f"p{page.number}-b{i}"})
                  for i, b in enumerate(sorted(page.blocks, key=lambda b: b.order))]
    else:
        if page.text_source is TextSource.OCR:  # spaces the recognizer dropped between words
            texts = restore_spaces([line.text for line in page.lines])
            page = page.model_copy(update={"lines": [
                line if line.text == text else line.model_copy(update={"text": text})
                for line, text in zip(page.lines, texts)]})
        blocks = layout_page(page, find_furniture(page, neighbors), exact_lines=page.engine == TEXT_LAYER_ENGINE)
    return page.model_copy(update={"blocks": blocks, "lines": [], "regions": [], "timings": dict(page.timings)})
