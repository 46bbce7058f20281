"""Image-only versions of generated documents, so that OCR is really exercised.

Pages are rendered with pypdfium2 in 8-bit grayscale, one at a time (memory
does not grow with the page count beyond the output being written). The
ground truth is carried over unchanged: the same words sit at the same places.
"""

from __future__ import annotations

import dataclasses
import io
import random
from collections.abc import Iterator
from pathlib import Path

import pypdfium2 as pdfium
from fpdf import FPDF
from PIL import Image, TiffImagePlugin

from evaluation.metrics import order_ok
from tests.docgen.layout import FIXED_DATE
from tests.docgen.truth import GeneratedDoc


def _rendered_pages(pdf_path: Path, dpi: int) -> Iterator[tuple[float, float, pdfium.PdfBitmap]]:
    """Yield ``(width_pt, height_pt, bitmap)`` for each page, rendered at ``dpi``."""
    src = pdfium.PdfDocument(str(pdf_path))
    try:
        for index in range(len(src)):
            page = src[index]
            width, height = page.get_size()
            bitmap = page.render(scale=dpi / 72, grayscale=True)
            try:
                yield width, height, bitmap
            finally:
                bitmap.close()
                page.close()
    finally:
        src.close()


def rasterize(doc: GeneratedDoc, dpi: int, out_path: str | Path, *, jpeg_quality: int | None = None) -> GeneratedDoc:
    """Write an image-only PDF of ``doc``: every page one grayscale image, no text layer.

    Page sizes in points are those of ``doc``. Images are stored losslessly
    (Flate) unless ``jpeg_quality`` (1–95) asks for JPEG, as many scanners do.
    fpdf2 keeps only the compressed images until it writes the file (about
    50 KB per page at 150 dpi). Returns the same ground truth with
    ``pdf_path=out_path`` and ``image_dpi=dpi``.
    """
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    pdf = FPDF(unit="pt")
    pdf.set_auto_page_break(False)
    pdf.set_creation_date(FIXED_DATE)
    for width, height, bitmap in _rendered_pages(doc.pdf_path, dpi):
        pdf.add_page(format=(width, height))
        image = bitmap.to_pil()
        if jpeg_quality is not None:
            buf = io.BytesIO()
            image.save(buf, format="JPEG", quality=jpeg_quality)
            image = buf  # fpdf2 embeds JPEG data as is (DCTDecode)
        pdf.image(image, x=0, y=0, w=width, h=height)
    pdf.output(str(out))
    return dataclasses.replace(doc, pdf_path=out, image_dpi=dpi)


def sideways(doc: GeneratedDoc, dpi: int, out_path: str | Path, *, degrees: int = 90) -> GeneratedDoc:
    """Write an image-only PDF of ``doc`` as pages fed into a scanner sideways:
    each page's grayscale image turned ``degrees`` (90, 180 or 270) clockwise,
    on a page of the turned size (width and height swapped for 90 and 270),
    stored losslessly. Reading it needs the opposite turn. Returns the same
    ground truth with ``pdf_path=out_path`` and ``image_dpi=dpi``."""
    if degrees not in (90, 180, 270):
        raise ValueError(f"degrees must be 90, 180 or 270, not {degrees}")
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    pdf = FPDF(unit="pt")
    pdf.set_auto_page_break(False)
    pdf.set_creation_date(FIXED_DATE)
    for width, height, bitmap in _rendered_pages(doc.pdf_path, dpi):
        if degrees != 180:
            width, height = height, width
        pdf.add_page(format=(width, height))
        pdf.image(bitmap.to_pil().rotate(-degrees, expand=True), x=0, y=0, w=width, h=height)
    pdf.output(str(out))
    return dataclasses.replace(doc, pdf_path=out, image_dpi=dpi)


def to_tiff(doc: GeneratedDoc, dpi: int, out_path: str | Path) -> GeneratedDoc:
    """Write a multi-page grayscale TIFF of ``doc`` (Deflate-compressed, DPI tag set),
    streaming page by page. Returns the same ground truth with ``pdf_path=out_path``
    and ``image_dpi=dpi``; a page is ``ceil(points / 72 * dpi)`` pixels wide/high."""
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with TiffImagePlugin.AppendingTiffWriter(str(out), new=True) as tf:
        for _, _, bitmap in _rendered_pages(doc.pdf_path, dpi):
            bitmap.to_pil().save(tf, format="TIFF", compression="tiff_adobe_deflate", dpi=(dpi, dpi))
            tf.newFrame()
    return dataclasses.replace(doc, pdf_path=out, image_dpi=dpi)


def to_png(doc: GeneratedDoc, page: int, dpi: int, out_path: str | Path) -> GeneratedDoc:
    """Write page ``page`` (1-based) of ``doc`` as a grayscale PNG with its DPI recorded.

    Returns a one-page ground truth: that page's text as ``main_text`` (a word
    hyphenated across the page break keeps its hyphen), its furniture, and
    the order checks that hold within that page. Raises ``ValueError`` for a
    page outside ``1..doc.pages``.
    """
    if not 1 <= page <= doc.pages:
        raise ValueError(f"page must be in 1..{doc.pages}, got {page}")
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    src = pdfium.PdfDocument(str(doc.pdf_path))
    try:
        pdf_page = src[page - 1]
        bitmap = pdf_page.render(scale=dpi / 72, grayscale=True)
        image: Image.Image = bitmap.to_pil()
        image.save(out, format="PNG", dpi=(dpi, dpi))
        bitmap.close()
        pdf_page.close()
    finally:
        src.close()
    text = doc.main_text_per_page[page - 1]
    return dataclasses.replace(
        doc,
        pdf_path=out,
        pages=1,
        main_text_per_page=[text],
        main_text=text,
        furniture=[doc.furniture[page - 1]],
        order_checks=[(b, a) for b, a in doc.order_checks if order_ok(text, b, a)],
        image_dpi=dpi,
    )


def office_scan(born: str | Path, out_path: str | Path, *, dpi: int = 200, max_skew: float = 0.6,
                jpeg_quality: int = 75, seed: int | str = 0) -> list[float]:
    """Write an image-only PDF of ``born`` as an office scanner would make it:
    every page rendered at ``dpi`` in grey, turned by a random angle within
    ±``max_skew`` degrees (seeded), stored as JPEG of ``jpeg_quality``, at the
    original page size. Returns each page's angle (counter-clockwise degrees)."""
    rng = random.Random(seed)
    pdf = FPDF(unit="pt")
    pdf.set_auto_page_break(False)
    pdf.set_creation_date(FIXED_DATE)
    angles = []
    for width, height, bitmap in _rendered_pages(Path(born), dpi):
        angle = rng.uniform(-max_skew, max_skew)
        image = bitmap.to_pil().convert("L").rotate(angle, resample=Image.BICUBIC, fillcolor=255)
        buf = io.BytesIO()
        image.save(buf, format="JPEG", quality=jpeg_quality)
        pdf.add_page(format=(width, height))
        pdf.image(buf, x=0, y=0, w=width, h=height)
        angles.append(angle)
    Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(out_path))
    return angles
