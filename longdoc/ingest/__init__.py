"""Ingest: validate an input file and open it as a lazy, page-at-a-time source.

- :func:`open_document` — path + limits → :class:`DocumentSource` (PDF or image)
- :func:`sniff_media_type` — type from magic bytes
- :func:`parse_page_range` — ``"1-20,35"`` → sorted 1-based pages
- :func:`judge_text_layer` — use a page's text layer or OCR it (``ocr=auto``)
"""

from longdoc.ingest.image import ImageSource
from longdoc.ingest.open import open_document
from longdoc.ingest.pages import parse_page_range
from longdoc.ingest.pdf import PDFIUM_LOCK, PdfSource
from longdoc.ingest.sniff import SUPPORTED_MEDIA_TYPES, sniff_media_type
from longdoc.ingest.source import DocumentSource, RenderedPage
from longdoc.ingest.textlayer import judge_text_layer

__all__ = [
    "PDFIUM_LOCK",
    "SUPPORTED_MEDIA_TYPES",
    "DocumentSource",
    "ImageSource",
    "PdfSource",
    "RenderedPage",
    "judge_text_layer",
    "open_document",
    "parse_page_range",
    "sniff_media_type",
]
