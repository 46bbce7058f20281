from __future__ import annotations

from pathlib import Path

import pytest

from longdoc.config import LimitSettings

DEV_CORPUS = Path(__file__).resolve().parents[3] / "shared" / "eval" / "dev"


@pytest.fixture
def limits() -> LimitSettings:
    return LimitSettings()


@pytest.fixture
def dev_corpus() -> Path:
    if not (DEV_CORPUS / "MANIFEST.tsv").is_file():
        pytest.skip(f"evaluation corpus not found at {DEV_CORPUS}")
    return DEV_CORPUS
