"""PDF documents through pypdfium2.

:class:`PdfSource` keeps the file open by path (pdfium reads what it needs
from disk) and loads one page at a time, closing it before returning. pdfium
errors are mapped here, by error code, into :mod:`longdoc.errors`:

====================================  =====================================
pdfium at load                        longdoc
====================================  =====================================
``FPDF_ERR_PASSWORD``                 :class:`EncryptedPdf`
``FPDF_ERR_SECURITY``                 :class:`EncryptedPdf` (unsupported handler)
``FPDF_ERR_FILE``                     :class:`UnreadablePath`
anything else                         :class:`CorruptFile`
loaded, but 0 pages                   :class:`EmptyDocument`
a page fails to load or render        :class:`PageRenderFailed` (that page)
====================================  =====================================

Rendering honours the page's crop box and ``/Rotate`` and draws form fields
and annotations. A page whose pixel count at the requested DPI would exceed
``max_pixels`` is rendered at the largest DPI that fits; the DPI used is
returned in :class:`RenderedPage`.

pdfium is not thread-safe, not even across documents: every call into it from
this module holds :data:`PDFIUM_LOCK`. Other modules that call pdfium
directly must hold it too.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import TracebackType
from typing import Self

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from longdoc.errors import (
    CorruptFile,
    EmptyDocument,
    EncryptedPdf,
    PageRenderFailed,
    UnreadablePath,
)
from longdoc.ingest.pdf_text import group_lines, read_glyphs
from longdoc.ingest.sniff import PDF
from longdoc.ingest.source import RenderedPage, file_sha256, fit_dpi
from longdoc.model import MAX_LABEL_CHARS, Line, clean_text

#: Serializes every pdfium call in the process (pdfium is not thread-safe).
PDFIUM_LOCK = threading.RLock()

_DEFAULT_MAX_PIXELS = 60_000_000


class PdfSource:
    """An opened PDF; see the module docstring for errors and threading.

    ``max_pixels`` caps the pixel count of one rendered page. ``name`` is
    the document's name in messages (default: the file's).
    Raises (from the constructor) EncryptedPdf, CorruptFile, EmptyDocument,
    UnreadablePath.
    """

    media_type = PDF

    def __init__(self, path: str | Path, *, max_pixels: int = _DEFAULT_MAX_PIXELS, name: str | None = None) -> None:
        self.path = Path(path)
        self.name = name or self.path.name
        self.max_pixels = max_pixels
        self.sha256 = file_sha256(self.path)
        with PDFIUM_LOCK:
            self._pdf: pdfium.PdfDocument | None = _load(self.path, self.name)
            self.page_count = len(self._pdf)
            _init_forms(self._pdf)
            self._labels = _page_labels(self._pdf, self.page_count)

    # -- DocumentSource ----------------------------------------------------

    def page_size(self, page: int) -> tuple[float, float]:
        """Displayed (width, height) in points: crop box, after /Rotate.
        Raises PageRenderFailed when pdfium cannot read the page."""
        index = self._index(page)
        with PDFIUM_LOCK:
            try:
                width, height = self._document().get_page_size(index)
            except pdfium.PdfiumError as exc:
                raise _page_failed(page, "its size could not be read", exc) from exc
        return float(width), float(height)

    def render(self, page: int, dpi: float) -> RenderedPage:
        """Render ``page`` at ``dpi`` (lower if over ``max_pixels``) to RGB.
        Raises PageRenderFailed when pdfium cannot load or draw the page."""
        if dpi <= 0:
            raise ValueError(f"dpi must be positive, got {dpi}")
        with self._page(page) as pdf_page:
            try:
                width, height = pdf_page.get_size()
                used_dpi = fit_dpi(width, height, dpi, self.max_pixels)
                bitmap = pdf_page.render(
                    scale=used_dpi / 72, rev_byteorder=True, draw_annots=True, may_draw_forms=True
                )
                try:
                    # to_pil() copies RGB data; other modes may share the
                    # bitmap's buffer, so convert (a copy) before closing it.
                    image = bitmap.to_pil()
                    if image.mode != "RGB":
                        image = image.convert("RGB")
                finally:
                    bitmap.close()
            except (pdfium.PdfiumError, ValueError, MemoryError) as exc:
                raise _page_failed(page, "it could not be rendered", exc) from exc
        return RenderedPage(page=page, image=image, dpi=used_dpi, downscaled=used_dpi < dpi)

    def text_layer(self, page: int) -> list[Line]:
        """The page's text as positioned line segments (see pdf_text); an
        empty list when the page has no text. Raises PageRenderFailed when
        pdfium cannot load the page."""
        with self._page(page) as pdf_page:
            try:
                width, height = pdf_page.get_size()
                page_box = pdf_page.get_bbox()
                rotation = pdf_page.get_rotation()
                textpage = pdf_page.get_textpage()
                try:
                    glyphs = read_glyphs(textpage, page_box, rotation)
                finally:
                    textpage.close()
            except pdfium.PdfiumError as exc:
                raise _page_failed(page, "its text could not be read", exc) from exc
        return group_lines(glyphs, page, width, height)

    def page_label(self, page: int) -> str | None:
        """The page's label from the PDF's /PageLabels (read at open), or
        None when the document gives it none."""
        return self._labels[self._index(page)]

    def page_labels(self) -> list[str | None] | None:
        """Every page's label, in page order, or None when no page has one
        (what the sandbox sends its parent once, at open)."""
        return list(self._labels) if any(label is not None for label in self._labels) else None

    def close(self) -> None:
        with PDFIUM_LOCK:
            if self._pdf is not None:
                self._pdf.close()
                self._pdf = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PdfSource({self.name!r}, pages={self.page_count})"

    # -- helpers -----------------------------------------------------------

    def _document(self) -> pdfium.PdfDocument:
        if self._pdf is None:
            raise ValueError(f"{self!r} is closed")
        return self._pdf

    def _index(self, page: int) -> int:
        if not 1 <= page <= self.page_count:
            raise ValueError(f"page {page} is outside 1..{self.page_count}")
        return page - 1

    @contextmanager
    def _page(self, page: int) -> Iterator[pdfium.PdfPage]:
        """Load one page under the lock and close it afterwards."""
        index = self._index(page)
        with PDFIUM_LOCK:
            document = self._document()
            try:
                pdf_page = document[index]
            except pdfium.PdfiumError as exc:
                raise _page_failed(page, "it could not be loaded", exc) from exc
            try:
                yield pdf_page
            finally:
                pdf_page.close()


def _init_forms(pdf: pdfium.PdfDocument) -> None:
    """Enable drawing of filled-in form fields; a PDF whose forms pdfium
    cannot set up still renders, without them."""
    with suppress(pdfium.PdfiumError):
        pdf.init_forms()


def _page_labels(pdf: pdfium.PdfDocument, count: int) -> list[str | None]:
    """Each page's label (pdfium's ``FPDF_GetPageLabel``, from the
    /PageLabels number tree); None where there is none or it is empty.
    About a microsecond a page for a PDF without labels."""
    labels: list[str | None] = []
    for index in range(count):
        size = pdfium_c.FPDF_GetPageLabel(pdf, index, None, 0)  # bytes, UTF-16LE with its terminator
        if size <= 2:
            labels.append(None)
            continue
        buffer = ctypes.create_string_buffer(size)
        pdfium_c.FPDF_GetPageLabel(pdf, index, buffer, size)
        text = buffer.raw[: size - 2].decode("utf-16-le", errors="replace").strip()
        labels.append(clean_text(text)[:MAX_LABEL_CHARS] or None)
    return labels


def _load(path: Path, name: str) -> pdfium.PdfDocument:
    """Open with pdfium, mapping load errors by pdfium's error code.

    Uses the raw loader rather than ``PdfDocument(path)``, which reports a
    document without pages with a stale error code (pdfium's last error is
    process-global and only set when parsing fails) and leaks its handle.
    """
    raw = pdfium_c.FPDF_LoadDocument(os.fsencode(path), None)
    if not raw:
        raise _map_load_error(name, pdfium_c.FPDF_GetLastError())
    if pdfium_c.FPDF_GetPageCount(raw) < 1:
        pdfium_c.FPDF_CloseDocument(raw)
        raise EmptyDocument(f"{name} has no pages.")
    return pdfium.PdfDocument(raw)


def _map_load_error(name: str, err_code: int | None) -> Exception:
    if err_code == pdfium_c.FPDF_ERR_PASSWORD:
        return EncryptedPdf(f"{name} is password-protected.")
    if err_code == pdfium_c.FPDF_ERR_SECURITY:
        return EncryptedPdf(f"{name} is encrypted with an unsupported security handler.")
    if err_code == pdfium_c.FPDF_ERR_FILE:
        return UnreadablePath(f"{name} cannot be opened.")
    return CorruptFile(f"{name} is not a readable PDF (pdfium error code {err_code}).")


def _page_failed(page: int, what: str, exc: BaseException) -> PageRenderFailed:
    return PageRenderFailed(f"Page {page}: {what} ({type(exc).__name__}: {exc}).", page=page)
