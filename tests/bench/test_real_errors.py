"""bench/real_errors.py on hand-made pages: each class of error is told
apart, and what is not an error (a paragraph joined over a page break) is
not counted."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import real_errors  # noqa: E402

LINES = [
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "Pack my box with five dozen liquor jugs before the evening train.",
    "How vexingly quick daft zebras jump when the music starts again.",
    "Sphinx of black quartz, judge my vow and weigh every single word.",
    "Bright vixens jump; dozy fowl quack while the farmer counts sheep.",
    "Jackdaws love my big sphinx of quartz, said the old gardener once.",
]


def one_page(truth: str, reading: str, chinese: bool = False) -> real_errors.Tally:
    (page,) = real_errors.analyse_doc([truth], [reading], chinese)
    return page.tally


def nonzero(tally: real_errors.Tally) -> dict[str, int]:
    return {c: n for c, n in tally.edits.items() if n}


def test_a_perfect_reading_has_no_errors():
    tally = one_page("\n".join(LINES), " ".join(LINES))
    assert tally.total == 0 and tally.raw == 0


def test_a_moved_line_is_order_not_lost_and_added():
    reading = LINES[:2] + LINES[3:] + [LINES[2]]
    tally = one_page("\n".join(LINES), "\n".join(reading))
    assert set(nonzero(tally)) == {"order"}
    # what the CER pays for the move, about
    assert abs(tally.total - tally.raw) <= 0.1 * tally.raw


def test_a_dropped_line_is_lost():
    tally = one_page("\n".join(LINES), "\n".join(LINES[:2] + LINES[3:]))
    assert set(nonzero(tally)) == {"lost"}
    assert len(LINES[2]) <= tally.edits["lost"] <= len(LINES[2]) + 1


def test_a_line_that_is_not_in_the_truth_is_added():
    extra = "Completely unrelated words appear here: 12345 invoices xyz."
    tally = one_page("\n".join(LINES), "\n".join(LINES[:3] + [extra] + LINES[3:]))
    assert set(nonzero(tally)) == {"added"}
    assert len(extra) <= tally.edits["added"] <= len(extra) + 1


def test_typographic_quotes_read_plain_are_quotes_and_forgiven_by_the_cer():
    truth = LINES[0] + "\nHe said “hello” to me and left.\n" + LINES[1]
    tally = one_page(truth, truth.replace("“", '"').replace("”", '"'))
    assert nonzero(tally) == {"quotes": 2}
    assert tally.folded["quotes"] == 2
    assert tally.confusions[("“→\"", "quotes")] == 1


def test_a_letter_read_as_a_digit_is_a_substitution_with_its_confusion():
    truth = "\n".join(LINES[:2] + ["the value is small enough to fit"])
    tally = one_page(truth, truth.replace("value", "va1ue"))
    assert nonzero(tally) == {"substitution": 1}
    assert tally.confusions[("l→1", "substitution")] == 1
    assert tally.folded["substitution"] == 0


def test_dashes_ligatures_spaces_hyphenation_and_leaders():
    truth = "\n".join([
        "pages 10–20 of the first chapter",  # en dash read as a hyphen
        "a ﬁne ﬂower in the garden",  # ligatures read as letters
        "words with one space between them",
        "the docu-\nment is long and the text goes on",  # a word broken at a line end
        "Introduction . . . . . . . . . . 3",  # a dot leader
    ])
    reading = "\n".join([
        "pages 10-20 of the first chapter",
        "a fine flower in the garden",
        "words with onespace between them",
        "the docu- ment is long and the text goes on",
        "Introduction ........ 3",
    ])
    tally = one_page(truth, reading)
    edits = nonzero(tally)
    assert edits.pop("dashes") == 1 and tally.folded["dashes"] == 1
    assert edits.pop("ligatures") == 4 and tally.folded["ligatures"] == 4  # ﬁ -> fi: two edits
    assert edits.pop("spaces") == 1
    assert edits.pop("hyphenation") == 2
    assert edits.pop("leaders") > 0
    assert edits == {}


def test_a_paragraph_continued_on_the_next_page_is_read_on_the_first():
    truth = ["\n".join(LINES[:3]) + "\nThis paragraph starts at the foot of one page and it",
             "goes on at the top of the next one, where it ends.\n" + "\n".join(LINES[3:])]
    # longdoc joins the paragraph on its first page
    reading = [" ".join(LINES[:3]) + "\nThis paragraph starts at the foot of one page and it goes on at the top of "
               "the next one, where it ends.", "\n".join(LINES[3:])]
    first, second = real_errors.analyse_doc(truth, reading)
    assert first.tally.total == 0 and second.tally.total == 0
    # the page-by-page edit distance would charge it twice
    assert first.tally.raw > 40 and second.tally.raw > 40


def test_chinese_whitespace_is_ignored_and_full_width_punctuation_is_width():
    truth = "这是一个中文句子，用来测试。\n第二行的文字在这里结束。"
    reading = "这是 一个中文句子,用来测试。\n第二行的 文字在这里结束。"
    tally = one_page(truth, reading, chinese=True)
    assert nonzero(tally) == {"width": 1}
    assert tally.folded["width"] == 1


@pytest.mark.parametrize("a, b, cls", [
    ("l", "1", "substitution"), ("’", "'", "quotes"), ("—", "-", "dashes"), ("ﬁ", "f", "ligatures"),
    ("，", ",", "width"), (";", ":", "punctuation"), (" ", "", "spaces"),
])
def test_char_class(a, b, cls):
    assert real_errors.char_class(a, b) == cls


def test_the_classes_add_up_to_the_edit_distance_on_a_noisy_page():
    reading = [LINES[0].replace("o", "0"), LINES[1].replace("e", "c"), LINES[3], LINES[2][:30], LINES[4], LINES[5]]
    tally = one_page("\n".join(LINES), "\n".join(reading))
    assert {"substitution", "order"} <= set(nonzero(tally))
    assert abs(tally.total - tally.raw) <= 0.15 * tally.raw
