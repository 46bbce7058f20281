"""Generated documents: their PDFs hold exactly the ground truth, rasterized copies hold none."""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from PIL import Image

from evaluation.metrics import normalize_ws, order_ok
from tests.docgen import (
    chinese_report,
    english_report,
    long_textlayer,
    rasterize,
    side_note,
    to_png,
    to_tiff,
    two_column,
)

GENERATORS = {
    "english_report": lambda d: english_report(d),
    "chinese_report": lambda d: chinese_report(d),
    "two_column": lambda d: two_column(d),
    "two_column_interleaved": lambda d: two_column(d, interleave_rows=True),
    "side_note": lambda d: side_note(d),
    "long_textlayer": lambda d: long_textlayer(d, pages=12),
}


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    root = tmp_path_factory.mktemp("docgen")
    return {name: make(root / name) for name, make in GENERATORS.items()}


def page_texts(path: Path) -> list[str]:
    pdf = pdfium.PdfDocument(str(path))
    try:
        return [pdf[i].get_textpage().get_text_range() for i in range(len(pdf))]
    finally:
        pdf.close()


def layer_tokens(layer: str, furniture: list[str], cjk: bool) -> list[str]:
    """Tokens of a page's text layer minus its furniture strings.

    pdfium reports a hyphen at a line end as U+FFFE glued to the next line; put
    the hyphen and the line break back.
    """
    lines = [ln.strip() for ln in layer.replace("\ufffe", "-\r\n").split("\r\n")]
    for f in furniture:
        assert f in lines, f"furniture {f!r} is not a line of the text layer"
        lines.remove(f)
    text = "\n".join(lines)
    return list("".join(text.split())) if cjk else text.split()


def gt_tokens(text: str, cjk: bool) -> list[str]:
    return list("".join(text.split())) if cjk else text.split()


# --- text layers hold the ground truth ----------------------------------------------


@pytest.mark.parametrize("name", [n for n in GENERATORS if n != "two_column_interleaved"])
def test_text_layer_reads_as_ground_truth_in_stream_order(docs, name):
    doc = docs[name]
    cjk = doc.language == "zh"
    layers = page_texts(doc.pdf_path)
    assert len(layers) == doc.pages == len(doc.main_text_per_page) == len(doc.furniture)
    for layer, truth, furniture in zip(layers, doc.main_text_per_page, doc.furniture):
        got = layer_tokens(layer, furniture, cjk)
        want = gt_tokens(truth, cjk)
        if name == "side_note":  # the note is written into the stream inside p2
            assert Counter(got) == Counter(want)
            assert got != want
        else:
            assert got == want


def test_interleaved_columns_hold_the_same_words_in_another_stream_order(docs):
    doc = docs["two_column_interleaved"]
    for layer, truth, furniture in zip(page_texts(doc.pdf_path), doc.main_text_per_page, doc.furniture):
        got = layer_tokens(layer, furniture, cjk=False)
        assert Counter(got) == Counter(truth.split())
        assert got != truth.split()


def test_interleaving_changes_only_the_stream_not_the_ground_truth(docs):
    plain, mixed = docs["two_column"], docs["two_column_interleaved"]
    assert plain.main_text == mixed.main_text
    assert plain.order_checks == mixed.order_checks


# --- ground truth is self-consistent ----------------------------------------------------


@pytest.mark.parametrize("name", list(GENERATORS))
def test_order_checks_hold_and_pin_unique_phrases(docs, name):
    doc = docs[name]
    assert doc.order_checks
    text = normalize_ws(doc.main_text)
    for before, after in doc.order_checks:
        assert order_ok(doc.main_text, before, after), (before, after)
        assert not order_ok(doc.main_text, after, before), (before, after)
        if name != "long_textlayer":
            assert text.count(before) == 1 and text.count(after) == 1, (before, after)


