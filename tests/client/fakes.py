"""FakeLongdocServer: a tiny in-memory fake of the longdoc HTTP contract.

It is a test double for the client only (served through
``httpx.MockTransport``); the real server is tested end to end elsewhere.
Jobs advance one step of their ``script`` of ``(state, pages_done)`` on every
``GET /v1/jobs/{id}``, so a long-poll loop sees progress.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import default as email_policy
from typing import Any

import httpx

TERMINAL = {"succeeded", "partial", "failed", "cancelled", "expired"}


@dataclass
class FakeJob:
    id: str
    script: list[tuple[str, int]]
    filename: str = "upload"
    options: dict[str, Any] = field(default_factory=dict)
    step: int = 0
    results: dict[str, bytes] = field(default_factory=dict)

    @property
    def state(self) -> str:
        return self.script[self.step][0]

    def advance(self) -> None:
        self.step = min(self.step + 1, len(self.script) - 1)

    def public(self) -> dict[str, Any]:
        state, pages_done = self.script[self.step]
        error = {"code": "corrupt_file", "message": "Broken.", "hint": "Re-export it."} if state == "failed" else None
        return {
            "id": self.id,
            "state": state,
            "filename": self.filename,
            "pages_total": self.script[-1][1],
            "pages_done": pages_done,
            "queue_position": 1 if state == "queued" else None,
            "options": self.options,
            "error": error,
            "links": {"self": f"/v1/jobs/{self.id}"},
        }


@dataclass
class Upload:
    filename: str | None
    content: bytes
    fields: dict[str, str]


def error(status: int, code: str, message: str = "Refused.", *, hint: str = "Do something else.",
          retryable: bool = False, headers: dict[str, str] | None = None, **context: Any) -> httpx.Response:
    body = {"error": {"code": code, "message": message, "hint": hint, "retryable": retryable, "context": context}}
    return httpx.Response(status, json=body, headers=headers)


class FakeLongdocServer:
    """Routes requests like the contract's ``/v1`` API; records what it got."""

    def __init__(self, api_key: str = "key-1", *, prefix: str = "", page_size_cap: int = 200) -> None:
        self.api_key = api_key
        self.prefix = prefix
        self.page_size_cap = page_size_cap
        self.jobs: dict[str, FakeJob] = {}
        self.requests: list[httpx.Request] = []
        self.uploads: list[Upload] = []
        self.by_idempotency_key: dict[str, str] = {}
        self.canned: list[httpx.Response] = []  # answered first, in order, to any request
        self.events_body: bytes = b""
        self.events_chunk_bytes = 7  # SSE bytes arrive in small, arbitrary chunks
        self.result_stream: httpx.SyncByteStream | None = None
        self.parse_too_slow = False
        self.next_script: list[tuple[str, int]] = [("queued", 0), ("running", 1), ("succeeded", 2)]

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def add_job(self, job_id: str, script: list[tuple[str, int]], **results: bytes) -> FakeJob:
        job = FakeJob(job_id, script, results=results)
        self.jobs[job_id] = job
        return job

    # --- routing --------------------------------------------------------

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.canned:
            return self.canned.pop(0)
        if request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return error(401, "unauthorized", "Missing or invalid API key.")
        path = request.url.path.removeprefix(self.prefix)
        routes = [
            ("POST", r"/v1/jobs", self._submit),
            ("GET", r"/v1/jobs", self._list),
            ("POST", r"/v1/parse", self._parse),
            ("GET", r"/v1/jobs/(?P<id>[^/]+)", self._get),
            ("DELETE", r"/v1/jobs/(?P<id>[^/]+)", self._delete),
            ("GET", r"/v1/jobs/(?P<id>[^/]+)/events", self._events),
            ("GET", r"/v1/jobs/(?P<id>[^/]+)/pages/(?P<n>\d+)", self._page),
            ("GET", r"/v1/jobs/(?P<id>[^/]+)/result", self._result),
        ]
        for method, pattern, route in routes:
            match = re.fullmatch(pattern, path)
            if method == request.method and match:
                args = match.groupdict()
                if "id" in args and args["id"] not in self.jobs:
                    return error(404, "job_not_found", f"No job {args['id']}.")
                return route(request, **args)
        return error(404, "not_found", f"No route {request.method} {path}.")

    # --- endpoints ------------------------------------------------------

    def _submit(self, request: httpx.Request) -> httpx.Response:
        upload = parse_multipart(request)
        self.uploads.append(upload)
        key = request.headers.get("Idempotency-Key")
        if key and key in self.by_idempotency_key:
            return httpx.Response(200, json=self._accepted(self.jobs[self.by_idempotency_key[key]]))
        job = self.add_job(f"job-{len(self.jobs) + 1}", list(self.next_script))
        job.filename = upload.filename or "upload"
        job.options = json.loads(upload.fields.get("options", "{}"))
        if key:
            self.by_idempotency_key[key] = job.id
        return httpx.Response(202, json=self._accepted(job))

    def _accepted(self, job: FakeJob) -> dict[str, Any]:
        public = job.public()
        return {k: public[k] for k in ("id", "state", "queue_position", "links")}

    def _get(self, request: httpx.Request, id: str) -> httpx.Response:
        job = self.jobs[id]
        job.advance()
        return httpx.Response(200, json=job.public())

    def _list(self, request: httpx.Request) -> httpx.Response:
        params = request.url.params
        jobs = [j for j in self.jobs.values() if params.get("state") in (None, j.state)]
        start = int(params.get("cursor", "0"))
        limit = min(int(params.get("limit", "50")), self.page_size_cap)
        page = jobs[start:start + limit]
        more = start + limit < len(jobs)
        return httpx.Response(200, json={"items": [j.public() for j in page],
                                         "next": str(start + limit) if more else None})

    def _delete(self, request: httpx.Request, id: str) -> httpx.Response:
        job = self.jobs[id]
        if job.state in TERMINAL:
            del self.jobs[id]
            return httpx.Response(204)
        job.script, job.step = [*job.script[: job.step + 1], ("cancelled", job.script[job.step][1])], job.step + 1
        return httpx.Response(202, json=job.public())

    def _events(self, request: httpx.Request, id: str) -> httpx.Response:
        body, size = self.events_body, self.events_chunk_bytes
        chunks = [body[i:i + size] for i in range(0, len(body), size)]
        return httpx.Response(200, headers={"Content-Type": "text/event-stream"},
                              stream=ChunkStream(chunks))

    def _page(self, request: httpx.Request, id: str, n: str) -> httpx.Response:
        job = self.jobs[id]
        if int(n) > job.public()["pages_total"]:
            return error(404, "page_not_found", f"No page {n}.")
        if int(n) > job.public()["pages_done"]:
            return error(404, "page_not_ready", f"Page {n} is not done yet.", retryable=True)
        return httpx.Response(200, json={"number": int(n), "blocks": []})

    def _result(self, request: httpx.Request, id: str) -> httpx.Response:
        job = self.jobs[id]
        if job.state == "failed":
            return error(409, "corrupt_file", "Broken.", hint="Re-export it.")
        if job.state not in TERMINAL:
            return httpx.Response(202, json=job.public())
        if self.result_stream is not None:
            return httpx.Response(200, stream=self.result_stream)
        content = job.results[request.url.params.get("format", "md")]
        chunks = [content[i:i + 4096] for i in range(0, len(content), 4096)]
        return httpx.Response(200, stream=ChunkStream(chunks))

    def _parse(self, request: httpx.Request) -> httpx.Response:
        upload = parse_multipart(request)
        self.uploads.append(upload)
        job = self.add_job(f"job-{len(self.jobs) + 1}", [("running", 0)])
        if self.parse_too_slow:
            return httpx.Response(202, json=job.public(), headers={"Location": f"/v1/jobs/{job.id}"})
        fmt = request.url.params.get("format", "json")
        if fmt == "json":
            return httpx.Response(200, json={"pages": [{"number": 1, "blocks": []}], "source": upload.filename})
        return httpx.Response(200, text=f"# {upload.filename}\n")


class ChunkStream(httpx.SyncByteStream):
    """Yields the given chunks; raises ``fail_with`` after them when set."""

    def __init__(self, chunks: list[bytes], fail_with: Exception | None = None) -> None:
        self.chunks = chunks
        self.fail_with = fail_with

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks
        if self.fail_with is not None:
            raise self.fail_with


def parse_multipart(request: httpx.Request) -> Upload:
    """The file part and the other form fields of a multipart/form-data request."""
    head = f"Content-Type: {request.headers['Content-Type']}\r\n\r\n".encode()
    message = BytesParser(policy=email_policy).parsebytes(head + request.read())
    fields: dict[str, str] = {}
    filename, content = None, b""
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True) or b""
        if name == "file":
            filename, content = part.get_filename(), payload
        else:
            fields[str(name)] = payload.decode()
    return Upload(filename, content, fields)
