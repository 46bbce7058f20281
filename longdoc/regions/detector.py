"""Regions of a page: where the tables, figures, captions, headers and
footers are, and each table's cells.

:class:`RegionDetector` runs the layout and table-structure models
(:mod:`~longdoc.regions.worker`) in a pool of worker processes
(:class:`~longdoc.runtime.pool.WorkerPool`, the pool RapidOCR uses too; they exit with their owner), and turns their pixel
results into the document model's :class:`~longdoc.model.Region` in points.
It reads a page rendered at :data:`REGION_DPI` (the layout model resizes
every page to 608×800 anyway); the table cells come without text (layout
fills them from the page's lines).

Failure semantics: a page whose analysis raises, times out or kills its
worker gets no regions (the layout then reads it as before, from its lines
alone) and the pool is replaced; it never fails the page. Models missing
from the installation: :meth:`available` is False and nothing runs.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool

from longdoc.engines import backends
from longdoc.engines.base import PageImage
from longdoc.engines.model_files import ModelFileError, layout_model, table_model
from longdoc.model import BBox, Region, RegionKind, TableCell
from longdoc.regions import worker as regions_worker
from longdoc.runtime.pool import WorkerPool

log = logging.getLogger(__name__)

#: resolution pages are rendered at for the region models
REGION_DPI = 100
PAGE_TIMEOUT_S = 120.0


class RegionDetector:
    """``workers`` processes with the layout model and, when its file is
    installed, the table-structure model. Thread-safe."""

    def __init__(self, workers: int, table_model_path: str | None = None, timeout_s: float = PAGE_TIMEOUT_S,
                 backend: str = "onnxruntime") -> None:
        self.workers = max(1, workers)
        self.asked_backend = backend
        self._runtime: str | None = None
        self.timeout_s = timeout_s
        self._table_path = table_model_path
        self._pool: WorkerPool | None = None
        self._lock = threading.Lock()
        self._paths: tuple[str, str | None] | None = None
        self.problem: str | None = None

    def available(self) -> bool:
        """Whether the models are installed (checked once, by hash)."""
        if self._paths is None and self.problem is None:
            try:
                layout = str(layout_model())
            except ModelFileError as exc:
                self.problem = f"layout model: {exc}"
                log.warning("region detection is off", extra={"reason": self.problem})
                return False
            try:
                table: str | None = str(table_model(self._table_path))
            except ModelFileError as exc:
                table = None
                log.warning("table structure is off", extra={"reason": str(exc)})
            self._paths = (layout, table)
        return self._paths is not None

    @property
    def runtime(self) -> str:
        """The layout model's runtime: ``backend`` as asked, or with
        ``auto`` the faster on this machine (timed once and remembered, as
        the OCR models' are; :mod:`~longdoc.engines.backends`). Measured on
        a 2-core Intel Xeon with AMX: 0.091 s a page on OpenVINO (in 32-bit
        floats, as ONNX Runtime computes: bfloat16, 0.055 s, moved boxes
        enough to change a reading order) against 0.19 s on ONNX Runtime.
        The table model runs on ONNX Runtime, the only runtime rapid-table
        3.0 has."""
        if self._runtime is None:
            assert self._paths is not None, "models not found"
            layout = self._paths[0]
            chosen, _, _ = backends.choose(self.asked_backend, 1, ("layout",),
                                        lambda: {"layout": {rt: {"path": layout} for rt in backends.BACKENDS
                                                            if backends.available(rt)}},
                                        regions_worker.time_layout, models=[layout])
            self._runtime = chosen["layout"]
        return self._runtime

    def analyze(self, images: Iterable[PageImage]) -> Iterator[tuple[int, list[Region]]]:
        """Each image's page number and regions, in order (``[]`` for a
        page that could not be analyzed). At most ``workers`` pages are in
        flight (rendered and not yet answered)."""
        window: deque[tuple[PageImage, Future | None]] = deque()
        for image in images:
            window.append((image, self._submit(image)))
            if len(window) >= self.workers:
                first, future = window.popleft()
                yield first.page, self._collect(first, future)
        while window:
            first, future = window.popleft()
            yield first.page, self._collect(first, future)

    def close(self) -> None:
        self._drop_pool(wait=True)

    # -- the pool ---------------------------------------------------------------

    def _submit(self, image: PageImage) -> Future | None:
        if not self.available():
            return None
        try:
            return self._get_pool().submit(regions_worker.analyze_page, image.image)
        except BrokenProcessPool:
            self._replace_pool()
            return self._get_pool().submit(regions_worker.analyze_page, image.image)

    def _collect(self, image: PageImage, future: Future | None) -> list[Region]:
        if future is None:
            return []
        try:
            raw = future.result(timeout=self.timeout_s)
        except (FutureTimeout, BrokenProcessPool) as exc:
            log.warning("region analysis lost a page", extra={"page": image.page, "error": type(exc).__name__})
            self._replace_pool()
            return []
        except Exception as exc:  # a model error on one page
            log.warning("region analysis failed on a page", extra={"page": image.page, "error": type(exc).__name__})
            return []
        return to_regions(raw, image.dpi, image.page)

    def _get_pool(self) -> WorkerPool:
        with self._lock:
            if self._pool is None:
                assert self._paths is not None
                paths, runtime = self._paths, self.runtime
                self._pool = WorkerPool(self.workers, regions_worker.init_worker,
                                        lambda: (*paths, os.getpid(), runtime))
            return self._pool

    def _replace_pool(self) -> None:
        self._drop_pool(wait=False)

    def _drop_pool(self, *, wait: bool) -> None:
        """Kill the current pool's workers; the next page starts a new pool."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.replace(kill=True, wait=wait)


def to_regions(raw: regions_worker.RawRegions, dpi: float, page: int) -> list[Region]:
    """The worker's pixel results as regions in points (cells on tables)."""
    pt = 72.0 / dpi

    def box(b: tuple[float, float, float, float]) -> BBox:
        return BBox(x0=b[0] * pt, y0=b[1] * pt, x1=b[2] * pt, y1=b[3] * pt)

    tables = {tuple(t.box): t for t in raw.tables}
    out = []
    for label, score, b in raw.regions:
        kind = RegionKind(label)
        region = Region(kind=kind, bbox=box(b), score=round(score, 3))
        table = tables.get(tuple(b)) if kind is RegionKind.TABLE else None
        if table is not None and table.cells:
            region = region.model_copy(update={
                "cells": [TableCell(row=r, col=c, row_span=rs, col_span=cs, bbox=box(cb))
                          for r, c, rs, cs, cb in table.cells],
                "truncated": table.truncated})
        out.append(region)
    return out
