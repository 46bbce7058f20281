"""Running headers, footers and page numbers."""

import pytest

from longdoc.layout.furniture import find_furniture, folio_value, furniture_pattern, running_head
from longdoc.model import BBox, BlockKind, Region, RegionKind

from .synth import FULL, PARAGRAPHS, PITCH, SIZE, Column, journal_page, line, page_of


def _kinds(page, neighbors=()):
    found = find_furniture(page, list(neighbors))
    return {page.lines[i].text: kind for i, kind in found.items()}


def _body(number, top=90.0):
    col = Column(FULL, top, number)
    for text in PARAGRAPHS[number % 5 : number % 5 + 4]:
        col.paragraph(text, gap=6.0)
    return col.lines


@pytest.mark.parametrize(
    ("text", "value"),
    [("7", 7), ("- 7 -", 7), ("— 12 —", 12), ("Page 3", 3), ("page 3 of 120", 3), ("3 / 120", 3),
     ("3/120", 3), ("p. 44", 44), ("xii", 12), ("XIV", 14), ("第 3 页", 3), ("第3页 共10页", 3), ("[9]", 9),
     ("2-9", 9), ("A-3", 3),
     ("1. Introduction", None), ("Chapter 3", None), ("3.2", None), ("hello", None), ("", None)],
)
def test_folio_value(text, value):
    assert folio_value(text) == value


@pytest.mark.parametrize("folio", ["17", "- 17 -", "Page 17", "17 / 120", "第 17 页", "xvii"])
@pytest.mark.parametrize("where", [40.0, 750.0])
def test_page_number_found_on_a_single_page(folio, where):
    page = page_of([*_body(17), line(folio, 300.0, where, page=17)], 17)
    assert _kinds(page) == {folio: BlockKind.PAGE_NUMBER}


def test_numbered_items_and_table_cells_near_the_edges_are_not_page_numbers():
    col = Column(FULL, 600.0)
    col.paragraph(PARAGRAPHS[0])
    # a numbered list at the bottom of the body, OCR boxing each marker apart
    rows = []
    for n, text in enumerate(["Buy flour", "Buy eggs", "Bake"], start=1):
        rows.append(line(f"{n}.", 72.0, col.y))
        rows.append(line(text, 86.0, col.y))
        col.y += 12.5
    # a table's last row in the bottom band: cells of numbers
    cells = [line("3", 72.0, col.y), line("Total", 200.0, col.y), line("12", 400.0, col.y)]
    # a lone number in the middle of the page is body text too
    middle = line("42", 300.0, 400.0)
    page = page_of([*col.lines, *rows, *cells, middle])
    assert _kinds(page) == {}


def test_running_header_and_footer_need_neighbors():
    def make(n):
        return page_of(
            [line("Journal of Examples 2026", 72.0, 40.0, page=n), *_body(n),
             line(f"Vol. 3, No. {n}", 72.0, 752.0, page=n), line(str(n), 300.0, 752.0, page=n)],
            n,
        )

    pages = [make(n) for n in range(1, 6)]
    # alone: the folio, and the volume/issue line by its pattern; the journal name needs a neighbour
    assert _kinds(pages[2]) == {"3": BlockKind.PAGE_NUMBER, "Vol. 3, No. 3": BlockKind.FOOTER}
    assert _kinds(pages[2], [pages[1], pages[3]]) == {
        "Journal of Examples 2026": BlockKind.HEADER,
        "Vol. 3, No. 3": BlockKind.FOOTER,
        "3": BlockKind.PAGE_NUMBER,
    }


def test_header_with_ocr_noise_still_matches():
    texts = {1: "Journal of Examples 2026", 2: "Journa1 of Exarnples 2026", 3: "Journal 0f Examples 2026"}
    pages = [page_of([line(t, 72.0, 40.0, page=n), *_body(n)], n) for n, t in texts.items()]
    assert _kinds(pages[1], [pages[0], pages[2]]) == {texts[2]: BlockKind.HEADER}


