"""An open event stream (``GET /v1/jobs/{id}/events``) lasts no longer than
its key (in process): once the key is revoked or expires, the stream sends
an ``error`` event and ends, while its job is still running."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from longdoc.engines import FakeEngine, register_engine
from longdoc.service.routes import jobs as job_routes
from tests.ingest.files import good_page, pdf_with_pages
from tests.service.helpers import accepted, error_code, submit, wait_for

GATE = "events-gate"  # an engine that reads no page until the test opens its gate
_gate = threading.Event()


def _gated(image) -> list:
    _gate.wait(60)
    return []


register_engine(GATE, lambda settings: FakeEngine(handler=_gated, name=GATE, version="gate-1"))
RECHECK_S = 0.5


@pytest.fixture
def gated(start_app, monkeypatch):
    monkeypatch.setattr(job_routes, "KEY_RECHECK_S", RECHECK_S)
    _gate.clear()
    srv = start_app(inference={"engine": GATE, "regions": False})
    yield srv
    _gate.set()  # the job finishes, and the app stops without a page in flight


def events(event_stream: str) -> list[tuple[str, dict]]:
    parsed = []
    for block in event_stream.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if not line.startswith(":"))
        if "event" in fields:
            parsed.append((fields["event"], json.loads(fields["data"])))
    return parsed


@pytest.mark.parametrize("how", ["revoked", "expired"])
def test_an_open_event_stream_ends_with_an_error_once_its_key_is_revoked_or_expires(gated, tmp_path, how):
    with gated.admin() as admin:
        made = admin.post("/admin/keys", json={"tenant": "streams"}).json()
    path = pdf_with_pages(tmp_path / "doc.pdf", [good_page(1)])
    with gated.http(made["key"]) as http, ThreadPoolExecutor(1) as pool:
        job = accepted(submit(http, path, {"ocr": "force", "formats": ["txt"]}))
        wait_for(http, job["id"], lambda j: j["state"] == "running", timeout=30)
        opened = time.monotonic()
        stream = pool.submit(http.get, f"/v1/jobs/{job['id']}/events", timeout=30)
        time.sleep(1.0)  # the stream is open (authenticated) by then
        with gated.admin() as admin:
            if how == "revoked":
                assert admin.delete(f"/admin/keys/{made['id']}").status_code == 204
            else:  # a rotation without grace: the old key expires now
                assert admin.post(f"/admin/keys/{made['id']}/rotate", json={"grace": "0s"}).status_code == 201
        r = stream.result(timeout=30)
        took = time.monotonic() - opened
    assert r.status_code == 200
    seen = events(r.text)
    assert seen[0][0] == "progress" and seen[0][1]["state"] == "running"
    name, data = seen[-1]
    assert name == "error" and "end" not in [n for n, _ in seen], seen
    assert data["error"]["code"] == ("unauthorized" if how == "revoked" else "key_expired"), data
    assert "streams" not in json.dumps(data) and made["id"] not in json.dumps(data)  # nor whose key it was
    assert took < 10, took  # ended within a few checks, not when the job ends
    with gated.http(made["key"]) as http:
        assert error_code(http.get("/v1/jobs")) == ("unauthorized" if how == "revoked" else "key_expired")
