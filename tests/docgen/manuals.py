"""Generated pages of the kinds real manuals hold: a contents page, a
multi-column index, a figure with labels, running heads of old books, a
numbered display of equations, a price list.

Each generator writes a one-page born-digital PDF (A4; an old book's page
is 5.5 x 8.5 in) into ``tmp_dir`` and returns a :class:`ManualPage`: the file and what a reader sees on it,
line by line, as printed (``lines``: every text line of the page in
reading order, leaders written as drawn: ``. . . .`` for spaced dots,
``....`` for dots set solid), plus what each scenario checks
(``entries``, ``labels``, ``furniture``…). :meth:`ManualPage.scan` is
the page as an office scanner makes it (:func:`~tests.docgen.raster.office_scan`).

=====================  ======================================================
contents_page          "Contents", chapter entries (bold, no leaders, page
                       number at the right edge), section entries with
                       leaders (spaced as TeX sets them, or solid), an entry
                       wrapped over two lines, roman page numbers
index_page             "Index" over columns of short entries, references
                       right-aligned and running onto further lines: page
                       numbers after leaders (``\\@tempa . . 60, 79, 86``)
                       or code-line references (``\\@tempa x451, y12``);
                       or two columns of words each with one page number
                       after a comma (``lists, 95``; ``字体，45``)
options_page           a usage page: a paragraph, options (``-p``,
                       ``--quiet``, ``-o FILE``) each with a one- or
                       two-line description starting on its row, a paragraph
figure_page            a paragraph, a bar chart with its labels (axis ticks
                       and title, months, a legend), its caption, a paragraph
old_book_page          one page of an old book, set close: a running head
                       holding the page number beside the title (``400
                       BRITISH HUSBANDRY. [Ch. XIX.``) and / or a lone
                       folio one blank line under the text
equations_page         a paragraph, a display of centred equations (plain
                       text: ``x - y = 4``), each numbered ``(3.2)`` flush
                       with the right margin, a paragraph
price_list_page        a paragraph, items at the left margin each with its
                       price (``5.50 EUR``) flush right, a paragraph
=====================  ======================================================
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.docgen.layout import A4, Canvas, Style, wrap_words
from tests.docgen.prose import ChineseProse, EnglishProse
from tests.docgen.raster import office_scan

MARGIN = 72.0
RIGHT = A4[0] - MARGIN
ENTRY = Style("sans", 10.5, 14.5)
CHAPTER = Style("sansbold", 10.5, 14.5)
TITLE = Style("sansbold", 17, 24)
#: TeX sets a leader dot every 0.75 em, on one grid for the whole page
SPACED_PITCH_EM = 0.75


@dataclass(frozen=True)
class ManualPage:
    """A generated page and what is printed on it.

    - ``lines``: each printed line's text, top to bottom (leaders as drawn);
    - ``entries``: contents or index entries, one string per entry as
      printed (a wrapped entry's two lines joined by a space);
    - ``labels``: texts drawn inside a figure;
    - ``furniture``: running heads and folios (not body text);
    - ``body``: the first words of each body paragraph.
    """

    pdf_path: Path
    lines: list[str]
    entries: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    furniture: list[str] = field(default_factory=list)
    body: list[str] = field(default_factory=list)

    def scan(self, out_path: str | Path, *, seed: int | str = 0, max_skew: float = 0.6) -> ManualPage:
        """The same page scanned at 200 dpi (grey, skewed, JPEG): an image-only PDF."""
        office_scan(self.pdf_path, out_path, seed=seed, max_skew=max_skew)
        return dataclasses.replace(self, pdf_path=Path(out_path))


class _Page:
    """One A4 page drawn text by text; keeps the printed lines in order."""

    def __init__(self, fonts: tuple[str, ...] = ("sans", "sansbold"), size: tuple[float, float] = A4) -> None:
        self.canvas = Canvas(size, fonts)
        self.canvas.pdf.add_page()
        self.lines: list[tuple[float, float, str]] = []  # (baseline, x, text)

    def text(self, x: float, baseline: float, text: str, style: Style, *, record: bool = True) -> float:
        """Draw ``text``; return its right edge."""
        pdf = self.canvas.pdf
        pdf.set_font(style.font, size=style.size)
        pdf.text(x, baseline, text)
        if record:
            self.lines.append((baseline, x, text))
        return x + self.canvas.width(text, style)

    def width(self, text: str, style: Style) -> float:
        return self.canvas.width(text, style)

    def printed(self) -> list[str]:
        """The recorded texts, those of one baseline joined left to right."""
        rows: dict[float, list[tuple[float, str]]] = {}
        for baseline, x, text in self.lines:
            rows.setdefault(round(baseline, 1), []).append((x, text))
        return [" ".join(t for _, t in sorted(rows[b])) for b in sorted(rows)]

    def save(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.canvas.pdf.output(str(path))
        return path


# --- contents -------------------------------------------------------------------------

#: (level, number, title, page); level 0 = chapter (bold, no leaders)
CONTENTS = [
    (1, "", "Preface", "vii"),
    (1, "", "Acknowledgements", "ix"),
    (0, "1", "Introduction", "1"),
    (1, "1.1", "Old versions", "2"),
    (1, "1.2", "Describing argument types", "3"),
    (1, "1.3", "Modifying argument descriptions", "5"),
    (0, "2", "Creating document commands", "8"),
    (1, "2.1", "Optional arguments", "9"),
    (1, "2.2", "Spacing and optional arguments", "11"),
    (1, "2.3", "Checking the configuration of a new installation against the defaults shipped "
               "with the distribution", "14"),
    (1, "2.4", "Testing special values", "17"),
    (1, "2.5", "Argument processors", "21"),
    (0, "3", "Copying and showing commands", "24"),
    (1, "3.1", "Body of an environment", "26"),
    (1, "3.2", "Fully expandable document commands", "29"),
    (0, "4", "Case changing", "33"),
]


def contents_page(tmp_dir: str | Path, *, leaders: str = "spaced") -> ManualPage:
    """One A4 page: "Contents" (bold, 17 pt), then :data:`CONTENTS` in 10.5 pt:
    chapters bold with their page number at the right edge and no leaders,
    the other entries indented with leader dots up to the page number
    (``leaders="spaced"``: a dot every 0.75 em on one grid, as TeX sets
    them; ``"solid"``: periods set one after the other), entry 2.3
    wrapped over two lines (the leaders and the number on the second):
    ``contents-<leaders>.pdf``.

    Truth: ``entries`` as printed, one per entry (a wrapped entry's lines
    joined by a space), with as many dots as drawn.
    """
    if leaders not in ("spaced", "solid", "none"):
        raise ValueError(f"leaders must be 'spaced', 'solid' or 'none', got {leaders!r}")
    page = _Page()
    page.text(MARGIN, 110, "Contents", TITLE)
    y = 150.0
    entries = []
    for level, number, title, folio in CONTENTS:
        style = CHAPTER if level == 0 else ENTRY
        if level == 0:
            y += 6
        x_number = MARGIN + (0 if level == 0 else 16)
        x_title = x_number + (page.width(number + "  ", style) if number else 0)
        folio_x = RIGHT - page.width(folio, style)
        room = folio_x - 2 * page.width(". ", style) - x_title
        rows = wrap_words(page.canvas, title.split(), style, room)
        if number:
            page.text(x_number, y, number, style)
        for row in rows[:-1]:
            page.text(x_title, y, " ".join(row), style)
            y += style.leading
        end = page.text(x_title, y, " ".join(rows[-1]), style)
        dots = "" if level == 0 or leaders == "none" else _leaders(page, end, folio_x, y, leaders)
        page.text(folio_x, y, folio, style)
        y += style.leading
        parts = [number, *(" ".join(r) for r in rows), dots, folio]
        entries.append(" ".join(p for p in parts if p))
    return ManualPage(page.save(Path(tmp_dir) / f"contents-{leaders}.pdf"), page.printed(), entries=entries)


def _leaders(page: _Page, start: float, stop: float, baseline: float, kind: str) -> str:
    """Draw leader dots between ``start`` and ``stop`` (a gap of about a dot's
    pitch kept on both sides); return them as printed."""
    if kind == "solid":
        step = page.width(".", ENTRY)
        count = int((stop - start - 2 * page.width(" ", ENTRY)) / step)
        dots = "." * count
        page.text(start + page.width(" ", ENTRY), baseline, dots, ENTRY, record=False)
        page.lines.append((baseline, start + 1, dots))
        return dots
    pitch = SPACED_PITCH_EM * ENTRY.size
    first = (int((start + pitch) / pitch) + 1) * pitch
    xs = []
    x = first
    while x + page.width(".", ENTRY) <= stop - 0.8 * pitch:
        page.text(x, baseline, ".", ENTRY, record=False)
        xs.append(x)
        x += pitch
    text = " ".join("." * len(xs))
    page.lines.append((baseline, start + 1, text))
    return text


#: a Chinese manual's contents (number, title, page), as ctex-style documents set them
CONTENTS_ZH = [
    ("1", "什么是 TeX？", "3"),
    ("2", "哪里可以下载中文套装软件？", "7"),
    ("3", "如何升级现有的发行版？", "8"),
    ("4", "我下载了一些新的宏包，该如何安装？", "8"),
    ("5", "基本版和完整版有什么区别？", "9"),
    ("6", "我是新手，该如何开始？", "9"),
    ("7", "能否举一个简单的排版例子？", "10"),
    ("8", "什么是导言区？", "10"),
    ("9", "什么是文件名数据库？怎么刷新？", "11"),
    ("10", "中英文混排时为何无法正确分行？", "13"),
    ("11", "如何生成支持拷贝粘贴的文件？", "14"),
    ("12", "如何设置双倍的行间距？", "15"),
]
ENTRY_ZH = Style("cjk", 10.5, 17.0)


def contents_page_zh(tmp_dir: str | Path) -> ManualPage:
    """One A4 page: "目录" over :data:`CONTENTS_ZH`, each entry a number, a
    Chinese title, spaced leader dots in the Latin font on TeX's grid and
    the page number at the right edge: ``contents-zh.pdf``. Truth:
    ``entries`` as printed, with as many dots as drawn."""
    page = _Page(("sans", "sansbold", "cjk"))
    page.text(MARGIN, 110, "目录", Style("cjk", 17, 24))
    y = 150.0
    entries = []
    for number, title, folio in CONTENTS_ZH:
        page.text(MARGIN, y, number, ENTRY)
        end = page.text(MARGIN + 22, y, title, ENTRY_ZH)
        folio_x = RIGHT - page.width(folio, ENTRY)
        dots = _leaders(page, end, folio_x, y, "spaced")
        page.text(folio_x, y, folio, ENTRY)
        entries.append(f"{number} {title} {dots} {folio}")
        y += ENTRY_ZH.leading
    return ManualPage(page.save(Path(tmp_dir) / "contents-zh.pdf"), page.printed(), entries=entries)


# --- index ------------------------------------------------------------------------------

INDEX = Style("sans", 8.5, 11.0)
INDEX_HEAD = Style("sansbold", 8.5, 11.0)
_MACROS = ["tempa", "tempb", "tempcnta", "tempdima", "tempswa", "temptokena", "ifnextchar", "gobble", "gobbletwo",
           "firstofone", "secondoftwo", "empty", "ifundefined", "namedef", "nameuse", "onlypreamble", "car", "cdr",
           "for", "tfor", "whilenum", "whiledim", "whilesw", "currsize", "currenvir", "ehc", "eha", "latexerr",
           "spaces", "dblarg", "xdblarg", "sptoken", "testopt", "protected", "makeother", "vobeyspaces",
           "startsection", "sect", "ssect", "xsect", "svsec", "hangfrom", "seccntformat", "dottedtocline",
           "tocline", "starttoc", "writefile", "mkboth", "outputpage", "makecol", "opcol", "colht", "colroom",
           "textmin", "mparbottom", "reinserts", "freelist", "toplist", "botlist", "midlist", "deferlist",
           "dbltoplist", "dbldeferlist", "currlist", "currbox", "floatpenalty", "fltovf", "largefloatcheck",
           "xnext", "setfloattyp", "floatplacement", "dblfloatplacement", "combinefloats", "cflt", "cflb"]


def index_page(tmp_dir: str | Path, *, seed: int = 0, columns: int = 3, refs: str = "pages",
               rows: int | None = None) -> ManualPage:
    """One A4 page: "Index" (bold, 17 pt) over ``columns`` columns of index
    entries in 8.5 pt, each a macro name and its references, right-aligned
    at the column's edge, running onto further lines as needed:
    ``refs="pages"``: page numbers after leader dots (``\\@tempa . . . .
    60, 79, 86``); ``refs="code lines"``: code-line references without
    leaders, as LaTeX's doc package sets them (``\\@tempa  x451, y12,
    b508``); ``refs="comma"``: a word and one page number after a comma,
    set close (``ligatures, 95``: the commonest index entry), ``rows``
    entries a column (all of :data:`INDEX_WORDS` spread over the columns
    when not given; more words come from generated prose);
    ``refs="full-width comma"``: the same in Chinese (``字体，45``, 10 pt
    WenQuanYi Micro Hei, "索引" as the title): ``index-<columns>-<refs>.pdf``.

    Truth: ``entries`` in reading order (column by column), an entry's
    lines joined by a space; ``lines``: every printed line.
    """
    if refs in ("comma", "full-width comma"):
        return _comma_index(tmp_dir, seed=seed, columns=columns, rows=rows, chinese=refs != "comma")
    if refs not in ("pages", "code lines"):
        raise ValueError(f"refs must be 'pages', 'code lines', 'comma' or 'full-width comma', got {refs!r}")
    rng = random.Random(seed)
    page = _Page()
    page.text(MARGIN, 100, "Index", TITLE)
    gutter = 18.0
    width = (RIGHT - MARGIN - (columns - 1) * gutter) / columns
    fits = [n for n in _MACROS if page.width(f"\\@{n} x999,", INDEX) + 12.0 <= width]  # a reference fits beside it
    names = sorted(rng.sample(fits, min(len(fits), 23 * columns)))
    per_column = (len(names) + columns - 1) // columns
    entries: list[str] = []
    printed: list[str] = []
    for k in range(columns):
        x, y = MARGIN + k * (width + gutter), 130.0
        for name in names[k * per_column:(k + 1) * per_column]:
            lines = _index_entry(page, rng, "\\@" + name, x, y, width, refs)
            printed += lines
            entries.append(" ".join(lines))
            y += len(lines) * INDEX.leading
    return ManualPage(page.save(Path(tmp_dir) / f"index-{columns}-{refs.replace(' ', '-')}.pdf"), ["Index", *printed],
                      entries=entries)


#: words of a book's index, each given one page number (``refs="comma"``)
INDEX_WORDS = ["abbreviations", "accents", "alignment", "appendix", "arrays", "arrows", "babel", "baselines",
               "bibliography", "boxes", "brackets", "captions", "chapters", "citations", "colours", "columns",
               "commands", "counters", "dashes", "dates", "ellipsis", "encodings", "equations", "figures", "floats",
               "fonts", "footnotes", "fractions", "glossaries", "headings", "hyphenation", "indentation",
               "italics", "kerning", "labels", "ligatures", "lists", "margins", "matrices", "numbering",
               "options", "packages", "paragraphs", "quotations", "references", "spacing", "symbols", "tables"]
#: the same for ``refs="full-width comma"``
INDEX_WORDS_ZH = ["版式", "标点", "标题", "表格", "参考文献", "插图", "尺寸", "长度", "抄录", "重音", "词汇表",
                  "单位", "导言区", "定理", "断行", "段落", "对齐", "分栏", "浮动体", "符号", "附录", "公式",
                  "行距", "行号", "汉字", "宏包", "环境", "计数器", "间距", "交叉引用", "脚注", "矩阵", "句号",
                  "列表", "命令", "目录", "排版", "偏移", "评注", "日期", "省略号", "数学", "缩进", "索引",
                  "题注", "图片", "页边距", "页码"]
INDEX_ZH = Style("cjk", 10, 13.0)
INDEX_ZH_HEAD = Style("cjk", 17, 24)


def _comma_index(tmp_dir: str | Path, *, seed: int, columns: int, rows: int | None, chinese: bool) -> ManualPage:
    """:func:`index_page` with ``refs="comma"`` or ``"full-width comma"``."""
    rng = random.Random(seed)
    style, comma = (INDEX_ZH, "，") if chinese else (INDEX, ", ")
    per_column = rows or (len(INDEX_WORDS_ZH if chinese else INDEX_WORDS) + columns - 1) // columns
    words = _index_terms(per_column * columns, chinese)
    page = _Page(("cjk",)) if chinese else _Page()
    page.text(MARGIN, 100, "索引" if chinese else "Index", INDEX_ZH_HEAD if chinese else TITLE)
    gutter = 18.0
    width = (RIGHT - MARGIN - (columns - 1) * gutter) / columns
    numbers = sorted(rng.sample(range(3, 990), len(words)))
    entries = []
    for k in range(columns):
        x, y = MARGIN + k * (width + gutter), 130.0
        for n in range(k * per_column, min(len(words), (k + 1) * per_column)):
            entry = f"{words[n]}{comma}{numbers[n]}"
            page.text(x, y, entry, style)
            entries.append(entry)
            y += style.leading
    name = "full-width-comma" if chinese else "comma"
    return ManualPage(page.save(Path(tmp_dir) / f"index-{columns}-{name}.pdf"), page.printed(), entries=entries)


def _index_terms(count: int, chinese: bool) -> list[str]:
    """``count`` distinct index terms: :data:`INDEX_WORDS` (or
    :data:`INDEX_WORDS_ZH`), then words of generated prose (English words
    of five letters or more; two-character pieces of Chinese sentences),
    sorted (English) or in the order found."""
    terms = list(INDEX_WORDS_ZH if chinese else INDEX_WORDS)
    prose = ChineseProse(4) if chinese else EnglishProse(4)
    while len(terms) < count:
        text = prose.sentence() if chinese else " ".join(prose.sentences(3))
        if chinese:
            runs = re.findall(r"[\u4e00-\u9fff]{4,}", text)
            found = [run[i:i + 2] for run in runs for i in range(0, len(run) - 1, 2)]
        else:
            found = [w.lower() for w in re.findall(r"[A-Za-z]{5,}", text)]
        terms += [w for w in found if w not in terms]
    terms = terms[:count]
    return terms if chinese else sorted(terms)


def _index_entry(page: _Page, rng: random.Random, head: str, x: float, y: float, width: float,
                 kind: str) -> list[str]:
    """Draw one index entry at (x, y); return its lines as printed."""
    count = rng.choice([1, 2, 3, 3, 4, 6]) if kind == "pages" else rng.randint(1, 8)
    numbers = sorted(rng.sample(range(12, 990), count))
    refs = [str(n) if kind == "pages" else f"{rng.choice('pvsxbyz')}{n}" for n in numbers]
    end = page.text(x, y, head, INDEX, record=False)
    rows: list[list[str]] = [[]]
    room = x + width - end - 12.0
    for ref in refs:
        if rows[-1] and page.width(", ".join([*rows[-1], ref]) + ",", INDEX) > room:
            rows.append([])
            room = width - 12.0
        rows[-1].append(ref)
    lines = []
    for i, row in enumerate(rows):
        text = ", ".join(row) + ("," if i < len(rows) - 1 else "")
        ref_x = x + width - page.width(text, INDEX)
        dots = _index_dots(page, end, ref_x, y) if i == 0 and kind == "pages" else ""
        page.text(ref_x, y + i * INDEX.leading, text, INDEX, record=False)
        lines.append(" ".join(p for p in ((head, dots, text) if i == 0 else (text,)) if p))
    return lines


def _index_dots(page: _Page, start: float, stop: float, baseline: float) -> str:
    """Spaced leader dots from ``start`` to ``stop`` on the page's grid; as printed."""
    pitch = SPACED_PITCH_EM * INDEX.size
    x = (int((start + pitch) / pitch) + 1) * pitch
    count = 0
    while x + page.width(".", INDEX) <= stop - 0.8 * pitch:
        page.text(x, baseline, ".", INDEX, record=False)
        x += pitch
        count += 1
    return " ".join("." * count)


