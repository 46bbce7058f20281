"""Model answers → blocks, and the checks that refuse a partial answer."""

from __future__ import annotations

import pytest

from longdoc.engines.openai.checks import Incomplete, check_answer, check_pages, repetition_loop
from longdoc.engines.openai.profiles import PROFILES
from longdoc.engines.parsers import (
    END_OF_ANSWER,
    grounded_blocks,
    markdown_blocks,
    otsl_to_html,
    paddle_blocks,
    split_pages,
)
from longdoc.model import BlockKind

W, H = 612.0, 792.0


def test_unlimited_ocr_det_tags_become_blocks_with_kinds_and_boxes():
    # the format transformers' UnlimitedOcrProcessor parses (label inside <|det|>, no newline)
    text = ("<|det|>image [383, 87, 497, 171]<|/det|>\n"
            "<|det|>title [333, 201, 558, 230]<|/det|># R&D QUALITY IMPROVEMENT\n"
            "<|det|>text [100, 300, 900, 400]<|/det|>The committee met on Tuesday.\n"
            "<|det|>table [40, 500, 960, 700]<|/det|><table><tr><td>A</td><td>1</td></tr></table>\n"
            "<|det|>footer [10, 950, 990, 990]<|/det|>Company confidential")
    blocks = grounded_blocks(text, 3, W, H)
    assert [(b.kind, b.text) for b in blocks] == [
        (BlockKind.FIGURE, ""), (BlockKind.TITLE, "R&D QUALITY IMPROVEMENT"),
        (BlockKind.PARAGRAPH, "The committee met on Tuesday."),
        (BlockKind.TABLE, "<table><tr><td>A</td><td>1</td></tr></table>"), (BlockKind.FOOTER, "Company confidential"),
    ]
    title = blocks[1].bbox
    assert title.x0 == pytest.approx(333 / 999 * W) and title.y1 == pytest.approx(230 / 999 * H)
    assert [b.order for b in blocks] == [0, 1, 2, 3, 4] and blocks[2].id == "p3-b2"
    assert all(b.source_pages == [3] for b in blocks)


def test_deepseek_ref_det_tags_with_several_boxes_and_the_end_token():
    text = ("<|ref|>sub_title<|/ref|><|det|>[[100, 100, 500, 130]]<|/det|>\n## 2. Methods\n\n"
            "<|ref|>text<|/ref|><|det|>[[100, 150, 500, 300], [520, 150, 900, 300]]<|/det|>\nTwo columns of text.\n\n"
            "<|ref|>image_caption<|/ref|><|det|>[[100, 800, 900, 830]]<|/det|>\n<center>Figure 1: A plot.</center>"
            + END_OF_ANSWER)
    heading, body, caption = grounded_blocks(text, 1, W, H)
    assert (heading.kind, heading.text, heading.level) == (BlockKind.HEADING, "2. Methods", 1)
    assert body.bbox.x0 == pytest.approx(100 / 999 * W) and body.bbox.x1 == pytest.approx(900 / 999 * W)
    assert (caption.kind, caption.text) == (BlockKind.CAPTION, "Figure 1: A plot.")


def test_an_answer_without_tags_is_read_as_markdown():
    blocks = grounded_blocks("# Title\n\nA paragraph.\n\n- one\n- two\n\n\\[ x^2 \\]", 1, W, H)
    assert [b.kind for b in blocks] == [BlockKind.TITLE, BlockKind.PARAGRAPH, BlockKind.LIST, BlockKind.FORMULA]
    assert all(b.bbox.x1 == W and b.bbox.y1 == H for b in blocks)  # no box known: the page's


def test_pages_split_on_the_page_separator():
    assert split_pages("<PAGE>one<PAGE>two<page>three" + END_OF_ANSWER) == ["one", "two", "three"]
    assert split_pages("only") == ["only"]


def test_otsl_tables_become_html_with_spans():
    otsl = "<fcel>Name<fcel>Q1<lcel><nl><ucel><fcel>Jan<fcel>Feb<nl><fcel>A<fcel>1<fcel>2<nl>"
    assert otsl_to_html(otsl) == (
        '<table><tr><td rowspan="2">Name</td><td colspan="2">Q1</td></tr>'
        "<tr><td>Jan</td><td>Feb</td></tr><tr><td>A</td><td>1</td><td>2</td></tr></table>"
    )
    blocks = paddle_blocks("Sales by quarter\n\n" + otsl + "\n\nTotals are audited.</s>", 2, W, H)
    assert [b.kind for b in blocks] == [BlockKind.PARAGRAPH, BlockKind.TABLE, BlockKind.PARAGRAPH]
    assert blocks[1].text.startswith("<table>") and [b.order for b in blocks] == [0, 1, 2]


