"""Submit → progress → result, on SQLite and PostgreSQL, against the CLI's
output for the same input and options; idempotency; per-page results; the
synchronous endpoint; ``longdoc submit --wait``."""

from __future__ import annotations

import json
import threading
import uuid

import pytest

from tests.service.conftest import Server
from tests.service.helpers import (
    accepted,
    error_code,
    get_job,
    submit,
    wait_terminal,
    without_volatile,
)

CHUNK, OVERLAP, DPI = 4, 1, 150


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def backend_server(request, server, tmp_path_factory):
    if request.param == "sqlite":
        yield server
        return
    url = request.getfixturevalue("pg_server").create_database()
    srv = Server(tmp_path_factory.mktemp("server-pg"), url).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def cli_outputs(tmp_path_factory):
    """``longdoc parse`` outputs per (file, pages), computed once."""
    cache: dict[tuple, dict[str, bytes]] = {}

    def run(server: Server, path, pages: str | None) -> dict[str, bytes]:
        if (path, pages) not in cache:
            out = tmp_path_factory.mktemp("cli-out")
            args = ["parse", str(path), "-o", str(out), "--ocr", "auto", "--dpi", str(DPI),
                    "--chunk-size", str(CHUNK), "--overlap", str(OVERLAP), "--workers", "1", "-q"]
            if pages:
                args += ["--pages", pages]
            server.cli(*args, timeout=300)
            cache[(path, pages)] = {fmt: (out / f"{path.stem}.{fmt}").read_bytes() for fmt in ("md", "json", "txt")}
        return cache[(path, pages)]

    return run


class SseReader(threading.Thread):
    """Follows ``/events`` of a job in the background."""

    def __init__(self, client, job_id: str) -> None:
        super().__init__(daemon=True)
        self.client, self.job_id = client, job_id
        self.events: list[dict] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for event in self.client.events(self.job_id, read_timeout=60):
                self.events.append(event)
        except BaseException as exc:  # reported by the test
            self.error = exc


@pytest.mark.parametrize("doc, pages", [("report", None), ("sample", "3-4")], ids=["born-digital-8p", "sample-p3-4-ocr"])
def test_submit_progress_result_equals_cli(backend_server, cli_outputs, report_doc, sample_pdf, doc, pages):
    path = report_doc.pdf_path if doc == "report" else sample_pdf
    key = backend_server.create_key("flow")
    options = {"formats": ["md", "json", "txt"], "ocr": "auto", "dpi": DPI, **({"pages": pages} if pages else {})}
    with backend_server.http(key) as http, backend_server.client(key) as client:
        job = accepted(submit(http, path, options))
        assert job["state"] in ("queued", "running")
        assert job["links"]["result"] == f"/v1/jobs/{job['id']}/result"
        sse = SseReader(client, job["id"])
        sse.start()
        polled: list[dict] = []
        final = wait_terminal(http, job["id"], seen=polled)
        sse.join(timeout=60)

        assert final["state"] == "succeeded", final
        expected_pages = 2 if pages else report_doc.pages
        assert final["pages_total"] == final["pages_done"] == expected_pages
        assert final["engine"] == "rapidocr" and final["engine_version"]
        assert final["failed_pages"] == [] and final["error"] is None
        done = [j["pages_done"] for j in polled]
        assert done == sorted(done), f"long-poll pages_done went backwards: {done}"

        assert sse.error is None, sse.error
        assert sse.events and sse.events[-1]["event"] == "end", sse.events
        assert sse.events[-1]["data"]["state"] == "succeeded"
        progress = [e["data"] for e in sse.events if e["event"] == "progress"]
        assert progress and progress[-1]["pages_done"] == expected_pages
        sse_done = [p["pages_done"] for p in progress]
        assert sse_done == sorted(sse_done), f"SSE pages_done went backwards: {sse_done}"

        cli = cli_outputs(backend_server, path, pages)
        for fmt in ("md", "txt"):
            r = http.get(f"/v1/jobs/{job['id']}/result", params={"format": fmt})
            assert r.status_code == 200, r.text
            assert r.content == cli[fmt], f"{fmt} differs from the CLI's"
        r = http.get(f"/v1/jobs/{job['id']}/result", params={"format": "json"})
        assert r.status_code == 200
        assert without_volatile(r.json()) == without_volatile(json.loads(cli["json"]))


