"""Durability: a job survives kill -9 and SIGTERM of the server and
completes after the restart with every page exactly once, in order, resumed
from its checkpoint rather than redone; an accepted job never vanishes."""

from __future__ import annotations

import re
import signal
import threading
import time

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from longdoc.jobs import db
from longdoc.jobs.repo import JobRepo
from longdoc.jobs.task_repo import TaskRepo
from tests.docgen import GeneratedDoc, long_textlayer
from tests.service.helpers import accepted, get_job, submit, wait_for, wait_terminal

RECORD = re.compile(r"Record (\d+)\.")
#: groups of 16 pages (stride 15): the long document's 300 pages are 20 groups, so a kill or a signal
#: still lands between many checkpointed groups, and the document is read in a fraction of the time the
#: served tests' 4-page groups take
GROUPS = {"inference": {"page_chunk_size": 16, "chunk_overlap": 1}}


@pytest.fixture(scope="module")
def long_doc(docs_dir) -> GeneratedDoc:
    """300 born-digital pages (the session's 600-page document took twice as long to say the same)."""
    return long_textlayer(docs_dir, pages=300, seed=5)


def assert_every_page_once_in_order(http, job_id: str, pages: int) -> None:
    txt = http.get(f"/v1/jobs/{job_id}/result", params={"format": "txt"})
    assert txt.status_code == 200
    assert [int(n) for n in RECORD.findall(txt.text)] == list(range(1, pages + 1))
    doc = http.get(f"/v1/jobs/{job_id}/result", params={"format": "json"}).json()
    assert [p["number"] for p in doc["pages"]] == list(range(1, pages + 1))
    assert all(p["status"] == "ok" for p in doc["pages"])


def pages_counted(srv) -> float:
    """``longdoc_pages_total`` summed over labels: pages this process worked on."""
    text = httpx.get(f"{srv.url}/metrics").text
    return sum(s.value for fam in text_string_to_metric_families(text) if fam.name == "longdoc_pages"
               for s in fam.samples if s.name == "longdoc_pages_total")


def job_row(srv, job_id: str):
    """The job and its tasks as the database holds them (read while no server runs)."""
    engine = db.make_engine(srv.config["database"]["url"])
    try:
        sessions = db.session_factory(engine)
        return JobRepo(sessions).get_any(job_id), TaskRepo(sessions).of_job(job_id)
    finally:
        engine.dispose()