# --- old books ----------------------------------------------------------------------------

BOOK = (396.0, 612.0)  # 5.5 x 8.5 in
BOOK_TEXT = Style("serif", 10.5, 13.0)
BOOK_MARGIN = 50.0


def old_book_page(tmp_dir: str | Path, *, head: tuple[str, ...] = (), foot: str | None = None, seed: int = 0,
                  name: str = "old-book") -> ManualPage:
    """One page of an old book (5.5 x 8.5 in, serif 10.5 pt on 13 pt, set
    close): ``head``, when given, is the running head's parts spread over
    the text width on the first row, one blank line above the text
    (``("400", "BRITISH HUSBANDRY.", "[Ch. XIX.")``: the folio at the left,
    the title centred, the chapter mark at the right; two parts: at the
    left and right edges; one part: at the left); then paragraphs with a
    first-line indent to the foot of the text; ``foot``, when given, is a
    folio centred one blank line under the text: ``<name>.pdf``.

    Truth: ``furniture`` (the running head as one string, the folio);
    ``body``: each paragraph's first five words; ``lines``: every printed
    line.
    """
    rng_prose = EnglishProse(seed + 707)
    page = _Page(("serif",), BOOK)
    width = BOOK[0] - 2 * BOOK_MARGIN
    furniture = []
    top = BOOK_MARGIN + 10
    if head:
        xs = _spread(page, list(head), BOOK_MARGIN, BOOK_MARGIN + width)
        for x, part in zip(xs, head):
            page.text(x, top, part, BOOK_TEXT)
        furniture.append(" ".join(head))
        top += BOOK_TEXT.leading  # one blank line under the head
    y, bottom = top + BOOK_TEXT.leading, BOOK[1] - BOOK_MARGIN - 2 * BOOK_TEXT.leading
    body = []
    while y < bottom - 2 * BOOK_TEXT.leading:
        words = " ".join(rng_prose.sentences(rng_prose.rng.randint(2, 4))).split()
        indent = 1.5 * BOOK_TEXT.size
        rows = wrap_words(page.canvas, words, BOOK_TEXT, width, first_indent=indent)
        rows = rows[:max(1, int((bottom - y) / BOOK_TEXT.leading))]
        body.append(" ".join(rows[0][:5]))
        for i, row in enumerate(rows):
            page.text(BOOK_MARGIN + (indent if i == 0 else 0.0), y, " ".join(row), BOOK_TEXT)
            y += BOOK_TEXT.leading
    if foot is not None:
        y += BOOK_TEXT.leading
        page.text((BOOK[0] - page.width(foot, BOOK_TEXT)) / 2, y, foot, BOOK_TEXT)
        furniture.append(foot)
    return ManualPage(page.save(Path(tmp_dir) / f"{name}.pdf"), page.printed(), furniture=furniture, body=body)


