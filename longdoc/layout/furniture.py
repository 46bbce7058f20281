"""Page furniture: running headers, running footers and page numbers.

Only lines in the top or bottom *band* (:data:`BAND_FRACTION` of the page
height) are candidates. Two further notions keep body text out:

- the *edge zone*: the lines between the page edge and the first
  whitespace gap of at least :data:`ZONE_GAP_LINES` line heights (headers
  and folios are set off from the text; a numbered list or a table row is
  not);
- *isolation*: a page number has no other line beside it in its row closer
  than :data:`ISOLATION_LINES` line heights (a list marker or table cell
  has its text right next to it).

Rules, for a line of ``target`` in a band:

- **page number**: its text is a folio (``12``, ``xii``, ``Page 3``,
  ``- 3 -``, ``3 / 120``, ``第 3 页``, chapter-page ``2-9``), it is isolated, and it is in the
  edge zone or confirmed by a neighbour page carrying the number shifted by
  the page distance at a similar height. Works with no neighbours. A folio
  of the edge zone with another folio stacked right above or below it (a
  contents page's column of page numbers) is not one unless confirmed.
  A *lone folio* — the only line of its row, the page's topmost or
  bottommost row, at least :data:`LONE_GAP_LINES` line heights from the
  text — is a page number without the edge zone: a folio set one blank
  line under the text of a closely set page is nearer to it than the
  zone's gap (a line height of OCR boxes, padded).
- **running header / footer**: its text, with digits folded away, repeats
  at a similar height on at least one neighbour (fuzzy ratio ≥
  :data:`MIN_SIMILARITY`, comparing lines and whole rows, since one page
  may box a header as one line and the next as fragments; pages ±2 included so alternating even/odd
  headers match) and it is in the edge zone (body text that repeats —
  a form, a repeated table head — is not set off from the text). Top band
  → HEADER, bottom band → FOOTER.

Single-page rules (no neighbour needed), for a line in a band:

- **layout model**: the line lies in a region the layout model called a
  header or footer (``page.regions``) that is no taller than
  :data:`MAX_REGION_LINES` lines, it is not set larger than the body (a
  "Contents" or "Index" heading at the top is a heading), and it stands
  further from the body than the page's paragraphs from each other
  (:func:`_set_apart`) or is set smaller than the body (the model also
  calls the first or last line of a dense page a header or footer) →
  HEADER / FOOTER (PAGE_NUMBER when a folio);
- **running head**: the page's topmost (bottommost) row, or a row of the
  edge zone, not set larger than the body, reads as a page number beside
  a title (:func:`running_head`: ``400 BRITISH HUSBANDRY. [Ch. XIX.``,
  ``CHAPTER 3. METHODS 27``, ``xii PREFACE``) → HEADER (FOOTER), every
  line of the row that is not the page number;
- **pattern**: its text is typical furniture (:func:`furniture_pattern`:
  a DOI, "Downloaded from …", a copyright or licence line, an ISSN, a
  volume/issue/pages citation line ("12(3):45–67"), "Page 3 of 9", an arXiv stamp, a bare
  URL, a date or revision line) and it is in the edge zone, or the pattern
  is a strong one (DOI, download or copyright notice, arXiv stamp) and the
  line is the page's topmost or bottommost row, or a line found as
  furniture sits in its row or nearer the body than it (stacked masthead
  lines: the edge zone stops at the first gap).

Margin banners: a vertical line (much taller than wide) in the outer tenth
of the page width is HEADER when its text is not prose (an arXiv stamp,
"Downloaded from …", a journal's side banner).

Never the page's only text: when every line of a page would be furniture,
the running headers and footers are kept as body text (a page holding one
repeated template line is content, not a header); page numbers still go.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rapidfuzz import fuzz

from longdoc.layout.geometry import LineBox, same_row, typical_line_height
from longdoc.model import BlockKind, Page, RegionKind

BAND_FRACTION = 0.2
ZONE_GAP_LINES = 1.0
ISOLATION_LINES = 3.0
MIN_SIMILARITY = 85.0
#: how far (in line heights) a repeat may sit from the line's height on the page
POSITION_TOLERANCE_LINES = 2.5
MAX_FOLIO_CHARS = 24
#: a header/footer region taller than this many line heights is not trusted
MAX_REGION_LINES = 4.0
#: share of the page width a margin banner sits in
MARGIN_FRACTION = 0.1
#: a lone folio stands at least this many line heights from the text
LONE_GAP_LINES = 0.5
#: folios stacked this close (line heights, centre to centre) are a column of numbers
STACKED_LINES = 2.5
#: a line this much taller than the body's is set larger (a heading)
LARGER = 1.25
#: a running head is at most this long
MAX_HEAD_CHARS = 80

_STRONG = re.compile(
    r"(\bdoi\s*[:.]?\s*10\.\d{3,}|doi\.org/|\bdownloaded\s+(?:from|by|on)\b|this content downloaded|"
    r"©|\(c\)\s*\d{4}|\bcopyright\s+(?:©\s*|\(c\)\s*)?(?:19|20)\d\d|all rights reserved|\barxiv:\s*\d{4}\.\d{4,}|"
    r"\bcreative\s+commons\b|\bpublished\s+online\b|\baccessed\s+(?:on\s+)?\d)",
    re.IGNORECASE,
)
_WEAK = re.compile(
    r"(\bissn\b|\bisbn\b|\bvol(?:ume)?\.?\s*\d+|\bno\.\s*\d+|\bissue\s+\d+|\bpp\.\s*\d+|"
    r"^\s*(?:https?://|www\.)\S+\s*$|\brev(?:ision)?\.?\s*\d|\bpart\s+\d+\s+of\s+\d+|"
    r"\b\d{1,4}\s*(?:\(\d{1,4}\))?\s*:\s*\d{1,6}\s*[-–]\s*\d{1,6}\b|"
    r"\b(?:19|20)\d\d[-/.](?:0?[1-9]|1[0-2])[-/.]\d{1,2}\b|"
    r"\b\d{1,2}\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(?:19|20)\d\d\b|"
    r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2},?\s+(?:19|20)\d\d\b)",
    re.IGNORECASE,
)

_ROMAN = re.compile(r"M{0,3}(CM|CD|D?C{0,3})(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})", re.IGNORECASE)
_DECOR = " \t-‐–—~·•|*_"
_NUM = r"(\d{1,4}|[ivxlcdm]{1,8}|[IVXLCDM]{2,8})"
_FOLIO_PATTERNS = [
    re.compile(rf"{_NUM}"),
    re.compile(rf"(?:page|p\.|pg\.?|seite|p[aá]gina|pag\.)\s*{_NUM}(?:\s*(?:of|/|von|de|sur)\s*\d{{1,4}})?", re.IGNORECASE),
    re.compile(rf"{_NUM}\s*(?:/|of|von|de|sur)\s*\d{{1,4}}", re.IGNORECASE),
    re.compile(r"第\s*(\d{1,4})\s*[页頁](?:\s*[,，/]?\s*共\s*\d{1,4}\s*[页頁])?"),
    re.compile(r"[\[(]\s*" + _NUM + r"\s*[\])]"),
    re.compile(r"(?:[A-Z]|\d{1,2})\s?[-–]\s?(\d{1,4})"),  # chapter-page: "2-9", "A-3"
]


def folio_value(text: str) -> int | None:
    """The page number a folio line shows, or ``None`` when the text is not
    a folio. ``"- 12 -"`` → 12, ``"xiv"`` → 14, ``"Page 3 of 9"`` → 3,
    ``"第 3 页"`` → 3; ``"1. Intro"`` → None."""
    token = folio_token(text)
    return None if token is None else _number(token)


def folio_token(text: str) -> str | None:
    """The number a folio line shows, as printed (digits or a roman
    numeral), or ``None`` when the text is not a folio (as
    :func:`folio_value`): ``"Page 3 of 9"`` → ``"3"``, ``"- xiv -"`` →
    ``"xiv"``."""
    t = unicodedata.normalize("NFKC", text).strip().strip(_DECOR)
    if not t or len(t) > MAX_FOLIO_CHARS:
        return None
    for pattern in _FOLIO_PATTERNS:
        m = pattern.fullmatch(t)
        if m:
            return m.group(1) if _number(m.group(1)) is not None else None
    return None


def _number(token: str) -> int | None:
    if token.isdigit():
        return int(token)
    if not _ROMAN.fullmatch(token):
        return None
    values = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}
    digits = [values[c] for c in token.lower()]
    total = sum(-d if i + 1 < len(digits) and d < digits[i + 1] else d for i, d in enumerate(digits))
    return total or None


def furniture_pattern(text: str) -> str | None:
    """``"strong"`` for a DOI, download, copyright or licence notice or an
    arXiv stamp; ``"weak"`` for an ISSN, a volume/issue/pages line, a bare
    URL, a date, a revision or part number; ``None`` otherwise (and for
    long lines of prose, which may cite any of these)."""
    t = unicodedata.normalize("NFKC", text)
    if len(t) > 160:
        return None
    if _STRONG.search(t):
        return "strong"
    if _WEAK.search(t) and (len(t) <= 90 or t.count(",") + t.count("|") >= 2):
        return "weak"
    return None


def running_key(text: str) -> str:
    """Text with case, digits and spacing folded away, for comparing
    running headers across pages; ``""`` when fewer than two letters are
    left (too little to call a repeat)."""
    t = unicodedata.normalize("NFKC", text).casefold()
    t = re.sub(r"\d+", "#", t)
    t = " ".join(t.split())
    return t if sum(ch.isalpha() for ch in t) >= 2 else ""


@dataclass(frozen=True)
class _Candidate:
    """A line in a band, with what the rules compare across pages."""

    line: LineBox
    edge: str  # "top" | "bottom"
    rel_y: float  # centre height as a fraction of the page height
    key: str  # running_key of the line
    row_key: str  # running_key of its row (band lines beside it, folios left out)
    folio: int | None

    def repeats(self, other: _Candidate) -> bool:
        """Same running text, line to line or row to row (one page may box
        "L. Smith et al." as one line, the next as three fragments)."""
        pairs = ((self.key, other.key), (self.key, other.row_key), (self.row_key, other.key), (self.row_key, other.row_key))
        return any(a and b and fuzz.ratio(a, b) >= MIN_SIMILARITY for a, b in pairs)


def _candidates(page: Page) -> tuple[list[_Candidate], list[LineBox]]:
    lines = [LineBox.of(i, l) for i, l in enumerate(page.all_lines()) if l.text.strip()]
    height = page.height if page.height > 0 else max((l.y1 for l in lines), default=1.0)
    banded = []
    for l in lines:
        rel = l.cy / height
        edge = "top" if rel <= BAND_FRACTION else "bottom" if rel >= 1 - BAND_FRACTION else None
        if edge is not None:
            banded.append((l, edge, rel, folio_value(l.text)))
    texts = sorted((b for b in banded if b[3] is None), key=lambda b: b[0].cy)
    centres = [b[0].cy for b in texts]
    out = []
    for l, edge, rel, folio in banded:
        # row mates of a similar size have their centres within one height
        lo, hi = bisect_left(centres, l.cy - l.h), bisect_right(centres, l.cy + l.h)
        row = sorted((o for o, e, _, _ in texts[lo:hi] if e == edge and same_row(o, l)), key=lambda o: o.x0)
        row_key = running_key(" ".join(o.text for o in row)) if len(row) > 1 else ""
        out.append(_Candidate(l, edge, rel, running_key(l.text), row_key, folio))
    return out, lines


def find_furniture(target: Page, neighbors: Sequence[Page]) -> dict[int, BlockKind]:
    """Map indexes into ``target.all_lines()`` (for a page not laid out yet:
    ``target.lines``) to HEADER, FOOTER or PAGE_NUMBER.

    ``neighbors`` are other pages of the same document (typically ±1..±3),
    laid out or not; pages with the target's own number are ignored. Lines
    not in the result are body text. Never raises on odd input (empty
    pages, zero-size boxes).
    """
    cands, lines = _candidates(target)
    if not lines:
        return {}
    h = typical_line_height(lines)
    height = target.height if target.height > 0 else max(l.y1 for l in lines)
    found = _margin_banners(lines, target.width, h)
    if not cands:
        return _keep_some_body(found, lines)
    tol = POSITION_TOLERANCE_LINES * h / height
    others = [(n.number, _candidates(n)[0]) for n in neighbors if n.number != target.number]
    ctx = _Context(lines, h, _edge_zone(lines, height, h), _marked_regions(target, h), _outermost(lines), cands)
    for c in cands:
        near = [(p, o) for p, cs in others for o in cs if o.edge == c.edge and abs(o.rel_y - c.rel_y) <= tol]
        if c.folio is not None and _page_number(c, near, target.number, ctx):
            found[c.line.idx] = BlockKind.PAGE_NUMBER
            continue
        edge_kind = BlockKind.HEADER if c.edge == "top" else BlockKind.FOOTER
        in_zone = c.line.idx in ctx.zone
        if c.key and in_zone and any(c.repeats(o) for _, o in near):
            found[c.line.idx] = edge_kind
            continue
        if _in_any(c.line, ctx.marked) and in_zone and not _larger(c.line, h) \
                and (_set_apart(c, lines) or _smaller(c.line, h)):
            found[c.line.idx] = BlockKind.PAGE_NUMBER if c.folio is not None else edge_kind
            continue
        if _in_running_head(c, ctx):
            found[c.line.idx] = edge_kind
            continue
        pattern = furniture_pattern(c.line.text)
        if (pattern == "strong" and (in_zone or c.line.idx in ctx.outermost)) or (pattern == "weak" and in_zone):
            found[c.line.idx] = edge_kind
    for c in cands:  # furniture-like text beside or beyond furniture already found
        if c.line.idx not in found and furniture_pattern(c.line.text) and _outside_furniture(c, cands, found):
            found[c.line.idx] = BlockKind.HEADER if c.edge == "top" else BlockKind.FOOTER
    return _keep_some_body(found, lines)


@dataclass(frozen=True)
class _Context:
    """What the single-page rules look at: the page's lines, its typical
    line height, its edge zone and outermost rows (line indexes), the layout
    model's header and footer boxes, the band candidates."""

    lines: list[LineBox]
    h: float
    zone: set[int]
    marked: list[tuple[float, float, float, float]]
    outermost: set[int]
    cands: list[_Candidate]


