"""No client without a key can hold the service's connections or memory
(issue 35): a request head must be complete by an absolute deadline, a body
must keep a minimum rate, connections still waiting for their head give way
to new ones at the limits, /admin bodies are refused unread without the
admin token, and a head that frames its body two ways is refused. Every
test drives a real ``longdoc serve`` over 127.0.0.1."""

from __future__ import annotations

import re
import select
import socket
import threading
import time
from dataclasses import dataclass, field

import httpx
import psutil
import pytest

from tests.service.conftest import Server
from tests.service.helpers import closed_by_server, connect, raw_response

HEAD_S = 2.0            # service.header_timeout_seconds and body_timeout_seconds of the server here
SLACK_S = 1.5           # a deadline's close may come this much later (a loaded 2-core machine)
MAX_CONNECTIONS = 16    # the least service.max_connections may be
PER_CLIENT = 10
BIG_BODY = 256 * 2**20  # what an unauthenticated client declares and tries to send
RSS_SLACK = 20 * 2**20


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    """The default layout (/admin on the public listener) with short
    deadlines and connection caps low enough for a handful of clients to
    fill them."""
    server = _own(lambda: Server(tmp_path_factory.mktemp("server-slow"), service={
        "warmup": False, "header_timeout_seconds": HEAD_S, "body_timeout_seconds": HEAD_S,
        "max_connections": MAX_CONNECTIONS, "max_connections_per_client": PER_CLIENT}))
    yield server
    server.stop()


def _own(make, tries: int = 3) -> Server:
    """``make()`` started, checked to be the server answering on its port
    (it knows its own admin token): a test process beside this one may take
    the port between ``free_port``'s probe and the bind, and its server then
    answers the readiness probe. Tried again on a new port then."""
    for _ in range(tries):
        server = make()
        if not server.proc or server.proc.poll() is not None:
            server.start()
        r = httpx.get(f"{server.admin_url if server.config['service'].get('admin_port') else server.url}/admin/keys",
                      headers=server.admin_headers(), timeout=30)
        if server.proc.poll() is None and r.status_code == 200:
            return server
        server.stop()
    raise AssertionError(f"no server of this test's own answered in {tries} tries")


# --- raw sockets ------------------------------------------------------------------


def _rss(pid: int) -> int:
    return psutil.Process(pid).memory_info().rss


# --- heads ---------------------------------------------------------------------------


@dataclass
class Dripper:
    """A client that opens a connection and sends its request head one line
    every ``every_s``, again and again, for ``for_s``; it notes how long
    each of its connections lived."""

    port: int
    source: str
    every_s: float = 0.5
    for_s: float = 5.0
    lived_s: list[float] = field(default_factory=list)
    refused: int = 0

    def run(self) -> None:
        end = time.monotonic() + self.for_s
        while time.monotonic() < end:
            with connect(self.port, self.source) as sock:
                opened = time.monotonic()
                if self._drip(sock, end):
                    self.lived_s.append(time.monotonic() - opened)

    def _drip(self, sock: socket.socket, end: float) -> bool:
        """True when the server closed the connection (False: the test's time ran out)."""
        lines = [b"GET /healthz HTTP/1.1\r\n"] + [b"X-Drip-%d: a\r\n" % i for i in range(1000)]
        for line in lines:
            try:
                sock.sendall(line)
            except OSError:
                return True
            if time.monotonic() > end:
                return False
            sock.settimeout(self.every_s)
            try:
                got = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return True
            if got.startswith(b"HTTP/1.1 503"):
                self.refused += 1
            return True
        return False


