"""The access audit trail through the API (in process): a record for every
data action, admin action and failed authentication, the filters of
``GET /admin/audit``, retention, a full queue, and two API replicas over
one PostgreSQL database."""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import text

from longdoc.audit.middleware import ACTIONS, AUTH_FAILED
from longdoc.audit.trail import AuditRecord, audit_public
from tests.api.harness import InProcessServer
from tests.pg import pg_server  # noqa: F401  (fixture)
from tests.service.helpers import accepted, error_code, submit, wait_terminal

#: routes no key or token guards: never audited
PUBLIC = {("GET", "/v1/meta")}


def trail(srv, **params) -> list[dict]:
    """The audit records (newest first) once every one queued so far is written."""
    assert srv.container.audit.flush(30), "audit records not written within 30 s"
    r = srv.request("GET", "/admin/audit", params={"limit": 1000, **params}, headers=srv.admin_headers())
    assert r.status_code == 200, r.text
    return r.json()


def trail_in_db(srv, tenant: str | None = None) -> list[dict]:
    """The records as ``trail`` lists them, read from the database (for an
    address the service throttles)."""
    assert srv.container.audit.flush(30), "audit records not written within 30 s"
    return [audit_public(e) for e in srv.container.audit_events.list(tenant, limit=1000)]


def stored_values(srv) -> str:
    """Every value of every column of ``audit_events``, as one text."""
    with srv.container.db_engine.connect() as conn:
        return "\n".join(repr(tuple(row)) for row in conn.execute(text("SELECT * FROM audit_events")))


def tagged(tag: str) -> dict[str, str]:
    return {"X-Request-ID": tag}


def test_every_audited_route_has_an_action(server):
    """A route guarded by a key or the admin token that the trail would not
    name is a route whose use goes unrecorded."""
    paths = server.transport.inner.app.openapi()["paths"]  # /admin is in it without service.admin_port
    guarded = {(m.upper(), p) for p, ops in paths.items() if p.startswith(("/v1/", "/admin")) for m in ops} - PUBLIC
    assert guarded - set(ACTIONS) == set()
    assert set(ACTIONS) - guarded == set(), "an action names a route that does not exist"


def test_each_data_action_is_recorded_with_tenant_key_and_job(server, report_doc, long_doc):
    key = server.create_key("audit-data")
    with server.http(key) as http:
        job = accepted(submit(http, report_doc.pdf_path, {"formats": ["md", "json"], "pages": "1-2"}))
        jid = job["id"]
        assert wait_terminal(http, jid)["state"] == "succeeded"
        calls = [("job.status", "GET", f"/v1/jobs/{jid}"), ("job.events", "GET", f"/v1/jobs/{jid}/events"),
                 ("job.result", "GET", f"/v1/jobs/{jid}/result?format=md"),
                 ("job.pages", "GET", f"/v1/jobs/{jid}/pages"), ("job.page", "GET", f"/v1/jobs/{jid}/pages/1"),
                 ("job.page_image", "GET", f"/v1/jobs/{jid}/pages/1/image?dpi=40"),
                 ("job.list", "GET", "/v1/jobs"), ("job.delete", "DELETE", f"/v1/jobs/{jid}")]
        for _, method, url in calls:
            r = http.request(method, url)
            assert r.status_code in (200, 204), (url, r.text)
        running = accepted(submit(http, long_doc.pdf_path, {"formats": ["md"]}))
        assert http.delete(f"/v1/jobs/{running['id']}").status_code == 202  # queued or running: cancelled
    records = trail(server, tenant="audit-data")
    by_action = {r["action"]: r for r in records}
    assert by_action["job.submit"]["job_id"] == jid and by_action["job.submit"]["status"] == 202
    for action, _, _ in calls:
        record = by_action[action]
        assert record["key_id"] == key.id and record["client"] == "127.0.0.1", record
        assert record["status"] == (204 if action == "job.delete" else 200) and record["error_code"] is None
        assert record["job_id"] == (None if action == "job.list" else jid), record
    assert by_action["job.cancel"]["job_id"] == running["id"] and by_action["job.cancel"]["status"] == 202
    # newest first; every status poll of wait_terminal is there too
    times = [datetime.fromisoformat(r["at"]) for r in records]
    assert times == sorted(times, reverse=True)
    assert sum(r["action"] == "job.status" for r in records) >= 2