def _spread(page: _Page, parts: list[str], left: float, right: float) -> list[float]:
    """x of each part: the first at ``left``, the last ending at ``right``, a
    middle one centred."""
    xs = [left]
    if len(parts) == 1:
        return xs
    if len(parts) == 3:
        xs.append((left + right - page.width(parts[1], BOOK_TEXT)) / 2)
    xs.append(right - page.width(parts[-1], BOOK_TEXT))
    return xs


# --- a figure with labels -------------------------------------------------------------------

BODY = Style("sans", 10.5, 14.5)
LABEL = Style("sans", 9, 11)
FIGURE_LABELS = ["150", "100", "50", "0", "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Parcels", "Winter routes",
                 "Summer routes"]
FIGURE_CAPTION = "Figure 2. Parcels delivered per month on winter and summer routes."


def figure_page(tmp_dir: str | Path, *, seed: int = 0) -> ManualPage:
    """One A4 page: a paragraph, a bar chart in a thin frame with its labels
    (y-axis ticks 0–150, months under the bars, an axis title, a two-entry
    legend), the caption "Figure 2. ..." under it, a paragraph:
    ``figure.pdf``.

    Truth: ``labels`` (:data:`FIGURE_LABELS`, every text drawn inside the
    frame); ``body``: each paragraph's first five words.
    """
    prose = EnglishProse(seed + 808)
    page = _Page()
    width = RIGHT - MARGIN
    y = 110.0
    body = []
    for above in (True, False):
        if not above:  # the chart and its caption between the two paragraphs
            y = _chart(page, MARGIN + 40, y + 10, width - 80, 210.0) + 24
            page.text(MARGIN + (width - page.width(FIGURE_CAPTION, BODY)) / 2, y, FIGURE_CAPTION, BODY)
            y += 2 * BODY.leading
        rows = wrap_words(page.canvas, " ".join(prose.sentences(5)).split(), BODY, width)
        body.append(" ".join(rows[0][:5]))
        for row in rows:
            page.text(MARGIN, y, " ".join(row), BODY)
            y += BODY.leading
    return ManualPage(page.save(Path(tmp_dir) / "figure.pdf"), page.printed(), labels=list(FIGURE_LABELS), body=body)


