"""The engine protocol: pages in, recognized lines out.

An engine is an object (it may hold a loaded model) with a name, a version,
declared capabilities, and ``load`` / ``recognize`` / ``close``. It never
touches storage, HTTP or the database, and imports only the document model
and errors.

Contract of :meth:`Engine.recognize`:

- input: an iterable of :class:`PageImage`, consumed lazily (an engine may
  keep at most ``max_in_flight`` pages' images at a time);
- output: one :class:`RecognizedPage` per input, **in input order**;
- a page the engine cannot read yields a ``RecognizedPage`` with ``error``
  set (an :class:`~longdoc.model.ErrorInfo`), never an exception, so one bad
  page fails that page and not the document. Exceptions are reserved for the
  engine itself being unusable (:class:`~longdoc.errors.EngineUnavailable`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from longdoc.model import ErrorInfo, Line


@dataclass(frozen=True)
class EngineCapabilities:
    languages: tuple[str, ...]
    #: pages are recognized independently (a page engine) rather than as a
    #: multi-page sequence (a vision-language engine with a KV cache).
    per_page: bool = True
    #: the engine returns line boxes (needed for layout and reading order).
    line_boxes: bool = True
    #: recognizes several pages at once (processes, threads or batches).
    parallel_pages: int = 1


@dataclass
class PageImage:
    """A rendered page handed to an engine.

    ``image`` is an RGB ``uint8`` array of shape (height_px, width_px, 3).
    ``dpi`` converts pixels to points: ``pt = px * 72 / dpi``.
    ``downscaled``: rendered below the DPI asked for (render pixel cap).
    """

    page: int  # 1-based
    image: np.ndarray
    dpi: float
    width_pt: float
    height_pt: float
    downscaled: bool = False

    @property
    def nbytes(self) -> int:
        return int(self.image.nbytes)

    def px_to_pt(self, v: float) -> float:
        return v * 72.0 / self.dpi


@dataclass
class RecognizedPage:
    """What an engine returns for one page. Lines are in the engine's own
    order (often raster order); the layout stage decides reading order."""

    page: int  # 1-based
    width_pt: float
    height_pt: float
    lines: list[Line] = field(default_factory=list)
    seconds: float = 0.0
    error: ErrorInfo | None = None
    #: engine id (name) and version that produced this page
    engine: str = ""
    engine_version: str = ""
    #: clockwise degrees the page was turned to read it upright; boxes and
    #: width/height refer to the upright page
    rotation: int = 0

    def approx_bytes(self) -> int:
        """Rough in-memory size, for workspace accounting."""
        return 256 + sum(200 + 2 * len(l.text) for l in self.lines)


@runtime_checkable
class Engine(Protocol):
    name: str
    version: str
    capabilities: EngineCapabilities

    def load(self) -> None:
        """Load models / start workers. Idempotent. Raises EngineUnavailable."""

    def recognize(
        self, pages: Iterable[PageImage], max_in_flight: int | None = None
    ) -> Iterator[RecognizedPage]:
        """Recognize pages lazily, yielding results in input order.

        ``max_in_flight`` narrows the engine's own window (pages pulled and
        not yet yielded); the pipeline sets it from workspace admission."""

    def workspace_bytes(self, page: PageImage) -> int:
        """Bytes of workspace one page holds while in flight in this engine."""

    def close(self) -> None:
        """Release models and workers. Idempotent."""
