"""/v1/meta and /metrics, in process."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from tests.service.helpers import accepted, submit, wait_terminal


def test_meta_says_what_the_code_defines_and_the_console_hard_codes_none_of_it(server):
    from pathlib import Path

    from longdoc.export.formats import DEFAULT_FORMATS, FILE_NAMES, FORMATS
    from longdoc.jobs.states import JobState
    from longdoc.model import BlockKind

    r = server.request("GET", "/v1/meta")  # no key: nothing in it is a tenant's
    assert r.status_code == 200, r.text
    meta = r.json()
    assert [f["name"] for f in meta["formats"]] == list(FORMATS)
    assert [f["name"] for f in meta["formats"] if f["default"]] == list(DEFAULT_FORMATS)
    assert {f["name"]: f["file_suffix"] for f in meta["formats"]} == FILE_NAMES
    assert meta["states"] == [s.value for s in JobState] and "expired" in meta["terminal_states"]
    assert "running" not in meta["terminal_states"] and meta["result_states"] == ["succeeded", "partial"]
    assert meta["block_kinds"] == [k.value for k in BlockKind]
    assert meta["engines"] == ["rapidocr"]  # the engines a job may name: not the test double, not the others
    console = (Path(__file__).resolve().parents[2] / "longdoc" / "service" / "console" / "console.js").read_text()
    for literal in ('"docling"', '"chunks.jsonl"', '"succeeded"', '"sidenote"'):
        assert literal not in console, f"console.js hard-codes {literal}: read it from /v1/meta"


def test_metrics_after_a_job(server, report_doc):
    key = server.create_key("metrics")
    with server.http(key) as http:
        job = accepted(submit(http, report_doc.pdf_path, {"formats": ["txt"], "pages": "4-5"}))
        assert wait_terminal(http, job["id"])["state"] == "succeeded"
    r = server.request("GET", "/metrics")
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
