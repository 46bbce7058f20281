"""Operations endpoints and logs."""

from __future__ import annotations

import json

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.docgen import english_report
from tests.service.helpers import accepted, submit, wait_terminal


def test_health_and_readiness(server):
    r = httpx.get(f"{server.url}/healthz")
    assert r.status_code == 200 and r.json()["status"] == "ok"
    r = httpx.get(f"{server.url}/readyz")
    assert r.status_code == 200
    body = r.json()
    assert body["ready"] is True
    for check in ("warmed_up", "accepting", "database", "storage", "engine"):
        assert body["checks"][check] is True, body
    # the runtime each model of the default engine settled on (inference.backend: auto) is said
    runtimes = body["checks"]["engine_version"].rsplit("/", 1)[1].split("+")
    assert runtimes and set(runtimes) <= {"onnxruntime", "openvino"}, body


def test_meta_says_what_the_code_defines_and_the_console_hard_codes_none_of_it(server):
    from pathlib import Path

    from longdoc.export.formats import DEFAULT_FORMATS, FILE_NAMES, FORMATS
    from longdoc.jobs.states import JobState
    from longdoc.model import BlockKind

    r = httpx.get(f"{server.url}/v1/meta")  # no key: nothing in it is a tenant's
    assert r.status_code == 200, r.text
    meta = r.json()
    assert [f["name"] for f in meta["formats"]] == list(FORMATS)
    assert [f["name"] for f in meta["formats"] if f["default"]] == list(DEFAULT_FORMATS)
    assert {f["name"]: f["file_suffix"] for f in meta["formats"]} == FILE_NAMES
    assert meta["states"] == [s.value for s in JobState] and "expired" in meta["terminal_states"]
    assert "running" not in meta["terminal_states"] and meta["result_states"] == ["succeeded", "partial"]
    assert meta["block_kinds"] == [k.value for k in BlockKind] and "rapidocr" in meta["engines"]
    console = (Path(__file__).resolve().parents[2] / "longdoc" / "service" / "console" / "console.js").read_text()
    for literal in ('"docling"', '"chunks.jsonl"', '"succeeded"', '"sidenote"'):
        assert literal not in console, f"console.js hard-codes {literal}: read it from /v1/meta"


def test_metrics_after_a_job(server, report_doc):
    key = server.create_key("metrics")
    with server.http(key) as http:
        job = accepted(submit(http, report_doc.pdf_path, {"formats": ["txt"], "pages": "4-5"}))
        assert wait_terminal(http, job["id"])["state"] == "succeeded"
    r = httpx.get(f"{server.url}/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    samples: dict[str, list] = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            samples.setdefault(s.name, []).append(s)
    jobs = {s.labels["state"]: s.value for s in samples["longdoc_jobs"]}
    assert set(jobs) >= {"queued", "running", "succeeded", "failed", "cancelled", "expired"}
    assert jobs["succeeded"] >= 1
    lanes = {s.labels["lane"] for s in samples["longdoc_queue_depth"]}
    assert {"short", "long"} <= lanes
    assert any(s.labels.get("stage") for s in samples["longdoc_stage_seconds_count"])
    assert sum(s.value for s in samples["longdoc_pages_total"]) >= 2
    assert samples["longdoc_workspace_bytes"][0].value >= 0
    assert samples["longdoc_workspace_limit_bytes"][0].value > 0
    assert samples["process_resident_memory_bytes"][0].value > 0


def test_logs_are_json_with_ids_and_never_the_text(server, tmp_path):
    doc = english_report(tmp_path, pages=3, seed=4242)
    words = doc.main_text_per_page[1].split()
    sentence = " ".join(words[10:17])  # a distinctive run of words of page 2
    key = server.create_key("logs")
    with server.http(key) as http:
        job = accepted(submit(http, doc.pdf_path, {"formats": ["md"]}))
        assert wait_terminal(http, job["id"])["state"] == "succeeded"
        assert sentence.split()[3] in http.get(f"/v1/jobs/{job['id']}/result", params={"format": "md"}).text
    text = server.log_text()
    records = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("===== start"):  # the test's own markers
            continue
        records.append(json.loads(line))  # every line is one JSON object
    mine = [r for r in records if r.get("job_id") == job["id"]]
    assert {r["message"] for r in mine} >= {"job accepted", "job started", "job finished"}
    assert all(r.get("tenant") == "logs" for r in mine if r["message"] != "job recovered after restart")
    assert sentence not in text
    for word_run in (" ".join(words[i:i + 4]) for i in range(0, len(words) - 4, 4)):
        assert word_run not in text
