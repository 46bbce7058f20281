"""The default recognizer: PP-OCRv6 tiny reads every line, the small model
reads again the lines tiny is unsure of (real models, real pages)."""

from __future__ import annotations

import logging

import pytest

from longdoc.engines import model_files
from longdoc.engines.rapidocr import RapidOcrEngine
from longdoc.engines.rapidocr.cascade import needs_recheck
from longdoc.engines.rapidocr.ctc import LineReading
from tests.engines.pages import CJK_FONT, cer, english_page, render_page

#: characters the small model knows and tiny's 6,904 do not (tiny can never
#: write them), set in a sentence of common ones
RARE = "仉仫伛佥侔俦偾"
RARE_LINE = f"古籍中常见的姓氏有{RARE}等字"


def _text(rec) -> str:
    return "\n".join(line.text for line in rec.lines)


def _read(sample, **kwargs) -> tuple[str, str]:
    with RapidOcrEngine(workers=1, backend="onnxruntime", int8=False, **kwargs) as engine:
        (rec,) = engine.recognize([sample.image])
        assert rec.error is None
        return _text(rec), engine.version


def test_the_cascade_reads_a_dense_page_as_the_small_model_does_and_says_so():
    sample = english_page(n_lines=12)
    cascade, version = _read(sample)
    small, small_version = _read(sample, recognizer="small")
    assert version.endswith("/PP-OCRv6-tiny+small/onnxruntime") and small_version.endswith("/PP-OCRv6/onnxruntime")
    assert cer(cascade, sample.text) <= 0.01
    assert cer(cascade, small) <= 0.005


def test_a_character_only_the_small_model_knows_is_not_lost():
    sample = render_page([RARE_LINE], font_path=CJK_FONT, size_pt=14.0, top_pt=20.0, height_pt=80.0)
    tiny, _ = _read(sample, recognizer="tiny")
    cascade, _ = _read(sample)
    assert not set(RARE) & set(tiny)  # tiny alone cannot write them ...
    assert sum(ch in cascade for ch in RARE) >= len(RARE) - 1  # ... the cascade reads them again with small
    assert cer(cascade, RARE_LINE) <= 0.15


def test_every_line_is_read_again_below_a_bar_of_one_and_none_above_a_bar_of_zero():
    sample = english_page(n_lines=4)
    small, _ = _read(sample, recognizer="small")
    tiny, _ = _read(sample, recognizer="tiny")
    assert _read(sample, recheck_below=1.0)[0] == small  # every line re-read: small's text exactly
    assert _read(sample, recheck_below=0.0)[0] == tiny  # no line under a bar of 0 (and no long number here)


def _reading(text: str, prob: float = 0.99, margin: float = 0.9, doubt: int | None = None) -> LineReading:
    """A fast recognizer's reading of ``text``: every character at ``prob``
    and ``margin`` over its second choice, except character ``doubt``, whose
    margin is 0.05."""
    margins = tuple(0.05 if i == doubt else margin for i in range(len(text)))
    return LineReading(text, (prob,) * len(text), margins, ("",) * len(text), tuple(range(len(text))), len(text))


def test_sure_lines_are_kept_and_unsure_lines_or_long_numbers_are_read_again():
    assert not needs_recheck(_reading("The harbour master kept a ledger"), 0.96)
    assert needs_recheck(_reading("The harbour master kept a ledger", prob=0.90), 0.96)
    assert needs_recheck(_reading("Population 1220 345"), 0.96)  # digit groups tiny may have glued
    assert needs_recheck(_reading("In 1887 the ledger"), 0.96)  # a year or glued groups: the small model decides
    assert not needs_recheck(_reading("In 188 the ledger"), 0.96)
    assert needs_recheck(_reading(""), 0.96)  # a line tiny could not read at all


def test_codes_and_doubts_are_read_again():
    assert needs_recheck(_reading("The harbour master kept a ledger", doubt=5), rules="doubts")  # tiny hesitated
    assert not needs_recheck(_reading("The harbour master kept a ledger", doubt=3))  # ... not on a space
    assert needs_recheck(_reading("Part number PN-4471-AX3 in stock"))  # letters and digits in one token
    assert needs_recheck(_reading("x0 and y0 are the origin"))
    assert needs_recheck(_reading("Licence key QZX2wQ"))  # a case change inside a word
    assert needs_recheck(_reading("Key TOKxBCD"))
    assert not needs_recheck(_reading("if (n == m) { c = d; }"))  # code punctuation alone: tiny reads it as well
    assert not needs_recheck(_reading("A plain sentence, with (some) punctuation."))
    assert needs_recheck(_reading("where x,y:The origin"), rules="doubts")  # glued punctuation: a dropped space


def test_codes_rules_read_again_what_users_search_for_and_leave_hesitant_prose_to_tiny():
    """``recheck: codes`` (the balanced profile's): codes, long numbers, case
    flips and low confidence still go to the small model; a hesitant
    character or glued punctuation in prose does not (``doubts`` sends them)."""
    for text in ("Part number PN-4471-AX3 in stock", "Population 1220 345", "Licence key QZX2wQ", ""):
        assert needs_recheck(_reading(text), rules="codes")
    assert needs_recheck(_reading("The harbour master kept a ledger", prob=0.80), 0.93, rules="codes")
    for text, doubt in (("The harbour master kept a ledger", 5), ("where x,y:The origin", None)):
        assert needs_recheck(_reading(text, doubt=doubt), rules="doubts")
        assert not needs_recheck(_reading(text, doubt=doubt), rules="codes")


def test_without_the_tiny_model_the_engine_reads_with_small_and_warns(monkeypatch, caplog):
    def missing():
        raise model_files.ModelFileError("PP-OCRv6_rec_tiny.onnx does not exist")

    monkeypatch.setattr(model_files, "tiny_recognizer", missing)
    sample = english_page(n_lines=3)
    with caplog.at_level(logging.WARNING):
        text, version = _read(sample)
    assert version.endswith("/PP-OCRv6/onnxruntime")
    assert cer(text, sample.text) <= 0.01
    assert any("tiny recognizer unavailable" in r.getMessage() for r in caplog.records)


def test_an_unknown_recognizer_or_bar_is_refused():
    with pytest.raises(ValueError):
        RapidOcrEngine(workers=1, recognizer="huge")
    with pytest.raises(ValueError):
        RapidOcrEngine(workers=1, recheck_below=1.5)
    with pytest.raises(ValueError):
        RapidOcrEngine(workers=1, recheck="everything")