def _chart(page: _Page, x: float, y: float, w: float, h: float) -> float:
    """A bar chart with its labels in a frame at (x, y); returns its bottom."""
    pdf = page.canvas.pdf
    pdf.set_line_width(0.5)
    pdf.rect(x, y, w, h)
    ax0, ay0, ax1, ay1 = x + 60, y + h - 30, x + w - 120, y + 20
    pdf.line(ax0, ay0, ax1, ay0)
    pdf.line(ax0, ay0, ax0, ay1)
    for k, tick in enumerate(["0", "50", "100", "150"]):
        ty = ay0 - k * (ay0 - ay1) / 3
        page.text(ax0 - 8 - page.width(tick, LABEL), ty + 3, tick, LABEL, record=False)
    page.text(x + 8, (ay0 + ay1) / 2, "Parcels", LABEL, record=False)
    months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun"]
    slot = (ax1 - ax0) / len(months)
    for k, month in enumerate(months):
        for j, share in enumerate((0.3 + 0.1 * k, 0.8 - 0.1 * k)):
            bh = share * (ay0 - ay1)
            pdf.set_fill_color(90 if j == 0 else 190)
            pdf.rect(ax0 + k * slot + 6 + j * (slot - 12) / 2, ay0 - bh, (slot - 12) / 2, bh, style="F")
        page.text(ax0 + k * slot + (slot - page.width(month, LABEL)) / 2, ay0 + 14, month, LABEL, record=False)
    for j, name in enumerate(("Winter routes", "Summer routes")):
        ly = ay1 + 10 + 30 * j
        pdf.set_fill_color(90 if j == 0 else 190)
        pdf.rect(ax1 + 14, ly - 7, 8, 8, style="F")
        page.text(ax1 + 28, ly, name, LABEL, record=False)
    return y + h