def test_header_boxed_as_one_line_on_one_page_and_in_fragments_on_the_next():
    one = page_of([line("L. Smith et al., 2015, Vol. 113", 360.0, 30.0, page=2), *_body(2)], 2)
    parts = [line("L. Smith", 360.0, 30.0, page=4), line("et al.", 402.0, 30.0, page=4),
             line(", 2015, Vol. 113", 432.0, 30.0, page=4)]
    fragmented = page_of([*parts, *_body(4)], 4)
    assert _kinds(one, [fragmented]) == {"L. Smith et al., 2015, Vol. 113": BlockKind.HEADER}
    assert _kinds(fragmented, [one]) == {p.text: BlockKind.HEADER for p in parts}


def test_alternating_book_headers_match_pages_two_apart():
    def make(n):
        verso = n % 2 == 0
        text = "Journal of Examples 2026" if verso else "Chapter Two: Results"
        x = 72.0 if verso else 430.0
        return page_of([line(text, x, 40.0, page=n), *_body(n)], n)

    pages = {n: make(n) for n in range(1, 8)}
    four = pages[4]
    # ±1 carry the other header: nothing repeats
    assert _kinds(four, [pages[3], pages[5]]) == {}
    # ±2 carry the same one
    assert _kinds(four, [pages[2], pages[3], pages[5], pages[6]]) == {"Journal of Examples 2026": BlockKind.HEADER}


def test_repeated_text_inside_the_body_is_not_a_header():
    """A line that repeats on every page but is part of the text flow (a
    form's instructions, a repeated table head) is not set off from it."""

    def make(n):
        col = Column(FULL, 90.0, n)
        col.rows(["Fill in every field of this form in block capitals."])
        col.paragraph(PARAGRAPHS[n])
        return page_of(col.lines, n)

    pages = [make(n) for n in range(1, 4)]
    assert _kinds(pages[1], [pages[0], pages[2]]) == {}


def test_journal_pages_with_two_columns_and_a_margin_note():
    pages = [journal_page(n)[0] for n in range(1, 6)]
    for page in pages:
        neighbors = [p for p in pages if p is not page and abs(p.number - page.number) <= 2]
        assert _kinds(page, neighbors) == {
            "Journal of Examples 2026": BlockKind.HEADER,
            str(page.number): BlockKind.PAGE_NUMBER,
        }


def test_empty_and_degenerate_pages():
    assert find_furniture(page_of([]), []) == {}
    zero = line("5", 300.0, 760.0)
    zero = zero.model_copy(update={"bbox": zero.bbox.model_copy(update={"x1": 300.0, "y1": 760.0})})
    assert find_furniture(page_of([zero]), []) == {0: BlockKind.PAGE_NUMBER}
    # a page of unknown height (0) is measured by its lines and does not crash
    assert isinstance(find_furniture(page_of([line("x", 10, 10)], height=0.0), []), dict)


@pytest.mark.parametrize("where", [40.0, 140.0, 400.0, 750.0])
def test_a_page_whose_only_line_repeats_on_every_page_keeps_it(where):
    """60 pages each holding one line of the same template text (a status
    report, a form): the line repeats on every neighbour, but it is the
    page's only text, so it is body text wherever it sits."""
    text = "Monthly status line: all systems nominal"
    pages = [page_of([line(text, 72.0, where, page=n)], n) for n in range(1, 61)]
    for page in pages[:5] + pages[-5:]:
        neighbors = [p for p in pages if p is not page and abs(p.number - page.number) <= 3]
        assert _kinds(page, neighbors) == {}


def test_a_page_with_only_a_running_header_and_a_folio_keeps_the_header_as_text():
    def make(n, body=True):
        lines = [line("Journal of Examples 2026", 72.0, 40.0, page=n), line(str(n), 300.0, 752.0, page=n)]
        return page_of(lines + (_body(n) if body else []), n)

    pages = [make(1), make(2), make(3, body=False), make(4), make(5)]
    assert _kinds(pages[2], [pages[1], pages[3]]) == {"3": BlockKind.PAGE_NUMBER}
    assert _kinds(pages[1], [pages[0], pages[2]])["Journal of Examples 2026"] is BlockKind.HEADER


