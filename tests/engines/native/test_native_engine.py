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


def _parse(tmp_path, checkpoint, fallback):
    config = tmp_path / "native.yaml"
    config.write_text(
        "inference:\n  engine: native\n  page_chunk_size: 3\n  chunk_overlap: 1\n  regions: false\n"
        f"  native:\n    model_path: {checkpoint}\n    max_tokens_per_page: 12\n    window: 8\n"
        f"    top_pages: 2\n    top_blocks: 4\n    fallback_engine: {fallback}\n")
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "longdoc.cli", "parse", str(SAMPLE), "--ocr", "force",
                          "--config", str(config), "-o", str(out), "-q"], capture_output=True, text=True, timeout=600)
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
    run, doc = _parse(tmp_path, tiny_checkpoint, "rapidocr")
    assert run.returncode == 0, run.stderr
    assert [p["number"] for p in doc["pages"]] == [1, 2, 3, 4, 5]
    for page in doc["pages"]:
        assert page["status"] == "ok" and page["produced_by"] == "fallback:rapidocr"
        assert page["recovery"][0] == "cut at 12 tokens"
    assert "Review of Operations" in (tmp_path / "out" / "sample.txt").read_text()
