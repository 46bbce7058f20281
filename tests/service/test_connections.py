"""The served listener's connections, in process: uvicorn with longdoc's
protocol class on a socket bound as ``longdoc serve`` binds it."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import uvicorn

from longdoc.service.connections import ConnectionPolicy, guarded_protocol
from longdoc.service.listeners import _bind
from tests.service.helpers import closed_by_server

HEAD_S = 1.0     # the head deadline of the servers here
SLACK_S = 1.5    # a deadline's close may come this much later (a loaded 2-core machine)


async def _app(scope, receive, send):
    if scope["type"] != "http":
        return
    if scope["path"] == "/busy":  # answers once /release is asked (or after 10 s)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(_released.wait(), 10)
    if scope["path"] == "/release":
        _released.set()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"ok"})


_released = asyncio.Event()


@contextlib.contextmanager
def _serving(protocol: type, keep_alive_s: int = 5) -> Iterator[int]:
    """``_app`` served with ``protocol`` on a port of 127.0.0.1 (yielded)."""
    global _released
    sock = _bind("127.0.0.1", 0, "public")
    server = uvicorn.Server(uvicorn.Config(_app, http=protocol, log_config=None, lifespan="off",
                                           timeout_keep_alive=keep_alive_s))

    async def serve() -> None:
        global _released
        _released = asyncio.Event()  # of this loop
        await server.serve(sockets=[sock])

    thread = threading.Thread(target=lambda: asyncio.run(serve()), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
            time.sleep(0.02)
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)


def _status(sock: socket.socket, timeout: float = 5) -> int:
    sock.settimeout(timeout)
    buf = b""
    while b"\r\n" not in buf:
        chunk = sock.recv(65536)
        assert chunk, f"closed before a response: {buf!r}"
        buf += chunk
    return int(buf.split(b" ", 2)[1])


def test_every_connection_sends_without_waiting_for_acks():
    """Kept-alive connections get TCP_NODELAY: uvicorn writes a response's
    head and body apart, and without it the body of every request after a
    connection's first waited ~40 ms for the client's delayed ACK. (asyncio
    sets the option only on sockets made with IPPROTO_TCP, which the
    listening socket's accepted sockets are not.)"""
    seen: list[int] = []

    class Probe(guarded_protocol(ConnectionPolicy(100, 0, 5.0, 5.0))):
        def connection_made(self, transport):
            super().connection_made(transport)
            seen.append(transport.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    assert _bind("127.0.0.1", 0, "public").proto == 0  # what accepted sockets inherit: asyncio leaves Nagle on
    with _serving(Probe) as port, httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
        assert [client.get("/").text for _ in range(3)] == ["ok"] * 3     # one kept-alive connection
    assert seen == [1]


def test_on_a_kept_alive_connection_the_head_deadline_runs_from_the_requests_first_byte():
    """After a response the connection may idle (keep-alive timer); once
    the next request's first byte arrives, its head must be complete within
    the head deadline however the rest trickles in."""
    with (
        _serving(guarded_protocol(ConnectionPolicy(100, 0, HEAD_S, HEAD_S)), keep_alive_s=5) as port,
        socket.create_connection(("127.0.0.1", port), timeout=5) as sock,
    ):
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _status(sock) == 200
        time.sleep(0.5)  # idle, within keep-alive
        sock.sendall(b"GET / HTTP/1.1\r\n")
        began = time.monotonic()
        while not closed_by_server(sock, 0.3):
            assert time.monotonic() - began < HEAD_S + SLACK_S, "the trickled head was never cut"
            sock.sendall(b"X-Drip: a\r\n")
        assert time.monotonic() - began >= HEAD_S - 0.2


def test_at_the_caps_the_connection_waiting_longest_for_its_head_gives_way_and_busy_ones_do_not():
    """Per address (2 here) and per listener (3): a new connection closes
    a connection of that scope waiting for a request head (a new or
    kept-alive idle one: the longest waiting, of the address holding the
    most connections) and is served; when every connection of the scope is
    busy with a request, the new one is answered 503 too_many_connections."""
    policy = ConnectionPolicy(3, 2, 30.0, 30.0)
    with _serving(guarded_protocol(policy)) as port:
        def connect(source: str) -> socket.socket:
            return socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))

        a1, a2 = connect("127.0.0.2"), connect("127.0.0.2")
        a2.sendall(b"GET / HTTP/1.1\r\n")            # half a head: waiting too, but since later
        time.sleep(0.2)
        a3 = connect("127.0.0.2")                   # the address's third: a1, waiting longest, gives way
        assert closed_by_server(a1, 2)
        a3.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _status(a3) == 200
        b1 = connect("127.0.0.3")
        b1.sendall(b"GET /busy HTTP/1.1\r\nHost: x\r\n\r\n")   # busy: never gives way
        time.sleep(0.2)
        c1 = connect("127.0.0.4")                   # the listener's fourth: a2 (waiting longest) gives way
        assert closed_by_server(a2, 2)
        c1.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _status(c1) == 200
        b2 = connect("127.0.0.3")                   # a3, kept alive and idle since its answer, gives way
        assert closed_by_server(a3, 2)
        b2.sendall(b"GET /busy HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(0.2)
        b3 = connect("127.0.0.3")                   # both of the address's connections busy: refused
        assert _status(b3) == 503 and closed_by_server(b3, 2)
        assert policy.refused == 1 and policy.evicted == 3
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:   # c1 gives way to it
            assert client.get("/release").status_code == 200
        assert _status(b1) == 200 and _status(b2) == 200
        for s in (a1, a2, a3, b1, b2, b3, c1):
            s.close()