# --- single pages: patterns, the layout model's regions, margin banners ---------------


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("https://doi.org/10.1234/jaw.2021.0045", 40.0),
        ("DOI: 10.1016/j.example.2020.01.002", 752.0),
        ("Downloaded from https://academic.example.org/ by guest on 12 March 2023", 752.0),
        ("© 2021 The Authors. All rights reserved.", 752.0),
        ("Journal of Widgets, Vol. 12, No. 3 (2021), pp. 45–67", 40.0),
        ("Rev. 3 — 2019-04-12", 752.0),
    ],
)
def test_furniture_lines_leave_a_single_page_by_their_text(text, where):
    page = page_of([*_body(1, top=110.0), line(text, 72.0, where)], 1)
    assert _kinds(page) == {text: BlockKind.HEADER if where < 396 else BlockKind.FOOTER}


def test_the_same_words_in_body_text_stay():
    col = Column(FULL, 110.0)
    col.paragraph(PARAGRAPHS[0])
    cited = col.rows(["The data are at https://doi.org/10.1234/abc and in Vol. 12, No. 3 of the series."], gap=6.0)
    col.paragraph(PARAGRAPHS[1], gap=6.0)
    page = page_of(col.lines, 1)
    assert cited[0].text not in _kinds(page)


def test_a_line_in_a_header_region_of_the_layout_model_is_a_header():
    from longdoc.model import BBox, Region, RegionKind

    name = line("Journal of Examples", 72.0, 40.0)
    page = page_of([name, *_body(1, top=110.0)], 1)
    assert _kinds(page) == {}
    region = Region(kind=RegionKind.HEADER, bbox=BBox(x0=70.0, y0=38.0, x1=180.0, y1=52.0), score=0.9)
    page = page.model_copy(update={"regions": [region]})
    assert _kinds(page) == {"Journal of Examples": BlockKind.HEADER}


def test_a_vertical_banner_in_the_margin_is_furniture():
    from longdoc.model import BBox, Line

    stamp = Line(text="arXiv:2305.03393v1 [cs.CL] 5 May 2023", bbox=BBox(x0=20.0, y0=220.0, x1=34.0, y1=560.0),
                 confidence=1.0, page=1)
    page = page_of([*_body(1, top=110.0), stamp], 1)
    assert _kinds(page) == {stamp.text: BlockKind.HEADER}


def test_a_model_header_region_over_the_first_body_line_keeps_it_in_the_body():
    # a dense page whose first line (a numbered heading) the layout model calls a header: no gap sets it off
    lines = [line("0. Definitions." if i == 0 else f"body text line {i} of the licence goes on and on here",
                  56, 72 + 12.5 * i) for i in range(55)]
    page = page_of(lines).model_copy(update={"regions": [
        Region(kind=RegionKind.HEADER, bbox=BBox(x0=50, y0=70, x1=130, y1=84), score=0.9)]})
    assert find_furniture(page, []) == {}
    apart = page.model_copy(update={"lines": [lines[0], *(l.model_copy(update={"bbox": BBox(
        x0=l.bbox.x0, y0=l.bbox.y0 + 40, x1=l.bbox.x1, y1=l.bbox.y1 + 40)}) for l in lines[1:50])]})
    assert find_furniture(apart, []) == {0: BlockKind.HEADER}  # set off by a gap: the model is trusted


def test_a_model_footer_region_over_a_last_line_after_a_paragraph_break_keeps_it_in_the_body():
    # paragraphs of 8 lines with a blank line between them; the page's last line starts a paragraph
    ys, y = [], 72.0
    for i in range(49):
        if i and i % 8 == 0:
            y += 12.5
        ys.append(y)
        y += 12.5
    lines = [line(f"body text line {i} of the licence goes on and on here", 56, y) for i, y in enumerate(ys)]
    last = lines[-1].bbox
    footer = [Region(kind=RegionKind.FOOTER, bbox=BBox(x0=50, y0=last.y0 - 2, x1=400, y1=last.y1 + 2), score=0.9)]
    page = page_of(lines).model_copy(update={"regions": footer})
    assert find_furniture(page, []) == {}
    moved = lines[-1].model_copy(update={"bbox": BBox(x0=last.x0, y0=last.y0 + 40, x1=last.x1, y1=last.y1 + 40)})
    footer = [Region(kind=RegionKind.FOOTER, bbox=BBox(x0=50, y0=last.y0 + 38, x1=400, y1=last.y1 + 42), score=0.9)]
    apart = page.model_copy(update={"lines": [*lines[:-1], moved], "regions": footer})
    assert find_furniture(apart, []) == {48: BlockKind.FOOTER}