def _page_number(c: _Candidate, near: list[tuple[int, _Candidate]], number: int, ctx: _Context) -> bool:
    """Whether folio candidate ``c`` is the page number (module docstring)."""
    if not _isolated(c.line, ctx.lines, ctx.h):
        return False
    if c.folio is not None and any(o.folio is not None and c.folio - o.folio == number - p for p, o in near):
        return True
    if c.line.idx in ctx.zone and not _stacked(c, ctx):
        return True
    return _lone(c, ctx)


def _stacked(c: _Candidate, ctx: _Context) -> bool:
    """Another folio of the band right above or below ``c``, overlapping it
    across: a column of page numbers."""
    return any(o is not c and o.folio is not None and o.edge == c.edge and 0 < abs(o.line.cy - c.line.cy)
               <= STACKED_LINES * ctx.h and min(o.line.x1, c.line.x1) > max(o.line.x0, c.line.x0) for o in ctx.cands)


def _lone(c: _Candidate, ctx: _Context) -> bool:
    """``c`` is alone on its row, the page's outermost row, and set off
    from the text by :data:`LONE_GAP_LINES` line heights or more."""
    if c.line.idx not in ctx.outermost or any(o is not c.line and same_row(o, c.line) for o in ctx.lines):
        return False
    if c.edge == "top":
        inward = [l.y0 - c.line.y1 for l in ctx.lines if l.y0 >= c.line.cy and l is not c.line]
    else:
        inward = [c.line.y0 - l.y1 for l in ctx.lines if l.y1 <= c.line.cy and l is not c.line]
    return not inward or min(inward) >= LONE_GAP_LINES * ctx.h


