"""layout_page: blocks, reading order over columns, side notes, furniture."""

import random

import pytest
from hypothesis import given, settings, strategies as st

from longdoc.layout import find_furniture, layout_page
from longdoc.model import BBox, BlockKind, Line

from .synth import (
    FULL,
    LEFT,
    PARAGRAPHS,
    PITCH,
    RIGHT,
    Column,
    journal_page,
    line,
    page_of,
    raster,
)


def _laid_out(rec, neighbors=()):
    blocks = layout_page(rec, find_furniture(rec, list(neighbors)))
    return rec.model_copy(update={"blocks": blocks, "lines": []})


def _texts(page):
    return [b.text for b in page.main_blocks()]


# --- the journal: two columns, margin note, running header, folio -------------


@pytest.fixture(scope="module")
def journal():
    built = [journal_page(n, seed=n) for n in range(1, 6)]
    recs = [rec for rec, _ in built]
    pages = []
    for rec in recs:
        neighbors = [r for r in recs if r is not rec and abs(r.number - rec.number) <= 2]
        pages.append(_laid_out(rec, neighbors))
    return pages, [expected for _, expected in built]


def test_columns_read_one_after_the_other_with_the_note_after_its_paragraph(journal):
    pages, expected = journal
    for page, exp in zip(pages, expected):
        body = exp["body"]
        wanted = [*body[:5], exp["note"][0], body[5]]
        if page.number == 1:
            wanted.insert(0, "Reading Order in Long Documents")
        assert _texts(page) == wanted


def test_margin_note_is_a_sidenote_anchored_to_the_paragraph_beside_it(journal):
    pages, expected = journal
    for page, exp in zip(pages, expected):
        notes = [b for b in page.blocks if b.kind is BlockKind.SIDENOTE]
        assert len(notes) == 1
        anchor = next(b for b in page.blocks if b.id == notes[0].anchor)
        assert anchor.text == exp["body"][4]
        assert notes[0].order == anchor.order + 1


def test_furniture_blocks_stay_in_the_page_but_out_of_the_main_text(journal):
    pages, _ = journal
    for page in pages:
        kinds = {b.kind: b for b in page.blocks if b.kind in (BlockKind.HEADER, BlockKind.PAGE_NUMBER)}
        assert kinds[BlockKind.HEADER].text == "Journal of Examples 2026"
        assert kinds[BlockKind.PAGE_NUMBER].text == str(page.number)
        main = page.main_blocks()
        assert all(b.kind not in (BlockKind.HEADER, BlockKind.FOOTER, BlockKind.PAGE_NUMBER) for b in main)
        # header first, folio last, body in between
        orders = sorted(page.blocks, key=lambda b: b.order)
        assert orders[0].kind is BlockKind.HEADER and orders[-1].kind is BlockKind.PAGE_NUMBER


def test_block_ids_orders_and_provenance(journal):
    pages, _ = journal
    for page in pages:
        assert sorted(b.order for b in page.blocks) == list(range(len(page.blocks)))
        assert [b.id for b in sorted(page.blocks, key=lambda b: b.order)] == [
            f"p{page.number}-b{n}" for n in range(len(page.blocks))
        ]
        for b in page.blocks:
            assert b.source_pages == [page.number]
            assert b.bbox == BBox.enclosing([l.bbox for l in b.lines])


def test_title_only_on_the_first_page(journal):
    pages, _ = journal
    titles = [(p.number, b.text) for p in pages for b in p.blocks if b.kind is BlockKind.TITLE]
    assert titles == [(1, "Reading Order in Long Documents")]


@pytest.mark.parametrize("seed", range(5))
def test_engine_line_order_does_not_matter(seed):
    rec, _ = journal_page(3)
    shuffled = list(rec.lines)
    random.Random(seed).shuffle(shuffled)
    other = page_of(shuffled, 3)
    assert _texts(_laid_out(other)) == _texts(_laid_out(rec))


