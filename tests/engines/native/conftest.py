"""The native engine's tests: a tiny random Unlimited-OCR in float64 on CPU."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the native engine needs the torch extra (make test installs it)")
pytest.importorskip("transformers")

from longdoc.engines.native import weights  # noqa: E402
from longdoc.engines.native.rope import cos_sin  # noqa: E402


@pytest.fixture(scope="session")
def tiny_model():
    from longdoc.engines.native.decoder import inverse_frequencies

    model = weights.random_model("tiny", seed=3, dtype=torch.float64, window=6)
    text = model.model.language_model
    float64_angles(text, inverse_frequencies(text.config))
    return model


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-unlimited-ocr")
    weights.write_checkpoint(weights.random_model("tiny", seed=5), folder)
    return folder


def float64_angles(text_model, inv_freq):
    """transformers computes rotary angles in float32; the reference runs
    here use the same float64 angles as longdoc's decoder (only the angle
    precision changes, not the model)."""
    def forward(x, position_ids):
        c, s = cos_sin(position_ids[0], inv_freq, x.dtype)
        return c[None], s[None]
    text_model.rotary_emb.forward = forward
