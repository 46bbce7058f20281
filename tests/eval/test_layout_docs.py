"""Layout test documents (tests.docgen.layouts): their PDFs hold exactly their truth."""

from __future__ import annotations

from pathlib import Path

import pypdfium2 as pdfium
import pytest

from evaluation.metrics import normalize_ws, order_ok
from tests.docgen.layout import A4
from tests.docgen.layouts import (
    FIG_COL_W,
    FIG_GUTTER,
    FIG_HEIGHT,
    FIG_MARGIN,
    FIG_TOP,
    LAYOUT_GENERATORS,
    LayoutDoc,
)
from tests.docgen.table_score import cell_accuracy

NAMES = list(LAYOUT_GENERATORS)


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> dict[str, LayoutDoc]:
    root = tmp_path_factory.mktemp("layouts")
    return {name: make(root) for name, make in LAYOUT_GENERATORS.items()}


class Layer:
    """A page's text layer with whitespace runs collapsed, and each character's box."""

    def __init__(self, path: Path, index: int) -> None:
        pdf = pdfium.PdfDocument(str(path))
        try:
            page = pdf[index]
            tp = page.get_textpage()
            raw = tp.get_text_range()
            self.height = page.get_size()[1]
            self.text, self.boxes = "", []
            for i, ch in enumerate(raw):
                if ch.isspace():
                    if self.text and not self.text.endswith(" "):
                        self.text += " "
                        self.boxes.append(None)
                    continue
                self.text += ch
                self.boxes.append(tp.get_charbox(i))
        finally:
            pdf.close()

    def find(self, phrase: str, start: int = 0) -> int:
        return self.text.find(normalize_ws(phrase), start)

    def box(self, phrase: str) -> tuple[float, float, float, float]:
        """``(left, top, right, bottom)`` of the phrase's first and last characters, y down from the page top."""
        i = self.find(phrase)
        assert i >= 0 and self.find(phrase, i + 1) < 0, phrase
        first, last = self.boxes[i], self.boxes[i + len(normalize_ws(phrase)) - 1]
        return first[0], self.height - first[3], last[2], self.height - last[1]


def layers(doc: LayoutDoc) -> list[Layer]:
    return [Layer(doc.pdf_path, i) for i in range(doc.doc.pages)]


# --- the truth is self-consistent -----------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_truth_is_consistent(docs, name):
    doc, truth = docs[name].doc, docs[name].truth
    text = normalize_ws(doc.main_text)
    for table in truth.tables:
        covered = [(r, c) for r0, c0, rs, cs, _ in table.cells for r in range(r0, r0 + rs) for c in range(c0, c0 + cs)]
        assert sorted(covered) == [(r, c) for r in range(table.n_rows) for c in range(table.n_cols)]
        assert 1 <= table.page <= table.last_page <= doc.pages
        assert cell_accuracy(table.cells, table.cells) == (len(table.cells), len(table.cells))
        for r in range(table.n_rows):  # each row is a line of the main text
            row = " ".join(t for r0, _, _, _, t in table.cells if r0 == r)
            assert f"\n{row}\n" in f"\n{doc.main_text}\n"
    assert len(truth.order) >= 3
    for phrase in truth.order:
        assert 6 <= len(phrase.split()) <= 10 and text.count(phrase) == 1, phrase
    assert doc.order_checks == list(zip(truth.order, truth.order[1:]))
    assert all(order_ok(doc.main_text, b, a) for b, a in doc.order_checks)
    for s in truth.present + truth.captions:
        assert normalize_ws(s) in text, s
    assert set(truth.captions) <= set(truth.present)
    assert truth.absent == list(dict.fromkeys(s for page in doc.furniture for s in page))
    for s in truth.absent:
        assert normalize_ws(s) not in text, s


# --- the PDFs hold the truth --------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_text_layer_holds_cells_phrases_and_furniture(docs, name):
    doc, truth = docs[name].doc, docs[name].truth
    pages = layers(docs[name])
    assert len(pages) == doc.pages
    for table in truth.tables:
        span = " ".join(p.text for p in pages[table.page - 1 : table.last_page])
        for *_, cell in table.cells:
            assert normalize_ws(cell) in span, cell
    for page, furniture in zip(pages, doc.furniture):
        for s in furniture:
            assert page.find(s) >= 0, s
    # The content stream is written in reading order, so the text layer's order is the truth's.
    whole = " ".join(p.text for p in pages)
    pos = 0
    for phrase in truth.order:
        found = whole.find(phrase, pos)
        assert found >= 0, f"{phrase!r} missing or out of order"
        pos = found + len(phrase)
    for s in truth.present:
        assert normalize_ws(s) in whole, s


