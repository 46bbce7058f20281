"""Access: API keys (missing, wrong, revoked), tenant isolation, admin token (in process)."""

from __future__ import annotations

import pytest

from tests.service.helpers import accepted, error_code, submit, wait_terminal


@pytest.fixture(scope="module")
def two_tenants(server, report_doc):
    """Tenant A with a finished job, tenant B with one of its own."""
    a, b = server.create_key("tenant-a"), server.create_key("tenant-b")
    with server.http(a) as http_a, server.http(b) as http_b:
        job_a = accepted(submit(http_a, report_doc.pdf_path, {"formats": ["md", "json"], "pages": "1-2"}))
        job_b = accepted(submit(http_b, report_doc.pdf_path, {"formats": ["md", "json"], "pages": "1-2"}))
        assert wait_terminal(http_a, job_a["id"])["state"] == "succeeded"
        assert wait_terminal(http_b, job_b["id"])["state"] == "succeeded"
    return a, b, job_a["id"], job_b["id"]


def test_requests_without_a_valid_key_get_401(server, two_tenants, report_doc):
    _, _, job_a, _ = two_tenants
    with server.http() as anon:
        for headers in ({}, {"Authorization": "Bearer ld_not-a-real-key"}, {"Authorization": "Basic abc"}):
            for method, url in (("GET", "/v1/jobs"), ("GET", f"/v1/jobs/{job_a}"),
                                ("GET", f"/v1/jobs/{job_a}/result"), ("DELETE", f"/v1/jobs/{job_a}")):
                r = anon.request(method, url, headers=headers)
                assert r.status_code == 401 and error_code(r) == "unauthorized", (method, url, headers, r.text)
        r = submit(anon, report_doc.pdf_path, headers={"Authorization": "Bearer ld_wrong"})
        assert r.status_code == 401


def test_revoked_key_gets_401(server):
    key = server.create_key("revoked")
    with server.http(key) as http:
        assert http.get("/v1/jobs").status_code == 200
        r = server.request("DELETE", f"/admin/keys/{key.id}", headers=server.admin_headers())
        assert r.status_code == 204
        r = http.get("/v1/jobs")
        assert r.status_code == 401 and error_code(r) == "unauthorized"
    listed = server.request("GET", "/admin/keys", params={"tenant": "revoked"}, headers=server.admin_headers()).json()
    assert [k["revoked_at"] is not None for k in listed if k["id"] == key.id] == [True]
    assert all("key" not in k and "key_hash" not in k for k in listed)


def test_other_tenants_jobs_look_missing(server, two_tenants):
    a, b, job_a, job_b = two_tenants
    with server.http(b) as http_b:
        for method, url in (("GET", f"/v1/jobs/{job_a}"), ("GET", f"/v1/jobs/{job_a}/result"),
                            ("GET", f"/v1/jobs/{job_a}/pages/1"), ("GET", f"/v1/jobs/{job_a}/events"),
                            ("GET", f"/v1/jobs/{job_a}?wait=1"), ("DELETE", f"/v1/jobs/{job_a}")):
            r = http_b.request(method, url)
            assert r.status_code == 404 and error_code(r) == "job_not_found", (method, url, r.text)
    with server.http(a) as http_a:
        assert http_a.get(f"/v1/jobs/{job_a}").status_code == 200  # B's DELETE did nothing
        ids = {j["id"] for j in http_a.get("/v1/jobs", params={"limit": 200}).json()["items"]}
        assert job_a in ids and job_b not in ids
        assert http_a.get(f"/v1/jobs/{job_a}/result", params={"format": "md"}).status_code == 200


def test_admin_api_needs_the_admin_token(server):
    api_key = server.create_key("not-admin")
    for headers in ({}, {"Authorization": "Bearer " + "x" * 32}, api_key.headers):
        for method, url, body in (("GET", "/admin/keys", None), ("POST", "/admin/keys", {"tenant": "evil"}),
                                  ("DELETE", f"/admin/keys/{api_key.id}", None),
                                  ("POST", "/admin/retention/run", None)):
            r = server.request(method, url, headers=headers, json=body)
            assert r.status_code == 403, (method, url, headers, r.text)
    # and the right token works: a key made over the admin API is usable at once
    r = server.request("POST", "/admin/keys", json={"tenant": "made-by-admin"}, headers=server.admin_headers())
    assert r.status_code == 201, r.text
    created = r.json()
    assert created["key"].startswith("ld_") and created["webhook_secret"]
    assert server.request("GET", "/v1/jobs", headers={"Authorization": f"Bearer {created['key']}"}).status_code == 200
    # the api key itself was not revoked by the refused DELETE
    with server.http(api_key) as http:
        assert http.get("/v1/jobs").status_code == 200
