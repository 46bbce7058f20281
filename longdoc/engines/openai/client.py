"""The HTTP side of the ``openai`` engine: one chat-completion request, with
retries, streaming and the server's facts (``/v1/models``).

Each failure is of one kind, handled as a fleet of model servers needs::

    busy       429, 503              waited out: the server's Retry-After (seconds or an
                                     HTTP date), else a capped exponential backoff with
                                     jitter, within the group's busy_wait_seconds; then
                                     RequestFailed("busy")
    transient  500, 502, 504, a      retried ``inference.openai.retries`` times with a
               dropped connection    short backoff; a refused connection after them means
                                     the server is down: EngineUnavailable
    refused    401, 403, 404         retried once; if it persists EngineUnavailable with a
                                     hint naming the cause (API key, model name, base_url)
    final      a 400 saying the      RequestFailed("context_length"): the engine splits
               context is exceeded   the group and lowers its pages per request
               other 4xx             RequestFailed("http_4xx"), not retried
               a timeout (read)      RequestFailed("timeout"), not retried: the recovery
                                     ladder acts at once

``timeout_seconds`` is a request's total time, first byte to last, streamed
or not, its transient retries included (the time spent waiting out 429/503
is not counted: that has ``busy_wait_seconds``). httpx's own timeouts are
per read, so a watchdog shuts the socket at the deadline: a server that
trickles bytes is cut there too.

Streaming answers are read as server-sent events; a repetition loop stops
the stream early (no need to pay for 8,000 tokens of a loop). Every HTTP
request is counted in the engine's semaphore (``max_concurrency``); waits
between them are not.
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from longdoc.engines.openai.checks import LOOP_TAIL_CHARS, repetition_loop
from longdoc.errors import EngineUnavailable

log = logging.getLogger("longdoc.engines.openai")

#: a streamed answer is checked for a loop every this many characters
LOOP_CHECK_EVERY = 400
#: backoff of a busy server without Retry-After: first wait, cap (seconds)
BUSY_BACKOFF_FIRST = 1.0
BUSY_BACKOFF_CAP = 30.0
#: the shortest wait for a busy server (a Retry-After of 0 is no reason to hammer it)
BUSY_MIN_WAIT = 0.1
#: backoff before a transient failure's retry: first wait, cap (seconds)
TRANSIENT_BACKOFF_FIRST = 0.5
TRANSIENT_BACKOFF_CAP = 8.0
#: pause before the one retry of a 401/403/404
REFUSED_RETRY_WAIT = 0.5
BUSY_STATUSES = (429, 503)
REFUSED_STATUSES = (401, 403, 404)
TRANSIENT_STATUSES = (500, 502, 504)
#: what vLLM and SGLang say in a 400 for a prompt past the model's context
#: (vLLM: "This model's maximum context length is 32768 tokens. However, you
#: requested …", "The decoder prompt (length …) is longer than the maximum model
#: length of …"; SGLang: "The input (… tokens) is longer than the model's
#: context length (… tokens).", "input_ids length … exceeds …"), case-insensitive
CONTEXT_LENGTH_PHRASES = re.compile(
    r"context length|maximum model length|input_ids length .{0,80}exceeds",
    re.IGNORECASE | re.DOTALL,
)
_REFUSED_HINTS: dict[int | None, str] = {
    401: "The model server refused the API key (401): set `inference.openai.api_key` to a key it accepts.",
    403: "The model server forbids these requests (403): check `inference.openai.api_key` and what it may use.",
    404: "The model server has no such model or path (404): check `inference.openai.model` (GET /v1/models "
         "lists the served ones) and `inference.openai.base_url` (the server's /v1 URL).",
}


class RequestFailed(Exception):
    """A request that got no usable answer (after its retries or waits);
    ``reason`` is a short stable word (``busy``, ``timeout``,
    ``context_length``, ``http_500``, ``connection`` …)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


