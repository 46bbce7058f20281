"""Metrics: CER, fuzzy phrase search, order checks, and the olmOCR-bench test runner."""

from __future__ import annotations

import json
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from hypothesis import given, settings, strategies as st

from evaluation.metrics import (
    cer,
    fuzzy_find_starts,
    load_olmocr_tests,
    normalize_olmocr_text,
    normalize_ws,
    order_ok,
    run_olmocr_test,
    trailing_repeats,
)
from longdoc.errors import InputError, UnreadablePath

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


def test_math_is_reported_unsupported_and_a_page_without_tables_fails_table_tests():
    assert run(PAGE, type="table", cell="4.2") == (False, "No tables found in the content")
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


# --- olmOCR-bench: tables ---------------------------------------------------------------------

MD_TABLE_PAGE = """Some text before the table.

| Country | Year | Population |
|:--------|-----:|-----------:|
| France  | 2020 | 67.4       |
| Spain   | 2020 | 47.4       |
| Spain   | 2021 | 47.3       |

Text after the table, with a | pipe on its own line.
"""


def test_markdown_table_parsing():
    from evaluation.metrics import parse_markdown_tables

    (table,) = parse_markdown_tables(MD_TABLE_PAGE)  # the lone pipe line is no table
    assert table.cell_text[(0, 0)] == "Country" and table.cell_text[(3, 2)] == "47.3"
    assert len(table.cell_text) == 12 and table.is_rectangular
    assert table.heading_cells == {(0, 0), (0, 1), (0, 2), (1, 0), (2, 0), (3, 0)}
    assert table.up_relations[(2, 1)] == {(1, 1)} and table.right_relations[(2, 1)] == {(2, 2)}
    assert table.top_heading_relations(3, 2) == {(0, 2)} and table.left_heading_relations(3, 2) == {(3, 0)}


def test_markdown_table_tests_pass():
    page = MD_TABLE_PAGE
    assert run(page, type="table", cell="67.4", left="2020", up="Population", down="47.4") == (True, "")
    assert run(page, type="table", cell="47.3", top_heading="Population", left_heading="Spain")[0]
    # "2020" occurs twice; the second occurrence is the one below France's.
    assert run(page, type="table", cell="2020", up="2020", right="47.4")[0]
    assert run(page, type="table", cell="**France**", right="2020")[0]  # texts are normalized
    assert run(page, type="table", cell="Frunce", right="2020", max_diffs=1)[0]


def test_markdown_table_tests_fail():
    ok, why = run(MD_TABLE_PAGE, type="table", cell="67.4", left="2021")
    assert not ok and "relationships were not satisfied" in why and "'2021'" in why
    ok, why = run(MD_TABLE_PAGE, type="table", cell="47.3", up="67.4")  # 67.4 is two rows up
    assert not ok
    ok, why = run(MD_TABLE_PAGE, type="table", cell="Germany")
    assert not ok and "No cell matching 'Germany'" in why
    assert not run(MD_TABLE_PAGE, type="table", cell="Frunce", right="2020")[0]
    assert not run(MD_TABLE_PAGE, type="table", cell="67.4", left="2020", ignore_markdown_tables=True)[0]


HTML_TABLE_PAGE = """<p>Results</p>
<table>
  <thead>
    <tr><th rowspan="2">Model</th><th colspan="2">Accuracy</th><th rowspan="2">Size</th></tr>
    <tr><th>dev</th><th>test</th></tr>
  </thead>
  <tbody>
    <tr><td>Alpha</td><td>91.2</td><td>90.8</td><td rowspan="2">7B</td></tr>
    <tr><td>Beta<br>large</td><td>88.0</td><td>87.5</td></tr>
    <tr><td colspan="3">Gamma &amp; Delta</td><td>13B</td></tr>
  </tbody>
</table>"""


def test_html_table_parsing_with_spans():
    from evaluation.metrics import parse_html_tables

    (table,) = parse_html_tables(HTML_TABLE_PAGE)
    assert table.cell_text == {
        (0, 0): "Model", (0, 1): "Accuracy", (0, 3): "Size",
        (1, 1): "dev", (1, 2): "test",
        (2, 0): "Alpha", (2, 1): "91.2", (2, 2): "90.8", (2, 3): "7B",
        (3, 0): "Beta\nlarge", (3, 1): "88.0", (3, 2): "87.5",
        (4, 0): "Gamma & Delta", (4, 3): "13B",
    }  # fmt: skip
    assert table.is_rectangular
    assert table.heading_cells == {(0, 0), (0, 1), (0, 3), (1, 1), (1, 2)}
    assert table.down_relations[(0, 1)] == {(1, 1), (1, 2)}  # the colspan sits above two cells
    assert table.left_relations[(2, 3)] == {(2, 2), (3, 2)}  # the rowspan sits beside two rows
    assert table.up_relations[(4, 0)] == {(3, 0), (3, 1), (3, 2)}
    assert table.top_heading_relations(3, 2) == {(1, 2), (0, 1)}
    # No heading to the left: the walk ends at the table's left edge.
    assert table.left_heading_relations(3, 2) == {(3, 0)}


def test_html_table_tests_pass():
    page = HTML_TABLE_PAGE
    assert run(page, type="table", cell="91.2", up="dev", right="90.8", left="Alpha") == (True, "")
    assert run(page, type="table", cell="87.5", top_heading="Accuracy")[0]
    assert run(page, type="table", cell="87.5", top_heading="test", left_heading="Beta large")[0]
    assert run(page, type="table", cell="dev", up="Accuracy", right="test")[0]
    assert run(page, type="table", cell="7B", left="87.5", down="13B", up="Size")[0]
    assert run(page, type="table", cell="Gamma & Delta", right="13B", up="Beta large")[0]
    assert run(page, type="table", cell="Accuracy", down="test", left="Model")[0]
    assert run(page, type="table", cell="88.0", up="91.2", ignore_markdown_tables=True)[0]


def test_html_table_tests_fail():
    page = HTML_TABLE_PAGE
    ok, why = run(page, type="table", cell="91.2", up="test")
    assert not ok and "doesn't match expected 'test'" in why and "(best similarity:" in why
    assert not run(page, type="table", cell="90.8", left="Alpha")[0]  # Alpha is two cells left
    assert not run(page, type="table", cell="7B", right="13B")[0]
    assert not run(page, type="table", cell="87.5", top_heading="dev")[0]
    ok, why = run(page, type="table", cell="Epsilon", right="13B")
    assert not ok and "No cell matching 'Epsilon'" in why


def test_table_threshold_never_drops_below_one_half():
    page = "| a | b |\n|---|---|\n| xyz1 | w |\n"
    # Three substitutions are within max_diffs, but their ratio 0.25 is below the 0.5 floor.
    assert not run(page, type="table", cell="abc1", max_diffs=3)[0]
    assert run(page, type="table", cell="xbc1", max_diffs=3)[0]  # two substitutions: ratio 0.5


def test_table_fields_must_be_strings():
    with pytest.raises(InputError):
        run(MD_TABLE_PAGE, type="table", cell="67.4", up=5)
    with pytest.raises(InputError):
        run(MD_TABLE_PAGE, type="table", cell=" ")
