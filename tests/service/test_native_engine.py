"""The service with ``inference.engine: native`` on a tiny random
Unlimited-OCR checkpoint: a job runs through the KV workspace manager and
its figures are on /metrics, back to zero when the job is done, and /readyz
says how many sequences its KV budget admits."""

from __future__ import annotations

import httpx
import pytest

from tests.service.helpers import accepted, submit, wait_terminal
from tests.service.test_openai_engine import _samples

pytest.importorskip("torch", reason="the native engine needs the torch extra (make test installs it)")


@pytest.mark.slow
def test_a_job_runs_on_the_native_engine_and_its_kv_figures_are_on_metrics(start_server, sample_pdf, tmp_path):
    from longdoc.engines.native import weights

    folder = tmp_path / "tiny-model"
    weights.write_checkpoint(weights.random_model("tiny", seed=2), folder)
    srv = start_server(service={"warmup": True}, inference={
        "engine": "native", "page_chunk_size": 2, "chunk_overlap": 1, "regions": False,
        "native": {"model_path": str(folder), "max_tokens_per_page": 8, "kv_budget_mb": 64}})
    checks = httpx.get(f"{srv.url}/readyz").json()["checks"]
    # how many sequences the configured budget admits, against max_sequences, at the checkpoint's window
    assert checks["kv_budget_bytes"] == 64 * 2**20 and checks["max_sequences"] == 16 and checks["window"] == 128
    assert checks["kv_sequences_fit"] == int(0.8 * 64 * 2**20) // checks["kv_sequence_bytes"]
    assert checks["engine_version"].endswith("/rswa-w128")
    key = srv.create_key("native")
    with srv.http(key) as http:
        job = accepted(submit(http, sample_pdf, {"pages": "3-5", "ocr": "force", "formats": ["json"]}))
        job = wait_terminal(http, job["id"])
        assert job["state"] == "succeeded" and job["engine"] == "native", job
        pages = [http.get(f"/v1/jobs/{job['id']}/pages/{n}").json() for n in (3, 4, 5)]
        # a random model never closes a page: each was cut and read by the fallback engine, and says so
        assert [p["produced_by"] for p in pages] == ["fallback:rapidocr"] * 3
        assert all(p["recovery"][0] == "cut at 8 tokens" for p in pages)
    metrics = _samples(srv.url)
    assert metrics["longdoc_kv_reserved_bytes"]["native"] == 0
    assert metrics["longdoc_kv_sequences"]["native"] == 0
    assert metrics["longdoc_kv_limit_bytes"]["native"] == int(0.8 * 64 * 2**20)
