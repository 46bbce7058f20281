"""Spaces an OCR engine dropped between two words."""

from __future__ import annotations

import pytest

from longdoc.layout.spacing import restore_spaces, split_word

ENGLISH = [
    "The committee reviewed the budget for the coming year and approved",
    "most of the projects that the regional offices had proposed, while",
    "theoriginal plan for the northern district was postponed until the",
    "board could compare it with 11projects of a similar size; the other",
    "28 projectswere funded in full before the end of the first quarter.",
]


@pytest.mark.parametrize(("glued", "spaced"), [
    ("theoriginal", "the original"), ("projectswere", "projects were"), ("11projects", "11 projects"),
    ("inthe", "in the"), ("asecurity", "a security"), ("(withthe", "(with the"), ("forthe,", "for the,"),
])
def test_two_glued_words_are_split(glued, spaced):
    assert split_word(glued) == spaced


@pytest.mark.parametrize("word", [
    "keyway", "aground", "fanfiction", "workflow", "thereof", "10mg", "3rd", "25kwh", "Docling", "OpenAI",
    "McDonald", "heteromerization", "allosteric", "selfie", "the", "x2y",
])
def test_words_and_names_stay_whole(word):
    assert split_word(word) == word


def test_only_english_text_is_touched():
    fixed = restore_spaces(ENGLISH)
    assert "the original plan" in fixed[2] and "with 11 projects" in fixed[3] and "projects were" in fixed[4]
    german = ["Die lineare Abbildung ist stetig, und jede lineare Abbildung zwischen endlichdimensionalen",
              "Räumen ist beschränkt; daraus folgt die Behauptung für alle Vektorräume über dem Körper."]
    assert restore_spaces(german) == german
