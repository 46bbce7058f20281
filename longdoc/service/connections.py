"""Connection hygiene: what a connection may cost before it is a request.

uvicorn's HTTP/1.1 protocol (h11) times out idle keep-alive connections but
nothing else: a client that connects and sends nothing, or half a request
head, or a body one byte a minute, holds a file descriptor for ever, and
enough of them exhaust the process (every request then times out). The
protocol class :func:`guarded_protocol` builds adds, per connection:

- a **head timeout**: the request head must be complete within
  ``service.header_timeout_seconds`` of the connection opening (or of the
  previous response on a keep-alive connection), else it is closed;
- a **body timeout**: while a request body is being received, a pause
  longer than ``service.body_timeout_seconds`` closes the connection (the
  application sees a disconnect); time the server itself spends not reading
  (flow control) does not count;
- **connection limits**: past ``service.max_connections`` open connections in
  all, or ``service.max_connections_per_client`` from one address, a new
  connection is answered ``503 too_many_connections`` with ``Retry-After``
  and closed at once, so the process never runs out of descriptors.

Idle keep-alive connections still close after
``service.keep_alive_timeout_seconds`` (uvicorn's own timer).

Every connection also gets ``TCP_NODELAY``. asyncio sets it only on sockets
created with ``IPPROTO_TCP`` as their protocol, and the listening socket
(``socket.create_server``, protocol 0) hands out accepted sockets without
it: uvicorn writes a response's head and body separately, so on a kept-alive
connection the body waited for the client's delayed ACK, and every request
after a connection's first took 40 ms more (measured: 44 ms against 4 ms
for ``/healthz``).
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from longdoc.config import ServiceSettings
from longdoc.errors import TooManyConnections

#: descriptors kept free for files, database connections and workers
RESERVED_FDS = 256


@dataclass
class ConnectionPolicy:
    """Limits shared by every connection of one server, plus the
    per-address bookkeeping (touched only on the event loop)."""

    max_connections: int
    max_per_client: int  # 0 = no per-address limit
    header_timeout_s: float
    body_timeout_s: float
    per_client: Counter[str] = field(default_factory=Counter)
    refused: int = 0

    @classmethod
    def from_settings(cls, service: ServiceSettings, open_files_limit: int) -> ConnectionPolicy:
        """The policy for ``service`` settings, with the connection cap kept
        :data:`RESERVED_FDS` below the process's open-files limit."""
        cap = max(16, min(service.max_connections, open_files_limit - RESERVED_FDS))
        return cls(cap, service.max_connections_per_client, service.header_timeout_seconds,
                   service.body_timeout_seconds)


def guarded_protocol(policy: ConnectionPolicy) -> type[H11Protocol]:
    """An h11 protocol class enforcing ``policy`` (give it to uvicorn as
    ``http=``)."""

    class GuardedH11Protocol(H11Protocol):
        _policy = policy

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._timer: asyncio.TimerHandle | None = None
            self._peer: str | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            _no_delay(transport)
            super().connection_made(transport)
            self._peer = self.client[0] if self.client else None
            if self._over_limit():
                self._policy.refused += 1
                self._peer = None  # not counted: refused before it was a client
                _refuse(transport)
                return
            if self._peer is not None:
                self._policy.per_client[self._peer] += 1
            self._arm(self._policy.header_timeout_s)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            if self._peer is not None:
                counts = self._policy.per_client
                counts[self._peer] -= 1
                if counts[self._peer] <= 0:
                    del counts[self._peer]
                self._peer = None
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            self._disarm()
            super().data_received(data)
            self._arm_for_state()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm_for_state()

        # -- timers ----------------------------------------------------------

        def _over_limit(self) -> bool:
            if len(self.connections) > self._policy.max_connections:
                return True
            cap = self._policy.max_per_client
            return bool(cap) and self._peer is not None and self._policy.per_client[self._peer] >= cap

        def _arm_for_state(self) -> None:
            """Head timeout while a request head is awaited, body timeout
            while a body is; nothing while the application answers."""
            if self.transport.is_closing():
                return
            state = self.conn.their_state
            if state is h11.SEND_BODY:
                self._arm(self._policy.body_timeout_s)
            elif state is h11.IDLE and (self.cycle is None or self.cycle.response_complete):
                if self.timeout_keep_alive_task is None:  # keep-alive idling has its own timer
                    self._arm(self._policy.header_timeout_s)

        def _arm(self, seconds: float) -> None:
            self._disarm()
            self._timer = self.loop.call_later(seconds, self._expired)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _expired(self) -> None:
            self._timer = None
            if self.transport.is_closing():
                return
            if self.flow.read_paused:  # the server is not reading: not the client's pause
                self._arm_for_state()
                return
            if self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
                self.transport.close()

    return GuardedH11Protocol


def _no_delay(transport: asyncio.BaseTransport) -> None:
    """Send what is written at once (no Nagle wait for the peer's ACK)."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _refuse(transport: asyncio.Transport) -> None:
    error = TooManyConnections("The server has too many open connections.", retry_after=1)
    body = json.dumps({"error": error.to_dict()}).encode()
    head = (
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n"
        f"connection: close\r\ncontent-length: {len(body)}\r\n\r\n"
    ).encode()
    transport.write(head + body)
    transport.close()
