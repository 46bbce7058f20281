"""The generated test documents. Each function writes one PDF and returns its ground truth.

All are deterministic: the same arguments give the same bytes. Body text is
11 pt (15 pt for Chinese) so that 150–200 dpi renderings OCR well.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from evaluation.metrics import normalize_ws
from tests.docgen.layout import (
    A4,
    A5,
    Block,
    Canvas,
    Flow,
    Frame,
    Furniture,
    LineSpec,
    Style,
    centered_x,
    draw,
    wrap_cjk,
    wrap_words,
)
from tests.docgen.prose import LIST_ITEMS, ChineseProse, EnglishProse
from tests.docgen.truth import GeneratedDoc, assemble, boundary_check, last_line, phrase_after, phrase_before

Prose = EnglishProse | ChineseProse

BODY = Style("sans", 11, 15.5)
HEADING = Style("sansbold", 14, 20)
TITLE = Style("sansbold", 20, 28)
SMALL = Style("sans", 9, 12)
NOTE = Style("sans", 9, 11.5)
CJK_BODY = Style("cjk", 15, 27)
CJK_HEADING = Style("cjk", 17, 30)
CJK_TITLE = Style("cjk", 21, 36)
CJK_SMALL = Style("cjk", 10, 14)

PARA_SPACE = 8.0
HEADING_SPACE = 14.0

REPORT_TITLE = "Review of Operations and Outlook"
REPORT_HEADER = "Annual Report 2026 — Example Corp"
REPORT_SECTIONS = [
    "Operations and Markets",
    "Financial Performance",
    "People and Culture",
    "Risk Management",
    "Sustainability",
    "Governance",
    "Outlook",
]
HYPHEN_WORD, HYPHEN_SPLIT = "continuation", 7  # "continu-" / "ation"
_HYPHEN_SENTENCES = [  # (words before "continuation", words after it)
    (
        "The board therefore approved additional funding to secure the",
        "of the maintenance programme for at least two more years.",
    ),
    (
        "Several large customers asked for a firm commitment to the",
        "of the regional service network beyond the current contract.",
    ),
    ("The new agreement with the city council guarantees the", "of the night bus service to the industrial park."),
    ("Employees strongly supported the", "of the flexible working scheme that began last spring."),
]

CJK_TITLE_TEXT = "年度经营情况概述"
CJK_HEADER = "示例公司年度报告"
CJK_SECTIONS = ["一、总体经营情况", "二、研发与生产", "三、人才与社会责任", "四、风险管理", "五、未来发展展望"]

TWO_COLUMN_TITLE = "Regional Markets in a Changing Economy"
SIDE_NOTES = [
    "Figures are unaudited and may still change.",
    "See note 4 for the basis of these figures.",
    "Unaudited; see the notes.",
]
LONG_HEADER = "Long Document Benchmark — Volume One"


class _Writer:
    """Wraps text at one width and adds the blocks to ``flow``."""

    def __init__(self, canvas: Canvas, flow: Flow, width: float, *, cjk: bool = False) -> None:
        self.canvas, self.flow, self.width, self.cjk = canvas, flow, width, cjk

    def lines(self, sentences: list[str], style: Style) -> list[LineSpec]:
        if self.cjk:
            indent = 2 * style.size
            rows = wrap_cjk(self.canvas, "".join(sentences), style, self.width, first_indent=indent)
            return [LineSpec(r, indent=indent if i == 0 else 0.0) for i, r in enumerate(rows)]
        words = " ".join(sentences).split()
        return [LineSpec(r) for r in wrap_words(self.canvas, words, style, self.width)]

    def block(self, kind: str, lines: list[LineSpec], style: Style, space: float) -> Block:
        return self.flow.add(Block(kind, style, lines, joiner="" if self.cjk else " ", space_before=space))

    def paragraph(self, sentences: list[str], style: Style = BODY) -> Block:
        return self.block("paragraph", self.lines(sentences, style), style, PARA_SPACE)

    def heading(self, text: str, style: Style = HEADING, kind: str = "heading") -> Block:
        rows = wrap_cjk(self.canvas, text, style, self.width) if self.cjk else wrap_words(
            self.canvas, text.split(), style, self.width
        )
        return self.block(kind, [LineSpec(r) for r in rows], style, HEADING_SPACE)

    def sized_sentences(self, prose: Prose, budget: int, style: Style, max_sentences: int) -> list[str]:
        """Up to a random 2..max_sentences sentences whose paragraph fits in ``budget`` lines."""
        chosen: list[str] = []
        for _ in range(prose.rng.randint(2, max_sentences)):
            trial = chosen + [prose.sentence()]
            if len(self.lines(trial, style)) > budget:
                break
            chosen = trial
        return chosen

    def fill_page(self, prose: Prose, reserve: int, style: Style = BODY, max_sentences: int = 6) -> None:
        """Add paragraphs that fit on the current page until at most about ``reserve`` lines are left."""
        while True:
            budget = self.flow.lines_left_on_page(style, PARA_SPACE) - reserve
            if budget < 2:
                return
            chosen = self.sized_sentences(prose, budget, style, max_sentences)
            if not chosen:
                return
            self.paragraph(chosen, style)

    def crossing_paragraph(self, prose: Prose, style: Style, min_next: int = 2) -> Block:
        """A paragraph that fills the page and continues with >= ``min_next`` lines on the next."""
        room = self.flow.lines_left_on_page(style, PARA_SPACE)
        chosen = [prose.sentence()]
        while len(self.lines(chosen, style)) < room + min_next:
            chosen.append(prose.sentence())
        return self.paragraph(chosen, style)

    def bullet_list_crossing(self, prose: EnglishProse, min_next: int = 3) -> Block:
        """A bulleted list that starts here and continues with >= ``min_next`` lines on the next page."""
        room = self.flow.lines_left_on_page(BODY, PARA_SPACE)
        indent = self.canvas.width("• ", BODY)
        pool = prose.list_items(len(LIST_ITEMS))
        specs: list[LineSpec] = []
        for n, item in enumerate(pool):
            rows = wrap_words(self.canvas, ["•", *item.split()], BODY, self.width, rest_indent=indent)
            specs += [LineSpec(r, item=n, indent=0.0 if i == 0 else indent) for i, r in enumerate(rows)]
            if len(specs) >= room + min_next:
                break
        if len(specs) < room + min_next:
            raise RuntimeError(f"not enough list items for {room + min_next} lines")
        return self.block("list", specs, BODY, PARA_SPACE)

    def hyphenated_paragraph(self, prose: EnglishProse) -> Block:
        """A paragraph whose last line on this page ends in "continu-" and that goes on with
        "ation" at the top of the next page.

        Filler sentences are drawn until a greedy wrap puts the word exactly at
        the page's last line, where "continuation" does not fit but "continu-" does.
        """
        room = self.flow.lines_left_on_page(BODY, PARA_SPACE)
        head, tail = HYPHEN_WORD[:HYPHEN_SPLIT], HYPHEN_WORD[HYPHEN_SPLIT:]
        space = self.canvas.width(" ", BODY)
        for _ in range(20_000):
            lead, rest = prose.rng.choice(_HYPHEN_SENTENCES)
            words = " ".join([*prose.sentences(prose.rng.randint(0, 6)), lead]).split()
            rows = wrap_words(self.canvas, words, BODY, self.width)
            if len(rows) != room:
                continue
            used = self.canvas.words_width(rows[-1], BODY) + space
            if used + self.canvas.width(head + "-", BODY) <= self.width < used + self.canvas.width(HYPHEN_WORD, BODY):
                after = [tail, *rest.split(), *" ".join(prose.sentences(2)).split()]
                specs = [LineSpec(r) for r in rows[:-1]]
                specs.append(LineSpec([*rows[-1], head], hyphen=True))
                specs += [LineSpec(r) for r in wrap_words(self.canvas, after, BODY, self.width)]
                return self.block("paragraph", specs, BODY, PARA_SPACE)
        raise RuntimeError(f"could not place a hyphenated paragraph in {room} lines")


def _finish(
    canvas: Canvas,
    flow: Flow,
    pages: int,
    furniture: list[Furniture],
    out: Path,
    order_checks: list[tuple[str, str]],
    language: str,
    assembled=None,
) -> GeneratedDoc:
    """Check the page count, draw the PDF, and package the ground truth."""
    used = 1 + max(ln.page for b in flow.blocks for ln in b.placed)
    if used != pages:
        raise RuntimeError(f"layout produced {used} pages instead of {pages}")
    lines = [ln for b in flow.blocks for ln in b.placed]
    draw(canvas, pages, lines, furniture, out)
    gt = assembled or assemble(flow.blocks, pages)
    per_page_furniture: list[list[str]] = [[] for _ in range(pages)]
    for f in sorted(furniture, key=lambda f: (f.page, f.baseline)):
        per_page_furniture[f.page].append(f.text)
    return GeneratedDoc(
        pdf_path=out,
        pages=pages,
        main_text_per_page=gt.per_page,
        main_text=gt.main_text,
        furniture=per_page_furniture,
        order_checks=order_checks,
        page_size=canvas.page_size,
        language=language,
    )


def _page_break_checks(flow: Flow, gt, pages: int, *, cjk: bool = False) -> list[tuple[str, str]]:
    """One (before, after) pair around every page break."""
    checks = []
    for p in range(pages - 1):
        ln = last_line(flow.blocks, lambda x, p=p: x.page == p)
        checks.append(boundary_check(gt.main_text, gt.line_end[id(ln)], cjk=cjk))
    return checks


def _header_footer(canvas: Canvas, pages: int, header: str | None, footer: Callable[[int], str],
                   style: Style, header_y: float, footer_y: float, margin: float) -> list[Furniture]:  # fmt: skip
    """Header at the top-left of every page (drawn first), footer centred at the bottom (drawn last)."""
    items = []
    for p in range(pages):
        if header:
            items.append(Furniture(p, header, margin, header_y, style, draw_key=-1.0))
        text = footer(p + 1)
        items.append(Furniture(p, text, centered_x(canvas, text, style), footer_y, style, draw_key=1e12))
    return items


def _out(tmp_dir: str | Path, name: str) -> Path:
    return Path(tmp_dir) / name


# --- the documents ----------------------------------------------------------------


def english_report(tmp_dir: str | Path, pages: int = 4, *, seed: int = 0) -> GeneratedDoc:
    """A single-column English report of ``pages`` (>= 3) A4 pages: ``english_report.pdf``.

    Page 1: title, intro, "Overview" heading, paragraphs, and a bulleted list
    that continues on page 2. Page 2 ends with a paragraph whose last word on
    the page is hyphenated "continu-" / "ation" across the break to page 3.
    Later pages each start a new section. Every page has the running header
    "Annual Report 2026 — Example Corp" and the footer "Page n of N".

    ``order_checks``: the title before the first paragraph, and one pair
    across every page break (the list's, the hyphenated word's, ...).
    Raises ``ValueError`` for fewer than 3 pages.
    """
    if pages < 3:
        raise ValueError("english_report needs at least 3 pages (list and hyphenated paragraph each cross a break)")
    canvas = Canvas(A4, ("sans", "sansbold"))
    frame = Frame(x=72, top=90, bottom=770, width=A4[0] - 144)
    flow = Flow(lambda p: [frame])
    w = _Writer(canvas, flow, frame.width)
    prose = EnglishProse(seed)

    w.heading(REPORT_TITLE, TITLE, kind="title")
    w.paragraph(prose.sentences(3))
    w.heading("Overview")
    w.fill_page(prose, reserve=8)
    w.paragraph(["During the year the company concentrated on the following priorities:"])
    w.bullet_list_crossing(prose)
    w.paragraph(prose.sentences(2))
    w.heading(REPORT_SECTIONS[0])
    w.fill_page(prose, reserve=5)
    w.hyphenated_paragraph(prose)
    for p in range(2, pages):
        if p > 2:
            flow.next_page()
        w.heading(REPORT_SECTIONS[(p - 1) % len(REPORT_SECTIONS)])
        w.fill_page(prose, reserve=0)

    gt = assemble(flow.blocks, pages)
    title_end = gt.line_end[id(flow.blocks[0].placed[-1])]
    checks = [(REPORT_TITLE, phrase_after(gt.main_text, title_end))]
    checks += _page_break_checks(flow, gt, pages)
    furniture = _header_footer(
        canvas, pages, REPORT_HEADER, lambda n: f"Page {n} of {pages}", SMALL, 50, A4[1] - 40, 72
    )
    return _finish(canvas, flow, pages, furniture, _out(tmp_dir, "english_report.pdf"), checks, "en", gt)


def chinese_report(tmp_dir: str | Path, pages: int = 2, *, seed: int = 0) -> GeneratedDoc:
    """A simplified-Chinese report of ``pages`` (>= 2) A5 pages, about 300 characters each:
    ``chinese_report.pdf``.

    Page 1: title, a section heading, paragraphs (first lines indented two
    characters), and a paragraph that continues on page 2. Later pages start
    new sections. Header "示例公司年度报告"; footer "第 n 页". CJK lines
    join with no space; ``order_checks`` cover every page break.
    Raises ``ValueError`` for fewer than 2 pages.
    """
    if pages < 2:
        raise ValueError("chinese_report needs at least 2 pages (one paragraph crosses a page break)")
    canvas = Canvas(A5, ("cjk",))
    frame = Frame(x=50, top=80, bottom=530, width=A5[0] - 100)
    flow = Flow(lambda p: [frame])
    w = _Writer(canvas, flow, frame.width, cjk=True)
    prose = ChineseProse(seed)

    w.heading(CJK_TITLE_TEXT, CJK_TITLE, kind="title")
    w.heading(CJK_SECTIONS[0], CJK_HEADING)
    w.fill_page(prose, reserve=4, style=CJK_BODY, max_sentences=3)
    w.crossing_paragraph(prose, CJK_BODY)
    w.fill_page(prose, reserve=0, style=CJK_BODY, max_sentences=3)
    for p in range(2, pages):
        flow.next_page()
        w.heading(CJK_SECTIONS[(p - 1) % len(CJK_SECTIONS)], CJK_HEADING)
        w.fill_page(prose, reserve=0, style=CJK_BODY, max_sentences=3)

    gt = assemble(flow.blocks, pages)
    checks = _page_break_checks(flow, gt, pages, cjk=True)
    furniture = _header_footer(canvas, pages, CJK_HEADER, lambda n: f"第 {n} 页", CJK_SMALL, 45, A5[1] - 40, 50)
    return _finish(canvas, flow, pages, furniture, _out(tmp_dir, "chinese_report.pdf"), checks, "zh", gt)


def two_column(tmp_dir: str | Path, pages: int = 2, *, seed: int = 0, interleave_rows: bool = False) -> GeneratedDoc:
    """A full-width title over two columns of English paragraphs on ``pages`` A4 pages:
    ``two_column.pdf``.

    Columns are 30 pt apart; paragraphs flow down the left column, on into the
    right one and over page breaks. Footer: the page number alone. With
    ``interleave_rows`` the content stream is written row by row across both
    columns (left line, right line, ...), so stream order is not reading order.

    ``order_checks``: title before the first paragraph, and a pair across
    every column and page break.
    """
    if pages < 1:
        raise ValueError("pages must be >= 1")
    canvas = Canvas(A4, ("sans", "sansbold"))
    margin, gutter, top, bottom = 56.0, 30.0, 72.0, 780.0
    col_w = (A4[0] - 2 * margin - gutter) / 2
    first_top = 130.0

    def frames(p: int) -> list[Frame]:
        t = first_top if p == 0 else top
        return [Frame(margin, t, bottom, col_w), Frame(margin + col_w + gutter, t, bottom, col_w)]

    flow = Flow(frames)
    prose = EnglishProse(seed + 101)
    title_rows = wrap_words(canvas, TWO_COLUMN_TITLE.split(), TITLE, A4[0] - 2 * margin)
    title = flow.add_fixed(Block("title", TITLE, [LineSpec(r) for r in title_rows]), 0, margin, top)
    w = _Writer(canvas, flow, col_w)
    while flow.page < pages - 1:
        w.paragraph(prose.sentences(prose.rng.randint(3, 6)))
    w.fill_page(prose, reserve=0)

    gt = assemble(flow.blocks, pages)
    checks = [(TWO_COLUMN_TITLE, phrase_after(gt.main_text, gt.line_end[id(title.placed[-1])]))]
    for p in range(pages):
        for f in range(2):
            if (p, f) == (pages - 1, 1):
                break
            ln = last_line(flow.blocks, lambda x, p=p, f=f: x.page == p and x.frame == f)
            checks.append(boundary_check(gt.main_text, gt.line_end[id(ln)]))
    if interleave_rows:
        for ln in (ln for b in flow.blocks for ln in b.placed):
            ln.draw_key = ln.baseline * 1000 + ln.x
    furniture = _header_footer(canvas, pages, None, str, SMALL, 0, A4[1] - 40, margin)
    return _finish(canvas, flow, pages, furniture, _out(tmp_dir, "two_column.pdf"), checks, "en", gt)


def side_note(tmp_dir: str | Path, *, seed: int = 0) -> GeneratedDoc:
    """One A4 page: three paragraphs in a 330 pt main column and a 2–3 line margin note
    (9 pt) in the right margin beside paragraph 2: ``side_note.pdf``.

    Reading order is p1, p2, note, p3. The note is written into the content
    stream right after p2's first line (where a typesetter anchors it), so
    following the stream would interrupt p2. ``order_checks`` pin: end of p2
    before the note, the note before p3, and phrases that cross p2's line
    breaks beside the note (present only if p2 is not interrupted) before the note.
    No furniture.
    """
    canvas = Canvas(A4, ("sans",))
    main = Frame(x=72, top=90, bottom=770, width=330)
    note_x, note_w = main.x + main.width + 24, 100.0
    flow = Flow(lambda p: [main])
    w = _Writer(canvas, flow, main.width)
    prose = EnglishProse(seed + 202)

    w.paragraph(prose.sentences(3))
    sentences = prose.sentences(3)
    while len(w.lines(sentences, BODY)) < 6:
        sentences.append(prose.sentence())
    p2 = w.paragraph(sentences)
    note_rows = next(
        rows for text in SIDE_NOTES if 2 <= len(rows := wrap_words(canvas, text.split(), NOTE, note_w)) <= 3
    )
    note_block = Block("sidenote", NOTE, [LineSpec(r) for r in note_rows])
    anchor = p2.placed[1]
    flow.add_fixed(note_block, 0, note_x, anchor.baseline - BODY.ascent_offset)
    for i, ln in enumerate(note_block.placed):
        ln.draw_key = p2.placed[0].draw_key + (i + 1) / 10
    w.paragraph(prose.sentences(3))  # flow.blocks is now p1, p2, note, p3: the reading order

    gt = assemble(flow.blocks, 1)
    end = gt.line_end
    text = gt.main_text
    note_first = phrase_after(text, end[id(p2.placed[-1])])
    checks = [
        (phrase_before(text, end[id(p2.placed[-1])]), note_first),
        (phrase_before(text, end[id(note_block.placed[-1])]), phrase_after(text, end[id(note_block.placed[-1])])),
    ]
    checks += [(_crossing_phrase(text, end[id(p2.placed[i])]), note_first) for i in range(3)]
    return _finish(canvas, flow, 1, [], _out(tmp_dir, "side_note.pdf"), checks, "en", gt)


def _crossing_phrase(text: str, offset: int) -> str:
    """A unique phrase spanning the line break at ``offset`` (two words each side at least)."""
    left = phrase_before(text, offset)
    right = phrase_after(text, offset)
    left_words, right_words = left.split()[-2:], right.split()[:2]
    phrase = " ".join(left_words + right_words)
    return phrase if normalize_ws(text).count(phrase) == 1 else f"{left} {right}"


def long_textlayer(tmp_dir: str | Path, pages: int = 100, *, seed: int = 0, brief: bool = False) -> GeneratedDoc:
    """``pages`` A4 pages of born-digital text, fast (1,000 pages in a few seconds):
    ``long_textlayer_<pages>.pdf``.

    Each page: header "Long Document Benchmark — Volume One", 2–3 paragraphs
    (no paragraph crosses a page), footer "Page n". The first paragraph of
    page n starts "Record n." so pages can be told apart. All ground-truth
    fields are filled exactly; ``order_checks`` are ("Record n.", "Record n+1.")
    for every page break. ``brief``: one paragraph of two sentences a page
    (``long_textlayer_<pages>_brief.pdf``; a few lines, quick to OCR once
    rasterized).
    """
    if pages < 1:
        raise ValueError("pages must be >= 1")
    canvas = Canvas(A4, ("sans",))
    frame = Frame(x=72, top=90, bottom=770, width=A4[0] - 144)
    flow = Flow(lambda p: [frame])
    w = _Writer(canvas, flow, frame.width)
    prose = EnglishProse(seed + 303)
    for p in range(pages):
        if p:
            flow.next_page()
        if brief:
            w.paragraph([f"Record {p + 1}.", *prose.sentences(2)])
            continue
        w.paragraph([f"Record {p + 1}.", *prose.sentences(prose.rng.randint(3, 5))])
        for _ in range(prose.rng.randint(1, 2)):
            w.paragraph(prose.sentences(prose.rng.randint(3, 5)))
    checks = [(f"Record {n}.", f"Record {n + 1}.") for n in range(1, pages)]
    furniture = _header_footer(canvas, pages, LONG_HEADER, lambda n: f"Page {n}", SMALL, 50, A4[1] - 40, 72)
    name = f"long_textlayer_{pages}{'_brief' if brief else ''}.pdf"
    return _finish(canvas, flow, pages, furniture, _out(tmp_dir, name), checks, "en")
