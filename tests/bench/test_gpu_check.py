"""bench/gpu_check.py in its reduced mode (CPU, tiny random model, float32):
every step runs and writes figures that mean what they say, so the run on a
lent GPU machine (docs/gpu-check.md) is not its first."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the GPU check needs the torch extra (make test installs it)")
transformers = pytest.importorskip("transformers")
if not hasattr(transformers, "UnlimitedOcrForConditionalGeneration"):
    pytest.skip("this transformers has no Unlimited-OCR", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
STEPS = ["environment", "model", "tokenizer", "vision", "reference", "groups", "memory", "throughput", "resident_kv",
         "summary"]


def _run(out: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_check.py"), "--device", "cpu", "--out", str(out),
                           *args], capture_output=True, text=True, timeout=600, cwd=ROOT)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu-check") / "gpu_check.json"
    run = _run(out)
    assert out.is_file(), run.stdout + run.stderr
    data = json.loads(out.read_text())
    data["_stdout"] = run.stdout
    data["_rc"] = run.returncode
    data["_md"] = out.with_suffix(".md").read_text()
    return data


def test_every_step_runs_and_both_reports_are_written(report):
    assert report["mode"] == "reduced" and report["device"] == "cpu"
    assert list(report["steps"]) == STEPS
    bad = {n: (s["status"], s.get("error")) for n, s in report["steps"].items() if s["status"] != "ok"}
    assert not bad, bad
    assert report["_rc"] == 0, report["_stdout"]
    assert report["finished"] is not None and report["elapsed_s"] < report["args"]["budget_s"]
    assert "## Exact: the engine against transformers' generate()" in report["_md"]
    assert "## Peak memory" in report["_md"] and "## Decode throughput" in report["_md"]


def test_environment_model_and_tokenizer(report):
    env, model, tok = (report["steps"][n] for n in ("environment", "model", "tokenizer"))
    assert env["has_unlimited_ocr"] and env["engine_imports"], env.get("engine_import_error")
    assert model["source"].startswith("random") and model["dtype"] == "float32" and model["device"] == "cpu"
    assert model["visual_tokens_per_page"] == 273 and model["parameters"] > 0
    assert tok["problems"] == [] and tok["ids"]["image"] == tok["config_image_token_id"]
    assert tok["prompt_text"] == "Multi page parsing."


def test_vision_gives_273_tokens_a_page(report):
    v = report["steps"]["vision"]
    hidden = report["steps"]["model"]["hidden"]
    assert v["shapes_ok"] and v["finite"] and v["shapes"] == [[273, hidden]] * v["pages"]


def test_the_engine_equals_generate_and_srswa_departs_where_it_selects(report):
    r = report["steps"]["reference"]
    runs = {(x["dtype"], x["pages"]): x for x in r["runs"]}
    assert set(runs) == {("float32", 2), ("float32", 4), ("float32", 8)}
    for (_, pages), run in runs.items():
        exact = run["rswa_vs_generate"]
        assert exact["identical"] and exact["tokens"] == r["new_tokens"] == exact["compared"]
        assert exact["max_abs_dlogit"] <= 1e-5 and exact["top1_agreement"] == 1.0
        departure = run["srswa_vs_rswa"]
        assert departure["tokens"] == exact["tokens"]
        if pages * 273 <= 64 * 16:     # SR-SWA selects every block of two pages: it is R-SWA there
            assert departure["max_abs_dlogit"] <= 1e-5 and departure["first_divergence"] is None
        else:                          # 4 and 8 pages: 64 blocks of 16 keys leave some out
            assert departure["max_abs_dlogit"] > 1e-4


def test_groups_in_bfloat16_add_no_error_to_the_first_groups(report):
    g = report["steps"]["groups"]
    assert g["groups"] >= 2 and [x["rebased"] for x in g["by_group"]] == [False] + [True] * (g["groups"] - 1)
    assert all(x["steps"] > 0 and x["top1_agreement"] > 0.5 for x in g["by_group"])
    assert 0 < g["one_shot_mean_abs_dlogit"] < 0.05
    assert g["rebased_over_one_shot"] is not None and g["one_shot_repeat_max_abs_dlogit"] == 0.0
    shift = g["page_shift_bf16"]
    assert shift["float32_arithmetic"]["bit_identical"] >= 0.999
    assert shift["bfloat16_arithmetic"]["bit_identical"] < 0.9, "the arithmetic it replaced is measurably worse"


def test_memory_runs_real_documents_through_the_engine_and_full_attention(report):
    m = report["steps"]["memory"]
    engine = {r["pages"]: r for r in m["engine"]}
    full = {r["pages"]: r for r in m["full_attention"]}
    assert set(engine) == set(full) == {4, 12}
    assert engine[12]["groups"] > 1 and engine[12]["steps"] >= 12 * 8 - 12
    assert engine[4]["kv_reserved_bytes"] == engine[12]["kv_reserved_bytes"], "one group resident: the same reservation"
    assert full[12]["cache_tokens"] == 1 + 12 * 273 + len("Multi page parsing.") + full[12]["decoded"]
    assert full[12]["generated_kv_is"].startswith("computed")


def test_throughput_compares_transformers_and_the_engine_on_the_same_batch(report):
    t = report["steps"]["throughput"]
    runs = {r["name"]: r for r in t["runs"]}
    assert set(runs) == {"transformers_full_sdpa", "transformers_rswa", "longdoc_rswa", "longdoc_srswa"}
    assert all(r["tokens_per_s"] > 0 for r in runs.values())
    assert runs["transformers_full_sdpa"]["context_tokens"] == runs["transformers_rswa"]["context_tokens"] + t["history"]
    assert runs["longdoc_rswa"]["largest_batch"] >= 2
    assert runs["transformers_full_sdpa"]["over_transformers_full"] == 1.0


def test_resident_kv_grows_with_pages_only_for_full_attention(report):
    k = report["steps"]["resident_kv"]
    rows = {(r["pages"], r["mode"]): r for r in k["rows"]}
    for r in rows.values():
        assert "error" not in r, r.get("error")
        assert r["kv_bytes"] == r["kv_bytes_expected"] and r["step_ms"] > 0
    assert rows[(10, "full")]["kv_bytes"] < rows[(100, "full")]["kv_bytes"] < rows[(300, "full")]["kv_bytes"]
    assert rows[(100, "srswa")]["kv_bytes"] == rows[(300, "srswa")]["kv_bytes"] < rows[(300, "rswa")]["kv_bytes"]


def test_a_step_that_fails_is_recorded_and_the_run_goes_on(tmp_path):
    """A device that runs out of something mid-check still leaves both reports with every other step."""
    out = tmp_path / "gpu_check.json"
    run = _run(out, "--ref-pages", "2,x", "--only", "reference,groups", "--vision-pages", "1")
    steps = json.loads(out.read_text())["steps"]
    assert run.returncode == 1
    assert steps["reference"]["status"] == "error" and "ValueError" in steps["reference"]["error"]
    assert steps["groups"]["status"] == "ok" and steps["memory"]["error"] == "not asked for (--only)"
    assert steps["summary"]["steps_not_ok"] == {"reference": "error"}
    assert out.with_suffix(".md").is_file()
