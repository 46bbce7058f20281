"""Metrics: CER, fuzzy phrase search, order checks, and the olmOCR-bench test runner."""

from __future__ import annotations

import json
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longdoc.errors import InputError, UnreadablePath
from longdoc.eval import (
    cer,
    fuzzy_find_starts,
    load_olmocr_tests,
    normalize_olmocr_text,
    normalize_ws,
    order_ok,
    run_olmocr_test,
    trailing_repeats,
)

OLMOCR_DIR = Path("/work/shared/eval/dev/olmocr/headers_footers_draft/pdfs")


# --- whitespace and CER ---------------------------------------------------------------


def test_normalize_ws_collapses_every_kind_of_space():
    assert normalize_ws("  a\t b\r\n\n c\u3000d\x0c ") == "a b c d"
    assert normalize_ws("\n \t") == ""


def test_cer_is_zero_for_whitespace_only_differences():
    assert cer("The  quick\nbrown fox", " The quick brown\tfox ") == 0.0


def test_cer_counts_edits_over_reference_length():
    assert cer("hallo world", "hello world") == pytest.approx(1 / 11)
    assert cer("helo world", "hello world") == pytest.approx(1 / 11)
    assert cer("", "hello") == 1.0
    assert cer("hello hello hello", "hello") == pytest.approx(12 / 5)  # extra text can push it above 1


def test_cer_with_empty_reference():
    assert cer("", "") == 0.0
    assert cer(" \n", "\t") == 0.0
    assert cer("anything", "  ") == 1.0


# --- fuzzy search and order -------------------------------------------------------------


def test_exact_search_finds_overlapping_occurrences():
    assert fuzzy_find_starts("aa", "aaaa") == [0, 1, 2]
    assert fuzzy_find_starts("x", "abc") == []


def test_fuzzy_search_allows_substitution_insertion_deletion():
    text = "the quick brown fox"
    assert 4 in fuzzy_find_starts("quack", text, 1)
    assert 4 in fuzzy_find_starts("quiick", text, 1)
    assert 4 in fuzzy_find_starts("quck", text, 1)
    assert fuzzy_find_starts("qxxck", text, 1) == []


def test_fuzzy_search_rejects_empty_pattern_and_negative_diffs():
    with pytest.raises(ValueError):
        fuzzy_find_starts("", "abc")
    with pytest.raises(ValueError):
        fuzzy_find_starts("a", "abc", -1)


def _naive_starts(pattern: str, text: str, k: int) -> list[int]:
    """Starts s where min over e of Levenshtein(pattern, text[s:e]) <= k (plain DP)."""
    starts = []
    for s in range(len(text)):
        prev = list(range(len(pattern) + 1))
        best = prev[-1]
        for ch in text[s:]:
            cur = [prev[0] + 1]
            for i, pc in enumerate(pattern, start=1):
                cur.append(min(prev[i] + 1, cur[i - 1] + 1, prev[i - 1] + (pc != ch)))
            prev, best = cur, min(best, cur[-1])
        if best <= k:
            starts.append(s)
    return starts


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="ab", min_size=1, max_size=7),
    st.text(alphabet="abc", max_size=14),
    st.integers(min_value=0, max_value=2),
)
def test_fuzzy_search_agrees_with_dynamic_programming(pattern, text, k):
    assert fuzzy_find_starts(pattern, text, k) == _naive_starts(pattern, text, k)


def test_order_ok():
    text = "Alpha beta.\n\nGamma   delta. Epsilon."
    assert order_ok(text, "beta. Gamma", "Epsilon")
    assert not order_ok(text, "Epsilon", "Alpha")
    assert not order_ok(text, "Alpha", "missing")
    assert not order_ok(text, "missing", "Alpha")
    assert not order_ok(text, "Alpha bta", "Gamma")
    assert order_ok(text, "Alpha bta", "Gamma", max_diffs=1)