# --- a usage page: options and their descriptions -------------------------------------------

#: (option, description): the descriptions are wrapped to the column, some
#: over two lines
OPTIONS = [
    ("-p", "print each page number as the page is read"),
    ("--quiet", "say nothing but errors"),
    ("-o FILE", "write the text to FILE instead of the standard output, replacing whatever the file held"),
    ("-d N", "render scanned pages at N dots per inch"),
    ("--force", "read every page again, even those that already carry a text layer of their own"),
    ("-l LANG", "the language of the text"),
    ("--pages R", "read only the pages in the range R, such as 3-7 or 2,4,9, in the order given"),
    ("-j N", "run N workers at a time"),
    ("--keep", "keep the page images in the output folder once the text is read"),
    ("-v", "tell what each stage does"),
    ("--version", "show the version and exit"),
    ("-h", "show a short summary of the options and exit"),
]


def _between_paragraphs(page: _Page, prose: EnglishProse, style: Style, draw: Callable[[float], float]) -> list[str]:
    """A paragraph of four sentences of ``prose`` (at 110 pt, across the
    text width in ``style``), what ``draw`` draws from the y it is given
    (it returns the y after it), another paragraph; each paragraph's first
    five words."""
    y, body = 110.0, []
    for k in range(2):
        if k:
            y = draw(y)
        rows = wrap_words(page.canvas, " ".join(prose.sentences(4)).split(), style, RIGHT - MARGIN)
        body.append(" ".join(rows[0][:5]))
        for row in rows:
            page.text(MARGIN, y, " ".join(row), style)
            y += style.leading
    return body


