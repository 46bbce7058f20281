"""LongdocClient against FakeLongdocServer (httpx.MockTransport)."""

from __future__ import annotations

import io
import json

import httpx
import pytest

from longdoc.client import ClientError, LongdocClient, parse_sse
from tests.client.fakes import ChunkStream, FakeLongdocServer, error

BASE = "http://longdoc.test"


@pytest.fixture
def server() -> FakeLongdocServer:
    return FakeLongdocServer()


@pytest.fixture
def client(server):
    with LongdocClient(BASE, server.api_key, transport=server.transport()) as c:
        yield c


def failing_client(exc: Exception) -> LongdocClient:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exc

    return LongdocClient(BASE, "key-1", transport=httpx.MockTransport(handler))


# --- submit -----------------------------------------------------------------


def test_submit_sends_key_file_options_and_idempotency_key(client, server, tmp_path):
    doc = tmp_path / "report.pdf"
    doc.write_bytes(b"%PDF-1.7 fake bytes \x00\xff")
    options = {"formats": ["md", "json"], "pages": "1-20,35", "callback_url": "https://hooks.example.org/x"}

    job = client.submit(doc, options=options, idempotency_key="idem-42")

    assert job["state"] == "queued" and job["id"] == "job-1" and "links" in job
    request = server.requests[-1]
    assert request.method == "POST" and request.url.path == "/v1/jobs"
    assert request.headers["Authorization"] == "Bearer key-1"
    assert request.headers["Idempotency-Key"] == "idem-42"
    assert request.headers["Content-Type"].startswith("multipart/form-data; boundary=")
    upload = server.uploads[-1]
    assert upload.filename == "report.pdf"
    assert upload.content == doc.read_bytes()
    assert json.loads(upload.fields["options"]) == options

    again = client.submit(doc, options=options, idempotency_key="idem-42")  # the server answers 200
    assert again["id"] == job["id"]


def test_submit_streams_a_file_object_without_optional_fields(client, server):
    job = client.submit(io.BytesIO(b"\x89PNG fake"))
    request = server.requests[-1]
    assert job["id"] == "job-1"
    assert "Idempotency-Key" not in request.headers
    assert server.uploads[-1].filename == "upload"
    assert server.uploads[-1].content == b"\x89PNG fake"
    assert server.uploads[-1].fields == {}


def test_submit_of_a_missing_path_is_a_client_error(client, server, tmp_path):
    with pytest.raises(ClientError) as info:
        client.submit(tmp_path / "nope.pdf")
    assert info.value.code == "unreadable_path" and info.value.status is None
    assert server.requests == []


def test_base_url_with_a_path_prefix():
    server = FakeLongdocServer(prefix="/ocr")
    server.add_job("j1", [("running", 0), ("running", 1)])
    with LongdocClient(f"{BASE}/ocr", server.api_key, transport=server.transport()) as client:
        assert client.get("j1")["pages_done"] == 1
    assert server.requests[-1].url.path == "/ocr/v1/jobs/j1"


# --- error mapping ----------------------------------------------------------


def test_server_error_body_is_mapped(client, server):
    server.canned.append(
        error(422, "too_many_pages", "The document has 3000 pages; the limit is 2000.",
              hint="Split the document.", pages=3000, limit=2000)
    )
    with pytest.raises(ClientError) as info:
        client.submit(io.BytesIO(b"%PDF"))
    err = info.value
    assert (err.code, err.status, err.http_status) == ("too_many_pages", 422, 422)
    assert err.message == "The document has 3000 pages; the limit is 2000."
    assert err.hint == "Split the document."
    assert err.context == {"pages": 3000, "limit": 2000}
    assert err.retryable is False and err.retry_after_s is None
    assert err.to_dict()["code"] == "too_many_pages"


def test_429_carries_retry_after(client, server):
    server.canned.append(error(429, "rate_limited", "Slow down.", retryable=True, headers={"Retry-After": "17"}))
    with pytest.raises(ClientError) as info:
        client.get("anything")
    assert info.value.code == "rate_limited"
    assert info.value.status == 429 and info.value.retryable is True
    assert info.value.retry_after_s == 17


def test_wrong_key_and_unknown_job(server):
    with LongdocClient(BASE, "stolen", transport=server.transport()) as client, pytest.raises(ClientError) as info:
        client.list()
    assert (info.value.code, info.value.status) == ("unauthorized", 401)
    with (
        LongdocClient(BASE, server.api_key, transport=server.transport()) as client,
        pytest.raises(ClientError) as info,
    ):
        client.get("job-404")
    assert (info.value.code, info.value.status) == ("job_not_found", 404)


