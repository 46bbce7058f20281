"""A FAKE OpenAI-compatible model server for request tests: it records every
chat-completion body it is sent and answers with a canned text, on
loopback, from a thread of the test process (stdlib ``http.server``; no
model, no OCR).

    with RecordingServer(answer=lambda body, images: "text") as server:
        ...  # point the engine at server.url + "/v1"
        server.bodies  # the JSON bodies of POST /v1/chat/completions, in order

``answer`` gets the request body and its number of images and returns the
answer text (default: ``<PAGE>page i`` for each image of a request of
several, ``page 1`` for one). Streaming requests get the text in
``delta_chars``-character deltas, then a usage-only chunk
(``"choices": []``) when ``usage_chunk`` is set, then ``[DONE]``.

``finish`` (body, number of images) gives each answer's ``finish_reason``
(default ``"stop"``; ``"length"``: cut at ``max_tokens``).

``GET /v1/models`` lists one model, ``model`` (default ``recording-model``;
a recipe's served name, to compare a request's ``model`` with it), with
``max_model_len`` (default 32,768).

``reply`` (body, number of the request from 0) may answer otherwise: a
:class:`Reply` with an HTTP error status, headers (``Retry-After``) and a
message, or the answer trickled (``trickle_s`` between pieces of it, then
``stall_s`` of silence before the rest). ``times`` holds when each request
came (``time.monotonic()``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "recording-model"


def default_answer(body: dict[str, Any], images: int) -> str:
    if images > 1:
        return "".join(f"<PAGE>page {i}" for i in range(1, images + 1))
    return "page 1"


def image_urls(body: dict[str, Any]) -> list[str]:
    """The data URIs of a body's image parts, in order."""
    return [part["image_url"]["url"] for message in body["messages"] for part in message["content"]
            if isinstance(part, dict) and part.get("type") == "image_url"]


@dataclass
class Reply:
    """An answer other than the canned one: ``status`` ≥ 400 with
    ``message`` in an OpenAI-style error body and ``headers``; or (status
    200) the canned answer sent ``pieces`` bytes at a time, ``trickle_s``
    apart, going silent for ``stall_s`` after ``stall_after_s`` of it."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    message: str = "injected error"
    trickle_s: float = 0.0
    pieces: int = 8
    stall_after_s: float | None = None
    stall_s: float = 0.0


class RecordingServer:
    def __init__(self, answer: Callable[[dict[str, Any], int], str] = default_answer, delta_chars: int = 16,
                 usage_chunk: bool = False, reply: Callable[[dict[str, Any], int], Reply | None] | None = None,
                 finish: Callable[[dict[str, Any], int], str] = lambda body, images: "stop",
                 model: str = MODEL, max_model_len: int = 32768) -> None:
        self.answer = answer
        self.model = model
        self.max_model_len = max_model_len
        self.finish = finish
        self.delta_chars = delta_chars
        self.usage_chunk = usage_chunk
        self.reply = reply
        self.bodies: list[dict[str, Any]] = []
        self.times: list[float] = []
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> RecordingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)

    def record(self, body: dict[str, Any]) -> int:
        """Keep ``body``; returns its number (from 0)."""
        with self._lock:
            self.bodies.append(body)
            self.times.append(time.monotonic())
            return len(self.bodies) - 1

    def images_per_request(self) -> list[int]:
        return [len(image_urls(b)) for b in self.bodies]

    def events(self, text: str, finish: str) -> list[bytes]:
        chunks = [text[i:i + self.delta_chars] for i in range(0, len(text), self.delta_chars)]
        events = [{"choices": [{"index": 0, "delta": {"content": c}, "finish_reason": None}]} for c in chunks]
        events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if self.usage_chunk:
            events.append({"choices": [], "usage": {"prompt_tokens": 300, "completion_tokens": len(chunks)}})
        return [f"data: {json.dumps(e)}\n\n".encode() for e in events] + [b"data: [DONE]\n\n"]


def _handler(server: RecordingServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # quiet
            pass

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/v1/models":
                self._json(200, {"object": "list", "data": [{"id": server.model,
                                                             "max_model_len": server.max_model_len}]})
            elif self.path == "/health":
                self._json(200, {"status": "ok"})
            else:
                self._json(404, {"error": "not found"})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            number = server.record(body)
            reply = server.reply(body, number) if server.reply is not None else None
            if reply is not None and reply.status >= 400:
                data = json.dumps({"object": "error", "message": reply.message, "code": reply.status}).encode()
                self.send_response(reply.status)
                for name, value in {"Content-Type": "application/json", **reply.headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            text = server.answer(body, len(image_urls(body)))
            finish = server.finish(body, len(image_urls(body)))
            if not body.get("stream"):
                completion = {"object": "chat.completion", "model": server.model, "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}]}
                if reply is None:
                    self._json(200, completion)
                    return
                data = json.dumps(completion).encode()
                step = max(1, -(-len(data) // reply.pieces))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self._trickle([data[i:i + step] for i in range(0, len(data), step)], reply)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunked = [f"{len(e):x}\r\n".encode() + e + b"\r\n" for e in server.events(text, finish)]
            if reply is None:
                for piece in chunked:
                    self.wfile.write(piece)
            elif not self._trickle(chunked, reply):
                return
            self.wfile.write(b"0\r\n\r\n")

        def _trickle(self, pieces: list[bytes], reply: Reply) -> bool:
            """Write ``pieces`` as ``reply`` says; False once the client has gone."""
            start = time.monotonic()
            stalled = False
            try:
                for piece in pieces:
                    self.wfile.write(piece)
                    self.wfile.flush()
                    time.sleep(reply.trickle_s)
                    if (not stalled and reply.stall_after_s is not None
                            and time.monotonic() - start >= reply.stall_after_s):
                        stalled = True
                        time.sleep(reply.stall_s)
            except OSError:  # the client closed the connection
                return False
            return True

    return Handler
