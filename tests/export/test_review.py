"""Per-page confidence and flags, and the review list, as a user of the CLI
meets them: real OCR on a document of four kinds of page (born-digital,
scanned, scanned sideways, blank), generated with the docgen generators
and put together with pikepdf.

Each page of the JSON export has ``confidence`` (OCR pages: in (0, 1];
text-layer pages: null) and ``flags``; the document has ``review_pages``,
which ``export.review_below`` moves; a resumed run and a checkpoint written
before these fields existed give them too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pikepdf
import pytest

from longdoc.storage.checkpoint import folder_checkpoint
from tests.docgen import english_report, long_textlayer, rasterize, sideways
from tests.export.test_page_labels import cli

A4 = (595.28, 841.89)


def four_kinds(folder: Path) -> Path:
    """Page 1 born-digital, page 2 a 200-dpi scan, page 3 a scan of a few
    lines fed in sideways (turned 90° clockwise: read three times over),
    page 4 blank."""
    born = english_report(folder, pages=3, seed=11)
    scan = rasterize(born, 200, folder / "scan.pdf")
    turned = sideways(long_textlayer(folder, pages=1, brief=True), 200, folder / "turned.pdf")
    out = folder / "four-kinds.pdf"
    with pikepdf.new() as pdf, pikepdf.open(born.pdf_path) as a, pikepdf.open(scan.pdf_path) as b, \
            pikepdf.open(turned.pdf_path) as c:
        pdf.pages.append(a.pages[0])
        pdf.pages.append(b.pages[1])
        pdf.pages.append(c.pages[0])
        pdf.add_blank_page(page_size=A4)
        pdf.save(out)
    return out


def parse(pdf: Path, out: Path, *config: Path) -> tuple[dict, str]:
    args = ["parse", pdf, "-o", out, "--format", "json", "-q"]
    for path in config:
        args += ["--config", path]
    proc = cli(*args)
    assert proc.returncode == 0, proc.stderr
    return json.loads((out / f"{pdf.stem}.json").read_text(encoding="utf-8")), proc.stderr


@pytest.fixture(scope="module")
def parsed(tmp_path_factory) -> tuple[Path, Path, dict, str]:
    folder = tmp_path_factory.mktemp("review")
    pdf = four_kinds(folder)
    doc, stderr = parse(pdf, folder / "out")
    return pdf, folder / "out", doc, stderr


def test_each_kind_of_page_gets_its_confidence_and_flags(parsed):
    _, _, doc, stderr = parsed
    pages = {p["number"]: p for p in doc["pages"]}
    assert [p["status"] for p in doc["pages"]] == ["ok"] * 4
    born, scan, turned, blank = pages[1], pages[2], pages[3], pages[4]
    assert born["text_source"] == "text_layer" and born["confidence"] is None and born["flags"] == []
    assert scan["text_source"] == "ocr" and 0.85 < scan["confidence"] <= 1.0 and scan["flags"] == []
    assert turned["rotation"] in (90, 270) and 0.85 < turned["confidence"] <= 1.0
    assert turned["flags"] == ["rotated"]
    assert blank["confidence"] is None and blank["flags"] == ["blank"]
    # rotated and blank alone are no reason to check a page by eye
    assert doc["review_pages"] == []
    assert "check by eye" not in stderr


def test_a_higher_review_below_flags_low_confidence_and_lists_the_pages(parsed, tmp_path):
    """The same output folder resumed with ``export.review_below`` just above
    both scans' confidence: nothing is read again, both are flagged."""
    pdf, out, first, _ = parsed
    confidences = {p["number"]: p["confidence"] for p in first["pages"]}
    bar = min(1.0, max(confidences[2], confidences[3]) + 0.0001)
    config = tmp_path / "strict.yaml"
    config.write_text(f"export:\n  review_below: {bar}\n")
    doc, stderr = parse(pdf, out, config)
    assert "resumed 4 of 4 pages" in stderr
    pages = {p["number"]: p for p in doc["pages"]}
    assert pages[2]["flags"] == ["low_confidence"]
    assert pages[3]["flags"] == ["low_confidence", "rotated"]
    assert pages[1]["flags"] == [] and pages[4]["flags"] == ["blank"]     # no confidence: never low
    assert doc["review_pages"] == [2, 3]
    assert "2 page(s) to check by eye (see their flags in the JSON): 2, 3" in stderr

    lenient = tmp_path / "lenient.yaml"
    lenient.write_text("export:\n  review_below: 0.0\n")
    doc, _ = parse(pdf, out, lenient)
    assert doc["review_pages"] == [] and [p["flags"] for p in doc["pages"]] == [[], [], ["rotated"], ["blank"]]


def test_confidence_and_flags_are_checkpointed_and_an_old_checkpoint_gets_them(parsed, tmp_path):
    pdf, out, first, _ = parsed
    checkpoint = folder_checkpoint(out / ".longdoc" / pdf.stem)
    stored = [checkpoint.load_page(n) for n in range(1, 5)]
    assert [p.confidence for p in stored] == [p["confidence"] for p in first["pages"]]
    assert [[f.value for f in p.flags] for p in stored] == [p["flags"] for p in first["pages"]]

    # a checkpoint written before pages had them: no "confidence" or "flags" keys at all
    files = sorted((out / ".longdoc" / pdf.stem / "checkpoint" / "pages").glob("*.json"))
    assert len(files) == 4
    for f in files:
        page = json.loads(f.read_text())
        del page["confidence"], page["flags"]
        f.write_text(json.dumps(page))
    assert all(checkpoint.load_page(n).flags == [] for n in range(1, 5))
    doc, stderr = parse(pdf, out)
    assert "resumed 4 of 4 pages" in stderr
    assert [(p["confidence"], p["flags"]) for p in doc["pages"]] == \
        [(p["confidence"], p["flags"]) for p in first["pages"]]