@pytest.mark.parametrize("name", list(GENERATORS))
def test_main_text_is_the_pages_joined(docs, name):
    doc = docs[name]
    if doc.language == "zh":
        squash = "".join
        assert squash("".join(doc.main_text_per_page).split()) == squash(doc.main_text.split())
    else:
        joined = normalize_ws(" ".join(doc.main_text_per_page)).replace("continu- ation", "continuation")
        assert joined == normalize_ws(doc.main_text)


def test_english_report_breaks_a_list_and_a_hyphenated_word_over_pages(docs):
    doc = docs["english_report"]
    pages = doc.main_text_per_page
    assert pages[0].split("\n")[-1].startswith("• ") and pages[1].startswith("• ")
    assert pages[1].endswith("continu-") and pages[2].startswith("ation ")
    assert "continuation" in doc.main_text and "continu-" not in doc.main_text
    assert doc.main_text.startswith("Review of Operations and Outlook\n\n")
    for n, furniture in enumerate(doc.furniture, start=1):
        assert furniture == ["Annual Report 2026 — Example Corp", f"Page {n} of {doc.pages}"]
    # The list is one block: its items are separated by single newlines only.
    list_block = next(b for b in doc.main_text.split("\n\n") if b.startswith("• "))
    assert list_block.count("• ") >= 4
    assert normalize_ws(pages[0].split("\n\n")[-1]) in normalize_ws(list_block)


def test_english_report_needs_three_pages(tmp_path):
    with pytest.raises(ValueError):
        english_report(tmp_path, pages=2)


def test_english_report_page_count_follows_argument(tmp_path):
    doc = english_report(tmp_path, pages=6)
    assert doc.pages == 6 == len(page_texts(doc.pdf_path))
    assert doc.furniture[5] == ["Annual Report 2026 — Example Corp", "Page 6 of 6"]


def test_chinese_report_continues_a_paragraph_and_numbers_pages(docs):
    doc = docs["chinese_report"]
    assert doc.language == "zh"
    assert [f[-1] for f in doc.furniture] == ["第 1 页", "第 2 页"]
    first, second = doc.main_text_per_page
    assert not first.endswith("。")  # the last paragraph of page 1 goes on
    assert 200 <= len("".join(first.split())) <= 450
    tail, head = first.split("\n\n")[-1], second.split("\n\n")[0]
    assert tail + head in doc.main_text.split("\n\n")
    assert re.search(r"[\u4e00-\u9fff]{20}", doc.main_text)


def test_two_column_title_then_columns(docs):
    doc = docs["two_column"]
    assert doc.main_text.startswith("Regional Markets in a Changing Economy\n\n")
    assert doc.furniture == [["1"], ["2"]]
    # title, then one pair per column break: left->right on each page, right->next left.
    assert len(doc.order_checks) == 1 + 2 * doc.pages - 1


def test_side_note_sits_between_its_paragraph_and_the_next(docs):
    doc = docs["side_note"]
    blocks = doc.main_text.split("\n\n")
    assert len(blocks) == 4 and doc.pages == 1 and doc.furniture == [[]]
    note = blocks[2]
    assert len(note.split()) <= 10 and note.endswith(".")
    p2 = normalize_ws(blocks[1])
    before_note = [b for b, a in doc.order_checks if normalize_ws(note).startswith(a)]
    assert len(before_note) >= 3 and all(b in p2 for b in before_note)  # p2's end, phrases across its lines
    assert p2.endswith(before_note[0])
    # The stream puts the note inside p2, so the raw text layer fails those checks.
    layer = page_texts(doc.pdf_path)[0]
    assert not all(order_ok(layer, b, a) for b, a in doc.order_checks)


def test_long_textlayer_marks_every_page(tmp_path):
    doc = long_textlayer(tmp_path, pages=1000)
    pdf = pdfium.PdfDocument(str(doc.pdf_path))
    try:
        assert len(pdf) == 1000 == doc.pages
        for n in (1, 500, 1000):
            text = pdf[n - 1].get_textpage().get_text_range()
            assert text.startswith("Long Document Benchmark — Volume One")
            assert f"Record {n}. " in text and text.rstrip().endswith(f"Page {n}")
    finally:
        pdf.close()
    assert len(doc.order_checks) == 999
    assert doc.main_text_per_page[499].startswith("Record 500. ")


