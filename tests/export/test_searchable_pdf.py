"""The searchable PDF: the original unchanged, plus a text layer that
viewers and extractors read back where the words are."""

from __future__ import annotations

import itertools
import shutil
import subprocess
from pathlib import Path

import pikepdf
import pypdfium2 as pdfium
import pytest

from evaluation.metrics import cer
from longdoc.config import LimitSettings, load_settings
from longdoc.export import pdf_layer
from longdoc.export.searchable_pdf import SearchablePdfWriter
from longdoc.model import Document, Page, TextSource
from longdoc.pipeline import ParseOptions, Pipeline
from tests.docgen import long_textlayer
from tests.docgen.raster import rasterize

SAMPLE = Path(__file__).resolve().parents[2] / "longdoc" / "samples" / "sample.pdf"
SCANNED_SAMPLE_PAGES = (4, 5)


def pdfium_texts(path: Path) -> list[str]:
    doc = pdfium.PdfDocument(str(path))
    try:
        return [doc[i].get_textpage().get_text_range() for i in range(len(doc))]
    finally:
        doc.close()


def pdftotext(path: Path, page: int) -> str:
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext is not installed (Debian poppler-utils; scripts/system-deps.sh installs it)")
    return subprocess.run(["pdftotext", "-f", str(page), "-l", str(page), "-raw", str(path), "-"],
                          capture_output=True, text=True, check=True).stdout


def images(path: Path) -> list[list[bytes]]:
    """Every page's image XObjects as their stored (compressed) bytes."""
    with pikepdf.open(path) as pdf:
        return [[img.read_raw_bytes() for img in (pdf.get_object(o.objgen) for o in page.get_images().values())]
                for page in pdf.pages]


def page_sizes(path: Path) -> list[tuple[float, ...]]:
    with pikepdf.open(path) as pdf:
        return [tuple(float(v) for v in page.mediabox) + (int(page.rotation or 0),) for page in pdf.pages]


@pytest.fixture(scope="module")
def sample_parse(tmp_path_factory):
    out = tmp_path_factory.mktemp("sample-pdf")
    settings = load_settings(None, overrides={"inference": {"workers": 1}})
    with Pipeline(settings) as pipeline:
        pipeline.parse(SAMPLE, out, ParseOptions.from_settings(settings, formats=("json", "txt", "pdf")))
    return out


def text_on_page(doc: Document, number: int) -> str:
    """What the result read on page ``number``, in reading order: the lines
    that sit on it (a paragraph continued from the page before is stitched
    into that page's block, so its lines here are taken from there), furniture
    included (it is on the page, so it is in the layer)."""
    carried = [line.text for page in doc.pages if page.number < number for block in page.blocks
               for line in block.lines if line.page == number]
    page = doc.pages[[p.number for p in doc.pages].index(number)]
    return " ".join(carried + [line.text for line in page.all_lines()])


def test_the_sample_reads_back_page_by_page_as_it_was_read(sample_parse):
    doc = Document.model_validate_json((sample_parse / "sample.json").read_text())
    texts = pdfium_texts(sample_parse / "sample.pdf")
    originals = pdfium_texts(SAMPLE)
    assert len(texts) == len(doc.pages) == 5
    whole = []
    for page in doc.pages:
        if page.text_source is TextSource.OCR:
            assert page.number in SCANNED_SAMPLE_PAGES
            read = text_on_page(doc, page.number)
            assert cer(texts[page.number - 1], read) <= 0.01, page.number
            assert cer(pdftotext(sample_parse / "sample.pdf", page.number), read) <= 0.01, page.number
            whole.append(texts[page.number - 1])
        else:   # born-digital: left as it was
            assert texts[page.number - 1] == originals[page.number - 1]
    # and the scanned pages together say what the text export says of them (furniture aside)
    exported = (sample_parse / "sample.txt").read_text().split("\f")
    main = " ".join(exported[n - 1] for n in SCANNED_SAMPLE_PAGES)
    furniture = [b.text for p in doc.pages for b in p.blocks if b.kind.value in ("header", "footer", "page_number")
                 and p.number in SCANNED_SAMPLE_PAGES]
    layer = " ".join(whole)
    for text in furniture:
        layer = layer.replace(text, " ", 1)
    assert cer(layer.replace("- ", "").replace("-\r\n", ""), main) <= 0.02


