"""Connection hygiene: what a connection may cost before it is a request.

uvicorn's HTTP/1.1 protocol (h11) times out idle keep-alive connections but
nothing else: a client that connects and sends nothing, or half a request
head, or a body one byte a minute, holds a file descriptor for ever, and
enough of them exhaust the process (every request then times out). The
protocol class :func:`guarded_protocol` builds adds, per connection::

    open ──► awaiting head ──► body ──► answering ──► (keep-alive idle) ──► awaiting head ...
             head deadline     pause + min rate        uvicorn's timer     from its first byte

- a **head deadline**: the request head must be complete within
  ``service.header_timeout_seconds`` of the connection opening (with TLS:
  of the end of the handshake) or, on a kept-alive connection, of the
  request's first byte (the idle wait before it is uvicorn's keep-alive
  timer). The deadline is absolute: bytes arriving do not move it, so a
  client dripping one header line every few seconds is closed on time;
- a **body deadline**: while a request body is being received, a pause
  longer than ``service.body_timeout_seconds`` closes the connection (the
  application sees a disconnect), and so does a body slower on average than
  ``service.body_min_bytes_per_second``: reading it may take
  ``body_timeout_seconds + bytes received / body_min_bytes_per_second``.
  Time the server itself spends not reading (flow control) counts for
  neither;
- **an unread body is not waited for**: once a response is complete while
  its request's body is still arriving (a refusal, a 404), the connection is
  closed instead of reading the rest to keep it alive;
- **connection limits**: past ``service.max_connections`` open connections
  on a listener, or ``service.max_connections_per_client`` from one
  address, a new connection first takes the place of a connection waiting
  for a request head (a new or kept-alive idle connection), which is
  closed: at the address's limit its own that has waited longest; at the
  listener's, the one that has waited longest of the address holding the
  most connections. Only when none is waiting (every connection is busy
  with a request) is the new one answered
  ``503 too_many_connections`` with ``Retry-After`` and closed at once. So
  connections that send nothing, or drip their head, cannot keep a client
  with a request to make out, and the process never runs out of
  descriptors;
- **one body length**: a request head with ``Content-Length`` and
  ``Transfer-Encoding``, or ``Content-Length`` more than once (or as a
  list), is answered ``400 ambiguous_request_length`` and the connection
  closed, before the application sees it (a proxy in front could frame the
  body differently: request smuggling). Any other head h11 cannot parse is
  answered ``400 malformed_request`` in the same JSON envelope.

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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import h11
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.h11_impl import H11Protocol

from longdoc.config import ServiceSettings
from longdoc.errors import AmbiguousRequestLength, LongdocError, MalformedRequest, TooManyConnections

#: descriptors kept free for files, database connections and workers
RESERVED_FDS = 256


@dataclass
class ConnectionPolicy:
    """Limits shared by every connection of one server, plus the
    per-address bookkeeping and the connections awaiting a request head,
    longest waiting first (touched only on the event loop)."""

    max_connections: int
    max_per_client: int  # 0 = no per-address limit
    header_timeout_s: float
    body_timeout_s: float
    body_min_bytes_per_s: float = 16384
    per_client: Counter[str] = field(default_factory=Counter)
    waiting: dict[Any, None] = field(default_factory=dict)
    refused: int = 0
    evicted: int = 0

    @classmethod
    def from_settings(cls, service: ServiceSettings, open_files_limit: int) -> ConnectionPolicy:
        """The policy for ``service`` settings, with the connection cap kept
        :data:`RESERVED_FDS` below the process's open-files limit."""
        cap = max(16, min(service.max_connections, open_files_limit - RESERVED_FDS))
        return cls(cap, service.max_connections_per_client, service.header_timeout_seconds,
                   service.body_timeout_seconds, service.body_min_bytes_per_second)

    def victim(self, matches: Callable[[Any], bool]) -> Any | None:
        """Of the connections awaiting a request head that ``matches``
        accepts, the one that has waited longest among those of the address
        holding the most connections; None when there is none. (By address
        first: a client that reconnects each time one of its connections is
        closed then only ever closes its own, never a newcomer's before its
        head has arrived.)"""
        best, most = None, -1
        for c in self.waiting:
            if matches(c) and not c.transport.is_closing():
                held = self.per_client.get(c._peer, 0) if c._peer is not None else 0
                if held > most:
                    best, most = c, held
        return best


