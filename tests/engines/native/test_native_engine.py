"""The native engine end to end: checkpoint checks, and a PDF through the CLI
and the pipeline on a tiny random model (its text is noise; the mechanics
— groups, carried pages, fallback, freeing — are what is checked)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from longdoc.engines.native import weights
from longdoc.errors import ModelFilesInvalid

SAMPLE = Path(__file__).resolve().parents[3] / "longdoc" / "samples" / "sample.pdf"


def test_a_checkpoint_is_loaded_only_when_every_weight_file_matches_its_manifest(tiny_checkpoint, tmp_path):
    good = weights.verify(tiny_checkpoint)
    assert good.version.startswith(tiny_checkpoint.name + "@")
    broken = tmp_path / "broken"
    shutil.copytree(tiny_checkpoint, broken)
    data = bytearray((broken / "model.safetensors").read_bytes())
    data[-1] ^= 0xFF
    (broken / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(ModelFilesInvalid, match="does not match SHA256SUMS"):
        weights.verify(broken)
    (broken / "model.safetensors").write_bytes((tiny_checkpoint / "model.safetensors").read_bytes())
    (broken / "extra.safetensors").write_bytes(b"x")
    with pytest.raises(ModelFilesInvalid, match="not listed"):
        weights.verify(broken)
    (broken / "extra.safetensors").unlink()
    (broken / "SHA256SUMS").unlink()
    with pytest.raises(ModelFilesInvalid, match="no SHA256SUMS") as err:
        weights.verify(broken)
    assert err.value.code == "model_files_invalid"


def _parse(tmp_path, checkpoint, fallback, *args):
    config = tmp_path / "native.yaml"
    config.write_text(
        "inference:\n  engine: native\n  page_chunk_size: 3\n  chunk_overlap: 1\n  regions: false\n"
        f"  native:\n    model_path: {checkpoint}\n    max_tokens_per_page: 12\n    window: 8\n"
        f"    top_pages: 2\n    top_blocks: 4\n    fallback_engine: {fallback}\n")
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "longdoc.cli", "parse", str(SAMPLE), "--ocr", "force",
                          "--config", str(config), "-o", str(out), "-q", *args],
                         capture_output=True, text=True, timeout=600)
    return run, json.loads((out / "sample.json").read_text())


def test_cli_parses_a_pdf_with_the_native_engine_and_says_which_pages_the_model_left_unfinished(tmp_path,
                                                                                               tiny_checkpoint):
    run, doc = _parse(tmp_path, tiny_checkpoint, "null")
    numbers = [p["number"] for p in doc["pages"]]
    assert numbers == [1, 2, 3, 4, 5], "every page once, in order"
    for page in doc["pages"]:
        assert page["engine"] == "native" and page["engine_version"].startswith(tiny_checkpoint.name + "@")
        # a random model never closes a page: each is cut, and says so
        assert page["status"] == "failed" and page["error"]["code"] == "engine_failed"
        assert "cut at 12 tokens" in page["error"]["message"]
    assert run.returncode != 0 and "engine_failed" in run.stdout + run.stderr


@pytest.mark.slow
def test_pages_the_model_did_not_finish_are_read_by_the_fallback_engine(tmp_path, tiny_checkpoint):
    # two pages: RapidOCR reading the sample's five at 200 dpi was most of this test's time
    run, doc = _parse(tmp_path, tiny_checkpoint, "rapidocr", "--pages", "1-2")
    assert run.returncode == 0, run.stderr
    assert [p["number"] for p in doc["pages"]] == [1, 2]
    for page in doc["pages"]:
        assert page["status"] == "ok" and page["produced_by"] == "fallback:rapidocr"
        assert page["recovery"][0] == "cut at 12 tokens"
        assert page["flags"][:2] == ["fallback", "truncated"]   # then what the fallback's reading shows, if anything
    assert doc["review_pages"] == [1, 2]
    assert "Review of Operations" in (tmp_path / "out" / "sample.txt").read_text()


def _without_the_architecture(checkpoint, folder, change):
    """A copy of ``checkpoint`` whose safetensors lost one decoder tensor, or
    has it under another name, its manifest rewritten (so only the names
    are wrong, not the hashes); returns (old name, new name or None)."""
    from safetensors.torch import load_file, save_file

    shutil.copytree(checkpoint, folder)
    tensors = load_file(folder / "model.safetensors")
    name = sorted(k for k in tensors if "layers.1.self_attn.q_proj.weight" in k)[0]
    tensor = tensors.pop(name)
    renamed = None
    if change == "rename":
        renamed = name.replace("q_proj", "query_proj")
        tensors[renamed] = tensor
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    lines = [f"{weights.sha256_file(p)}  {p.name}" for p in sorted(folder.glob("*.safetensors"))]
    (folder / "SHA256SUMS").write_text("\n".join(lines) + "\n")
    weights.verify(folder)  # the manifest holds: the refusal must come from the names
    return name, renamed


@pytest.mark.parametrize("change", ["remove", "rename"])
def test_weights_that_do_not_fit_the_architecture_are_refused(tiny_checkpoint, tmp_path, change):
    from longdoc.config import InferenceSettings, NativeSettings
    from longdoc.engines.native.engine import NativeEngine

    folder = tmp_path / "another-revision"
    name, renamed = _without_the_architecture(tiny_checkpoint, folder, change)
    engine = NativeEngine(InferenceSettings(engine="native", native=NativeSettings(
        model_path=str(folder), device="cpu", fallback_engine=None)))
    with pytest.raises(ModelFilesInvalid) as err:
        engine.load()
    assert err.value.code == "model_files_invalid"
    message = err.value.message
    assert "1 missing (" in message and "layers.1.self_attn.q_proj.weight" in message
    if renamed:
        assert "1 unexpected (" in message and "layers.1.self_attn.query_proj.weight" in message
    else:
        assert "unexpected" not in message
    assert engine.model is None, "nothing runs on freshly initialised tensors"
    engine.close()
    # the checkpoint as saved loads (no name missing or unexpected)
    model, _, _ = weights.load(tiny_checkpoint, torch.float32, "cpu")
    assert model.config.text_config.sliding_window == 128
