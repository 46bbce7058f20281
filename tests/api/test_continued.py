"""A numbered list and a table continued over three pages, through the API
in process: ``GET /v1/jobs/{id}/pages/{n}`` (what the console's viewer
shows) holds each page's own items or rows, marked as continuing the part
on the page before, as the text result's page n does; the results have one
list and one table where they join parts (Markdown, docling)."""

from __future__ import annotations

import re

import pytest

from longdoc.export.text import PAGE_SEPARATOR, page_text
from longdoc.model import BlockKind, Page
from tests.docgen.continued import numbered_list
from tests.docgen.layouts import table_across_pages
from tests.service.helpers import accepted, submit, wait_terminal

OPTIONS = {"formats": ["md", "json", "txt", "chunks", "docling"], "ocr": "off", "regions": False}


def _starts(text: str) -> list[int]:
    return [int(m.group(1)) for m in re.finditer(r"(?m)^(?:- )?(\d{1,2})\. ", text)]


@pytest.fixture(scope="module")
def key(server):
    return server.create_key("continued")


def _run(server, key, path):
    with server.http(key) as http:
        job = wait_terminal(http, accepted(submit(http, path, OPTIONS))["id"])
        assert job["state"] == "succeeded", job
        pages = []
        for n in (1, 2, 3):
            r = http.get(f"/v1/jobs/{job['id']}/pages/{n}")
            assert r.status_code == 200, r.text
            pages.append(Page.model_validate(r.json()))
        md_page = http.get(f"/v1/jobs/{job['id']}/pages/2", params={"format": "md"}).text
        results = {fmt: http.get(f"/v1/jobs/{job['id']}/result", params={"format": fmt}).text
                   for fmt in ("md", "txt", "docling")}
    return pages, md_page, results


def test_each_page_of_a_list_shows_its_own_items(server, key, tmp_path):
    doc = numbered_list(tmp_path)
    pages, md_page, results = _run(server, key, doc.pdf_path)
    assert [_starts(page_text(p)) for p in pages] == [doc.items_on(n) for n in (1, 2, 3)]
    lists = [next(b for b in p.main_blocks() if b.kind is BlockKind.LIST) for p in pages]
    assert [b.continues for b in lists] == [None, lists[0].id, lists[1].id]
    assert lists[0].source_pages == [1, 2]                       # the item cut by the break, joined there
    # the page as the API gives it is the text result's page
    assert [page_text(p) for p in pages] == [t.strip("\n") for t in results["txt"].split(PAGE_SEPARATOR)]
    assert _starts(md_page) == doc.items_on(2)
    run = re.search(r"(?m)^- 1\..*(?:\n- .*)*", results["md"]).group(0)
    assert _starts(run) == list(range(1, 16))                    # one list in the Markdown result
    assert results["docling"].count('"label": "list"') == 1


def test_each_page_of_a_table_shows_its_own_rows(server, key, tmp_path):
    doc = table_across_pages(tmp_path, pages=3)
    pages, md_page, results = _run(server, key, doc.pdf_path)
    tables = [next(b for b in p.blocks if b.kind is BlockKind.TABLE) for p in pages]
    assert [b.continues for b in tables] == [None, tables[0].id, tables[1].id]
    assert [{c.page for c in b.cells} for b in tables] == [{1}, {2}, {3}]
    codes = [re.findall(r"A-1\d{3}", t) for t in doc.doc.main_text_per_page]
    assert [re.findall(r"A-1\d{3}", page_text(p)) for p in pages] == codes
    assert re.findall(r"A-1\d{3}", md_page) == codes[1] and "| Code |" not in md_page
    assert sum(line.startswith("| --- |") for line in results["md"].splitlines()) == 1
    assert results["docling"].count('"label": "table"') == 1
