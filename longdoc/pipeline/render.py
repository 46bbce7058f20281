"""Render: pages to images, lazily, one at a time.

:func:`iter_page_images` renders only when its consumer (an engine) pulls the
next page, so at most the engine's in-flight window of images exists at once.
The image is handed over and not kept here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from longdoc.engines.base import PageImage
from longdoc.errors import LongdocError
from longdoc.ingest.source import DocumentSource


def render_page(source: DocumentSource, number: int, dpi: float) -> PageImage:
    """Render one 1-based page as an RGB array. Raises the source's
    page-level errors (e.g. PageRenderFailed, ImageTooLarge)."""
    rendered = source.render(number, dpi)
    width_pt, height_pt = source.page_size(number)
    image = np.asarray(rendered.image if rendered.image.mode == "RGB" else rendered.image.convert("RGB"))
    rendered.image.close()
    return PageImage(page=number, image=image, dpi=rendered.dpi, width_pt=width_pt, height_pt=height_pt,
                     downscaled=rendered.downscaled)


def iter_page_images(
    source: DocumentSource,
    numbers: Iterable[int],
    dpi: float,
    on_error: Callable[[int, LongdocError], None],
    on_rendered: Callable[[PageImage, float], None] | None = None,
) -> Iterator[PageImage]:
    """Yield rendered pages in order; a page that cannot be rendered is
    reported to ``on_error`` and skipped (it fails alone)."""
    for number in numbers:
        t0 = time.perf_counter()
        try:
            page = render_page(source, number, dpi)
        except LongdocError as exc:
            on_error(number, exc)
            continue
        if on_rendered is not None:
            on_rendered(page, time.perf_counter() - t0)
        yield page

