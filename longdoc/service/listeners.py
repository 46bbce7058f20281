"""How ``longdoc serve`` listens: one app, one container, one or two
listeners (uvicorn servers) on one event loop.

::

                          public listener           admin listener
                          service.host:port         service.admin_host:admin_port
                                                    (only with service.admin_port)
    /admin, /admin/...    404                       served (admin token)
    /healthz              served                    served
    everything else       served                    404

Without ``service.admin_port`` the one listener serves everything, /admin
included. Which listener a request came in on is marked in its scope by
:func:`~longdoc.service.app.on_admin_listener` and acted on by
:class:`~longdoc.service.app.AdminApart`. Wherever /admin is served,
:class:`~longdoc.service.app.AdminGate` checks the admin token before a byte
of the body is read.

Every listener speaks the same protocol: plain HTTP, or with
``service.tls_certfile`` HTTPS only (HTTP/1.1 over TLS; a plain-HTTP request
fails the TLS handshake and gets no answer), with ``service.tls_client_ca``
mutual TLS. The connection limits and deadlines
(:mod:`longdoc.service.connections`) apply on each listener (one policy: an
address's connections to both count together): the request head is timed
from the end of the TLS handshake, and the handshake itself must finish
within ``service.header_timeout_seconds`` (asyncio's default is 60 s).

Both sockets are bound before the application starts, so a port in use is a
:class:`~longdoc.errors.ConfigError` and nothing was started. The first
SIGTERM or SIGINT begins the container's shutdown (intake stops, running
tasks checkpoint), then every listener shuts down gracefully; the signal is
raised again once all have, as uvicorn does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import uvicorn
from fastapi import FastAPI
from starlette.types import ASGIApp

from longdoc.config import Settings
from longdoc.errors import ConfigError
from longdoc.service.app import on_admin_listener
from longdoc.service.connections import ConnectionPolicy, guarded_protocol
from longdoc.tls import server_context

log = logging.getLogger("longdoc.service")

SIGNALS = (signal.SIGINT, signal.SIGTERM)
GRACEFUL_SHUTDOWN_S = 10
BACKLOG = 2048


def serve(settings: Settings, app: FastAPI, policy: ConnectionPolicy) -> None:
    """Run ``app`` on its listeners until SIGTERM/SIGINT (see the module
    docstring). Raises ConfigError when a TLS file does not load or a port
    cannot be bound, before the application starts."""
    service = settings.service
    context = (server_context(service.tls_certfile, service.tls_keyfile, service.tls_client_ca)
               if service.tls_certfile and service.tls_keyfile else None)
    listeners: list[tuple[str, str, int, ASGIApp]] = [("public", service.host, service.port, app)]
    if service.admin_port is not None:
        listeners.append(("admin", service.admin_host, service.admin_port, on_admin_listener(app)))
    sockets = [_bind(host, port, name) for name, host, port, _ in listeners]
    servers = [_Listener(uvicorn.Config(
        asgi, http=guarded_protocol(policy), timeout_keep_alive=service.keep_alive_timeout_seconds,
        log_config=None, timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S, access_log=False,
        lifespan="on" if i == 0 else "off",  # the container starts and stops once, with the public listener
        ssl_context_factory=(lambda config, default: context) if context is not None else None,
    )) for i, (_, _, _, asgi) in enumerate(listeners)]
    for (name, host, _, _), sock in zip(listeners, sockets, strict=True):
        log.info("listening", extra={"listener": name, "url": f"{'https' if context else 'http'}://{host}:"
                                     f"{sock.getsockname()[1]}", "client_certificates": bool(service.tls_client_ca)})

    def begin_shutdown() -> None:
        container = getattr(app.state, "container", None)
        if container is not None:
            container.begin_shutdown()

    with (
        _signals_to(servers, begin_shutdown),
        asyncio.Runner(loop_factory=lambda: _Loop(service.header_timeout_seconds)) as runner,
    ):
        runner.run(_serve(servers, sockets))


class _Listener(uvicorn.Server):
    """One listener; signals are taken for all of them by :func:`_signals_to`."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class _Loop(asyncio.SelectorEventLoop):
    """The event loop of ``longdoc serve``: a TLS handshake must finish within
    ``handshake_timeout_s`` (the head timeout), not asyncio's 60 s, so a
    client that connects and stalls the handshake is closed as one that
    stalls its request head is."""

    def __init__(self, handshake_timeout_s: float) -> None:
        super().__init__()
        self.handshake_timeout_s = handshake_timeout_s

    async def create_server(self, *args: Any, **kwargs: Any) -> asyncio.Server:
        if kwargs.get("ssl") is not None:
            kwargs.setdefault("ssl_handshake_timeout", self.handshake_timeout_s)
        return await super().create_server(*args, **kwargs)


async def _serve(servers: list[_Listener], sockets: list[socket.socket]) -> None:
    """The first listener (it runs the app's lifespan: the container) starts
    first; the others once it has, so no request reaches the app before its
    container exists."""
    first = asyncio.create_task(servers[0].serve(sockets=[sockets[0]]))
    while not servers[0].started and not first.done():
        await asyncio.sleep(0.05)
    others = [asyncio.create_task(s.serve(sockets=[sock])) for s, sock in zip(servers[1:], sockets[1:], strict=True)
              if servers[0].started]
    await asyncio.gather(first, *others)


@contextlib.contextmanager
def _signals_to(servers: list[_Listener], begin_shutdown: Callable[[], None]) -> Iterator[None]:
    """SIGINT and SIGTERM, while the listeners run, begin the shutdown and
    stop every listener (a second SIGINT forces it); once they have all
    stopped, the signals caught are raised again with the previous handlers
    back (the process then ends as that signal says)."""
    caught: list[int] = []

    def handle(sig: int, frame: FrameType | None) -> None:
        caught.append(sig)
        begin_shutdown()
        for server in servers:
            server.handle_exit(sig, frame)

    previous = {sig: signal.signal(sig, handle) for sig in SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    for number in reversed(caught):
        signal.raise_signal(number)


def _bind(host: str, port: int, listener: str) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        sock = socket.create_server((host, port), family=family, backlog=BACKLOG)
    except OSError as exc:
        keys = "service.host / service.port" if listener == "public" else "service.admin_host / service.admin_port"
        raise ConfigError(f"Cannot listen on {host}:{port} ({keys}): {exc.strerror or exc}.",
                          hint="Choose a free port and an address of this machine.") from exc
    return sock