def test_order_ok_uses_any_later_occurrence():
    text = "tail first. head here. tail again."
    assert order_ok(text, "head", "tail")
    assert not order_ok("tail only. head", "head", "tail")


# --- olmOCR-bench: loading ----------------------------------------------------------------


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_load_fills_defaults_and_keeps_other_fields(tmp_path):
    path = write_jsonl(
        tmp_path / "t.jsonl",
        [
            {"pdf": "a.pdf", "page": 1, "id": "t1", "type": "present", "text": "hello", "first_n": None},
            "",
            {"pdf": "a.pdf", "page": 1, "id": "t2", "type": "order", "before": "a", "after": "b", "max_diffs": 2},
        ],
    )
    tests = load_olmocr_tests(path)
    assert [t["id"] for t in tests] == ["t1", "t2"]
    assert tests[0]["max_diffs"] == 0 and tests[0]["case_sensitive"] is True and tests[0]["first_n"] is None
    assert tests[0]["pdf"] == "a.pdf" and tests[1]["max_diffs"] == 2


@pytest.mark.parametrize(
    "row, message",
    [
        ("{not json", "not valid JSON"),
        ('["a list"]', "expected a JSON object"),
        ({"type": "sideways", "text": "x"}, "unknown test type"),
        ({"type": "present", "text": "  "}, "non-empty 'text'"),
        ({"type": "order", "before": "a"}, "non-empty 'after'"),
        ({"type": "absent", "text": "x", "max_diffs": -1}, "max_diffs"),
        ({"type": "absent", "text": "x", "max_diffs": 1.5}, "max_diffs"),
    ],
)
def test_load_rejects_bad_lines_naming_the_line(tmp_path, row, message):
    path = write_jsonl(tmp_path / "bad.jsonl", [{"type": "baseline"}, row])
    with pytest.raises(InputError) as info:
        load_olmocr_tests(path)
    assert message in info.value.message and "bad.jsonl:2" in info.value.message
    assert info.value.code == "bad_input"


def test_load_missing_file_is_unreadable(tmp_path):
    with pytest.raises(UnreadablePath):
        load_olmocr_tests(tmp_path / "nope.jsonl")


@pytest.mark.skipif(not OLMOCR_DIR.is_dir(), reason="shared evaluation data not present")
def test_load_real_olmocr_files():
    for path in OLMOCR_DIR.glob("*.tests.jsonl"):
        tests = load_olmocr_tests(path)
        assert tests and all(t["type"] == "absent" and t["text"] for t in tests)


# --- olmOCR-bench: running ------------------------------------------------------------------


def run(page_text: str, /, **test) -> tuple[bool, str]:
    return run_olmocr_test(test, page_text)


PAGE = "Journal of Things 12\n\n# Results\n\nThe **measured** value was 4.2 ± 0.1 “units”.\n\nPage 7"


def test_present_exact_and_normalized():
    assert run(PAGE, type="present", text="The measured value was 4.2") == (True, "")
    assert run(PAGE, type="present", text='value was 4.2 ± 0.1 "units"')[0]  # curly quotes normalized
    ok, why = run(PAGE, type="present", text="The estimated value was 4.2")
    assert not ok and "best match" in why


def test_present_fuzzy_within_max_diffs():
    assert not run(PAGE, type="present", text="The measurd value")[0]
    assert run(PAGE, type="present", text="The measurd value", max_diffs=1)[0]
    assert not run(PAGE, type="present", text="The mxasurd value", max_diffs=1)[0]


def test_present_case_sensitivity():
    assert not run(PAGE, type="present", text="the MEASURED value")[0]
    assert run(PAGE, type="present", text="the MEASURED value", case_sensitive=False)[0]


def test_present_first_n_and_last_n_restrict_the_search():
    assert run(PAGE, type="present", text="Journal of Things", first_n=30)[0]
    assert not run(PAGE, type="present", text="Page 7", first_n=30)[0]
    assert run(PAGE, type="present", text="Page 7", last_n=10)[0]
    assert not run(PAGE, type="present", text="Journal of Things", last_n=10)[0]
    assert run(PAGE, type="present", text="Page 7", first_n=5, last_n=10)[0]


