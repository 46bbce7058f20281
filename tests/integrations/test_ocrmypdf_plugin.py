"""The OCRmyPDF plugin's own behaviour, no OCR model: the real ``ocrmypdf``
command with the engine a longdoc configuration names (``fake``, the official
test double), what it refuses before reading a page, where a sideways page's
lines land in OCRmyPDF's element tree, and that longdoc never imports
OCRmyPDF itself."""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fpdf import FPDF
from PIL import Image

from longdoc.engines import PageImage
from longdoc.model import BBox, Line, Page
from tests.integrations.conftest import pdftotext

ROOT = Path(__file__).resolve().parents[2]
A4 = (595.28, 841.89)


def _blank_scan(out: Path, pages: int, dpi: int = 100) -> None:
    """An image-only PDF of ``pages`` white A4 pages (JPEG at ``dpi``)."""
    size = (round(A4[0] * dpi / 72), round(A4[1] * dpi / 72))
    buf = io.BytesIO()
    Image.new("L", size, 255).save(buf, format="JPEG")
    doc = FPDF(unit="pt")
    for _ in range(pages):
        doc.add_page(format=A4)
        doc.image(io.BytesIO(buf.getvalue()), x=0, y=0, w=A4[0], h=A4[1])
    doc.output(str(out))


@pytest.fixture
def fake_config(tmp_path) -> Path:
    config = tmp_path / "longdoc.yaml"
    config.write_text("inference:\n  engine: fake\n")
    return config


def test_the_engine_longdoc_is_configured_with_reads_every_page_where_it_put_its_words(ocrmypdf, fake_config,
                                                                                          tmp_path):
    """The fake engine reads ``Fake text of page N`` on a line from 72 pt
    to 72 pt short of the right edge, 72-86 pt from the top: each word is
    there, in the output, on every page, and in the sidecar."""
    _blank_scan(tmp_path / "scan.pdf", pages=3)
    run = ocrmypdf("--longdoc-config", fake_config, "-j", "2", "--output-type", "pdf", "--sidecar",
                   tmp_path / "out.txt", tmp_path / "scan.pdf", tmp_path / "out.pdf")
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "out.txt").read_text().split("\f")[:3] == [f"Fake text of page {n}\n" for n in (1, 2, 3)]
    layout = pdftotext(tmp_path / "out.pdf", "-bbox")
    pages = layout.split("<page ")[1:]
    assert len(pages) == 3
    for number, page in enumerate(pages, start=1):
        words = re.findall(r'xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)<', page)
        assert [w[4] for w in words] == ["Fake", "text", "of", "page", str(number)]
        x0, y0, _, y1 = (float(v) for v in words[0][:4])
        right = float(words[-1][2])
        assert abs(x0 - 72) < 1.5 and abs(right - (A4[0] - 72)) < 1.5
        assert abs(y0 - 72) < 2 and abs(y1 - 86) < 2


@pytest.mark.parametrize("args, says", [
    (["-l", "deu"], "does not read deu; it reads chi_sim, eng"),
    (["--longdoc-config", "missing.yaml"], "missing.yaml does not exist"),
    (["--pdf-renderer", "sandwich"], "leave --pdf-renderer at auto"),
])
def test_what_longdoc_cannot_do_is_refused_before_a_page_is_read(ocrmypdf, tmp_path, args, says):
    _blank_scan(tmp_path / "scan.pdf", pages=1)
    run = ocrmypdf(*args, tmp_path / "scan.pdf", tmp_path / "out.pdf")
    assert run.returncode == 1                      # OCRmyPDF's exit code for bad arguments
    assert says in run.stderr
    assert not (tmp_path / "out.pdf").exists()


def test_ocr_engine_tesseract_still_picks_tesseract(ocrmypdf, fake_config, tmp_path):
    _blank_scan(tmp_path / "scan.pdf", pages=1)
    run = ocrmypdf("--longdoc-config", fake_config, "--ocr-engine", "tesseract", "--output-type", "pdf",
                   tmp_path / "scan.pdf", tmp_path / "out.pdf")
    if run.returncode == 3:
        pytest.skip("Tesseract is not installed (Debian tesseract-ocr)")
    assert run.returncode == 0, run.stderr
    assert "Fake text" not in pdftotext(tmp_path / "out.pdf")


def test_a_page_read_sideways_keeps_its_image_and_its_lines_run_up_it():
    """A scan lying a quarter turn to the left (longdoc turns it 90°
    clockwise to read it): a line at the top left of the upright page runs
    up the left edge of the image OCRmyPDF has, its first word lowest."""
    plugin = pytest.importorskip("longdoc.integrations.ocrmypdf", reason="OCRmyPDF is not installed")
    image = PageImage(page=1, image=np.zeros((200, 100, 3), np.uint8), dpi=72, width_pt=100, height_pt=200)
    line = Line(text="top left words", bbox=BBox(x0=10, y0=10, x1=150, y1=20), confidence=0.9, page=1)
    page = Page(number=1, width=200, height=100, rotation=90, lines=[line])

    tree, text = plugin.ocr_tree(page, image, page_number=0)

    assert text == "top left words\n"
    (ocr_line,) = tree.lines
    assert ocr_line.textangle == 90
    box = ocr_line.bbox
    assert (box.left, box.top, box.right, box.bottom) == pytest.approx((10, 50, 20, 190))
    first, second, last = ocr_line.words
    assert [w.text for w in ocr_line.words] == ["top", "left", "words"]
    assert first.bbox.bottom == pytest.approx(190) and first.bbox.top > second.bbox.bottom > last.bbox.top
    assert last.bbox.top == pytest.approx(50)


def test_importing_longdoc_never_imports_ocrmypdf():
    code = ("import sys, longdoc, longdoc.integrations, longdoc.cli, longdoc.pipeline, longdoc.service.app; "
            "print('ocrmypdf' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


def test_nothing_in_longdoc_imports_its_integrations():
    """The integrations sit on top: they import longdoc, longdoc never imports them."""
    offenders = []
    for path in (ROOT / "longdoc").rglob("*.py"):
        if "integrations" in path.relative_to(ROOT).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            offenders += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.startswith("longdoc.integrations")]
    assert not offenders
