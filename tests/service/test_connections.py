"""The served listener's connections, in process: uvicorn with longdoc's
protocol class on a socket bound as ``longdoc serve`` binds it."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import httpx
import uvicorn

from longdoc.service.connections import ConnectionPolicy, guarded_protocol
from longdoc.service.listeners import _bind


async def _app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"ok"})


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

    sock = _bind("127.0.0.1", 0, "public")
    assert sock.proto == 0           # what the accepted sockets inherit: asyncio leaves them with Nagle on
    server = uvicorn.Server(uvicorn.Config(_app, http=Probe, log_config=None, lifespan="off"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
            time.sleep(0.02)
        port = sock.getsockname()[1]
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
            assert [client.get("/").text for _ in range(3)] == ["ok"] * 3     # one kept-alive connection
        assert seen == [1]
    finally:
        server.should_exit = True
        thread.join(10)
