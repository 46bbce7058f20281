"""The docling export loads in docling-core, and docling's own chunker runs on it."""

from __future__ import annotations

import json

import pytest

from longdoc.config import load_settings
from longdoc.export.docling import DoclingWriter
from longdoc.model import BBox, Block, BlockKind, Document, Line, Page, TableCell
from longdoc.pipeline import ParseOptions, Pipeline
from tests.docgen import english_report

docling = pytest.importorskip("docling_core", reason="docling-core is not installed (scripts/setup.sh installs it "
                                                     "with the test extra)")
from docling_core.transforms.chunker.hierarchical_chunker import HierarchicalChunker  # noqa: E402
from docling_core.types.doc import DoclingDocument  # noqa: E402


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("docling")
    generated = english_report(folder, pages=4, seed=8)
    settings = load_settings(None, overrides={"inference": {"workers": 1, "ocr": "off"}})
    with Pipeline(settings) as pipeline:
        pipeline.parse(generated.pdf_path, folder, ParseOptions.from_settings(settings, formats=("json", "docling")))
    ours = Document.model_validate_json((folder / "english_report.json").read_text())
    raw = (folder / "english_report.docling.json").read_text()
    return generated, ours, raw


def test_it_validates_against_docling_core(report):
    _, ours, raw = report
    doc = DoclingDocument.model_validate_json(raw)
    assert sorted(doc.pages) == [p.number for p in ours.pages]
    assert doc.pages[1].size.width == ours.pages[0].width
    # re-serialized by docling-core, it is the same document
    again = DoclingDocument.model_validate(json.loads(doc.model_dump_json()))
    assert again.export_to_markdown() == doc.export_to_markdown()


def test_reading_order_and_furniture(report):
    generated, ours, raw = report
    doc = DoclingDocument.model_validate_json(raw)
    body_texts = [item.text for item, _ in doc.iterate_items() if hasattr(item, "text") and item.text]
    expected = [" ".join(b.text.split()) for p in ours.pages for b in p.main_blocks()
                if b.kind not in (BlockKind.LIST,) and b.text.strip()]
    assert [t for t in body_texts if t in expected] == expected            # our order, item for item
    furniture = [item for item, _ in doc.iterate_items(included_content_layers={"furniture"})
                 if item.content_layer.value == "furniture"]
    assert {item.text for item in furniture} >= {text for page in generated.furniture for text in page}
    assert all(item.label.value in ("page_header", "page_footer") for item in furniture)
    markdown = doc.export_to_markdown()
    assert "Annual Report 2026 — Example Corp" not in markdown                # furniture stays out of the body


def test_provenance_boxes_have_a_bottom_left_origin(report):
    _, ours, raw = report
    doc = DoclingDocument.model_validate_json(raw)
    first = ours.pages[0].main_blocks()[0]
    item = next(t for t in doc.texts if t.text == " ".join(first.text.split()))
    prov = item.prov[0]
    assert prov.page_no == 1 and prov.bbox.coord_origin.value == "BOTTOMLEFT"
    height = ours.pages[0].height
    assert prov.bbox.t == pytest.approx(height - min(l.bbox.y0 for l in first.lines), abs=0.01)
    assert prov.bbox.t > prov.bbox.b
    crossing = [t for t in doc.texts if len({p.page_no for p in t.prov}) > 1]
    assert crossing, "a paragraph continued over a page break has a provenance on each page"


def test_docling_chunker_runs_and_keeps_headings_and_pages(report):
    _, ours, raw = report
    doc = DoclingDocument.model_validate_json(raw)
    chunks = list(HierarchicalChunker().chunk(doc))
    assert len(chunks) > 10
    headings = {h for c in chunks for h in (c.meta.headings or [])}
    ours_headings = {b.text for p in ours.pages for b in p.blocks if b.kind in (BlockKind.HEADING, BlockKind.TITLE)}
    assert ours_headings <= headings
    pages = {p.page_no for c in chunks for item in c.meta.doc_items for p in item.prov}
    assert pages == {p.number for p in ours.pages}


def test_a_table_with_cells_is_a_docling_table(tmp_path):
    cells = [TableCell(row=r, col=c, text=f"r{r}c{c}", bbox=BBox(x0=50 + 100 * c, y0=100 + 20 * r,
                                                                   x1=140 + 100 * c, y1=118 + 20 * r))
             for r in range(3) for c in range(2)]
    cells.append(TableCell(row=3, col=0, col_span=2, text="total"))
    table = Block(id="t", kind=BlockKind.TABLE, bbox=BBox(x0=50, y0=100, x1=250, y1=180), order=0, text="",
                  source_pages=[1], cells=cells)
    figure = Block(id="f", kind=BlockKind.FIGURE, bbox=BBox(x0=50, y0=200, x1=250, y1=400), order=1, text="",
                   source_pages=[1])
    caption = Block(id="c", kind=BlockKind.CAPTION, bbox=BBox(x0=50, y0=405, x1=250, y1=420), order=2,
                    text="Figure 1. Sales", source_pages=[1],
                    lines=[Line(text="Figure 1. Sales", bbox=BBox(x0=50, y0=405, x1=250, y1=420), confidence=1,
                                page=1)])
    out = tmp_path / "t.docling.json"
    writer = DoclingWriter(out, "t.pdf", "ab" * 32, "application/pdf")
    writer.write_page(Page(number=1, width=600, height=800, blocks=[table, figure, caption]))
    writer.close()
    doc = DoclingDocument.model_validate_json(out.read_text())
    assert len(doc.tables) == 1 and len(doc.pictures) == 1
    data = doc.tables[0].data
    assert (data.num_rows, data.num_cols) == (4, 2)
    assert [[cell.text for cell in row] for row in data.grid][:3] == [[f"r{r}c0", f"r{r}c1"] for r in range(3)]
    assert data.grid[3][0].text == data.grid[3][1].text == "total"
    assert "| r0c0" in doc.tables[0].export_to_markdown(doc)
    assert doc.texts[0].label.value == "caption"
    assert not list(tmp_path.glob("*.part"))