def test_another_tenants_job_is_recorded_as_not_found(server, report_doc):
    a, b = server.create_key("audit-owner"), server.create_key("audit-prober")
    with server.http(a) as http_a, server.http(b) as http_b:
        jid = accepted(submit(http_a, report_doc.pdf_path, {"formats": ["md"], "pages": "1"}))["id"]
        r = http_b.get(f"/v1/jobs/{jid}/result")
        assert r.status_code == 404 and error_code(r) == "job_not_found"
        assert http_b.delete(f"/v1/jobs/{jid}").status_code == 404
        wait_terminal(http_a, jid)
    probes = [r for r in trail(server, tenant="audit-prober") if r["action"].startswith("job.")]
    assert {(p["action"], p["job_id"], p["key_id"], p["status"], p["error_code"]) for p in probes} == {
        ("job.result", jid, b.id, 404, "job_not_found"), ("job.delete", jid, b.id, 404, "job_not_found")}
    assert {r["key_id"] for r in trail(server, tenant="audit-owner")} == {a.id}  # the probes are B's alone


def test_failed_authentication_is_recorded_without_tenant_or_key(server, report_doc):
    start = datetime.now(UTC).isoformat()
    key = server.create_key("audit-victim")
    tag = uuid.uuid4().hex[:12]
    wrong = key.key[:-4] + "AAAA"  # a key that looks right
    with server.http(wrong) as http:
        assert http.get("/v1/jobs", headers=tagged(f"{tag}-list")).status_code == 401
        r = submit(http, report_doc.pdf_path, name="secret-filename.pdf", headers=tagged(f"{tag}-upload"))
        assert r.status_code == 401  # refused by the upload gate, before the body
    r = server.request("GET", "/admin/keys", headers={**tagged(f"{tag}-admin"), "Authorization": f"Bearer {key.key}"})
    assert r.status_code == 403
    with server.http(key) as http:  # the right key, a document and its text that must not reach the trail
        jid = accepted(submit(http, report_doc.pdf_path, {"formats": ["md"], "pages": "1"},
                              name="secret-filename.pdf"))["id"]
        wait_terminal(http, jid)
        markdown = http.get(f"/v1/jobs/{jid}/result", params={"format": "md"}).text
    failed = {r["request_id"]: r for r in trail(server, since=start) if (r["request_id"] or "").startswith(tag)}
    assert {k: (r["action"], r["status"], r["error_code"], r["tenant"], r["key_id"]) for k, r in failed.items()} == {
        f"{tag}-list": (AUTH_FAILED, 401, "unauthorized", None, None),
        f"{tag}-upload": (AUTH_FAILED, 401, "unauthorized", None, None),
        f"{tag}-admin": (AUTH_FAILED, 403, "admin_forbidden", None, None),
    }
    stored = stored_values(server)
    words = max((line for line in markdown.splitlines() if not line.startswith("#")), key=len)[:60]
    assert len(words) > 20 and words in markdown
    for secret in (key.key, wrong, key.key[3:20], "secret-filename", words, report_doc.pdf_path.read_bytes()[:64].hex()):
        assert secret not in stored, secret


def test_the_failed_auth_throttle_and_a_keys_rate_limit_are_recorded(start_app):
    srv = start_app(service={"auth_failures_per_minute": 2})
    with srv.http("ld_wrong") as http:
        assert [http.get("/v1/jobs").status_code for _ in range(3)] == [401, 401, 429]
    srv2 = start_app()
    limited = srv2.create_key("audit-limited", rate_limit=1)
    with srv2.http(limited) as http:
        assert [http.get("/v1/jobs").status_code for _ in range(2)] == [200, 429]
    throttled = [(r["action"], r["status"], r["error_code"], r["tenant"]) for r in trail_in_db(srv) if r["tenant"] is None
                 and r["action"] == AUTH_FAILED]
    assert throttled == [(AUTH_FAILED, 429, "rate_limited", None)] + [(AUTH_FAILED, 401, "unauthorized", None)] * 2
    over = [(r["action"], r["status"], r["error_code"], r["key_id"]) for r in trail(srv2, tenant="audit-limited")
            if r["action"] == "job.list"]
    assert over == [("job.list", 429, "rate_limited", limited.id), ("job.list", 200, None, limited.id)]