def test_reference_labels_hanging_in_the_margin_are_not_side_notes():
    col = Column((100.0, 540.0), 90.0)
    labels = []
    for n, entry in enumerate(["Smith J (2024) A study of layout. Journal of Examples 3(1):1-10.",
                               "Lee K (2023) Reading order in practice. Proceedings of Layout 2023."], start=18):
        col.y += 4.0
        labels.append(line(f"[{n}]", 72.0, col.y))
        col.rows([entry])
    page = _laid_out(page_of(raster([*col.lines, *labels])))
    assert [b.kind for b in page.blocks] == [BlockKind.PARAGRAPH, BlockKind.PARAGRAPH]
    assert _texts(page) == [
        "[18] Smith J (2024) A study of layout. Journal of Examples 3(1):1-10.",
        "[19] Lee K (2023) Reading order in practice. Proceedings of Layout 2023.",
    ]


# --- column structures -----------------------------------------------------


def _two_columns(top, texts_left, texts_right, *, gap=0.0):
    left, right = Column(LEFT, top), Column(RIGHT, top)
    for t in texts_left:
        left.paragraph(t, gap=gap)
    for t in texts_right:
        right.paragraph(t, gap=gap)
    return left, right


def test_full_width_heading_stays_between_two_column_groups():
    a, b = _two_columns(90.0, PARAGRAPHS[0:2], PARAGRAPHS[2:4])
    y = max(a.y, b.y) + 10
    heading = line("2 Results and Discussion", 200.0, y, size=16.0)
    c, d = _two_columns(y + 30, PARAGRAPHS[4:6], PARAGRAPHS[6:8])
    rec = page_of(raster([*a.lines, *b.lines, heading, *c.lines, *d.lines]))
    page = _laid_out(rec)
    assert _texts(page) == [*PARAGRAPHS[0:4], "2 Results and Discussion", *PARAGRAPHS[4:8]]
    assert page.main_blocks()[4].kind is BlockKind.HEADING


def test_paragraph_gaps_aligned_across_columns_do_not_cut_the_page_into_rows():
    # same paragraph lengths on both sides → gaps at the same heights
    texts = PARAGRAPHS[:3]
    left, right = Column(LEFT, 90.0), Column(RIGHT, 90.0)
    for t in texts:
        left.paragraph(f"L {t}", gap=8.0)
        right.paragraph(f"R {t}", gap=8.0)
    assert [l.bbox.y0 for l in left.lines] == [l.bbox.y0 for l in right.lines]
    page = _laid_out(page_of(raster(left.lines + right.lines)))
    assert _texts(page) == [*(f"L {t}" for t in texts), *(f"R {t}" for t in texts)]


def test_longer_left_column_is_finished_before_the_right_one():
    left, right = _two_columns(90.0, PARAGRAPHS[0:5], PARAGRAPHS[5:6])
    page = _laid_out(page_of(raster(left.lines + right.lines)))
    assert _texts(page) == PARAGRAPHS[0:6]


def test_right_column_starting_higher_is_still_read_second():
    # the left column starts lower (a figure without text above it)
    left, right = Column(LEFT, 200.0), Column(RIGHT, 90.0)
    for t in PARAGRAPHS[0:2]:
        left.paragraph(t)
    for t in PARAGRAPHS[2:8]:
        right.paragraph(t)
    page = _laid_out(page_of(raster(left.lines + right.lines)))
    assert _texts(page) == PARAGRAPHS[0:8]


def test_line_boxed_in_fragments_is_read_left_to_right_before_the_next_line():
    rows = [
        line("Let X be a Hausdorff space and K a", 72.0, 90.0, 240.0),
        line("compact subset. Then K is closed.", 246.0, 90.0, 410.0),  # same line, 6 pt apart
        line("Proof: the complement is open.", 72.0, 102.5, 220.0),
        line("Take y outside K and separate it from every point of K by open sets, which is", 72.0, 115.0, 540.0),
        line("possible in a Hausdorff space.", 72.0, 127.5, 220.0),
    ]
    page = _laid_out(page_of(raster(rows)))
    text = " ".join(_texts(page))
    assert text.index("Let X") < text.index("compact subset") < text.index("Proof:") < text.index("Take y")


