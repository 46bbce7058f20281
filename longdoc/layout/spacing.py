"""Spaces an OCR engine dropped between two words, put back.

A recognizer sometimes reads two words as one where the typesetting left
little room between them ("theoriginal", "projectswere", "11projects"). Its
character positions do not tell: on RapidOCR's own output the gaps inside
words and the gaps where a space was dropped overlap. Word frequencies do:
a token that is no English word but splits into two common ones is two
words. :func:`restore_spaces` applies, conservatively:

- only to OCR text (a text layer's spaces are the document's own), only on
  pages whose running text is English (:data:`MIN_ENGLISH_SHARE` of its
  lowercase words are common English words: a German page's "lineare" is
  not "line are");
- only to lowercase tokens of at least :data:`MIN_TOKEN` letters (names,
  acronyms and capitalised words are left alone) that are rare or unknown
  as a whole (Zipf frequency under :data:`MAX_WHOLE_ZIPF`);
- where both parts are common (Zipf ≥ :data:`MIN_PART_ZIPF`; one-letter and
  two-letter parts only from a short list: "a", "of", "in"…; a leading "a"
  only off an unknown whole, as "aground" is a word) and the pair is
  clearly likelier than the whole (:func:`split_word`);
- a number glued to a lowercase word that is not a unit ("11projects" →
  "11 projects"; "10mg", "3rd" stay).

Measured on 55,281 words of English ground truth in the dev set: six
tokens changed (compounds such as "powerup", "selfpublishing", and a
hyphenation fragment); of 2,000 neighbouring word pairs from the same text
glued together, 81% split back exactly (``python bench/spacing.py``).
Frequencies come from :mod:`wordfreq`.
"""

from __future__ import annotations

import re
from functools import lru_cache

MIN_ENGLISH_SHARE = 0.75
MIN_TOKEN = 5
MAX_WHOLE_ZIPF = 3.0
MIN_PART_ZIPF = 3.0
#: a whole unknown to the word list splits when its parts' Zipf values sum to this
UNKNOWN_PAIR_ZIPF = 9.0
#: a rare whole splits when its parts' Zipf values exceed its own by this
RARE_PAIR_MARGIN = 9.5
SHORT_PARTS = frozenset({"a", "an", "as", "at", "be", "by", "do", "go", "he", "if", "in", "is", "it", "me", "my",
                         "no", "of", "on", "or", "so", "to", "up", "us", "we"})
#: word endings that are also words: "senting" (from "pre-senting") is no "sent ing"
SUFFIXES = frozenset({"ing", "ings", "ion", "ions", "ment", "ness", "less", "able", "ful", "est", "ism", "ist"})
UNITS = frozenset({"mg", "kg", "km", "cm", "mm", "ml", "th", "st", "nd", "rd", "px", "pt", "am", "pm", "kb", "mb",
                   "gb", "tb", "hz", "khz", "mhz", "ghz", "db", "bn", "yrs", "mins", "min", "hr", "hrs", "sec", "ms",
                   "kwh", "mph", "kph", "lbs", "ft", "in", "yd", "oz", "mol", "ppm", "dpi", "fps"})

_TOKEN = re.compile(r"^([\"'(\[]*)(.*?)([\"')\].,;:!?]*)$")
_NUMBER_WORD = re.compile(r"(\d[\d.,]*)([a-z]{3,})")


@lru_cache(maxsize=200_000)
def _zipf(word: str) -> float:
    # imported on first use: 0.3 s of CPU that a process which never lays out a line (a document sandbox,
    # an OCR worker, the fleet's API) would pay at start, each fork server and server process included
    from wordfreq import zipf_frequency

    return zipf_frequency(word, "en")


def english_share(texts: list[str]) -> float:
    """Share of the lowercase words (3+ letters) that are common English."""
    words = [w for t in texts for w in t.split() if len(w) >= 3 and w.isalpha() and w.islower()]
    return sum(_zipf(w) >= 3.0 for w in words) / len(words) if words else 0.0


def restore_spaces(texts: list[str]) -> list[str]:
    """The lines' texts with dropped spaces put back (unchanged unless the
    text is English; see the module docstring)."""
    if english_share(texts) < MIN_ENGLISH_SHARE:
        return list(texts)
    return [" ".join(split_word(token) for token in text.split(" ")) for text in texts]


def split_word(token: str) -> str:
    """``token`` with a space where two words were glued, or unchanged."""
    parts = _TOKEN.match(token)
    assert parts is not None, "_TOKEN matches every token"
    prefix, core, suffix = parts.groups()
    glued = _NUMBER_WORD.fullmatch(core)
    if glued:
        word = glued.group(2)
        if word not in UNITS and _zipf(word) >= MIN_PART_ZIPF:
            return f"{prefix}{glued.group(1)} {word}{suffix}"
        return token
    if len(core) < MIN_TOKEN or not core.isalpha() or not core.islower():
        return token
    whole = _zipf(core)
    if whole >= MAX_WHOLE_ZIPF:
        return token
    best: tuple[float, int] | None = None
    for i in range(1, len(core)):
        a, b = core[:i], core[i:]
        if not (_part_ok(a, b) and _part_ok(b, a)) or b in SUFFIXES:
            continue
        if a == "a" and whole >= 1.0:  # "aground", "amass", "awash": English words that begin with "a"
            continue
        za, zb = _zipf(a), _zipf(b)
        likelier = za + zb >= (UNKNOWN_PAIR_ZIPF if whole < 1.0 else whole + RARE_PAIR_MARGIN)
        if min(za, zb) >= MIN_PART_ZIPF and likelier and (best is None or min(za, zb) > best[0]):
            best = (min(za, zb), i)
    if best is None:
        return token
    return f"{prefix}{core[:best[1]]} {core[best[1]:]}{suffix}"


def _part_ok(part: str, other: str) -> bool:
    if len(part) >= 3:
        return True
    if part == "a":
        return len(other) >= 4
    return part in SHORT_PARTS
