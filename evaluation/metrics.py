"""Evaluation metrics: character error rate, reading-order checks, olmOCR-bench tests.

- :func:`cer` — character error rate = Levenshtein distance / length of the
  reference, both texts whitespace-normalized first (:func:`normalize_ws`).
- :func:`order_ok` — does one phrase occur before another (optionally fuzzy)?
- :func:`load_olmocr_tests` / :func:`run_olmocr_test` — the olmOCR-bench unit
  test format (allenai/olmocr, ``olmocr/bench/tests.py``): one JSON object per
  line, each about one page, of type ``present``, ``absent``, ``order``,
  ``table``, ``baseline`` (or ``math``).

Fuzzy matching follows olmOCR-bench: ``present``/``absent`` compare with
rapidfuzz's partial ratio (best-aligned substring) against the threshold
``1 - max_diffs / len(text)``; ``order`` finds every occurrence of each phrase
within ``max_diffs`` Levenshtein edits (olmOCR uses ``fuzzysearch`` for this;
here :func:`fuzzy_find_starts` does the same search with Myers' bit-vector
algorithm) and passes when some ``before`` starts before some ``after``.

``table`` tests follow olmOCR-bench's ``TableTest`` and
``table_parsing.py``: every Markdown pipe table (:func:`parse_markdown_tables`;
first row and first column are headings) and every HTML ``<table>``
(:func:`parse_html_tables`; ``rowspan``/``colspan`` honoured, ``<th>`` and
``<thead>`` cells are headings) on the page becomes a :class:`TableData` grid.
The test passes when some cell's text is within ``fuzz.ratio`` threshold
``max(0.5, 1 - max_diffs / len(cell))`` of ``cell`` and, for each of
``up``/``down``/``left``/``right`` given, one of the cells directly beside it
in that direction (several when spans differ) matches the same way; for
``top_heading``/``left_heading``, one of the heading cells met walking up/left
(or, with none on the way, the cells at the table's edge) matches. Texts are
compared after :func:`normalize_olmocr_text`; ``ignore_markdown_tables``
skips pipe tables. Two departures from olmOCR: thresholds get the same float
tolerance as ``present``/``absent``, and a rowspan cut short by a later
cell's colspan (where olmOCR raises ``IndexError``) has no neighbours past
the table's last row.

Not supported: ``math`` tests answer ``(False, "math tests not supported")``
— the evaluation data in this project has none.

This module depends only on :mod:`longdoc.errors`, rapidfuzz and the
standard library (HTML tables are read with :mod:`html.parser`).
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz
from rapidfuzz.distance import Levenshtein

from longdoc.errors import InputError, UnreadablePath

# --- plain metrics -------------------------------------------------------------


def normalize_ws(s: str) -> str:
    """Collapse every run of whitespace (any Unicode space, tab, newline, form feed) to
    one space and strip both ends."""
    return " ".join(s.split())


def cer(hypothesis: str, reference: str) -> float:
    """Character error rate of ``hypothesis`` against ``reference``.

    Both are whitespace-normalized (:func:`normalize_ws`); the result is
    ``Levenshtein(hyp, ref) / len(ref)`` — 0.0 is perfect; it exceeds 1.0
    when the hypothesis has many extra characters. For an empty (normalized)
    reference the result is 0.0 if the hypothesis is empty too, else 1.0.

    Cost grows with ``len(hyp) * len(ref)``; compare page by page for long
    documents.
    """
    ref = normalize_ws(reference)
    hyp = normalize_ws(hypothesis)
    if not ref:
        return 0.0 if not hyp else 1.0
    return Levenshtein.distance(hyp, ref) / len(ref)


def fuzzy_find_starts(pattern: str, text: str, max_diffs: int = 0) -> list[int]:
    """Start offsets (ascending) of every substring of ``text`` within ``max_diffs``
    Levenshtein edits of ``pattern``.

    ``max_diffs=0`` is exact (overlapping) substring search. Raises
    ``ValueError`` for an empty pattern or a negative ``max_diffs``.
    """
    if not pattern:
        raise ValueError("pattern must not be empty")
    if max_diffs < 0:
        raise ValueError("max_diffs must be >= 0")
    if max_diffs == 0:
        starts = []
        i = text.find(pattern)
        while i != -1:
            starts.append(i)
            i = text.find(pattern, i + 1)
        return starts
    # A match of the reversed pattern *ending* at j in the reversed text is a
    # match *starting* at len(text) - 1 - j in the original.
    n = len(text)
    ends = _match_ends(pattern[::-1], text[::-1], max_diffs)
    return sorted(n - 1 - j for j in ends)


def _match_ends(pattern: str, text: str, max_diffs: int) -> list[int]:
    """End offsets j where some ``text[s : j + 1]`` is within ``max_diffs`` edits of ``pattern``.

    Myers (1999) bit-parallel approximate matching: bit i of the vertical
    delta vectors describes row i + 1 of the edit-distance table whose first
    row is all zeros (a match may start anywhere); ``score`` tracks the last
    row, i.e. the best distance of ``pattern`` to a substring ending at j.
    """
    m = len(pattern)
    peq: dict[str, int] = {}
    for i, c in enumerate(pattern):
        peq[c] = peq.get(c, 0) | (1 << i)
    mask = (1 << m) - 1
    high = 1 << (m - 1)
    pv, mv, score = mask, 0, m
    ends = []
    for j, c in enumerate(text):
        eq = peq.get(c, 0)
        xv = eq | mv
        xh = (((eq & pv) + pv) ^ pv) | eq
        ph = mv | (~(xh | pv) & mask)
        mh = pv & xh
        if ph & high:
            score += 1
        elif mh & high:
            score -= 1
        ph = (ph << 1) & mask
        mh = (mh << 1) & mask
        pv = mh | (~(xv | ph) & mask)
        mv = ph & xv
        if score <= max_diffs:
            ends.append(j)
    return ends


def order_ok(text: str, before: str, after: str, max_diffs: int = 0) -> bool:
    """True when ``before`` occurs in ``text`` starting before some occurrence of ``after``.

    All three are whitespace-normalized first; each phrase may differ from its
    occurrence by up to ``max_diffs`` Levenshtein edits. Case-sensitive.
    Raises ``ValueError`` for an empty phrase.
    """
    text, before, after = normalize_ws(text), normalize_ws(before), normalize_ws(after)
    b = fuzzy_find_starts(before, text, max_diffs)
    a = fuzzy_find_starts(after, text, max_diffs)
    return bool(a) and bool(b) and b[0] < a[-1]


# --- olmOCR-bench tests --------------------------------------------------------

OLMOCR_TYPES = frozenset({"present", "absent", "order", "table", "baseline", "math"})
_REQUIRED = {
    "present": ("text",),
    "absent": ("text",),
    "order": ("before", "after"),
    "table": ("cell",),
    "math": ("math",),
    "baseline": (),
}
_DEFAULTS: dict[str, Any] = {
    "max_diffs": 0,
    "case_sensitive": True,
    "first_n": None,
    "last_n": None,
    "max_length": None,
    "max_repeats": 30,
    "check_disallowed_characters": True,
}
_RELATIONS = ("up", "down", "left", "right", "left_heading", "top_heading")
_TABLE_DEFAULTS: dict[str, Any] = {
    "up": "",
    "down": "",
    "left": "",
    "right": "",
    "top_heading": "",
    "left_heading": "",
    "ignore_markdown_tables": False,
}
_FANCY = {
    "\u2018": "'", "\u2019": "'", "\u201a": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"',
    "\uff3f": "_",
    "\u2013": "-", "\u2014": "-", "\u2011": "-", "\u2012": "-", "\u2212": "-",
    "\u00b5": "\u03bc",
}  # fmt: skip
_DISALLOWED = re.compile(
    "["
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\u3040-\u309f"  # hiragana
    "\u30a0-\u30ff"  # katakana
    "\U0001f600-\U0001f64f"  # emoticons
    "\U0001f300-\U0001f5ff"  # symbols and pictographs
    "\U0001f680-\U0001f6ff"  # transport and map symbols
    "\U0001f1e0-\U0001f1ff"  # regional indicators (flags)
    "]"
)
_BAD_TESTS_HINT = "Each line must be one olmOCR-bench test object (see allenai/olmocr, olmocr/bench)."


def normalize_olmocr_text(s: str) -> str:
    """olmOCR-bench's text normalization: ``<br>`` and whitespace runs to one space,
    Markdown/HTML bold and italics removed, NFC, typographic quotes and dashes to ASCII."""
    s = re.sub(r"<br/?>", " ", s)
    s = re.sub(r"\s+", " ", s)
    s = re.sub(r"\*\*(.*?)\*\*", r"\1", s)
    s = re.sub(r"__(.*?)__", r"\1", s)
    s = re.sub(r"</?b>", "", s)
    s = re.sub(r"</?i>", "", s)
    s = re.sub(r"\*(.*?)\*", r"\1", s)
    s = re.sub(r"_(.*?)_", r"\1", s)
    s = unicodedata.normalize("NFC", s)
    for fancy, plain in _FANCY.items():
        s = s.replace(fancy, plain)
    return s


def validate_olmocr_test(raw: Any, where: str = "test") -> dict[str, Any]:
    """Check one test object and return a copy with defaults filled in.

    Raises :class:`~longdoc.errors.InputError` when it is not an object, its
    ``type`` is unknown, a required field is missing or empty, or
    ``max_diffs`` is not a non-negative integer.
    """
    if not isinstance(raw, dict):
        raise InputError(f"{where}: expected a JSON object", hint=_BAD_TESTS_HINT)
    kind = raw.get("type")
    if kind not in OLMOCR_TYPES:
        raise InputError(f"{where}: unknown test type {kind!r}", hint=_BAD_TESTS_HINT)
    for name in _REQUIRED[kind]:
        value = raw.get(name)
        if not isinstance(value, str) or not value.strip():
            raise InputError(f"{where}: {kind} test needs a non-empty {name!r}", hint=_BAD_TESTS_HINT)
    defaults = {**_DEFAULTS, **_TABLE_DEFAULTS} if kind == "table" else _DEFAULTS
    test = {**defaults, **{k: v for k, v in raw.items() if v is not None or k not in defaults}}
    if kind == "table":
        for name in _RELATIONS:
            if not isinstance(test[name], str):
                raise InputError(f"{where}: table test field {name!r} must be a string", hint=_BAD_TESTS_HINT)
    diffs = test["max_diffs"]
    if not isinstance(diffs, int) or isinstance(diffs, bool) or diffs < 0:
        raise InputError(f"{where}: max_diffs must be a non-negative integer", hint=_BAD_TESTS_HINT)
    return test


def load_olmocr_tests(jsonl_path: str | Path) -> list[dict[str, Any]]:
    """Read an olmOCR-bench ``.jsonl`` file: one test per non-blank line.

    Returns the tests in file order, each validated with defaults filled in
    (:func:`validate_olmocr_test`); other fields (``pdf``, ``page``, ``id``…)
    are kept. Raises :class:`~longdoc.errors.UnreadablePath` when the file
    cannot be read and :class:`~longdoc.errors.InputError` naming the line
    when a line is not valid JSON or not a valid test.
    """
    path = Path(jsonl_path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise UnreadablePath(f"cannot read olmOCR tests from {path}: {e}") from e
    tests = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"{where}: not valid JSON ({e.msg})", hint=_BAD_TESTS_HINT) from e
        tests.append(validate_olmocr_test(raw, where))
    return tests


def run_olmocr_test(test: dict[str, Any], page_text: str) -> tuple[bool, str]:
    """Run one olmOCR-bench test against the text produced for its page.

    Returns ``(passed, explanation)``; the explanation is empty when it passed.
    ``math`` tests return ``(False, "math tests not supported")``.
    Raises :class:`~longdoc.errors.InputError` for an invalid test.
    """
    test = validate_olmocr_test(test, str(test.get("id", "test")) if isinstance(test, dict) else "test")
    kind = test["type"]
    if kind in ("present", "absent"):
        return _run_presence(test, page_text)
    if kind == "order":
        return _run_order(test, page_text)
    if kind == "baseline":
        return _run_baseline(test, page_text)
    if kind == "table":
        return _run_table(test, page_text)
    return False, f"{kind} tests not supported"


def _restrict(test: dict[str, Any], content: str) -> str:
    first_n, last_n = test["first_n"], test["last_n"]
    if first_n and last_n:
        return content[:first_n] + content[-last_n:]
    if first_n:
        return content[:first_n]
    if last_n:
        return content[-last_n:]
    return content


def _run_presence(test: dict[str, Any], page_text: str) -> tuple[bool, str]:
    query = normalize_olmocr_text(test["text"])
    content = normalize_olmocr_text(page_text)
    if not test["case_sensitive"]:
        query, content = query.lower(), content.lower()
    content = _restrict(test, content)
    # The tolerance absorbs float noise: rapidfuzz's 94.11764705882354 / 100 for one edit in
    # 17 characters is one ulp below 1 - 1/17.
    threshold = 1.0 - test["max_diffs"] / max(len(query), 1) - 1e-9
    if len(content) >= len(query):
        al = fuzz.partial_ratio_alignment(query, content)
        ratio = al.score / 100.0
        best = content[al.dest_start : al.dest_end]
    else:
        # olmOCR's partial_ratio would align the *page* inside the query here,
        # so a page holding one word of the query would "contain" all of it.
        ratio = fuzz.ratio(query, content) / 100.0
        best = content
    if test["type"] == "present":
        if ratio >= threshold:
            return True, ""
        return False, (
            f"expected {query[:60]!r} (threshold {threshold:.3f}); "
            f"best match {best[:60]!r} has ratio {ratio:.3f}"
        )
    if ratio < threshold:
        return True, ""
    return False, f"expected {query[:60]!r} to be absent, but found {best[:60]!r} (ratio {ratio:.3f})"


def _run_order(test: dict[str, Any], page_text: str) -> tuple[bool, str]:
    before = normalize_olmocr_text(test["before"])
    after = normalize_olmocr_text(test["after"])
    content = normalize_olmocr_text(page_text)
    if not test["case_sensitive"]:
        before, after, content = before.lower(), after.lower(), content.lower()
    diffs = test["max_diffs"]
    b = fuzzy_find_starts(before, content, diffs)
    if not b:
        return False, f"'before' text {before[:60]!r} not found within {diffs} edits"
    a = fuzzy_find_starts(after, content, diffs)
    if not a:
        return False, f"'after' text {after[:60]!r} not found within {diffs} edits"
    if b[0] < a[-1]:
        return True, ""
    return False, f"{before[:60]!r} does not appear before {after[:60]!r}"


def trailing_repeats(text: str, max_ngram: int = 5) -> list[int]:
    """For n = 1..max_ngram, how many times the last n characters repeat back to back at the
    end of ``text`` (whitespace runs count as one space). Entry n-1 is the count for n."""
    text = re.sub(r"\s+", " ", text)
    counts = [0] * max_ngram
    for size in range(1, max_ngram + 1):
        if len(text) < size:
            continue
        target = text[-size:]
        pos, count = len(text) - size, 0
        while pos >= 0 and text[pos : pos + size] == target:
            count += 1
            pos -= size
        counts[size - 1] = count
    return counts


def _run_baseline(test: dict[str, Any], page_text: str) -> tuple[bool, str]:
    alnum = sum(1 for c in page_text if c.isalnum())
    if test["max_length"] is not None:
        if alnum > test["max_length"]:
            return False, f"{alnum} characters were output for a page expected to hold at most {test['max_length']}"
        return True, ""
    if alnum == 0:
        return False, "the text contains no alphanumeric characters"
    for index, count in enumerate(trailing_repeats(page_text)):
        if count > test["max_repeats"]:
            return False, f"text ends with {count} repeating {index + 1}-grams"
    if test["check_disallowed_characters"]:
        found = _DISALLOWED.findall(page_text)
        if found:
            return False, f"text contains disallowed characters {''.join(found[:10])!r}"
    return True, ""


# --- olmOCR-bench: tables --------------------------------------------------------
#
# A port of allenai/olmocr ``olmocr/bench/table_parsing.py`` (which uses
# BeautifulSoup's ``html.parser`` builder; here a small tree built with the
# stdlib :class:`html.parser.HTMLParser` behaves the same way on table markup).

Cell = tuple[int, int]


@dataclass(frozen=True)
class TableData:
    """One parsed table as a graph of cells, as olmOCR-bench sees it.

    ``cell_text`` maps the (row, col) where a cell *starts* to its text; a
    cell spanning several rows/columns is stored once. The four relation maps
    give, for each cell, the set of cells immediately above/below/left/right
    of it (several when spans differ). ``heading_cells`` are ``<th>`` cells
    and cells in a ``<thead>`` (Markdown: the first row and first column).
    """

    cell_text: dict[Cell, str]
    heading_cells: frozenset[Cell]
    is_rectangular: bool
    up_relations: dict[Cell, set[Cell]]
    down_relations: dict[Cell, set[Cell]]
    left_relations: dict[Cell, set[Cell]]
    right_relations: dict[Cell, set[Cell]]

    def _walk_heading_relations(self, start: Cell, relation: dict[Cell, set[Cell]]) -> set[Cell]:
        # Every heading cell reachable from ``start`` along ``relation``; when
        # there is none, the cells where the walk ends (the table's edge).
        headings: set[Cell] = set()
        ends: set[Cell] = set()
        to_visit = {start}
        while to_visit:
            cur = to_visit.pop()
            if cur in self.heading_cells:
                headings.add(cur)
            if not relation.get(cur):
                ends.add(cur)
            else:
                to_visit |= relation[cur]
        headings.discard(start)
        ends.discard(start)
        return headings or ends

    def top_heading_relations(self, row: int, col: int) -> set[Cell]:
        return self._walk_heading_relations((row, col), self.up_relations)

    def left_heading_relations(self, row: int, col: int) -> set[Cell]:
        return self._walk_heading_relations((row, col), self.left_relations)


def _span(value: Any) -> int:
    """A rowspan/colspan attribute as a positive integer (1 when missing or invalid)."""
    if value in (None, "", 0):
        return 1
    try:
        span = int(value)
    except (TypeError, ValueError):
        return 1
    return span if span > 0 else 1


def _build_table(row_specs: list[list[dict[str, Any]]]) -> TableData | None:
    """A :class:`TableData` from rows of ``{"text", "rowspan", "colspan", "is_heading"}``
    cell specs in source order; ``None`` when there is no cell."""
    if not row_specs:
        return None
    cell_text: dict[Cell, str] = {}
    heading_cells: set[Cell] = set()
    spans: dict[Cell, tuple[int, int]] = {}
    occupancy: list[list[Cell | None]] = []
    # Per column: the cell whose rowspan still covers it and how many more rows.
    active: list[tuple[Cell, int] | None] = []

    for row_idx, cells in enumerate(row_specs):
        entries: list[Cell | None] = []
        col = 0
        spec_idx = 0
        while spec_idx < len(cells) or col < len(active):
            if col < len(active) and active[col] is not None:
                cell_id, remaining = active[col]  # type: ignore[misc]
                entries.append(cell_id)
                remaining -= 1
                active[col] = (cell_id, remaining) if remaining > 0 else None
                col += 1
                continue
            if spec_idx >= len(cells):
                # col < len(active) here: a hole left of a later rowspan
                entries.append(None)
                col += 1
                continue
            spec = cells[spec_idx]
            spec_idx += 1
            rowspan = max(1, spec.get("rowspan", 1))
            colspan = max(1, spec.get("colspan", 1))
            cell_id = (row_idx, col)
            cell_text[cell_id] = spec.get("text", "") or ""
            if spec.get("is_heading"):
                heading_cells.add(cell_id)
            spans[cell_id] = (rowspan, colspan)
            if len(active) < col + colspan:
                active.extend([None] * (col + colspan - len(active)))
            for c in range(col, col + colspan):
                entries.append(cell_id)
                active[c] = (cell_id, rowspan - 1) if rowspan > 1 else None
            col += colspan
        occupancy.append(entries)

    # Rowspans reaching past the last row add rows of their own.
    while any(entry is not None for entry in active):
        entries = []
        for c, entry in enumerate(active):
            if entry is None:
                entries.append(None)
                continue
            cell_id, remaining = entry
            entries.append(cell_id)
            remaining -= 1
            active[c] = (cell_id, remaining) if remaining > 0 else None
        occupancy.append(entries)

    if not cell_text:
        return None
    used = [c for row in occupancy for c, value in enumerate(row) if value is not None]
    if not used:
        return None
    width = max(used) + 1
    for row in occupancy:
        if len(row) < width:
            row.extend([None] * (width - len(row)))
        else:
            del row[width:]
    height = len(occupancy)

    up: dict[Cell, set[Cell]] = {cell_id: set() for cell_id in cell_text}
    down: dict[Cell, set[Cell]] = {cell_id: set() for cell_id in cell_text}
    left: dict[Cell, set[Cell]] = {cell_id: set() for cell_id in cell_text}
    right: dict[Cell, set[Cell]] = {cell_id: set() for cell_id in cell_text}

    def nearest(cell_id: Cell, coords: Any, into: set[Cell]) -> None:
        # The first occupied position along ``coords`` not covered by the cell itself.
        for r, c in coords:
            if r >= height:
                # A rowspan cut short by a later cell's colspan claims rows that never
                # came to be (olmOCR raises IndexError here).
                return
            neighbour = occupancy[r][c]
            if neighbour is not None and neighbour != cell_id:
                into.add(neighbour)
                return

    for cell_id, (rowspan, colspan) in spans.items():
        r0, c0 = cell_id
        r1, c1 = r0 + rowspan - 1, c0 + colspan - 1
        for r in range(r0, r1 + 1):
            nearest(cell_id, ((r, c) for c in range(c1 + 1, width)), right[cell_id])
            nearest(cell_id, ((r, c) for c in range(c0 - 1, -1, -1)), left[cell_id])
        for c in range(c0, c1 + 1):
            nearest(cell_id, ((r, c) for r in range(r1 + 1, height)), down[cell_id])
            nearest(cell_id, ((r, c) for r in range(r0 - 1, -1, -1)), up[cell_id])

    return TableData(
        cell_text=cell_text,
        heading_cells=frozenset(heading_cells),
        is_rectangular=not any(value is None for row in occupancy for value in row),
        up_relations=up,
        down_relations=down,
        left_relations=left,
        right_relations=right,
    )


def _markdown_rows(lines: list[str]) -> list[list[str]]:
    # The first line made only of dashes, colons and spaces (pipes aside) is the
    # header separator; any other line made only of "- :|" is skipped too.
    separator = None
    for i, line in enumerate(lines):
        body = line.replace("|", "").strip()
        if body and all(c in "- :" for c in body):
            separator = i
            break
    rows = []
    for i, line in enumerate(lines):
        if i == separator or (line.strip() and all(c in "- :|" for c in line)):
            continue
        cells = [cell.strip() for cell in line.split("|")]
        if cells and cells[0] == "":
            cells = cells[1:]
        if cells and cells[-1] == "":
            cells = cells[:-1]
        if cells:
            rows.append(cells)
    return rows


def parse_markdown_tables(text: str) -> list[TableData]:
    """Every Markdown pipe table in ``text``: a run of two or more consecutive
    lines that contain ``|``. The first row and the first column are headings;
    there are no spans."""
    tables = []
    runs: list[list[str]] = []
    current: list[str] | None = None
    for line in text.strip().split("\n"):
        if "|" in line:
            if current is None:
                current = []
                runs.append(current)
            current.append(line)
        else:
            current = None
    for lines in runs:
        if len(lines) < 2:
            continue
        rows = _markdown_rows(lines)
        if not rows:
            continue
        specs = [
            [{"text": cell, "rowspan": 1, "colspan": 1, "is_heading": r == 0 or c == 0} for c, cell in enumerate(row)]
            for r, row in enumerate(rows)
        ]
        table = _build_table(specs)
        if table:
            tables.append(table)
    return tables


class _Element:
    __slots__ = ("name", "attrs", "children", "parent")

    def __init__(self, name: str, attrs: dict[str, str], parent: _Element | None) -> None:
        self.name = name
        self.attrs = attrs
        self.children: list[_Element | str] = []
        self.parent = parent

    def descendants(self, names: frozenset[str]) -> list[_Element]:
        """Descendant elements named in ``names``, in document order."""
        found = []
        stack = [c for c in reversed(self.children) if isinstance(c, _Element)]
        while stack:
            node = stack.pop()
            if node.name in names:
                found.append(node)
            stack.extend(c for c in reversed(node.children) if isinstance(c, _Element))
        return found

    def text(self) -> str:
        """Concatenated text of every descendant; ``<br>`` reads as a newline."""
        out: list[str] = []
        stack: list[_Element | str] = [self]
        while stack:
            node = stack.pop()
            if isinstance(node, str):
                out.append(node)
            elif node.name == "br":
                out.append("\n")
            elif node.name not in _NO_TEXT:
                stack.extend(reversed(node.children))
        return "".join(out)

    def has_ancestor(self, name: str) -> bool:
        node = self.parent
        while node is not None:
            if node.name == name:
                return True
            node = node.parent
        return False


# BeautifulSoup's void elements (closed at once) and elements whose strings get_text() skips.
_VOID_TAGS = frozenset(
    "area base br col embed hr img input keygen link menuitem meta param source track wbr "
    "basefont bgsound command frame image isindex nextid spacer".split()
)
_NO_TEXT = frozenset({"script", "style", "template"})


class _TreeBuilder(HTMLParser):
    """A lenient element tree the way BeautifulSoup's ``html.parser`` builder makes it:
    no implied end tags; an end tag closes the innermost open element of that name
    (and everything opened inside it) and is ignored when none is open."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = _Element("[document]", {}, None)
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = _Element(tag, {k: v if v is not None else "" for k, v in attrs}, self.stack[-1])
        self.stack[-1].children.append(element)
        if tag not in _VOID_TAGS:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID_TAGS:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].name == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse_html_tables(text: str) -> list[TableData]:
    """Every HTML ``<table>`` in ``text`` (nested ones too, each on its own).

    A table's rows are all its ``<tr>`` descendants; a row's cells are its
    ``<th>``/``<td>`` children with their ``rowspan``/``colspan``
    (``rowspan="0"`` reaches the last row). ``<th>`` cells and cells of rows
    inside a ``<thead>`` are headings. Cell text is stripped, ``<br>`` read as
    a newline.
    """
    builder = _TreeBuilder()
    builder.feed(text)
    builder.close()
    tables = []
    for table in builder.root.descendants(frozenset({"table"})):
        rows = table.descendants(frozenset({"tr"}))
        if not rows:
            continue
        specs = []
        for row_idx, row in enumerate(rows):
            in_thead = row.has_ancestor("thead")
            spec = []
            for cell in row.children:
                if not isinstance(cell, _Element) or cell.name not in ("th", "td"):
                    continue
                raw_rowspan = cell.attrs.get("rowspan")
                rowspan = _span(raw_rowspan)
                if isinstance(raw_rowspan, str) and raw_rowspan.strip() == "0":
                    rowspan = max(1, len(rows) - row_idx)
                spec.append(
                    {
                        "text": cell.text().strip(),
                        "rowspan": rowspan,
                        "colspan": _span(cell.attrs.get("colspan")),
                        "is_heading": cell.name == "th" or in_thead,
                    }
                )
            specs.append(spec)
        parsed = _build_table(specs)
        if parsed:
            tables.append(parsed)
    return tables



