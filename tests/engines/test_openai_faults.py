"""Server errors and deadlines of the openai engine (issue 22, points 7 and
8), over real HTTP on loopback against the FAKE recording server
(tests/engines/recording_server.py), which answers with an error status,
a ``Retry-After`` header, or its answer trickled:

- 429 and 503 are waited out (``Retry-After`` in seconds or as an HTTP date,
  else a capped backoff with jitter) within the group's
  ``busy_wait_seconds``; then the recovery ladder acts;
- a 400 saying the context length was exceeded splits the group and lowers
  the pages every later request of the engine holds;
- a 401, 403 or 404 that persists after one retry fails with
  ``engine_unavailable`` and a hint naming the cause, never read by the fallback;
- ``timeout_seconds`` is a request's total time, streamed or not (bytes
  trickling under the per-read timeout do not keep it alive), and a request
  cut there is not sent again: the ladder acts at once.
"""

from __future__ import annotations

import threading
import time
from email.utils import formatdate

import numpy as np
import pytest

from longdoc.config import load_settings
from longdoc.engines.base import GroupPlan, PageGroup, PageImage
from longdoc.engines.openai.client import ModelClient, RequestFailed, retry_after
from longdoc.engines.openai.engine import OpenAIEngine
from longdoc.errors import EngineUnavailable
from longdoc.model import PageStatus
from tests.engines.recording_server import RecordingServer, Reply

CONTEXT_MESSAGES = [  # vLLM, vLLM v1, SGLang, SGLang
    "This model's maximum context length is 32768 tokens. However, you requested 41000 tokens "
    "(33000 in the messages, 8000 in the completion). Please reduce the length of the messages or completion.",
    "The decoder prompt (length 40211) is longer than the maximum model length of 32768. Make sure that "
    "`max_model_len` is no smaller than the number of text tokens plus multimodal tokens.",
    "The input (40211 tokens) is longer than the model's context length (32768 tokens).",
    "Input_ids length 40211 exceeds the maximum allowed length.",
]


def _engine(url: str, **openai) -> OpenAIEngine:
    settings = load_settings(overrides={"inference": {"engine": "openai", "openai": {
        "base_url": f"{url}/v1", "retries": 2, "timeout_seconds": 20, "fallback_engine": None,
        "profile": "unlimited-ocr", **openai}}})
    return OpenAIEngine(settings.inference)


def _page(number: int) -> PageImage:
    pixels = np.full((300, 240, 3), 235, dtype=np.uint8)
    pixels[40:60, 20:20 + 10 * number] = 20
    return PageImage(page=number, image=pixels, dpi=72.0, width_pt=240, height_pt=300)


def _read(engine: OpenAIEngine, owned: list[int]) -> dict:
    group = PageGroup(plan=GroupPlan(index=0, owned=tuple(owned)), images=[_page(n) for n in owned])
    session = engine.open_session()
    try:
        return {p.number: p for p in session.recognize(group)}
    finally:
        session.close()


def _long_answer(body, images: int) -> str:
    """Several hundred characters of varied text per page (no loop)."""
    pages = [f"page {i} " + " ".join(f"w{i}_{k}" for k in range(40)) for i in range(1, images + 1)]
    return "".join(f"<PAGE>{p}" for p in pages) if images > 1 else pages[0]


def _first(reply: Reply):
    """``reply`` to the first request only."""
    return lambda body, number: reply if number == 0 else None


def _always(reply: Reply):
    return lambda body, number: reply


# -- busy servers: 429 and 503 ------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
def test_a_429_with_retry_after_is_waited_out_and_the_model_reads_the_pages(stream):
    with RecordingServer(reply=_first(Reply(429, {"Retry-After": "1"}))) as server:
        engine = _engine(server.url, stream=stream, fallback_engine="rapidocr")
        pages = _read(engine, [1, 2])
    assert all(p.status is PageStatus.OK and p.engine == "openai" and p.produced_by == "group"
               for p in pages.values()), pages
    assert "group: waited 1.0s for a busy server (1x 429)" in pages[1].recovery, pages[1].recovery
    assert server.images_per_request() == [2, 2]
    assert server.times[1] - server.times[0] >= 0.95  # Retry-After honoured
    assert engine.fallback._engine is None  # the fallback was never needed