def options_page(tmp_dir: str | Path, *, seed: int = 0) -> ManualPage:
    """One A4 page: a paragraph, then :data:`OPTIONS`: each option (bold, at
    the left margin) with its description starting on the option's
    baseline 110 pt to the right and wrapped to the right margin (five of
    them over two lines), a paragraph (sans 10.5 pt throughout):
    ``options.pdf``.

    Truth: ``entries``: each option and its description as one string
    (``"-o FILE write the text to FILE ... held"``); ``body``: each
    paragraph's first five words.
    """
    page = _Page()
    desc_x = MARGIN + 110.0
    entries = []

    def options(y: float) -> float:
        y += 0.5 * ENTRY.leading
        for option, description in OPTIONS:
            page.text(MARGIN, y, option, CHAPTER)
            for row in wrap_words(page.canvas, description.split(), ENTRY, RIGHT - desc_x):
                page.text(desc_x, y, " ".join(row), ENTRY)
                y += ENTRY.leading
            entries.append(f"{option} {description}")
        return y + 1.5 * ENTRY.leading

    body = _between_paragraphs(page, EnglishProse(seed + 909), ENTRY, options)
    return ManualPage(page.save(Path(tmp_dir) / "options.pdf"), page.printed(), entries=entries, body=body)


# --- a numbered display: equations with their numbers at the right margin --------------------

