"""A code listing in a born-digital PDF comes out as code in every export.

The PDF is generated with fpdf2 (prose in DejaVu Sans, the listing in
DejaVu Sans Mono, an inline monospace word in the prose after it) and
parsed by the real pipeline from its text layer.
"""

from __future__ import annotations

import io
import json

import pytest

from longdoc.config import load_settings
from longdoc.export.chunks import ChunkWriter, count_tokens
from longdoc.export.markdown import block_markdown, code_markdown
from longdoc.export.text import PAGE_SEPARATOR, page_text
from longdoc.model import BBox, Block, BlockKind, Document, Line, Page
from longdoc.pipeline import ParseOptions, Pipeline
from tests.docgen import code_listing

FORMATS = ("json", "md", "txt", "chunks", "docling")


def _parse(folder, generated):
    settings = load_settings(None, overrides={"inference": {"workers": 1, "ocr": "off"}})
    with Pipeline(settings) as pipeline:
        pipeline.parse(generated.pdf_path, folder / "out", ParseOptions.from_settings(settings, formats=FORMATS))
    out = {fmt: (folder / "out" / f"code_listing{suffix}").read_text(encoding="utf-8")
           for fmt, suffix in (("json", ".json"), ("md", ".md"), ("txt", ".txt"), ("chunks", ".chunks.jsonl"),
                               ("docling", ".docling.json"))}
    return generated, Document.model_validate_json(out["json"]), out


@pytest.fixture(scope="module")
def parsed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("code")
    return _parse(folder, code_listing(folder))


#: the listing's rows that end page 1 of the two-page document (its comment block included)
ON_PAGE_1 = 7


@pytest.fixture(scope="module")
def across(tmp_path_factory):
    folder = tmp_path_factory.mktemp("code-across")
    return _parse(folder, code_listing(folder, break_after=ON_PAGE_1))


def test_the_listing_is_one_code_block_with_its_lines_and_indentation(parsed):
    generated, doc, _ = parsed
    blocks = doc.pages[0].main_blocks()
    code = [b for b in blocks if b.kind is BlockKind.CODE]
    assert len(code) == 1
    assert code[0].text == generated.listing
    assert all(line.pitch is not None for line in code[0].lines)


def test_the_prose_around_it_stays_paragraphs(parsed):
    generated, doc, _ = parsed
    blocks = doc.pages[0].main_blocks()
    assert [(b.kind, b.text) for b in blocks[1:]] == [
        (BlockKind.PARAGRAPH, generated.before),
        (BlockKind.CODE, generated.listing),
        (BlockKind.PARAGRAPH, generated.after),               # the inline \foo stays in its paragraph
    ]
    assert blocks[0].text == generated.heading and blocks[0].kind in (BlockKind.TITLE, BlockKind.HEADING)


def test_markdown_fences_the_listing(parsed):
    generated, _, out = parsed
    assert f"\n```\n{generated.listing}\n```\n" in out["md"]
    assert generated.after in out["md"]


def test_plain_text_keeps_the_lines_as_they_are(parsed):
    generated, _, out = parsed
    assert f"{generated.before}\n\n{generated.listing}\n\n{generated.after}" in out["txt"]


def test_chunks_keep_the_listing_whole_as_code(parsed):
    generated, doc, out = parsed
    chunks = [json.loads(line) for line in out["chunks"].splitlines()]
    code_id = next(b.id for b in doc.pages[0].blocks if b.kind is BlockKind.CODE)
    holding = [c for c in chunks if code_id in c["block_ids"]]
    assert len(holding) == 1 and "code" in holding[0]["kinds"]
    assert f"```\n{generated.listing}\n```" in holding[0]["text"]


