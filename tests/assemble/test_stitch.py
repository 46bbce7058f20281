"""Cross-page stitching of paragraphs and lists."""

from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

from longdoc.assemble import stitch, stitched_page
from longdoc.model import BBox, Block, BlockKind, ErrorInfo, Line, Page, PageStatus

K = BlockKind


def _block(page: int, n: int, kind: BlockKind, text: str, *, anchor: str | None = None) -> Block:
    rows = text.split("\n")
    lines = [
        Line(text=row, bbox=BBox(x0=72, y0=90 + 12 * i + 100 * n, x1=300, y1=100 + 12 * i + 100 * n), confidence=1.0, page=page)
        for i, row in enumerate(rows)
    ]
    return Block(
        id=f"p{page}-b{n}", kind=kind, bbox=BBox.enclosing([l.bbox for l in lines]), order=n, text=text,
        lines=lines, source_pages=[page], anchor=anchor,
    )


def _page(number: int, *blocks: tuple[BlockKind, str], failed: bool = False) -> Page:
    if failed:
        return Page(number=number, width=612, height=792, status=PageStatus.FAILED,
                    error=ErrorInfo(code="engine_failed", message="boom", page=number))
    return Page(number=number, width=612, height=792,
                blocks=[_block(number, n, kind, text) for n, (kind, text) in enumerate(blocks)])


def _main(page: Page) -> list[str]:
    return [b.text for b in page.main_blocks()]


def test_paragraph_broken_mid_sentence_is_joined_on_its_first_page():
    p1 = _page(1, (K.HEADER, "Journal"), (K.PARAGRAPH, "The results of the"), (K.PAGE_NUMBER, "1"))
    p2 = _page(2, (K.HEADER, "Journal"), (K.PARAGRAPH, "experiment were clear."), (K.PARAGRAPH, "Next one."),
               (K.PAGE_NUMBER, "2"))
    out = list(stitch([p1, p2]))
    assert [p.number for p in out] == [1, 2]
    merged = out[0].blocks[1]
    assert merged.text == "The results of the experiment were clear."
    assert merged.source_pages == [1, 2]
    assert [l.page for l in merged.lines] == [1, 2]
    assert merged.id == "p1-b1"
    assert _main(out[1]) == ["Next one."]
    assert sorted(b.order for b in out[1].blocks) == [0, 1, 2]
    # inputs are not modified
    assert p1.blocks[1].text == "The results of the" and len(p2.blocks) == 4


@pytest.mark.parametrize(
    ("tail", "head", "joined"),
    [
        ("a word broken by hyphen-", "ation goes on.", "a word broken by hyphenation goes on."),
        ("a word broken by hyphen-", "Ation goes on.", "a word broken by hyphen-Ation goes on."),
        ("长文档识别需要稳定的", "内存，每一页都按照阅读顺序输出。", "长文档识别需要稳定的内存，每一页都按照阅读顺序输出。"),
    ],
)
def test_hyphenated_and_cjk_continuations(tail, head, joined):
    out = list(stitch([_page(1, (K.PARAGRAPH, tail)), _page(2, (K.PARAGRAPH, head))]))
    assert _main(out[0]) == [joined]
    assert _main(out[1]) == []


@pytest.mark.parametrize(
    ("tail", "head"),
    [
        ("A finished sentence.", "the next starts lowercase anyway."),  # sentence ended
        ("No end here", "But a capital starts anew."),
        ("长文档识别需要稳定的内存。", "每一页都按照阅读顺序输出。"),  # CJK full stop
        ("Things to bring", "• a hat"),  # a list after a paragraph
    ],
)
def test_no_join_when_the_text_does_not_run_on(tail, head):
    head_kind = K.LIST if head.startswith("•") else K.PARAGRAPH
    out = list(stitch([_page(1, (K.PARAGRAPH, tail)), _page(2, (head_kind, head))]))
    assert _main(out[0]) == [tail]
    assert _main(out[1]) == [head]