def test_idempotency(server, report_doc):
    key = server.create_key("idem")
    path = report_doc.pdf_path
    with server.http(key) as http:
        idem = {"Idempotency-Key": f"k-{uuid.uuid4()}"}
        first = accepted(submit(http, path, {"formats": ["md"]}, headers=idem))
        again = submit(http, path, {"formats": ["md"]}, headers=idem)
        assert again.status_code == 200 and again.json()["id"] == first["id"]

        plain = submit(http, path, {"formats": ["md"]})  # same bytes and options, no key
        assert plain.status_code == 200 and plain.json()["id"] == first["id"]

        reused = submit(http, path, {"formats": ["txt"]}, headers=idem)  # same key, other request
        assert reused.status_code == 409 and error_code(reused) == "idempotency_key_reused"

        other = accepted(submit(http, path, {"formats": ["md"], "pages": "1-2"}))
        assert other["id"] != first["id"]
        for job_id in (first["id"], other["id"]):
            assert wait_terminal(http, job_id)["state"] == "succeeded"
        # the caller's list: newest first, paged with the cursor, filtered by state
        page1 = http.get("/v1/jobs", params={"limit": 1}).json()
        assert [j["id"] for j in page1["items"]] == [other["id"]] and page1["next"]
        page2 = http.get("/v1/jobs", params={"limit": 1, "cursor": page1["next"]}).json()
        assert [j["id"] for j in page2["items"]] == [first["id"]] and page2["next"] is None
        assert len(http.get("/v1/jobs", params={"state": "succeeded"}).json()["items"]) == 2
        assert http.get("/v1/jobs", params={"state": "queued"}).json()["items"] == []
        # finished and still the same content: the existing job is answered again
        assert submit(http, path, {"formats": ["md"]}).json()["id"] == first["id"]
        # answered or refused requests left nothing behind in the store
        jobs_dir = server.store / "tenants" / key.tenant / "jobs"
        stored = {f.relative_to(jobs_dir).parts[0] for f in jobs_dir.rglob("*") if f.is_file()}
        assert stored == {first["id"], other["id"]}
        # another tenant never gets this tenant's job
        with server.http(server.create_key("idem-other")) as other_http:
            assert accepted(submit(other_http, path, {"formats": ["md"]}))["id"] != first["id"]


def test_pages_of_a_finished_job(server, report_doc):
    key = server.create_key("pages")
    with server.http(key) as http:
        job = accepted(submit(http, report_doc.pdf_path, {"formats": ["json"], "pages": "2-6"}))
        assert wait_terminal(http, job["id"])["state"] == "succeeded"
        for n in (2, 6):
            r = http.get(f"/v1/jobs/{job['id']}/pages/{n}")
            assert r.status_code == 200, r.text
            page = r.json()
            assert page["number"] == n and page["status"] == "ok"
            text = " ".join(line["text"] for b in page["blocks"] for line in b["lines"])
            first_words = report_doc.main_text_per_page[n - 1].split()[:4]
            assert " ".join(first_words) in text
        for n in (1, 7, 0):  # outside the selected range
            r = http.get(f"/v1/jobs/{job['id']}/pages/{n}")
            assert r.status_code == 404 and error_code(r) == "page_not_found", (n, r.text)


def test_sync_parse(server, report_doc, long_doc):
    key = server.create_key("sync")
    with server.http(key) as http:
        r = submit(http, report_doc.pdf_path, {"pages": "1-3"}, url="/v1/parse")
        assert r.status_code == 200, r.text
        doc = r.json()
        assert [p["number"] for p in doc["pages"]] == [1, 2, 3]
        assert doc["status"] == "succeeded"
        job_id = r.headers["X-Longdoc-Job"]
        assert get_job(http, job_id)["state"] == "succeeded"

        md = submit(http, report_doc.pdf_path, {"pages": "1"}, url="/v1/parse", format="md")
        assert md.status_code == 200 and md.headers["content-type"].startswith("text/markdown")
        assert report_doc.main_text_per_page[0].split()[0] in md.text

        too_many = submit(http, long_doc.pdf_path, None, url="/v1/parse")  # 600 pages > sync_max_pages 10
        assert too_many.status_code == 422 and error_code(too_many) == "too_many_pages"


def test_submit_cli_writes_the_api_result(server, report_doc, tmp_path):
    key = server.create_key("cli")
    out = tmp_path / "out"
    proc = server.cli("submit", str(report_doc.pdf_path), "--wait", "--url", server.url, "--api-key", key.key,
                      "-o", str(out), "--format", "md,txt", timeout=300)
    job_id = proc.stdout.split(" job ", 1)[1].split()[0]
    with server.http(key) as http:
        for fmt in ("md", "txt"):
            api = http.get(f"/v1/jobs/{job_id}/result", params={"format": fmt})
            assert api.status_code == 200
            assert (out / f"{report_doc.pdf_path.stem}.{fmt}").read_bytes() == api.content