# --- rasterized copies -----------------------------------------------------------------


@pytest.mark.parametrize("jpeg", [None, 80])
def test_rasterized_pdf_has_images_only_same_pages_and_sizes(docs, tmp_path, jpeg):
    doc = docs["english_report"]
    img = rasterize(doc, 100, tmp_path / "scan.pdf", jpeg_quality=jpeg)
    assert img.image_dpi == 100 and img.main_text == doc.main_text
    src, dst = pdfium.PdfDocument(str(doc.pdf_path)), pdfium.PdfDocument(str(img.pdf_path))
    try:
        assert len(dst) == len(src) == img.pages
        for i in range(len(src)):
            assert dst[i].get_size() == pytest.approx(src[i].get_size(), abs=0.01)
            assert dst[i].get_textpage().get_text_range() == ""
            objects = list(dst[i].get_objects())
            assert [o.type for o in objects] == [pdfium.raw.FPDF_PAGEOBJ_IMAGE]
            w, h = objects[0].get_px_size()
            assert (w, h) == (math.ceil(src[i].get_size()[0] * 100 / 72), math.ceil(src[i].get_size()[1] * 100 / 72))
            assert objects[0].get_filters() == (["DCTDecode"] if jpeg else ["FlateDecode"])
            dark = dst[i].render(scale=0.5, grayscale=True).to_pil().point(lambda v: v < 128 and 255).getbbox()
            assert dark is not None  # the text is really drawn
    finally:
        src.close()
        dst.close()


def test_tiff_has_every_page_at_the_dpi(docs, tmp_path):
    doc = docs["chinese_report"]
    tif = to_tiff(doc, 120, tmp_path / "scan.tif")
    with Image.open(tif.pdf_path) as im:
        assert im.n_frames == doc.pages
        for i in range(im.n_frames):
            im.seek(i)
            assert im.mode == "L"
            assert im.size == (math.ceil(doc.page_size[0] * 120 / 72), math.ceil(doc.page_size[1] * 120 / 72))
            assert im.info["dpi"] == pytest.approx((120, 120), abs=0.01)


def test_png_carries_one_page_of_ground_truth(docs, tmp_path):
    doc = docs["english_report"]
    png = to_png(doc, 2, 100, tmp_path / "p2.png")
    assert png.pages == 1 and png.main_text == doc.main_text_per_page[1]
    assert png.main_text.endswith("continu-")
    assert png.furniture == [doc.furniture[1]]
    assert set(png.order_checks) < set(doc.order_checks)
    assert all(order_ok(png.main_text, b, a) for b, a in png.order_checks)
    with Image.open(png.pdf_path) as im:
        assert im.info["dpi"] == pytest.approx((100, 100), abs=0.01)
    with pytest.raises(ValueError):
        to_png(doc, doc.pages + 1, 100, tmp_path / "none.png")


# --- determinism -------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(GENERATORS))
def test_generation_is_byte_for_byte_repeatable(docs, tmp_path, name):
    again = GENERATORS[name](tmp_path)
    assert again.pdf_path.read_bytes() == docs[name].pdf_path.read_bytes()
    assert again.main_text_per_page == docs[name].main_text_per_page
    assert again.order_checks == docs[name].order_checks


def test_another_seed_gives_another_document(docs, tmp_path):
    other = english_report(tmp_path, seed=1)
    assert other.main_text != docs["english_report"].main_text


def test_rasterizing_twice_gives_the_same_bytes(docs, tmp_path):
    doc = docs["side_note"]
    a = rasterize(doc, 72, tmp_path / "a.pdf")
    b = rasterize(doc, 72, tmp_path / "b.pdf")
    assert a.pdf_path.read_bytes() == b.pdf_path.read_bytes()
    c = rasterize(doc, 80, tmp_path / "c.pdf")
    assert c.pdf_path.read_bytes() != a.pdf_path.read_bytes()
