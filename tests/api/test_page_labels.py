"""Printed page labels through the API, in process: a job on a PDF with
/PageLabels i, ii, 1, 2, 3 answers ``GET /v1/jobs/{id}/pages/3`` with
label "1" and its JSON result has all five; the same on the long lane,
where each page group is read from what its render task prepared (the
label travels in the group's manifest) and chunks carry ``page_labels``."""

from __future__ import annotations

import json

import pytest

from tests.export.test_page_labels import LABELS, labelled_pdf
from tests.service.helpers import accepted, submit, wait_terminal


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    return labelled_pdf(tmp_path_factory.mktemp("api-labels"))


def _check(http, job_id: str) -> None:
    assert wait_terminal(http, job_id)["state"] == "succeeded"
    r = http.get(f"/v1/jobs/{job_id}/pages/3")
    assert r.status_code == 200, r.text
    assert r.json()["number"] == 3 and r.json()["label"] == "1"
    doc = http.get(f"/v1/jobs/{job_id}/result", params={"format": "json"})
    assert doc.status_code == 200, doc.text
    assert [p["label"] for p in doc.json()["pages"]] == LABELS


def test_a_job_reports_the_pdf_page_labels(server, labelled):
    with server.http(server.create_key("labels")) as http:
        job = accepted(submit(http, labelled, {"formats": ["json"]}))
        _check(http, job["id"])


def test_the_long_lane_carries_labels_through_prepared_groups(start_app, labelled):
    srv = start_app(service={"short_doc_pages": 2}, inference={"page_chunk_size": 2, "chunk_overlap": 1})
    with srv.http(srv.create_key("labels-long")) as http:
        job = accepted(submit(http, labelled, {"formats": ["json", "chunks"]}))
        assert job["lane"] == "long"
        _check(http, job["id"])
        chunks = http.get(f"/v1/jobs/{job['id']}/result", params={"format": "chunks"})
        assert chunks.status_code == 200, chunks.text
        records = [json.loads(line) for line in chunks.text.splitlines()]
        assert records and all(r["page_labels"] == [LABELS[n - 1] for n in r["pages"]] for r in records)
