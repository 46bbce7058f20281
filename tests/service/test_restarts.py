"""Restarts lose no job: a served process killed (-9) and stopped (SIGTERM),
alternately, five times in the middle of one long multi-group OCR job,
started again each time with warm-up on and the default OCR workers.

What it guards:

- at each start the tasks put back (SIGTERM) or taken back (kill -9) run at
  once, while warm-up is still loading the engine: the engine loads once,
  whoever asks first, and every choice it settles on first use is made
  once (two loads deciding differently failed the job ``engine_unavailable``
  or ``internal_error``);
- a SIGTERM hands every running task back as a put-back, even one whose
  page group outlasts the shutdown's grace: no takeover, so rolling
  restarts never use up ``service.max_attempts``;
- the job ends ``succeeded`` with every page exactly once, in order.
"""

from __future__ import annotations

import re
import signal
import time

import httpx
import pytest

from tests.docgen import GeneratedDoc, long_textlayer, rasterize
from tests.service.helpers import accepted, get_job, submit, wait_for, wait_terminal
from tests.service.test_durability import job_row

RECORD = re.compile(r"Record (\d+)\.")
PAGES = 60
#: the issue's set-up: four jobs at once, groups of 8 pages overlapping by 2 (10 groups here), the default
#: OCR workers (one per core: a pool of processes), warm-up on; a short grace, so a SIGTERM often lands
#: while a group is longer than it (the hand-back), and sometimes between groups (the put-back)
CONFIG = {
    "service": {"warmup": True, "max_concurrency": 4, "shutdown_grace_seconds": 2},
    "inference": {"workers": 0, "page_chunk_size": 8, "chunk_overlap": 2,
                  "regions": False},  # the OCR engine is what races; the layout model would only cost CPU
}
#: SIGTERM first: the two kill -9s are takeovers, at most two per task, below the default max_attempts (3)
STOPS = ("term", "kill", "term", "kill", "term")


@pytest.fixture(scope="module")
def scan(docs_dir) -> GeneratedDoc:
    """60 scanned pages, a few lines each ("Record n." first), quick to OCR."""
    born = long_textlayer(docs_dir / "restarts", pages=PAGES, seed=11, brief=True)
    return rasterize(born, 150, docs_dir / "restarts" / "scan.pdf")


def answering(srv, timeout: float = 60) -> None:
    """Wait until the restarted server answers (not until it is ready: its
    warm-up and the job's tasks run meanwhile, which is the point)."""
    deadline = time.monotonic() + timeout
    while True:
        assert srv.proc.poll() is None, srv.log_tail()
        try:
            if httpx.get(f"{srv.url}/healthz", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, srv.log_tail()
        time.sleep(0.1)


def running_tasks(srv, job_id: str) -> dict[str, int]:
    """Task name → takeovers, of every task of the job (read with no server running)."""
    _, tasks = job_row(srv, job_id)
    return {t.name: t.takeovers for t in tasks}


def test_five_restarts_mid_job_lose_nothing_and_a_sigterm_is_never_a_takeover(start_server, scan):
    srv = start_server(**CONFIG)
    key = srv.create_key("restarts", rate_limit=10_000)
    with srv.http(key) as http:
        job_id = accepted(submit(http, scan.pdf_path, {"formats": ["txt", "json"], "ocr": "force", "dpi": 103}))["id"]
    done_at_stop = 0
    for n, how in enumerate(STOPS, 1):
        with srv.http(key) as http:
            # a group more than at the last stop is checkpointed, and the job still runs
            job = wait_for(http, job_id, lambda j, done=done_at_stop: j["state"] != "running" or j["pages_done"] > done)
            assert job["state"] == "running", (n, how, job)
            done_at_stop = job["pages_done"]
        assert done_at_stop < PAGES, f"the job ended before stop {n}: make it longer"
        before = running_tasks(srv, job_id)
        if how == "kill":
            srv.kill9()
        else:
            rc = srv.terminate(timeout=60)
            assert rc in (0, -signal.SIGTERM), srv.log_tail()
            row, tasks = job_row(srv, job_id)
            assert row.state == "running", (n, row.state, row.error)
            assert [t.name for t in tasks if t.state == "running"] == [], (n, srv.log_tail())
            after = {t.name: t.takeovers for t in tasks}
            assert {name: after[name] for name in before} == before, f"stop {n}: SIGTERM counted as a takeover"
        srv.start(wait_ready=False)
        answering(srv)
    with srv.http(key) as http:
        final = wait_terminal(http, job_id)
        assert final["state"] == "succeeded", (final, srv.log_tail())
        assert final["pages_done"] == final["pages_total"] == PAGES
        doc = http.get(f"/v1/jobs/{job_id}/result", params={"format": "json"}).json()
        assert [p["number"] for p in doc["pages"]] == list(range(1, PAGES + 1))
        assert all(p["status"] == "ok" for p in doc["pages"])
        txt = http.get(f"/v1/jobs/{job_id}/result", params={"format": "txt"}).text
        assert [int(r) for r in RECORD.findall(txt)] == list(range(1, PAGES + 1))
        assert get_job(http, job_id)["state"] == "succeeded"
