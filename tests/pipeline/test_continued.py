"""A numbered list and a table continued over three pages, through
``longdoc parse`` (born-digital and scanned, real OCR): each page keeps what
is printed on it in the per-page text and the JSON, the list item cut by a
page break is joined once on its first page, Markdown, chunks and docling
have one list and one table."""

from __future__ import annotations

import json
import re

import pytest

from evaluation.metrics import normalize_ws
from longdoc.cli import main
from longdoc.export.text import PAGE_SEPARATOR
from longdoc.model import BlockKind, Document
from tests.docgen.continued import ListDoc, numbered_list
from tests.docgen.layouts import table_across_pages

FORMATS = "md,json,txt,chunks,docling"


def _alnum(text: str) -> str:
    return "".join(ch for ch in text.casefold() if ch.isalnum())


@pytest.fixture(scope="module")
def listing(tmp_path_factory) -> ListDoc:
    return numbered_list(tmp_path_factory.mktemp("numbered-list"))


@pytest.fixture(scope="module", params=["digital", "scan"])
def list_run(request, listing, tmp_path_factory):
    folder = tmp_path_factory.mktemp(f"list-{request.param}")
    doc = listing if request.param == "digital" else listing.scan(folder / "numbered_list.pdf")
    code = main(["parse", str(doc.pdf_path), "-o", str(folder / "out"), "--format", FORMATS, "-q"])
    assert code == 0
    stem = doc.pdf_path.stem
    out = folder / "out"
    return doc, request.param, {fmt: out / f"{stem}{ext}" for fmt, ext in (
        ("md", ".md"), ("json", ".json"), ("txt", ".txt"), ("chunks", ".chunks.jsonl"), ("docling", ".docling.json"))}


def _starts(text: str) -> list[int]:
    """The numbers of the items that start in ``text`` (a line "N. …")."""
    return [int(m.group(1)) for m in re.finditer(r"(?m)^\s*(?:- )?(\d{1,2})\s*[.,]\s", text)]


def test_each_page_keeps_its_items_in_the_text_and_the_cut_item_is_joined_once(list_run):
    doc, kind, out = list_run
    pages = out["txt"].read_text(encoding="utf-8").split(PAGE_SEPARATOR)
    assert len(pages) == 3 and all(p.strip() for p in pages)          # no page comes out empty
    assert [_starts(p) for p in pages] == [doc.items_on(n) for n in (1, 2, 3)]
    cut = next(n for n, p in enumerate(doc.pages, start=1) if len(p) > 1)
    item = _alnum(doc.items[cut - 1])
    whole = _alnum(pages[0])
    if kind == "digital":
        assert item in whole                                            # joined on its first page
    else:
        assert item[-30:] in whole                                      # its end too (OCR: a tolerance on the rest)
    first = pages[1].strip().splitlines()[0]                          # and only there: page 2 starts with its
    assert _starts(first) == doc.items_on(2)[:1], first                # first new item


def test_the_json_keeps_the_list_s_parts_on_their_pages(list_run):
    doc, kind, out = list_run
    document = Document.model_validate_json(out["json"].read_text(encoding="utf-8"))
    assert {p.text_source.value for p in document.pages} == {"ocr" if kind == "scan" else "text_layer"}
    lists = [(p.number, b) for p in document.pages for b in p.blocks if b.kind is BlockKind.LIST]
    assert [n for n, _ in lists] == [1, 2, 3]
    assert [b.continues for _, b in lists] == [None, lists[0][1].id, lists[1][1].id]
    assert [b.source_pages for _, b in lists] == [[1, 2], [2], [3]]


def test_markdown_has_one_list_with_every_item_in_order(list_run):
    doc, kind, out = list_run
    md = out["md"].read_text(encoding="utf-8")
    run = re.search(r"(?m)^- 1\..*(?:\n- .*)*", md).group(0)          # consecutive "- " lines: one list
    assert _starts(run) == list(range(1, 16))
    assert md.index("<!-- page 2 -->") > md.index(run) + len(run) - 1


