"""Cancel and delete; retention expiry; the job deadline (in process)."""

from __future__ import annotations

import time

from tests.service.helpers import accepted, error_code, submit, wait_for, wait_terminal


def assert_copy_goes(server, job_id: str, timeout: float = 30) -> None:
    """The job's local copy of its original goes once its last task has
    announced the end (a moment after the state a client sees)."""
    copy = server.root / "data" / "work" / "originals" / job_id
    deadline = time.monotonic() + timeout
    while copy.exists():
        assert time.monotonic() < deadline, f"{copy} is still there {timeout} s after the job ended"
        time.sleep(0.05)


def test_cancel_a_running_job(server, long_doc):
    key = server.create_key("cancel")
    with server.http(key) as http:
        job = accepted(submit(http, long_doc.pdf_path, {"formats": ["md"]}))
        wait_for(http, job["id"], lambda j: j["state"] == "running" and j["pages_done"] > 0)
        r = http.delete(f"/v1/jobs/{job['id']}")
        assert r.status_code == 202, r.text
        assert r.json()["id"] == job["id"]
        final = wait_terminal(http, job["id"])
        assert final["state"] == "cancelled", final
        assert final["pages_done"] < long_doc.pages  # stopped between groups, not run to the end
        assert_copy_goes(server, job["id"])
        r = http.get(f"/v1/jobs/{job['id']}/result")
        assert r.status_code == 409 and error_code(r) == "job_failed"
        assert r.json()["error"]["context"]["job_state"] == "cancelled"
        # a cancelled job is finished: DELETE now removes it and its data
        assert server.job_files(key.tenant, job["id"])
        assert http.delete(f"/v1/jobs/{job['id']}").status_code == 204
        assert server.job_files(key.tenant, job["id"]) == []
        assert http.get(f"/v1/jobs/{job['id']}").status_code == 404


def test_delete_a_finished_job_removes_its_data(server, report_doc):
    key = server.create_key("delete")
    with server.http(key) as http:
        job = accepted(submit(http, report_doc.pdf_path, {"formats": ["md", "json"], "pages": "1-3"}))
        assert wait_terminal(http, job["id"])["state"] == "succeeded"
        assert_copy_goes(server, job["id"])
        stored = {p.name for p in server.job_files(key.tenant, job["id"])}
        assert {"original", "result.md", "result.json"} <= stored, stored
        r = http.delete(f"/v1/jobs/{job['id']}")
        assert r.status_code == 204 and r.content == b""
        assert server.job_files(key.tenant, job["id"]) == []
        for url in (f"/v1/jobs/{job['id']}", f"/v1/jobs/{job['id']}/result", f"/v1/jobs/{job['id']}/pages/1"):
            r = http.get(url)
            assert r.status_code == 404 and error_code(r) == "job_not_found", url
        assert http.delete(f"/v1/jobs/{job['id']}").status_code == 404
        assert job["id"] not in {j["id"] for j in http.get("/v1/jobs").json()["items"]}


def test_retention_expires_finished_jobs(start_app, report_doc):
    srv = start_app(service={"retention_hours": 0.0005})  # 1.8 s
    key = srv.create_key("retention")
    with srv.http(key) as http:
        job = accepted(submit(http, report_doc.pdf_path, {"formats": ["md"], "pages": "1-2"}))
        done = wait_terminal(http, job["id"])
        assert done["state"] == "succeeded" and done["expires_at"]
        assert srv.job_files(key.tenant, job["id"])
        deadline = time.monotonic() + 60
        while (state := http.get(f"/v1/jobs/{job['id']}").json()["state"]) != "expired":
            assert time.monotonic() < deadline, f"still {state}"
            r = srv.request("POST", "/admin/retention/run", headers=srv.admin_headers())
            assert r.status_code == 200 and isinstance(r.json()["expired"], int)
            time.sleep(0.5)
        r = http.get(f"/v1/jobs/{job['id']}/result")
        assert r.status_code == 410 and error_code(r) == "job_expired"
        r = http.get(f"/v1/jobs/{job['id']}/pages/1")
        assert r.status_code == 410 and error_code(r) == "job_expired"
        assert srv.job_files(key.tenant, job["id"]) == []
        # the row stays (state expired) until deleted
        assert http.delete(f"/v1/jobs/{job['id']}").status_code == 204
        assert http.get(f"/v1/jobs/{job['id']}").status_code == 404


def test_job_over_its_time_limit_fails_with_job_timeout(start_app, long_doc):
    # the long document needs far more; 1 s was once over before its first group ended on a loaded machine
    srv = start_app(service={"timeout_seconds": 4})
    key = srv.create_key("timeout")
    with srv.http(key) as http:
        job = accepted(submit(http, long_doc.pdf_path, {"formats": ["md"]}))
        final = wait_terminal(http, job["id"])
        assert final["state"] == "failed", final
        assert final["error"]["code"] == "job_timeout"
        assert 0 < final["pages_done"] < long_doc.pages  # stopped between groups
        r = http.get(f"/v1/jobs/{job['id']}/result")
        assert r.status_code == 409 and error_code(r) == "job_failed"
        assert r.json()["error"]["context"] == {"job_state": "failed", "job_error_code": "job_timeout"}
