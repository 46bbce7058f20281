"""Legitimate repetition in a model's answer is not a decoding loop (issue 22, point 6)."""

import pytest

from longdoc.engines.openai.checks import Incomplete, check_answer, repetition_loop

BLANK_FORM = "<table>" + "<tr>" + "<td></td>" * 20 + "</tr>" + ("<tr>" + "<td></td>" * 20 + "</tr>") * 9 + "</table>"
MARKDOWN = "| " + " | ".join(f"c{i}" for i in range(30)) + " |\n|" + "---|" * 30 + "\n" + ("|" + "   |" * 30 + "\n") * 10


@pytest.mark.parametrize("text", [
    BLANK_FORM,
    BLANK_FORM[: len(BLANK_FORM) // 2],  # mid-stream, a row open
    MARKDOWN,
    "Signature: " + "_" * 60 + "\nDate: " + "_" * 30,
    "1.2 Scope " + ". " * 60 + "17",
])
def test_structured_repetition_is_not_a_loop(text):
    assert repetition_loop(text) is None
    check_answer(text, "stop")


def test_a_sentence_repeated_to_the_end_is_a_loop():
    text = "Intro. " + "The cat sat on the mat again. " * 50
    assert repetition_loop(text)
    with pytest.raises(Incomplete) as err:
        check_answer(text, "stop")
    assert err.value.reason == "repetition"


def test_cells_repeated_past_any_row_are_a_loop():
    assert repetition_loop("<table><tr>" + "<td>x</td>" * 200)


def test_an_answer_of_only_end_tokens_and_separators_is_empty():
    with pytest.raises(Incomplete) as err:
        check_answer("<PAGE><PAGE>\n", "stop")
    assert err.value.reason == "empty"