def test_docling_has_a_code_item_and_validates(parsed):
    docling = pytest.importorskip("docling_core", reason="docling-core is not installed")
    from docling_core.transforms.chunker.hierarchical_chunker import HierarchicalChunker
    from docling_core.types.doc import DoclingDocument

    assert docling
    generated, _, out = parsed
    doc = DoclingDocument.model_validate_json(out["docling"])
    code = [t for t in doc.texts if t.label.value == "code"]
    assert len(code) == 1 and type(code[0]).__name__ == "CodeItem"
    assert code[0].text == generated.listing
    assert f"```\n{generated.listing}\n```" in doc.export_to_markdown()
    assert any(generated.listing in c.text for c in HierarchicalChunker().chunk(doc))


# --- the writers on their own ---------------------------------------------------------------


def _code_block(text: str, order: int = 0) -> Block:
    lines = [Line(text=row.strip() or "x", bbox=BBox(x0=72, y0=100 + 12 * i, x1=300, y1=110 + 12 * i),
                  confidence=1.0, page=1, pitch=5.4) for i, row in enumerate(text.split("\n"))]
    return Block(id=f"p1-b{order}", kind=BlockKind.CODE, bbox=BBox.enclosing([l.bbox for l in lines]), order=order,
                 text=text, lines=lines, source_pages=[1])


def test_the_fence_is_longer_than_any_backtick_run_inside():
    assert code_markdown("echo `date`\nprint(```)") == "````\necho `date`\nprint(```)\n````"
    assert block_markdown(_code_block("    indented first line\nnext")) == "```\n    indented first line\nnext\n```"


def test_plain_text_keeps_the_first_lines_indentation():
    page = Page(number=1, width=600, height=800, blocks=[_code_block("    x = 1\ny = 2")])
    assert page_text(page) == "    x = 1\ny = 2"


def test_a_listing_over_the_budget_is_split_between_lines_each_part_fenced():
    rows = [f"    value_{i} = compute(value_{i - 1}, {i});  # step {i}" for i in range(1, 41)]
    block = _code_block("\n".join(rows))
    budget = 64
    assert count_tokens(block_markdown(block)) > budget
    buffer = io.StringIO()
    writer = ChunkWriter(buffer, "ab" * 32, budget)
    writer.write_page(Page(number=1, width=600, height=800, blocks=[block]))
    writer.close()
    chunks = [json.loads(line) for line in buffer.getvalue().splitlines()]
    assert len(chunks) > 1
    assert all(c["kinds"] == ["code"] and c["tokens"] <= budget for c in chunks)
    parts = [c["text"] for c in chunks]
    assert all(p.startswith("```\n") and p.endswith("\n```") for p in parts)
    assert [row for p in parts for row in p.split("\n")[1:-1]] == rows      # every line, whole, in order


def test_a_listing_over_a_page_break_keeps_each_page_s_lines_on_that_page(across):
    generated, doc, out = across
    rows = generated.listing.split("\n")
    head, tail = "\n".join(rows[:ON_PAGE_1]).rstrip("\n"), "\n".join(rows[ON_PAGE_1:])
    code = [[b for b in page.main_blocks() if b.kind is BlockKind.CODE] for page in doc.pages]
    assert [[b.text for b in blocks] for blocks in code] == [[head], [tail]]
    first, rest = code[0][0], code[1][0]
    assert rest.continues == first.id and first.continues is None
    assert first.source_pages == [1] and rest.source_pages == [2]
    pages = out["txt"].split(PAGE_SEPARATOR)
    assert len(pages) == 2 and head in pages[0] and tail in pages[1] and generated.after in pages[1]
    # Markdown: one fence, the page-2 marker after it
    md = out["md"]
    assert f"\n```\n{generated.listing.strip()}\n```\n" in md and md.count("```") == 2
    assert md.index("<!-- page 2 -->") > md.index(rows[-1]) and md.index("<!-- page 2 -->") < md.index(generated.after)
    chunks = [json.loads(line) for line in out["chunks"].splitlines()]
    assert {p for c in chunks if rest.id in c["block_ids"] for p in range(c["pages"][0], c["pages"][1] + 1)} >= {2}