def _in_running_head(c: _Candidate, ctx: _Context) -> bool:
    """``c``'s row (its band's lines beside it) is a running head: the
    outermost row or in the edge zone, not set larger than the body, and
    reading as :func:`running_head`."""
    row = sorted((o.line for o in ctx.cands if o.edge == c.edge and same_row(o.line, c.line)), key=lambda l: l.x0)
    if not (c.line.idx in ctx.outermost or c.line.idx in ctx.zone) or any(_larger(l, ctx.h) for l in row):
        return False
    return running_head(" ".join(l.text.strip() for l in row))


_HEAD_FOLIO = re.compile(r"(?:\d{1,4}|[ivxlcdm]{1,8}|[IVXLCDM]{1,8})")
_CHAPTER_MARK = re.compile(r"\b(?:chapter|chap\.|ch\.|section|sect\.|part|book|lecture|appendix)\s|§", re.IGNORECASE)


def running_head(text: str) -> bool:
    """Whether ``text`` reads as a page number beside a title: a folio
    (arabic, roman) first or last, and the rest a title of three letters or
    more set in capitals (most of its letters) or holding a chapter mark
    ("Chapter", "Ch.", "Part", "§"…). ``"400 BRITISH HUSBANDRY. [Ch. XIX."``,
    ``"CHAPTER 3. METHODS 27"``, ``"xii PREFACE"`` → True;
    ``"12 apples were bought"`` → False."""
    t = " ".join(unicodedata.normalize("NFKC", text).split())
    if len(t) > MAX_HEAD_CHARS or " " not in t:
        return False
    first, rest = t.split(" ", 1)
    head, last = t.rsplit(" ", 1)
    for folio, title in ((first, rest), (last, head)):
        if _HEAD_FOLIO.fullmatch(folio) and _number(folio) is not None and _title(title):
            return True
    return False