def test_admin_actions_are_recorded(server):
    start = datetime.now(UTC).isoformat()
    tag = uuid.uuid4().hex[:12]
    admin = {**server.admin_headers(), **tagged(tag)}
    made = server.request("POST", "/admin/keys", json={"tenant": "audit-admin"}, headers=admin).json()
    assert server.request("GET", "/admin/keys", headers=admin).status_code == 200
    assert server.request("DELETE", f"/admin/keys/{made['id']}", headers=admin).status_code == 204
    assert server.request("DELETE", "/admin/keys/no-such-key", headers=admin).status_code == 404
    assert server.request("POST", "/admin/retention/run", headers=admin).status_code == 200
    assert server.request("GET", "/admin/audit", params={"since": "yesterday"}, headers=admin).status_code == 400
    mine = [(r["action"], r["status"], r["error_code"], r["tenant"], r["key_id"])
            for r in reversed(trail(server, since=start)) if r["request_id"] == tag]
    assert mine == [("admin.keys.create", 201, None, "audit-admin", made["id"]),
                    ("admin.keys.list", 200, None, None, None),
                    ("admin.keys.revoke", 204, None, None, made["id"]),
                    ("admin.keys.revoke", 404, "key_not_found", None, "no-such-key"),
                    ("admin.retention.run", 200, None, None, None),
                    ("admin.audit.list", 400, "invalid_time", None, None)]


def test_a_rotation_and_an_expired_keys_attempts_are_recorded_with_the_key(server):
    tag = uuid.uuid4().hex[:12]
    admin = {**server.admin_headers(), **tagged(tag)}
    old = server.request("POST", "/admin/keys", json={"tenant": "audit-rotate"}, headers=admin).json()
    new = server.request("POST", f"/admin/keys/{old['id']}/rotate", json={"grace": "0s"}, headers=admin).json()
    r = server.request("GET", "/v1/jobs", headers={"Authorization": f"Bearer {old['key']}", **tagged(tag)})
    assert r.status_code == 401 and error_code(r) == "key_expired"
    mine = [(r["action"], r["status"], r["error_code"], r["tenant"], r["key_id"])
            for r in reversed(trail_in_db(server)) if r["request_id"] == tag]
    assert mine == [("admin.keys.create", 201, None, "audit-rotate", old["id"]),
                    ("admin.keys.rotate", 201, None, "audit-rotate", old["id"]),
                    (AUTH_FAILED, 401, "key_expired", "audit-rotate", old["id"])]
    assert old["key"] not in stored_values(server) and new["key"] not in stored_values(server)


def test_public_endpoints_are_not_recorded(start_app):
    srv = start_app()
    for url in ("/healthz", "/readyz", "/metrics", "/v1/meta", "/console/", "/v1/no-such-thing"):
        srv.request("GET", url)
    assert trail(srv) == []  # the listing itself is recorded after it answered
    assert [r["action"] for r in trail(srv)] == ["admin.audit.list"]