def test_headings_figures_and_footnotes_are_looked_past_or_block():
    # page 1 ends with a footnote after the paragraph; page 2 starts with a figure
    p1 = _page(1, (K.PARAGRAPH, "the paragraph goes"), (K.FOOTNOTE, "1 A note."))
    p2 = _page(2, (K.FIGURE, ""), (K.CAPTION, "Figure 2: A plot."), (K.PARAGRAPH, "on after the figure."))
    out = list(stitch([p1, p2]))
    assert _main(out[0]) == ["the paragraph goes on after the figure.", "1 A note."]
    assert _main(out[1]) == ["", "Figure 2: A plot."]
    # a heading at the top of the next page is not a continuation
    out = list(stitch([_page(1, (K.PARAGRAPH, "ends with no stop")), _page(2, (K.HEADING, "results"))]))
    assert _main(out[0]) == ["ends with no stop"] and _main(out[1]) == ["results"]


def test_a_list_item_cut_by_the_break_is_joined_once_and_later_items_stay_on_their_page():
    p1 = _page(1, (K.LIST, "• flour\n• sugar and"))
    p2 = _page(2, (K.PARAGRAPH, "a pinch of salt"), (K.LIST, "• eggs\n• milk"))
    out = list(stitch([p1, p2]))
    assert _main(out[0]) == ["• flour\n• sugar and a pinch of salt"]
    assert out[0].blocks[0].source_pages == [1, 2]
    (rest,) = out[1].main_blocks()
    assert rest.text == "• eggs\n• milk" and rest.continues == "p1-b0" and rest.source_pages == [2]

    out = list(stitch([_page(1, (K.LIST, "• flour\n• sugar.")), _page(2, (K.LIST, "• eggs"), (K.PARAGRAPH, "Done."))]))
    assert _main(out[0]) == ["• flour\n• sugar."]
    assert _main(out[1]) == ["• eggs", "Done."]
    assert [b.continues for b in out[1].main_blocks()] == ["p1-b0", None]
    assert out[0].blocks[0].continues is None


def test_a_list_over_three_pages_keeps_each_page_s_items_as_parts_of_one_list():
    pages = [
        _page(1, (K.PARAGRAPH, "Steps:"), (K.LIST, "1. one\n2. two"), (K.PAGE_NUMBER, "1")),
        _page(2, (K.HEADER, "Guide"), (K.LIST, "3. three\n4. four"), (K.PAGE_NUMBER, "2")),
        _page(3, (K.LIST, "5. five"), (K.PARAGRAPH, "That is all.")),
    ]
    out = list(stitch(pages))
    assert [_main(p) for p in out] == [["Steps:", "1. one\n2. two"], ["3. three\n4. four"], ["5. five", "That is all."]]
    assert [b.continues for p in out for b in p.main_blocks()] == [None, None, "p1-b1", "p2-b1", None]
    assert all(b.source_pages == [p.number] for p in out for b in p.blocks)


def test_a_list_head_that_ends_the_cut_item_then_goes_on_is_split():
    p1 = _page(1, (K.LIST, "• flour\n• sugar and"))
    p2 = _page(2, (K.LIST, "a pinch of salt\n• eggs"))   # one block: the piece, then an item
    out = list(stitch([p1, p2]))
    assert _main(out[0]) == ["• flour\n• sugar and a pinch of salt"]
    assert [(l.page, l.text) for l in out[0].blocks[0].lines][-1] == (2, "a pinch of salt")
    (rest,) = out[1].main_blocks()
    assert (rest.text, rest.continues, [l.text for l in rest.lines]) == ("• eggs", "p1-b0", ["• eggs"])
    assert rest.bbox == rest.lines[0].bbox


