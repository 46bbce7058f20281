"""Fixtures shared by the pipeline, CLI and evaluation tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from longdoc.config import Settings, load_settings
from longdoc.pipeline import Pipeline

DEV_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "eval" / "dev"


def make_settings(**inference) -> Settings:
    base = {"workers": 2, "page_chunk_size": 2, "chunk_overlap": 1}
    base.update(inference)
    return load_settings(overrides={"inference": base})


@pytest.fixture(scope="session")
def ocr_pipeline():
    """One pipeline (and one RapidOCR worker pool) for the whole session;
    tests pass their own ParseOptions."""
    with Pipeline(make_settings()) as pipeline:
        yield pipeline


@pytest.fixture(scope="session")
def dev_corpus() -> Path:
    if not (DEV_CORPUS / "MANIFEST.tsv").is_file():
        pytest.skip(f"evaluation corpus not found at {DEV_CORPUS}")
    return DEV_CORPUS