def test_markdown_keeps_html_tables_whole():
    blocks = markdown_blocks("Intro.\n\n<table>\n<tr><td>a</td></tr>\n\n<tr><td>b</td></tr>\n</table>\n\nEnd.", 1, W, H)
    assert [b.kind for b in blocks] == [BlockKind.PARAGRAPH, BlockKind.TABLE, BlockKind.PARAGRAPH]
    assert "<td>b</td>" in blocks[1].text


def test_markdown_fenced_code_is_one_code_block_with_its_lines():
    code = "# not a heading\ndef f(x):\n\n    return x  # kept"
    blocks = markdown_blocks(f"Intro.\n\n```python\n{code}\n```\n\n~~~\nopen fence\n\n  runs to the end", 1, W, H)
    assert [(b.kind, b.text) for b in blocks] == [
        (BlockKind.PARAGRAPH, "Intro."), (BlockKind.CODE, code), (BlockKind.CODE, "open fence\n\n  runs to the end")]


def test_a_code_label_is_a_code_block():
    text = "<|det|>text [100, 100, 900, 150]<|/det|>Run it:\n<|det|>code [100, 160, 900, 300]<|/det|>## setup\n  make all\n"
    blocks = grounded_blocks(text, 1, W, H)
    assert [(b.kind, b.text, b.level) for b in blocks] == [
        (BlockKind.PARAGRAPH, "Run it:", None), (BlockKind.CODE, "## setup\n  make all", None)]


def test_repetition_loops_are_caught_and_real_text_is_not():
    assert repetition_loop("Some real text. " + "ha " * 100).strip() == "ha"
    assert repetition_loop("<td></td>" * 60) is not None
    honest = " ".join(f"Record {n} is on row {n}." for n in range(200))
    assert repetition_loop(honest) is None
    assert repetition_loop("---" * 20) is None  # a short rule line is not a loop (under 160 chars)


def test_checks_refuse_truncated_looping_and_miscounted_answers():
    with pytest.raises(Incomplete) as caught:
        check_answer("half a page", "length")
    assert caught.value.reason == "truncated"
    with pytest.raises(Incomplete) as caught:
        check_answer("text " + "loop " * 100, "stop")
    assert caught.value.reason == "repetition"
    check_answer("a whole answer", "stop")
    with pytest.raises(Incomplete) as caught:
        check_pages(["a", "b"], 3)
    assert caught.value.reason == "page_count"


def test_profiles_shape_prompts_for_each_server():
    unlimited = PROFILES["unlimited-ocr"]
    # vllm-project/recipes @ 8959cf64189c71d36e11c6a30335f923f261b1f7 : models/baidu/Unlimited-OCR.yaml:
    # "prompt text must begin with a literal `<image>` (e.g. `<image>document parsing.`)"; several pages:
    # huggingface/transformers @ 0acc0cee3ca5434557e0886b6afadeda59ddccd4 :
    # docs/source/en/model_doc/unlimited_ocr.md, "<image>" * num_pages + "Multi page parsing."
    assert unlimited.prompt(1, "vllm") == "<image>document parsing."
    assert unlimited.prompt(3, "vllm") == "<image><image><image>Multi page parsing."
    assert unlimited.prompt(3, "sglang") == "Multi page parsing."
    assert unlimited.ngram.args(1) == {"ngram_size": 35, "window_size": 128}
    assert unlimited.ngram.args(4) == {"ngram_size": 35, "window_size": 1024}
    deepseek = PROFILES["deepseek-ocr-2"]
    # vllm-project/recipes @ 8959cf64… : models/deepseek-ai/DeepSeek-OCR-2.yaml: the offline prompt less the
    # "<image>\n" vLLM adds (the image part goes first); sgl-project/sglang @ c2fc3fce… :
    # docs/basic_usage/deepseek_ocr.md: the placeholder in the text
    assert deepseek.prompt(1, "vllm") == "<|grounding|>Convert the document to markdown. "
    assert deepseek.prompt(1, "sglang") == "<image>\n<|grounding|>Convert the document to markdown."
    assert deepseek.ngram.args(1)["whitelist_token_ids"] == [128821, 128822]
    assert PROFILES["paddleocr-vl"].prompt(1, "vllm") == "OCR:"
    assert PROFILES["generic"].prompt(1, "vllm", "Read this.") == "Read this."
    assert [p.multi_page for p in PROFILES.values()] == [True, False, False, False]