def _neighbours(table: TableData, cell: Cell, relation: str) -> set[Cell]:
    if relation == "left_heading":
        return table.left_heading_relations(*cell)
    if relation == "top_heading":
        return table.top_heading_relations(*cell)
    return getattr(table, f"{relation}_relations")[cell]


def _run_table(test: dict[str, Any], page_text: str) -> tuple[bool, str]:
    diffs = test["max_diffs"]

    def threshold(s: str) -> float:
        return max(0.5, 1.0 - diffs / (len(s) or 1))

    def similar(a: str, b: str) -> tuple[bool, float]:
        # The tolerance absorbs float noise, as in _run_presence.
        similarity = fuzz.ratio(a, b) / 100.0
        return similarity >= threshold(a) - 1e-9, similarity

    target = normalize_olmocr_text(test["cell"])
    wanted = {name: normalize_olmocr_text(test[name]) for name in _RELATIONS}
    wanted = {name: text for name, text in wanted.items() if text}
    tables = [] if test["ignore_markdown_tables"] else parse_markdown_tables(page_text)
    tables += parse_html_tables(page_text)
    if not tables:
        return False, "No tables found in the content"
    failed: list[str] = []
    for table in tables:
        matches = [rc for rc, text in table.cell_text.items() if similar(target, normalize_olmocr_text(text))[0]]
        for rc in matches:
            reasons = []
            for name, expected in wanted.items():
                best, best_text, ok = 0.0, None, False
                for other in _neighbours(table, rc, name):
                    text = normalize_olmocr_text(table.cell_text[other])
                    passed, similarity = similar(expected, text)
                    if similarity > best:
                        best, best_text = similarity, text
                    ok = ok or passed
                if not ok:
                    reasons.append(f"Cell compared to '{best_text}' doesn't match expected '{expected}' "
                                   f"(best similarity: {best:.2f})")
            if not reasons:
                return True, ""
            failed.extend(reasons)
    if not failed:
        return False, f"No cell matching '{target}' found in any table with threshold {threshold(target)}"
    return False, f"Found cells matching '{target}' but relationships were not satisfied: {'; '.join(failed)}"