def guarded_protocol(policy: ConnectionPolicy) -> type[H11Protocol]:
    """An h11 protocol class enforcing ``policy`` (give it to uvicorn as
    ``http=``)."""

    class GuardedH11Protocol(H11Protocol):
        _policy = policy
        conn: FramedConnection
        flow: TimedFlow

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            size = self.config.h11_max_incomplete_event_size
            self.conn = FramedConnection(h11.SERVER, **({} if size is None else {"max_incomplete_event_size": size}))
            self._timer: asyncio.TimerHandle | None = None
            self._timer_at = 0.0
            self._peer: str | None = None
            self._first = True                       # no request head completed yet
            self._head_deadline: float | None = None  # loop time the awaited head must be complete by
            self._body_started: float | None = None
            self._last_byte_at = 0.0

        # a stream's transport is a Transport (the base class says BaseTransport)
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            _no_delay(transport)
            super().connection_made(transport)
            self.flow = TimedFlow(transport, self.loop, on_resume=self._sync)
            self._peer = self.client[0] if self.client else None
            if not self._admit():
                self._policy.refused += 1
                self._peer = None  # not counted: refused before it was a client
                self.connections.discard(self)
                _answer(transport, TooManyConnections("The server has too many open connections.", retry_after=1))
                return
            if self._peer is not None:
                self._policy.per_client[self._peer] += 1
            self._sync()

        def connection_lost(self, exc: Exception | None) -> None:
            self._release()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            self._last_byte_at = self.loop.time()
            super().data_received(data)
            self._sync()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self.conn.their_state is h11.SEND_BODY and not self.transport.is_closing():
                self.transport.close()  # the answer is sent; the rest of the body is not wanted
            self._sync()

        def send_400_response(self, msg: str) -> None:
            """An unparseable request head: answered in longdoc's JSON
            envelope (uvicorn's is plain text), the connection closed."""
            if self.cycle is not None and self.cycle.response_started and not self.cycle.response_complete:
                self.transport.close()  # mid-answer: nothing more can be said
                return
            _answer(self.transport, self.conn.refusal or MalformedRequest("The request is not valid HTTP/1.1."))

        # -- admission -------------------------------------------------------

        def _admit(self) -> bool:
            """Room for this connection, made by closing a connection
            awaiting a request head (:meth:`ConnectionPolicy.victim`: of
            this address at its limit, then of this listener at its limit);
            False when every one is busy with a request."""
            policy, peer = self._policy, self._peer
            at_limit = policy.max_per_client and peer is not None and policy.per_client[peer] >= policy.max_per_client
            if at_limit and not self._evict(lambda c: c._peer == peer):
                return False
            if len(self.connections) > policy.max_connections:
                return self._evict(lambda c: c.connections is self.connections)
            return True

        def _evict(self, matches: Callable[[Any], bool]) -> bool:
            victim = self._policy.victim(matches)
            if victim is None:
                return False
            self._policy.evicted += 1
            victim._release()
            victim.connections.discard(victim)
            victim.transport.close()
            return True

        def _release(self) -> None:
            """Out of every count (idempotent): closed, or being closed."""
            self._disarm()
            self._policy.waiting.pop(self, None)
            if self._peer is not None:
                counts = self._policy.per_client
                counts[self._peer] -= 1
                if counts[self._peer] <= 0:
                    del counts[self._peer]
                self._peer = None

        # -- deadlines -------------------------------------------------------

        def _awaiting_head(self) -> bool:
            return self.conn.their_state is h11.IDLE and (self.cycle is None or self.cycle.response_complete)

        def _sync(self) -> None:
            """Bring the phase's bookkeeping up to date after anything that
            may change it, and arm the timer for its deadline."""
            if self.transport is None or self.transport.is_closing():
                self._release()
                return
            now = self.loop.time()
            if self._awaiting_head():
                if self not in self._policy.waiting:
                    self._policy.waiting[self] = None
                if self._head_deadline is None and (self._first or self.conn.trailing_data[0]):
                    self._head_deadline = now + self._policy.header_timeout_s  # else: keep-alive idle
            else:
                self._policy.waiting.pop(self, None)
                self._head_deadline = None
                self._first = False
            if self.conn.their_state is h11.SEND_BODY:
                if self._body_started is None:
                    self._body_started = self._last_byte_at = now
                    self.flow.count_from(now)
            else:
                self._body_started = None
            due = self._due(now)
            if due is not None:
                self._arm(due)

        def _due(self, now: float) -> float | None:
            """When the connection is to be closed as things stand, or None."""
            if self._head_deadline is not None:
                return self._head_deadline
            if self._body_started is None or self.flow.read_paused:
                return None  # not receiving a body, or the server is not reading: nothing due
            policy = self._policy
            pause_due = max(self._last_byte_at, self.flow.resumed_at) + policy.body_timeout_s
            reading_s = now - self._body_started - self.flow.paused_s
            allowed_s = policy.body_timeout_s + self.conn.body_bytes / policy.body_min_bytes_per_s
            return min(pause_due, now + allowed_s - reading_s)

        def _arm(self, at: float) -> None:
            """Call :meth:`_expired` at ``at`` (a timer due earlier stays: it
            looks again when it fires)."""
            if self._timer is not None and self._timer_at <= at:
                return
            self._disarm()
            self._timer, self._timer_at = self.loop.call_at(at, self._expired), at

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _expired(self) -> None:
            self._timer = None
            if self.transport.is_closing():
                return
            now = self.loop.time()
            due = self._due(now)
            if due is None:
                return
            if due <= now:
                self._release()
                self.transport.close()
            else:
                self._arm(due)

    return GuardedH11Protocol