@dataclass
class Answer:
    text: str
    finish_reason: str | None
    #: retries after transient failures (500/502/504, a dropped connection)
    retries: int = 0
    #: a streamed answer cut short by longdoc because it was looping
    stopped_looping: bool = False
    #: the 429/503 answers waited out before this one, and the seconds waited
    busy: list[int] = field(default_factory=list)
    waited_s: float = 0.0


@dataclass
class ServerFacts:
    model: str
    root: str | None = None
    max_model_len: int | None = None


class BusyBudget:
    """The time one group may spend waiting out 429/503 answers
    (``inference.openai.busy_wait_seconds``), shared by every request of
    the group, its recovery ladder included. Time counts while at least
    one request waits (requests of a group waiting at once spend it once),
    so a group never waits longer than ``seconds`` in all. Thread-safe."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._lock = threading.Lock()
        self._waiters = 0
        self._since = 0.0
        self._spent = 0.0

    def spent(self) -> float:
        with self._lock:
            return self._spent + (time.monotonic() - self._since if self._waiters else 0.0)

    def left(self) -> float:
        return max(0.0, self.seconds - self.spent())

    def wait(self, seconds: float, cancelled: Callable[[], bool]) -> float:
        """Sleep ``seconds`` (stopping early once cancelled); returns the seconds slept."""
        start = time.monotonic()
        with self._lock:
            if not self._waiters:
                self._since = start
            self._waiters += 1
        try:
            end = start + seconds
            while not cancelled():
                now = time.monotonic()
                if now >= end:
                    break
                time.sleep(min(0.1, end - now))
        finally:
            with self._lock:
                self._waiters -= 1
                if not self._waiters:
                    self._spent += time.monotonic() - self._since
        return time.monotonic() - start


class _DeadlinePassed(Exception):
    """The request's deadline passed while it was sent or read."""