def test_centered_author_line_across_the_gutter_is_not_read_into_a_column():
    title = line("A Study of Layout", 220.0, 80.0, size=20.0)
    author = line("Ann Author and Bo Writer", 250.0, 110.0)
    left, right = _two_columns(140.0, PARAGRAPHS[0:2], PARAGRAPHS[2:4])
    page = _laid_out(page_of(raster([title, author, *left.lines, *right.lines])))
    assert _texts(page) == ["A Study of Layout", "Ann Author and Bo Writer", *PARAGRAPHS[0:4]]


def test_paragraph_continued_from_one_column_to_the_next_is_one_block():
    left, right = Column(LEFT, 90.0), Column(RIGHT, 90.0)
    left.paragraph(PARAGRAPHS[0])
    left.paragraph("Kilo paragraph runs past the bottom of the left column and")
    right.paragraph("continues at the top of the right one without a break.", indent=0.0)
    right.paragraph(PARAGRAPHS[1])
    page = _laid_out(page_of(raster(left.lines + right.lines)))
    assert _texts(page) == [
        PARAGRAPHS[0],
        "Kilo paragraph runs past the bottom of the left column and continues at the top of the right one without a break.",
        PARAGRAPHS[1],
    ]


# --- paragraphs, headings, lists ---------------------------------------------


def test_indent_and_vertical_gap_start_paragraphs_hyphenation_is_joined():
    col = Column(FULL, 90.0)
    col.rows(["The first paragraph has a word broken at the end of this exam-",
              "ple line, and it goes on for a while until it stops."], x_offset=12.0)
    col.lines[-1] = line(col.lines[-1].text, 72.0, col.lines[-1].bbox.y0)
    col.paragraph("The second paragraph starts with an indent and nothing else to tell it apart from the first one.")
    col.paragraph("The third paragraph is set off by a blank line instead of an indent.", indent=0.0, gap=10.0)
    page = _laid_out(page_of(raster(col.lines)))
    assert _texts(page) == [
        "The first paragraph has a word broken at the end of this example line, and it goes on for a while until it stops.",
        "The second paragraph starts with an indent and nothing else to tell it apart from the first one.",
        "The third paragraph is set off by a blank line instead of an indent.",
    ]
    assert {b.kind for b in page.main_blocks()} == {BlockKind.PARAGRAPH}


def test_headings_by_size_and_by_numbering_get_levels():
    col = Column(FULL, 90.0)
    big = line("Methods", 72.0, col.y, size=18.0)
    col.y += 30
    col.paragraph(PARAGRAPHS[0], indent=0.0)
    numbered = col.rows(["2.1 Sample Preparation"], gap=6.0)[0]
    col.paragraph(PARAGRAPHS[1], indent=0.0)
    page = _laid_out(page_of(raster([big, *col.lines]), 4))
    blocks = page.main_blocks()
    assert [(b.kind, b.level, b.text) for b in blocks] == [
        (BlockKind.HEADING, 1, "Methods"),
        (BlockKind.PARAGRAPH, None, PARAGRAPHS[0]),
        (BlockKind.HEADING, 2, "2.1 Sample Preparation"),
        (BlockKind.PARAGRAPH, None, PARAGRAPHS[1]),
    ]
    assert numbered.text == blocks[2].text


