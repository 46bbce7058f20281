"""bench/gpu_check.py in its reduced mode (CPU, tiny random model, float32):
every step runs and writes sane figures, so the run on a lent GPU machine
(docs/gpu-check.md) is not its first."""

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
STEPS = ["environment", "model", "vision", "rswa", "engine", "resident_kv", "summary"]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu-check") / "gpu_check.json"
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_check.py"), "--device", "cpu", "--out", str(out)],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.is_file(), run.stdout + run.stderr
    data = json.loads(out.read_text())
    data["_stdout"] = run.stdout
    data["_rc"] = run.returncode
    return data


def test_every_step_runs_and_the_json_is_complete(report):
    assert report["mode"] == "reduced" and report["device"] == "cpu"
    assert list(report["steps"]) == STEPS
    bad = {n: (s["status"], s.get("error")) for n, s in report["steps"].items() if s["status"] != "ok"}
    assert not bad, bad
    assert report["_rc"] == 0, report["_stdout"]
    assert report["finished"] is not None and report["elapsed_s"] < report["args"]["budget_s"]
    assert all(s["seconds"] >= 0 for s in report["steps"].values())
    assert "beside the seed's claims" in report["_stdout"]


def test_environment_and_model(report):
    env, model = report["steps"]["environment"], report["steps"]["model"]
    assert env["has_unlimited_ocr"] and env["engine_imports"], env.get("engine_import_error")
    assert model["preset"] == "tiny" and model["dtype"] == "float32" and model["device"] == "cpu"
    assert model["visual_tokens_per_page"] == 273 and model["parameters"] > 0


def test_vision_gives_273_tokens_a_page(report):
    v = report["steps"]["vision"]
    hidden = report["steps"]["model"]["hidden"]
    assert v["shapes_ok"] and v["finite"]
    assert v["shapes"] == [[273, hidden]] * v["pages"] and v["pages"] == 2


def test_rswa_agrees_with_transformers_at_both_windows(report):
    r = report["steps"]["rswa"]
    assert r["reference_tokens"] == 1 + 2 * 273 + len("Multi page parsing.")  # BOS, the 2 pages, the prompt
    assert "vision step" in r["reference_pages"]
    assert set(r["runs"]) == {"16", "48"}
    for window, run in r["runs"].items():
        assert run["compared"] == int(window) + 8 + 1 and not run["truncated"]
        assert run["transformers_window_slots"] == int(window) - 1  # transformers ran at this window, not 128
        # float32 on both sides: the same computation up to rounding; the window has wrapped
        assert run["top1_agreement"] == 1.0 and run["top1_agreement_after_wrap"] == 1.0
        assert run["max_abs_dlogit"] < 1e-3 and run["relative"] < 1e-4
        assert len(run["dlogit_per_step"]) == run["compared"] and set(run["agree_per_step"]) == {"1"}


def test_engine_decode_path_full_attention_and_srswa(report):
    e = report["steps"]["engine"]
    runs = {(r["mode"], r["sequences"]): r for r in e["runs"]}
    assert set(runs) == {("full", 1), ("full", 16), ("srswa", 1), ("srswa", 16)}
    for (mode, c), r in runs.items():
        assert "error" not in r, r.get("error")
        assert c <= r["tokens"] <= c * e["decode_steps"]          # a sequence may end early (EOS, <PAGE>)
        # decoded together: on a loaded machine a thread may join a step late, so not always all c at once
        assert max(1, c // 2) <= r["largest_batch"] <= c and r["tokens_per_s"] > 0 and r["prefill_s"] > 0
        assert r["kv_bytes_per_sequence"] == r["reserved_peak_bytes"]
        assert r["kv_bytes_total"] == c * r["kv_bytes_per_sequence"]
    # full attention holds every generated token, SR-SWA only its window
    assert runs[("full", 1)]["window"] == e["generated_before"] + e["decode_steps"]
    assert runs[("srswa", 1)]["window"] == e["srswa_window"]
    assert runs[("full", 1)]["generated_loaded"] == e["generated_before"]


def test_resident_kv_grows_with_pages_only_for_full_attention(report):
    k = report["steps"]["resident_kv"]
    rows = {(r["pages"], r["mode"]): r for r in k["rows"]}
    assert set(rows) == {(p, m) for p in (10, 100, 300) for m in ("full", "rswa", "srswa")}
    for r in rows.values():
        assert "error" not in r, r.get("error")
        assert r["kv_bytes"] == r["kv_bytes_expected"] and r["step_ms"] > 0 and r["attn_ms_all_layers"] > 0
    full = [rows[(p, "full")]["kv_bytes"] for p in (10, 100, 300)]
    assert full[0] < full[1] < full[2]
    # infinite decoding: one group of 32 pages at most, so 100 and 300 pages hold the same
    assert rows[(100, "srswa")]["kv_bytes"] == rows[(300, "srswa")]["kv_bytes"] < rows[(300, "rswa")]["kv_bytes"]
    assert rows[(300, "full")]["kv_bytes_12_layers_bf16"] > 5 * rows[(300, "srswa")]["kv_bytes_12_layers_bf16"]


def test_summary_sets_the_figures_beside_the_claims(report):
    s = report["steps"]["summary"]
    assert s["kv_peak"]["pages"] == 300 and s["kv_peak"]["ratio"] > 5  # 20 tokens a page in the reduced mode
    assert s["kv_peak"]["claim"]["full"] == 47.0 and s["kv_peak"]["claim"]["srswa"] == 1.77
    assert s["tokens_per_s"]["sequences"] == 16 and s["tokens_per_s"]["claim"]["srswa"] == 1315.0
    assert s["step_at_100_pages"]["pages"] == 100 and s["step_at_100_pages"]["ratio"] > 0
    assert set(s["rswa_vs_transformers"]) == {"16", "48"}
    assert s["steps_not_ok"] == {}


def test_a_step_that_fails_is_recorded_and_the_run_goes_on(tmp_path):
    """A device that runs out of something mid-check still leaves a JSON with every other step."""
    out = tmp_path / "gpu_check.json"
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_check.py"), "--device", "cpu", "--out", str(out),
                          "--windows", "16,x", "--kv-pages", "10", "--concurrency", "1", "--vision-pages", "1"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    data = json.loads(out.read_text())
    steps = data["steps"]
    assert run.returncode == 1
    assert steps["rswa"]["status"] == "error" and "ValueError" in steps["rswa"]["error"]
    assert all(steps[n]["status"] == "ok" for n in STEPS if n != "rswa"), {n: s["status"] for n, s in steps.items()}
    assert steps["summary"]["steps_not_ok"] == {"rswa": "error"}
