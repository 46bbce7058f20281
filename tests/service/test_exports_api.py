"""The export formats through the service: asked in a job's options,
fetched with ``/result?format=``."""

from __future__ import annotations

import json

import pypdfium2 as pdfium

from tests.service.helpers import accepted, error_code, submit, wait_terminal


def test_a_job_gives_the_searchable_pdf_chunks_and_docling(server, sample_pdf, tmp_path):
    key = server.create_key("exports")
    with server.http(key) as http:
        job = accepted(submit(http, sample_pdf, {"pages": "3-4", "formats": ["md", "pdf", "chunks", "docling"]}))
        assert wait_terminal(http, job["id"])["state"] == "succeeded"

        pdf = http.get(f"/v1/jobs/{job['id']}/result", params={"format": "pdf"})
        assert pdf.status_code == 200 and pdf.headers["content-type"] == "application/pdf"
        (tmp_path / "out.pdf").write_bytes(pdf.content)
        document = pdfium.PdfDocument(str(tmp_path / "out.pdf"))
        assert len(document) == 5                                  # every page of the original stays
        assert "Regional Markets" in document[3].get_textpage().get_text_range()   # the scanned page 4, searchable

        chunks = http.get(f"/v1/jobs/{job['id']}/result", params={"format": "chunks"})
        assert chunks.headers["content-type"].startswith("application/jsonl")
        records = [json.loads(line) for line in chunks.text.splitlines()]
        assert records and {p for r in records for p in r["pages"]} <= {3, 4}

        docling = http.get(f"/v1/jobs/{job['id']}/result", params={"format": "docling"}).json()
        assert docling["schema_name"] == "DoclingDocument" and sorted(docling["pages"]) == ["3", "4"]

        refused = http.get(f"/v1/jobs/{job['id']}/result", params={"format": "txt"})
        assert refused.status_code == 400 and error_code(refused) == "invalid_option"
        unknown = http.get(f"/v1/jobs/{job['id']}/result", params={"format": "docx"})
        assert unknown.status_code == 422
