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

Not supported: ``table`` and ``math`` tests answer ``(False, "... not
supported")`` — the evaluation data in this project has none.

This module depends only on :mod:`longdoc.errors` and rapidfuzz.
"""

from __future__ import annotations

import json
import re
import unicodedata
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
    test = {**_DEFAULTS, **{k: v for k, v in raw.items() if v is not None or k not in _DEFAULTS}}
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
    ``table`` and ``math`` tests return ``(False, "<type> tests not supported")``.
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