def test_the_sample_looks_as_it_did(sample_parse):
    out = sample_parse / "sample.pdf"
    assert page_sizes(out) == page_sizes(SAMPLE)
    assert images(out) == images(SAMPLE)          # the scans' bytes, not re-encoded
    for n in SCANNED_SAMPLE_PAGES:
        before = pdfium.PdfDocument(str(SAMPLE))[n - 1].render(scale=0.5).to_pil()
        after = pdfium.PdfDocument(str(out))[n - 1].render(scale=0.5).to_pil()
        assert before.tobytes() == after.tobytes(), f"page {n} looks different"


def test_search_finds_words_where_they_are(sample_parse):
    """The first word of each OCR line, searched for, is found inside that
    line's box (the layer sits on the words, not just somewhere on the page)."""
    doc = Document.model_validate_json((sample_parse / "sample.json").read_text())
    pdf = pdfium.PdfDocument(str(sample_parse / "sample.pdf"))
    checked = 0
    for page in doc.pages:
        if page.text_source is not TextSource.OCR:
            continue
        textpage = pdf[page.number - 1].get_textpage()
        for block in page.blocks:
            for line in block.lines[:1]:
                if line.page != page.number or len(line.text) < 12:  # short lines repeat
                    continue
                search = textpage.search(line.text, match_case=True)
                places = []
                while (found := search.get_next()) is not None:
                    left, bottom, right, top = textpage.get_charbox(found[0])
                    places.append((left, page.height - top))   # pdfium: user space, origin bottom left
                assert places, line.text
                assert any(line.bbox.x0 - 2 <= x <= line.bbox.x0 + 2 and line.bbox.y0 - 2 <= y <= line.bbox.y0 + 2
                           for x, y in places), (line.text, line.bbox, places)
                checked += 1
    assert checked >= 10


@pytest.fixture(scope="module")
def long_scan(tmp_path_factory):
    """A 300-page scan (generated, 30 dpi) and its pages as read from the
    born-digital twin's text layer, marked as OCR."""
    folder = tmp_path_factory.mktemp("long-scan")
    digital = long_textlayer(folder, pages=300, seed=4)
    scan = rasterize(digital, 30, folder / "scan-300.pdf")
    settings = load_settings(None, overrides={"inference": {"workers": 1, "ocr": "off"}})
    with Pipeline(settings) as pipeline:
        pipeline.parse(digital.pdf_path, folder / "out", ParseOptions.from_settings(settings, formats=("json",)))
    doc = Document.model_validate_json((folder / "out" / f"{digital.pdf_path.stem}.json").read_text())
    pages = [p.model_copy(update={"text_source": TextSource.OCR}) for p in doc.pages]
    return scan.pdf_path, pages, folder


def write_layer(original: Path, pages, out: Path, limits: LimitSettings | None = None):
    writer = SearchablePdfWriter(out, original, limits or LimitSettings())
    for page in pages:
        writer.write_page(page)
    writer.close()
    return writer.report


def test_a_word_of_page_212_of_a_300_page_scan_is_found_on_page_212_only(long_scan):
    scan, pages, folder = long_scan
    out = folder / "searchable-300.pdf"
    report = write_layer(scan, pages, out)
    assert report.pages == report.layered_pages == 300
    texts = pdfium_texts(out)
    assert [n + 1 for n, text in enumerate(texts) if "Record 212." in text] == [212]
    assert "Record 212." in pdftotext(out, 212)
    assert page_sizes(out) == page_sizes(scan)
    assert images(out) == images(scan)
    for page in (pages[0], pages[211], pages[-1]):
        assert cer(texts[page.number - 1], " ".join(line.text for line in page.all_lines())) <= 0.01


def test_memory_does_not_follow_the_page_count(long_scan, tmp_path):
    """The child that writes the PDF peaks at about the same memory for
    1,000 pages as for 10 (its peak RSS, measured by itself)."""
    _, pages, folder = long_scan
    digital = long_textlayer(tmp_path, pages=1000, seed=9)
    scan = rasterize(digital, 20, tmp_path / "scan-1000.pdf").pdf_path
    many = [Page(number=n, width=p.width, height=p.height, text_source=TextSource.OCR,
                 lines=[line.model_copy(update={"page": n}) for line in p.all_lines()])
            for n, p in zip(range(1, 1001), itertools.cycle(pages))]
    small = write_layer(scan, many[:10], tmp_path / "ten.pdf")
    large = write_layer(scan, many, tmp_path / "thousand.pdf")
    print(f"peak RSS: 10 pages {small.peak_rss_bytes / 2**20:.0f} MiB, "
          f"1000 pages {large.peak_rss_bytes / 2**20:.0f} MiB")
    assert large.layered_pages == 1000
    assert large.peak_rss_bytes - small.peak_rss_bytes < 64 * 2**20


