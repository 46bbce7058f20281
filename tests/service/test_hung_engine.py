"""An engine that never returns on a page does not hold its job, nor a
thread of the server, forever: through a real ``longdoc serve`` (embedded
pools) with the ``hang`` engine of ``tests/plugins/misbehaving.py`` (it never
returns page 2), the job fails ``job_timeout`` shortly after its deadline,
a cancel ends it ``cancelled``, and after two hung jobs a third one still
runs (the reconciler ends what the stuck tasks cannot, and the pools give
their stuck threads up)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.docgen import english_report, rasterize
from tests.service.helpers import accepted, submit, wait_for, wait_logged, wait_terminal

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "tests" / "plugins" / "misbehaving.py"
HANG = {"plugins": [str(PLUGIN)], "engine": "hang", "regions": False}
LEASE_S = 3      # the grace: a hung job ends this long after its deadline (or its cancel)
QUEUE = {"lease_seconds": LEASE_S, "reconcile_interval_seconds": 0.5}
GENEROUS_S = 120.0


@pytest.fixture(autouse=True)
def hang_on_page_2(monkeypatch):
    monkeypatch.setenv("LONGDOC_TEST_HANG_PAGE", "2")  # the server process inherits it


def scanned(folder: Path, seed: int = 7) -> Path:
    """Three image-only pages: every one goes to the engine."""
    return rasterize(english_report(folder / "doc", pages=3, seed=seed), 100, folder / "scan.pdf").pdf_path


@pytest.fixture
def scan(tmp_path) -> Path:
    return scanned(tmp_path)


def test_a_job_whose_engine_never_returns_fails_job_timeout_after_its_deadline(start_server, scan):
    srv = start_server(inference=HANG, service={"timeout_seconds": 3}, queue=QUEUE)
    key = srv.create_key("hung")
    with srv.http(key) as http:
        job = accepted(submit(http, scan, {"ocr": "force", "formats": ["txt"]}))
        final = wait_terminal(http, job["id"], timeout=GENEROUS_S)
    assert final["state"] == "failed", final
    assert final["error"]["code"] == "job_timeout", final
    wait_logged(srv, "job ended: its task did not stop it", timeout=10)  # logged just after the job's end


def test_a_cancel_of_a_job_whose_engine_never_returns_ends_it_cancelled(start_server, scan):
    srv = start_server(inference=HANG, service={"timeout_seconds": 3600}, queue=QUEUE)
    key = srv.create_key("hung-cancel")
    with srv.http(key) as http:
        job = accepted(submit(http, scan, {"ocr": "force", "formats": ["txt"]}))
        wait_for(http, job["id"], lambda j: j["state"] == "running", timeout=GENEROUS_S)
        time.sleep(1.0)  # in the engine, on page 2, for good
        r = http.delete(f"/v1/jobs/{job['id']}")
        assert r.status_code == 202, r.text
        final = wait_terminal(http, job["id"], timeout=GENEROUS_S)
    assert final["state"] == "cancelled", final


def test_after_two_hung_jobs_the_server_still_runs_a_third(start_server, tmp_path):
    """Two jobs at once (``max_concurrency`` 2: two threads for short
    documents) both hang; without giving those threads up the server would
    take no more work. The third, born-digital with ``ocr: auto``, never
    calls the engine and succeeds."""
    text = english_report(tmp_path / "text", pages=3, seed=8).pdf_path
    srv = start_server(inference=HANG, service={"timeout_seconds": 3, "max_concurrency": 2}, queue=QUEUE)
    key = srv.create_key("hung-pool")
    with srv.http(key) as http:
        hung = [accepted(submit(http, scanned(tmp_path / f"scan-{i}", seed=20 + i), {"ocr": "force", "formats": ["txt"]}))
                for i in range(2)]
        assert hung[0]["id"] != hung[1]["id"]
        for job in hung:
            final = wait_terminal(http, job["id"], timeout=GENEROUS_S)
            assert final["state"] == "failed" and final["error"]["code"] == "job_timeout", final
        third = accepted(submit(http, text, {"ocr": "auto", "formats": ["txt"]}))
        final = wait_terminal(http, third["id"], timeout=GENEROUS_S)
        assert final["state"] == "succeeded", final
        assert "Read page" not in http.get(f"/v1/jobs/{third['id']}/result", params={"format": "txt"}).text
    wait_logged(srv, "pool thread abandoned", count=2, timeout=GENEROUS_S)  # both stuck threads given up, not one
