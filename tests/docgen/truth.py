"""Ground truth of generated documents: the dataclass, text assembly, order checks.

Plain-text conventions (what a perfect parser's plain-text output is):

- blocks (title, headings, paragraphs, lists, side notes) in reading order,
  separated by one blank line (``"\\n\\n"``);
- lines of a paragraph joined by one space (Latin) or nothing (CJK); a word
  hyphenated by the typesetter is rejoined without the hyphen;
- a list block has one line per item, starting with the visible bullet
  ``"• "``; items are separated by ``"\\n"``;
- a block continued over a page (or column) break is one block.

Per-page text follows the same rules restricted to the lines on that page,
so a word hyphenated across a page break keeps its hyphen there
(``"... continu-"`` ends one page, ``"ation ..."`` starts the next).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evaluation.metrics import normalize_ws
from tests.docgen.layout import Block, PlacedLine

_LATIN_TOKEN = re.compile(r"[^\s•]+")
_CJK_TOKEN = re.compile(r"[^\s•]")


@dataclass(frozen=True)
class GeneratedDoc:
    """A generated file and its exact ground truth.

    - ``pdf_path``: the file (a PDF; a TIFF or PNG after ``to_tiff``/``to_png``).
    - ``pages``: page count.
    - ``main_text_per_page``: per page, the main text in reading order,
      furniture excluded (conventions in this module's docstring).
    - ``main_text``: the whole document's main text; paragraphs continued over
      page breaks joined, hyphenation removed.
    - ``furniture``: per page, the header/footer/page-number strings.
    - ``order_checks``: ``(before, after)`` phrase pairs, each phrase occurring
      once in ``main_text`` (whitespace-normalized), ``before`` first.
    - ``page_size``: ``(width, height)`` in points, the same for every page.
    - ``language``: ``"en"`` or ``"zh"``.
    - ``image_dpi``: ``None`` for a born-digital file, else the pixels per inch
      of its page images.
    """

    pdf_path: Path
    pages: int
    main_text_per_page: list[str]
    main_text: str
    furniture: list[list[str]]
    order_checks: list[tuple[str, str]]
    page_size: tuple[float, float]
    language: str = "en"
    image_dpi: int | None = None


@dataclass
class Assembled:
    """``main_text``, per-page texts, and where each placed line ends in ``main_text``."""

    main_text: str
    per_page: list[str]
    line_end: dict[int, int]  # id(PlacedLine) -> offset just past the line's text in main_text


def _join(block: Block, lines: list[PlacedLine]) -> tuple[str, list[int]]:
    """Text of ``lines`` (all of one block) and the end offset of each line in it."""
    out = ""
    ends: list[int] = []
    prev: PlacedLine | None = None
    for ln in lines:
        if prev is None:
            out = ln.text
        elif ln.spec.item != prev.spec.item:
            out += "\n" + ln.text
        elif prev.spec.hyphen:
            out = out[:-1] + ln.text
        else:
            out += block.joiner + ln.text
        ends.append(len(out) - (1 if ln.spec.hyphen else 0))
        prev = ln
    return out, ends


def assemble(blocks: list[Block], n_pages: int) -> Assembled:
    """Build the ground-truth texts of ``blocks`` (in reading order) over ``n_pages`` pages."""
    parts: list[str] = []
    line_end: dict[int, int] = {}
    offset = 0
    for block in blocks:
        text, ends = _join(block, block.placed)
        if parts:
            offset += 2
        for ln, end in zip(block.placed, ends):
            line_end[id(ln)] = offset + end
        parts.append(text)
        offset += len(text)
    per_page: list[list[str]] = [[] for _ in range(n_pages)]
    for block in blocks:
        for page in sorted({ln.page for ln in block.placed}):
            per_page[page].append(_join(block, [ln for ln in block.placed if ln.page == page])[0])
    return Assembled("\n\n".join(parts), ["\n\n".join(p) for p in per_page], line_end)


# --- order checks -------------------------------------------------------------


def _grow(text: str, spans: list[tuple[int, int]], lo: int, hi: int, backwards: bool, min_tokens: int) -> str:
    """Shortest phrase of >= ``min_tokens`` tokens that is unique in ``text``.

    It grows token by token away from the break, first only inside its block
    (accepting fewer tokens at the block's edge if unique); when the block
    holds no unique phrase it grows on across block boundaries.
    """
    norm = normalize_ws(text)
    i, j = lo, hi
    inside = True
    while True:
        phrase = normalize_ws(text[spans[i][0] : spans[j][1]])
        unique = norm.count(phrase) == 1
        if unique and (j - i + 1 >= min_tokens or not inside):
            return phrase
        nxt_i, nxt_j = (i - 1, j) if backwards else (i, j + 1)
        if nxt_i < 0 or nxt_j >= len(spans) or j - i > 60:
            raise RuntimeError(f"no unique phrase around {phrase!r}")
        if inside and "\n" in text[spans[nxt_i][0] : spans[nxt_j][1]]:
            if unique:
                return phrase
            inside = False
        i, j = nxt_i, nxt_j


def phrase_before(text: str, offset: int, *, cjk: bool = False) -> str:
    """A unique phrase of ``text`` ending with the token that contains or precedes ``offset``."""
    spans = [m.span() for m in (_CJK_TOKEN if cjk else _LATIN_TOKEN).finditer(text)]
    i = max(k for k, (s, _) in enumerate(spans) if s < offset)
    return _grow(text, spans, i, i, backwards=True, min_tokens=6 if cjk else 3)


def phrase_after(text: str, offset: int, *, cjk: bool = False) -> str:
    """A unique phrase of ``text`` starting with the first token that begins at or after
    ``offset`` (so the tail of a token cut by ``offset`` is skipped)."""
    spans = [m.span() for m in (_CJK_TOKEN if cjk else _LATIN_TOKEN).finditer(text)]
    i = min(k for k, (s, _) in enumerate(spans) if s >= offset)
    return _grow(text, spans, i, i, backwards=False, min_tokens=6 if cjk else 3)


def boundary_check(text: str, offset: int, *, cjk: bool = False) -> tuple[str, str]:
    """``(before, after)`` phrases on either side of a break at ``offset`` in ``text``."""
    return phrase_before(text, offset, cjk=cjk), phrase_after(text, offset, cjk=cjk)


def last_line(blocks: list[Block], where: Callable[[PlacedLine], bool]) -> PlacedLine:
    """The last line in reading order for which ``where(line)`` holds."""
    found = [ln for b in blocks for ln in b.placed if where(ln)]
    return found[-1]