class _Watchdog:
    """Shuts a response's socket at the deadline, waking a read blocked on
    it (httpx's timeouts are per read: bytes trickling in keep one alive)."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.expired = False
        self._done = False
        self._response: httpx.Response | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(0.0, deadline - time.monotonic()), self._expire)
        self._timer.daemon = True
        self._timer.start()

    def watch(self, response: httpx.Response) -> None:
        with self._lock:
            self._response = response
            if self.expired:
                _shut(response)

    def check(self) -> None:
        if self.expired or time.monotonic() >= self.deadline:
            self.expired = True
            raise _DeadlinePassed()

    def cancel(self) -> None:
        """Stop watching: once this returns, the socket is left alone (the
        connection may go back to the pool)."""
        with self._lock:
            self._done = True
        self._timer.cancel()

    def _expire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.expired = True
            if self._response is not None:
                _shut(self._response)


def _shut(response: httpx.Response) -> None:
    """Shut the response's socket down (a read blocked on it returns), or,
    without a socket to reach (a test transport), close the response."""
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):  # closed already
            sock.shutdown(socket.SHUT_RDWR)
        return
    with contextlib.suppress(Exception):  # closing from another thread: best effort, the reader's own check follows
        response.close()


class ModelClient:
    """Requests to one OpenAI-compatible server. Thread-safe; :meth:`close`
    aborts the requests in flight (they raise). ``requests`` is entered
    around each request (the engine's bound on those in flight)."""

    def __init__(self, base_url: str, api_key: str | None, timeout_s: float, retries: int,
                 requests: contextlib.AbstractContextManager[object], transport: httpx.BaseTransport | None = None,
                 busy_wait_s: float = 120.0) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        self.timeout_s = timeout_s
        self.busy_wait_s = busy_wait_s
        self._requests = requests
        self._http = httpx.Client(
            base_url=self.base_url, headers=headers, transport=transport,
            timeout=httpx.Timeout(timeout_s, connect=min(10.0, timeout_s)),
        )

    def close(self) -> None:
        self._http.close()

    # -- the server --------------------------------------------------------------

    def healthy(self) -> bool:
        """The server's own ``/health`` (next to ``/v1``) answers 200, or
        the server has none (404). Never raises."""
        root = self.base_url[: -len("/v1")] if self.base_url.endswith("/v1") else self.base_url
        try:
            status = self._http.get(f"{root}/health", timeout=5.0).status_code
        except httpx.HTTPError:
            return False
        return status in (200, 404)

    def facts(self, wanted_model: str | None) -> ServerFacts:
        """The served model (``wanted_model`` or the first one) from
        ``GET /models``. Raises EngineUnavailable."""
        try:
            answer = self._http.get("/models", timeout=10.0)
            answer.raise_for_status()
            models = answer.json().get("data") or []
        except (httpx.HTTPError, ValueError) as exc:
            status = exc.response.status_code if isinstance(exc, httpx.HTTPStatusError) else None
            _log_server(self.base_url, "GET /models", status or type(exc).__name__)
            raise EngineUnavailable(
                f"The model server does not answer GET /models "
                f"({status or type(exc).__name__}).",
                hint=_REFUSED_HINTS.get(status, "Start the vLLM or SGLang server, or fix `inference.openai.base_url`."),
            ) from exc
        for entry in models:
            if wanted_model is None or entry.get("id") == wanted_model:
                return ServerFacts(model=entry["id"], root=entry.get("root"), max_model_len=entry.get("max_model_len"))
        served = ", ".join(str(m.get("id")) for m in models) or "none"
        raise EngineUnavailable(f"The model server does not serve {wanted_model!r} (it serves: {served}).",
                                hint="Set `inference.openai.model` to a served model.")

    # -- one request ---------------------------------------------------------------

    def complete(self, body: dict[str, Any], cancelled: Callable[[], bool],
                 busy: BusyBudget | None = None) -> Answer:
        """One chat completion, each failure handled by its kind (see the
        module docstring). ``busy`` is the group's budget for waiting out
        429/503 (a fresh one of ``busy_wait_s`` when None). Raises
        RequestFailed, EngineUnavailable (server down, or refusing the key,
        model or path) or, once cancelled, RequestFailed("cancelled")."""
        busy = busy if busy is not None else BusyBudget(self.busy_wait_s)
        waited: list[int] = []
        waited_s = 0.0
        transient = refused = 0
        #: the request's own time: timeout_seconds, pushed back by the busy waits
        deadline = time.monotonic() + self.timeout_s
        while True:
            if cancelled():
                raise RequestFailed("cancelled", "the session was cancelled")
            try:
                with self._requests:
                    answer = self._attempt(body, deadline)
            except RequestFailed:
                raise
            except Exception as exc:  # noqa: BLE001 - every failure is classified below
                if cancelled():
                    raise RequestFailed("cancelled", "the session was cancelled") from exc
                kind = _kind(exc)
                if kind == "busy":
                    assert isinstance(exc, httpx.HTTPStatusError), "busy is an HTTP status"
                    status = exc.response.status_code
                    after = retry_after(exc.response.headers.get("retry-after"))
                    pause = _busy_pause(after, len(waited), busy.left())
                    if pause is None:
                        raise RequestFailed("busy", f"{_body_excerpt(exc.response)} after waiting "
                                            f"{waited_s:.1f}s (busy_wait_seconds {busy.seconds:g} for the group, "
                                            f"{busy.spent():.1f}s spent)") from exc
                    slept = busy.wait(pause, cancelled)
                    waited.append(status)
                    waited_s += slept
                    deadline += slept
                    continue
                if kind == "refused":
                    assert isinstance(exc, httpx.HTTPStatusError), "refused is an HTTP status"
                    status = exc.response.status_code
                    if refused == 0:
                        refused += 1
                        _pause(REFUSED_RETRY_WAIT, cancelled)
                        continue
                    _log_server(self.base_url, "chat completions", status)
                    raise EngineUnavailable(
                        f"The model server answers {_body_excerpt(exc.response)} "
                        "to chat completions, again after a retry.", hint=_REFUSED_HINTS[status]) from exc
                if kind in ("transient", "down") and transient < self.retries:
                    pause = min(TRANSIENT_BACKOFF_CAP, TRANSIENT_BACKOFF_FIRST * 2 ** transient)
                    transient += 1
                    if time.monotonic() + pause < deadline:
                        _pause(pause, cancelled)
                        continue
                raise _final(exc, kind, self.base_url) from exc
            answer.retries = transient
            answer.busy = waited
            answer.waited_s = waited_s
            return answer

    def _attempt(self, body: dict[str, Any], deadline: float) -> Answer:
        """One HTTP request, cut at ``deadline`` (a monotonic time)."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise _DeadlinePassed()
        watchdog = _Watchdog(deadline)
        try:
            timeout = httpx.Timeout(left, connect=min(10.0, left))
            with self._http.stream("POST", "/chat/completions", json=body, timeout=timeout) as response:
                watchdog.watch(response)
                try:
                    if response.status_code >= 400:
                        response.read()
                        response.raise_for_status()
                    if body.get("stream"):
                        return self._stream(response, watchdog)
                    return self._whole(response, watchdog)
                except (httpx.TransportError, httpx.StreamError) as exc:
                    if watchdog.expired:
                        raise _DeadlinePassed() from exc
                    raise
                finally:
                    watchdog.cancel()  # before the connection goes back to the pool
        except httpx.TimeoutException as exc:
            if watchdog.expired or time.monotonic() >= deadline:
                raise _DeadlinePassed() from exc
            raise
        finally:
            watchdog.cancel()

    @staticmethod
    def _whole(response: httpx.Response, watchdog: _Watchdog) -> Answer:
        data = bytearray()
        for piece in response.iter_bytes():
            data += piece
            watchdog.check()
        watchdog.check()
        try:
            choice = json.loads(bytes(data))["choices"][0]
            return Answer(choice["message"].get("content") or "", choice.get("finish_reason"))
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise RequestFailed("bad_answer", f"not a chat completion ({type(exc).__name__})") from exc

    @staticmethod
    def _stream(response: httpx.Response, watchdog: _Watchdog) -> Answer:
        text = StreamedText()
        finish: str | None = None
        checked = 0
        for delta, reason in _events(response.iter_lines(), watchdog):
            text.append(delta)
            finish = reason or finish
            if text.size - checked >= LOOP_CHECK_EVERY:
                checked = text.size
                if repetition_loop(text.tail(LOOP_TAIL_CHARS)) is not None:
                    return Answer(text.text(), "length", stopped_looping=True)
        watchdog.check()
        return Answer(text.text(), finish)


def retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` value (delta-seconds or an HTTP date);
    None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def _busy_pause(after: float | None, waits: int, left: float) -> float | None:
    """How long to wait for a busy server before the next try, or None
    when the group's budget (``left`` seconds) does not allow it: the
    server's Retry-After when it gave one (longer than what is left: give
    up now), else a capped exponential backoff with jitter, cut to what is left."""
    if left <= 0:
        return None
    if after is not None:
        after = max(after, BUSY_MIN_WAIT)
        return after if after <= left else None
    ceiling = min(BUSY_BACKOFF_CAP, BUSY_BACKOFF_FIRST * 2 ** waits)
    return min(left, max(BUSY_MIN_WAIT, ceiling / 2 + random.uniform(0, ceiling / 2)))


def _pause(seconds: float, cancelled: Callable[[], bool]) -> None:
    end = time.monotonic() + seconds
    while not cancelled() and time.monotonic() < end:
        time.sleep(min(0.1, max(0.0, end - time.monotonic())))


def _kind(exc: BaseException) -> str:
    """busy | refused | transient | down | final (see the module docstring)."""
    if isinstance(exc, httpx.HTTPStatusError):
        status = exc.response.status_code
        if status in BUSY_STATUSES:
            return "busy"
        if status in REFUSED_STATUSES:
            return "refused"
        if status in TRANSIENT_STATUSES:
            return "transient"
        return "final"
    if isinstance(exc, _DeadlinePassed):
        return "final"
    if isinstance(exc, httpx.ConnectError):
        return "down"
    if isinstance(exc, (httpx.ConnectTimeout, httpx.PoolTimeout)):
        return "transient"  # nothing was generated yet
    if isinstance(exc, httpx.TimeoutException):
        return "final"  # a read or write timeout: the answer was under way
    if isinstance(exc, httpx.TransportError):
        return "transient"  # a dropped connection
    return "final"


def _log_server(base_url: str, what: str, failure: object) -> None:
    """The model server's address goes to the log, for the operator, never
    into an error a job records: a tenant reads those, and the address is
    the inside of the deployment."""
    log.warning("model server failed", extra={"base_url": base_url, "request": what, "failure": str(failure)})


def _final(exc: BaseException, kind: str, base_url: str) -> Exception:
    """The error a failure of ``kind`` ends the request with."""
    if kind == "down":
        _log_server(base_url, "connect", "refused")
        return EngineUnavailable("The model server refuses connections.",
                                 hint="Start the model server or fix `inference.openai.base_url`.")
    if isinstance(exc, httpx.HTTPStatusError):
        response = exc.response
        if response.status_code == 400 and CONTEXT_LENGTH_PHRASES.search(_text(response)):
            return RequestFailed("context_length", _body_excerpt(response))
        return RequestFailed(f"http_{response.status_code}", _body_excerpt(response))
    if isinstance(exc, _DeadlinePassed) or isinstance(exc, httpx.TimeoutException) and not isinstance(
            exc, (httpx.ConnectTimeout, httpx.PoolTimeout)):
        return RequestFailed("timeout", "the answer did not come whole within the request's timeout_seconds")
    if isinstance(exc, httpx.TimeoutException):
        return RequestFailed("timeout", f"no connection within the request's timeout ({type(exc).__name__})")
    if isinstance(exc, httpx.HTTPError):
        return RequestFailed("connection", type(exc).__name__)
    return RequestFailed("connection", f"{type(exc).__name__}: {exc}")


class StreamedText:
    """A streamed answer as it grows: a delta is appended in O(1), the size
    is kept as a running count, and :meth:`tail` joins only the last parts
    (the loop check looks at the tail alone), so n characters streamed
    cost O(n) in all however many deltas carry them."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0

    def append(self, delta: str) -> None:
        if delta:
            self.parts.append(delta)
            self.size += len(delta)

    def tail(self, chars: int) -> str:
        """The last ``chars`` characters (all of them when fewer)."""
        taken: list[str] = []
        length = 0
        for part in reversed(self.parts):
            taken.append(part)
            length += len(part)
            if length >= chars:
                break
        return "".join(reversed(taken))[-chars:]

    def text(self) -> str:
        return "".join(self.parts)


def _events(lines: Iterator[str], watchdog: _Watchdog | None = None) -> Iterator[tuple[str, str | None]]:
    """(content delta, finish_reason) of each server-sent event; a chunk
    with no choices (``"choices": []``: the usage-only chunk a server sends
    when asked for ``stream_options.include_usage``) carries no text and is
    skipped."""
    for line in lines:
        if watchdog is not None:
            watchdog.check()
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        try:
            choices = json.loads(data)["choices"]
            if isinstance(choices, list) and not choices:
                continue
            choice = choices[0]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise RequestFailed("bad_answer", "a streamed event is not a chat completion chunk") from exc
        yield (choice.get("delta") or {}).get("content") or "", choice.get("finish_reason")


def _text(response: httpx.Response) -> str:
    try:
        return response.text
    except (httpx.HTTPError, UnicodeDecodeError):
        return ""


def _body_excerpt(response: httpx.Response) -> str:
    return f"{response.status_code} {_text(response)[:200]}".strip()
