"""The test plugins of ``tests/plugins/misbehaving.py`` through the API (in
process): an engine that crashes on a page, runs out of memory on one,
reads nothing, or writes garbage costs that page alone (or nothing), the job
ends with what it says, and the service goes on serving the next job."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.api.harness import InProcessServer
from tests.docgen import english_report
from tests.service.helpers import accepted, submit, wait_terminal

PLUGIN = Path(__file__).resolve().parents[1] / "plugins" / "misbehaving.py"


@pytest.fixture(scope="module")
def plugged(tmp_path_factory):
    srv = InProcessServer(tmp_path_factory.mktemp("inprocess-plugins"),
                          inference={"plugins": [str(PLUGIN)], "regions": False, "page_chunk_size": 2,
                                     "chunk_overlap": 0},
                          service={"tenant_engines": ["crash", "oom", "noop", "garbage", "fake"]}).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def plugged_key(plugged):
    return plugged.create_key("plugins")


@pytest.fixture(scope="module")
def four_pages(tmp_path_factory):
    return english_report(tmp_path_factory.mktemp("plugin-doc"), pages=4, seed=77)


def run(plugged, key, doc, engine: str, formats=("json", "txt")) -> tuple[dict, dict | None, object]:
    http = plugged.http(key)
    job = accepted(submit(http, doc.pdf_path, {"engine": engine, "ocr": "force", "formats": list(formats)}))
    final = wait_terminal(http, job["id"])
    result = None
    if final["state"] in ("succeeded", "partial"):
        r = http.get(f"/v1/jobs/{job['id']}/result", params={"format": "json"})
        assert r.status_code == 200, r.text
        result = r.json()
    return final, result, http


def test_a_crash_on_one_page_fails_that_page_alone_and_the_job_is_partial(plugged, plugged_key, four_pages,
                                                                          monkeypatch):
    monkeypatch.setenv("LONGDOC_TEST_CRASH_PAGE", "3")
    final, doc, http = run(plugged, plugged_key, four_pages, "crash")
    assert final["state"] == "partial" and final["failed_pages"] == [3], final
    pages = {p["number"]: p for p in doc["pages"]}
    assert pages[3]["status"] == "failed" and pages[3]["error"]["code"] == "engine_failed"
    assert "crashed on page 3" in pages[3]["error"]["message"]
    for n in (1, 2, 4):
        assert pages[n]["status"] == "ok" and f"Read page {n}" in pages[n]["blocks"][0]["text"]
    txt = http.get(f"/v1/jobs/{final['id']}/result", params={"format": "txt"}).text
    assert [f"Read page {n}" in txt for n in (1, 2, 3, 4)] == [True, True, False, True]
    http.close()


def test_running_out_of_memory_on_a_page_fails_it_alone_and_the_service_goes_on(plugged, plugged_key, four_pages,
                                                                                monkeypatch):
    monkeypatch.setenv("LONGDOC_TEST_OOM_PAGE", "2")
    final, doc, http = run(plugged, plugged_key, four_pages, "oom")
    assert final["state"] == "partial" and final["failed_pages"] == [2], final
    assert [p["status"] for p in doc["pages"]] == ["ok", "failed", "ok", "ok"]
    http.close()
    again, _, http = run(plugged, plugged_key, four_pages, "fake")  # the next job is served as usual
    assert again["state"] == "succeeded", again
    http.close()


def test_an_engine_that_reads_nothing_gives_blank_pages_not_a_failure(plugged, plugged_key, four_pages):
    final, doc, http = run(plugged, plugged_key, four_pages, "noop")
    assert final["state"] == "succeeded", final
    assert [(p["number"], p["status"], p["blocks"]) for p in doc["pages"]] == [(n, "ok", []) for n in (1, 2, 3, 4)]
    assert all(p["engine"] == "noop" for p in doc["pages"])
    http.close()


def test_garbage_from_an_engine_never_reaches_a_result(plugged, plugged_key, four_pages):
    final, _, http = run(plugged, plugged_key, four_pages, "garbage", formats=("json", "txt", "md"))
    assert final["state"] == "succeeded", final
    for fmt in ("json", "txt", "md"):
        r = http.get(f"/v1/jobs/{final['id']}/result", params={"format": fmt})
        assert r.status_code == 200
        text = r.content.decode("utf-8")  # valid UTF-8: no lone surrogate
        assert not any(ord(ch) < 0x20 and ch not in "\n\t\r\f" for ch in text), fmt
        assert "\\u0000" not in text and "\\ud800" not in text
    assert "\ufffd[2J" in http.get(f"/v1/jobs/{final['id']}/result", params={"format": "txt"}).text
    http.close()