def wait_until(predicate, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"no {what} after {timeout} s"
        time.sleep(0.05)


def mid_job(http, job_id: str, total: int) -> dict:
    job = wait_for(http, job_id, lambda j: j["state"] == "running" and j["pages_done"] > 0)
    assert job["state"] == "running" and 0 < job["pages_done"] < total, job
    return job


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_kill9_mid_document_resumes_and_completes(start_server, long_doc, backend):
    srv = start_server(backend, **GROUPS)
    # long-polling a long job returns at each step of progress: under load that passed 120 requests a minute
    key = srv.create_key("durable", rate_limit=10_000)
    with srv.http(key) as http:
        job = accepted(submit(http, long_doc.pdf_path, {"formats": ["txt", "json"]}))
        seen = mid_job(http, job["id"], long_doc.pages)
    srv.kill9()
    _, tasks = job_row(srv, job["id"])
    interrupted = [t.name for t in tasks if t.state == "running"]  # killed between two tasks: none
    srv.start()
    with srv.http(key) as http:
        final = wait_terminal(http, job["id"])
        assert final["state"] == "succeeded", final
        assert final["pages_done"] == final["pages_total"] == long_doc.pages
        # its interrupted tasks ran once more, after the restart
        assert final["attempts"] == (1 if interrupted else 0), (interrupted, final)
        assert_every_page_once_in_order(http, job["id"], long_doc.pages)
        # the checkpointed groups were not redone by the new process
        assert pages_counted(srv) <= long_doc.pages - seen["pages_done"]
    assert bool(interrupted) == ("job recovered after restart" in srv.log_text())


def test_sigterm_mid_job_puts_its_tasks_back_then_completes(start_server, long_doc):
    srv = start_server(**GROUPS)
    key = srv.create_key("graceful")
    with srv.http(key) as http:
        job = accepted(submit(http, long_doc.pdf_path, {"formats": ["txt", "json"]}))
        seen = mid_job(http, job["id"], long_doc.pages)
    # a client follows the job's events: it must not hold the shutdown (or the job) up
    follower = srv.client(key)
    events: list[dict] = []
    reader = threading.Thread(target=lambda: events.extend(follower.events(job["id"], read_timeout=60)), daemon=True)
    reader.start()
    wait_until(lambda: events, what="the first event")
    rc = srv.terminate(timeout=60)  # bound: uvicorn's graceful wait plus the runner's checkpoint
    reader.join(timeout=30)
    follower.close()
    assert not reader.is_alive() and events[-1]["event"] == "progress"  # stream closed, no "end": not finished
    # uvicorn re-raises the signal after a clean shutdown (exit "by SIGTERM")
    assert rc in (0, -signal.SIGTERM), srv.log_tail()
    assert "Application shutdown complete" in srv.log_text()
    row, tasks = job_row(srv, job["id"])
    assert row.state == "running" and row.attempts == 0
    assert not [t.name for t in tasks if t.state == "running"]  # every running task went back to the queue
    assert any(t.state == "queued" and t.takeovers == 0 for t in tasks)  # not a takeover: no attempt lost
    assert seen["pages_done"] <= row.pages_done < long_doc.pages
    # a task that had not reached its next group when the signal came went back to the queue (it had run
    # once); one past its last group finished instead: which of the two, the timing decides
    put_back = [t.name for t in tasks if t.state == "queued" and t.attempts >= 1]
    assert bool(put_back) == ("job requeued for shutdown" in srv.log_text()), (put_back, srv.log_tail())
    srv.start()
    with srv.http(key) as http:
        final = wait_terminal(http, job["id"])
        assert final["state"] == "succeeded", final
        # the restart ran its put-back tasks once more, orphaning none; with none put back, nothing ran twice
        assert final["attempts"] == (1 if put_back else 0), (put_back, final)
        assert_every_page_once_in_order(http, job["id"], long_doc.pages)
        assert pages_counted(srv) <= long_doc.pages - row.pages_done


def test_job_accepted_then_kill9_is_not_lost(start_server, long_doc, report_doc):
    srv = start_server(**GROUPS)
    # long-polling a long job returns at each step of progress: under load that passed 120 requests a minute
    key = srv.create_key("accepted", rate_limit=10_000)
    with srv.http(key) as http:
        long_job = accepted(submit(http, long_doc.pdf_path, {"formats": ["txt"]}))
        short_job = accepted(submit(http, report_doc.pdf_path, {"formats": ["md"], "priority": 1}))
    srv.kill9()
    srv.start()
    with srv.http(key) as http:
        listed = {j["id"] for j in http.get("/v1/jobs").json()["items"]}
        assert {long_job["id"], short_job["id"]} <= listed
        assert wait_terminal(http, short_job["id"])["state"] == "succeeded"
        final = wait_terminal(http, long_job["id"])
        assert final["state"] == "succeeded", final
        result = http.get(f"/v1/jobs/{long_job['id']}/result", params={"format": "txt"})
        assert result.status_code == 200, result.text
        assert [int(n) for n in RECORD.findall(result.text)] == list(range(1, long_doc.pages + 1))
        assert get_job(http, short_job["id"])["pages_done"] == report_doc.pages
        md = http.get(f"/v1/jobs/{short_job['id']}/result", params={"format": "md"})
        assert md.status_code == 200
        assert " ".join(report_doc.main_text_per_page[-1].split()[:5]) in " ".join(md.text.split())
