"""Reading order of lines by recursive XY-cut.

A region (a set of lines) is cut in this order:

1. **Horizontally**, into *bands* separated by whitespace that spans the
   whole region. Adjacent bands that share a column structure are fused
   again (see below), so a two-column body is not chopped into rows.
2. **Vertically**, into *columns* separated by a whitespace gutter at least
   ``min_gutter`` wide that no line crosses.
3. Neither, or the columns look like a table's (three or more, of lines
   of a few words), or like labels and what they label (two columns, one
   of short labels each on a row of the other: an option or definition
   list, a glossary, a form; equation numbers, prices at the right; not
   a sidebar beside a paragraph, which runs on across its rows): the
   lines are read row by row,
   left to right — unless
   the lines are known to be text in columns (``columnar``: an index the
   layout model took for a table or a picture, its short lines boxed in
   fragments), which is read column by column.

Each part is ordered recursively, top to bottom / left to right::

    ┌──────────── title ────────────┐   band 1 (crosses the gutter)
    │ col A, part 1 │ col B, part 1 │   bands 2…k fused: they share the
    │ col A, part 2 │ col B, part 2 │   gutter → cut vertically: A then B
    ┌───────── full-width heading ──┐   band k+1
    │ col A         │ col B         │   bands fused again: A then B

**Fusing bands.** Two columns whose paragraph gaps happen to line up would
give a full-width horizontal gap and, cut there, the order A1 B1 A2 B2. So
adjacent bands are fused when both have lines on both sides of a common
gutter that no line of either crosses (two rows agreeing on a gutter: a
*columnar* group; one row with a gap is just as likely an OCR line in
fragments). Then a band next to a columnar group joins it when it runs
across one of the group's gutters too, or lies within one of its columns
(≥ :data:`INSIDE_FRACTION` of its width): a column that runs longer than
the other, or starts higher. A full-width element crosses
every gutter, so it stays a band of its own between column groups, and so
does a centred line (an author or a date) that straddles the gutter.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from longdoc.layout.geometry import LineBox, column_spans, merge_intervals, same_row
from longdoc.layout.text import is_cjk_char

#: share of a one-sided band's width that must lie within a column of the
#: band it is fused with
INSIDE_FRACTION = 0.8
#: a region cut into this many columns or more whose median line has at most
#: TABLE_MAX_WORDS words is a table: it is read row by row
TABLE_COLUMNS = 3
TABLE_MAX_WORDS = 3
#: two columns are labels and what they label (read row by row) when one of
#: them (the labels) has a median line of at most LABEL_MAX_WORDS words, its
#: widest line at most LABEL_WIDTH_SHARE of the other column's width, and at
#: least LABEL_ROW_SHARE of its lines on a row of a line of the other column
#: (two columns of running text have lines of many words, and a sidebar
#: column of text lines as wide as its column)
LABEL_MAX_WORDS = 3
LABEL_WIDTH_SHARE = 0.5
LABEL_ROW_SHARE = 0.8
#: ... unless the lines of the other column right above the labels' rows
#: mostly run to LABEL_FULL_SHARE of that column's width or more and read as
#: prose (PROSE_WORDS words of two letters or more): that text goes on across
#: the labels' rows (a paragraph beside a sidebar of short lines or a pull
#: quote), where a description starts on its label's row after the short
#: last line of the one before, and centred equations or menu items of about
#: one width are no paragraph
LABEL_FULL_SHARE = 0.85
PROSE_WORDS = 6


@dataclass(frozen=True)
class _Cut:
    """What counts as a column: separated by a gutter ≥ ``min_gutter`` and
    at least ``min_width`` wide (both in points)."""

    min_gutter: float
    min_width: float
    columnar: frozenset[int] = frozenset()  # lines known to be text in columns

    def spans(self, spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
        """Union of x-intervals, fusing gaps narrower than a gutter."""
        return merge_intervals(spans, self.min_gutter)

    def columns(self, spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
        """Like :meth:`spans`, with runs narrower than a column fused into
        their neighbour (a bullet boxed apart from its item)."""
        return column_spans(spans, self.min_gutter, self.min_width)


@dataclass
class _Group:
    """Lines of fused bands plus their x-extent (for the gutter test)."""

    lines: list[LineBox] = field(default_factory=list)
    spans: list[tuple[float, float]] = field(default_factory=list)
    min_x: float = float("inf")
    max_x: float = float("-inf")
    #: fused from bands that agree on a gutter (a column structure)
    columnar: bool = False

    def add(self, band: _Group) -> None:
        self.lines.extend(band.lines)
        self.spans.extend(band.spans)
        self.min_x = min(self.min_x, band.min_x)
        self.max_x = max(self.max_x, band.max_x)

    @staticmethod
    def of(lines: list[LineBox], cut: _Cut) -> _Group:
        spans = cut.spans([(l.x0, l.x1) for l in lines])
        return _Group(list(lines), spans, min(l.x0 for l in lines), max(l.x1 for l in lines))

    def spans_across(self, left: float, right: float) -> bool:
        return self.min_x <= left and self.max_x >= right


def reading_order(lines: Sequence[LineBox], min_gutter: float, min_column: float = 0.0,
                  columnar: Collection[int] = ()) -> list[LineBox]:
    """``lines`` in reading order (see the module docstring).

    ``min_gutter`` (points) is the narrowest whitespace taken as a column
    gutter; word gaps inside an OCR line must be narrower. ``min_column``
    (points) is the narrowest column: narrower runs (bullets boxed apart
    from their items, a column of numbers) stay with their neighbour, so
    they are read row by row. Lines whose ``idx`` is in ``columnar`` are
    known to be text in columns (the layout model took them for a table
    whose grid did not fit them, or for a picture): a region made mostly
    of them is never read as a table, though still row by row where one
    of its two columns labels the other's rows (a definition list the
    layout model called a table: each term beside its definition). Iterative, so a pathological page
    cannot exhaust the recursion limit; each step splits a region into
    strictly smaller ones, so it always terminates.
    """
    cut = _Cut(min_gutter, min_column, frozenset(columnar))
    out: list[LineBox] = []
    stack: list[list[LineBox]] = [list(lines)]
    while stack:
        region = stack.pop()
        if len(region) <= 1:
            out.extend(region)
            continue
        parts = _cut(region, cut)
        if parts is None:
            out.extend(row_by_row(region))
        else:
            stack.extend(reversed(parts))
    return out


def _cut(region: list[LineBox], cut: _Cut) -> list[list[LineBox]] | None:
    groups = _fuse(_bands(region, cut), cut)
    if len(groups) > 1:
        return [g.lines for g in groups]
    columns = _columns(region, cut)
    if len(columns) < 2 or _labelled_rows(columns) or (
            _table_like(region, columns) and not _known_columnar(region, cut)):
        return None
    return columns


def _table_like(region: list[LineBox], columns: list[list[LineBox]]) -> bool:
    """Three or more columns of short lines: a table, read row by row."""
    if len(columns) < TABLE_COLUMNS:
        return False
    words = sorted(len(l.text.split()) for l in region)
    return words[len(words) // 2] <= TABLE_MAX_WORDS


def _labelled_rows(columns: list[list[LineBox]]) -> bool:
    """Two columns, one of them short labels on the rows of the other: on
    the left (``-p`` beside "print the page", a term beside its definition)
    or on the right (an equation's number, a price, a page number set off by
    a wide gap): read row by row, each label beside what it labels. Rows are
    found by vertical overlap (:func:`~longdoc.layout.geometry.same_row`),
    so a skewed scan's rows still pair up."""
    if len(columns) != 2:
        return False
    return _labels_of(columns[0], columns[1]) or _labels_of(columns[1], columns[0])


