"""The native engine's tests: a tiny random Unlimited-OCR in float64 on CPU."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the native engine needs the torch extra (make test installs it)")
pytest.importorskip("transformers")

from longdoc.engines.native import weights  # noqa: E402


@pytest.fixture(scope="session")
def tiny_model():
    return weights.random_model("tiny", seed=3, dtype=torch.float64, window=6)


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-unlimited-ocr")
    weights.write_checkpoint(weights.random_model("tiny", seed=5), folder)
    return folder
