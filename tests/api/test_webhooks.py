"""Signed webhooks on a real receiver on 127.0.0.1, from the service in
process (it allows private targets; refusing them is tested in
tests/service/test_limits.py)."""

from __future__ import annotations

import json
import time

import pytest

from longdoc.webhooks.delivery import verify
from tests.service.helpers import accepted, submit, wait_terminal
from tests.webhooks.receiver import Receiver

TOKEN = "callback-token-6f1c9e"


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def wait_requests(receiver: Receiver, n: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while len(receiver.requests) < n:
        assert time.monotonic() < deadline, f"{len(receiver.requests)} of {n} webhook requests arrived"
        time.sleep(0.1)


def test_finished_job_posts_one_signed_webhook(server, report_doc, receiver):
    key = server.create_key("hooks")
    other = server.create_key("hooks")
    with server.http(key) as http:
        job = accepted(submit(http, report_doc.pdf_path, {"formats": ["md"], "pages": "1-2",
                                                          "callback_url": receiver.url(f"/hook?token={TOKEN}")}))
        assert wait_terminal(http, job["id"])["state"] == "succeeded"
    wait_requests(receiver, 1)
    time.sleep(1.0)  # a duplicate delivery would arrive meanwhile
    assert len(receiver.requests) == 1
    req = receiver.requests[0]
    headers = {k.lower(): v for k, v in req.headers.items()}
    assert req.path == f"/hook?token={TOKEN}"
    assert headers["x-longdoc-event"] == "job.finished" and headers["x-longdoc-delivery"]
    ts, sig = headers["x-longdoc-timestamp"], headers["x-longdoc-signature"]
    assert verify(key.webhook_secret, ts, req.body, sig)
    assert not verify(other.webhook_secret, ts, req.body, sig)
    assert not verify(key.webhook_secret, ts, req.body.replace(b"succeeded", b"failed"), sig)
    assert TOKEN not in server.log_text()  # callback URLs may carry secrets: never logged
    payload = json.loads(req.body)
    assert payload["event"] == "job.finished"
    assert payload["job"]["id"] == job["id"] and payload["job"]["state"] == "succeeded"


def test_webhook_is_retried_after_a_server_error(server, report_doc, receiver):
    receiver.script = [(503, {}), (200, {})]
    key = server.create_key("hooks-retry")
    with server.http(key) as http:
        job = accepted(submit(http, report_doc.pdf_path, {"formats": ["txt"], "pages": "3",
                                                          "callback_url": receiver.url()}))
        assert wait_terminal(http, job["id"])["state"] == "succeeded"
    wait_requests(receiver, 2)
    first, second = receiver.requests[:2]
    delivery = {r.headers["X-Longdoc-Delivery"] for r in (first, second)}
    assert len(delivery) == 1  # one delivery, two attempts
    for r in (first, second):
        assert verify(key.webhook_secret, r.headers["X-Longdoc-Timestamp"], r.body, r.headers["X-Longdoc-Signature"])