def _title(text: str) -> bool:
    letters = [ch for ch in text if ch.isalpha()]
    if len(letters) < 3:
        return False
    return sum(ch.isupper() for ch in letters) >= 0.6 * len(letters) or bool(_CHAPTER_MARK.search(text + " "))


def _larger(line: LineBox, h: float) -> bool:
    """Whether ``line`` is set larger than the body (a heading)."""
    return line.h > LARGER * h


def _outside_furniture(c: _Candidate, cands: list[_Candidate], found: dict[int, BlockKind]) -> bool:
    """Whether a line of the same band already found as furniture sits in
    ``c``'s row or nearer the body than ``c`` (so ``c`` is not body text)."""
    slack = c.line.h / 2
    for o in cands:
        if o.edge != c.edge or o.line.idx not in found or o.line.idx == c.line.idx:
            continue
        if same_row(o.line, c.line) or (o.line.cy >= c.line.cy - slack if c.edge == "top" else o.line.cy <= c.line.cy + slack):
            return True
    return False


def _outermost(lines: list[LineBox]) -> set[int]:
    """The topmost and the bottommost row of the page (nothing above or
    below them)."""
    top = min(lines, key=lambda l: l.y0)
    bottom = max(lines, key=lambda l: l.y1)
    return {l.idx for l in lines if same_row(l, top) or same_row(l, bottom)}


