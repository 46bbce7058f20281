"""The HTTP side of the ``openai`` engine: one chat-completion request, with
retries, streaming and the server's facts (``/v1/models``).

- A request is retried with exponential backoff (tenacity) after a 5xx
  answer, a dropped connection or a timeout, and only then
  (``inference.openai.retries`` times); a 4xx answer is not retried.
- A refused connection after the retries means the server is down:
  :class:`~longdoc.errors.EngineUnavailable` (the job can be retried later);
  other failures are :class:`RequestFailed`, which the engine's recovery
  ladder handles page by page.
- Streaming answers are read as server-sent events; a repetition loop
  stops the stream early (no need to pay for 8,000 tokens of a loop).
- Every request is counted in the engine's semaphore
  (``inference.openai.max_concurrency``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from longdoc.engines.openai.checks import LOOP_TAIL_CHARS, repetition_loop
from longdoc.errors import EngineUnavailable

#: a streamed answer is checked for a loop every this many characters
LOOP_CHECK_EVERY = 400


class RequestFailed(Exception):
    """A request that got no usable answer (after its retries)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


@dataclass
class Answer:
    text: str
    finish_reason: str | None
    retries: int = 0
    #: a streamed answer cut short by longdoc because it was looping
    stopped_looping: bool = False


@dataclass
class ServerFacts:
    model: str
    root: str | None = None
    max_model_len: int | None = None


class ModelClient:
    """Requests to one OpenAI-compatible server. Thread-safe; :meth:`close`
    aborts the requests in flight (they raise)."""

    def __init__(self, base_url: str, api_key: str | None, timeout_s: float, retries: int,
                 requests: threading.BoundedSemaphore, transport: httpx.BaseTransport | None = None) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.base_url = base_url.rstrip("/")
        self.retries = retries
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
            raise EngineUnavailable(
                f"The model server at {self.base_url} does not answer GET /models ({type(exc).__name__}).",
                hint="Start the vLLM or SGLang server, or fix `inference.openai.base_url`.",
            ) from exc
        for entry in models:
            if wanted_model is None or entry.get("id") == wanted_model:
                return ServerFacts(model=entry["id"], root=entry.get("root"), max_model_len=entry.get("max_model_len"))
        served = ", ".join(str(m.get("id")) for m in models) or "none"
        raise EngineUnavailable(f"The model server does not serve {wanted_model!r} (it serves: {served}).",
                                hint="Set `inference.openai.model` to a served model.")

    # -- one request ---------------------------------------------------------------

    def complete(self, body: dict[str, Any], cancelled: Callable[[], bool]) -> Answer:
        """One chat completion, retried on transient failures. Raises
        RequestFailed, EngineUnavailable (server down) or, once cancelled,
        RequestFailed("cancelled")."""
        attempts = {"n": 0}

        def attempt() -> Answer:
            attempts["n"] += 1
            if cancelled():
                raise RequestFailed("cancelled", "the session was cancelled")
            with self._requests:
                return self._stream(body) if body.get("stream") else self._once(body)

        retrying = Retrying(
            stop=stop_after_attempt(self.retries + 1), wait=wait_exponential(multiplier=0.5, max=8),
            retry=retry_if_exception(lambda exc: _transient(exc) and not cancelled()), reraise=True,
            before_sleep=_no_log,
        )
        try:
            answer = retrying(attempt)
        except httpx.ConnectError as exc:
            raise EngineUnavailable(f"The model server at {self.base_url} refuses connections.",
                                    hint="Start the model server or fix `inference.openai.base_url`.") from exc
        except httpx.HTTPStatusError as exc:
            raise RequestFailed(f"http_{exc.response.status_code}", _body_excerpt(exc.response)) from exc
        except httpx.TimeoutException as exc:
            raise RequestFailed("timeout", f"no answer within the request timeout ({type(exc).__name__})") from exc
        except httpx.HTTPError as exc:
            reason = "cancelled" if cancelled() else "connection"
            raise RequestFailed(reason, type(exc).__name__) from exc
        answer.retries = attempts["n"] - 1
        return answer

    def _once(self, body: dict[str, Any]) -> Answer:
        response = self._http.post("/chat/completions", json=body)
        response.raise_for_status()
        try:
            choice = response.json()["choices"][0]
            return Answer(choice["message"].get("content") or "", choice.get("finish_reason"))
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise RequestFailed("bad_answer", f"not a chat completion ({type(exc).__name__})") from exc

    def _stream(self, body: dict[str, Any]) -> Answer:
        text = StreamedText()
        finish: str | None = None
        checked = 0
        with self._http.stream("POST", "/chat/completions", json=body) as response:
            if response.status_code >= 400:
                response.read()
                response.raise_for_status()
            for delta, reason in _events(response.iter_lines()):
                text.append(delta)
                finish = reason or finish
                if text.size - checked >= LOOP_CHECK_EVERY:
                    checked = text.size
                    if repetition_loop(text.tail(LOOP_TAIL_CHARS)) is not None:
                        return Answer(text.text(), "length", stopped_looping=True)
        return Answer(text.text(), finish)


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


def _events(lines: Iterator[str]) -> Iterator[tuple[str, str | None]]:
    """(content delta, finish_reason) of each server-sent event; a chunk
    with no choices (``"choices": []``: the usage-only chunk a server sends
    when asked for ``stream_options.include_usage``) carries no text and is
    skipped."""
    for line in lines:
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


def _transient(exc: BaseException) -> bool:
    """Worth retrying: a 5xx, a dropped or refused connection, a timeout."""
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code >= 500
    return isinstance(exc, (httpx.TransportError,))


def _body_excerpt(response: httpx.Response) -> str:
    try:
        return f"{response.status_code} {response.text[:200]}"
    except httpx.HTTPError:
        return str(response.status_code)


def _no_log(state: RetryCallState) -> None:
    """tenacity's hook before each retry: nothing to print (library code never prints)."""
