"""The service driving a model server (the stand-in: no GPU model runs
here) with ``inference.engine: openai``: jobs, readiness that follows the
model server, the engine's metrics."""

from __future__ import annotations

import subprocess
import sys
import time

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import ROOT, free_port
from tests.service.helpers import accepted, submit, wait_terminal


def _samples(url: str) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(httpx.get(f"{url}/metrics").text):
        for s in family.samples:
            out.setdefault(s.name, {})[s.labels.get("engine", "")] = s.value
    return out


def test_a_job_runs_on_the_model_server_and_readiness_follows_it(start_server, standin_server, sample_pdf, tmp_path):
    srv = start_server(service={"warmup": True},
                       inference={"engine": "openai", "openai": {"base_url": f"{standin_server}/v1"}})
    key = srv.create_key("gpu")
    with srv.http(key) as http:
        job = accepted(submit(http, sample_pdf, {"pages": "4-5", "ocr": "force", "formats": ["md", "json"]}))
        job = wait_terminal(http, job["id"])
        assert job["state"] == "succeeded" and job["engine"] == "openai", job
        assert job["engine_version"] == "standin-ocr/unlimited-ocr"
        page = http.get(f"/v1/jobs/{job['id']}/pages/4").json()
        assert page["produced_by"] == "group" and page["blocks"]
    metrics = _samples(srv.url)
    assert metrics["longdoc_engine_workspace"]["openai"] == 0
    assert metrics["longdoc_engine_workspace_limit"]["openai"] == int(0.8 * 262_144)
    assert metrics["longdoc_model_requests_in_flight"]["openai"] == 0
    assert httpx.get(f"{srv.url}/readyz").status_code == 200


def test_readiness_turns_503_when_the_model_server_goes_away(start_server, tmp_path):
    port = free_port()
    standin = subprocess.Popen([sys.executable, "-m", "tests.standin.model_server", "--port", str(port)], cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline
            time.sleep(0.2)
        srv = start_server(inference={"engine": "openai", "openai": {"base_url": f"http://127.0.0.1:{port}/v1"}})
        assert httpx.get(f"{srv.url}/readyz").json()["checks"]["engine"] is True
    finally:
        standin.terminate()
        standin.wait(10)
    r = httpx.get(f"{srv.url}/readyz")
    assert r.status_code == 503 and r.json()["checks"]["engine"] is False
