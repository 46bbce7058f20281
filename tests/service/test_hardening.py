"""An untrusted document or client costs a bounded amount of memory, time
and connections, and never takes a valid page or the service down with it
(issue 6). Every test drives a real ``longdoc serve`` over 127.0.0.1 (what
needs no socket or process of its own is in tests/api/test_documents.py)."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psutil
import pytest

from tests.docgen import english_report, rasterize
from tests.ingest.files import good_page, pdf_with_pages, stream_bomb_page
from tests.service.conftest import Server
from tests.service.helpers import (
    accepted,
    closed_by_server,
    connect,
    error_code,
    raw_response,
    submit,
    wait_for,
    wait_terminal,
)

SANDBOX_MB = 128
BOMB_MIB = 320
QUOTA_MB = 2
IDLE_S = 1.0           # header and body timeouts of the guarded server
MAX_CONNECTIONS = 80
PER_CLIENT = 40


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    """A server with a small sandbox, a small quota, tight connection limits
    and no warm-up."""
    srv = Server(
        tmp_path_factory.mktemp("server-guarded"),
        service={"warmup": False, "header_timeout_seconds": IDLE_S, "body_timeout_seconds": IDLE_S,
                 "max_connections": MAX_CONNECTIONS, "max_connections_per_client": PER_CLIENT},
        limits={"worker_memory_mb": SANDBOX_MB, "tenant_storage_mb": QUOTA_MB},
    ).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def guarded_key(guarded):
    return guarded.create_key("guarded")


@pytest.fixture(scope="module")
def bomb(tmp_path_factory) -> Path:
    return pdf_with_pages(tmp_path_factory.mktemp("bomb") / "bomb.pdf",
                          [good_page(1), stream_bomb_page(BOMB_MIB), good_page(3)])


def _rss(pid: int) -> int:
    return psutil.Process(pid).memory_info().rss


# --- documents ------------------------------------------------------------------


def test_a_stream_bomb_fails_its_page_alone_and_never_grows_the_api_process(guarded, guarded_key, bomb):
    assert guarded.proc is not None
    with guarded.http(guarded_key) as http:
        before = _rss(guarded.proc.pid)
        job = accepted(submit(http, bomb, {"formats": ["txt", "json"]}))
        peak = before
        while (state := http.get(f"/v1/jobs/{job['id']}").json())["state"] not in ("succeeded", "partial", "failed"):
            peak = max(peak, _rss(guarded.proc.pid))
            time.sleep(0.05)
        assert state["state"] == "partial" and state["failed_pages"] == [2], state
        assert peak - before < 100 * 2**20, f"the API process grew by {(peak - before) / 2**20:.0f} MiB"
        page = http.get(f"/v1/jobs/{job['id']}/pages/2").json()
        assert page["status"] == "failed" and page["error"]["code"] == "resource_limit"
        text = http.get(f"/v1/jobs/{job['id']}/result", params={"format": "txt"}).text
        assert "Good page 1 " in text and "Good page 3 " in text


def test_a_document_whose_every_page_fails_says_why(guarded, guarded_key, tmp_path):
    path = pdf_with_pages(tmp_path / "all-bombs.pdf", [stream_bomb_page(BOMB_MIB)])
    with guarded.http(guarded_key) as http:
        job = wait_terminal(http, accepted(submit(http, path, {"formats": ["txt"]}))["id"])
    assert job["state"] == "failed" and job["failed_pages"] == [1], job
    assert job["error"]["code"] == "resource_limit" and "Every page failed" in job["error"]["message"]


def test_a_page_tree_claiming_two_pages_holding_one_ends_partial_with_the_real_page(guarded, guarded_key, tmp_path):
    path = pdf_with_pages(tmp_path / "claims-two.pdf", [good_page(1)], count=2)
    with guarded.http(guarded_key) as http:
        job = wait_terminal(http, accepted(submit(http, path, {"formats": ["md"]}))["id"])
        assert job["state"] == "partial" and job["failed_pages"] == [2], job
        assert "Good page 1 " in http.get(f"/v1/jobs/{job['id']}/result", params={"format": "md"}).text












def test_ready_without_warm_up_and_head_answers(guarded):
    assert httpx.get(f"{guarded.url}/readyz").status_code == 200
    assert httpx.head(f"{guarded.url}/healthz").status_code == 200
    assert httpx.head(f"{guarded.url}/readyz").status_code == 200




# --- connections ---------------------------------------------------------------


def test_an_unauthenticated_upload_is_answered_401_before_its_body(guarded):
    with socket.create_connection(("127.0.0.1", guarded.port), timeout=10) as sock:
        sock.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ld_wrong\r\n"
                     b"Content-Type: multipart/form-data; boundary=x\r\nContent-Length: 50000000\r\n\r\n"
                     + b"--x\r\n" + b"0" * 1000)
        status, headers, _ = raw_response(sock, timeout=5)
        assert status == 401 and headers.get("connection") == "close"
        assert closed_by_server(sock, timeout=5)


def test_idle_and_half_sent_connections_are_closed_and_the_service_keeps_answering(guarded, guarded_key, tmp_path):
    path = pdf_with_pages(tmp_path / "doc.pdf", [good_page(41)])
    log_before = guarded.log_path.stat().st_size
    with guarded.http(guarded_key) as http:
        job = accepted(submit(http, path, {"formats": ["txt"]}))  # accepted just before the flood
    flood: list[socket.socket] = []
    try:
        for i in range(PER_CLIENT + 10):  # more than one address may hold
            s = connect(guarded.port)
            if i % 3 == 1:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # half a head
            elif i % 3 == 2:  # half the body of an upload
                s.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + guarded_key.key.encode()
                          + b"\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: 1000\r\n\r\n--x\r\n")
            flood.append(s)
        # past the per-address cap nothing is refused: connections still waiting for their head give way
        assert 503 not in [_status_or_none(s) for s in flood[PER_CLIENT:]]
        # another address is served while this one floods, up to the server's cap
        other = httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2"))
        assert other.get(f"{guarded.url}/healthz", timeout=5).status_code == 200
        other.close()
        second = [connect(guarded.port, "127.0.0.2") for _ in range(MAX_CONNECTIONS - PER_CLIENT)]
        flood += second
        # at the server's cap a client with a request is still served: the connection that has waited
        # longest for its head gives way (answered 503 only when every connection is busy: test_connections.py)
        third = httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.3"))
        assert third.get(f"{guarded.url}/healthz", timeout=5).status_code == 200
        third.close()
        # the idle and half-sent ones are closed by the server within the timeouts
        deadline = time.monotonic() + IDLE_S + 5
        for s in flood:
            assert closed_by_server(s, max(0.1, deadline - time.monotonic())), "an idle connection stayed open"
        with guarded.http(guarded_key) as http:
            assert http.get("/healthz").status_code == 200
            assert wait_terminal(http, job["id"])["state"] == "succeeded"
    finally:
        for s in flood:
            s.close()
    assert guarded.log_path.stat().st_size - log_before < 200_000, "the flood flooded the log"


def _status_or_none(sock: socket.socket) -> int | None:
    try:
        return raw_response(sock, timeout=2)[0]
    except (AssertionError, TimeoutError, OSError):
        return None


def test_every_log_line_is_json(guarded, guarded_key, sample_pdf):
    with guarded.http(guarded_key) as http:
        job = accepted(submit(http, sample_pdf, {"pages": "4", "ocr": "force", "dpi": 100, "formats": ["txt"]}))
        assert wait_terminal(http, job["id"])["state"] == "succeeded"
    lines = [line for line in guarded.log_text().splitlines() if line.strip() and not line.startswith("=====")]
    assert lines
    for line in lines:
        assert isinstance(json.loads(line), dict), line


# --- admission ----------------------------------------------------------------------


def test_the_queue_bound_is_exact_and_identical_uploads_make_one_job(start_server, long_doc, tmp_path):
    srv = start_server(service={"max_queued": 3, "max_concurrency": 1})
    key = srv.create_key("burst")
    docs = [pdf_with_pages(tmp_path / f"d{i}.pdf", [good_page(i)]) for i in range(12)]
    with srv.http(key) as http:
        # long enough to hold the one worker while the burst arrives (600 pages), and stopped by the
        # cancel at its next page group
        running = accepted(submit(http, long_doc.pdf_path, {"formats": ["txt"]}))
        wait_for(http, running["id"], lambda j: j["state"] == "running")
        with ThreadPoolExecutor(12) as pool:
            answers = list(pool.map(lambda d: submit(srv.http(key), d), docs))
        codes = [r.status_code for r in answers]
        assert codes.count(202) == 3 and codes.count(429) == 9, codes
        # cancelled while running (202), or already finished and deleted (204)
        assert http.delete(f"/v1/jobs/{running['id']}").status_code in (202, 204)
        for r in answers:
            if r.status_code == 202:
                assert wait_terminal(http, r.json()["id"])["state"] == "succeeded"
    same = pdf_with_pages(tmp_path / "same.pdf", [good_page(99)])
    other_key = srv.create_key("burst-same")
    srv2_http = [srv.http(other_key) for _ in range(20)]
    barrier = threading.Barrier(20)

    def one(http: httpx.Client) -> str:
        barrier.wait()
        r = submit(http, same)
        assert r.status_code in (200, 202, 429), r.text
        return r.json()["id"] if r.status_code != 429 else ""

    with ThreadPoolExecutor(20) as pool:
        ids = {i for i in pool.map(one, srv2_http) if i}
    assert len(ids) == 1, ids


def test_failed_authentication_is_throttled_per_address(start_server):
    srv = start_server(service={"auth_failures_per_minute": 5})
    key = srv.create_key("throttle")
    with httpx.Client(base_url=srv.url, headers={"Authorization": "Bearer ld_guess"}) as http:
        codes = [http.get("/v1/jobs").status_code for _ in range(8)]
        assert codes[:5] == [401] * 5 and set(codes[5:]) == {429}, codes
        r = http.get("/v1/jobs")
        assert error_code(r) == "rate_limited" and int(r.headers["Retry-After"]) >= 1
    # the address is throttled for wrong keys only: a valid key from it is served; another address is not throttled
    assert httpx.get(f"{srv.url}/v1/jobs", headers=key.headers).status_code == 200
    other = httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2"),
                         headers={"Authorization": "Bearer ld_guess"})
    assert other.get(f"{srv.url}/v1/jobs").status_code == 401


# --- crash recovery ------------------------------------------------------------------


def _group(pgid: int) -> list[psutil.Process]:
    alive = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
        except (ProcessLookupError, psutil.Error):
            continue
    return alive


def test_kill_9_leaves_nothing_running_or_on_disk_and_a_job_that_keeps_dying_stops(start_server, tmp_path):
    tmp_before = set(Path("/tmp").glob("longdoc-*"))
    scan = rasterize(english_report(tmp_path / "doc", pages=8, seed=3), 150, tmp_path / "scan.pdf")
    srv = start_server(inference={"workers": 2}, service={"max_attempts": 1})
    key = srv.create_key("crash")
    with srv.http(key) as http:
        job = accepted(submit(http, scan.pdf_path, {"ocr": "force", "formats": ["txt"]}))
        wait_for(http, job["id"], lambda j: j["state"] == "running")
        time.sleep(1.0)  # workers started, the document copied and being read (8 scanned pages: ~15 s)
    assert srv.proc is not None
    pgid = srv.proc.pid
    work = srv.root / "data" / "work"
    assert len(_group(pgid)) >= 4, "expected the server, its fork server and two OCR workers"
    assert any(work.iterdir()), "the running job's copy should be in the work folder"
    os.kill(srv.proc.pid, 9)  # the server alone, as the OOM killer or an operator would
    srv.proc.wait(30)
    deadline = time.monotonic() + 15
    while (left := _group(pgid)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, [p.cmdline()[:3] for p in left]
    assert set(Path("/tmp").glob("longdoc-*")) <= tmp_before, "copies of the document left in /tmp"
    srv.start()
    assert not any(work.iterdir()), "the work folder is emptied at start"
    with srv.http(key) as http:
        job = wait_terminal(http, job["id"])
        assert job["state"] == "failed" and job["error"]["code"] == "too_many_attempts", job