class FramedConnection(h11.Connection):
    """h11's server side, refusing a request head that gives its body's
    length two ways (:func:`framing_problem`) before h11 reads it (h11 lets
    ``Transfer-Encoding`` win over ``Content-Length`` and merges equal
    ``Content-Length`` headers), and counting the body bytes of the
    current request."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.refusal: LongdocError | None = None
        self.body_bytes = 0

    def next_event(self) -> Any:
        if self.their_state is h11.IDLE and self.refusal is None:
            problem = framing_problem(self.trailing_data[0])
            if problem is not None:
                self.refusal = AmbiguousRequestLength(problem)
                raise h11.RemoteProtocolError(problem)
        event = super().next_event()
        if isinstance(event, h11.Request):
            self.body_bytes = 0
        elif isinstance(event, h11.Data):
            self.body_bytes += len(event.data)
        return event


def framing_problem(received: bytes) -> str | None:
    """What makes the request head at the start of ``received`` ambiguous
    about its body's length, or None (also while the head is incomplete).
    Lines end with LF or CRLF, as h11 reads them; a folded line is no field
    of its own."""
    ends = [i for i in (received.find(b"\n\r\n"), received.find(b"\n\n")) if i >= 0]
    if not ends:
        return None
    lengths, chunked = 0, False
    for line in received[:min(ends)].split(b"\n")[1:]:
        name, colon, value = line.partition(b":")
        if not colon or name[:1] in (b" ", b"\t"):
            continue
        name = name.strip().lower()
        if name == b"content-length":
            lengths += 1 + value.count(b",")
        elif name == b"transfer-encoding":
            chunked = True
    if lengths > 1:
        return "The request gives Content-Length more than once."
    if lengths and chunked:
        return "The request gives both Content-Length and Transfer-Encoding."
    return None


class TimedFlow(FlowControl):
    """uvicorn's flow control, also keeping how long the server has not
    been reading (``paused_s``, reset by the protocol when a body starts)
    and when it last resumed; ``on_resume`` is called when it does."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop,
                 on_resume: Callable[[], None]) -> None:
        super().__init__(transport)
        self._loop, self._on_resume = loop, on_resume
        self.paused_s = 0.0
        self.resumed_at = 0.0
        self._paused_at = 0.0

    def count_from(self, now: float) -> None:
        """Count time not reading from ``now`` on (a body begins)."""
        self.paused_s, self._paused_at = 0.0, now

    def pause_reading(self) -> None:
        if not self.read_paused:
            self._paused_at = self._loop.time()
        super().pause_reading()

    def resume_reading(self) -> None:
        was_paused = self.read_paused
        super().resume_reading()
        if was_paused:
            self.resumed_at = self._loop.time()
            self.paused_s += self.resumed_at - self._paused_at
            self._on_resume()


def _no_delay(transport: asyncio.BaseTransport) -> None:
    """Send what is written at once (no Nagle wait for the peer's ACK)."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _answer(transport: asyncio.Transport, error: LongdocError) -> None:
    """``error`` in the JSON envelope, written straight to the transport
    (no request to answer, or none h11 could read), and the connection
    closed."""
    body = json.dumps({"error": error.to_dict()}).encode()
    retry = f"retry-after: {error.context['retry_after']}\r\n" if "retry_after" in error.context else ""
    head = (
        f"HTTP/1.1 {error.http_status} {_REASONS.get(error.http_status, 'Error')}\r\n"
        f"content-type: application/json\r\n{retry}connection: close\r\ncontent-length: {len(body)}\r\n\r\n"
    ).encode()
    transport.write(head + body)
    transport.close()


_REASONS = {400: "Bad Request", 503: "Service Unavailable"}
