"""The Celery fleet under load and faults: real API and worker processes,
real PostgreSQL and Redis, moto's S3 server standing in for S3.

Every test checks what a user would see: the job ends ``succeeded`` and
its exports hold every page exactly once, in order, whatever was killed
or restarted on the way.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
import redis

from tests.docgen import long_textlayer
from tests.pki import pki  # noqa: F401  (fixture)
from tests.runner.conftest import wait_for
from tests.service.helpers import accepted, submit, wait_terminal

RECORD = re.compile(r"Record (\d+)\.")
#: the fault tests read the 120-page document in 8 groups (stride 15): enough tasks to kill one
#: mid-document, few enough to stay quick
LARGER_GROUPS = {"page_chunk_size": 16, "chunk_overlap": 1}
#: the queue bound of the burst test (it sends five times as many, 16 at a time)
BURST_BOUND = 20
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def doc_120(tmp_path_factory):
    return long_textlayer(tmp_path_factory.mktemp("fleet-docs"), pages=120, seed=5)


def every_page_once_in_order(http: httpx.Client, job_id: str, pages: int) -> str:
    """The job's text export, after checking that its pages are 1..pages,
    each once, in order, all ok (text and JSON)."""
    txt = http.get(f"/v1/jobs/{job_id}/result", params={"format": "txt"}, follow_redirects=True)
    assert txt.status_code == 200, txt.text
    assert [int(n) for n in RECORD.findall(txt.text)] == list(range(1, pages + 1))
    doc = http.get(f"/v1/jobs/{job_id}/result", params={"format": "json"}, follow_redirects=True).json()
    assert [p["number"] for p in doc["pages"]] == list(range(1, pages + 1))
    assert all(p["status"] == "ok" for p in doc["pages"])
    return txt.text


def page_rows(fleet, job_id: str) -> list[int]:
    return [r[0] for r in fleet.sql("select page from job_pages where job_id = :j order by page", j=job_id)]


def tasks_of(fleet, job_id: str) -> dict[str, tuple]:
    rows = fleet.sql("select name, state, attempts, worker_id from job_tasks where job_id = :j", j=job_id)
    return {r[0]: r[1:] for r in rows}


def running_task(fleet, job_id: str) -> tuple[str, str] | None:
    rows = fleet.sql("select name, worker_id from job_tasks where job_id = :j and state = 'running' "
                     "and name like 'group:%'", j=job_id)
    return rows[0] if rows else None


def worker_holding(fleet, worker_id: str):
    """The Worker whose process group holds the process named in ``worker_id``."""
    pid = int(worker_id.rsplit(":", 2)[1])
    group = subprocess.run(["ps", "-o", "pgid=", "-p", str(pid)], capture_output=True, text=True).stdout.strip()
    return next(w for w in fleet.workers if str(w.proc.pid) == group)


def test_a_120_page_document_spreads_over_two_workers_and_equals_the_cli(start_fleet, doc_120, tmp_path):
    fleet = start_fleet(workers=2, storage={"s3": {"presign_seconds": 300}})
    key = fleet.create_key("fleet")
    options = {"formats": ["txt", "json", "md"]}
    with fleet.api.http(key) as http:
        job = accepted(submit(http, doc_120.pdf_path, options))
        final = wait_terminal(http, job["id"], timeout=180)
        assert final["state"] == "succeeded", final
        assert final["pages_done"] == final["pages_total"] == 120
        text = every_page_once_in_order(http, job["id"], 120)
        # results come from the store by a presigned URL (moto's), not through the API
        redirect = http.get(f"/v1/jobs/{job['id']}/result", params={"format": "md"})
        assert redirect.status_code == 307 and "X-Amz-Signature=" in redirect.headers["location"]
        with fleet.api.client(key) as client:
            md = client.result(job["id"], format="md")
    assert page_rows(fleet, job["id"]) == list(range(1, 121))
    tasks = tasks_of(fleet, job["id"])
    groups = {n: t for n, t in tasks.items() if n.startswith("group:")}
    assert len(groups) == 17 and all(t[0] == "done" for t in tasks.values()), tasks  # 120 pages, C=8, O=1: stride 7
    assert len({t[2] for t in groups.values()}) == 2, "the groups ran on both workers"
    # the same document through `longdoc parse` in one process gives the same exports
    out = tmp_path / "cli"
    subprocess.run([sys.executable, "-m", "longdoc.cli", "parse", str(doc_120.pdf_path), "-o", str(out),
                    "--format", "txt,md", "--config", str(fleet.api.config_path)], check=True, capture_output=True,
                   timeout=300, env=_local_env(fleet))
    assert (out / f"{doc_120.pdf_path.stem}.txt").read_text() == text
    assert (out / f"{doc_120.pdf_path.stem}.md").read_bytes() == md


def _local_env(fleet) -> dict[str, str]:
    """The CLI runs the pipeline itself: same settings, no queue."""
    import os

    return {**os.environ, "LONGDOC_QUEUE__BACKEND": "embedded"}


def test_a_worker_killed_mid_document_loses_and_duplicates_no_page(start_fleet, doc_120):
    fleet = start_fleet(workers=2, inference=LARGER_GROUPS)
    key = fleet.create_key("kill9")
    with fleet.api.http(key) as http:
        job = accepted(submit(http, doc_120.pdf_path, {"formats": ["txt", "json"]}))
        name, owner = wait_for(lambda: running_task(fleet, job["id"]), 60, "a page group running")
        victim = worker_holding(fleet, owner)
        victim.kill9()
        done_at_kill = len(page_rows(fleet, job["id"]))
        final = wait_terminal(http, job["id"], timeout=240)
        assert final["state"] == "succeeded", final
        assert done_at_kill < 120
        every_page_once_in_order(http, job["id"], 120)
    assert page_rows(fleet, job["id"]) == list(range(1, 121))
    state, attempts, worker = tasks_of(fleet, job["id"])[name]
    assert state == "done" and attempts >= 2 and worker != owner, (name, state, attempts, worker)
    survivor = next(w for w in fleet.workers if w is not victim)
    assert "task taken back from a silent worker" in survivor.log_text()


def test_a_broker_restart_mid_document_loses_no_task(start_fleet, doc_120):
    fleet = start_fleet(workers=2, inference=LARGER_GROUPS)
    key = fleet.create_key("redis")
    with fleet.api.http(key) as http:
        job = accepted(submit(http, doc_120.pdf_path, {"formats": ["txt", "json"]}))
        wait_for(lambda: 0 < len(page_rows(fleet, job["id"])) < 60, 60, "the document half way")
        fleet.restart_redis()   # every queued message is gone with it
        final = wait_terminal(http, job["id"], timeout=240)
        assert final["state"] == "succeeded", final
        every_page_once_in_order(http, job["id"], 120)
    assert page_rows(fleet, job["id"]) == list(range(1, 121))
    assert any("reconciled" in w.log_text() for w in fleet.workers)


def test_an_api_restart_mid_document_changes_nothing_for_the_job(start_fleet, doc_120):
    fleet = start_fleet(workers=2, inference=LARGER_GROUPS)
    key = fleet.create_key("api")
    with fleet.api.http(key) as http:
        job = accepted(submit(http, doc_120.pdf_path, {"formats": ["txt", "json"]}))
        wait_for(lambda: 0 < len(page_rows(fleet, job["id"])) < 60, 60, "the document half way")
    fleet.api.kill9()
    fleet.api.start()
    with fleet.api.http(key) as http:
        final = wait_terminal(http, job["id"], timeout=240)
        assert final["state"] == "succeeded" and final["attempts"] == 0, final
        every_page_once_in_order(http, job["id"], 120)
    assert "job recovered" not in fleet.api.log_text()  # the API recovers nothing: the workers' leases are alive


def _one_page_pdfs(folder: Path, n: int) -> list[Path]:
    """``n`` born-digital one-page PDFs, each with enough text that its text
    layer is read (a page of one short line is read by OCR: too_little_text)."""
    from fpdf import FPDF

    paths = []
    for i in range(n):
        pdf = FPDF()
        pdf.add_page()
        pdf.set_font("helvetica", size=14)
        pdf.multi_cell(w=0, text=f"Burst document number {i}. It is one of a hundred uploads sent at once, "
                                 "most of which the queue bound turns away with a clear answer.")
        path = folder / f"burst-{i:03d}.pdf"
        pdf.output(str(path))
        paths.append(path)
    return paths


def test_a_burst_of_five_times_the_queue_bound_refuses_the_excess_and_finishes_the_rest(start_fleet, tmp_path):
    fleet = start_fleet(workers=2, service={"max_queued": BURST_BOUND})
    key = fleet.create_key("burst")
    docs = _one_page_pdfs(tmp_path, 5 * BURST_BOUND)
    with fleet.api.http(key, timeout=120) as http:
        with ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(lambda p: submit(http, p, {"formats": ["txt"]}), docs))
        codes = [a.status_code for a in answers]
        assert set(codes) <= {202, 429}, sorted(set(codes))
        refused = [a for a in answers if a.status_code == 429]
        assert refused and all(a.json()["error"]["code"] == "queue_full" and a.headers.get("Retry-After")
                               for a in refused)
        jobs = [a.json()["id"] for a in answers if a.status_code == 202]
        assert len(jobs) >= BURST_BOUND
        deadline = time.monotonic() + 400
        for job_id, _path in zip(jobs, [p for p, a in zip(docs, answers) if a.status_code == 202]):
            final = wait_terminal(http, job_id, timeout=max(5.0, deadline - time.monotonic()))
            assert final["state"] == "succeeded", final
        # each accepted document came back as itself
        sample = jobs[:: max(1, len(jobs) // 10)]
        for job_id in sample:
            text = http.get(f"/v1/jobs/{job_id}/result", params={"format": "txt"}).text
            assert re.search(r"Burst document number \d+\.", text), text
    assert fleet.sql("select count(*) from jobs where state <> 'succeeded'") == [(0,)]


def test_a_scan_read_by_an_engine_worker_that_never_opens_it_equals_the_cli(start_fleet, sample_pdf, tmp_path):
    """Render on a cpu worker, OCR and layout on an engine-only worker: the
    sample (3 born-digital pages, 2 scanned two-column pages) comes out as
    `longdoc parse` makes it in one process."""
    fleet = start_fleet(workers=0, service={"short_doc_pages": 1},
                        inference={"page_chunk_size": 2, "chunk_overlap": 1})
    cpu, engine = fleet.add_worker("cpu,short"), fleet.add_worker("engine")
    cpu.wait_ready()
    engine.wait_ready()
    key = fleet.create_key("scan")
    with fleet.api.http(key) as http:
        job = accepted(submit(http, sample_pdf, {"formats": ["txt", "md"], "dpi": 100}))
        final = wait_terminal(http, job["id"], timeout=300)
        assert final["state"] == "succeeded", final
        got = {fmt: http.get(f"/v1/jobs/{job['id']}/result", params={"format": fmt}).content for fmt in ("txt", "md")}
    tasks = tasks_of(fleet, job["id"])
    renders = [n for n in tasks if n.startswith("render:")]
    groups = [n for n in tasks if n.startswith("group:")]
    assert len(renders) == len(groups) == 4 and all(t[0] == "done" for t in tasks.values()), tasks
    engine_pid = str(engine.proc.pid)
    for name in groups:   # every page group ran on the engine-only worker, from its prepared group
        assert _group_of(tasks[name][2]) == engine_pid, (name, tasks[name])
    assert "prepared group missing" not in engine.log_text()
    assert fleet.sql("select count(*) from job_tasks where job_id = :j and name like 'render:%%' and queue = 'cpu'",
                     j=job["id"]) == [(4,)]
    out = tmp_path / "cli"
    subprocess.run([sys.executable, "-m", "longdoc.cli", "parse", str(sample_pdf), "-o", str(out), "--format",
                    "txt,md", "--dpi", "100", "--config", str(fleet.api.config_path)], check=True,
                   capture_output=True, timeout=300, env=_local_env(fleet))
    assert got["txt"] == (out / "sample.txt").read_bytes()
    assert got["md"] == (out / "sample.md").read_bytes()


def _group_of(worker_id: str) -> str:
    pid = int(worker_id.rsplit(":", 2)[1])
    return subprocess.run(["ps", "-o", "pgid=", "-p", str(pid)], capture_output=True, text=True).stdout.strip()


def _rabbitmq_up() -> bool:
    import socket

    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", 5672)) == 0


@pytest.mark.skipif(not _rabbitmq_up(), reason="RabbitMQ is not listening on 127.0.0.1:5672")
def test_the_fleet_runs_the_same_on_rabbitmq(start_fleet, doc_120):
    """RabbitMQ as the broker (the machine's, default vhost): a message left
    there by another run names a task no database row knows and is skipped."""
    fleet = start_fleet(workers=0, queue={"broker_url": "amqp://guest:guest@127.0.0.1:5672//"})
    for w in (fleet.add_worker(), fleet.add_worker()):
        w.wait_ready()
    key = fleet.create_key("rabbit")
    with fleet.api.http(key) as http:
        job = accepted(submit(http, doc_120.pdf_path, {"formats": ["txt", "json"]}))
        final = wait_terminal(http, job["id"], timeout=180)
        assert final["state"] == "succeeded", final
        every_page_once_in_order(http, job["id"], 120)
    groups = {n: t for n, t in tasks_of(fleet, job["id"]).items() if n.startswith("group:")}
    assert len({t[2] for t in groups.values()}) == 2, "the groups ran on both workers"


def test_the_broker_and_the_rate_limits_run_over_tls_to_redis(start_fleet, pki, tmp_path):
    """Redis listening only over TLS (rediss://, its CA in queue.tls_ca_file):
    the API sends tasks and the worker takes them through it, and the API
    counts a key's requests in it."""
    fleet = start_fleet(workers=1, redis_tls=pki, inference={"regions": False})
    assert fleet.redis.url.startswith("rediss://")
    doc = long_textlayer(tmp_path, pages=20, seed=3)  # past short_doc_pages: ingest, render, groups, assemble
    with fleet.api.http(fleet.create_key("tls")) as http:
        job = accepted(submit(http, doc.pdf_path, {"formats": ["txt", "json"]}))
        assert wait_terminal(http, job["id"], timeout=180)["state"] == "succeeded"
        every_page_once_in_order(http, job["id"], 20)
    assert {n.split(":")[0] for n in tasks_of(fleet, job["id"])} >= {"ingest", "render", "group", "assemble"}
    limited = fleet.api.create_key("tls-limited", rate_limit=2)
    with fleet.api.http(limited) as http:
        assert [http.get("/v1/jobs").status_code for _ in range(3)] == [200, 200, 429]
    counts = redis.Redis.from_url(fleet.redis.url, ssl_ca_certs=str(pki.ca))
    assert list(counts.scan_iter(match="longdoc:*"))  # counted in the TLS Redis
    counts.close()
