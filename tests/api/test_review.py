"""Per-page confidence and flags, and the review list, through the API in
process: ``GET /v1/jobs/{id}`` and the JSON result carry ``review_pages``,
``/v1/jobs/{id}/pages`` and ``/pages/{n}`` each page's ``confidence`` and
``flags``, ``/metrics`` counts pages per flag.

- the ``openai`` engine against a recording model server: the model's
  answer for page 2 loops and for page 3 stops at ``max_tokens``, so the
  fallback engine (``fake``) reads them: flagged ``fallback`` and
  ``repetition`` / ``truncated``, listed for review;
- the ``doubtful`` test plugin reads page N at confidence 0.5 + N/10:
  ``export.review_below`` decides which are ``low_confidence`` (on the long
  lane too, where groups are read from prepared renders and assembled by a
  task of their own); the ``noop`` plugin's empty pages are ``blank``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.docgen import english_report
from tests.engines.recording_server import RecordingServer
from tests.service.helpers import accepted, submit, wait_terminal

PLUGIN = Path(__file__).resolve().parents[1] / "plugins" / "misbehaving.py"
LOOP = "Intro. " + "The cat sat on the mat again. " * 50


@pytest.fixture(scope="module")
def four_pages(tmp_path_factory):
    return english_report(tmp_path_factory.mktemp("review-doc"), pages=4, seed=31)


def finished(srv, key, pdf: Path, options: dict) -> tuple[dict, dict, dict]:
    """(the finished job's view, its JSON result, its page list by number)."""
    with srv.http(key) as http:
        job = accepted(submit(http, pdf, {"ocr": "force", "formats": ["json"], **options}))
        done = wait_terminal(http, job["id"])
        assert done["state"] == "succeeded", done
        result = http.get(f"/v1/jobs/{job['id']}/result", params={"format": "json"})
        assert result.status_code == 200, result.text
        listed = http.get(f"/v1/jobs/{job['id']}/pages").json()["pages"]
    return done, result.json(), {p["number"]: p for p in listed}


def flag_counts(srv) -> dict[str, float]:
    text = srv.request("GET", "/metrics").text
    return {s.labels["flag"]: s.value for family in text_string_to_metric_families(text)
            for s in family.samples if s.name == "longdoc_page_flags_total"}


def test_pages_the_model_could_not_finish_are_flagged_fallback_and_listed_for_review(start_app, four_pages):
    with RecordingServer() as model:
        # one page per request (generic profile), one request at a time: request n reads page n
        model.answer = lambda body, images: LOOP if len(model.bodies) == 2 else f"Page text {len(model.bodies)}."
        model.finish = lambda body, images: "length" if len(model.bodies) == 3 else "stop"
        srv = start_app(inference={"regions": False, "page_chunk_size": 4, "chunk_overlap": 0, "openai": {
            "base_url": f"{model.url}/v1", "profile": "generic", "max_concurrency": 1, "retries": 0,
            "fallback_engine": "fake"}}, service={"tenant_engines": ["openai"]})
        key = srv.create_key("review-openai")
        done, doc, listed = finished(srv, key, four_pages.pdf_path, {"engine": "openai"})
        with srv.http(key) as http:
            page2 = http.get(f"/v1/jobs/{done['id']}/pages/2").json()
    assert len(model.bodies) == 4
    assert done["review_pages"] == [2, 3] and doc["review_pages"] == [2, 3]
    pages = {p["number"]: p for p in doc["pages"]}
    assert [pages[n]["produced_by"] for n in (1, 2, 3, 4)] == ["page", "fallback:fake", "fallback:fake", "page"]
    assert pages[2]["flags"] == ["fallback", "repetition"] and pages[3]["flags"] == ["fallback", "truncated"]
    assert pages[1]["flags"] == [] and pages[4]["flags"] == []
    # the model's own pages have no OCR lines (no confidence); the fallback engine's read at 1.0
    assert [pages[n]["confidence"] for n in (1, 2, 3, 4)] == [None, 1.0, 1.0, None]
    assert page2["flags"] == ["fallback", "repetition"] and page2["confidence"] == 1.0
    assert [(n, p["flags"], p["confidence"], p["review"]) for n, p in sorted(listed.items())] == [
        (1, [], None, False), (2, ["fallback", "repetition"], 1.0, True),
        (3, ["fallback", "truncated"], 1.0, True), (4, [], None, False)]
    assert flag_counts(srv) == {"fallback": 2.0, "repetition": 1.0, "truncated": 1.0}


@pytest.mark.parametrize(("review_below", "lane", "low"), [
    (0.65, "short", [1]),              # page 1 read at 0.6
    (0.85, "long", [1, 2, 3]),         # pages 1-3 (0.6, 0.7, 0.8); page 4 at 0.9 is not
])
def test_review_below_decides_which_pages_are_low_confidence(start_app, four_pages, review_below, lane, low):
    srv = start_app(export={"review_below": review_below}, service={"short_doc_pages": 4 if lane == "short" else 2,
                                                                    "tenant_engines": ["doubtful", "noop"]},
                    inference={"plugins": [str(PLUGIN)], "regions": False, "page_chunk_size": 2, "chunk_overlap": 0})
    key = srv.create_key("review-doubtful")
    done, doc, listed = finished(srv, key, four_pages.pdf_path, {"engine": "doubtful"})
    assert done["lane"] == lane
    assert done["review_pages"] == low and doc["review_pages"] == low
    assert [p["confidence"] for p in doc["pages"]] == pytest.approx([0.6, 0.7, 0.8, 0.9])
    assert [p["flags"] for p in doc["pages"]] == [["low_confidence"] if n in low else [] for n in (1, 2, 3, 4)]
    assert [listed[n]["review"] for n in (1, 2, 3, 4)] == [n in low for n in (1, 2, 3, 4)]
    assert flag_counts(srv) == {"low_confidence": float(len(low))}

    blank, doc, listed = finished(srv, key, four_pages.pdf_path, {"engine": "noop"})
    assert blank["review_pages"] == [] and doc["review_pages"] == []
    assert [(p["flags"], p["confidence"]) for p in doc["pages"]] == [(["blank"], None)] * 4
    assert [listed[n]["flags"] for n in (1, 2, 3, 4)] == [["blank"]] * 4