def test_failed_pages_and_page_gaps_break_the_chain():
    pages = [_page(1, (K.PARAGRAPH, "runs on and")), _page(2, failed=True), _page(3, (K.PARAGRAPH, "never joins"))]
    out = list(stitch(pages))
    assert [(p.number, p.status) for p in out] == [(1, PageStatus.OK), (2, PageStatus.FAILED), (3, PageStatus.OK)]
    assert _main(out[0]) == ["runs on and"] and _main(out[2]) == ["never joins"]
    # pages 1 and 3 of a page range that skips 2
    out = list(stitch([pages[0], pages[2]]))
    assert _main(out[0]) == ["runs on and"] and _main(out[1]) == ["never joins"]


def test_chain_over_three_pages_when_the_middle_page_holds_only_the_paragraph():
    pages = [
        _page(1, (K.PARAGRAPH, "Start of a very long"), (K.PAGE_NUMBER, "1")),
        _page(2, (K.HEADER, "Journal"), (K.PARAGRAPH, "paragraph that fills the whole page and"), (K.PAGE_NUMBER, "2")),
        _page(3, (K.PARAGRAPH, "ends here."), (K.PARAGRAPH, "Another paragraph.")),
    ]
    out = list(stitch(pages))
    assert [p.number for p in out] == [1, 2, 3]
    assert _main(out[0]) == ["Start of a very long paragraph that fills the whole page and ends here."]
    assert out[0].blocks[0].source_pages == [1, 2, 3]
    assert [b.kind for b in sorted(out[1].blocks, key=lambda b: b.order)] == [K.HEADER, K.PAGE_NUMBER]
    assert [b.order for b in sorted(out[1].blocks, key=lambda b: b.order)] == [0, 1]
    assert _main(out[2]) == ["Another paragraph."]


def test_stitch_is_lazy_and_holds_a_bounded_number_of_pages():
    """A 1,000-page paragraph: pages come out while the input is still being
    read, never more than ``max_chain_pages`` behind."""
    pulled = 0

    def source():
        nonlocal pulled
        for n in range(1, 1001):
            pulled += 1
            yield _page(n, (K.PARAGRAPH, "and so it goes on"))

    for page in stitch(source(), max_chain_pages=8):
        assert pulled - page.number <= 8


def test_side_note_anchored_to_the_moved_block_follows_it():
    p1 = _page(1, (K.PARAGRAPH, "the text runs"))
    p2 = Page(number=2, width=612, height=792, blocks=[
        _block(2, 0, K.PARAGRAPH, "on here."),
        _block(2, 1, K.SIDENOTE, "A margin note.", anchor="p2-b0"),
        _block(2, 2, K.PARAGRAPH, "Next."),
    ])
    out = list(stitch([p1, p2]))
    note = next(b for b in out[1].blocks if b.kind is K.SIDENOTE)
    assert note.anchor == "p1-b0" and note.order == 0


# --- property: nothing lost, nothing duplicated, every page once, in order -------

_TEXTS = st.sampled_from([
    "a sentence that ends.", "runs on and", "broken hyphen-", "ation here", "lowercase start", "Capital start",
    "长文档识别", "需要稳定。", "• item one", "• item two.", "", "3",
])
_KINDS = st.sampled_from([K.PARAGRAPH, K.PARAGRAPH, K.LIST, K.HEADING, K.HEADER, K.PAGE_NUMBER, K.FOOTNOTE,
                          K.SIDENOTE, K.FIGURE])


@st.composite
def _documents(draw):
    n = draw(st.integers(min_value=0, max_value=8))
    numbers = sorted(draw(st.sets(st.integers(min_value=1, max_value=12), min_size=n, max_size=n)))
    pages = []
    for number in numbers:
        if draw(st.integers(min_value=0, max_value=6)) == 0:
            pages.append(_page(number, failed=True))
            continue
        blocks = draw(st.lists(st.tuples(_KINDS, _TEXTS), max_size=5))
        pages.append(_page(number, *blocks))
    return pages


def _chars(pages, attr):
    text = "".join(getattr(b, attr) if attr == "text" else "".join(l.text for l in b.lines)
                   for p in pages for b in p.blocks)
    return Counter(ch for ch in text if not ch.isspace() and ch != "-")


