"""longdoc as an OCRmyPDF engine, end to end: the real ``ocrmypdf --plugin
longdoc.integrations.ocrmypdf IN.pdf OUT.pdf`` on scanned pages (real text,
real OCR), its output read back with ``pdftotext``."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pikepdf
import pypdfium2 as pdfium
import pytest
from fpdf import FPDF
from PIL import Image, ImageChops

from tests.docgen import long_textlayer
from tests.docgen.codes import available_fonts, code_pages
from tests.docgen.dense import typeset
from tests.docgen.raster import office_scan
from tests.integrations.conftest import pdftotext, word_recall

DPI = 200


@pytest.fixture(scope="module")
def born(tmp_path_factory) -> tuple[Path, str, list[str]]:
    """A born-digital PDF: a dense page of a licence Debian ships, then a
    page of codes (invoice and part numbers, IBANs, keys); its English text
    and its codes."""
    if "LiberationSans" not in available_fonts():
        pytest.skip("the codes' font is not installed (Debian fonts-liberation2; scripts/system-deps.sh)")
    tmp = tmp_path_factory.mktemp("ocrmypdf-born")
    (_, english), = typeset(tmp / "prose.pdf", english=1, chinese=0)
    codes = code_pages(tmp / "codes.pdf", per_page=21, seed=5, fonts=["LiberationSans"], sizes=(10.0,))
    with pikepdf.open(tmp / "prose.pdf") as prose, pikepdf.open(tmp / "codes.pdf") as more:
        prose.pages.extend(more.pages)
        prose.save(tmp / "born.pdf")
    return tmp / "born.pdf", english, [c.token for c in codes]


def test_the_plugin_makes_a_searchable_pdfa_of_a_scan(born, ocrmypdf, tmp_path):
    if shutil.which("gs") is None:
        pytest.skip("Ghostscript is not installed (Debian ghostscript; scripts/system-deps.sh installs it): "
                    "OCRmyPDF's PDF/A needs it")
    pdf, english, codes = born
    office_scan(pdf, tmp_path / "scan.pdf", dpi=DPI, seed=5)
    assert not pdftotext(tmp_path / "scan.pdf").strip()        # a scan: no text to begin with

    run = ocrmypdf(tmp_path / "scan.pdf", tmp_path / "out.pdf")

    assert run.returncode == 0, run.stderr
    with pikepdf.open(tmp_path / "out.pdf") as out:
        assert len(out.pages) == 2
        assert out.open_metadata().pdfa_status == "2B"             # OCRmyPDF's PDF/A, as without the plugin
        assert "longdoc" in str(out.docinfo.get("/Creator", ""))
    prose, codes_page = (pdftotext(tmp_path / "out.pdf", "-f", str(n), "-l", str(n)) for n in (1, 2))
    assert word_recall(prose, english) >= 0.95
    found = " ".join(codes_page.split())
    misread = [code for code in codes if " ".join(code.split()) not in found]
    assert not misread, f"{len(misread)} of {len(codes)} codes misread: {misread}"


def test_a_page_scanned_sideways_comes_out_upright_with_rotate_pages(ocrmypdf, tmp_path):
    # a page of a few lines: a sideways page is read three times over (as it lies, then turned either way)
    doc = long_textlayer(tmp_path / "doc", pages=1, brief=True)
    pdf, english = doc.pdf_path, doc.main_text
    sideways = _render(pdf, 1, DPI).rotate(90, expand=True)   # fed to the scanner turned a quarter to the left
    _image_pdf(sideways, tmp_path / "sideways.pdf")

    run = ocrmypdf("--rotate-pages", "--output-type", "pdf", tmp_path / "sideways.pdf", tmp_path / "out.pdf")

    assert run.returncode == 0, run.stderr
    upright = _render(pdf, 1)
    shown = _render(tmp_path / "out.pdf", 1).resize(upright.size)   # as a viewer shows it (/Rotate applied)
    assert _difference(shown, upright) < 0.5 * _difference(shown, upright.rotate(180))
    assert word_recall(pdftotext(tmp_path / "out.pdf"), english) >= 0.95


def _render(pdf: Path, page: int, dpi: int = 50) -> Image.Image:
    doc = pdfium.PdfDocument(str(pdf))
    try:
        return doc[page - 1].render(scale=dpi / 72, grayscale=True).to_pil().convert("L")
    finally:
        doc.close()


def _image_pdf(image: Image.Image, out: Path, dpi: int = DPI) -> None:
    """An image-only PDF of one page: ``image`` at ``dpi``, as JPEG."""
    width, height = image.width * 72 / dpi, image.height * 72 / dpi
    buf = io.BytesIO()
    image.save(buf, format="JPEG", quality=85)
    doc = FPDF(unit="pt")
    doc.add_page(format=(width, height))
    doc.image(buf, x=0, y=0, w=width, h=height)
    doc.output(str(out))


def _difference(a: Image.Image, b: Image.Image) -> float:
    """Mean absolute difference of two grey images of one size, 0-255."""
    histogram = ImageChops.difference(a, b).histogram()
    return sum(i * n for i, n in enumerate(histogram)) / (a.width * a.height)
