"""Rules of dashes, rows of asterisks and leader dots come out as long as
they are printed, not as short as a CTC recognizer reads them (or not at
all, when the detector leaves them unboxed)."""

from __future__ import annotations

import re

import numpy as np
import pypdfium2 as pdfium
import pytest

from longdoc.engines import PageImage
from longdoc.engines.rapidocr import RapidOcrEngine, worker as rapidocr_worker
from longdoc.engines.rapidocr.symbol_runs import recount_runs
from tests.docgen.dense import scan, typeset
from tests.docgen.manuals import contents_page
from tests.engines.pages import english_page, render_page

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
    assert recount_runs(image, [quad], ["------"])[0] == ["------"]  # read longer than drawn: kept
    assert recount_runs(image, [quad], ["--"])[0] == ["--"]  # two are no run
    assert recount_runs(image, [quad], ["---"])[0] == ["---"]


def test_a_run_cut_by_its_box_is_followed_to_its_end_but_not_into_the_next_line():
    image = np.full((60, 600, 3), 255, np.uint8)
    image[20:40, 12:22] = 0  # a letter-sized mark: "A"
    for k in range(30):  # thirty dashes from x=40, 12 px apart: x 40..396
        image[30:33, 40 + 12 * k:48 + 12 * k] = 0
    box = [[10, 15], [150, 15], [150, 45], [10, 45]]  # the detector stopped at x=150
    assert recount_runs(image, [box], ["A ----------"])[0] == ["A " + "-" * 30]
    assert recount_runs(image, [box], ["A -"])[0] == ["A " + "-" * 30]  # the dash read at the edge is the rule's first
    assert recount_runs(image, [box], ["A"])[0] == ["A " + "-" * 30]  # a rule the recognizer did not read at all
    neighbour = [[300, 15], [590, 15], [590, 45], [300, 45]]  # another line's box from x=300
    (text, _), _ = recount_runs(image, [box, neighbour], ["A ----------", "-----"])
    assert text == "A " + "-" * 22  # dashes up to x=300 only


# --- leaders -------------------------------------------------------------------------


def _scanned_image(pdf) -> PageImage:
    """Page 1 of ``pdf`` rendered at 200 dpi, as the pipeline renders a scan."""
    doc = pdfium.PdfDocument(str(pdf))
    try:
        page = doc[0]
        width, height = page.get_size()
        pixels = page.render(scale=200 / 72).to_numpy()[..., :3].copy()
        return PageImage(page=1, image=pixels, dpi=200.0, width_pt=width, height_pt=height)
    finally:
        doc.close()


@pytest.fixture(scope="module")
def contents(tmp_path_factory):
    """The generated contents pages (spaced and solid leaders), scanned, read
    by the engine (recounted) and by its recognizer alone."""
    tmp = tmp_path_factory.mktemp("contents")
    out = {}
    with RapidOcrEngine(workers=1, backend="onnxruntime", int8=False) as engine:
        ocr = rapidocr_worker.build_ocr(*engine._setup())
        for kind in ("spaced", "solid"):
            page = contents_page(tmp, leaders=kind).scan(tmp / f"{kind}.pdf")
            image = _scanned_image(page.pdf_path)
            (rec,) = engine.recognize([image])
            raw = rapidocr_worker._read(ocr, image.image, 0)
            out[kind] = (page, [line.text for line in rec.lines], raw.texts)
    return out


def _leaders(text: str) -> str:
    """The leader dots at the end of a line of an entry, as read."""
    match = re.search(r"\s?\.(?:\s?\.)*\s*$", text)
    return match.group().strip() if match else ""


def _printed(page, title: str) -> str:
    (entry,) = [e for e in page.entries if title in e]
    return _leaders(re.sub(r"\s\S+$", "", entry))  # the page number off


@pytest.mark.parametrize("kind", ["spaced", "solid"])
def test_leader_dots_between_an_entry_and_its_page_number_are_counted_as_printed(contents, kind):
    page, texts, raw = contents[kind]
    titles = ["Old versions", "Describing argument types", "Optional arguments", "Testing special values",
              "Body of an environment", "shipped with the distribution"]
    for title in titles:
        (line,) = [t for t in texts if title in t]
        want = _printed(page, title)
        got = _leaders(line)
        assert abs(got.count(".") - want.count(".")) <= 1, (line, want)
        assert (". ." in got) == (kind == "spaced"), line  # spaced as TeX sets them, solid as periods
    read = [t for t in raw if any(title in t for title in titles)]
    assert sum(_leaders(t).count(".") for t in read) < 0.5 * sum(_printed(page, t).count(".") for t in titles)


def test_no_dot_is_made_where_the_image_has_none(contents):
    page, texts, raw = contents["spaced"]
    chapters = [t for t, r in zip(texts, raw) if t.startswith(("1 Introduction", "2 Creating", "4 Case"))]
    assert chapters and all("." not in t for t in chapters)  # chapter entries have no leaders
    image = np.full((60, 600, 3), 255, np.uint8)
    words = [[10, 15], [150, 15], [150, 45], [10, 45]]
    number = [[500, 15], [520, 15], [520, 45], [500, 45]]
    image[20:40, 12:140] = 0  # the words' ink, nothing between them and the number
    image[20:40, 502:518] = 0
    assert recount_runs(image, [words, number], ["Introduction", "1"]) == (["Introduction", "1"], [words, number])
    for k in range(2):  # two dots are no leaders
        image[34:37, 200 + 20 * k:203 + 20 * k] = 0
    assert recount_runs(image, [words, number], ["Introduction", "1"])[0] == ["Introduction", "1"]