def test_dripped_heads_are_cut_at_the_deadline_and_a_normal_client_is_served_throughout(srv):
    """Sixteen clients from two addresses drip their heads (a line every
    0.5 s, never finishing) and reconnect when closed, so the listener's 16
    connections and one address's 10 are always taken. Each of their
    connections is closed within the head deadline of opening (bytes
    arriving do not extend it), and a client with a request to make gets
    its place at once: every one of its requests is answered."""
    drippers = ([Dripper(srv.port, "127.0.0.2") for _ in range(PER_CLIENT)]
                + [Dripper(srv.port, "127.0.0.3") for _ in range(MAX_CONNECTIONS - PER_CLIENT)])
    threads = [threading.Thread(target=d.run, daemon=True) for d in drippers]
    for t in threads:
        t.start()
    time.sleep(0.5)  # every dripper connected: the caps are full
    statuses = []
    while any(t.is_alive() for t in threads):
        try:  # a new connection each time: it needs a place
            statuses.append(httpx.get(f"{srv.url}/healthz", timeout=5).status_code)
        except httpx.TransportError as exc:
            statuses.append(type(exc).__name__)
        time.sleep(0.2)
    for t in threads:
        t.join(10)
    lived = [s for d in drippers for s in d.lived_s]
    assert lived, "no dripping connection was ever closed"
    assert max(lived) < HEAD_S + SLACK_S, f"a dripping connection lived {max(lived):.1f} s"
    assert len(statuses) >= 10 and set(statuses) == {200}, statuses
    assert sum(d.refused for d in drippers) == 0  # room was made by closing waiting connections, not refusing


def test_a_head_deadline_counts_from_the_connection_opening_not_from_the_last_byte(srv):
    with connect(srv.port) as sock:
        opened = time.monotonic()
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")
        while not closed_by_server(sock, 0.4):
            assert time.monotonic() - opened < HEAD_S + SLACK_S, "the half-sent head was never cut"
            sock.sendall(b"X-Drip: a\r\n")
    assert time.monotonic() - opened >= HEAD_S - 0.2  # not before its time
    assert httpx.get(f"{srv.url}/healthz", timeout=5).status_code == 200


# --- bodies --------------------------------------------------------------------------


def test_a_body_dripped_below_the_minimum_rate_is_cut(srv):
    """An authenticated upload whose body comes a byte every 0.5 s (no
    pause as long as the body timeout) is closed once it is later than
    ``body_timeout_seconds + bytes / body_min_bytes_per_second``: here,
    ~2 s after its head."""
    key = srv.create_key("slow-body")
    with connect(srv.port) as sock:
        sock.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key.key.encode()
                     + b"\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: 100000\r\n\r\n")
        started = time.monotonic()
        while not closed_by_server(sock, 0.5):
            assert time.monotonic() - started < HEAD_S + SLACK_S, "the dripping body was never cut"
            try:
                sock.sendall(b"-")
            except OSError:
                break


# --- /admin ----------------------------------------------------------------------------


