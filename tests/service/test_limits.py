"""Limits of the served process: upload size (refused before the body is
read, over a real socket), the synchronous parse's bound, the queue bound
and ``page_not_ready`` for a queued job (input errors, the rate limit and
the order jobs start in are in tests/api/test_limits.py, in process)."""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest

from tests.service.conftest import Server
from tests.service.helpers import accepted, error_code, get_job, submit, wait_for, wait_terminal
from tests.webhooks.receiver import Receiver

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




def test_sync_parse_that_takes_too_long_answers_202_and_carries_on(limited, limited_key, sample_pdf):
    with limited.http(limited_key) as http:
        r = submit(http, sample_pdf, {"pages": "4-5", "ocr": "force", "dpi": 100}, url="/v1/parse", format="txt")
        assert r.status_code == 202, r.text
        job = r.json()
        assert job["state"] in ("queued", "running") and r.headers["Location"] == f"/v1/jobs/{job['id']}"
        assert wait_terminal(http, job["id"])["state"] == "succeeded"
        txt = http.get(f"/v1/jobs/{job['id']}/result", params={"format": "txt"})
        assert txt.status_code == 200 and txt.text.strip()




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



