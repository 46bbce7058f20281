"""Lists and tables continued over page breaks, as each export writes them:
one list or table in Markdown, chunks and docling; each page's own part in
text, JSON and the per-page Markdown (pages built as stitching leaves them)."""

from __future__ import annotations

import json
import re

import pytest

from longdoc.assemble import stitch
from longdoc.export import ExportContext, open_exports
from longdoc.export.markdown import page_markdown
from longdoc.export.text import PAGE_SEPARATOR
from longdoc.model import BBox, Block, DocumentStatus, Line, Page, TableCell
from tests.assemble.test_stitch import HEAD, K, _block, _page, _table, _table_page

HEADER = {"schema": "longdoc.document/1", "longdoc_version": "test",
          "source": {"name": "doc.pdf", "sha256": "ab" * 32, "media_type": "application/pdf", "page_count": 3,
                     "selected_pages": [1, 2, 3]}}


def _export(tmp_path, pages: list[Page], formats=("md", "txt", "json", "chunks", "docling")) -> dict[str, str]:
    exports = open_exports(tmp_path, "doc", formats, HEADER)
    for page in stitch(pages):
        exports.write_page(page)
    paths = exports.close(DocumentStatus.SUCCEEDED, [], {})
    return {fmt: path.read_text(encoding="utf-8") for fmt, path in paths.items()}


def _list_pages() -> list[Page]:
    return [
        _page(1, (K.PARAGRAPH, "Steps:"), (K.LIST, "1. one\n2. two and"), (K.PAGE_NUMBER, "1")),
        _page(2, (K.HEADER, "Guide"), (K.PARAGRAPH, "a half"), (K.LIST, "3. three\n4. four"), (K.PAGE_NUMBER, "2")),
        _page(3, (K.LIST, "5. five"), (K.PARAGRAPH, "That is all.")),
    ]


def _table_pages(height2: float = 792) -> list[Page]:
    def cells_at(page: int, rows: list[list[str]]) -> Block:
        table = _table(page, 1, rows)
        cells = [c.model_copy(update={"bbox": BBox(x0=72 + 100 * c.col, y0=100 + 20 * c.row, x1=160 + 100 * c.col,
                                                   y1=118 + 20 * c.row)}) for c in table.cells or []]
        return table.model_copy(update={"cells": cells})

    p1 = _table_page(1, _block(1, 0, K.CAPTION, "Table 1. Deliveries by region."),
                     cells_at(1, [HEAD, ["North", "12", "3%"], ["South", "40", "9%"]]))
    p2 = _table_page(2, cells_at(2, [HEAD, ["East", "7", "2%"]])).model_copy(update={"height": height2})
    p3 = _table_page(3, cells_at(3, [HEAD, ["West", "3", "1%"]]), _block(3, 1, K.PARAGRAPH, "That is all."))
    return [p1, p2, p3]


def test_a_list_over_three_pages_is_one_list_in_markdown_and_each_page_s_items_in_text(tmp_path):
    out = _export(tmp_path, _list_pages())
    md = out["md"]
    assert "- 1. one\n- 2. two and a half\n- 3. three\n- 4. four\n- 5. five\n\n" in md   # one list, in order
    assert md.index("<!-- page 2 -->") > md.index("- 5. five") and md.index("<!-- page 3 -->") < md.index("That is")
    assert [p.strip() for p in out["txt"].split(PAGE_SEPARATOR)] == [
        "Steps:\n\n1. one\n2. two and a half", "3. three\n4. four", "5. five\n\nThat is all."]
    pages = json.loads(out["json"])["pages"]
    lists = [b for p in pages for b in p["blocks"] if b["kind"] == "list"]
    assert [(b["id"], b["continues"], b["source_pages"]) for b in lists] == [
        ("p1-b1", None, [1, 2]), ("p2-b2", "p1-b1", [2]), ("p3-b0", "p2-b2", [3])]


def test_a_table_over_three_pages_is_one_table_in_markdown_without_the_repeated_header(tmp_path):
    out = _export(tmp_path, _table_pages())
    md = out["md"]
    assert ("| Region | Parcels | Share |\n| --- | --- | --- |\n| North | 12 | 3% |\n| South | 40 | 9% |\n"
            "| East | 7 | 2% |\n| West | 3 | 1% |\n\n") in md
    assert md.count("| Region |") == 1 and sum(line.startswith("| --- |") for line in md.splitlines()) == 1
    assert md.index("<!-- page 3 -->") < md.index("That is all.")
    # one page alone (GET /v1/jobs/{id}/pages/2?format=md): its rows, under an empty header row
    page2 = list(stitch(_table_pages()))[1]
    assert page_markdown(page2) == "<!-- page 2 -->\n\n|  |  |  |\n| --- | --- | --- |\n| East | 7 | 2% |"
    assert out["txt"].split(PAGE_SEPARATOR)[1].strip() == "East\t7\t2%"


