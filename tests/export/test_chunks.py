"""Chunks for retrieval: structure, budget, page spans, no furniture, stable ids."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from longdoc.config import load_settings
from longdoc.export.chunks import ChunkWriter, count_tokens
from longdoc.model import BBox, Block, BlockKind, Document, Page, TableCell
from longdoc.pipeline import ParseOptions, Pipeline
from tests.docgen import english_report

BUDGET = 96


def parse(doc_path: Path, out: Path, budget: int = BUDGET) -> tuple[Document, list[dict]]:
    settings = load_settings(None, overrides={"inference": {"workers": 1, "ocr": "off"},
                                              "export": {"chunk_tokens": budget}})
    with Pipeline(settings) as pipeline:
        pipeline.parse(doc_path, out, ParseOptions.from_settings(settings, formats=("json", "chunks")))
    stem = doc_path.stem
    doc = Document.model_validate_json((out / f"{stem}.json").read_text())
    chunks = [json.loads(line) for line in (out / f"{stem}.chunks.jsonl").read_text().splitlines()]
    return doc, chunks


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("chunks")
    generated = english_report(folder, pages=6, seed=3)
    doc, chunks = parse(generated.pdf_path, folder / "a")
    _, again = parse(generated.pdf_path, folder / "b")
    return generated, doc, chunks, again


def body_blocks(doc: Document) -> list[Block]:
    return [b for page in doc.pages for b in page.main_blocks() if b.text.strip()]


def test_every_body_block_is_in_one_chunk_in_order(report):
    _, doc, chunks, _ = report
    blocks = body_blocks(doc)
    seen = [block_id for chunk in chunks for block_id in chunk["block_ids"]]
    assert list(dict.fromkeys(seen)) == [b.id for b in blocks]          # all of them, in reading order
    repeated = {b for b in seen if seen.count(b) > 1}
    for block in blocks:                                              # only a block over the budget is split
        if block.id in repeated:
            assert count_tokens(block.text) > BUDGET
    assert [c["index"] for c in chunks] == list(range(len(chunks)))


def test_no_chunk_is_over_the_budget_and_none_carries_furniture(report):
    generated, _, chunks, _ = report
    assert all(c["tokens"] <= BUDGET and count_tokens(c["text"]) <= BUDGET for c in chunks)
    furniture = {text for page in generated.furniture for text in page}
    assert furniture
    for chunk in chunks:
        for text in furniture:
            assert text not in chunk["text"]
        assert not set(chunk["kinds"]) & {"header", "footer", "page_number"}


def _alnum(text: str) -> str:
    return "".join(ch for ch in text if ch.isalnum())


def test_page_spans_are_the_pages_the_chunk_s_text_is_printed_on(report):
    _, doc, chunks, _ = report
    by_id = {b.id: b for b in body_blocks(doc)}
    printed: dict[int, str] = {}
    for line in (l for p in doc.pages for b in p.blocks for l in b.lines):
        printed[line.page] = printed.get(line.page, "") + _alnum(line.text)
    for chunk in chunks:
        first, last = chunk["pages"]
        text = _alnum(chunk["text"])
        assert text[:24] in printed[first] and text[-24:] in printed[last], chunk["text"][:80]
        pages = {p for block_id in chunk["block_ids"] for p in by_id[block_id].source_pages}
        assert min(pages) <= first <= last <= max(pages)
    assert any(c["pages"][1] > c["pages"][0] for c in chunks)     # the list and the hyphenated word cross breaks
    assert "continuation" in " ".join(c["text"] for c in chunks)   # de-hyphenated across the break


def test_headings_start_chunks_and_give_their_path(report):
    _, doc, chunks, _ = report
    headings = [b for b in body_blocks(doc) if b.kind in (BlockKind.TITLE, BlockKind.HEADING)]
    starts = {c["block_ids"][0] for c in chunks}
    for heading in headings:
        assert heading.id in starts, heading.text
    overview = next(c for c in chunks if "Overview" in c["headings"])
    assert overview["headings"][0] == headings[0].text                 # under the title
    last = chunks[-1]
    assert last["headings"][-1] == headings[-1].text


def test_ids_are_stable_and_unique(report):
    _, _, chunks, again = report
    assert [c["id"] for c in chunks] == [c["id"] for c in again]
    assert len({c["id"] for c in chunks}) == len(chunks)
    assert [c["text"] for c in chunks] == [c["text"] for c in again]


def _page(blocks: list[Block]) -> Page:
    return Page(number=1, width=600, height=800, blocks=blocks)


def _block(i: int, kind: BlockKind, text: str, **extra) -> Block:
    return Block(id=f"b{i}", kind=kind, bbox=BBox(x0=0, y0=i, x1=10, y1=i + 1), order=i, text=text,
                 source_pages=[1], **extra)


def _chunks(page: Page, budget: int) -> list[dict]:
    out = io.StringIO()
    writer = ChunkWriter(out, "0" * 64, budget)
    writer.write_page(page)
    writer.close()
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_a_long_paragraph_is_cut_between_sentences():
    sentences = [f"Sentence number {i} says something about the quarterly results of the company." for i in range(40)]
    chunks = _chunks(_page([_block(0, BlockKind.PARAGRAPH, " ".join(sentences))]), 50)
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk["tokens"] <= 50 and chunk["block_ids"] == ["b0"]
        assert re.fullmatch(r"(Sentence number \d+ says something about the quarterly results of the company\. ?)+",
                            chunk["text"])
    assert " ".join(c["text"] for c in chunks) == " ".join(sentences)


def test_a_long_table_is_cut_between_rows_each_part_with_the_header_row():
    cells = [TableCell(row=0, col=c, text=f"Heading {c}") for c in range(3)]
    cells += [TableCell(row=r, col=c, text=f"value {r}.{c}") for r in range(1, 61) for c in range(3)]
    chunks = _chunks(_page([_block(0, BlockKind.TABLE, "table", cells=cells)]), 80)
    assert len(chunks) > 2
    rows_seen = []
    for chunk in chunks:
        lines = chunk["text"].splitlines()
        assert chunk["tokens"] <= 80
        assert lines[0] == "| Heading 0 | Heading 1 | Heading 2 |" and set(lines[1]) <= set("|- ")
        for line in lines[2:]:
            first = re.match(r"\| value (\d+)\.0 \| value \1\.1 \| value \1\.2 \|$", line)
            assert first, line                                         # never a row cut in two
            rows_seen.append(int(first.group(1)))
    assert rows_seen == list(range(1, 61))


def test_a_heading_right_after_a_heading_shares_its_chunk():
    chunks = _chunks(_page([
        _block(0, BlockKind.TITLE, "Report"), _block(1, BlockKind.HEADING, "Part one", level=1),
        _block(2, BlockKind.PARAGRAPH, "Text of part one."), _block(3, BlockKind.HEADING, "Part two", level=1),
        _block(4, BlockKind.HEADING, "Detail", level=2), _block(5, BlockKind.PARAGRAPH, "Text of the detail."),
    ]), 500)
    assert [c["block_ids"] for c in chunks] == [["b0", "b1", "b2"], ["b3", "b4", "b5"]]
    assert [c["headings"] for c in chunks] == [["Report", "Part one"], ["Report", "Part two", "Detail"]]


def test_token_estimate_leans_high_for_english_and_counts_cjk_per_character():
    text = "The quarterly results improved considerably, compared with the previous year."
    assert count_tokens(text) >= len(text.split())          # never fewer than the words
    assert count_tokens("长文档解析") == 5


def test_a_long_list_is_cut_between_items_and_stays_a_list():
    items = [f"- Item {i}: the company opened a new distribution centre in the region" for i in range(30)]
    chunks = _chunks(_page([_block(0, BlockKind.LIST, "\n".join(items))]), 60)
    assert len(chunks) > 1
    assert [line for c in chunks for line in c["text"].split("\n")] == items
