"""A job's plan goes with the job: on a fleet whose API and workers are
configured with other page groups, the workers read a job in the groups the
API planned it in, and the native engine sizes each document's cache by
that plan, not by the worker's own ``inference.page_chunk_size``.

Real processes (``longdoc serve`` and one ``longdoc worker`` with its own
configuration file), PostgreSQL, Redis and moto's S3; the native engine on
a tiny random Unlimited-OCR checkpoint (its text is noise: every page it
leaves unfinished goes to the fake engine as its fallback, so a page
read whole says the group reached the model and came back).
"""

from __future__ import annotations

import pytest
import yaml

from tests.docgen import long_textlayer
from tests.runner.conftest import Worker, job_state, wait_for
from tests.service.helpers import TERMINAL, accepted, submit

pytest.importorskip("torch", reason="the native engine needs the torch extra (make test installs it)")
pytestmark = pytest.mark.slow

PAGES = 100


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    from longdoc.engines.native import weights

    folder = tmp_path_factory.mktemp("tiny-unlimited-ocr")
    weights.write_checkpoint(weights.random_model("tiny", seed=5), folder)
    return folder


@pytest.fixture(scope="module")
def doc_100(tmp_path_factory):
    return long_textlayer(tmp_path_factory.mktemp("plan-docs"), pages=PAGES, seed=7, brief=True)


def _worker_configured(fleet, page_chunk_size: int) -> Worker:
    """A worker whose configuration is the API's but for ``page_chunk_size``."""
    config = yaml.safe_load(fleet.api.config_path.read_text())
    config["inference"]["page_chunk_size"] = page_chunk_size
    path = fleet.root / "worker.yaml"
    path.write_text(yaml.safe_dump(config))
    worker = Worker(fleet.root, path, "w1", "cpu,engine,short", 1).start()
    fleet.workers.append(worker)
    worker.wait_ready(120)
    return worker


@pytest.mark.parametrize("api_chunk, worker_chunk", [(32, 16), (16, 32)])
def test_workers_read_a_job_in_the_groups_the_api_planned(start_fleet, checkpoint, doc_100, api_chunk, worker_chunk):
    fleet = start_fleet(workers=0, service={"warmup": False}, inference={
        "engine": "native", "page_chunk_size": api_chunk, "chunk_overlap": 1, "regions": False,
        "native": {"model_path": str(checkpoint), "max_tokens_per_page": 8, "fallback_engine": "fake"}})
    worker = _worker_configured(fleet, worker_chunk)
    key = fleet.create_key("plans")
    with fleet.api.http(key) as http:
        job = accepted(submit(http, doc_100.pdf_path, {"ocr": "force", "dpi": 50, "formats": ["json"]}))
        assert job["options"]["page_chunk_size"] == api_chunk  # the plan is the API's, stored with the job
        # a cache too small for a group does not end the job at once (its decode thread dies): stop at the error
        wait_for(lambda: job_state(http, job["id"])["state"] in TERMINAL or "CacheFull" in worker.log_text(),
                 timeout=480, what="the job's end", interval=1.0)
        assert "CacheFull" not in worker.log_text(), worker.log_text()[-3000:]
        done = job_state(http, job["id"])
        assert done["state"] == "succeeded", done
        doc = http.get(f"/v1/jobs/{job['id']}/result", params={"format": "json"}, follow_redirects=True).json()
    pages = doc["pages"]
    assert [p["number"] for p in pages] == list(range(1, PAGES + 1))
    assert all(p["status"] == "ok" for p in pages)
    # each page reached the native engine in its planned group (read by it, or handed by it to its fallback)
    assert all(p["produced_by"] in ("group", "fallback:fake") for p in pages), {p["produced_by"] for p in pages}
