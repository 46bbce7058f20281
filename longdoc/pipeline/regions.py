"""Regions stage: recognized pages → the same pages with their regions.

Between recognize and layout. Every page that came back OK with ``lines``
(from a line engine or the text layer; a model engine's blocks are laid out
already) is rendered again at :data:`~longdoc.engines.regions.REGION_DPI`,
turned upright as its engine read it, and given to the
:class:`~longdoc.engines.regions.RegionDetector`; the regions it finds (tables with their cells, figures, captions, headers,
footers) go on ``page.regions`` for layout to read. A page that cannot be
rendered or analyzed keeps no regions and is laid out from its lines alone,
as before: this stage never fails a page.

A text-layer page is analyzed only when two of its lines stand side by side
(:func:`side_by_side`): cells of a table row, columns, labels in a figure.
A page whose every line has the width of the page to itself is running
text, with no table or caption to find, and its reading order is the order
of its lines; it skips the render and the model (a born-digital novel or
contract reads at text-layer speed). OCR pages are always analyzed: a scan
shows no such sign before its lines are read, and the models cost a small
share of OCR.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np

from longdoc.engines.base import PageImage
from longdoc.engines.regions import REGION_DPI, RegionDetector
from longdoc.ingest.source import DocumentSource
from longdoc.model import Line, Page, PageStatus, TextSource
from longdoc.render import iter_page_images


def find_regions(source: DocumentSource, pages: dict[int, Page], detector: RegionDetector) -> dict[int, Page]:
    """``pages`` with ``regions`` set on those that have lines to lay out."""
    todo = sorted(n for n, p in pages.items() if p.status is PageStatus.OK and p.lines
                  and (p.text_source is not TextSource.TEXT_LAYER or side_by_side(p.lines)))
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