@pytest.mark.parametrize(("text", "strength"), [
    ("Copyright 2021 Elsevier B.V.", "strong"), ("© The Authors 2024", "strong"),
    ("give appropriate copyright permission.", None),  # the word in running text (a licence) is no notice
    ("the copyright holders and contributors provide the work", None),
])
def test_a_copyright_notice_is_furniture_the_word_in_prose_is_not(text, strength):
    assert furniture_pattern(text) == strength


def test_a_model_header_region_over_a_smaller_first_line_takes_it_out():
    # paragraph breaks as wide as the gap under the header: only its smaller size sets it apart
    ys, y = [], 90.0
    for i in range(45):
        if i and i % 6 == 0:
            y += 12.5
        ys.append(y)
        y += 12.5
    head = line("Journal of Examples, Volume Three", 56, 72.0, size=7.0)
    body = [line(f"body text line {i} of the article goes on here", 56, y) for i, y in enumerate(ys)]
    region = [Region(kind=RegionKind.HEADER, bbox=BBox(x0=50, y0=70, x1=300, y1=80), score=0.9)]
    assert find_furniture(page_of([head, *body]).model_copy(update={"regions": region}), []) == {0: BlockKind.HEADER}
    same_size = line("Journal of Examples, Volume Three", 56, 72.0 - 3)
    page = page_of([same_size, *body]).model_copy(update={"regions": region})
    assert find_furniture(page, []) == {}  # body-sized, no wider gap than a paragraph break: body text


# --- single pages: running heads with their page number, lone folios ----------------------


@pytest.mark.parametrize(
    ("text", "head"),
    [("400 BRITISH HUSBANDRY. [Ch. XIX.", True), ("CHAPTER 3. METHODS 27", True), ("xii PREFACE", True),
     ("12 Chapter Two: Results", True), ("THE GARDEN 212", True),
     ("12 apples were bought", False), ("2 Methods", False), ("Introduction", False), ("12", False),
     ("2 Results and Discussion of the field trials in the northern districts of the county, 1887-1902", False)],
)
def test_running_head(text, head):
    assert running_head(text) is head


def test_a_running_head_holding_the_page_number_is_a_header_on_a_single_page():
    head = line("400 BRITISH HUSBANDRY. [Ch. XIX.", 72.0, 40.0)
    assert _kinds(page_of([head, *_body(1, top=64.0)])) == {head.text: BlockKind.HEADER}
    words = line("12 apples were bought", 72.0, 40.0)
    assert _kinds(page_of([words, *_body(1, top=64.0)])) == {}  # a number beside words is not enough


def test_a_lone_folio_a_blank_line_under_the_text_is_the_page_number():
    """Text set close to the foot; the folio a blank line under it, nearer
    than the edge zone's gap (a full line height)."""
    col = Column(FULL, 560.0)
    for text in PARAGRAPHS[:6]:
        col.paragraph(text)
    folio = line("62", 300.0, col.lines[-1].bbox.y1 + 0.6 * SIZE)
    assert _kinds(page_of([*col.lines, folio])) == {"62": BlockKind.PAGE_NUMBER}


def test_stacked_page_numbers_of_a_contents_page_are_not_its_page_number():
    entries = [line(text, 72.0, 40.0 + k * PITCH) for k, text in enumerate(["Filename Parsing", "TeX Versions"])]
    numbers = [line(n, 520.0, 40.0 + k * PITCH) for k, n in enumerate(["11", "13"])]
    page = page_of([*entries, *numbers, *_body(1, top=100.0), line("ii", 300.0, 750.0)])
    assert _kinds(page) == {"ii": BlockKind.PAGE_NUMBER}


def test_a_heading_the_layout_model_calls_a_header_stays_in_the_text_when_set_larger():
    heading = line("Contents", 72.0, 40.0, size=17.0)
    region = Region(kind=RegionKind.HEADER, bbox=BBox(x0=70.0, y0=38.0, x1=160.0, y1=59.0), score=0.7)
    page = page_of([heading, *_body(1)]).model_copy(update={"regions": [region]})
    assert _kinds(page) == {}