def test_list_filters_tenant_since_and_limit(start_app):
    srv = start_app()
    a, b = srv.create_key("filter-a"), srv.create_key("filter-b")
    for key, n in ((a, 3), (b, 2)):
        with srv.http(key) as http:
            for _ in range(n):
                assert http.get("/v1/jobs").status_code == 200
    listed = trail(srv, tenant="filter-a")
    assert [r["action"] for r in listed] == ["job.list"] * 3 + ["admin.keys.create"]
    assert len(trail(srv, tenant="filter-a", limit=2)) == 2
    middle = listed[1]["at"]  # the second newest of tenant a
    assert [r["at"] for r in trail(srv, tenant="filter-a", since=middle)] == [listed[0]["at"], middle]
    assert trail(srv, since=(datetime.now(UTC) + timedelta(hours=1)).isoformat()) == []
    naive_future = (datetime.now(UTC) + timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%M:%S")  # no zone = UTC
    assert trail(srv, since=naive_future) == []
    assert len(trail(srv, since=datetime.now(UTC).date().isoformat())) >= 7  # a date alone: from midnight UTC
    for params, status, code in (({"since": "5 minutes ago"}, 400, "invalid_time"),
                                 ({"since": "2026-13-01"}, 400, "invalid_time"),
                                 ({"since": "0001-01-01T00:00:00+01:00"}, 400, "invalid_time"),
                                 ({"limit": 0}, 422, "invalid_request"), ({"limit": 1001}, 422, "invalid_request")):
        r = srv.request("GET", "/admin/audit", params=params, headers=srv.admin_headers())
        assert r.status_code == status and error_code(r) == code, (params, r.text)


def test_retention_purges_records_past_audit_retention_days(start_app):
    srv = start_app(service={"audit_retention_days": 30})
    now = datetime.now(UTC)
    srv.container.audit_events.add_many([
        AuditRecord(at=now - timedelta(days=31), action="job.status", status=200, tenant="old"),
        AuditRecord(at=now - timedelta(days=29), action="job.status", status=200, tenant="kept"),
    ])
    r = srv.request("POST", "/admin/retention/run", headers=srv.admin_headers())
    assert r.status_code == 200 and r.json()["audit_purged"] == 1
    assert trail(srv, tenant="old") == []
    assert len(trail(srv, tenant="kept")) == 1
    r = srv.request("POST", "/admin/retention/run", headers=srv.admin_headers())
    assert r.json()["audit_purged"] == 0


def test_records_of_the_last_requests_are_written_at_shutdown(tmp_path):
    srv = InProcessServer(tmp_path / "app").start()
    key = srv.create_key("audit-shutdown")
    with srv.http(key) as http:
        assert http.get("/v1/jobs").status_code == 200  # the key's last use is written now
        blocker = sqlite3.connect(srv.data / "longdoc.db", isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # the writer waits: the records stay queued
        try:
            for _ in range(19):
                assert http.get("/v1/jobs").status_code == 200
            stopping = threading.Thread(target=srv.stop)  # no flush first: closing writes what is queued
            stopping.start()
            time.sleep(0.5)
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        stopping.join(60)
    with sqlite3.connect(srv.data / "longdoc.db") as db:
        rows = db.execute("SELECT action, status FROM audit_events WHERE tenant = 'audit-shutdown'").fetchall()
    assert sorted(rows) == [("admin.keys.create", 201)] + [("job.list", 200)] * 20


def test_a_full_queue_drops_records_counts_them_and_requests_go_on(start_app):
    srv = start_app(service={"audit_queue_size": 1})
    key = srv.create_key("audit-full")
    with srv.http(key) as http:
        assert http.get("/v1/jobs").status_code == 200  # the key's last use is written now, not below
        trail(srv)
        blocker = sqlite3.connect(srv.data / "longdoc.db", isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # the database is locked: the writer waits with a batch in hand
        try:
            statuses = [http.get("/v1/jobs").status_code]
            time.sleep(srv.container.audit.linger_s + 0.75)  # that batch is being written (blocked) by now
            statuses += [http.get("/v1/jobs").status_code for _ in range(9)]
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
    assert statuses == [200] * 10
    metrics = srv.request("GET", "/metrics").text
    dropped = next(float(line.split()[-1]) for line in metrics.splitlines()
                   if line.startswith("longdoc_audit_records_dropped_total "))
    assert dropped >= 8  # one record in the writer's hands, one in the queue
    written = [r for r in trail(srv, tenant="audit-full") if r["action"] == "job.list"]
    assert 1 + 10 - dropped == len(written)
    assert "audit records dropped" in srv.log_text()


def test_audit_off_records_nothing(start_app):
    srv = start_app(service={"audit": False})
    key = srv.create_key("audit-off")
    with srv.http(key) as http:
        assert http.get("/v1/jobs").status_code == 200
    assert srv.container.audit is None
    r = srv.request("GET", "/admin/audit", headers=srv.admin_headers())
    assert r.status_code == 200 and r.json() == []


def test_request_ids_are_recorded_only_when_well_formed(start_app):
    srv = start_app()
    key = srv.create_key("audit-rid")
    with srv.http(key) as http:
        for rid in ("req-1.a:b_c", "has space", "x" * 65, ""):
            http.get("/v1/jobs", headers=tagged(rid))
    assert [r["request_id"] for r in reversed(trail(srv, tenant="audit-rid"))][1:] == ["req-1.a:b_c", None, None, None]


def test_two_replicas_write_one_trail(tmp_path, pg_server):  # noqa: F811
    """Two API replicas (two apps, one PostgreSQL database) each write their
    own records; either lists both."""
    url = pg_server.create_database()
    replicas = [InProcessServer(tmp_path / f"replica-{i}", database={"url": url}).start() for i in range(2)]
    try:
        key = replicas[0].create_key("fleet-audit")
        for i, srv in enumerate(replicas):
            with srv.http(key) as http:
                for n in range(3):
                    assert http.get("/v1/jobs", headers=tagged(f"replica-{i}-{n}")).status_code == 200
        replicas[1].container.audit.flush(30)
        listed = trail(replicas[0], tenant="fleet-audit")
        assert sorted(r["request_id"] for r in listed if r["request_id"]) == [
            f"replica-{i}-{n}" for i in range(2) for n in range(3)]
        assert trail(replicas[1], tenant="fleet-audit") == listed
    finally:
        for srv in replicas:
            srv.stop()
