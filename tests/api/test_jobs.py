"""A job's life through the API, in process: idempotent submits and the
caller's list, one page of a finished job, the bounded synchronous parse."""

from __future__ import annotations

import uuid

from tests.service.helpers import accepted, error_code, get_job, submit, wait_terminal


def test_idempotency(server, report_doc):
    key = server.create_key("idem")
    path = report_doc.pdf_path
    with server.http(key) as http:
        idem = {"Idempotency-Key": f"k-{uuid.uuid4()}"}
        first = accepted(submit(http, path, {"formats": ["md"]}, headers=idem))
        again = submit(http, path, {"formats": ["md"]}, headers=idem)
        assert again.status_code == 200 and again.json()["id"] == first["id"]

        plain = submit(http, path, {"formats": ["md"]})  # same bytes and options, no key
        assert plain.status_code == 200 and plain.json()["id"] == first["id"]

        reused = submit(http, path, {"formats": ["txt"]}, headers=idem)  # same key, other request
        assert reused.status_code == 409 and error_code(reused) == "idempotency_key_reused"

        other = accepted(submit(http, path, {"formats": ["md"], "pages": "1-2"}))
        assert other["id"] != first["id"]
        for job_id in (first["id"], other["id"]):
            assert wait_terminal(http, job_id)["state"] == "succeeded"
        # the caller's list: newest first, paged with the cursor, filtered by state
        page1 = http.get("/v1/jobs", params={"limit": 1}).json()
        assert [j["id"] for j in page1["items"]] == [other["id"]] and page1["next"]
        page2 = http.get("/v1/jobs", params={"limit": 1, "cursor": page1["next"]}).json()
        assert [j["id"] for j in page2["items"]] == [first["id"]] and page2["next"] is None
        assert len(http.get("/v1/jobs", params={"state": "succeeded"}).json()["items"]) == 2
        assert http.get("/v1/jobs", params={"state": "queued"}).json()["items"] == []
        # finished and still the same content: the existing job is answered again
        assert submit(http, path, {"formats": ["md"]}).json()["id"] == first["id"]
        # answered or refused requests left nothing behind in the store
        jobs_dir = server.store / "tenants" / key.tenant / "jobs"
        stored = {f.relative_to(jobs_dir).parts[0] for f in jobs_dir.rglob("*") if f.is_file()}
        assert stored == {first["id"], other["id"]}
        # another tenant never gets this tenant's job
        with server.http(server.create_key("idem-other")) as other_http:
            assert accepted(submit(other_http, path, {"formats": ["md"]}))["id"] != first["id"]


def test_pages_of_a_finished_job(server, report_doc):
    key = server.create_key("pages")
    with server.http(key) as http:
        job = accepted(submit(http, report_doc.pdf_path, {"formats": ["json"], "pages": "2-6"}))
        assert wait_terminal(http, job["id"])["state"] == "succeeded"
        for n in (2, 6):
            r = http.get(f"/v1/jobs/{job['id']}/pages/{n}")
            assert r.status_code == 200, r.text
            page = r.json()
            assert page["number"] == n and page["status"] == "ok"
            text = " ".join(line["text"] for b in page["blocks"] for line in b["lines"])
            first_words = report_doc.main_text_per_page[n - 1].split()[:4]
            assert " ".join(first_words) in text
        for n in (1, 7, 0):  # outside the selected range
            r = http.get(f"/v1/jobs/{job['id']}/pages/{n}")
            assert r.status_code == 404 and error_code(r) == "page_not_found", (n, r.text)


def test_sync_parse(server, report_doc, long_doc):
    key = server.create_key("sync")
    with server.http(key) as http:
        r = submit(http, report_doc.pdf_path, {"pages": "1-3"}, url="/v1/parse")
        assert r.status_code == 200, r.text
        doc = r.json()
        assert [p["number"] for p in doc["pages"]] == [1, 2, 3]
        assert doc["status"] == "succeeded"
        job_id = r.headers["X-Longdoc-Job"]
        assert get_job(http, job_id)["state"] == "succeeded"

        md = submit(http, report_doc.pdf_path, {"pages": "1"}, url="/v1/parse", format="md")
        assert md.status_code == 200 and md.headers["content-type"].startswith("text/markdown")
        assert report_doc.main_text_per_page[0].split()[0] in md.text

        too_many = submit(http, long_doc.pdf_path, None, url="/v1/parse")  # 600 pages > sync_max_pages 10
        assert too_many.status_code == 422 and error_code(too_many) == "too_many_pages"
