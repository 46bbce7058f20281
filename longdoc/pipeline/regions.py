"""Regions stage: recognized pages → the same pages with their regions.

Between recognize and layout. Every page that came back OK with ``lines``
(from a line engine or the text layer; a model engine's blocks are laid out
already) is rendered again at :data:`~longdoc.regions.detector.REGION_DPI`,
turned upright as its engine read it, and given to the
:class:`~longdoc.regions.detector.RegionDetector`; the regions it finds (tables with their cells, figures, captions, headers,
footers) go on ``page.regions`` for layout to read. A page that cannot be
rendered or analyzed keeps no regions and is laid out from its lines alone,
as before: this stage never fails a page.

A page is analyzed only when its lines show something the models could
find (:func:`worth_analyzing`): two lines side by side (cells of a table
row, columns, labels in a figure), or, on an OCR page, an empty band
across the body taller than :data:`TALL_GAP` of the page (where a figure or
a table without text may stand in a scan). A page whose every line has the
width of the page to itself, one under the other, is running text, with no
table or caption to find, and its reading order is the order of its lines;
it skips the render and the model, whether its lines came from the text
layer or from OCR (a born-digital contract reads at text-layer speed, a
scanned one at OCR speed: the models cost ~0.65 core-seconds a page, a
quarter of OCR). A text-layer page with a tall gap is not analyzed: white
space alone is common in born-digital documents (ends of sections, spaced
title pages), and rendering it would cost every such page a render and
the model.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np

from longdoc.engines.base import PageImage
from longdoc.ingest.source import DocumentSource
from longdoc.model import Line, Page, PageStatus, TextSource
from longdoc.pipeline.render import iter_page_images
from longdoc.regions.detector import REGION_DPI, RegionDetector


def find_regions(source: DocumentSource, pages: dict[int, Page], detector: RegionDetector) -> dict[int, Page]:
    """``pages`` with ``regions`` set on those that have lines to lay out."""
    todo = sorted(n for n, p in pages.items() if p.status is PageStatus.OK and p.lines and worth_analyzing(p))
    if not todo or not detector.available():
        return pages
    started: dict[int, float] = {}

    def images() -> Iterator[PageImage]:
        for image in iter_page_images(source, todo, REGION_DPI, on_error=lambda n, e: None):
            started[image.page] = time.perf_counter()
            yield _upright(image, pages[image.page].rotation)

    out = dict(pages)
    for number, regions in detector.analyze(images()):
        page = out[number]
        timings = {**page.timings, "regions": time.perf_counter() - started[number]}
        out[number] = page.model_copy(update={"regions": regions, "timings": timings})
    return out


#: an empty band between two lines taller than this share of the page's
#: height may hold a figure or a table without text (body text leaves a
#: line or two between paragraphs, ~2%; a heading ~4%)
TALL_GAP = 0.08


def worth_analyzing(page: Page) -> bool:
    """Whether the region models could find anything on ``page``: two of
    its lines side by side, or (OCR pages) an empty band taller than
    :data:`TALL_GAP`."""
    if side_by_side(page.lines):
        return True
    return page.text_source is not TextSource.TEXT_LAYER and tall_gap(page.lines, page.height)


def tall_gap(lines: list[Line], page_height: float) -> bool:
    """Whether an empty band taller than :data:`TALL_GAP` × ``page_height``
    lies between two of ``lines`` (the margins above the first line and
    below the last do not count)."""
    bottom = None
    for line in sorted(lines, key=lambda line: line.bbox.y0):
        if bottom is not None and line.bbox.y0 - bottom > TALL_GAP * page_height:
            return True
        bottom = line.bbox.y1 if bottom is None else max(bottom, line.bbox.y1)
    return False


def side_by_side(lines: list[Line]) -> bool:
    """Whether two lines share a row (overlap vertically by half the lower
    one's height) without overlapping horizontally."""
    rows = sorted(lines, key=lambda line: line.bbox.y0)
    for i, a in enumerate(rows):
        for b in rows[i + 1:]:
            if b.bbox.y0 >= a.bbox.y1:
                break
            overlap = min(a.bbox.y1, b.bbox.y1) - b.bbox.y0
            if overlap >= 0.5 * min(a.bbox.y1 - a.bbox.y0, b.bbox.y1 - b.bbox.y0) and \
                    (b.bbox.x0 >= a.bbox.x1 or a.bbox.x0 >= b.bbox.x1):
                return True
    return False


def _upright(image: PageImage, rotation: int) -> PageImage:
    """The image turned ``rotation`` degrees clockwise (as the engine read it)."""
    turns = (rotation // 90) % 4
    if not turns:
        return image
    turned = np.ascontiguousarray(np.rot90(image.image, k=-turns))
    width, height = (image.height_pt, image.width_pt) if turns % 2 else (image.width_pt, image.height_pt)
    return PageImage(page=image.page, image=turned, dpi=image.dpi, width_pt=width, height_pt=height,
                     downscaled=image.downscaled)
