"""What every input document looks like to the rest of longdoc.

A :class:`DocumentSource` is an opened document (PDF or image file) that
answers questions about one page at a time. Nothing is decoded or rendered
until asked, and nothing rendered is kept: each :meth:`~DocumentSource.render`
returns a fresh image that belongs to the caller, so memory does not grow with
the page count.

Units and numbering follow :mod:`longdoc.model`: pages are **1-based**, sizes
and boxes are in **PDF points** with the origin at the **top-left**.

Implementations: :class:`longdoc.ingest.pdf.PdfSource` (pypdfium2) and
:class:`longdoc.ingest.image.ImageSource` (Pillow). Use
:func:`longdoc.ingest.open.open_document` to get the right one with limits
checked.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

from PIL import Image

from longdoc.errors import UnreadablePath
from longdoc.model import Line


@dataclass
class RenderedPage:
    """One rendered page.

    ``image`` is an RGB :class:`PIL.Image.Image` owned by the caller. ``dpi``
    is the resolution it was *actually* rendered at, which converts its pixels
    to points (``pt = px * 72 / dpi``); it is lower than the DPI asked for when
    the page would otherwise exceed the pixel limit, and for image files it is
    the file's own resolution (images are not resampled). ``downscaled``
    says the page was shrunk to fit the render pixel cap
    (``limits.max_render_pixels``): ``dpi`` is then below what was asked
    (PDF) or below the file's own (image).
    """

    page: int
    image: Image.Image
    dpi: float
    downscaled: bool = False

    @property
    def width_px(self) -> int:
        return self.image.width

    @property
    def height_px(self) -> int:
        return self.image.height


class TextLayerView(Protocol):
    """What judging a page by its text layer reads of a source: its size and
    its text layer (a :class:`DocumentSource`, or what a render task read)."""

    def page_size(self, page: int) -> tuple[float, float]: ...

    def text_layer(self, page: int) -> list[Line] | None: ...


@runtime_checkable
class DocumentSource(Protocol):
    """An opened input document. Use it as a context manager or call close().

    Attributes: ``name`` (the document's name as the user knows it, for
    display and messages; never a temporary path), ``media_type`` (sniffed from
    content), ``sha256`` (hex digest of the file bytes), ``page_count``.

    Methods take a 1-based ``page``; a page outside ``1..page_count`` or a
    closed source raises :class:`ValueError` (a caller bug, not user input).
    """

    name: str
    media_type: str
    sha256: str
    page_count: int

    def page_size(self, page: int) -> tuple[float, float]:
        """(width, height) of the page as displayed, in points."""
        ...

    def render(self, page: int, dpi: float) -> RenderedPage:
        """Render one page to RGB. Raises PageRenderFailed for a bad page."""
        ...

    def text_layer(self, page: int) -> list[Line] | None:
        """The page's embedded text with positions, or None when the format
        has no text layer (images). An empty list: a PDF page without text."""
        ...

    def page_label(self, page: int) -> str | None:
        """The page's label from the document itself (a PDF's /PageLabels:
        ``"iv"``, ``"A-3"``), or None when it gives none (images, PDFs
        without page labels, an empty label). Cheap: read once at open."""
        ...

    def close(self) -> None:
        """Release the file. Idempotent."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file, read in chunks (constant memory).
    Raises UnreadablePath when the file cannot be read."""
    try:
        with path.open("rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError as exc:
        raise UnreadablePath(f"{path} cannot be read ({exc.strerror or exc}).") from exc


def fit_dpi(width_pt: float, height_pt: float, dpi: float, max_pixels: int) -> float:
    """The DPI to render a ``width_pt`` x ``height_pt`` page at.

    ``dpi`` itself when the page then has at most ``max_pixels`` pixels
    (each side rounded up, as pdfium does), otherwise the largest DPI that
    fits. Raises ValueError for non-positive sizes or DPI.
    """
    if width_pt <= 0 or height_pt <= 0 or dpi <= 0:
        raise ValueError(f"page size {width_pt}x{height_pt} pt at {dpi} dpi is not renderable")

    def pixels(d: float) -> int:
        return math.ceil(width_pt * d / 72) * math.ceil(height_pt * d / 72)

    if pixels(dpi) <= max_pixels:
        return dpi
    fitted = 72 * math.sqrt(max_pixels / (width_pt * height_pt))
    while fitted > 0 and pixels(fitted) > max_pixels:
        fitted *= 0.999
    return fitted
