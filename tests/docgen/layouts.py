"""Generated documents for reading quality: tables, a figure inside two columns, page furniture.

Each generator writes one born-digital A4 PDF into ``tmp_dir`` and returns a
:class:`LayoutDoc`: the usual :class:`~tests.docgen.truth.GeneratedDoc` (so
``rasterize``/``to_tiff``/``to_png`` work unchanged) plus a
:class:`LayoutTruth` (tables cell by cell, order phrases, absent/present
strings, captions). ``LayoutDoc.scan(out_path, dpi=200)`` is the image-only
version with the same truth.

=====================  ======================================================
bordered_table         paragraph, "Table 1. ..." caption, 7 x 4 table with
                       every cell ruled (header row), paragraph
borderless_table       the same with only a rule under the header; numeric
                       columns right-aligned ("12.5", "1,204", "-3.1%")
spanning_table         ruled table: "Score" spans 2 columns over "simple" /
                       "complex"; "Method" and "Pages per minute" span 2 rows
table_across_pages     41 x 3 ruled table (grey header) from mid page 1 on to
                       page 2, header repeated there; footers "Page n of 2".
                       Truth: ONE table, the header once. ``pages=3``: the
                       same over 3 pages (page 2 all rows)
two_columns_figure     title, two columns, a full-width bar chart (no text) in
                       the middle of the page with a centred caption crossing
                       the gutter; paragraphs run through the figure, read
                       left column top to bottom, then right column
single_page_furniture  one page: journal line, DOI and a rule at the top,
                       "Page 1 of 1" and "Downloaded from ..." at the bottom,
                       title, headings, paragraphs
=====================  ======================================================

Plain text (``GeneratedDoc.main_text``) follows :mod:`tests.docgen.truth`,
with two additions: a table is one block of one line per row, the texts of
the cells whose top-left corner is in that row joined by one space (the
header once, even where it is repeated on a later page; per-page text
includes the repeated header); the figure caption of ``two_columns_figure``
is the last block (its place in the reading order is not pinned by
``order``). Furniture strings are in ``GeneratedDoc.furniture`` and
``LayoutTruth.absent``, never in ``main_text``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from evaluation.metrics import normalize_ws
from tests.docgen.documents import SMALL, TITLE, _Writer
from tests.docgen.layout import A4, Block, Canvas, Flow, Frame, LineSpec, Style, wrap_words
from tests.docgen.prose import EnglishProse
from tests.docgen.raster import rasterize
from tests.docgen.truth import GeneratedDoc

# --- the truth --------------------------------------------------------------------

#: ``(row, col, row_span, col_span, text)``; row/col 0-based, of the top-left position.
Cell = tuple[int, int, int, int, str]


@dataclass(frozen=True)
class TruthTable:
    """One logical table.

    - ``page``: 1-based page where it starts; ``last_page`` where it ends.
    - ``cells``: every cell as drawn, header rows included, spans as drawn,
      sorted by (row, col); together they cover the ``n_rows x n_cols`` grid
      exactly once. A header repeated on a later page is NOT repeated here.
    - ``caption``: the caption text, or ``None``.
    """

    page: int
    n_rows: int
    n_cols: int
    cells: list[Cell]
    caption: str | None = None
    last_page: int = 0

    def __post_init__(self) -> None:
        if not self.last_page:
            object.__setattr__(self, "last_page", self.page)


@dataclass(frozen=True)
class LayoutTruth:
    """What a perfect parser gets right about a page's layout.

    - ``tables``: the tables, in reading order.
    - ``order``: phrases (6–10 words, each occurring once in the main text)
      that must appear in this order in the main text.
    - ``absent``: furniture strings that must not appear in the Markdown/text.
    - ``present``: strings that must appear (titles, headings, captions,
      first sentences of body paragraphs).
    - ``captions``: table/figure captions.
    """

    tables: list[TruthTable] = field(default_factory=list)
    order: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    captions: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class LayoutDoc:
    """A generated document: ``doc`` (file, texts, furniture, ``order_checks`` = consecutive
    ``order`` pairs) and ``truth``. ``rasterize(layout_doc.doc, ...)`` works as for any
    GeneratedDoc; :meth:`scan` does the same and keeps ``truth``."""

    doc: GeneratedDoc
    truth: LayoutTruth

    @property
    def pdf_path(self) -> Path:
        return self.doc.pdf_path

    def scan(self, out_path: str | Path, dpi: int = 200, *, jpeg_quality: int | None = None) -> LayoutDoc:
        """Image-only grayscale PDF of this document (:func:`tests.docgen.raster.rasterize`)."""
        return LayoutDoc(rasterize(self.doc, dpi, out_path, jpeg_quality=jpeg_quality), self.truth)


# --- styles and geometry ------------------------------------------------------------

CELL = Style("sans", 10, 14)
CELL_BOLD = Style("sansbold", 10, 14)
CAPTION = Style("sans", 10, 14)
ROW_H = 18.0
PAD = 5.0
MARGIN = 72.0
TEXT_W = A4[0] - 2 * MARGIN
TOP, BOTTOM = 80.0, 770.0

# two_columns_figure geometry (points, origin top-left)
FIG_MARGIN, FIG_GUTTER = 56.0, 30.0
FIG_COL_W = (A4[0] - 2 * FIG_MARGIN - FIG_GUTTER) / 2
FIG_TOP, FIG_HEIGHT = 330.0, 160.0


# --- drawing ----------------------------------------------------------------------------


class _Drawing:
    """Text and vector graphics, written to the content stream in the order they are added."""

    def __init__(self) -> None:
        self.ops: list[tuple[int, str, tuple]] = []

    def text(self, page: int, x: float, baseline: float, text: str, style: Style) -> None:
        self.ops.append((page, "text", (x, baseline, text, style)))

    def block(self, block: Block) -> None:
        for ln in block.placed:
            self.text(ln.page, ln.x, ln.baseline, ln.text, ln.style)

    def rect(self, page: int, x: float, y: float, w: float, h: float, *, fill: int | None = None,
             stroke: bool = True, width: float = 0.6) -> None:  # fmt: skip
        self.ops.append((page, "rect", (x, y, w, h, fill, stroke, width)))

    def line(self, page: int, x1: float, y1: float, x2: float, y2: float, width: float = 0.6) -> None:
        self.ops.append((page, "line", (x1, y1, x2, y2, width)))

    def render(self, canvas: Canvas, n_pages: int, out: Path) -> None:
        used = {page for page, _, _ in self.ops}
        if used != set(range(n_pages)):
            raise RuntimeError(f"drawing uses pages {sorted(used)}, expected 0..{n_pages - 1}")
        pdf = canvas.pdf
        for p in range(n_pages):
            pdf.add_page()
            for page, kind, args in self.ops:
                if page != p:
                    continue
                if kind == "text":
                    x, baseline, text, style = args
                    pdf.set_font(style.font, size=style.size)
                    pdf.text(x, baseline, text)
                elif kind == "rect":
                    x, y, w, h, fill, stroke, width = args
                    pdf.set_line_width(width)
                    pdf.set_draw_color(0)
                    if fill is not None:
                        pdf.set_fill_color(fill)
                    pdf.rect(x, y, w, h, style=("DF" if stroke else "F") if fill is not None else "D")
                else:
                    x1, y1, x2, y2, width = args
                    pdf.set_line_width(width)
                    pdf.set_draw_color(0)
                    pdf.line(x1, y1, x2, y2)
        out.parent.mkdir(parents=True, exist_ok=True)
        pdf.output(str(out))


# --- tables ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Cell:
    row: int
    col: int
    text: str
    row_span: int = 1
    col_span: int = 1
    align: str = "L"  # L, R or C
    bold: bool = False


@dataclass(frozen=True)
class _Table:
    """A table to draw: cells covering the grid, column widths, rulings.

    ``rules``: ``"grid"`` (every cell's border) or ``"header"`` (one rule under
    the header rows only). ``header_fill``: grey level (0–255) behind the header.
    """

    cells: list[_Cell]
    n_rows: int
    n_cols: int
    header_rows: int
    widths: list[float]
    rules: str
    header_fill: int | None = None

    def check(self, canvas: Canvas) -> None:
        seen: set[tuple[int, int]] = set()
        for c in self.cells:
            for r in range(c.row, c.row + c.row_span):
                for k in range(c.col, c.col + c.col_span):
                    if (r, k) in seen or not (0 <= r < self.n_rows and 0 <= k < self.n_cols):
                        raise RuntimeError(f"cell {c} overlaps or leaves the grid")
                    seen.add((r, k))
            room = sum(self.widths[c.col : c.col + c.col_span]) - 2 * PAD
            if canvas.width(c.text, CELL_BOLD if c.bold else CELL) > room:
                raise RuntimeError(f"cell text {c.text!r} does not fit")
        if len(seen) != self.n_rows * self.n_cols:
            raise RuntimeError("cells do not cover the grid")

    def row_text(self, row: int) -> str:
        return " ".join(c.text for c in sorted(self.cells, key=lambda c: c.col) if c.row == row and c.text)

    def truth(self, page: int, caption: str | None, last_page: int = 0) -> TruthTable:
        ordered = sorted(self.cells, key=lambda c: (c.row, c.col))
        cells = [(c.row, c.col, c.row_span, c.col_span, c.text) for c in ordered]
        return TruthTable(page, self.n_rows, self.n_cols, cells, caption, last_page)


def _simple_table(header: list[str], rows: list[list[str]], widths: list[float], aligns: str, rules: str,
                  header_fill: int | None = None) -> _Table:  # fmt: skip
    """One header row (bold) over the body rows; ``aligns`` has one of L/R/C per column."""
    cells = [_Cell(0, k, t, align=aligns[k], bold=True) for k, t in enumerate(header)]
    cells += [_Cell(r, k, t, align=aligns[k]) for r, row in enumerate(rows, start=1) for k, t in enumerate(row)]
    return _Table(cells, 1 + len(rows), len(header), 1, widths, rules, header_fill)


def _draw_table(d: _Drawing, canvas: Canvas, t: _Table, page: int, x0: float, top: float, rows: list[int]) -> float:
    """Draw the header rows and body ``rows`` (consecutive) of ``t`` at ``(x0, top)`` on ``page``,
    row by row; return the bottom y."""
    visible = list(range(t.header_rows)) + rows
    vis = {r: i for i, r in enumerate(visible)}
    xs = [x0]
    for w in t.widths:
        xs.append(xs[-1] + w)
    if t.header_fill is not None:
        d.rect(page, x0, top, xs[-1] - x0, t.header_rows * ROW_H, fill=t.header_fill, stroke=False)
    for c in sorted((c for c in t.cells if c.row in vis), key=lambda c: (vis[c.row], c.col)):
        x, w = xs[c.col], xs[c.col + c.col_span] - xs[c.col]
        y, h = top + vis[c.row] * ROW_H, c.row_span * ROW_H
        if t.rules == "grid":
            d.rect(page, x, y, w, h)
        if not c.text:
            continue
        style = CELL_BOLD if c.bold else CELL
        tw = canvas.width(c.text, style)
        tx = {"L": x + PAD, "R": x + w - PAD - tw, "C": x + (w - tw) / 2}[c.align]
        d.text(page, tx, y + h / 2 + 0.36 * style.size, c.text, style)
    if t.rules == "header":
        y = top + t.header_rows * ROW_H
        d.line(page, x0, y, xs[-1], y, width=0.8)
    return top + len(visible) * ROW_H


# --- assembling the truth ------------------------------------------------------------------


@dataclass
class _Part:
    """A unit of the main text: its text per page (0-based), as a whole, and word runs
    (one per page and frame) from which order phrases may be picked."""

    pages: dict[int, str]
    whole: str
    segments: list[list[str]] = field(default_factory=list)


def _block_part(block: Block, *, order: bool = True) -> _Part:
    pages: dict[int, list[str]] = {}
    segments: list[list[str]] = []
    where = None
    for ln in block.placed:
        pages.setdefault(ln.page, []).append(ln.text)
        if (ln.page, ln.frame) != where:
            segments.append([])
            where = (ln.page, ln.frame)
        segments[-1] += ln.text.split()
    return _Part(
        {p: " ".join(t) for p, t in pages.items()},
        " ".join(ln.text for ln in block.placed),
        segments if order else [],
    )


def _table_part(t: _Table, rows_by_page: dict[int, list[int]]) -> _Part:
    head = [t.row_text(r) for r in range(t.header_rows)]
    pages = {p: "\n".join(head + [t.row_text(r) for r in rows]) for p, rows in rows_by_page.items()}
    return _Part(pages, "\n".join(t.row_text(r) for r in range(t.n_rows)))


def _pick(words: list[str], text: str, starts: range, stop: int) -> tuple[str, int, int] | None:
    """First phrase ``words[i:i+n]`` (n = 6..10, i in ``starts``, i+n <= stop) occurring once in ``text``."""
    for i in starts:
        for n in range(6, 11):
            if i + n > stop:
                break
            phrase = " ".join(words[i : i + n])
            if text.count(phrase) == 1:
                return phrase, i, i + n
    return None


def _order_phrases(parts: list[_Part], main_text: str) -> list[str]:
    """Per word run: a unique phrase near its start and, if the run is long, one near its end."""
    text = normalize_ws(main_text)
    phrases: list[str] = []
    for part in parts:
        for words in part.segments:
            first = _pick(words, text, range(0, max(0, len(words) - 5)), len(words))
            if first is None:
                continue
            phrases.append(first[0])
            if len(words) - first[2] >= 16:
                tail = range(len(words) - 10, first[2] - 1, -1)
                last = _pick(words, text, tail, len(words))
                if last is not None:
                    phrases.append(last[0])
    return phrases


def _finish(canvas: Canvas, d: _Drawing, n_pages: int, parts: list[_Part], furniture: list[tuple[int, str]],
            out: Path, *, tables: list[TruthTable], captions: list[str], present: list[str]) -> LayoutDoc:  # fmt: skip
    """Draw the PDF and package both truths."""
    d.render(canvas, n_pages, out)
    main_text = "\n\n".join(p.whole for p in parts)
    per_page = ["\n\n".join(p.pages[i] for p in parts if i in p.pages) for i in range(n_pages)]
    order = _order_phrases(parts, main_text)
    per_page_furniture: list[list[str]] = [[] for _ in range(n_pages)]
    for page, text in furniture:
        per_page_furniture[page].append(text)
    absent = list(dict.fromkeys(text for _, text in furniture))
    norm = normalize_ws(main_text)
    for s in absent:
        if normalize_ws(s) in norm:
            raise RuntimeError(f"furniture {s!r} occurs in the main text")
    doc = GeneratedDoc(
        pdf_path=out,
        pages=n_pages,
        main_text_per_page=per_page,
        main_text=main_text,
        furniture=per_page_furniture,
        order_checks=list(zip(order, order[1:])),
        page_size=canvas.page_size,
        language="en",
    )
    return LayoutDoc(doc, LayoutTruth(tables, order, absent, present, captions))


def _centred(canvas: Canvas, text: str, style: Style, width: float) -> list[LineSpec]:
    """``text`` wrapped to ``width``, every line centred in it (by its indent)."""
    rows = wrap_words(canvas, text.split(), style, width)
    return [LineSpec(r, indent=(width - canvas.words_width(r, style)) / 2) for r in rows]


def _first_sentences(blocks: list[Block]) -> list[str]:
    out = []
    for b in blocks:
        text = " ".join(ln.text for ln in b.placed)
        out.append(text[: text.index(". ") + 1] if ". " in text else text)
    return out


# --- single-table pages -------------------------------------------------------------------


BORDERED_CAPTION = "Table 1. Regional offices, their main activity and staff numbers."
BORDERED_HEADER = ["Region", "Main activity", "Staff", "Opened"]
BORDERED_ROWS = [
    ["Northern", "Spare parts", "214", "1998"],
    ["Southern", "Service contracts", "167", "2004"],
    ["Eastern", "Logistics", "92", "2011"],
    ["Western", "Assembly", "305", "1987"],
    ["Central", "Research", "58", "2016"],
    ["Coastal", "Export sales", "131", "2008"],
]

BORDERLESS_CAPTION = "Table 1. Revenue (EUR million), units sold and change by segment in 2025."
BORDERLESS_HEADER = ["Segment", "Revenue", "Units", "Change"]
BORDERLESS_ROWS = [
    ["Spare parts", "12.5", "1,204", "-3.1%"],
    ["Service contracts", "48.0", "312", "7.4%"],
    ["Installations", "9.75", "86", "12.0%"],
    ["Software licences", "3.2", "2,950", "-0.8%"],
    ["Training", "1.05", "410", "25.3%"],
    ["Total", "74.5", "4,962", "4.6%"],
]

SPANNING_CAPTION = "Table 1. Reading scores on simple and complex pages, with throughput."
SPANNING_ROWS = [
    ["Baseline", "71.2", "48.5", "120"],
    ["Layout only", "78.9", "55.1", "96"],
    ["OCR only", "80.4", "61.7", "35"],
    ["Combined", "86.3", "70.2", "31"],
    ["Combined + tables", "88.1", "74.9", "27"],
]


def _table_page(tmp_dir: str | Path, name: str, title: str, caption: str, table: _Table, seed: int) -> LayoutDoc:
    """One A4 page: title, paragraph, centred caption, the table (centred), paragraph."""
    canvas = Canvas(A4, ("sans", "sansbold"))
    table.check(canvas)
    frame = Frame(MARGIN, TOP, BOTTOM, TEXT_W)
    flow = Flow(lambda p: [frame])
    w = _Writer(canvas, flow, frame.width)
    prose = EnglishProse(seed)
    d = _Drawing()

    head = w.heading(title, TITLE, kind="title")
    p1 = w.paragraph(prose.sentences(4))
    cap = w.block("caption", _centred(canvas, caption, CAPTION, frame.width), CAPTION, 14.0)
    table_top = flow.y + 4
    x0 = MARGIN + (TEXT_W - sum(table.widths)) / 2
    for b in (head, p1, cap):
        d.block(b)
    flow.y = _draw_table(d, canvas, table, 0, x0, table_top, list(range(table.header_rows, table.n_rows))) + 10
    p2 = w.paragraph(prose.sentences(4))
    p3 = w.paragraph(prose.sentences(3))
    for b in (p2, p3):
        d.block(b)
    if flow.page != 0:
        raise RuntimeError("table page overflows")

    body_rows = list(range(table.header_rows, table.n_rows))
    parts = [_block_part(head), _block_part(p1), _block_part(cap), _table_part(table, {0: body_rows})]
    parts += [_block_part(p2), _block_part(p3)]
    return _finish(
        canvas, d, 1, parts, [], Path(tmp_dir) / f"{name}.pdf",
        tables=[table.truth(1, caption)], captions=[caption],
        present=[title, caption, *_first_sentences([p1, p2, p3])],
    )  # fmt: skip


def bordered_table(tmp_dir: str | Path, *, seed: int = 0) -> LayoutDoc:
    """One A4 page: title, paragraph, "Table 1. ..." caption over a 7 x 4 table with every
    cell ruled (bold header row; numbers right-aligned), two paragraphs: ``bordered_table.pdf``."""
    widths = [w * TEXT_W for w in (0.26, 0.34, 0.2, 0.2)]
    table = _simple_table(BORDERED_HEADER, BORDERED_ROWS, widths, "LLRR", "grid")
    return _table_page(tmp_dir, "bordered_table", "Regional Offices in 2025", BORDERED_CAPTION, table, seed + 401)


def borderless_table(tmp_dir: str | Path, *, seed: int = 0) -> LayoutDoc:
    """One A4 page like :func:`bordered_table`, but the 7 x 4 table has no rulings except one
    line under the header; numeric columns (and their headers) are right-aligned:
    ``borderless_table.pdf``."""
    widths = [w * TEXT_W for w in (0.37, 0.21, 0.21, 0.21)]
    table = _simple_table(BORDERLESS_HEADER, BORDERLESS_ROWS, widths, "LRRR", "header")
    return _table_page(tmp_dir, "borderless_table", "Results by Segment", BORDERLESS_CAPTION, table, seed + 402)


def spanning_table(tmp_dir: str | Path, *, seed: int = 0) -> LayoutDoc:
    """One A4 page like :func:`bordered_table` with a ruled 7 x 4 table whose two header rows
    hold "Method" (2 rows), "Score" (2 columns) over "simple" | "complex", and
    "Pages per minute" (2 rows): ``spanning_table.pdf``."""
    cells = [
        _Cell(0, 0, "Method", row_span=2, align="C", bold=True),
        _Cell(0, 1, "Score", col_span=2, align="C", bold=True),
        _Cell(0, 3, "Pages per minute", row_span=2, align="C", bold=True),
        _Cell(1, 1, "simple", align="C", bold=True),
        _Cell(1, 2, "complex", align="C", bold=True),
    ]
    cells += [
        _Cell(r, k, t, align="L" if k == 0 else "R")
        for r, row in enumerate(SPANNING_ROWS, start=2)
        for k, t in enumerate(row)
    ]
    widths = [w * TEXT_W for w in (0.34, 0.2, 0.2, 0.26)]
    table = _Table(cells, 2 + len(SPANNING_ROWS), 4, 2, widths, "grid")
    return _table_page(tmp_dir, "spanning_table", "Evaluation Results", SPANNING_CAPTION, table, seed + 403)


# --- a table over a page break ----------------------------------------------------------------

LONG_CAPTION = "Table 1. Open purchase orders at the end of the year."
LONG_HEADER = ["Code", "Description", "Amount"]
_ITEMS = ["Steel bracket", "Pump housing", "Drive belt", "Valve seal", "Cable drum", "Filter cartridge",
          "Bearing set", "Control panel", "Hose clamp", "Motor mount", "Gear wheel", "Sensor cable"]  # fmt: skip
_SIZES = ["small", "medium", "large", "type A", "type B", "heavy duty"]


def _long_rows(rng: random.Random, n: int) -> list[list[str]]:
    return [
        [f"A-{1001 + i}", f"{rng.choice(_ITEMS)}, {rng.choice(_SIZES)}", f"{rng.randint(1_000, 999_999) / 100:,.2f}"]
        for i in range(n)
    ]


def table_across_pages(tmp_dir: str | Path, *, seed: int = 0, rows: int | None = None, pages: int = 2) -> LayoutDoc:
    """``pages`` A4 pages: title, paragraphs, caption, then a ruled ``rows`` x 3 table (grey bold
    header, amounts right-aligned) that starts mid page 1 and goes on at the top of each later
    page with the header row repeated (a page in between full of rows); a paragraph after it.
    Footer "Page n of N" on every page: ``table_across_pages.pdf`` (``table_over_N_pages.pdf``
    for more than 2 pages). ``rows`` None: 40 on 2 pages; on more, as many as fill the pages in
    between and leave 8 for the last.

    Truth: one table of ``rows + 1`` rows (the header once), ``page=1``, ``last_page=pages``;
    per page, its rows under the repeated header.
    """
    canvas = Canvas(A4, ("sans", "sansbold"))
    frame = Frame(MARGIN, TOP, BOTTOM, TEXT_W)
    flow = Flow(lambda p: [frame])
    w = _Writer(canvas, flow, frame.width)
    prose = EnglishProse(seed + 404)
    d = _Drawing()
    footers = [(p, f"Page {p + 1} of {pages}") for p in range(pages)]

    head = w.heading("Purchasing Review", TITLE, kind="title")
    p1 = w.paragraph(prose.sentences(4))
    p2 = w.paragraph(prose.sentences(3))
    cap = w.block("caption", _centred(canvas, LONG_CAPTION, CAPTION, frame.width), CAPTION, 14.0)
    for b in (head, p1, p2, cap):
        d.block(b)
    top = flow.y + 4
    fit = int((BOTTOM - top) // ROW_H) - 1                 # body rows under the header on page 1
    full = int((BOTTOM - TOP) // ROW_H) - 1                # on a page of rows only
    if rows is None:
        rows = 40 if pages == 2 else fit + (pages - 2) * full + 8
    widths = [w_ * TEXT_W for w_ in (0.2, 0.55, 0.25)]
    table = _simple_table(LONG_HEADER, _long_rows(random.Random(seed + 404), rows), widths, "LLR", "grid", 225)
    table.check(canvas)
    last = rows - fit - (pages - 2) * full
    if not (fit >= 10 and 5 <= last <= full - 10):
        raise RuntimeError(f"{fit} rows fit on page 1, {last} are left for page {pages}: the table would not "
                           "break mid page")
    starts = [1, 1 + fit, *(1 + fit + k * full for k in range(1, pages - 1)), table.n_rows]
    by_page = {p: list(range(starts[p], starts[p + 1])) for p in range(pages)}
    y = _draw_table(d, canvas, table, 0, MARGIN, top, by_page[0])
    for p in range(1, pages):
        flow.next_page()
        y = _draw_table(d, canvas, table, p, MARGIN, flow.y, by_page[p])
    flow.y = y + 10
    p3 = w.paragraph(prose.sentences(4))
    d.block(p3)
    for page, text in footers:
        d.text(page, (A4[0] - canvas.width(text, SMALL)) / 2, A4[1] - 40, text, SMALL)

    parts = [_block_part(b) for b in (head, p1, p2, cap)]
    parts += [_table_part(table, by_page), _block_part(p3)]
    name = "table_across_pages.pdf" if pages == 2 else f"table_over_{pages}_pages.pdf"
    return _finish(
        canvas, d, pages, parts, footers, Path(tmp_dir) / name,
        tables=[table.truth(1, LONG_CAPTION, last_page=pages)], captions=[LONG_CAPTION],
        present=["Purchasing Review", LONG_CAPTION, *_first_sentences([p1, p2, p3])],
    )  # fmt: skip


# --- a figure inside two columns ---------------------------------------------------------------

FIGURE_TITLE = "Winter Deliveries in Mountain Towns"
FIGURE_CAPTION = "Figure 1. Parcels delivered per week in the four mountain districts, winter 2024."
_BARS = [0.45, 0.62, 0.58, 0.81, 0.93, 0.74, 0.66, 0.52, 0.70, 0.88, 0.97, 0.60]


def _figure_frames(p: int) -> list[Frame]:
    """Reading order: left column above and below the figure, then the right column."""
    above_top, above_bottom = 130.0, FIG_TOP - 12
    below_top, below_bottom = FIG_TOP + FIG_HEIGHT + 40, 780.0
    left, right = FIG_MARGIN, FIG_MARGIN + FIG_COL_W + FIG_GUTTER
    return [
        Frame(left, above_top, above_bottom, FIG_COL_W),
        Frame(left, below_top, below_bottom, FIG_COL_W),
        Frame(right, above_top, above_bottom, FIG_COL_W),
        Frame(right, below_top, below_bottom, FIG_COL_W),
    ]


def _draw_chart(d: _Drawing, x: float, y: float, w: float, h: float) -> None:
    """A bar chart with axes and no text, in a thin frame."""
    d.rect(0, x, y, w, h, width=0.5)
    ax0, ay0, ax1, ay1 = x + 30, y + h - 20, x + w - 20, y + 15  # axes origin bottom-left
    d.line(0, ax0, ay0, ax1, ay0, width=0.8)
    d.line(0, ax0, ay0, ax0, ay1, width=0.8)
    slot = (ax1 - ax0) / len(_BARS)
    for i, v in enumerate(_BARS):
        bh = v * (ay0 - ay1)
        d.rect(0, ax0 + i * slot + slot * 0.2, ay0 - bh, slot * 0.6, bh, fill=150, stroke=False)


def _mid_paragraph_breaks(flow: Flow) -> bool:
    """Does some paragraph run across every frame boundary of page 0?"""
    crossed = {
        (ln.frame, nxt.frame) for b in flow.blocks for ln, nxt in zip(b.placed, b.placed[1:]) if ln.frame != nxt.frame
    }
    return crossed >= {(0, 1), (1, 2), (2, 3)}


def two_columns_figure(tmp_dir: str | Path, *, seed: int = 0) -> LayoutDoc:
    """One A4 page: a full-width title, two columns of paragraphs, and in the middle of the
    page a bar chart (no text) spanning both columns with the centred one-line caption
    "Figure 1. ..." under it, crossing the gutter: ``two_columns_figure.pdf``.

    Paragraphs flow down the left column above the figure, on below it, then into the
    right column above and below it; a paragraph is cut mid-sentence at each of those
    three breaks (prose is redrawn until this holds), so the reading order is unambiguous.
    The content stream has the caption right after the text above the figure in the
    left column. Truth ``order``: phrases within each column part, in that order.
    """
    canvas = Canvas(A4, ("sans", "sansbold"))
    full_w = A4[0] - 2 * FIG_MARGIN
    for attempt in range(100):
        flow = Flow(_figure_frames)
        prose = EnglishProse(seed * 1000 + 505 + attempt)
        w = _Writer(canvas, flow, FIG_COL_W)
        w.fill_page(prose, reserve=0)
        if flow.page == 0 and _mid_paragraph_breaks(flow):
            break
    else:
        raise RuntimeError("no prose found that runs through the figure")
    title_rows = wrap_words(canvas, FIGURE_TITLE.split(), TITLE, full_w)
    if len(title_rows) != 1:
        raise RuntimeError("the title must be one line")
    title = Flow(_figure_frames).add_fixed(Block("title", TITLE, [LineSpec(r) for r in title_rows]), 0, FIG_MARGIN, 80)
    cap_block = Block("caption", CAPTION, _centred(canvas, FIGURE_CAPTION, CAPTION, full_w))
    cap = Flow(_figure_frames).add_fixed(cap_block, 0, FIG_MARGIN, FIG_TOP + FIG_HEIGHT + 8)
    if len(cap.placed) != 1:
        raise RuntimeError("the figure caption must be one line")

    d = _Drawing()
    d.block(title)
    chart_drawn = False
    for ln in (ln for b in flow.blocks for ln in b.placed):
        if ln.frame == 1 and not chart_drawn:  # a typesetter emits the float here
            _draw_chart(d, FIG_MARGIN, FIG_TOP, full_w, FIG_HEIGHT)
            d.block(cap)
            chart_drawn = True
        d.text(ln.page, ln.x, ln.baseline, ln.text, ln.style)

    parts = [_block_part(title)] + [_block_part(b) for b in flow.blocks] + [_block_part(cap, order=False)]
    return _finish(
        canvas, d, 1, parts, [], Path(tmp_dir) / "two_columns_figure.pdf",
        tables=[], captions=[FIGURE_CAPTION], present=[FIGURE_TITLE, FIGURE_CAPTION],
    )  # fmt: skip


# --- furniture on a single page ----------------------------------------------------------------

JOURNAL_LINE = "Journal of Applied Widgets, Vol. 12, No. 3 (2021), pp. 45–67"
DOI_LINE = "https://doi.org/10.1234/jaw.2021.0045"
PAGE_LINE = "Page 1 of 1"
DOWNLOAD_LINE = "Downloaded from https://example.org/ on 12 March 2023"
ARTICLE_TITLE = "Measuring Widget Durability in Cold Climates"
ARTICLE_HEADINGS = ["1. Introduction", "2. Field Trials"]


def single_page_furniture(tmp_dir: str | Path, *, seed: int = 0) -> LayoutDoc:
    """One A4 page, an article's first page: journal line and DOI (9 pt) over a thin rule at
    the top; title, "1. Introduction", paragraphs, "2. Field Trials", paragraphs; "Page 1 of 1"
    and "Downloaded from https://example.org/ on 12 March 2023" at the bottom:
    ``single_page_furniture.pdf``.

    Truth: the four furniture strings in ``absent`` (and ``GeneratedDoc.furniture``);
    title, headings and each paragraph's first sentence in ``present``; ``order`` over the body.
    The stream holds the header first and the footer last.
    """
    canvas = Canvas(A4, ("sans", "sansbold"))
    frame = Frame(MARGIN, 100, 760, TEXT_W)
    flow = Flow(lambda p: [frame])
    w = _Writer(canvas, flow, frame.width)
    prose = EnglishProse(seed + 606)

    w.heading(ARTICLE_TITLE, TITLE, kind="title")
    w.heading(ARTICLE_HEADINGS[0])
    w.paragraph(prose.sentences(4))
    w.paragraph(prose.sentences(3))
    w.heading(ARTICLE_HEADINGS[1])
    w.fill_page(prose, reserve=0, max_sentences=5)
    if flow.page != 0:
        raise RuntimeError("article overflows its page")

    d = _Drawing()
    furniture = [(0, JOURNAL_LINE), (0, DOI_LINE), (0, PAGE_LINE), (0, DOWNLOAD_LINE)]
    d.text(0, MARGIN, 48, JOURNAL_LINE, SMALL)
    d.text(0, MARGIN, 61, DOI_LINE, SMALL)
    d.line(0, MARGIN, 70, A4[0] - MARGIN, 70, width=0.5)
    for b in flow.blocks:
        d.block(b)
    d.text(0, (A4[0] - canvas.width(PAGE_LINE, SMALL)) / 2, A4[1] - 48, PAGE_LINE, SMALL)
    d.text(0, (A4[0] - canvas.width(DOWNLOAD_LINE, SMALL)) / 2, A4[1] - 28, DOWNLOAD_LINE, SMALL)

    paragraphs = [b for b in flow.blocks if b.kind == "paragraph"]
    return _finish(
        canvas, d, 1, [_block_part(b) for b in flow.blocks], furniture, Path(tmp_dir) / "single_page_furniture.pdf",
        tables=[], captions=[], present=[ARTICLE_TITLE, *ARTICLE_HEADINGS, *_first_sentences(paragraphs)],
    )  # fmt: skip


#: name -> generator(tmp_dir) with default arguments.
LAYOUT_GENERATORS: dict[str, Callable[[str | Path], LayoutDoc]] = {
    "bordered_table": bordered_table,
    "borderless_table": borderless_table,
    "spanning_table": spanning_table,
    "table_across_pages": table_across_pages,
    "two_columns_figure": two_columns_figure,
    "single_page_furniture": single_page_furniture,
}
