from __future__ import annotations

from pathlib import Path

import pytest

from longdoc.ingest.pdf import PdfSource
from longdoc.ingest.textlayer import judge_text_layer
from longdoc.model import BBox, Line

A4 = (595.0, 842.0)


def _page(*texts: str, line_height: float = 12.0, width: float = 450.0) -> list[Line]:
    """Lines stacked from the top of an A4 page, each ``width`` points wide."""
    return [
        Line(
            text=text,
            bbox=BBox(x0=70, y0=70 + i * line_height, x1=70 + width, y1=70 + (i + 1) * line_height),
            confidence=1.0,
            page=1,
        )
        for i, text in enumerate(texts)
    ]


PROSE = [
    "It is becoming increasingly recognized that G protein-coupled",
    "receptors physically interact. These interactions may provide a",
    "mechanism for allosteric modulation of receptor function.",
]


@pytest.mark.parametrize(
    ("lines", "reason"),
    [
        (PROSE, "text_layer_ok"),
        (["Grüße aus Köln: Die Straßenbahn fährt über die Brücke.", "Äußerst ökonomisch."] * 2, "text_layer_ok"),
        (["コロナウイルス感染症の国内の確定患者は9,661人、死亡者は158人である。", "世界保健機関は二〇二〇年三月に宣言した。"], "text_layer_ok"),
        (["코로나-19가 전 세계적 유행단계에 돌입한 와중에 국내 보험업계에서는"], "text_layer_ok"),
        (["تعتبر البرمجة بلغة R و Python من الأدوات القوية التي يمكن أن تعزز الإنتاجية"], "text_layer_ok"),
        (["1.1 Topological spaces . . . . . . . . . . . . . . . . . . . . . 2",
          "1.2 Metric spaces . . . . . . . . . . . . . . . . . . . . . . . 6",
          "1.3 Continuity ________________________________________ 9"], "text_layer_ok"),
        (["Total 1,234.56 789.01 2,023.57", "Net 12.5 13.75 26.25"] * 2, "text_layer_ok"),
        ([], "no_text"),
        (["   ", "\t"], "no_text"),
        (["\ufffd\ufffd\ufffd\ufffd\ufffd \ufffd\ufffd\ufffd ab \ufffd\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd"] * 3, "unmapped_glyphs"),
        (["Sid\x03e\x05 t\x01\x02\x04\x06x\x07t \x0e\x0f\x10\x11\x12\x13 more text here"] * 3, "unmapped_glyphs"),
        (PROSE + ["\ufffd" * 40], "unmapped_glyphs"),  # one whole passage in an unmapped font
        (["\ue000\ue001\ue002\ue003 \ue004\ue005\ue006 abc \ue007\ue008\ue009\ue00a\ue00b"] * 3, "private_use_glyphs"),
        (["#$%& *+<> =@^| ~!?; {}[] ()/\\ :§¶ †‡•¤ ab"] * 3, "mostly_non_words"),
        (["Scanned by CamScanner"], "too_little_text"),
        (["12"], "too_little_text"),
    ],
)
def test_judge(lines: list[str], reason: str) -> None:
    use, why = judge_text_layer(_page(*lines), *A4)
    assert why == reason
    assert use == (reason == "text_layer_ok")


def test_a_source_without_text_layer_is_no_text() -> None:
    assert judge_text_layer(None, *A4) == (False, "no_text")


def test_sparse_stamp_versus_short_page_of_real_text() -> None:
    stamp = ["Digitized for the archive by Example Library Services, 2019"]
    small = _page(*stamp, line_height=6, width=200)
    assert judge_text_layer(small, *A4) == (False, "too_little_text")
    # The same number of characters set large across the page is a real page.
    large = _page(*stamp, line_height=40, width=520)
    assert judge_text_layer(large, *A4) == (True, "text_layer_ok")


# -- on real documents nobody here wrote (see shared/eval/dev/MANIFEST.tsv) --


def _reasons(path: Path) -> dict[int, str]:
    with PdfSource(path) as source:
        return {
            page: judge_text_layer(source.text_layer(page), *source.page_size(page))[1]
            for page in range(1, source.page_count + 1)
        }


def test_habibi_broken_text_layer_goes_to_ocr(dev_corpus) -> None:
    # Its text layer mixes mis-mapped glyphs into one Arabic word.
    assert _reasons(dev_corpus / "py-pdf" / "habibi.pdf") == {1: "unmapped_glyphs"}


@pytest.mark.parametrize(
    "name",
    [
        "docling/ocr/ocr_test.pdf",
        "docling/ocr/ocr_test_rotated_90.pdf",
        "docling/ocr/nemotron_multipage.pdf",
        "ocrmypdf/skew.pdf",
        "ocrmypdf/cardinal.pdf",
        "ocrmypdf/c02-22.pdf",
    ],
)
def test_image_only_scans_have_no_text(dev_corpus, name: str) -> None:
    assert set(_reasons(dev_corpus / name).values()) == {"no_text"}


@pytest.mark.parametrize(
    "name",
    [
        "docling/pdf/2305.03393v1-pg9.pdf",
        "docling/pdf/amt_handbook_sample.pdf",
        "docling/pdf/code_and_formula.pdf",
        "docling/pdf/multi_page.pdf",
        "docling/pdf/normal_4pages.pdf",
        "docling/pdf/picture_classification.pdf",
        "docling/pdf/right_to_left_01.pdf",
        "docling/pdf/right_to_left_03.pdf",
        "docling/pdf/table_mislabeled_as_picture.pdf",
        "pymupdf/test_3842.pdf",
        "py-pdf/multicolumn.pdf",
    ],
)
def test_born_digital_pages_keep_their_text_layer(dev_corpus, name: str) -> None:
    assert set(_reasons(dev_corpus / name).values()) == {"text_layer_ok"}


def test_redbook_sample_pages(dev_corpus) -> None:
    reasons = _reasons(dev_corpus / "docling" / "pdf" / "redp5110_sampled.pdf")
    # page 3: a sidebar set in a font without a Unicode map; page 17: a blank page.
    assert reasons.pop(3) == "unmapped_glyphs"
    assert reasons.pop(17) == "no_text"
    assert set(reasons.values()) == {"text_layer_ok"}