def test_absent():
    assert run(PAGE, type="absent", text="Running header")[0]
    ok, why = run(PAGE, type="absent", text="Journal of Things 12")
    assert not ok and "absent" in why
    assert not run(PAGE, type="absent", text="Journal of Thing 12", max_diffs=1)[0]


def test_absent_page_shorter_than_text_is_not_a_match():
    # rapidfuzz's partial ratio would align the short page inside the text and score 100.
    assert run("1", type="absent", text="1044")[0]
    assert not run("1", type="present", text="1044")[0]
    assert not run("", type="present", text="x")[0]


def test_order():
    assert run(PAGE, type="order", before="Results", after="measured value") == (True, "")
    ok, why = run(PAGE, type="order", before="measured value", after="Results")
    assert not ok and "does not appear before" in why
    ok, why = run(PAGE, type="order", before="Resluts", after="measured")
    assert not ok and "not found" in why
    assert run(PAGE, type="order", before="Resluts", after="measured", max_diffs=2)[0]
    assert not run(PAGE, type="order", before="results", after="MEASURED")[0]
    assert run(PAGE, type="order", before="results", after="MEASURED", case_sensitive=False)[0]


def test_baseline_max_length_for_blank_pages():
    assert run("  12 ", type="baseline", max_length=5)[0]
    ok, why = run("a full page of text", type="baseline", max_length=5)
    assert not ok and "at most 5" in why


def test_baseline_rejects_empty_repetitive_and_disallowed_output():
    assert run("A normal page of text.", type="baseline") == (True, "")
    assert not run(" \n ..", type="baseline")[0]
    ok, why = run("Some text " + "ha" * 40, type="baseline")
    assert not ok and "2-grams" in why
    assert run("Some text " + "ha" * 10, type="baseline")[0]
    ok, why = run("English with 中文 inside", type="baseline")
    assert not ok and "disallowed" in why
    assert run("English with 中文 inside", type="baseline", check_disallowed_characters=False)[0]


def test_trailing_repeats_counts_back_to_back_ngrams():
    assert trailing_repeats("xyz abcabcabc", 3) == [1, 1, 3]
    assert trailing_repeats("", 2) == [0, 0]
    assert trailing_repeats("a \n a  a\ta", 2) == [1, 3]  # read as "a a a a": " a" three times


def test_table_and_math_are_reported_unsupported():
    assert run(PAGE, type="table", cell="4.2") == (False, "table tests not supported")
    assert run(PAGE, type="math", math="x^2") == (False, "math tests not supported")


def test_run_rejects_invalid_test():
    with pytest.raises(InputError):
        run(PAGE, type="present", text="")


def test_olmocr_normalization():
    assert normalize_olmocr_text("**bold**  and *it*<br>__x__ – “q”") == 'bold and it x - "q"'
    assert normalize_olmocr_text("e\u0301") == "\u00e9"


@pytest.mark.skipif(not OLMOCR_DIR.is_dir(), reason="shared evaluation data not present")
def test_absent_tests_catch_headers_left_in_a_real_text_layer():
    stem = "96ac3eb8ba2ef41058e3865ff248301e3101f595_page_1"
    tests = {t["text"]: t for t in load_olmocr_tests(OLMOCR_DIR / f"{stem}.tests.jsonl")}
    pdf = pdfium.PdfDocument(str(OLMOCR_DIR / f"{stem}.pdf"))
    try:
        layer = pdf[0].get_textpage().get_text_range()
    finally:
        pdf.close()
    test = tests["MOLECULAR PHARMACOLOGY"]
    assert not run_olmocr_test(test, layer)[0]
    without = "\n".join(line for line in layer.splitlines() if "MOLECULAR PHARMACOLOGY" not in line)
    assert run_olmocr_test(test, without) == (True, "")
