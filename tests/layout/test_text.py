"""Joining text across line breaks: de-hyphenation, CJK, dashes."""

import pytest

from longdoc.layout.text import (
    cells,
    ends_sentence,
    has_list_marker,
    is_label,
    join_lines,
    join_pair,
    runs_on,
    split_list_marker,
)


@pytest.mark.parametrize(
    ("a", "b", "joined"),
    [
        ("exam-", "ple", "example"),  # line-end hyphenation removed
        ("Lorem ipsum dolor sit amet, consectetuer adip-", "iscing elit.", "Lorem ipsum dolor sit amet, consectetuer adipiscing elit."),
        ("exam\u00ad", "ple", "example"),  # soft hyphen
        ("exam\u2010", "ple", "example"),  # U+2010 hyphen
        ("well-", "Known", "well-Known"),  # hyphen before a capital is a real compound
        ("COVID-", "19 cases", "COVID-19 cases"),
        ("1990-", "2000", "1990-2000"),  # digit + hyphen: kept, no space
        ("3-", "fold", "3-fold"),  # never de-hyphenated after a digit
        ("yes -", "no", "yes - no"),  # spaced dash stays spaced
        ("word—", "next", "word—next"),  # closed em dash
        ("pages 10–", "20", "pages 10–20"),
        ("the quick", "brown fox", "the quick brown fox"),
        ("ends.  ", "  Next", "ends. Next"),  # whitespace at the seam collapses to one space
        ("长文档识别需要", "稳定的内存", "长文档识别需要稳定的内存"),  # Chinese: no space
        ("日本語の", "テキストです", "日本語のテキストです"),  # Japanese kana/kanji
        ("使用，", "Python", "使用，Python"),  # full-width punctuation: no space
        ("한국어", "문장", "한국어 문장"),  # Hangul uses spaces
        ("", "alone", "alone"),
        ("alone", "", "alone"),
    ],
)
def test_join_pair(a, b, joined):
    assert join_pair(a, b) == joined


def test_join_lines_dehyphenates_and_skips_blank_lines():
    assert join_lines(["A long exam-", "ple of text", "  ", "across lines."]) == "A long example of text across lines."
    assert join_lines([]) == ""


@pytest.mark.parametrize(
    ("text", "marker", "rest"),
    [
        ("• Milk", "•", "Milk"),
        ("- Eggs and ham", "-", "Eggs and ham"),
        ("* Bread", "*", "Bread"),
        ("· Salt", "·", "Salt"),
        ("1. First", "1.", "First"),
        ("12) Twelfth", "12)", "Twelfth"),
        ("a) option", "a)", "option"),
        ("(iv) fourth", "(iv)", "fourth"),
        ("(b) second", "(b)", "second"),
        ("Plain sentence here.", "", "Plain sentence here."),
        ("1.5 kg of flour", "", "1.5 kg of flour"),
        ("e.g. this is not a list", "", "e.g. this is not a list"),
        ("2026. A year", "", "2026. A year"),
        ("-3 degrees", "", "-3 degrees"),
    ],
)
def test_split_list_marker(text, marker, rest):
    assert split_list_marker(text) == (marker, rest)
    assert has_list_marker(text) == bool(marker)


@pytest.mark.parametrize(
    ("text", "ends"),
    [("A sentence.", True), ("A question?", True), ('He said "stop."', True), ("中文句子。", True),
     ("no end", False), ("a comma,", False), ("中文没有结束", False)],
)
def test_ends_sentence(text, ends):
    assert ends_sentence(text) is ends


@pytest.mark.parametrize(
    ("a", "b", "on"),
    [
        ("the study of", "cells in the body", True),
        ("the study of", "Cells in the body", False),  # capital: a new start
        ("It ended.", "then more", False),
        ("a hyphen-", "ated word", True),
        ("a list", "• item", False),
        ("长文档识别需要", "稳定的内存", True),
        ("长文档识别。", "稳定的内存", False),
        ("the text (see", "(below) goes on", True),
    ],
)
def test_runs_on(a, b, on):
    assert runs_on(a, b) is on


@pytest.mark.parametrize(
    ("text", "label"),
    [("[18]", True), ("3.", True), ("(a)", True), ("§ 2", True), ("•", True), ("12", True), ("2.1", True),
     ("See also", False), ("Lee 2024.", False), ("Note", False), ("one.", False)],
)
def test_is_label(text, label):
    assert is_label(text) is label


@pytest.mark.parametrize(
    ("text", "n"),
    [
        ("  Drawing paths ", 13),  # stripped; a space is a cell
        ("年度经营情况概述", 16),  # a wide character is two cells: about an em, a Latin letter about half
        ("第 2 页", 7),
        ("e\u0301te\u0301", 3),  # a combining accent takes no cell
        ("", 0),
    ],
)
def test_cells(text, n):
    assert cells(text) == n