def _big_unauthenticated_admin_post(port: int, pid: int, headers: bytes = b"") -> None:
    """POST /admin/keys without a valid token, declaring a 256 MiB body and
    sending it as fast as the server takes it: answered 403 (with
    ``Connection: close``) before the body is read, the server's memory
    flat, the connection closed long before 256 MiB have gone."""
    with connect(port) as sock:  # first: whatever the first admin request loads
        sock.sendall(b"POST /admin/keys HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        assert raw_response(sock, 10)[0] == 403
    before = peak = _rss(pid)
    sent = 0
    stop = threading.Event()

    def send_body() -> None:
        nonlocal sent
        chunk = b"x" * 2**20
        try:
            while sent < BIG_BODY and not stop.is_set():
                sock.sendall(chunk)
                sent += len(chunk)
        except OSError:
            pass

    with connect(port) as sock:
        sock.sendall(b"POST /admin/keys HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + headers
                     + b"Content-Length: %d\r\n\r\n" % BIG_BODY)
        sender = threading.Thread(target=send_body, daemon=True)
        sender.start()
        try:
            status, answer, body = raw_response(sock, 30)
            while sender.is_alive():
                peak = max(peak, _rss(pid))
                sender.join(0.02)
        finally:
            stop.set()
            sender.join(30)
    peak = max(peak, _rss(pid))
    assert peak - before < RSS_SLACK, f"the server grew by {(peak - before) / 2**20:.0f} MiB"
    assert sent < BIG_BODY // 4, f"the server took {sent / 2**20:.0f} MiB of the body"
    assert status == 403 and answer.get("connection") == "close", (status, answer, body[:300])
    assert b'"admin_forbidden"' in body


def test_an_unauthenticated_admin_body_is_refused_unread_on_the_public_listener(srv):
    assert srv.proc is not None
    _big_unauthenticated_admin_post(srv.port, srv.proc.pid)
    _big_unauthenticated_admin_post(srv.port, srv.proc.pid, b"Authorization: Bearer wrong-token-wrong-token-wrong\r\n")


def test_an_unauthenticated_admin_body_is_refused_unread_on_the_admin_listener(start_server):
    from tests.conftest import free_port

    server = _own(lambda: start_server(service={"admin_port": free_port()}))
    assert server.proc is not None
    _big_unauthenticated_admin_post(int(server.admin_url.rsplit(":", 1)[1]), server.proc.pid)


def test_an_admin_body_over_its_cap_is_refused_with_413(srv):
    token = srv.admin_token.encode()
    with connect(srv.port) as sock:  # declared
        sock.sendall(b"POST /admin/keys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token
                     + b"\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n{\"tenant\"")
        status, headers, body = raw_response(sock, 10)
        assert status == 413 and headers.get("connection") == "close" and b'"body_too_large"' in body
    with connect(srv.port) as sock:  # chunked, cut off once past the cap
        sock.sendall(b"POST /admin/keys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token
                     + b"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        for _ in range(20):  # a client sends until the answer comes (the server stops reading at the cap)
            if select.select([sock], [], [], 0)[0]:
                break
            try:
                sock.sendall(b"4000\r\n" + b" " * 0x4000 + b"\r\n")
            except (BrokenPipeError, ConnectionResetError):
                break
        status, headers, body = raw_response(sock, 10)
        assert status == 413 and b'"body_too_large"' in body
    r = httpx.post(f"{srv.url}/admin/keys", json={"tenant": "small"}, headers=srv.admin_headers(), timeout=30)
    assert r.status_code == 201, r.text


# --- framing ---------------------------------------------------------------------------


@pytest.mark.parametrize("framing", [
    b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
    b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
    b"Content-Length: 5\r\nContent-Length: 5\r\n",
    b"Content-Length: 5\r\nContent-Length: 6\r\n",
    b"Content-Length: 5, 5\r\n",
], ids=["cl-te", "te-cl", "cl-cl", "cl-conflicting", "cl-list"])
def test_a_body_framed_two_ways_is_refused_and_the_connection_closed(srv, framing):
    with connect(srv.port) as sock:
        sock.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ld_wrong\r\n" + framing
                     + b"\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        status, headers, body = raw_response(sock, 10)
        assert status == 400 and headers.get("connection") == "close", (status, body)
        assert b'"ambiguous_request_length"' in body
        assert closed_by_server(sock, 5)  # the smuggled GET is never answered


def test_a_head_that_is_not_http_is_answered_in_the_json_envelope(srv):
    with connect(srv.port) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n")
        status, headers, body = raw_response(sock, 10)
        assert status == 400 and b'"malformed_request"' in body and headers.get("connection") == "close"


# --- /docs -----------------------------------------------------------------------------


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_the_api_docs_load_nothing_from_elsewhere(srv, page):
    """An air-gapped site has no CDN: every script, style and icon of the
    API docs comes from the server itself."""
    with httpx.Client(base_url=srv.url, timeout=30) as http:
        r = http.get(page)
        assert r.status_code == 200 and "text/html" in r.headers["content-type"]
        assert not re.search(r"https?://", r.text), re.findall(r"https?://[^\s\"']+", r.text)
        assets = re.findall(r"""(?:src|href)=["']([^"']+)["']""", r.text)
        assert len(assets) >= 2, r.text
        for asset in assets:
            assert asset.startswith("/"), asset
            assert http.get(asset).status_code == 200, asset
        assert http.get("/openapi.json").json()["info"]["title"] == "longdoc"