def test_a_body_line_with_a_taller_box_is_no_heading_a_larger_line_is():
    """OCR draws some lines' boxes taller (tall letters, a scan's first line
    of a column): the line still runs on at the body's pitch, its characters
    as wide as the body's. A heading set larger has wider characters."""
    col = Column(LEFT, 90.0)
    rows = col.paragraph(PARAGRAPHS[0] + " " + PARAGRAPHS[1], indent=0.0)
    first, third = rows[0], rows[2]
    tall = [l.model_copy(update={"bbox": l.bbox.model_copy(update={"y0": l.bbox.y0 - 2.5, "y1": l.bbox.y1 + 2.5})})
            if l in (first, third) else l for l in col.lines]  # 1.5x the body's box, same width
    heading = line("Results", 72.0, col.y + 10, size=16.0)
    after = Column(LEFT, col.y + 40)
    after.paragraph(PARAGRAPHS[2], indent=0.0)
    page = _laid_out(page_of(raster([*tall, heading, *after.lines]), 3))
    assert [(b.kind, b.text) for b in page.main_blocks()] == [
        (BlockKind.PARAGRAPH, PARAGRAPHS[0] + " " + PARAGRAPHS[1]),
        (BlockKind.HEADING, "Results"),
        (BlockKind.PARAGRAPH, PARAGRAPHS[2]),
    ]


#: RapidOCR's lines (ONNX Runtime, PP-OCRv6) of the scanned code listing page of
#: tests/pipeline/test_code_scans.py (tests/docgen/listing.py: a 14 pt bold heading, 11 pt prose, a 9 pt
#: listing; office_scan seed 3, skewed 0.31°): text, box (points), pitch. The heading's box is no taller than
#: the prose's (the skew adds 2.5 pt to a 450 pt line's box, 0.7 pt to the heading's), the prose's is 1.28 ×
#: the page's median box, which the smaller listing's lines pull down
SCANNED_LISTING = [
    ("Drawing paths", 71.0, 88.7, 191.6, 108.7, None),
    ("The function below draws a path on the page. It walks the points one by one and", 69.8, 112.0, 522.7, 133.3,
     None),
    ("moves the pen to each of them in turn, giving up as soon as a point cannot be", 69.8, 129.0, 509.6, 148.1, None),
    ("reached.", 71.0, 145.6, 123.9, 160.4, None),
    ("static int draw_path(fz_context *ctx, const point *pts, int n)", 88.4, 166.8, 428.0, 184.2, 5.4),
    ("{", 90.5, 182.5, 98.5, 191.4, 5.49),
    ("int i, x0 = 0;", 110.0, 190.1, 190.3, 205.4, 5.49),
    ("/*", 110.0, 213.1, 126.0, 227.1, 5.49),
    ("* - each point is drawn once", 113.3, 223.7, 273.2, 240.2, 5.49),
    ("*1", 115.0, 236.8, 132.8, 250.0, 5.4),
    ("for (i = 0; i < n; i++) {", 109.1, 247.4, 251.6, 263.1, 5.4),
    ("x0 = fz_lineto(ctx, pts[i].x, pts[i].y); /* next point */", 128.6, 258.9, 445.7, 277.1, 5.4),
    ("if (x0 < 0)", 129.4, 269.9, 197.1, 286.9, 5.4),
    ("return -1;", 153.1, 284.4, 211.9, 296.7, 5.4),
    ("/* give up */", 238.1, 282.2, 315.5, 300.1, 5.4),
    ("}", 110.8, 296.7, 118.8, 306.9, 5.4),
    ("return x0;", 109.1, 306.0, 168.3, 320.9, 5.4),
    ("}", 87.5, 317.5, 97.3, 330.6, 5.4),
    ("The call to \\foo moves the pen to a point and returns where it ended; the other", 68.9, 337.0, 516.8, 356.1,
     None),
    ("calls of the manual take the same arguments in the same order.", 68.9, 353.5, 429.7, 370.1, None),
]


@pytest.mark.parametrize("steps", [(0, 0), (-2, 2), (-1, 1), (1, -1), (2, -2), (2, 2), (-2, -2)],
                         ids=lambda s: f"heading{s[0]:+d}-prose{s[1]:+d}")
