"""What the native engine says of SR-SWA: longdoc's own implementation of
a described mechanism (no public paper), with the parts from Unlimited-OCR's
paper (R-SWA) told apart from longdoc's design."""

from __future__ import annotations

import re
from pathlib import Path

import longdoc.engines.native.srswa as srswa

ENGINES_DOC = Path(__file__).resolve().parents[3] / "docs" / "engines.md"


def _native_section() -> str:
    text = ENGINES_DOC.read_text(encoding="utf-8")
    start = text.index("## In process: the `native` engine")
    return text[start:text.index("\n## ", start)]


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_srswa_is_called_longdocs_own_implementation_of_the_described_mechanism():
    for text in (_flat(srswa.__doc__ or ""), _flat(_native_section())):
        assert "no public paper" in text
        assert "own implementation" in text
        assert "32-token key blocks" in text, "the third-party description it is measured against"
        assert "the paper's SR-SWA" not in text


def test_the_parts_from_the_paper_and_longdocs_design_are_told_apart():
    doc = _flat(srswa.__doc__ or "")
    paper, design = doc.split("longdoc's design", 1)
    assert "From the paper (R-SWA)" in paper and "sliding window over generated tokens" in paper
    for choice in ("page gating", "top-k selection", "16 by default"):
        assert choice in design, choice
    section = _flat(_native_section())
    assert "What follows the paper is R-SWA's part" in section and "longdoc's design is the rest" in section