def test_prose_lines_keep_their_text_and_sentence_ends(tmp_path):
    sample = english_page()
    with RapidOcrEngine(workers=1, backend="onnxruntime", int8=False) as engine:
        (rec,) = engine.recognize([sample.image])
        ocr = rapidocr_worker.build_ocr(*engine._setup())
    raw = rapidocr_worker._read(ocr, sample.image.image, 0)
    assert sorted(line.text for line in rec.lines) == sorted(raw.texts)


def test_chinese_lines_get_no_leaders(tmp_path):
    # the strokes of Chinese characters hold dot-sized marks: on the speed bench's dense Chinese scans
    # the characters past a line's box were once counted as leader dots ("新产品的销 . . .")
    truths = typeset(tmp_path / "dense.pdf", english=16, chinese=3)  # the bench's set: its scans' skew angles
    scan(tmp_path / "dense.pdf", tmp_path / "scan.pdf")
    doc = pdfium.PdfDocument(str(tmp_path / "scan.pdf"))
    with RapidOcrEngine(workers=1, backend="onnxruntime", int8=False) as engine:
        ocr = rapidocr_worker.build_ocr(*engine._setup())
    found = []
    for index in (i for i, (language, _) in enumerate(truths) if language == "zh"):
        pixels = doc[index].render(scale=200 / 72).to_numpy()[..., :3].copy()
        raw = rapidocr_worker._read(ocr, pixels, 0)
        texts, _ = recount_runs(pixels, raw.quads, raw.texts)
        found += [t for t in texts if ". ." in t or "..." in t]
    doc.close()
    assert not found


def _number_over_the_next_column() -> tuple[np.ndarray, list[list[float]]]:
    """A page number "42" whose box's bottom edge the next line's letters
    poke into: that line (the other column's, set half a line lower) starts
    just right of the number, and the tops of its letters are small, round
    and low in the number's band — the shape of leader dots."""
    image = np.full((90, 400, 3), 255, np.uint8)
    image[20:40, 12:22] = 0  # "4"
    image[20:40, 26:36] = 0  # "2"
    for k in range(5):  # "Issue": letters from y 41 to 61, 7 px apart, their tops inside the number's box
        image[41:61, 60 + 7 * k:64 + 7 * k] = 0
    return image, [[10, 15], [50, 15], [50, 45], [10, 45]]


def test_the_tops_of_the_next_lines_letters_are_no_leader_dots():
    """Failure of the real two-column contents page (ltnews, 'Issue 29,
    December 2018  42' beside 'Issue 34, November 2021'): the tops of the
    next line's letters were counted as leaders, '42' read '42.....' and
    its box stretched across the column gutter, so the page's two columns
    were read row by row."""
    image, box = _number_over_the_next_column()
    texts, quads = recount_runs(image, [box], ["42"])
    assert texts == ["42"]
    assert max(x for x, _ in quads[0]) == 50  # the box is not stretched over the gutter


def test_dots_the_recognizer_read_where_the_image_has_none_are_dropped_and_the_box_cut_back():
    image, box = _number_over_the_next_column()
    wide = [[10, 15], [95, 15], [95, 45], [10, 45]]  # the detector's box ran on over the letter tops
    texts, quads = recount_runs(image, [wide], ["42....."])
    assert texts == ["42"]
    assert max(x for x, _ in quads[0]) <= 40  # back to the number's ink
    spaced = np.full((60, 400, 3), 255, np.uint8)  # "(a" and nothing after it in the box: " . . ." invented
    spaced[20:40, 12:22] = 0
    spaced[25:40, 26:36] = 0
    assert recount_runs(spaced, [[[10, 15], [200, 15], [200, 45], [10, 45]]], ["(a . . ."])[0] == ["(a"]
    printed = spaced.copy()  # an ellipsis printed: kept
    for k in range(3):
        printed[35:38, 45 + 8 * k:48 + 8 * k] = 0
    assert recount_runs(printed, [[[10, 15], [200, 15], [200, 45], [10, 45]]], ["(a..."])[0] == ["(a..."]


@pytest.mark.parametrize("seed", [4, 2], ids=["turned -0.32", "turned 0.55"])
def test_a_chinese_contents_pages_leaders_are_read_as_printed(seed, tmp_path):
    """A Chinese manual's contents page (real OCR of a generated scan): the
    recognizer reads a CJK entry's leaders short or drops them, often with
    the page number in the entry's own box ('12 哪里可以下载…软件？7');
    they are counted where they stand, as for Latin entries. Before, CJK
    lines were never recounted: of each entry's 20-40 dots a few or none
    came out. Turned 0.55°, a chain of leaders climbs ~8 px over its length:
    only its dots next to the words are held to the baseline."""
    from tests.docgen.manuals import CONTENTS_ZH, contents_page_zh

    page = contents_page_zh(tmp_path).scan(tmp_path / "scan.pdf", seed=seed)
    doc = pdfium.PdfDocument(str(page.pdf_path))
    pixels = doc[0].render(scale=200 / 72).to_numpy()[..., :3].copy()
    doc.close()
    with RapidOcrEngine(workers=1, backend="onnxruntime", int8=False) as engine:
        ocr = rapidocr_worker.build_ocr(*engine._setup())
    raw = rapidocr_worker._read(ocr, pixels, 0)
    texts, _ = recount_runs(pixels, raw.quads, raw.texts)
    text = "\n".join(texts)
    for _, title, _ in CONTENTS_ZH:
        (entry,) = [e for e in page.entries if title in e]
        lines = [t for t in texts if title.replace(" ", "")[-5:-1] in t.replace(" ", "")]
        assert len(lines) == 1, (title, lines, texts)
        assert abs(lines[0].count(".") - entry.count(".")) <= 2, (lines[0], entry)
    assert sum(t.count(".") for t in raw.texts) < 0.5 * sum(e.count(".") for e in page.entries)  # why this step
    assert "……" not in text