@settings(max_examples=200, deadline=None)
@given(_documents(), st.integers(min_value=2, max_value=4))
def test_stitching_preserves_pages_and_text(pages, max_chain):
    out = list(stitch(iter(pages), max_chain_pages=max_chain))
    assert [p.number for p in out] == [p.number for p in pages]
    assert [p.status for p in out] == [p.status for p in pages]
    # every line moved, none altered; block texts keep every character
    # (joining only drops hyphens and whitespace at seams)
    assert Counter(l.model_dump_json() for p in out for b in p.blocks for l in b.lines) == Counter(
        l.model_dump_json() for p in pages for b in p.blocks for l in b.lines
    )
    assert _chars(out, "text") == _chars(pages, "text")
    earlier: set[str] = set()
    for p in out:
        assert sorted(b.order for b in p.blocks) == list(range(len(p.blocks)))
        for b in p.blocks:
            assert b.source_pages == sorted({l.page for l in b.lines} | {p.number})
            assert b.source_pages[0] == p.number
            assert b.continues is None or (b.kind is K.LIST and b.continues in earlier)
        earlier |= {b.id for b in p.blocks}


# --- tables continued over a page break -------------------------------------------------


def _table(page: int, n: int, rows: list[list[str]]) -> Block:
    from longdoc.layout.tables import table_text
    from longdoc.model import TableCell

    cells = [TableCell(row=r, col=c, text=t) for r, row in enumerate(rows) for c, t in enumerate(row)]
    block = _block(page, n, K.TABLE, table_text(cells))
    return block.model_copy(update={"cells": cells})


def _table_page(number: int, *blocks: Block) -> Page:
    return Page(number=number, width=612, height=792,
                blocks=[b.model_copy(update={"order": n, "id": f"p{number}-b{n}"}) for n, b in enumerate(blocks)])


HEAD = ["Region", "Parcels", "Share"]


def _rows(table: Block) -> list[list[str]]:
    rows: dict[int, dict[int, str]] = {}
    for c in table.cells:
        rows.setdefault(c.row, {})[c.col] = c.text
    return [[rows[r][c] for c in sorted(rows[r])] for r in sorted(rows)]


def test_a_table_continued_over_three_pages_keeps_each_page_s_rows_as_parts_of_one_table():
    p1 = _table_page(1, _block(1, 0, K.PARAGRAPH, "Deliveries by region."),
                     _table(1, 1, [HEAD, ["North", "12", "3%"], ["South", "40", "9%"]]), _block(1, 2, K.FOOTER, "Page 1"))
    p2 = _table_page(2, _block(2, 0, K.HEADER, "Report"), _table(2, 1, [HEAD, ["East", "7", "2%"]]))
    p3 = _table_page(3, _table(3, 0, [HEAD, ["West", "3", "1%"], ["Isles", "1", "0%"]]),
                     _block(3, 1, K.PARAGRAPH, "That is all."))
    out = list(stitch([p1, p2, p3]))
    tables = [b for p in out for b in p.blocks if b.kind is K.TABLE]
    assert [(t.id, t.continues, t.source_pages) for t in tables] == [
        ("p1-b1", None, [1]), ("p2-b1", "p1-b1", [2]), ("p3-b0", "p2-b1", [3])]
    # the repeated header row left out of the later parts (page 3's too, though page 2's part starts with data)
    assert [_rows(t) for t in tables] == [[HEAD, ["North", "12", "3%"], ["South", "40", "9%"]], [["East", "7", "2%"]],
                                          [["West", "3", "1%"], ["Isles", "1", "0%"]]]
    assert [{c.page for c in t.cells} for t in tables] == [{1}, {2}, {3}]
    assert tables[2].text == "West\t3\t1%\nIsles\t1\t0%"
    assert _main(out[2]) == [tables[2].text, "That is all."]
    assert p1.blocks[1].cells[0].page is None       # inputs are not modified