def test_table_across_pages_is_one_table_with_the_header_on_both_pages(docs):
    ld = docs["table_across_pages"]
    (table,) = ld.truth.tables
    assert (table.page, table.last_page, table.n_rows, table.n_cols) == (1, 2, 41, 3)
    assert [c[4] for c in table.cells[:3]] == ["Code", "Description", "Amount"]
    assert ld.doc.main_text.count("Code Description Amount") == 1
    for text in ld.doc.main_text_per_page:  # the header is part of each page's text
        assert "\n\nCode Description Amount\n" in "\n\n" + text
    first, second = layers(ld)
    assert first.find("Code Description Amount") >= 0 and second.find("Code Description Amount") >= 0
    # It starts mid page 1 and goes on at the top of page 2, 5 or more rows on each page.
    assert 250 < first.box("Code Description Amount")[1] < 500
    assert second.box("Code Description Amount")[1] < 100
    assert first.find("A-1006") >= 0 and second.find("A-1036") >= 0 and second.find("A-1006") < 0
    assert ld.truth.absent == ["Page 1 of 2", "Page 2 of 2"]


def test_spanning_table_spans(docs):
    cells = {(r, c): (rs, cs, t) for r, c, rs, cs, t in docs["spanning_table"].truth.tables[0].cells}
    assert cells[(0, 0)] == (2, 1, "Method") and cells[(0, 1)] == (1, 2, "Score")
    assert cells[(1, 1)][2] == "simple" and cells[(1, 2)][2] == "complex" and (0, 2) not in cells


def paths(doc: LayoutDoc) -> int:
    pdf = pdfium.PdfDocument(str(doc.pdf_path))
    try:
        return sum(o.type == pdfium.raw.FPDF_PAGEOBJ_PATH for o in pdf[0].get_objects())
    finally:
        pdf.close()


def test_rulings_as_intended(docs):
    assert paths(docs["borderless_table"]) == 1  # the rule under the header, nothing else
    assert paths(docs["bordered_table"]) == 28  # one rectangle per cell
    assert paths(docs["spanning_table"]) == 25


def test_borderless_numbers_are_right_aligned(docs):
    page = layers(docs["borderless_table"])[0]
    rights = [page.box(s)[2] for s in ("Units", "1,204", "312", "86", "2,950", "4,962")]
    assert max(rights) - min(rights) < 1.0  # glyph boxes, not advance widths


def test_figure_sits_between_the_column_parts_and_its_caption_crosses_the_gutter(docs):
    ld = docs["two_columns_figure"]
    page = layers(ld)[0]
    caption = ld.truth.captions[0]
    left, top, right, bottom = page.box(caption)
    gutter_left = FIG_MARGIN + FIG_COL_W
    assert left < gutter_left and right > gutter_left + FIG_GUTTER
    assert abs((left + right) / 2 - A4[0] / 2) < 1 and top > FIG_TOP + FIG_HEIGHT
    # Order phrases go left-above, left-below, right-above, right-below, each part pinned.
    def part(phrase: str) -> int:
        x, y = page.box(phrase)[:2]
        return 2 * (x > A4[0] / 2) + (y > FIG_TOP)

    parts = [part(p) for p in ld.truth.order]
    assert parts == sorted(parts) and set(parts) == {0, 1, 2, 3}
    # The stream has the caption inside the paragraph that runs on below the figure.
    assert page.find(caption) < page.find(ld.truth.order[parts.index(1)])


def test_furniture_is_at_the_top_and_bottom(docs):
    ld = docs["single_page_furniture"]
    page = layers(ld)[0]
    body_tops = [page.box(p)[1] for p in ld.truth.order]
    assert ld.truth.absent[:2] == [
        "Journal of Applied Widgets, Vol. 12, No. 3 (2021), pp. 45–67",
        "https://doi.org/10.1234/jaw.2021.0045",
    ]
    assert set(ld.truth.absent[2:]) == {"Page 1 of 1", "Downloaded from https://example.org/ on 12 March 2023"}
    for s in ld.truth.absent[:2]:
        assert page.box(s)[3] < min(body_tops)
    for s in ld.truth.absent[2:]:
        assert page.box(s)[1] > max(body_tops) and page.box(s)[1] > A4[1] - 60
    assert len(ld.truth.present) >= 6


# --- determinism and scans ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_generation_is_byte_for_byte_repeatable(docs, tmp_path, name):
    again = LAYOUT_GENERATORS[name](tmp_path)
    assert again.pdf_path.read_bytes() == docs[name].pdf_path.read_bytes()
    assert again.truth == docs[name].truth
    assert again.doc.main_text_per_page == docs[name].doc.main_text_per_page


@pytest.mark.parametrize("name", NAMES)
def test_scan_is_image_only_with_the_same_truth(docs, tmp_path, name):
    scan = docs[name].scan(tmp_path / f"{name}_scan.pdf", dpi=200)
    assert scan.truth == docs[name].truth and scan.doc.image_dpi == 200
    assert scan.doc.main_text == docs[name].doc.main_text
    pdf = pdfium.PdfDocument(str(scan.pdf_path))
    try:
        assert len(pdf) == docs[name].doc.pages
        for i in range(len(pdf)):
            assert pdf[i].get_textpage().get_text_range() == ""
            assert [o.type for o in pdf[i].get_objects()] == [pdfium.raw.FPDF_PAGEOBJ_IMAGE]
    finally:
        pdf.close()
