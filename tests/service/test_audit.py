"""The access audit trail of a served process (``longdoc serve`` with the
admin API on its own listener), read with ``longdoc audit list`` after the
server stopped: the last requests' records are there, the admin
listener's too, and the filters and bad arguments of the command behave.

No OCR: born-digital pages are read from their text layer."""

from __future__ import annotations

import json
import signal
from datetime import UTC, datetime, timedelta

import httpx

from tests.conftest import free_port
from tests.service.helpers import accepted, submit, wait_terminal


def audit_list(srv, *args: str) -> list[dict]:
    done = srv.cli("audit", "list", "--config", str(srv.config_path), *args)
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_trail_of_a_served_process_through_the_cli(start_server, report_doc):
    srv = start_server(service={"admin_port": free_port()})
    a, b = srv.create_key("served-a", via="cli"), srv.create_key("served-b", via="cli")  # not audited
    with srv.http(a) as http:
        jid = accepted(submit(http, report_doc.pdf_path, {"formats": ["md"], "pages": "1"}))["id"]
        assert wait_terminal(http, jid)["state"] == "succeeded"
        assert http.get(f"/v1/jobs/{jid}/result", params={"format": "md"}).status_code == 200
    with srv.http(b) as http:
        assert http.get(f"/v1/jobs/{jid}").status_code == 404
    with srv.http("ld_" + "x" * 43) as http:
        assert http.get("/v1/jobs", headers={"X-Request-ID": "bad-key"}).status_code == 401
    admin = {**srv.admin_headers(), "X-Request-ID": "admin-listener"}
    assert httpx.get(f"{srv.admin_url}/admin/keys", headers=admin).status_code == 200
    r = httpx.get(f"{srv.admin_url}/admin/keys", headers={"Authorization": "Bearer " + "w" * 32,
                                                           "X-Request-ID": "admin-wrong"})
    assert r.status_code == 403
    assert httpx.get(f"{srv.url}/admin/keys", headers=admin).status_code == 404  # not served there: no record
    with srv.http(a) as http:  # the last requests before SIGTERM
        for n in range(5):
            assert http.get(f"/v1/jobs/{jid}", headers={"X-Request-ID": f"last-{n}"}).status_code == 200
    assert srv.terminate() in (0, -signal.SIGTERM), srv.log_tail()

    everything = audit_list(srv, "--limit", "1000")
    by_id = {r["request_id"]: r for r in everything if r["request_id"]}
    assert {f"last-{n}" for n in range(5)} <= set(by_id), "the last requests' records were lost at shutdown"
    assert (by_id["admin-listener"]["action"], by_id["admin-listener"]["status"]) == ("admin.keys.list", 200)
    assert sum(r["request_id"] == "admin-listener" for r in everything) == 1  # the public listener's 404: none
    assert [(by_id[k]["action"], by_id[k]["status"], by_id[k]["error_code"], by_id[k]["tenant"])
            for k in ("admin-wrong", "bad-key")] == [("auth.failed", 403, "admin_forbidden", None),
                                                    ("auth.failed", 401, "unauthorized", None)]
    mine = audit_list(srv, "--tenant", "served-a")
    assert {r["tenant"] for r in mine} == {"served-a"} and {r["key_id"] for r in mine} == {a.id}
    assert {"job.submit", "job.status", "job.result"} <= {r["action"] for r in mine}
    assert all(r["job_id"] == jid and r["client"] == "127.0.0.1" for r in mine)
    [probe] = audit_list(srv, "--tenant", "served-b")
    assert (probe["action"], probe["job_id"], probe["status"], probe["error_code"]) == (
        "job.status", jid, 404, "job_not_found")
    assert [r["request_id"] for r in audit_list(srv, "--tenant", "served-a", "--limit", "2")] == ["last-4", "last-3"]
    since = by_id["last-2"]["at"]
    assert [r["request_id"] for r in audit_list(srv, "--since", since)] == ["last-4", "last-3", "last-2"]
    assert audit_list(srv, "--since", (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")) == []
    assert len(audit_list(srv, "--since", datetime.now(UTC).date().isoformat(), "--limit", "1000")) == len(everything)


def test_bad_arguments_of_audit_list(start_server):
    srv = start_server(start=False)
    for args, code in ((["--since", "last tuesday"], "invalid_time"), (["--since", "2026-02-30"], "invalid_time"),
                       (["--limit", "0"], "invalid_option"), (["--limit", "1001"], "invalid_option")):
        done = srv.cli("audit", "list", "--config", str(srv.config_path), *args, check=False)
        assert done.returncode == 2 and f"[{code}]" in done.stderr and "Traceback" not in done.stderr, (args, done)