def test_a_503_with_an_http_date_retry_after_is_waited_out():
    # an HTTP date has whole seconds: 3 s ahead (when the server answers) is a wait of 2 to 3 s
    def busy_until_3s_from_now(body, number):
        return Reply(503, {"Retry-After": formatdate(time.time() + 3, usegmt=True)}) if number == 0 else None

    with RecordingServer(reply=busy_until_3s_from_now) as server:
        pages = _read(_engine(server.url), [1])
    assert pages[1].status is PageStatus.OK and pages[1].produced_by == "group"
    assert "(1x 503)" in pages[1].recovery[0]
    assert server.times[1] - server.times[0] >= 1.5


def test_retry_after_reads_seconds_and_http_dates():
    assert retry_after("7") == 7.0
    assert retry_after(" 1.5 ") == 1.5
    assert 28 <= retry_after(formatdate(time.time() + 30, usegmt=True)) <= 30
    assert retry_after(formatdate(time.time() - 30, usegmt=True)) == 0.0
    assert retry_after(None) is None and retry_after("soon") is None


def test_a_server_busy_for_ever_sends_the_group_down_the_ladder_after_busy_wait_seconds():
    with RecordingServer(reply=_always(Reply(429, {"Retry-After": "1"}))) as server:
        engine = _engine(server.url, busy_wait_seconds=2.5)
        start = time.monotonic()
        pages = _read(engine, [1, 2])
        elapsed = time.monotonic() - start
    # the group waits 1 s twice, then gives up (1 s would pass its 2.5 s); the budget is the
    # group's: the split requests down the ladder do not wait again
    assert elapsed < 4.5, elapsed
    assert server.images_per_request() == [2, 2, 2, 1, 1]
    for page in pages.values():
        assert page.status is PageStatus.FAILED and page.error.code == "engine_failed"
        assert page.recovery == ["group: busy", "single: busy"], page.recovery


def test_without_retry_after_a_busy_server_gets_a_capped_backoff_within_the_budget():
    with RecordingServer(reply=_always(Reply(503))) as server:
        client = ModelClient(f"{server.url}/v1", None, 10.0, 2, threading.BoundedSemaphore(2), busy_wait_s=3.0)
        start = time.monotonic()
        with pytest.raises(RequestFailed) as caught:
            client.complete({"model": "m", "messages": [], "stream": False}, lambda: False)
        elapsed = time.monotonic() - start
        client.close()
    assert caught.value.reason == "busy"
    assert 2.9 <= elapsed < 4.0, elapsed
    gaps = np.diff(server.times)
    assert 0.5 <= gaps[0] <= 1.2, gaps  # the first wait: 1 s with jitter
    assert gaps[1] >= 1.0, gaps  # then 2 s with jitter (cut to what is left of the budget)


# -- context length -----------------------------------------------------------------------------


@pytest.mark.parametrize("message", CONTEXT_MESSAGES)
def test_a_context_length_error_splits_the_group_and_later_requests_hold_fewer_pages(message):
    def reply(body, number):
        return Reply(400, message=message) if len([1 for m in body["messages"] for p in m["content"]
                                                   if isinstance(p, dict) and p.get("type") == "image_url"]) > 2 else None

    with RecordingServer(reply=reply) as server:
        engine = _engine(server.url, max_pages_per_request=4)
        first = _read(engine, [1, 2, 3, 4, 5, 6, 7, 8])
        second = _read(engine, [9, 10, 11, 12])
    # the group's first request of 4 is refused and split; its next 4 pages and the next
    # group go 2 to a request
    assert server.images_per_request() == [4, 2, 2, 2, 2, 2, 2]
    assert engine.pages_per_request == 2
    for n in (1, 2, 3, 4):
        assert first[n].produced_by == "split" and first[n].status is PageStatus.OK
        assert first[n].recovery == ["group: context_length", "group: pages per request lowered to 2"]
    assert all(p.produced_by == "group" and not p.recovery for n, p in first.items() if n > 4)
    assert all(p.produced_by == "group" and not p.recovery for p in second.values())