def test_a_continued_table_with_spanning_cells_is_one_html_table(tmp_path):
    spanning = [TableCell(row=0, col=0, col_span=2, text="Score"), TableCell(row=1, col=0, text="a"),
                TableCell(row=1, col=1, text="b")]
    more = [TableCell(row=0, col=0, text="c"), TableCell(row=0, col=1, text="d")]
    p1 = Page(number=1, width=612, height=792, blocks=[_table(1, 0, [["x"]]).model_copy(update={"cells": spanning})])
    p2 = Page(number=2, width=612, height=792, blocks=[_table(2, 0, [["x"]]).model_copy(update={"cells": more})])
    md = _export(tmp_path, [p1, p2], ("md",))["md"]
    assert md.count("<table>") == 1 and md.count("</table>") == 1
    assert "<tr><td>a</td><td>b</td></tr>\n<tr><td>c</td><td>d</td></tr>\n</table>" in md


def _chunks(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def test_chunks_join_a_continued_list_or_repeat_the_table_s_header_row(tmp_path):
    chunks = _chunks(_export(tmp_path / "list", _list_pages(), ("chunks",))["chunks"])
    (chunk,) = chunks
    assert "- 2. two and a half\n- 3. three\n- 4. four\n- 5. five\n\nThat is all." in chunk["text"]
    assert chunk["pages"] == [1, 3]
    # a budget that holds one part of the table at a time: each part a table under the header row again;
    # one that holds the rows of pages 2 and 3: one table, the header once
    for budget, expected in ((35, [[1, 1], [1, 1], [2, 2], [3, 3]]), (40, [[1, 1], [1, 1], [2, 3]])):
        exports = open_exports(tmp_path / f"t{budget}", "doc", ("chunks",), HEADER, ExportContext(chunk_tokens=budget))
        for page in stitch(_table_pages()):
            exports.write_page(page)
        chunks = _chunks(exports.close(DocumentStatus.SUCCEEDED, [], {})["chunks"].read_text())
        tables = [c for c in chunks if "table" in c["kinds"]]
        assert [c["pages"] for c in tables] == expected
        assert all(c["text"].startswith("| Region | Parcels | Share |\n| --- |") for c in tables)
        assert all(c["text"].count("| Region |") == 1 and c["tokens"] <= budget for c in tables)
    assert tables[-1]["text"].endswith("| East | 7 | 2% |\n| West | 3 | 1% |")


docling = pytest.importorskip("docling_core", reason="docling-core is not installed (the test extra has it)")
from docling_core.types.doc import DoclingDocument  # noqa: E402


def test_docling_has_one_list_and_one_table_with_each_item_s_and_cell_s_own_page(tmp_path):
    doc = DoclingDocument.model_validate_json(_export(tmp_path / "l", _list_pages(), ("docling",))["docling"])
    (group,) = doc.groups
    items = [ref.resolve(doc) for ref in group.children]
    assert [i.text for i in items] == ["1. one", "2. two and a half", "3. three", "4. four", "5. five"]
    assert [[p.page_no for p in i.prov] for i in items] == [[1], [1, 2], [2], [2], [3]]
    second = items[1].prov[1]           # "a half", page 2's second block (under its header), 190 pt down
    assert second.bbox.t == pytest.approx(792 - 190) and items[1].prov[0].bbox.t == pytest.approx(792 - 202)
    assert [item.text for item, _ in doc.iterate_items()][:2] == ["Steps:", "1. one"]    # the list where it starts

    raw = _export(tmp_path / "t", _table_pages(height2=700), ("docling",))["docling"]
    doc = DoclingDocument.model_validate_json(raw)
    (table,) = doc.tables
    assert (table.data.num_rows, table.data.num_cols) == (5, 3)
    assert [[c.text for c in row] for row in table.data.grid] == [
        HEAD, ["North", "12", "3%"], ["South", "40", "9%"], ["East", "7", "2%"], ["West", "3", "1%"]]
    assert [p.page_no for p in table.prov] == [1, 2, 3]
    east = table.data.grid[3][0]
    assert east.bbox.t == pytest.approx(700 - 120)       # its box on page 2 (under the header), 700 points tall
    assert table.data.grid[1][0].bbox.t == pytest.approx(792 - 120)
    (caption,) = [ref.resolve(doc) for ref in table.captions]
    assert caption.text == "Table 1. Deliveries by region." and caption.parent.cref == table.self_ref
    caption_md, table_md, _ = doc.export_to_markdown().split("\n\n")     # docling's own Markdown: one table
    assert caption_md == "Table 1. Deliveries by region."
    assert [re.split(r"\s*\|\s*", row)[1] for row in table_md.splitlines()] == [
        "Region", "----------", "North", "South", "East", "West"]


def test_list_items_prov_follows_their_lines_when_an_item_wraps(tmp_path):
    lines = [Line(text=t, bbox=BBox(x0=72, y0=100 + 12 * i, x1=300, y1=110 + 12 * i), confidence=1.0, page=1)
             for i, t in enumerate(["• first item that", "wraps here", "• second"])]
    block = Block(id="p1-b0", kind=K.LIST, bbox=BBox.enclosing([l.bbox for l in lines]), order=0,
                  text="• first item that wraps here\n• second", lines=lines, source_pages=[1])
    raw = _export(tmp_path, [Page(number=1, width=612, height=792, blocks=[block])], ("docling",))["docling"]
    doc = DoclingDocument.model_validate_json(raw)
    first, second = (ref.resolve(doc) for ref in doc.groups[0].children)
    assert (first.prov[0].bbox.t, first.prov[0].bbox.b) == (792 - 100, 792 - 122)
    assert (second.prov[0].bbox.t, second.prov[0].bbox.b) == (792 - 124, 792 - 134)


def _code_pages(last: str = "}") -> list[Page]:
    return [
        _page(1, (K.PARAGRAPH, "The program:"), (K.CODE, "int main(void)\n{\n    int x = 0;"), (K.PAGE_NUMBER, "1")),
        _page(2, (K.HEADER, "Guide"), (K.CODE, "    x = run(x);"), (K.PAGE_NUMBER, "2")),
        _page(3, (K.CODE, f"    return x;\n{last}"), (K.PARAGRAPH, "It returns what it ran.")),
    ]


def test_a_listing_over_three_pages_is_one_fence_in_markdown_and_each_page_s_lines_everywhere_else(tmp_path):
    out = _export(tmp_path, _code_pages())
    md = out["md"]
    assert "```\nint main(void)\n{\n    int x = 0;\n    x = run(x);\n    return x;\n}\n```\n\n" in md  # one fence
    assert md.count("```") == 2
    assert md.index("<!-- page 2 -->") > md.index("    return x;") and md.index("<!-- page 3 -->") < md.index("It ret")
    assert [p.strip("\n") for p in out["txt"].split(PAGE_SEPARATOR)] == [
        "The program:\n\nint main(void)\n{\n    int x = 0;", "    x = run(x);", "    return x;\n}\n\nIt returns what it ran."]
    pages = json.loads(out["json"])["pages"]
    code = [(b["id"], b["continues"], b["source_pages"]) for p in pages for b in p["blocks"] if b["kind"] == "code"]
    assert code == [("p1-b1", None, [1]), ("p2-b1", "p1-b1", [2]), ("p3-b0", "p2-b1", [3])]
    chunks = [json.loads(line) for line in out["chunks"].splitlines()]
    assert [c["pages"] for c in chunks] == [[1, 3]] and "    x = run(x);" in chunks[0]["text"]
    docling = json.loads(out["docling"])
    code_items = [t for t in docling["texts"] if t["label"] == "code"]
    assert [[p["page_no"] for p in t["prov"]] for t in code_items] == [[1], [2], [3]]
    # one page alone: its own lines, fenced
    assert page_markdown(list(stitch(_code_pages()))[1]) == "<!-- page 2 -->\n\n```\n    x = run(x);\n```"


def test_a_later_part_with_a_longer_backtick_run_gets_its_own_fence(tmp_path):
    md = _export(tmp_path, _code_pages(last="} // ``` ends here"), formats=("md",))["md"]
    assert "```\nint main(void)\n{\n    int x = 0;\n    x = run(x);\n```" in md
    assert "````\n    return x;\n} // ``` ends here\n````" in md