def test_a_scanned_heading_over_prose_and_a_smaller_listing_is_no_knife_edge(steps):
    """The heading stays a heading and the prose a paragraph however the
    boxes' heights come out: each moved by up to two steps of the detector's
    grid (0.85 pt at 200 dpi), the heading's down and the prose's up, or the
    other way. (By box height the heading read 1.2 × the body and the first
    prose line 1.28 ×, either side of 1.25, and flipped with the runtime.)"""
    heading_step, prose_step = (0.85 * s for s in steps)
    lines = []
    for text, x0, y0, x1, y1, pitch in SCANNED_LISTING:
        grow = heading_step if text == "Drawing paths" else prose_step if pitch is None else 0.0
        lines.append(Line(text=text, bbox=BBox(x0=x0, y0=y0 - grow / 2, x1=x1, y1=y1 + grow / 2), confidence=0.95,
                          page=1, pitch=pitch))
    page = _laid_out(page_of(lines, 1, width=595.28, height=841.89))
    assert [(b.kind, b.text[:24]) for b in page.main_blocks()] == [
        (BlockKind.HEADING, "Drawing paths"),
        (BlockKind.PARAGRAPH, "The function below draws"),
        (BlockKind.CODE, "static int draw_path(fz_"),
        (BlockKind.PARAGRAPH, "The call to \\foo moves t"),
    ]


def test_numbered_heading_without_space_after_it_is_its_own_block():
    col = Column(FULL, 90.0)
    col.rows(["3 Results", "The results are shown below and they are good for all of the test", "cases we ran."])
    page = _laid_out(page_of(col.lines, 2))
    assert [(b.kind, b.text) for b in page.main_blocks()] == [
        (BlockKind.HEADING, "3 Results"),
        (BlockKind.PARAGRAPH, "The results are shown below and they are good for all of the test cases we ran."),
    ]


def test_bullet_and_numbered_lists_become_list_blocks_one_line_per_item():
    col = Column(FULL, 90.0)
    col.paragraph("We need the following things for the experiment:", indent=0.0)
    col.rows(["• flour from the mill down the road, which has to be sifted twice before"], gap=4.0)
    col.rows(["it is used"], x_offset=10.0)  # hanging indent: continues the item
    col.rows(["• eggs", "• milk"])
    col.paragraph("Then follow the steps in order:", indent=0.0, gap=6.0)
    col.rows(["1. Mix the dry things.", "2) Add the eggs.", "(3) Stir."], gap=4.0)
    col.paragraph("And that is all there is to it.", indent=0.0, gap=6.0)
    page = _laid_out(page_of(raster(col.lines)))
    assert [(b.kind, b.text) for b in page.main_blocks()] == [
        (BlockKind.PARAGRAPH, "We need the following things for the experiment:"),
        (BlockKind.LIST, "• flour from the mill down the road, which has to be sifted twice before it is used\n• eggs\n• milk"),
        (BlockKind.PARAGRAPH, "Then follow the steps in order:"),
        (BlockKind.LIST, "1. Mix the dry things.\n2) Add the eggs.\n(3) Stir."),
        (BlockKind.PARAGRAPH, "And that is all there is to it."),
    ]


def test_bullet_boxed_apart_by_ocr_still_starts_an_item():
    col = Column(FULL, 90.0)
    col.paragraph("Items:", indent=0.0)
    lines = list(col.lines)
    for text in ("first item", "second item"):
        lines += [line("•", 72.0, col.y), line(text, 84.0, col.y)]
        col.y += PITCH
    page = _laid_out(page_of(raster(lines)))
    assert [(b.kind, b.text) for b in page.main_blocks()] == [
        (BlockKind.PARAGRAPH, "Items:"),
        (BlockKind.LIST, "• first item\n• second item"),
    ]


def test_chinese_lines_join_without_spaces():
    col = Column(FULL, 90.0)
    rows = ["长文档识别需要稳定的内存，每一页都按照阅读", "顺序输出，页眉页脚和页码不会混入正文。"]
    for r in rows:
        col.lines.append(Line(text=r, bbox=BBox(x0=72, y0=col.y, x1=72 + 10 * len(r), y1=col.y + 10), confidence=0.9, page=1))
        col.y += PITCH
    page = _laid_out(page_of(col.lines))
    assert _texts(page) == ["长文档识别需要稳定的内存，每一页都按照阅读顺序输出，页眉页脚和页码不会混入正文。"]


