"""The ``furniture`` job option through the API, in process: the same
document submitted with keep and with drop is two jobs, whose md and txt
results keep or leave out each page's running header and footer; the
option defaults to export.furniture; a bad value is refused."""

from __future__ import annotations

from tests.service.helpers import accepted, error_code, submit, wait_terminal


def _results(http, job_id: str) -> tuple[str, str]:
    md = http.get(f"/v1/jobs/{job_id}/result", params={"format": "md"})
    txt = http.get(f"/v1/jobs/{job_id}/result", params={"format": "txt"})
    assert md.status_code == 200 and txt.status_code == 200, (md.text, txt.text)
    return md.text, txt.text


def test_keep_and_drop_are_two_jobs_with_their_own_exports(server, report_doc):
    key = server.create_key("furniture")
    n = report_doc.pages
    with server.http(key) as http:
        keep = accepted(submit(http, report_doc.pdf_path, {"formats": ["md", "txt"], "furniture": "keep"}))
        drop = accepted(submit(http, report_doc.pdf_path, {"formats": ["md", "txt"], "furniture": "drop"}))
        assert keep["id"] != drop["id"]
        assert keep["options"]["furniture"] == "keep" and drop["options"]["furniture"] == "drop"
        # the same request again is the same job (furniture is part of what is compared)
        again = submit(http, report_doc.pdf_path, {"formats": ["md", "txt"], "furniture": "keep"})
        assert again.status_code == 200 and again.json()["id"] == keep["id"]
        for job in (keep, drop):
            assert wait_terminal(http, job["id"])["state"] == "succeeded"

        md, txt = _results(http, keep["id"])
        pages = [[b.strip() for b in page.split("\n\n") if b.strip()] for page in txt.split("\f")]
        assert len(pages) == n
        for k, (blocks, (header, footer)) in enumerate(zip(pages, report_doc.furniture), start=1):
            assert blocks[0] == header and blocks[-1] == footer, (k, blocks[:1], blocks[-1:])
            marker = f"<!-- page {k} -->"
            page_md = md[md.index(marker) + len(marker):md.index(f"<!-- page {k + 1} -->") if k < n else len(md)]
            md_blocks = [b.strip() for b in page_md.split("\n\n") if b.strip()]
            assert md_blocks[0] == header and md_blocks[-1] == footer, k

        md, txt = _results(http, drop["id"])
        for header, footer in report_doc.furniture:
            assert header not in md and header not in txt
            assert footer not in md and footer not in txt
        assert report_doc.main_text_per_page[0].split()[0] in txt


def test_the_option_defaults_to_the_config(start_app, report_doc):
    srv = start_app(export={"furniture": "keep"})
    with srv.http(srv.create_key("furniture-default")) as http:
        job = accepted(submit(http, report_doc.pdf_path, {"formats": ["txt"], "pages": "1-2"}))
        assert job["options"]["furniture"] == "keep"
        assert wait_terminal(http, job["id"])["state"] == "succeeded"
        txt = http.get(f"/v1/jobs/{job['id']}/result", params={"format": "txt"}).text
        assert txt.count(report_doc.furniture[0][0]) == 2


def test_an_unknown_value_is_refused(server, report_doc):
    with server.http(server.create_key("furniture-bad")) as http:
        for bad in ("maybe", True, ["keep"]):
            r = submit(http, report_doc.pdf_path, {"furniture": bad})
            assert r.status_code == 400 and error_code(r) == "invalid_option", r.text
            assert "furniture" in r.json()["error"]["message"]
        r = submit(http, report_doc.pdf_path, {"furniture": "keep", "pages": "1"}, url="/v1/parse", format="txt")
        assert r.status_code == 200, r.text
        assert r.text.strip().split("\n\n")[0] == report_doc.furniture[0][0]
