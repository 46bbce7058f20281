"""Limits and their error codes, in process: page count, pixel count,
type, encryption, options, callback targets; the rate limit; jobs at once
(a short document is never stuck behind long ones; the most urgent job
starts first)."""

from __future__ import annotations

import io
import zipfile

import pytest

from tests.api.harness import InProcessServer
from tests.ingest.files import encrypted_pdf, png_claiming_size
from tests.service.helpers import accepted, error_code, get_job, submit, wait_for, wait_terminal

MAX_PAGES = 20


@pytest.fixture(scope="module")
def limited(tmp_path_factory):
    """The service with a small page limit that refuses private callback targets."""
    srv = InProcessServer(tmp_path_factory.mktemp("inprocess-limits"), service={"allow_private_callbacks": False},
                          limits={"max_pages": MAX_PAGES}).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def limited_key(limited):
    return limited.create_key("limits")


def test_input_errors_have_stable_codes(limited, limited_key, long_doc, report_doc, tmp_path):
    bomb = png_claiming_size(tmp_path / "bomb.png", 100_000, 100_000)
    archive = tmp_path / "bundle.pdf"  # a ZIP whatever its name says
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("a.txt", "hello")
    archive.write_bytes(buf.getvalue())
    locked = encrypted_pdf(tmp_path / "locked.pdf", user_password="secret")
    with limited.http(limited_key) as http:
        cases = [
            (submit(http, long_doc.pdf_path), 422, "too_many_pages"),       # 600 pages > 20
            (submit(http, bomb), 422, "image_too_large"),
            (submit(http, archive), 415, "unsupported_type"),
            (submit(http, locked), 422, "encrypted_pdf"),
            (http.post("/v1/jobs", files={"file": ("a.pdf", report_doc.pdf_path.read_bytes())},
                       data={"options": "{not json"}), 400, "invalid_option"),
            (submit(http, report_doc.pdf_path, {"formats": ["docx"]}), 400, "invalid_option"),
            (submit(http, report_doc.pdf_path, {"surprise": True}), 400, "invalid_option"),
            (submit(http, report_doc.pdf_path, {"pages": "50-60"}), 422, "invalid_page_range"),
            (submit(http, report_doc.pdf_path, {"callback_url": "http://127.0.0.1:9/hook"}), 422, "callback_refused"),
            (submit(http, report_doc.pdf_path, {"callback_url": "file:///etc/passwd"}), 422, "callback_refused"),
        ]
        for i, (r, status, code) in enumerate(cases):
            assert (r.status_code, error_code(r)) == (status, code), (i, r.text)
            body = r.json()["error"]
            assert body["message"] and body["hint"], body
        # a document within every limit is accepted
        job = accepted(submit(http, report_doc.pdf_path, {"pages": "1-2", "formats": ["txt"]}))
        assert job["pages_total"] == 2
        # nothing refused was stored as a job
        assert [j["id"] for j in http.get("/v1/jobs").json()["items"]] == [job["id"]]
        assert wait_terminal(http, job["id"])["state"] == "succeeded"


def test_rate_limit(server):
    key = server.create_key("rate", rate_limit=5)
    with server.http(key) as http:
        for _ in range(5):
            assert http.get("/v1/jobs").status_code == 200
        r = http.get("/v1/jobs")
        assert r.status_code == 429 and error_code(r) == "rate_limited"
        assert int(r.headers["Retry-After"]) >= 1
        assert r.json()["error"]["retryable"] is True
    with server.http(server.create_key("rate-other")) as other:  # the limit is per key
        assert other.get("/v1/jobs").status_code == 200


def test_a_short_document_is_not_stuck_behind_long_ones(start_app, long_doc, report_doc):
    srv = start_app(service={"max_concurrency": 2})  # at most one long job at once
    key = srv.create_key("lanes")
    with srv.http(key) as http:
        first = accepted(submit(http, long_doc.pdf_path, {"formats": ["txt"]}))
        wait_for(http, first["id"], lambda j: j["state"] == "running" and j["pages_done"] > 0)
        second = accepted(submit(http, long_doc.pdf_path, {"formats": ["md"]}))  # other options: another job
        short = accepted(submit(http, report_doc.pdf_path, {"formats": ["md"]}))
        assert (short["lane"], first["lane"]) == ("short", "long")
        assert wait_terminal(http, short["id"])["state"] == "succeeded"
        assert get_job(http, first["id"])["state"] == "running"  # the short one did not wait for it
        assert get_job(http, second["id"])["state"] == "queued"  # nor for the long one queued before it
        for job in (first, second):
            assert http.delete(f"/v1/jobs/{job['id']}").status_code == 202
        assert {wait_terminal(http, j["id"])["state"] for j in (first, second)} == {"cancelled"}


def test_the_most_urgent_queued_job_starts_first(start_app, long_doc, report_doc):
    srv = start_app(service={"max_concurrency": 1})
    key = srv.create_key("priority")
    with srv.http(key) as http:
        running = accepted(submit(http, long_doc.pdf_path, {"formats": ["txt"]}))
        wait_for(http, running["id"], lambda j: j["state"] == "running")
        low = accepted(submit(http, report_doc.pdf_path, {"formats": ["md"], "pages": "1-2"}))
        high = accepted(submit(http, report_doc.pdf_path, {"formats": ["md"], "pages": "3-4", "priority": 5}))
        assert (get_job(http, high["id"])["queue_position"], get_job(http, low["id"])["queue_position"]) == (0, 1)
        assert http.delete(f"/v1/jobs/{running['id']}").status_code == 202
        low_done, high_done = wait_terminal(http, low["id"]), wait_terminal(http, high["id"])
        assert low_done["state"] == high_done["state"] == "succeeded"
        assert high_done["finished_at"] <= low_done["started_at"]  # one at a time, the urgent one first