def test_an_error_that_is_not_json_still_maps(client, server):
    server.canned.append(httpx.Response(502, text="<html>Bad Gateway</html>", headers={"Retry-After": "5"}))
    with pytest.raises(ClientError) as info:
        client.get("job-1")
    err = info.value
    assert (err.code, err.status, err.retryable, err.retry_after_s) == ("http_502", 502, True, 5)
    assert "Bad Gateway" in err.message


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (httpx.ConnectError("connection refused"), "connection_failed"),
        (httpx.ReadTimeout("timed out"), "timeout"),
        (httpx.RemoteProtocolError("peer closed"), "connection_failed"),
    ],
)
def test_transport_failures_are_client_errors(exc, code):
    with failing_client(exc) as client, pytest.raises(ClientError) as info:
        client.get("job-1")
    assert info.value.code == code and info.value.status is None and info.value.retryable


# --- polling ----------------------------------------------------------------


def test_wait_long_polls_until_terminal(client, server):
    server.add_job("j1", [("queued", 0), ("running", 0), ("running", 3), ("partial", 4)])
    job = client.wait("j1", poll=25)
    assert job["state"] == "partial" and job["pages_done"] == 4
    gets = [r for r in server.requests if r.url.path == "/v1/jobs/j1"]
    assert len(gets) == 3
    assert all(r.url.params["wait"] == "25" for r in gets)


def test_wait_gives_up_after_timeout(client, server):
    server.add_job("j1", [("queued", 0), ("running", 1)])
    with pytest.raises(ClientError) as info:
        client.wait("j1", timeout=0)
    assert info.value.code == "wait_timeout"
    assert info.value.body["state"] == "running"


def test_get_without_wait_sends_no_wait(client, server):
    server.add_job("j1", [("queued", 0), ("running", 1)])
    assert client.get("j1")["state"] == "running"
    assert "wait" not in server.requests[-1].url.params


# --- events -----------------------------------------------------------------


def test_events_parse_the_stream(client, server):
    server.add_job("j1", [("running", 1)])
    server.events_body = (
        b": connected\r\n\r\n"
        b"event: progress\r\nid: 1\r\ndata: {\"id\": \"j1\", \"state\": \"running\", \"pages_done\": 1}\r\n\r\n"
        b": keep-alive\n\n"
        b"event: note\ndata: first line\ndata: second line\n\n"
        b"event: progress\ndata: {\"id\": \"j1\",\ndata:  \"state\": \"succeeded\"}\n\n"
        b"event: empty\n\n"
        b"event: end\ndata: {\"state\": \"succeeded\"}\n\n"
        b"event: progress\ndata: {\"after\": \"end\"}\n\n"
    )
    events = list(client.events("j1"))
    assert [e["event"] for e in events] == ["progress", "note", "progress", "end"]
    assert events[0]["data"] == {"id": "j1", "state": "running", "pages_done": 1} and events[0]["id"] == "1"
    assert events[1]["data"] == "first line\nsecond line"
    assert events[2]["data"] == {"id": "j1", "state": "succeeded"}  # JSON over two data lines
    assert events[3]["data"] == {"state": "succeeded"}
    request = server.requests[-1]
    assert request.url.path == "/v1/jobs/j1/events" and request.headers["Accept"] == "text/event-stream"


def test_an_error_event_raises_the_servers_error(client, server):
    """The server ends a stream whose key was revoked with an error event:
    the caller gets it as the error it is, not as one more event."""
    server.add_job("j1", [("running", 1)])
    server.events_body = (
        b"event: progress\ndata: {\"id\": \"j1\", \"state\": \"running\"}\n\n"
        b"event: error\ndata: {\"error\": {\"code\": \"unauthorized\", \"message\": \"The API key was revoked.\","
        b" \"retryable\": false}}\n\n"
    )
    seen = []
    with pytest.raises(ClientError) as info:
        for event in client.events("j1"):
            seen.append(event["event"])
    assert seen == ["progress"]
    assert info.value.code == "unauthorized" and "revoked" in str(info.value)


def test_parse_sse_rules():
    lines = ["data:no space", "", "retry: 100", "data: x", "unknown: y", "", "event: tail", "data: cut off"]
    assert list(parse_sse(iter(lines))) == [
        {"event": "message", "data": "no space", "id": None},
        {"event": "message", "data": "x", "id": None},
    ]


def test_events_of_an_unknown_job_raise(client):
    with pytest.raises(ClientError) as info:
        list(client.events("missing"))
    assert info.value.code == "job_not_found"


# --- pages and results ------------------------------------------------------


