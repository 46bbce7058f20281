"""Health, readiness and logs of the served process (/v1/meta and
/metrics are in tests/api/test_ops.py, in process)."""

from __future__ import annotations

import json

import httpx

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
