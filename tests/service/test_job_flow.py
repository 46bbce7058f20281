"""Submit → progress → result, on SQLite and PostgreSQL, against the CLI's
output for the same input and options; ``longdoc submit --wait``
(idempotency, per-page results and the synchronous endpoint are in
tests/api/test_jobs.py, in process)."""

from __future__ import annotations

import json
import threading

import pytest

from tests.service.conftest import Server
from tests.service.helpers import (
    accepted,
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


def test_a_jobs_profile_chooses_how_its_pages_are_read_and_is_recorded(server, report_doc):
    """``options.profile``: the fast job reads with the tiny recognizer alone
    (no glyph checks, no layout models), the default one with the cascade;
    each says so in its options and in every page's engine version, and
    both read the page."""
    key = server.create_key("profiles")
    options = {"formats": ["json"], "ocr": "force", "pages": "1"}
    with server.http(key) as http:
        fast = accepted(submit(http, report_doc.pdf_path, {**options, "profile": "fast"}))
        default = accepted(submit(http, report_doc.pdf_path, options))
        read = {}
        for name, job in (("fast", fast), ("default", default)):
            done = wait_terminal(http, job["id"])
            assert done["state"] == "succeeded", done
            assert done["options"]["profile"] == ("fast" if name == "fast" else "balanced")
            document = http.get(f"/v1/jobs/{job['id']}/result", params={"format": "json"}).json()
            assert document["options"]["profile"] == done["options"]["profile"]
            (page,) = document["pages"]
            read[name] = (page["engine_version"], " ".join(b["text"] for b in page["blocks"]))
    assert "/PP-OCRv6-tiny/" in read["fast"][0] and read["fast"][0].endswith("/no-glyph-checks")
    assert "/PP-OCRv6-tiny+small/" in read["default"][0]
    truth = report_doc.main_text_per_page[0].split()
    for version, text in read.values():
        words = set(text.split())
        assert sum(w in words for w in truth) >= 0.95 * len(truth), (version, text[:200])