def test_page_ready_and_not_ready(client, server):
    server.add_job("j1", [("running", 2), ("succeeded", 5)])
    assert client.page("j1", 2)["number"] == 2
    with pytest.raises(ClientError) as info:
        client.page("j1", 3)
    assert info.value.code == "page_not_ready" and info.value.retryable
    with pytest.raises(ClientError) as info:
        client.page("j1", 9)
    assert info.value.code == "page_not_found" and not info.value.retryable


def test_result_as_bytes_and_streamed_to_a_file(client, server, tmp_path):
    big = b"".join(f"line {i}: some recognized text\n".encode() for i in range(40_000))  # ~1.2 MB
    server.add_job("j1", [("succeeded", 3)], md=b"# Title\n", json=big)
    assert client.result("j1") == b"# Title\n"
    assert server.requests[-1].url.params["format"] == "md"

    dest = tmp_path / "out.json"
    written = client.result("j1", "json", dest=dest)
    assert written == dest and dest.read_bytes() == big
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_a_broken_download_leaves_no_file(client, server, tmp_path):
    server.add_job("j1", [("succeeded", 3)])
    server.result_stream = ChunkStream([b"partial text"] * 3, fail_with=httpx.ReadError("connection reset"))
    dest = tmp_path / "out.md"
    with pytest.raises(ClientError) as info:
        client.result("j1", "md", dest=dest)
    assert info.value.code == "connection_failed"
    assert list(tmp_path.iterdir()) == []


def test_result_while_running_and_after_failure(client, server):
    server.add_job("running", [("running", 1)])
    server.add_job("broken", [("failed", 0)])
    with pytest.raises(ClientError) as info:
        client.result("running")
    assert info.value.code == "job_not_finished" and info.value.status == 202
    assert info.value.body["state"] == "running"
    with pytest.raises(ClientError) as info:
        client.result("broken")
    assert (info.value.code, info.value.status, info.value.hint) == ("corrupt_file", 409, "Re-export it.")


# --- cancel, delete, list ---------------------------------------------------


def test_cancel_a_running_job(client, server):
    server.add_job("j1", [("running", 0), ("running", 1)])
    job = client.cancel("j1")
    assert job["state"] == "cancelled"
    assert [r.method for r in server.requests] == ["GET", "DELETE"]
    assert "j1" in server.jobs  # cancelled, not deleted


def test_cancel_never_deletes_a_finished_job(client, server):
    server.add_job("j1", [("succeeded", 2)])
    assert client.cancel("j1")["state"] == "succeeded"
    assert "DELETE" not in [r.method for r in server.requests]
    assert "j1" in server.jobs


def test_delete_cancels_then_deletes(client, server):
    server.add_job("j1", [("running", 1)])
    server.add_job("j2", [("succeeded", 1)])
    client.delete("j1")
    client.delete("j2")
    assert server.jobs == {}
    assert [r.method for r in server.requests] == ["DELETE", "DELETE", "DELETE"]


def test_list_follows_the_cursor_and_filters():
    server = FakeLongdocServer(page_size_cap=2)
    for i in range(5):
        server.add_job(f"j{i}", [("succeeded" if i % 2 else "failed", 1)])
    with LongdocClient(BASE, server.api_key, transport=server.transport()) as client:
        assert [j["id"] for j in client.list()] == ["j0", "j1", "j2", "j3", "j4"]
        assert [j["id"] for j in client.list(limit=3)] == ["j0", "j1", "j2"]
        assert [j["id"] for j in client.list(state="succeeded")] == ["j1", "j3"]
    assert server.requests[-1].url.params["state"] == "succeeded"


# --- sync parse -------------------------------------------------------------


def test_parse_returns_the_document_or_text(client, server, tmp_path):
    doc = tmp_path / "small.pdf"
    doc.write_bytes(b"%PDF small")
    document = client.parse(doc, options={"ocr": "off"})
    assert document == {"pages": [{"number": 1, "blocks": []}], "source": "small.pdf"}
    assert json.loads(server.uploads[-1].fields["options"]) == {"ocr": "off"}
    assert client.parse(doc, format="md") == "# small.pdf\n"
    assert server.requests[-1].url.path == "/v1/parse" and server.requests[-1].url.params["format"] == "md"


def test_parse_that_outlasts_the_server_wait_names_the_job(client, server):
    server.parse_too_slow = True
    with pytest.raises(ClientError) as info:
        client.parse(io.BytesIO(b"%PDF slow"))
    assert info.value.code == "job_not_finished"
    assert info.value.context["job_id"] == info.value.body["id"] == "job-1"
