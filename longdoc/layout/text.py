"""Joining text across line breaks, and small text predicates layout needs.

Used by the layout stage (lines → block text) and by the stitcher (a block
continued over a page break). Pure string functions; no I/O.

Rules of :func:`join_pair` (``a`` ends a line, ``b`` starts the next):

============================================  ==========================  =================
case                                          example                     result
============================================  ==========================  =================
soft hyphen (U+00AD) at the end of ``a``      ``"exam\\u00ad" + "ple"``    ``"example"``
letter + hyphen, ``b`` starts lowercase       ``"exam-" + "ple"``          ``"example"``
letter + hyphen, ``b`` starts otherwise       ``"well-" + "Known"``        ``"well-Known"``
digit + hyphen / en dash / em dash            ``"1990-" + "2000"``         ``"1990-2000"``
letter + en/em dash (closed dash)             ``"word—" + "next"``         ``"word—next"``
space + hyphen or dash (a spaced dash)        ``"yes -" + "no"``           ``"yes - no"``
CJK meets CJK, or either side is CJK          ``"长文档" + "识别"``          ``"长文档识别"``
punctuation (``。`` ``，`` ``」`` …)
anything else                                 ``"a" + "b"``               ``"a b"``
============================================  ==========================  =================

A hyphen before an uppercase letter is kept because it is usually a real
compound ("non-" + "English"); a hyphen before a lowercase letter is taken
as a line-end hyphenation, which is wrong for the rare compound broken
exactly at its hyphen ("well-" + "known" → "wellknown") — telling those
apart needs a dictionary. Hangul is not treated as CJK here: Korean puts
spaces between words, so a line break there is a space.
"""

from __future__ import annotations

import re
import unicodedata

HYPHENS = frozenset("-\u2010")  # hyphen-minus, hyphen
SOFT_HYPHEN = "\u00ad"
DASHES = frozenset("\u2013\u2014")  # en dash, em dash
#: characters that end a sentence (Latin and CJK full-width forms)
SENTENCE_END = frozenset(".!?。！？…‼⁇⁈⁉．｡")
#: closing characters that may follow the sentence end (quotes, brackets)
_CLOSERS = "\"'”’»)]）」』】〕〉》"

_LIST_MARKER = re.compile(
    r"""^\s*(
        [•·▪‣◦●○■□➢➤►▶✓✔\u2043\u2022]\s*      # bullet glyphs (space optional)
      | [-*–+](?:\s+|$)                        # ascii-ish bullets need a space
      | \(?(?:\d{1,3}|[a-z]|[ivx]{1,5})\)(?:\s+|$)  # 1)  a)  (1)  (a)  (iv)
      | (?:\d{1,3}|[a-z]|[ivx]{1,5})\.(?:\s+|$)     # 1.  a.  iv.
      | \(?[A-Z]\)(?:\s+|$)                      # A)  (A)
    )""",
    re.VERBOSE,
)


def is_cjk_char(ch: str) -> bool:
    """True for Han ideographs, kana, bopomofo, CJK punctuation and
    full-width forms: scripts written without spaces between words."""
    cp = ord(ch)
    return (
        0x2E80 <= cp <= 0x2FDF  # radicals
        or 0x3000 <= cp <= 0x30FF  # CJK symbols & punctuation, hiragana, katakana
        or 0x3100 <= cp <= 0x31FF  # bopomofo, katakana ext
        or 0x3400 <= cp <= 0x4DBF  # ext A
        or 0x4E00 <= cp <= 0x9FFF  # unified ideographs
        or 0xF900 <= cp <= 0xFAFF  # compatibility ideographs
        or 0xFE30 <= cp <= 0xFE4F  # compatibility forms
        or 0xFF00 <= cp <= 0xFFEF  # half/full-width forms
        or 0x20000 <= cp <= 0x3FFFF  # ext B+
    )


def _is_cjk_punct(ch: str) -> bool:
    cp = ord(ch)
    return 0x3000 <= cp <= 0x303F or 0xFE30 <= cp <= 0xFE4F or (
        0xFF00 <= cp <= 0xFFEF and unicodedata.category(ch).startswith("P")
    )


def join_pair(a: str, b: str) -> str:
    """Join ``a`` (text ending at a line or page break) with ``b`` (the text
    that follows it). Surrounding whitespace at the seam is dropped; see the
    module docstring for the rules. Never drops any other character."""
    a = a.rstrip()
    b = b.lstrip()
    if not a:
        return b
    if not b:
        return a
    last, first = a[-1], b[0]
    if last == SOFT_HYPHEN:
        return a[:-1] + b
    before = a[-2] if len(a) >= 2 else " "
    if last in HYPHENS:
        if before.isalpha() and first.islower():
            return a[:-1] + b
        if before.isalnum():
            return a + b
        return f"{a} {b}"
    if last in DASHES:
        return a + b if not before.isspace() else f"{a} {b}"
    if (is_cjk_char(last) and is_cjk_char(first)) or _is_cjk_punct(last) or _is_cjk_punct(first):
        return a + b
    return f"{a} {b}"