#: a display's lines, solved step by step: each line's width differs
EQUATIONS = ["x + y + z = 12", "x - y = 4", "z = 2", "2x + y - z = 14"]
DISPLAY = Style("sans", 10.5, 14.5)
#: extra room between a display's lines (TeX's \jot) and around the display
JOT = 3.0
DISPLAY_SKIP = 10.0


def equations_page(tmp_dir: str | Path, *, seed: int = 0, equations: list[str] | None = None,
                   numbers: list[str] | None = None) -> ManualPage:
    """One A4 page: a paragraph, a display of ``equations`` (default
    :data:`EQUATIONS`, plain text a recognizer reads: ``x - y = 4``) each
    centred on the text width with its number flush with the right margin
    (default ``(3.1)``, ``(3.2)``, …), a paragraph (sans 10.5 pt
    throughout): ``equations.pdf``.

    Truth: ``entries``: each equation and its number as one string
    (``"x - y = 4 (3.2)"``); ``body``: each paragraph's first five words.
    """
    equations = list(EQUATIONS if equations is None else equations)
    numbers = list(numbers or [f"(3.{k + 1})" for k in range(len(equations))])
    page = _Page()
    width = RIGHT - MARGIN
    entries = []

    def display(y: float) -> float:
        y += DISPLAY_SKIP
        for equation, number in zip(equations, numbers):
            page.text(MARGIN + (width - page.width(equation, DISPLAY)) / 2, y, equation, DISPLAY)
            page.text(RIGHT - page.width(number, DISPLAY), y, number, DISPLAY)
            entries.append(f"{equation} {number}")
            y += DISPLAY.leading + JOT
        return y + DISPLAY_SKIP

    body = _between_paragraphs(page, EnglishProse(seed + 1010), BODY, display)
    return ManualPage(page.save(Path(tmp_dir) / "equations.pdf"), page.printed(), entries=entries, body=body)