def test_stitched_page_is_the_page_as_the_whole_document_s_stitching_leaves_it():
    pages = [
        _page(1, (K.PARAGRAPH, "Steps to take:"), (K.LIST, "1. one\n2. two and")),
        _page(2, (K.PARAGRAPH, "a half"), (K.LIST, "3. three\n4. four")),
        _page(3, (K.LIST, "5. five"), (K.PARAGRAPH, "The text runs")),
        _page(4, (K.PARAGRAPH, "on over the break."), (K.PARAGRAPH, "Done.")),
    ]
    pages += [_table_page(5, _table(5, 0, [HEAD, ["North", "12", "3%"]])),
              _table_page(6, _table(6, 0, [HEAD, ["East", "7", "2%"]])),
              _table_page(7, _table(7, 0, [HEAD, ["West", "3", "1%"]]))]
    whole = {p.number: p for p in stitch(pages)}
    by_number = {p.number: p for p in pages}
    for n in by_number:
        assert stitched_page(by_number.get, n) == whole[n], n
    assert stitched_page(by_number.get, 9) is None
    # page 2 before page 3 is done: its items are there, the join with page 3 comes once page 3 is
    assert stitched_page({1: pages[0], 2: pages[1]}.get, 2).main_blocks()[0].continues == "p1-b1"


def test_tables_with_different_columns_or_text_between_them_stay_apart():
    two = _table_page(2, _table(2, 0, [["a", "b"], ["1", "2"]]))
    p1 = _table_page(1, _table(1, 0, [HEAD, ["North", "12", "3%"]]))
    assert len([b for p in stitch([p1, two]) for b in p.blocks if b.kind is K.TABLE]) == 2
    p1 = _table_page(1, _table(1, 0, [HEAD, ["North", "12", "3%"]]), _block(1, 1, K.PARAGRAPH, "Notes follow."))
    p2 = _table_page(2, _table(2, 0, [HEAD, ["East", "7", "2%"]]))
    assert len([b for p in stitch([p1, p2]) for b in p.blocks if b.kind is K.TABLE]) == 2


def test_a_listing_continued_over_a_page_break_keeps_each_pages_lines_on_that_page():
    tail, head = "int main(void)\n{\n    int x = 0;", "    x = run(x);\n    return x;\n}"
    p1 = _page(1, (K.PARAGRAPH, "The program is short:"), (K.CODE, tail), (K.PAGE_NUMBER, "1"))
    p2 = _page(2, (K.CODE, head), (K.PARAGRAPH, "It returns what it ran."))
    out = list(stitch([p1, p2]))
    assert _main(out[0]) == ["The program is short:", tail]
    assert _main(out[1]) == [head, "It returns what it ran."]
    first, rest = out[0].main_blocks()[1], out[1].main_blocks()[0]
    assert first.source_pages == [1] and first.continues is None
    assert rest.kind is K.CODE and rest.continues == first.id and rest.source_pages == [2]
    assert [l.page for l in rest.lines] == [2, 2, 2]
    # a listing over three pages: each part names the one before it
    p3 = _page(3, (K.CODE, "/* the end */"))
    out = list(stitch([p1, _page(2, (K.CODE, head)), p3]))
    parts = [p.main_blocks()[-1] for p in out]
    assert [b.continues for b in parts] == [None, parts[0].id, parts[1].id]
    assert stitched_page({1: p1, 2: _page(2, (K.CODE, head)), 3: p3}.get, 3).main_blocks()[0].continues == "p2-b0"


@pytest.mark.parametrize(
    ("tail", "head"),
    [
        ((K.CODE, "x = run(x)"), (K.PARAGRAPH, "and then the result is printed.")),   # runs on, but code
        ((K.PARAGRAPH, "the result of the call"), (K.CODE, "print(x)")),
        ((K.LIST, "• step one"), (K.CODE, "- step two")),
    ],
)
def test_code_never_joins_or_continues_a_paragraph_or_a_list(tail, head):
    out = list(stitch([_page(1, tail), _page(2, head)]))
    assert _main(out[0]) == [tail[1]] and _main(out[1]) == [head[1]]