def join_lines(texts: list[str]) -> str:
    """Join the texts of consecutive lines with :func:`join_pair`; empty or
    blank entries are skipped. ``[]`` gives ``""``."""
    out = ""
    for t in texts:
        if t and not t.isspace():
            out = join_pair(out, t)
    return out


def cells(text: str) -> int:
    """How many character cells ``text`` (stripped) fills: an East Asian wide
    or full-width character (Han, kana, Hangul, full-width forms) counts two,
    a combining mark or an invisible format character none, any other
    character one — so a line's width per cell is about the same for a CJK
    line and a Latin line of the same type size (a CJK character is about
    one em wide, a Latin one about half)."""
    return sum(_cell_width(ch) for ch in text.strip())


def _cell_width(ch: str) -> int:
    if unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def ends_sentence(text: str) -> bool:
    """True when ``text`` ends with sentence-ending punctuation (``.`` ``?``
    ``。`` …), possibly followed by closing quotes or brackets."""
    t = text.rstrip().rstrip(_CLOSERS)
    return bool(t) and t[-1] in SENTENCE_END


def ends_with_hyphenation(text: str) -> bool:
    """True when ``text`` ends with a hyphen (or soft hyphen) right after a
    letter: a word broken at the line end."""
    t = text.rstrip()
    if t.endswith(SOFT_HYPHEN):
        return True
    return len(t) >= 2 and t[-1] in HYPHENS and t[-2].isalpha()


def first_letter(text: str) -> str:
    """The first alphabetic character of ``text`` after leading opening
    punctuation (quotes, brackets), or ``""`` when it starts otherwise."""
    for ch in text.lstrip():
        if ch.isalpha():
            return ch
        if unicodedata.category(ch) in ("Ps", "Pi") or ch in "\"'":
            continue
        return ""
    return ""


def runs_on(a: str, b: str) -> bool:
    """Whether text ``b`` (after a column or page break) continues ``a``
    mid-sentence: ``a`` ends with a broken word ("exam-"), or ``a`` does not
    end a sentence and ``b`` starts with a lowercase letter, or both sides
    of the seam are CJK. ``b`` starting with a list marker never runs on."""
    a, b = a.rstrip(), b.lstrip()
    if not a or not b or has_list_marker(b):
        return False
    if ends_with_hyphenation(a):
        return True
    if ends_sentence(a):
        return False
    return first_letter(b).islower() or (is_cjk_char(a[-1]) and is_cjk_char(b[0]))


_LABEL = re.compile(
    r"""[\[(]\s*[\w.]{1,5}\s*[\])]   # [18]  (a)  (iv)
      | [§#]\s*[\w.]{1,5}          # § 2  #3
      | \d{1,3}(?:\.\d{1,3})*[.):]?  # 12  3.  2.1
      | [A-Za-z][.)]              # a.  B)""",
    re.VERBOSE,
)


def is_label(text: str) -> bool:
    """A bare label: a list marker alone or a short tag like ``[18]``,
    ``3.``, ``(a)``, ``§ 2`` — what hangs beside an entry in a box of its own."""
    t = text.strip()
    marker, rest = split_list_marker(t)
    return (bool(marker) and not rest.strip()) or bool(_LABEL.fullmatch(t))


_REFERENCE = re.compile(r"^\s*\[\s*[\w.]{1,5}\s*\]\s+\S")


def starts_with_reference(text: str) -> bool:
    """A reference entry: ``[18] Smith J (2024) …`` (its label and text in one line)."""
    return bool(_REFERENCE.match(text))


def split_list_marker(text: str) -> tuple[str, str]:
    """Split a list item into ``(marker, rest)``: ``"• Milk"`` →
    ``("•", "Milk")``, ``"(iv) Done"`` → ``("(iv)", "Done")``. A text
    without a marker gives ``("", text)``."""
    m = _LIST_MARKER.match(text)
    if not m:
        return "", text
    return m.group(1).strip(), text[m.end() :]


def has_list_marker(text: str) -> bool:
    """True when ``text`` starts with a bullet or an enumeration marker
    (``"• a"``, ``"1. a"``, ``"a) a"``, ``"(iv) a"``), or is nothing but a
    marker (OCR often boxes a bullet apart from its item text)."""
    marker, _ = split_list_marker(text)
    return bool(marker)
