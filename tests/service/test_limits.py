"""Limits and their error codes: upload size (refused before the body is
read), page count, pixel count, type, encryption, options, callback targets,
rate limit, queue bound, jobs at once (a short document is never stuck
behind long ones; the most urgent job starts first); ``page_not_ready`` for
a queued job."""

from __future__ import annotations

import io
import json
import socket
import time
import zipfile

import httpx
import pytest

from tests.ingest.files import encrypted_pdf, png_claiming_size
from tests.jobs.webhook_receiver import Receiver
from tests.service.conftest import Server
from tests.service.helpers import accepted, error_code, get_job, submit, wait_for, wait_terminal

MAX_UPLOAD_MB = 1
MAX_PAGES = 20
SYNC_TIMEOUT_S = 0.2  # far below the OCR of two scanned pages


@pytest.fixture(scope="module")
def limited(tmp_path_factory):
    """A server with small limits that refuses private callback targets."""
    srv = Server(tmp_path_factory.mktemp("server-limits"),
                 service={"allow_private_callbacks": False, "sync_timeout_seconds": SYNC_TIMEOUT_S},
                 limits={"max_upload_mb": MAX_UPLOAD_MB, "max_pages": MAX_PAGES}).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def limited_key(limited):
    return limited.create_key("limits")


def _read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 response (headers and a Content-Length body) from ``sock``."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before a response: {buf!r}"
        buf += chunk
    head, body = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    while len(body) < int(headers.get("content-length", "0")):
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return status, headers, body


def test_upload_over_the_limit_is_refused_before_its_body_is_read(limited, limited_key):
    declared = 10 * 2**30  # 10 GiB declared; only a few bytes ever sent
    with socket.create_connection(("127.0.0.1", limited.port), timeout=30) as sock:
        sock.sendall(
            b"POST /v1/jobs HTTP/1.1\r\n"
            b"Host: 127.0.0.1\r\n"
            + f"Authorization: Bearer {limited_key.key}\r\n".encode()
            + b"Content-Type: multipart/form-data; boundary=xyz\r\n"
            + f"Content-Length: {declared}\r\n\r\n".encode()
            + b"--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.pdf\"\r\n\r\n%PDF-1.7\n"
        )
        status, headers, body = _read_response(sock)
    assert status == 413
    assert json.loads(body)["error"]["code"] == "upload_too_large"


def test_upload_over_the_limit_is_refused(limited, limited_key, tmp_path):
    big = tmp_path / "big.pdf"
    big.write_bytes(b"%PDF-1.7\n" + b"0" * (MAX_UPLOAD_MB * 2**20 + 200_000))
    with limited.http(limited_key) as http:
        r = submit(http, big)
        assert r.status_code == 413 and error_code(r) == "upload_too_large"
        # without a Content-Length (chunked): cut off as soon as the limit passes
        boundary = "b0undary"
        head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.pdf\"\r\n"
                "Content-Type: application/pdf\r\n\r\n").encode()

        def chunks():
            yield head
            for _ in range(MAX_UPLOAD_MB * 4):
                yield b"1" * (256 * 1024)
            yield b"1" * 300_000
            yield f"\r\n--{boundary}--\r\n".encode()

        try:
            r = http.post("/v1/jobs", content=chunks(),
                          headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
        except httpx.WriteError:
            pytest.fail("the server closed the connection instead of answering 413")
        assert r.status_code == 413 and error_code(r) == "upload_too_large"
        assert http.get("/v1/jobs").json()["items"] == []


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


def test_sync_parse_that_takes_too_long_answers_202_and_carries_on(limited, limited_key, sample_pdf):
    with limited.http(limited_key) as http:
        r = submit(http, sample_pdf, {"pages": "4-5", "ocr": "force", "dpi": 100}, url="/v1/parse", format="txt")
        assert r.status_code == 202, r.text
        job = r.json()
        assert job["state"] in ("queued", "running") and r.headers["Location"] == f"/v1/jobs/{job['id']}"
        assert wait_terminal(http, job["id"])["state"] == "succeeded"
        txt = http.get(f"/v1/jobs/{job['id']}/result", params={"format": "txt"})
        assert txt.status_code == 200 and txt.text.strip()


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


def test_queue_full_and_pages_of_queued_and_running_jobs(start_server, long_doc, report_doc, sample_pdf):
    srv = start_server(service={"max_queued": 1, "max_concurrency": 1})
    key = srv.create_key("queue")
    receiver = Receiver()
    with srv.http(key) as http:
        hook = {"callback_url": receiver.url()}
        running = accepted(submit(http, long_doc.pdf_path, {"formats": ["txt"], **hook}))
        job = wait_for(http, running["id"], lambda j: j["state"] == "running" and j["pages_done"] > 0)
        assert job["state"] == "running", job

        queued = accepted(submit(http, report_doc.pdf_path, {"formats": ["md"], **hook}))
        assert queued["state"] == "queued" and queued["queue_position"] == 0

        full = submit(http, sample_pdf)
        assert full.status_code == 429 and error_code(full) == "queue_full"
        assert int(full.headers["Retry-After"]) >= 1

        # pages: the running job's first pages are there, the queued job's are not
        assert get_job(http, running["id"])["state"] == "running"
        r = http.get(f"/v1/jobs/{running['id']}/pages/1")
        assert r.status_code == 200 and r.json()["number"] == 1
        r = http.get(f"/v1/jobs/{queued['id']}/pages/1")
        assert r.status_code == 404 and error_code(r) == "page_not_ready"
        r = http.get(f"/v1/jobs/{queued['id']}/result")
        assert r.status_code == 202 and r.json()["state"] == "queued"

        cancelled = http.delete(f"/v1/jobs/{queued['id']}")
        assert cancelled.status_code == 202 and cancelled.json()["state"] == "cancelled"
        assert http.delete(f"/v1/jobs/{running['id']}").status_code == 202
        assert wait_terminal(http, running["id"])["state"] == "cancelled"
        assert accepted(submit(http, sample_pdf, {"pages": "1"}))  # room again
    try:  # both cancelled jobs reached a terminal state: one webhook each
        deadline = time.monotonic() + 60
        while len(receiver.requests) < 2:
            assert time.monotonic() < deadline, [r.body for r in receiver.requests]
            time.sleep(0.1)
        hooks = {json.loads(r.body)["job"]["id"]: json.loads(r.body)["job"]["state"] for r in receiver.requests}
        assert hooks == {queued["id"]: "cancelled", running["id"]: "cancelled"}
    finally:
        receiver.close()


def test_a_short_document_is_not_stuck_behind_long_ones(start_server, long_doc, report_doc):
    srv = start_server(service={"max_concurrency": 2})  # at most one long job at once
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


def test_the_most_urgent_queued_job_starts_first(start_server, long_doc, report_doc):
    srv = start_server(service={"max_concurrency": 1})
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