# --- a price list: items at the left, prices flush right ---------------------------------------

#: (item, price): items of differing lengths, prices with the currency after them
PRICES = [("Tomato soup with bread", "6.50 EUR"), ("Green salad", "5.80 EUR"),
          ("Grilled trout with potatoes", "18.40 EUR"), ("Mushroom risotto", "14.90 EUR"),
          ("Roast chicken, vegetables", "16.20 EUR"), ("Apple pie", "5.50 EUR"), ("Cheese plate", "9.80 EUR")]


def price_list_page(tmp_dir: str | Path, *, seed: int = 0, rows: list[tuple[str, str]] | None = None) -> ManualPage:
    """One A4 page: a paragraph, ``rows`` (default :data:`PRICES`): each
    item at the left margin, its price flush with the right margin on the
    item's baseline, a paragraph (sans 10.5 pt throughout):
    ``prices.pdf``.

    Truth: ``entries``: each item and its price as one string
    (``"Apple pie 5.50 EUR"``); ``body``: each paragraph's first five words.
    """
    rows = list(PRICES if rows is None else rows)
    page = _Page()
    entries = []

    def prices(y: float) -> float:
        y += 0.5 * ENTRY.leading
        for item, price in rows:
            page.text(MARGIN, y, item, ENTRY)
            page.text(RIGHT - page.width(price, ENTRY), y, price, ENTRY)
            entries.append(f"{item} {price}")
            y += ENTRY.leading
        return y + ENTRY.leading

    body = _between_paragraphs(page, EnglishProse(seed + 1111), BODY, prices)
    return ManualPage(page.save(Path(tmp_dir) / "prices.pdf"), page.printed(), entries=entries, body=body)