def test_chunks_give_the_pages_their_text_is_printed_on(list_run):
    doc, kind, out = list_run
    chunks = [json.loads(line) for line in out["chunks"].read_text(encoding="utf-8").splitlines()]
    for chunk in chunks:
        starts = _starts(chunk["text"])
        printed = sorted({p for n in starts for p in doc.pages[n - 1]})
        if starts:
            assert chunk["pages"][0] <= printed[0] and chunk["pages"][1] >= printed[-1]
            assert chunk["pages"][1] - chunk["pages"][0] <= 1, chunk["pages"]  # not every page of the list
    assert {p for c in chunks for p in range(c["pages"][0], c["pages"][1] + 1)} == {1, 2, 3}


docling_core = pytest.importorskip("docling_core", reason="docling-core is not installed (the test extra has it)")
from docling_core.types.doc import DoclingDocument  # noqa: E402


def test_docling_has_one_list_whose_items_have_their_own_pages(list_run):
    doc, kind, out = list_run
    docling = DoclingDocument.model_validate_json(out["docling"].read_text(encoding="utf-8"))
    lists = [g for g in docling.groups if g.label.value == "list"]
    assert len(lists) == 1
    items = [ref.resolve(docling) for ref in lists[0].children]
    assert _starts("\n".join(i.text for i in items)) == list(range(1, 16))
    pages = [sorted({p.page_no for p in i.prov}) for i in items]
    assert pages == doc.pages


# --- a table over three pages ------------------------------------------------------------


@pytest.fixture(scope="module")
def table_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("table-3")
    doc = table_across_pages(folder, pages=3)
    code = main(["parse", str(doc.pdf_path), "-o", str(folder / "out"), "--format", FORMATS, "-q"])
    assert code == 0
    out = folder / "out"
    stem = doc.pdf_path.stem
    return doc, {fmt: out / f"{stem}{ext}" for fmt, ext in (
        ("md", ".md"), ("json", ".json"), ("txt", ".txt"), ("chunks", ".chunks.jsonl"), ("docling", ".docling.json"))}


def _codes(text: str) -> list[str]:
    return re.findall(r"A-1\d{3}", text)


def test_a_table_over_three_pages_keeps_its_rows_on_their_pages(table_run):
    doc, out = table_run
    truth = doc.truth.tables[0]
    document = Document.model_validate_json(out["json"].read_text(encoding="utf-8"))
    parts = [(p.number, b) for p in document.pages for b in p.blocks if b.kind is BlockKind.TABLE]
    assert [n for n, _ in parts] == [1, 2, 3]
    assert [b.continues for _, b in parts] == [None, parts[0][1].id, parts[1][1].id]
    assert all({c.page for c in b.cells} == {n} for n, b in parts)                    # TableCell.page
    pages = out["txt"].read_text(encoding="utf-8").split(PAGE_SEPARATOR)
    printed = [_codes(t) for t in doc.doc.main_text_per_page]
    assert [_codes(p) for p in pages] == printed                                      # each page its own rows
    header = " ".join(t for r, _, _, _, t in truth.cells if r == 0)
    assert sum(normalize_ws(p).count(header.split()[1]) for p in pages) == 1           # the header once


def test_a_table_over_three_pages_is_one_table_in_markdown_and_docling(table_run):
    doc, out = table_run
    md = out["md"].read_text(encoding="utf-8")
    rows = re.search(r"(?m)^\| Code .*(?:\n\|.*)*", md).group(0)
    assert _codes(rows) == _codes(doc.doc.main_text) and sum(r.startswith("| --- |") for r in rows.splitlines()) == 1
    docling = DoclingDocument.model_validate_json(out["docling"].read_text(encoding="utf-8"))
    (table,) = docling.tables
    assert sorted({p.page_no for p in table.prov}) == [1, 2, 3]
    assert _codes(" ".join(c.text for c in table.data.table_cells)) == _codes(doc.doc.main_text)
    assert [ref.resolve(docling).text for ref in table.captions] == [doc.truth.captions[0]]
    heights = {n: docling.pages[n].size.height for n in docling.pages}
    for p in table.prov:   # each page's box on that page
        assert 0 < p.bbox.b < p.bbox.t <= heights[p.page_no]
