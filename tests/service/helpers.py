"""Small HTTP helpers shared by the service tests (no fixtures here)."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import httpx

TERMINAL = {"succeeded", "partial", "failed", "cancelled", "expired"}
WAIT_TIMEOUT_S = 180.0
VOLATILE_KEYS = {"timings", "created_at", "started_at", "finished_at", "generated_at", "timestamp", "seconds"}


def submit(http: httpx.Client, path: Path, options: dict | None = None, *, name: str | None = None,
           headers: dict[str, str] | None = None, url: str = "/v1/jobs", **params: Any) -> httpx.Response:
    """POST a multipart upload of ``path`` (options as the JSON form field)."""
    data = {"options": json.dumps(options)} if options is not None else None
    with open(path, "rb") as f:
        return http.post(url, files={"file": (name or path.name, f, "application/octet-stream")},
                         data=data, headers=headers, params=params or None)


def accepted(response: httpx.Response) -> dict:
    assert response.status_code == 202, response.text
    return response.json()


def error_code(response: httpx.Response) -> str:
    return response.json()["error"]["code"]


def get_job(http: httpx.Client, job_id: str, wait: float = 0) -> dict:
    r = http.get(f"/v1/jobs/{job_id}", params={"wait": wait} if wait else None, timeout=wait + 30)
    assert r.status_code == 200, r.text
    return r.json()


def wait_for(http: httpx.Client, job_id: str, done, timeout: float = WAIT_TIMEOUT_S,
             seen: list[dict] | None = None) -> dict:
    """Long-poll the job until ``done(job)`` holds (or it is terminal and
    never will); every answer is appended to ``seen``."""
    deadline = time.monotonic() + timeout
    while True:
        job = get_job(http, job_id, wait=5)
        if seen is not None:
            seen.append(job)
        if done(job) or job["state"] in TERMINAL:
            return job
        assert time.monotonic() < deadline, f"job {job_id} still {job['state']} ({job['pages_done']} pages)"


def wait_terminal(http: httpx.Client, job_id: str, timeout: float = WAIT_TIMEOUT_S,
                  seen: list[dict] | None = None) -> dict:
    return wait_for(http, job_id, lambda j: j["state"] in TERMINAL, timeout, seen)


def wait_logged(server, text: str, count: int = 1, timeout: float = WAIT_TIMEOUT_S) -> None:
    """Wait until ``server``'s log holds ``text`` ``count`` times: a line
    logged after the state change a client sees (the reconciler writes the
    job's end, then says so) may come a moment after that state."""
    deadline = time.monotonic() + timeout
    while server.log_text().count(text) < count:
        assert time.monotonic() < deadline, f"{text!r} logged fewer than {count} times:\n{server.log_text()[-3000:]}"
        time.sleep(0.2)


def without_volatile(value: Any) -> Any:
    """``value`` with timings and timestamps removed at every depth."""
    if isinstance(value, dict):
        return {k: without_volatile(v) for k, v in value.items() if k not in VOLATILE_KEYS}
    if isinstance(value, list):
        return [without_volatile(v) for v in value]
    return value


def list_jobs(server, key: str) -> httpx.Response:
    """``GET /v1/jobs`` with ``key``, on a served or an in-process server."""
    with server.http(key) as http:
        return http.get("/v1/jobs")


def wait_refused(server, key: str, timeout: float) -> httpx.Response:
    """The first answer to ``key`` that is not 200 (``GET /v1/jobs`` polled
    until then, for at most ``timeout`` seconds): a key running out."""
    deadline = time.monotonic() + timeout
    while True:
        r = list_jobs(server, key)
        if r.status_code != 200 or time.monotonic() > deadline:
            return r
        time.sleep(0.2)


# -- raw sockets: what a slow or hostile client sees -------------------------------


def connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    """A plain TCP connection to ``port`` on 127.0.0.1 from ``source`` (any
    127.x address: another client address to the server)."""
    return socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))


def closed_by_server(sock: socket.socket, timeout: float) -> bool:
    """Whether the server closes ``sock`` within ``timeout`` (whatever it
    sends first)."""
    deadline = time.monotonic() + timeout
    try:
        while (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            if sock.recv(65536) == b"":
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        pass
    return False


def raw_response(sock: socket.socket, timeout: float) -> tuple[int, dict[str, str], bytes]:
    """Status, headers (lower-cased names) and body (by its Content-Length)
    of one response read from ``sock``."""
    sock.settimeout(timeout)
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        assert chunk, f"closed before a response: {buf!r}"
        buf += chunk
    head, body = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    while len(body) < int(headers.get("content-length", 0)):
        chunk = sock.recv(65536)
        assert chunk, "closed in the middle of the response body"
        body += chunk
    return int(lines[0].split()[1]), headers, body
