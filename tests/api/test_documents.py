"""Documents and bodies a client may send, in process: a long non-ASCII
file name, a corrupt file, an unknown engine, a broken multipart body; the
tenant storage quota; everything the service keeps on disk is private."""

from __future__ import annotations

import stat

import pytest

from tests.api.harness import InProcessServer
from tests.ingest.files import good_page, pdf_with_pages, text_pdf, truncated
from tests.service.helpers import accepted, error_code, submit, wait_terminal

QUOTA_MB = 2


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    """The service with a small tenant quota."""
    srv = InProcessServer(tmp_path_factory.mktemp("inprocess-guarded"), limits={"tenant_storage_mb": QUOTA_MB}).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def guarded_key(guarded):
    return guarded.create_key("guarded")


def test_a_long_non_ascii_file_name_is_kept_as_metadata(guarded, guarded_key, tmp_path):
    path = pdf_with_pages(tmp_path / "doc.pdf", [good_page(1)])
    name = "é" * 200 + ".pdf"  # 400 bytes in UTF-8
    with guarded.http(guarded_key) as http:
        job = wait_terminal(http, accepted(submit(http, path, {"formats": ["json"]}, name=name))["id"])
        assert job["state"] == "succeeded", job
        stored = job["filename"]
        assert stored.endswith(".pdf") and set(stored[:-4]) == {"é"}
        assert len(stored.encode()) <= 255 and stored.encode().decode() == stored
        doc = http.get(f"/v1/jobs/{job['id']}/result", params={"format": "json"}).json()
        assert doc["source"]["name"] == stored


def test_a_corrupt_file_is_refused_without_naming_an_internal_path(guarded, guarded_key, tmp_path):
    path = truncated(text_pdf(tmp_path / "broken.pdf", [{"texts": [(30, 50, "x", 12)]}]), 0.3)
    with guarded.http(guarded_key) as http:
        r = submit(http, path, name="Quarterly report.pdf")
    assert r.status_code == 422 and error_code(r) == "corrupt_file"
    message = r.json()["error"]["message"]
    assert "Quarterly report.pdf" in message
    assert str(guarded.data) not in message and "/tmp" not in message and "upload" not in message


def test_an_unknown_engine_is_refused_at_submit(guarded, guarded_key, tmp_path):
    path = pdf_with_pages(tmp_path / "doc.pdf", [good_page(1)])
    with guarded.http(guarded_key) as http:
        r = submit(http, path, {"engine": "no-such-engine"})
        assert r.status_code == 400 and error_code(r) == "unknown_engine"
        assert "rapidocr" in r.json()["error"]["message"]
        assert all(j["options"]["engine"] != "no-such-engine" for j in http.get("/v1/jobs").json()["items"])


def test_tenant_storage_quota(guarded, tmp_path, report_doc):
    key = guarded.create_key("quota")
    big = pdf_with_pages(tmp_path / "big.pdf", [good_page(n) for n in range(1, 2000)])  # ~1.2 MB
    assert 2**20 < big.stat().st_size < QUOTA_MB * 2**20
    with guarded.http(key) as http:
        first = wait_terminal(http, accepted(submit(http, big, {"pages": "1-3", "formats": ["txt"]}))["id"])
        r = submit(http, big, {"pages": "4-6", "formats": ["txt"]})
        assert r.status_code == 413 and error_code(r) == "quota_exceeded", r.text
        assert r.json()["error"]["context"]["quota_mb"] == QUOTA_MB
        assert http.delete(f"/v1/jobs/{first['id']}").status_code == 204
        assert accepted(submit(http, big, {"pages": "4-6", "formats": ["txt"]}))
    with guarded.http(guarded.create_key("quota-other")) as other:  # per tenant
        job = accepted(submit(other, report_doc.pdf_path, {"formats": ["txt"]}))
        assert wait_terminal(other, job["id"])["state"] == "succeeded"


def test_store_database_and_work_folder_are_private(guarded, guarded_key, tmp_path):
    path = pdf_with_pages(tmp_path / "doc.pdf", [good_page(1)])
    with guarded.http(guarded_key) as http:
        wait_terminal(http, accepted(submit(http, path, {"formats": ["txt"]}))["id"])
    found = [p for p in guarded.data.rglob("*")]
    assert any(p.name == "longdoc.db" for p in found) and any(p.name == "result.txt" for p in found)
    for p in found:
        try:
            mode = stat.S_IMODE(p.stat().st_mode)
        except FileNotFoundError:  # a temporary file of a job still running
            continue
        assert mode & 0o077 == 0, f"{p} is {oct(mode)}"


def test_a_broken_multipart_body_has_its_own_code(guarded, guarded_key):
    with guarded.http(guarded_key) as http:
        r = http.post("/v1/jobs", content=b"--x\r\nnot really multipart",
                      headers={"Content-Type": "multipart/form-data; boundary=x"})
        assert r.status_code in (400, 422), r.text
        assert error_code(r) in ("invalid_upload", "invalid_request"), r.text
        r = http.post("/v1/jobs", content=b"garbage", headers={"Content-Type": "multipart/form-data"})
        assert r.status_code == 400 and error_code(r) == "invalid_upload", r.text