def _marked_regions(page: Page, h: float) -> list[tuple[float, float, float, float]]:
    """Boxes of the header and footer regions the layout model found
    (short ones only), a little enlarged."""
    pad = h / 2
    return [
        (r.bbox.x0 - pad, r.bbox.y0 - pad, r.bbox.x1 + pad, r.bbox.y1 + pad)
        for r in page.regions
        if r.kind in (RegionKind.HEADER, RegionKind.FOOTER) and r.bbox.height <= MAX_REGION_LINES * h
    ]


#: a line the layout model calls furniture must stand this much further from
#: the body than paragraphs stand from each other
SET_APART_FACTOR = 1.25


def _set_apart(c: _Candidate, lines: list[LineBox]) -> bool:
    """Whether the gap between ``c`` and the nearest line towards the body
    is wider than the page's paragraph gaps (the second widest gap between
    consecutive rows, so one figure's gap does not count): the layout model also calls the first or last
    line of a dense page a header or footer, and a paragraph break above the
    last line does not make it one."""
    rows = sorted(lines, key=lambda l: l.y0)
    gaps = [b.y0 - a.y1 for a, b in zip(rows, rows[1:]) if b.y0 - a.y1 > 0]
    if c.edge == "top":
        inward = [l.y0 - c.line.y1 for l in lines if l.y0 >= c.line.y1]
    else:
        inward = [c.line.y0 - l.y1 for l in lines if l.y1 <= c.line.y0]
    if not inward:
        return True
    own = min(inward)
    others = sorted(gaps, reverse=True)
    nearest = min(range(len(others)), key=lambda i: abs(others[i] - own), default=None)
    if nearest is not None:
        del others[nearest]  # its own gap
    others = others or [0.0]
    paragraph = others[1] if len(others) > 1 else others[0]  # one wide gap (a figure's) aside
    return own > SET_APART_FACTOR * paragraph