def test_a_failed_page_keeps_its_image_and_is_named_in_the_document_info(long_scan, tmp_path):
    scan, pages, _ = long_scan
    from longdoc.model import ErrorInfo, PageStatus
    failed = pages[2].model_copy(update={"status": PageStatus.FAILED, "blocks": [], "text_source": None,
                                         "error": ErrorInfo(code="engine_failed", message="x", page=3)})
    out = tmp_path / "failed.pdf"
    write_layer(scan, [pages[0], pages[1], failed], out)
    with pikepdf.open(out) as pdf:
        assert str(pdf.docinfo["/LongdocFailedPages"]) == "3"
    assert pdfium_texts(out)[2].strip() == ""
    assert images(out) == images(scan)


@pytest.mark.parametrize(("rotate", "turn"), list(itertools.product((0, 90, 180, 270), repeat=2)))
def test_result_boxes_map_onto_the_crop_box_however_the_page_is_turned(rotate, turn):
    """The four corners of a result page land on the crop box's four
    corners, and the page's top-left corner on the corner a reader sees
    top left."""
    crop = (10.0, 20.0, 610.0, 820.0)     # 600 × 800, offset from the origin
    geometry = pdf_layer.PageGeometry(crop=crop, rotate=rotate)
    dw, dh = geometry.displayed_size
    w, h = (dh, dw) if turn % 180 else (dw, dh)
    m = geometry.from_result(turn)
    corners = {tuple(round(v, 6) for v in pdf_layer.apply(m, x, y)) for x, y in ((0, 0), (w, 0), (0, h), (w, h))}
    assert corners == {(10.0, 20.0), (610.0, 20.0), (10.0, 820.0), (610.0, 820.0)}
    # the displayed top-left: where /Rotate puts the crop box's corner after turning it
    displayed_top_left = {0: (10.0, 820.0), 90: (10.0, 20.0), 180: (610.0, 20.0), 270: (610.0, 820.0)}[rotate]
    # the result page's top-left is the displayed page's corner the scan's turn brought there
    corner_of_displayed = {0: (0, 0), 90: (0, dh), 180: (dw, dh), 270: (dw, 0)}[turn]
    inverse_displayed = pdf_layer.unturn(rotate, dw, dh)
    x, y = pdf_layer.apply(inverse_displayed, *corner_of_displayed)
    expected = (crop[0] + x, crop[3] - y)
    assert tuple(round(v, 6) for v in pdf_layer.apply(m, 0, 0)) == expected
    if turn == 0:
        assert expected == displayed_top_left


def test_text_outside_the_basic_plane_is_kept_as_replacement_and_cjk_lines_get_no_trailing_space():
    assert pdf_layer.encode("a😀") == b"\x00a\xff\xfd"
    assert pdf_layer.line_text("长文档") == "长文档"
    assert pdf_layer.line_text("long  words") == "long words "


def test_an_image_becomes_a_searchable_page_of_its_size_and_a_jpeg_keeps_its_bytes(tmp_path):
    from PIL import Image

    from tests.docgen import english_report
    from tests.docgen.raster import to_png

    generated = english_report(tmp_path, pages=3, seed=1)
    png = to_png(generated, 1, 150, tmp_path / "page.png").pdf_path
    jpeg = tmp_path / "photo.jpg"
    Image.open(png).convert("L").save(jpeg, quality=85, dpi=(150, 150))
    settings = load_settings(None, overrides={"inference": {"workers": 1}})
    with Pipeline(settings) as pipeline:
        for path in (png, jpeg):
            pipeline.parse(path, tmp_path / "out", ParseOptions.from_settings(settings, formats=("txt", "pdf")))
    for stem in ("page", "photo"):
        out = tmp_path / "out" / f"{stem}.pdf"
        document = pdfium.PdfDocument(str(out))
        assert len(document) == 1
        width, height = document[0].get_size()
        assert abs(width - generated.page_size[0]) < 1 and abs(height - generated.page_size[1]) < 1
        text = (tmp_path / "out" / f"{stem}.txt").read_text()
        assert cer(document[0].get_textpage().get_text_range(), text) < 0.1   # furniture is in the layer only
        assert "Review of Operations" in document[0].get_textpage().get_text_range()
    assert images(tmp_path / "out" / "photo.pdf") == [[jpeg.read_bytes()]]      # the JPEG as it was
