"""Layout stage for one group: recognized pages → laid-out :class:`Page`s.

Cross-page analysis (running headers, footers) looks at neighbouring pages:
those of the group itself plus the boundary cache, so the first owned page
of a group still sees the last pages of the previous one.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from longdoc.layout import find_furniture, layout_page
from longdoc.model import Page, PageStatus
from longdoc.pipeline.recognize import PageOutcome

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
        furniture = find_furniture(rec, neighbors)
        page.blocks = layout_page(rec, furniture)
        page.timings["layout"] = time.perf_counter() - t0
        pages.append(page)
    return pages