# --- robustness ---------------------------------------------------------------


def test_empty_and_blank_pages_give_no_blocks():
    assert layout_page(page_of([]), {}) == []
    assert layout_page(page_of([line("   ", 72, 90)]), {}) == []


def test_degenerate_boxes_are_laid_out_without_loss():
    zero = Line(text="zero", bbox=BBox(x0=100, y0=100, x1=100, y1=100), confidence=0.5, page=1)
    flipped = Line(text="flipped", bbox=BBox(x0=300, y0=220, x1=200, y1=210), confidence=0.5, page=1)
    giant = Line(text="giant", bbox=BBox(x0=0, y0=0, x1=612, y1=792), confidence=0.5, page=1)
    normal = line("normal text line", 72, 400)
    blocks = layout_page(page_of([zero, flipped, giant, normal]), {})
    assert sorted(l.text for b in blocks for l in b.lines) == ["flipped", "giant", "normal text line", "zero"]
    assert flipped.bbox.x0 == 300  # inputs untouched; block boxes normalized
    assert all(b.bbox.x0 <= b.bbox.x1 and b.bbox.y0 <= b.bbox.y1 for b in blocks)


def test_one_giant_box_does_not_scramble_the_columns():
    left, right = _two_columns(90.0, PARAGRAPHS[0:2], PARAGRAPHS[2:4])
    giant = Line(text="Figure text", bbox=BBox(x0=60, y0=80, x1=560, y1=400), confidence=0.3, page=1)
    page = _laid_out(page_of(raster([*left.lines, giant, *right.lines])))
    texts = _texts(page)
    assert [t for t in texts if t != "Figure text"] == PARAGRAPHS[0:4]
    assert texts.count("Figure text") == 1


_word = st.text(alphabet="abcdefghij", min_size=1, max_size=8)


@st.composite
def _random_page(draw):
    n = draw(st.integers(min_value=0, max_value=40))
    lines = []
    for _ in range(n):
        x0 = draw(st.floats(min_value=0, max_value=600))
        y0 = draw(st.floats(min_value=0, max_value=780))
        w = draw(st.floats(min_value=0, max_value=300))
        h = draw(st.floats(min_value=0, max_value=40))
        text = " ".join(draw(st.lists(_word, min_size=1, max_size=4)))
        if draw(st.booleans()):
            text = draw(st.sampled_from(["• ", "1. ", "- ", "", "3"])) + text
        lines.append(Line(text=text, bbox=BBox(x0=x0, y0=y0, x1=x0 + w, y1=y0 + h), confidence=1.0, page=2))
    return page_of(lines, 2)


@settings(max_examples=60, deadline=None)
@given(_random_page())
def test_every_line_lands_in_exactly_one_block(rec):
    blocks = layout_page(rec, find_furniture(rec, []))
    # every word of the page in exactly one block (a line merged across a
    # column gutter may come back split in two, never otherwise altered)
    got = sorted(w for b in blocks for l in b.lines for w in l.text.split())
    assert got == sorted(w for l in rec.lines for w in l.text.split())
    originals = {id(l) for l in rec.lines}
    assert len({id(l) for b in blocks for l in b.lines if id(l) in originals}) == sum(
        id(l) in originals for b in blocks for l in b.lines
    )
    assert sorted(b.order for b in blocks) == list(range(len(blocks)))
    ids = {b.id for b in blocks}
    assert len(ids) == len(blocks)
    assert all(b.anchor in ids for b in blocks if b.anchor is not None)
    for b in blocks:
        # no character of a line is lost in the block's text (hyphens and spaces aside)
        chars = sorted("".join(l.text for l in b.lines).replace(" ", "").replace("-", ""))
        assert sorted(b.text.replace(" ", "").replace("-", "").replace("\n", "")) == chars
