"""Entries of a contents page or an index: a line ending in a page number.

::

    2.1  Old versions . . . . . . . . . . . . . . .  4     leaders
    3    Copying and showing commands               16     a wide gap
    4    Preconstructing command names                     an entry wrapped
         (or otherwise expanding arguments) . . . . 17     over two lines
    \\@tempa . . . . . . . . . . . . . . 60, 79, 86–       an index entry

A row (a line and the OCR fragments beside it) is an *entry row* when its
text ends with a page reference (``_REFS``: arabic or roman numbers, code
lines as LaTeX's doc package numbers them, "x451", "aa12", a list of them
"60, 79, 86–") and the reference is set off from the entry's words:

- by leaders: two or more dots (spaced or solid), or one dot standing
  apart from the words (OCR reads leaders short);
- or, for an index entry, by being a list of references: two or more,
  comma-separated ("\\@tempa 60, 79, 86");
- or by a wide gap (:data:`ENTRY_GAP_LINES` line heights or more): the
  reference is the row's last fragment, and apart from the entry's number
  ("2.1", boxed apart from its title) no other fragment stands that far
  from the one before it (a table row has a gap between every two cells);
  a text layer that joined the row into one line shows the gap as a line
  much wider than its characters need (:data:`SPARSE_SHARE`).

Before the reading order is found, an entry's words reach its references
(:func:`close_entry_gaps`): a line ending with leaders reaches the next
fragment of its row when that is near (leaders run up to the page number,
and the narrow gap an OCR box leaves between them must not read as a column
gutter, which would put the references of a few entries in a column after
their names); in text the layout model took for a table or a picture (an
index), a line reaches the next fragment of its row when that holds
references only, however far (a doc-package index sets them at the
column's right edge, no leaders between).

The words before the reference must hold a letter. A row that ends with
three leader dots or more after its words is an entry too: OCR sometimes
does not read the page number after them. A row of references alone
under a row whose references run on (it ends with "," or "–") ends that
entry: an index entry's references wrapped onto a second line. Layout
(:mod:`~longdoc.layout.blocks`) ends a block after each entry row, keeps
an entry's first line with the indented line that carries its page
number, and makes two or more consecutive entries one LIST block, one
entry per line of its text.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import replace

from longdoc.layout.geometry import LineBox, same_row

#: a character's width in line heights, where a caller has not measured the page's
CHAR_WIDTH_LINES = 0.5
#: a page reference set off by a gap this many line heights wide ends an entry
ENTRY_GAP_LINES = 2.0
#: a one-line row wider than its characters need by this share (and by the
#: entry gap) has a wide gap inside
SPARSE_SHARE = 0.25

_REF = r"(?:[A-Za-z]{0,2}\d{1,4}|[ivxlcdm]{1,7}|[IVXLCDM]{1,7})"
_REFS = rf"{_REF}(?:\s*[,–-]\s*{_REF})*[–-]?"
_LETTER = re.compile(r"[^\W\d_]")


class _AfterWords:
    """``[^\\W\\d_].*?TAIL`` (a letter, then anywhere after it ``TAIL``),
    searched in time linear in the line: the letter is found once and
    ``TAIL`` searched after it. As one regex, the lazy ``.*?`` was retried
    from every letter of the line: quadratic, and a tenth of a millisecond
    per ordinary line of body text, the most expensive step of laying out
    a born-digital page."""

    def __init__(self, tail: str) -> None:
        self.tail = re.compile(tail)

    def search(self, text: str) -> bool:
        letter = _LETTER.search(text)
        return letter is not None and self.tail.search(text, letter.end()) is not None


#: words, leaders (two dots or more, or one standing apart), the reference
_LEADERED = _AfterWords(rf"(?:(?:[.·…]\s*){{2,}}|\s[.·…]\s*){_REFS}\s*$")
_REFERENCE = re.compile(rf"\s*(?:[.·…]\s*)*{_REFS}\s*")
#: a line ending with a reference of its own
_ENDS_WITH_A_REFERENCE = re.compile(rf"(?:^|[\s.,]){_REF}\s*[,–-]?\s*$")
#: references alone, perhaps going on in the next row: "60, 79," "x451"
_REFERENCE_LIST_PART = re.compile(rf"\s*(?:[.·…]\s*)*{_REFS}\s*,?\s*")
#: words, then two references or more: "\\@tempa 60, 79, 86–"
_REFERENCE_LIST = _AfterWords(rf"\s{_REF}(?:\s*,\s*{_REF})+[–-]?\s*$")
_ENDS_WITH_REFERENCE = _AfterWords(rf"\s{_REFS}\s*$")
#: words, a comma (Latin or full-width) and one page number or range: the
#: commonest index entry ("lists, 95", "字体，45", "tables, 12–14"); arabic
#: numbers only, as a word of roman-numeral letters ("mild") would match
_SINGLE_REFERENCE = _AfterWords(r"[,，]\s*\d{1,4}(?:\s*[–-]\s*\d{1,4})?\s*$")
#: words, then three leader dots or more (the page number not read)
_LEADERS_ONLY = _AfterWords(r"\s?(?:[.·]\s*){3,}$")
#: references that go on in the next row: "60, 79," or "86–"
_RUNS_ON = re.compile(rf"{_REF}\s*[,–-]$")
#: an entry's number boxed apart from its title: "3", "2.1", "A.2", "IV."
_NUMBER = re.compile(r"(?:\d{1,3}|[A-Z]|[IVXL]{1,5})(?:\.\d{1,3})*\.?")


#: a line ending with leaders reaches the next fragment of its row this near
LEADER_GAP_LINES = 2.0
#: three leader dots or more at a line's end
_ENDS_WITH_LEADERS = re.compile(r"(?:[.·]\s*){3,}$")


def close_entry_gaps(lines: Sequence[LineBox], line_height: float, columnar: Collection[int] = ()) -> list[LineBox]:
    """``lines`` with an entry's words stretched (their layout box, not
    their ``line``) to the start of the next fragment of their row (the
    nearest to the right, clear of it): a line
    ending with leader dots when that fragment starts at most
    :data:`LEADER_GAP_LINES` line heights after it; a line of words whose
    ``idx`` is in ``columnar`` (text the layout model took for a table or a
    picture), ending with no reference of its own, when that fragment holds
    references only (a list going on in the next row included)."""
    out = []
    for l in lines:
        nxt = min((o for o in lines if o is not l and same_row(o, l) and o.x0 > l.x0), key=lambda o: o.x0, default=None)
        if nxt is not None and nxt.x0 > l.x1 and (
                _ENDS_WITH_LEADERS.search(l.text.rstrip()) and nxt.x0 - l.x1 <= LEADER_GAP_LINES * line_height
                or l.idx in columnar and _words_then_references(l, nxt)):
            l = replace(l, x1=nxt.x0)
        out.append(l)
    return out


def _words_then_references(words: LineBox, refs: LineBox) -> bool:
    """``words`` end with words (no reference of their own) and ``refs``
    holds references only."""
    return bool(_REFERENCE_LIST_PART.fullmatch(refs.text)) and not _ENDS_WITH_A_REFERENCE.search(words.text)


def entry_lines(ordered: Sequence[LineBox], line_height: float, char_width: float) -> set[int]:
    """Indexes (``LineBox.idx``) of the lines on entry rows. ``ordered``:
    lines in reading order (a row's fragments one after another);
    ``char_width``: the page's typical points per character."""
    found: set[int] = set()
    above = ""
    for row in rows(ordered):
        text = " ".join(l.text.strip() for l in sorted(row, key=lambda l: l.x0))
        if entry_row(row, line_height, char_width) or (_RUNS_ON.search(above) and _REFERENCE.fullmatch(text)):
            found.update(l.idx for l in row)
        above = text
    return found


#: a line of references alone, comma and space between them ("b123, s320, y513,"): an
#: amount's thousands separator has no space after it
_LIST_ALONE = re.compile(rf"\s*{_REF}(?:,\s+{_REF})+[,–-]?\s*")


def entry_share(lines: Sequence[LineBox]) -> float:
    """The share of ``lines`` that read as index or contents entries, each
    on its own: an entry with leaders, a list of references or one
    reference after a comma ("lists, 95"), or references alone (an entry's references wrapped onto a line of their
    own). Rows are not looked at: an index's columns share rows."""
    if not lines:
        return 0.0
    texts = [l.text.strip() for l in lines]
    return sum(bool(_LEADERED.search(t) or _REFERENCE_LIST.search(t) or _SINGLE_REFERENCE.search(t)
                    or _LEADERS_ONLY.search(t) or _LIST_ALONE.fullmatch(t)) for t in texts) / len(texts)


def rows(ordered: Sequence[LineBox]) -> list[list[LineBox]]:
    """Consecutive lines of ``ordered`` that share a row, grouped."""
    out: list[list[LineBox]] = []
    for l in ordered:
        if out and same_row(out[-1][-1], l):
            out[-1].append(l)
        else:
            out.append([l])
    return out


def entry_row(row: Sequence[LineBox], line_height: float, char_width: float) -> bool:
    """Whether ``row`` (its fragments) ends with a page reference set off
    by leaders or a wide gap (see the module docstring). Gaps and widths
    are those of the boxes the engine drew (a layout box may have been
    stretched over them, :func:`close_entry_gaps`)."""
    row = sorted(row, key=lambda l: _span(l)[0])
    text = " ".join(l.text.strip() for l in row)
    if _LEADERED.search(text) or _LEADERS_ONLY.search(text) or _REFERENCE_LIST.search(text):
        return True
    gap = ENTRY_GAP_LINES * line_height
    if len(row) == 1:
        l = row[0]
        needed = len(l.text.strip()) * char_width
        width = _span(l)[1] - _span(l)[0]
        return bool(_ENDS_WITH_REFERENCE.search(l.text)) and width >= needed + max(gap, SPARSE_SHARE * needed)
    *words, last = row
    gaps = [_span(b)[0] - _span(a)[1] for a, b in zip(row, row[1:])]
    inner = gaps[1:-1] if _NUMBER.fullmatch(words[0].text.strip()) else gaps[:-1]
    return (bool(_REFERENCE.fullmatch(last.text)) and gaps[-1] >= gap and all(g < gap for g in inner)
            and any(ch.isalpha() for l in words for ch in l.text))


def _span(l: LineBox) -> tuple[float, float]:
    """The line's extent across as the engine drew it."""
    return min(l.line.bbox.x0, l.line.bbox.x1), max(l.line.bbox.x0, l.line.bbox.x1)
