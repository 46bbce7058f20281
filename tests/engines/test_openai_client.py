"""The openai engine's HTTP client against httpx's MockTransport (the
official test double of the HTTP library): retries, streaming, a loop
stopped early, a server that is down. Busy servers, refusals, context-length
errors and deadlines are tested on loopback in test_openai_faults.py."""

from __future__ import annotations

import json
import threading

import httpx
import pytest

from longdoc.engines.openai.client import ModelClient, RequestFailed
from longdoc.errors import EngineUnavailable

BODY = {"model": "m", "messages": [], "stream": False}


def _client(handler, retries: int = 2) -> ModelClient:
    return ModelClient("http://model.test/v1", "secret", 5.0, retries, threading.BoundedSemaphore(4),
                       transport=httpx.MockTransport(handler))


def _completion(text: str, finish: str = "stop") -> httpx.Response:
    return httpx.Response(200, json={"choices": [{"message": {"content": text}, "finish_reason": finish}]})


def _sse(chunks, finish="stop"):
    for piece in chunks:
        yield f"data: {json.dumps({'choices': [{'delta': {'content': piece}, 'finish_reason': None}]})}\n\n".encode()
    yield f"data: {json.dumps({'choices': [{'delta': {}, 'finish_reason': finish}]})}\n\n".encode()
    yield b"data: [DONE]\n\n"


@pytest.mark.parametrize("status", [500, 502, 504])
def test_a_5xx_is_retried_and_the_answer_says_so(status):
    calls = []

    def handler(request):
        calls.append(request)
        assert request.headers["authorization"] == "Bearer secret"
        return httpx.Response(status) if len(calls) == 1 else _completion("page text")

    answer = _client(handler).complete(BODY, lambda: False)
    assert (answer.text, answer.finish_reason, answer.retries) == ("page text", "stop", 1)
    assert len(calls) == 2


def test_a_4xx_is_not_retried():
    calls = []

    def handler(request):
        calls.append(request)
        return httpx.Response(400, json={"error": "bad image"})

    with pytest.raises(RequestFailed) as caught:
        _client(handler).complete(BODY, lambda: False)
    assert caught.value.reason == "http_400" and len(calls) == 1


def test_a_server_that_refuses_connections_is_unavailable():
    def handler(request):
        raise httpx.ConnectError("refused", request=request)

    with pytest.raises(EngineUnavailable):
        _client(handler, retries=1).complete(BODY, lambda: False)


def test_a_streamed_answer_is_assembled():
    def handler(request):
        assert json.loads(request.content)["stream"] is True
        return httpx.Response(200, content=_sse(["<PAGE>one ", "two", "<PAGE>three"], "stop"))

    answer = _client(handler).complete({**BODY, "stream": True}, lambda: False)
    assert (answer.text, answer.finish_reason) == ("<PAGE>one two<PAGE>three", "stop")


def test_a_looping_stream_is_stopped_early():
    sent = []

    def chunks():
        yield "A real start of the page. "
        for _ in range(5000):
            sent.append(1)
            yield "the the "

    def handler(request):
        return httpx.Response(200, content=_sse(chunks()))

    answer = _client(handler).complete({**BODY, "stream": True}, lambda: False)
    assert answer.stopped_looping and answer.finish_reason == "length"
    assert len(sent) < 500  # not the 40,000 characters the server would have sent


def test_the_model_is_read_from_the_server():
    def handler(request):
        assert request.url.path == "/v1/models"
        return httpx.Response(200, json={"data": [{"id": "baidu/Unlimited-OCR", "root": "/models/uocr",
                                                   "max_model_len": 32768}]})

    client = _client(handler)
    facts = client.facts(None)
    assert (facts.model, facts.max_model_len) == ("baidu/Unlimited-OCR", 32768)
    with pytest.raises(EngineUnavailable) as caught:
        client.facts("other-model")
    assert "baidu/Unlimited-OCR" in caught.value.message


def test_a_cancelled_session_sends_nothing_more():
    calls = []

    def handler(request):
        calls.append(request)
        return _completion("x")

    with pytest.raises(RequestFailed) as caught:
        _client(handler).complete(BODY, lambda: True)
    assert caught.value.reason == "cancelled" and calls == []


def test_health_reads_the_servers_own_health_endpoint():
    answers = {"/health": 503}

    def handler(request):
        return httpx.Response(answers.get(request.url.path, 404))

    client = _client(handler)
    assert not client.healthy()
    answers["/health"] = 200
    assert client.healthy()
    answers.pop("/health")  # a server without /health
    assert client.healthy()
