"""The upload body as longdoc reads it (:mod:`longdoc.service.uploads`), in
process (the app of ``longdoc serve`` over ``httpx.ASGITransport``, no
model): what a client sending odd multipart gets, and that no refusal
leaves a copy in the work folder."""

from __future__ import annotations

import json
import secrets

import pytest
from fpdf import FPDF

from tests.api.harness import InProcessServer
from tests.service.helpers import accepted, error_code

MAX_UPLOAD_MB = 1
#: the jobs these uploads make read their text layer alone: no model runs (the fast tier has none)
NO_MODEL = json.dumps({"formats": ["txt"], "ocr": "off", "regions": False}).encode()


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    srv = InProcessServer(tmp_path_factory.mktemp("uploads"), limits={"max_upload_mb": MAX_UPLOAD_MB}).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def http(app):
    with app.http(app.create_key("uploads")) as client:
        yield client


@pytest.fixture
def pdf() -> bytes:
    """A one-page text-layer PDF, different each time (no job is reused)."""
    doc = FPDF()
    doc.set_font("helvetica", size=12)
    doc.add_page()
    doc.multi_cell(0, 8, f"Upload check {secrets.token_hex(8)}.")
    return bytes(doc.output())


@pytest.fixture(autouse=True)
def _no_copy_left(app):
    yield
    work = app.data / "work"
    assert [p.name for p in work.iterdir() if p.name.startswith("upload-")] == [], "an upload folder stayed"


def body(*parts: tuple[str, str | None, bytes], boundary: str = "bnd", close: bool = True) -> bytes:
    """A multipart body of ``(name, filename or None, content)`` parts."""
    out = b""
    for name, filename, content in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        out += f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + content + b"\r\n"
    return out + (f"--{boundary}--\r\n".encode() if close else b"")


def post(http, content: bytes, content_type: str = "multipart/form-data; boundary=bnd"):
    return http.post("/v1/jobs", content=content, headers={"Content-Type": content_type})


def test_options_after_the_file_and_a_file_part_without_a_name_are_read(http, pdf):
    job = accepted(post(http, body(("file", None, pdf), ("options", None, NO_MODEL))))
    assert job["options"]["formats"] == ["txt"] and job["filename"] == "upload"
    assert job["size_bytes"] == len(pdf)


def test_parts_longdoc_does_not_read_are_dropped(http, pdf):
    job = accepted(post(http, body(("note", None, b"hello"), ("attachment", "a.bin", b"\0" * 5000),
                                   ("file", "report.pdf", pdf), ("options", None, NO_MODEL))))
    assert job["filename"] == "report.pdf"


def test_two_documents_in_one_request_are_refused(http, pdf):
    r = post(http, body(("file", "a.pdf", pdf), ("file", "b.pdf", pdf)))
    assert r.status_code == 400 and error_code(r) == "invalid_upload", r.text
    assert "one `file` part" in r.json()["error"]["message"]


def test_a_body_without_a_document_is_a_missing_field(http):
    r = post(http, body(("options", None, b"{}")))
    assert r.status_code == 422 and error_code(r) == "invalid_request", r.text
    assert "body.file: Field required" in r.json()["error"]["message"]
    r = post(http, b'{"file": "x"}', "application/json")
    assert r.status_code == 422 and error_code(r) == "invalid_request", r.text


def test_a_body_cut_short_or_malformed_is_invalid_upload(http, pdf):
    r = post(http, body(("file", "a.pdf", pdf), close=False))
    assert r.status_code == 400 and error_code(r) == "invalid_upload", r.text
    r = post(http, pdf, "multipart/form-data")   # no boundary
    assert r.status_code == 400 and error_code(r) == "invalid_upload", r.text
    r = post(http, b"--bnd\r\nContent-Disposition: form-data\r\n\r\nx\r\n--bnd--\r\n")   # a part without a name
    assert r.status_code == 400 and error_code(r) == "invalid_upload", r.text


def test_a_document_over_the_limit_is_refused_and_not_kept(http, pdf):
    big = pdf + b"%" + b"0" * (MAX_UPLOAD_MB * 2**20)
    r = post(http, body(("file", "big.pdf", big)))
    assert r.status_code == 413 and error_code(r) == "upload_too_large", r.text
    r = post(http, body(("file", "small.pdf", pdf), ("options", None, b" " * (2**20 + 1))))
    assert r.status_code == 400 and error_code(r) == "invalid_upload", r.text   # the field's own bound


def test_an_upload_refused_after_it_arrived_is_not_kept(http, pdf):
    r = post(http, body(("file", "a.pdf", pdf), ("options", None, b'{"formats": ["nope"]}')))
    assert r.status_code == 400 and error_code(r) == "invalid_option", r.text
    r = post(http, body(("file", "a.pdf", b"not a document at all")))
    assert r.status_code == 415, r.text
