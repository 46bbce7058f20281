"""Cell accuracy of predicted tables (tests.docgen.table_score)."""

from __future__ import annotations

from tests.docgen.table_score import cell_accuracy, cell_text_matches

TRUTH = [
    (0, 0, 1, 1, "Segment"),
    (0, 1, 1, 1, "Revenue"),
    (0, 2, 1, 1, "Units"),
    (0, 3, 1, 1, "Change"),
    (1, 0, 1, 1, "Spare parts"),
    (1, 1, 1, 1, "12.5"),
    (1, 2, 1, 1, "1,204"),
    (1, 3, 1, 1, "-3.1%"),
    (2, 0, 1, 1, "Service contracts"),
    (2, 1, 1, 1, "48.0"),
    (2, 2, 1, 1, "312"),
    (2, 3, 1, 1, "7.4%"),
]


def test_identical_table_scores_every_cell():
    assert cell_accuracy(TRUTH, TRUTH) == (12, 12)


def test_whitespace_and_case_do_not_matter():
    pred = [(r, c, rs, cs, f"  {t.upper()} ".replace(" ", "\n ")) for r, c, rs, cs, t in TRUTH]
    assert cell_accuracy(pred, TRUTH) == (12, 12)


def test_an_extra_empty_header_row_and_column_still_score():
    pred = [(r + 1, c + 1, rs, cs, t) for r, c, rs, cs, t in TRUTH]
    pred += [(0, c, 1, 1, "") for c in range(5)] + [(r, 0, 1, 1, "") for r in range(1, 4)]
    assert cell_accuracy(pred, TRUTH) == (12, 12)


def test_swapped_columns_score_low():
    swap = {1: 2, 2: 1}
    pred = [(r, swap.get(c, c), rs, cs, t) for r, c, rs, cs, t in TRUTH]
    correct, total = cell_accuracy(pred, TRUTH)
    assert total == 12 and correct <= 6


def test_small_typo_in_a_long_cell_passes_but_a_wrong_number_does_not():
    assert cell_text_matches("Service contracts", "Service contract")
    assert cell_text_matches("Servlce contracts", "Service contracts")
    assert not cell_text_matches("12.6", "12.5")
    assert not cell_text_matches("1204", "1,204")
    pred = [(r, c, rs, cs, "12.6" if t == "12.5" else t) for r, c, rs, cs, t in TRUTH]
    assert cell_accuracy(pred, TRUTH) == (11, 12)


def test_empty_truth_cells_are_not_counted_and_missing_cells_are_wrong():
    truth = TRUTH + [(3, 0, 1, 1, ""), (3, 1, 1, 3, "  ")]
    assert cell_accuracy(TRUTH[:6], truth) == (6, 12)
    assert cell_accuracy([], truth) == (0, 12)
    assert cell_accuracy(TRUTH, []) == (0, 0)


def test_spans_are_matched_by_top_left_position():
    truth = [(0, 0, 2, 1, "Method"), (0, 1, 1, 2, "Score"), (1, 1, 1, 1, "simple"), (1, 2, 1, 1, "complex")]
    # Spans flattened, the spanning text repeated in the covered positions: still correct.
    pred = [(0, 0, 1, 1, "Method"), (0, 1, 1, 1, "Score"), (0, 2, 1, 1, "Score"), (1, 0, 1, 1, "Method"),
            (1, 1, 1, 1, "simple"), (1, 2, 1, 1, "complex")]  # fmt: skip
    assert cell_accuracy(pred, truth) == (4, 4)
    # "Score" moved over "complex" only: that cell is wrong.
    pred = [(0, 0, 2, 1, "Method"), (0, 2, 1, 1, "Score"), (1, 1, 1, 1, "simple"), (1, 2, 1, 1, "complex")]
    assert cell_accuracy(pred, truth) == (3, 4)