def _labels_of(labels: list[LineBox], text: list[LineBox]) -> bool:
    """``labels`` are short (:data:`LABEL_MAX_WORDS`), narrow beside ``text``
    (:data:`LABEL_WIDTH_SHARE`), and nearly all (:data:`LABEL_ROW_SHARE`)
    on a row of ``text``, which does not run on across their rows
    (:func:`_runs_across`)."""
    if len(labels) < 2:
        return False
    words = sorted(_words(l.text) for l in labels)
    if words[len(words) // 2] > LABEL_MAX_WORDS:
        return False
    text_width = max(l.x1 for l in text) - min(l.x0 for l in text)
    if max(l.x1 - l.x0 for l in labels) > LABEL_WIDTH_SHARE * text_width:
        return False
    paired = sum(any(same_row(l, t) for t in text) for l in labels)
    return paired >= LABEL_ROW_SHARE * len(labels) and not _runs_across(labels, text)


def _runs_across(labels: list[LineBox], text: list[LineBox]) -> bool:
    """``text`` runs on across the rows of ``labels``: the line of ``text``
    right above most labels' rows is a full one (:data:`LABEL_FULL_SHARE`
    of the column's width) of prose (:data:`PROSE_WORDS`), as in a
    paragraph, not the end of an item, an equation or a menu item."""
    lo, hi = min(t.x0 for t in text), max(t.x1 for t in text)
    ordered = sorted(text, key=lambda t: t.cy)
    above = []
    for l in labels:
        first = next((i for i, t in enumerate(ordered) if same_row(l, t)), 0)
        if first:  # on a row of ``text`` below its first line
            above.append(ordered[first - 1])
    return 2 * sum(t.x1 - t.x0 >= LABEL_FULL_SHARE * (hi - lo) and _prose_words(t.text) >= PROSE_WORDS
                   for t in above) > len(above)


def _split_cjk(text: str) -> tuple[list[str], int]:
    """``text``'s space-separated words outside CJK, and its CJK characters
    counted (CJK writes no spaces between words)."""
    cjk = sum(is_cjk_char(ch) for ch in text)
    return "".join(" " if is_cjk_char(ch) else ch for ch in text).split(), cjk


def _words(text: str) -> int:
    """Words of ``text``, two CJK characters counting as one word."""
    latin, cjk = _split_cjk(text)
    return len(latin) + (cjk + 1) // 2


def _prose_words(text: str) -> int:
    """Words of two letters or more in ``text`` (two CJK characters count
    as one): prose has many, an equation or a price few."""
    latin, cjk = _split_cjk(text)
    return sum(sum(ch.isalpha() for ch in w) >= 2 for w in latin) + cjk // 2


def _known_columnar(region: list[LineBox], cut: _Cut) -> bool:
    """Most of ``region``'s lines are known to be text in columns."""
    return 2 * sum(l.idx in cut.columnar for l in region) > len(region)


def _row_groups(lines: list[LineBox]) -> list[list[LineBox]]:
    """``lines`` grouped into rows (lines sharing a row), top to bottom."""
    rows: list[list[LineBox]] = []
    for l in sorted(lines, key=lambda l: (l.cy, l.x0)):
        if rows and (same_row(l, rows[-1][0]) or same_row(l, rows[-1][-1])):
            rows[-1].append(l)
        else:
            rows.append([l])
    return rows


def _bands(region: list[LineBox], cut: _Cut) -> list[_Group]:
    """Split on horizontal whitespace spanning the whole region."""
    bands: list[list[LineBox]] = []
    bottom = float("-inf")
    for l in sorted(region, key=lambda l: (l.y0, l.x0)):
        if bands and l.y0 < bottom:
            bands[-1].append(l)
        else:
            bands.append([l])
        bottom = max(bottom, l.y1) if len(bands[-1]) > 1 else l.y1
    return [_Group.of(b, cut) for b in bands]


def _fuse(bands: list[_Group], cut: _Cut) -> list[_Group]:
    """Fuse bands top to bottom. A band fuses with the group above when
    both run across a common gutter (the result is *columnar*), or when one
    of the two is columnar and the other lies within one of its columns. A
    fused group may then fuse with the group above it in turn (a column
    that starts higher than its neighbour). A lone band with a gap inside
    (an OCR line in fragments) is not columnar."""
    out: list[_Group] = []
    for g in bands:
        while out and _compatible(out[-1], g, cut):
            above = out.pop()
            above.add(g)
            above.columnar = True
            g = above
        out.append(g)
    return out


def _compatible(above: _Group, below: _Group, cut: _Cut) -> bool:
    return (
        _both_across(above, below, cut)
        or (above.columnar and _inside_column(below, above, cut))
        or (below.columnar and _inside_column(above, below, cut))
    )


def _both_across(above: _Group, below: _Group, cut: _Cut) -> bool:
    union = cut.spans(above.spans + below.spans)
    return any(
        above.spans_across(left, right) and below.spans_across(left, right)
        for (_, left), (right, _) in zip(union, union[1:])
    )


def _inside_column(one: _Group, cols: _Group, cut: _Cut) -> bool:
    """``one`` lies on one side of a gutter that ``cols`` runs across, and
    for the most part (:data:`INSIDE_FRACTION`) within ``cols``' extent on
    that side."""
    union = cut.spans(one.spans + cols.spans)
    for (_, left), (right, _) in zip(union, union[1:]):
        if not cols.spans_across(left, right):
            continue
        if one.max_x <= left:
            lo, hi = cols.min_x, max(x1 for _, x1 in cols.spans if x1 <= left)
        elif one.min_x >= right:
            lo, hi = min(x0 for x0, _ in cols.spans if x0 >= right), cols.max_x
        else:
            continue
        width = one.max_x - one.min_x
        inside = min(hi, one.max_x) - max(lo, one.min_x)
        if (inside >= INSIDE_FRACTION * width) if width > 0 else (lo <= one.min_x <= hi):
            return True
    return False


def _columns(region: list[LineBox], cut: _Cut) -> list[list[LineBox]]:
    spans = cut.columns([(l.x0, l.x1) for l in region])
    if len(spans) <= 1:
        return [region]
    cols: list[list[LineBox]] = [[] for _ in spans]
    for l in region:
        i = next(k for k, (lo, hi) in enumerate(spans) if lo <= l.x0 <= hi)
        cols[i].append(l)
    return cols


def row_by_row(region: Sequence[LineBox]) -> list[LineBox]:
    """Lines that admit no cut (they overlap): top to bottom by centre,
    lines sharing a row left to right."""
    return [l for row in _row_groups(list(region)) for l in sorted(row, key=lambda l: l.x0)]