def test_another_400_splits_the_group_but_keeps_the_pages_per_request():
    with RecordingServer(reply=_first(Reply(400, message="image could not be decoded"))) as server:
        engine = _engine(server.url, max_pages_per_request=4)
        pages = _read(engine, [1, 2, 3, 4])
    assert server.images_per_request() == [4, 2, 2]
    assert engine.pages_per_request == 4
    assert pages[1].recovery == ["group: http_400"]


# -- refusals: 401, 403, 404 ---------------------------------------------------------------------


@pytest.mark.parametrize(("status", "names"), [(401, "api_key"), (403, "api_key"), (404, "inference.openai.model")])
def test_a_refusal_that_persists_fails_with_engine_unavailable_and_a_hint(status, names):
    with RecordingServer(reply=_always(Reply(status, message="refused"))) as server:
        engine = _engine(server.url, fallback_engine="rapidocr")
        with pytest.raises(EngineUnavailable) as caught:
            _read(engine, [1, 2])
    error = caught.value.to_dict()
    assert error["code"] == "engine_unavailable"
    assert names in error["hint"] and str(status) in error["hint"]
    assert len(server.bodies) == 2  # one retry, no ladder
    assert engine.fallback._engine is None  # no page read by the fallback
    # a job records this error and its tenant reads it: the model server's address stays in the log
    assert "127.0.0.1" not in str(error) and str(server.url) not in str(error)


def test_a_model_server_that_is_down_is_engine_unavailable_without_its_address(caplog):
    with RecordingServer() as server:
        url = server.url
    engine = _engine(url)  # the server is gone: its port refuses connections
    with pytest.raises(EngineUnavailable) as caught:
        _read(engine, [1])
    error = caught.value.to_dict()
    assert error["message"].startswith("The model server") and "127.0.0.1" not in str(error)
    assert any(getattr(r, "base_url", None) == f"{url}/v1" or url in str(getattr(r, "base_url", ""))
               for r in caplog.records)  # the operator still reads where it looked


def test_a_refusal_once_is_retried():
    with RecordingServer(reply=_first(Reply(401))) as server:
        pages = _read(_engine(server.url), [1])
    assert pages[1].status is PageStatus.OK and len(server.bodies) == 2


# -- deadlines -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("stream", "reply"), [
    # bytes every 0.1-0.2 s (under httpx's per-read timeout) for about 3 s in all
    (True, Reply(trickle_s=0.1)),
    (False, Reply(trickle_s=0.2, pieces=16)),
    # a stream that stops after 1 s: cut at the deadline, not a read timeout later
    (True, Reply(trickle_s=0.05, stall_after_s=1.0, stall_s=10)),
], ids=["streamed", "not-streamed", "streamed-stalled"])
def test_a_request_is_cut_at_timeout_seconds_in_all_and_not_sent_again(stream, reply):
    with RecordingServer(answer=_long_answer, reply=_first(reply)) as server:
        engine = _engine(server.url, stream=stream, timeout_seconds=1.5)
        start = time.monotonic()
        pages = _read(engine, [1, 2])
        elapsed = time.monotonic() - start
    # the 2-page request is cut at 1.5 s, and the ladder acts at once: each page alone
    assert server.images_per_request() == [2, 1, 1]
    assert server.times[1] - server.times[0] < 2.1, server.times
    assert elapsed < 4, elapsed
    for page in pages.values():
        assert page.status is PageStatus.OK and page.produced_by == "single"
        assert page.recovery == ["group: timeout"], page.recovery


def test_a_trickled_answer_under_the_deadline_is_read():
    with RecordingServer(answer=_long_answer, reply=_always(Reply(trickle_s=0.02))) as server:
        pages = _read(_engine(server.url, timeout_seconds=5), [1, 2])
    assert all(p.produced_by == "group" and not p.recovery for p in pages.values())
    assert len(server.bodies) == 1