#: a line this share smaller than the body's lines is set in a smaller size
SMALLER = 0.15


def _smaller(line: LineBox, h: float) -> bool:
    """Whether ``line`` is set smaller than the body, as running heads and
    feet usually are (a larger one may be a heading: it stays in the text)."""
    return line.h < (1 - SMALLER) * h


def _in_any(line: LineBox, boxes: list[tuple[float, float, float, float]]) -> bool:
    return any(b[0] <= (line.x0 + line.x1) / 2 <= b[2] and b[1] <= line.cy <= b[3] for b in boxes)


def _margin_banners(lines: list[LineBox], width: float, h: float) -> dict[int, BlockKind]:
    """Vertical lines in the outer margins that are not prose (see the
    module docstring)."""
    if width <= 0:
        return {}
    found = {}
    for l in lines:
        vertical = l.h > 3 * max(l.w, 1e-6) and l.h > 4 * h
        outer = l.x1 <= MARGIN_FRACTION * width or l.x0 >= (1 - MARGIN_FRACTION) * width
        if vertical and outer and (furniture_pattern(l.text) or len(l.text) <= 60):
            found[l.idx] = BlockKind.HEADER
    return found


def _keep_some_body(found: dict[int, BlockKind], lines: list[LineBox]) -> dict[int, BlockKind]:
    """``found`` without its running headers and footers when they (with
    page numbers) would be every line of the page."""
    if any(l.idx not in found for l in lines):
        return found
    return {i: kind for i, kind in found.items() if kind is BlockKind.PAGE_NUMBER}


def _edge_zone(lines: list[LineBox], height: float, h: float) -> set[int]:
    """Indexes of lines set off from the body at the top or bottom edge."""
    gap = ZONE_GAP_LINES * h
    zone: set[int] = set()
    top = sorted(lines, key=lambda l: l.y0)
    bottom = sorted(lines, key=lambda l: -l.y1)
    zone |= _walk(top, lambda l: l.y0, lambda l: l.y1, gap, BAND_FRACTION * height, +1)
    zone |= _walk(bottom, lambda l: l.y1, lambda l: l.y0, gap, (1 - BAND_FRACTION) * height, -1)
    return zone


def _walk(ordered: Sequence[LineBox], near_edge: Callable[[LineBox], float], far_edge: Callable[[LineBox], float],
          gap: float, limit: float, sign: int) -> set[int]:
    """Walk lines from a page edge inwards; return those seen before the
    first gap ≥ ``gap`` if that gap starts inside the band, else nothing.
    ``sign`` is +1 walking down from the top, -1 walking up from the bottom."""
    seen: list[LineBox] = []
    reach = None  # innermost extent of the lines seen so far
    for l in ordered:
        if reach is not None and sign * (near_edge(l) - reach) >= gap:
            return {s.idx for s in seen} if sign * (reach - limit) <= 0 else set()
        seen.append(l)
        reach = far_edge(l) if reach is None else (max if sign > 0 else min)(reach, far_edge(l))
        if sign * (reach - limit) > 0:
            return set()
    # nothing beyond: a page that holds only a folio or a header row
    rows_height = max(l.y1 for l in seen) - min(l.y0 for l in seen) if seen else 0.0
    return {s.idx for s in seen} if rows_height <= 2 * gap / ZONE_GAP_LINES else set()


def _isolated(line: LineBox, lines: list[LineBox], h: float) -> bool:
    for o in lines:
        if o.idx != line.idx and same_row(o, line):
            gap = max(o.x0 - line.x1, line.x0 - o.x1)
            if gap < ISOLATION_LINES * h:
                return False
    return True
