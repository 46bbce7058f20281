"""Rules of dashes and rows of asterisks come out as long as they are
printed, not as short as a CTC recognizer reads them."""

from __future__ import annotations

import numpy as np
import pytest

from longdoc.engines import rapidocr_worker
from longdoc.engines.rapidocr import RapidOcrEngine
from longdoc.engines.symbol_runs import recount_runs
from tests.engines.pages import render_page

RULE = "1. Definitions " + "-" * 24
STARS = "*" * 40
INSIDE = "Section 2 ---- continues on the next line"
LINES = [RULE, "The licence applies to every covered work.", STARS, INSIDE]


@pytest.fixture(scope="module")
def read():
    sample = render_page(LINES, top_pt=30.0, height_pt=140.0)
    with RapidOcrEngine(workers=1, backend="onnxruntime", int8=False) as engine:
        (rec,) = engine.recognize([sample.image])
    ocr = rapidocr_worker.build_ocr(*engine._setup())
    raw = rapidocr_worker._read(ocr, sample.image.image, 0)  # the recognizer's own reading, not recounted
    return [line.text for line in rec.lines], raw.texts


def _line(texts: list[str], start: str) -> str:
    (line,) = [t for t in texts if t.replace(" ", "").startswith(start.replace(" ", ""))]
    return line


def test_a_rule_of_dashes_is_as_long_as_printed(read):
    texts, raw = read
    assert abs(_line(texts, "1.Def").count("-") - 24) <= 1
    assert _line(raw, "1.Def").count("-") < 23  # what the recognizer alone reads (the reason for this step)


def test_a_row_of_asterisks_is_as_long_as_printed(read):
    texts, _ = read
    (row,) = [t for t in texts if set(t.strip()) == {"*"}]
    assert abs(row.count("*") - 40) <= 1


def test_runs_inside_a_line_and_other_lines_are_left_as_read(read):
    texts, raw = read
    assert _line(texts, "Section") == _line(raw, "Section")
    assert _line(texts, "The licence") == _line(raw, "The licence")


def test_a_run_is_never_shortened_nor_made_where_the_marks_stop():
    image = np.full((60, 400, 3), 255, np.uint8)
    for k in range(3):  # three dashes drawn, 12 px apart
        image[30:33, 20 + 12 * k:28 + 12 * k] = 0
    quad = [[10, 15], [200, 15], [200, 45], [10, 45]]
    assert recount_runs(image, [quad], ["------"]) == ["------"]  # read longer than drawn: kept
    assert recount_runs(image, [quad], ["--"]) == ["--"]  # two are no run
    assert recount_runs(image, [quad], ["---"]) == ["---"]


def test_a_run_cut_by_its_box_is_followed_to_its_end_but_not_into_the_next_line():
    image = np.full((60, 600, 3), 255, np.uint8)
    image[20:40, 12:22] = 0  # a letter-sized mark: "A"
    for k in range(30):  # thirty dashes from x=40, 12 px apart: x 40..396
        image[30:33, 40 + 12 * k:48 + 12 * k] = 0
    box = [[10, 15], [150, 15], [150, 45], [10, 45]]  # the detector stopped at x=150
    assert recount_runs(image, [box], ["A ----------"]) == ["A " + "-" * 30]
    assert recount_runs(image, [box], ["A -"]) == ["A " + "-" * 30]  # the dash read at the edge is the rule's first
    assert recount_runs(image, [box], ["A"]) == ["A " + "-" * 30]  # a rule the recognizer did not read at all
    neighbour = [[300, 15], [590, 15], [590, 45], [300, 45]]  # another line's box from x=300
    (text, _) = recount_runs(image, [box, neighbour], ["A ----------", "-----"])
    assert text == "A " + "-" * 22  # dashes up to x=300 only
