"""What a tenant's job options may choose (in process): only the engines the
operator offers (``inference.engine`` and ``service.tenant_engines``), told
without naming the rest or any internal address; and a new ``callback_url``
makes a new submission rather than being dropped."""

from __future__ import annotations

import pytest

from tests.ingest.files import good_page, pdf_with_pages
from tests.service.helpers import accepted, error_code, submit, wait_terminal

MODEL_SERVER = "http://10.77.0.9:8000/v1"  # an internal address a tenant must never see


@pytest.fixture
def one_page(tmp_path):
    return pdf_with_pages(tmp_path / "doc.pdf", [good_page(1)])


def test_a_tenant_may_choose_only_the_engines_the_operator_offers(start_app, one_page):
    srv = start_app(inference={"openai": {"base_url": MODEL_SERVER}})
    key = srv.create_key("choosy")
    with srv.http(key) as http:
        for engine in ("fake", "openai", "tesseract", "no-such-engine"):
            r = submit(http, one_page, {"engine": engine, "formats": ["txt"]})
            assert r.status_code == 400 and error_code(r) == "unknown_engine", (engine, r.text)
            error = r.json()["error"]
            assert error["context"]["known"] == ["rapidocr"], error  # what it may choose, nothing else
            assert "10.77.0.9" not in r.text and "http" not in error["message"], r.text
            for other in {"fake", "openai", "tesseract", "native"} - {engine}:
                assert other not in r.text, (engine, other, r.text)
        assert http.get("/v1/jobs").json()["items"] == []  # nothing was accepted


def test_an_engine_the_operator_lists_is_offered_fake_included(start_app, one_page):
    srv = start_app(service={"tenant_engines": ["fake"]})
    key = srv.create_key("offered")
    with srv.http(key) as http:
        job = wait_terminal(http, accepted(submit(http, one_page, {"engine": "fake", "formats": ["txt"]}))["id"])
        assert job["state"] == "succeeded" and job["engine"] == "fake", job
        r = submit(http, one_page, {"engine": "openai", "formats": ["txt"]})
        assert r.status_code == 400 and r.json()["error"]["context"]["known"] == ["rapidocr", "fake"]


def test_a_new_callback_url_makes_a_new_job_and_the_same_one_the_same_job(start_app, one_page):
    srv = start_app(service={"tenant_engines": ["fake"]})
    key = srv.create_key("callbacks")
    options = {"engine": "fake", "formats": ["txt"]}
    first_url, second_url = "http://127.0.0.1:9/first", "http://127.0.0.1:9/second"
    with srv.http(key) as http:
        first = accepted(submit(http, one_page, {**options, "callback_url": first_url}))
        again = submit(http, one_page, {**options, "callback_url": first_url})
        assert again.status_code == 200 and again.json()["id"] == first["id"]
        second = submit(http, one_page, {**options, "callback_url": second_url})
        assert second.status_code == 202 and second.json()["id"] != first["id"], second.text  # not dropped
        plain = submit(http, one_page, options)  # no callback: another request again
        assert plain.status_code == 202 and plain.json()["id"] not in (first["id"], second.json()["id"])
        idem = {"Idempotency-Key": "callbacks-1"}  # one key, another callback: another request, refused
        accepted(submit(http, one_page, {**options, "callback_url": "http://127.0.0.1:9/third"}, headers=idem))
        r = submit(http, one_page, {**options, "callback_url": first_url}, headers=idem)
        assert r.status_code == 409 and error_code(r) == "idempotency_key_reused"
