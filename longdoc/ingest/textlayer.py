"""Decide whether a page's embedded text layer is sound enough to skip OCR.

Used by ``ocr=auto``: a page whose text layer passes is taken as is (exact
text, no OCR cost); any other page goes to OCR. The judge errs towards OCR:
trusting a bad text layer silently loses text, while OCR of a good page only
costs time.

Checks, in this order; the first that fails names the reason (stable
strings, recorded in ``Page.ocr_reason``):

========================  ==================================================
``no_text``               no text layer, or only whitespace (a scan)
``unmapped_glyphs``       more than :data:`MAX_UNMAPPED_SHARE` of the
                          characters are U+FFFD or control characters
                          (glyphs without a Unicode mapping; the PDF source
                          turns pdfium's mapping errors into U+FFFD), or
                          more than :data:`MAX_GARBLED_LINE_SHARE` of them
                          sit in lines that are mostly such glyphs (one
                          passage in an unmapped font)
``private_use_glyphs``    more than :data:`MAX_PRIVATE_USE_SHARE` of the
                          characters are in Unicode private-use areas
                          (font-specific codes, not text)
``mostly_non_words``      under :data:`MIN_WORD_SHARE` of the characters are
                          letters, marks or digits, after collapsing runs
                          like ``. . . . .`` (dot leaders) to one character
``too_little_text``       under :data:`MIN_CHARS` characters, or under
                          :data:`SPARSE_CHARS` covering under
                          :data:`MIN_COVERAGE` of the page (a scan with a
                          small stamp or header in its text layer)
``text_layer_ok``         none of the above
========================  ==================================================

Counts are of non-whitespace characters. Letters of every script count as
word characters, so CJK text (no spaces) and Arabic (with its marks) pass
like Latin text does.
"""

from __future__ import annotations

import re
import unicodedata

from longdoc.model import Line

NO_TEXT = "no_text"
UNMAPPED_GLYPHS = "unmapped_glyphs"
PRIVATE_USE_GLYPHS = "private_use_glyphs"
MOSTLY_NON_WORDS = "mostly_non_words"
TOO_LITTLE_TEXT = "too_little_text"
TEXT_LAYER_OK = "text_layer_ok"

MAX_UNMAPPED_SHARE = 0.15
MAX_GARBLED_LINE_SHARE = 0.10
MAX_PRIVATE_USE_SHARE = 0.15
MIN_WORD_SHARE = 0.5
MIN_CHARS = 30
SPARSE_CHARS = 100
MIN_COVERAGE = 0.01

_REPEATED_NON_WORD = re.compile(r"([^\w\s])(?:\s*\1){2,}")


def judge_text_layer(
    lines: list[Line] | None, page_width: float, page_height: float
) -> tuple[bool, str]:
    """Whether to use this page's text layer instead of OCR, and why.

    ``lines``: the page's text layer (None when the source has none);
    ``page_width``/``page_height``: the page size in points (the coverage
    check needs them). Returns ``(use_text_layer, reason)`` with ``reason``
    one of the constants of this module.
    """
    if not lines:
        return False, NO_TEXT
    chars = [ch for line in lines for ch in line.text if not ch.isspace()]
    total = len(chars)
    if total == 0:
        return False, NO_TEXT
    if (
        _unmapped_share(chars) > MAX_UNMAPPED_SHARE
        or _garbled_line_share(lines, total) > MAX_GARBLED_LINE_SHARE
    ):
        return False, UNMAPPED_GLYPHS
    if sum(map(_is_private_use, chars)) / total > MAX_PRIVATE_USE_SHARE:
        return False, PRIVATE_USE_GLYPHS
    if _word_share(lines) < MIN_WORD_SHARE:
        return False, MOSTLY_NON_WORDS
    sparse = total < SPARSE_CHARS and _coverage(lines, page_width, page_height) < MIN_COVERAGE
    if total < MIN_CHARS or sparse:
        return False, TOO_LITTLE_TEXT
    return True, TEXT_LAYER_OK


def _is_unmapped(ch: str) -> bool:
    return ch == "\ufffd" or unicodedata.category(ch) == "Cc"


def _is_private_use(ch: str) -> bool:
    return unicodedata.category(ch) == "Co"


def _unmapped_share(chars: list[str]) -> float:
    return sum(map(_is_unmapped, chars)) / len(chars)


def _garbled_line_share(lines: list[Line], total: int) -> float:
    """Share of all characters that sit in lines more than half unmapped."""
    garbled = 0
    for line in lines:
        chars = [ch for ch in line.text if not ch.isspace()]
        if chars and _unmapped_share(chars) > 0.5:
            garbled += len(chars)
    return garbled / total


def _word_share(lines: list[Line]) -> float:
    """Share of letters, marks and digits, with runs of one repeated symbol
    (dot leaders, rules of dashes or underscores) counted once."""
    text = _REPEATED_NON_WORD.sub(r"\1", "\n".join(line.text for line in lines))
    chars = [ch for ch in text if not ch.isspace()]
    if not chars:
        return 0.0
    words = sum(unicodedata.category(ch)[0] in "LMN" for ch in chars)
    return words / len(chars)


def _coverage(lines: list[Line], page_width: float, page_height: float) -> float:
    """Summed line-box area over page area (overlaps counted twice; it only
    needs to tell a stamp from a page of text)."""
    page_area = page_width * page_height
    if page_area <= 0:
        return 0.0
    return sum(line.bbox.width * line.bbox.height for line in lines) / page_area
