"""Keys that expire and rotate, through the admin API and the inference API
(in process): expires_in, POST /admin/keys/{id}/rotate, 401 key_expired,
the grace period, longdoc_api_keys_expiring."""

from __future__ import annotations

from datetime import datetime, timedelta

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.api.harness import InProcessServer
from tests.service.helpers import error_code, list_jobs, wait_refused

EXPIRY_WAIT_S = 20.0


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """An app of its own: these tests fail authentications on purpose, and
    the shared one counts failures per address."""
    srv = InProcessServer(tmp_path_factory.mktemp("inprocess-keys"),
                          service={"auth_failures_per_minute": 1000}).start()
    yield srv
    srv.stop()


def create(app: InProcessServer, **body) -> httpx.Response:
    with app.admin() as admin:
        return admin.post("/admin/keys", json={"tenant": "acme", **body})


def rotate(app: InProcessServer, key_id: str, body: dict | None = None) -> httpx.Response:
    with app.admin() as admin:
        return admin.post(f"/admin/keys/{key_id}/rotate", json=body) if body is not None \
            else admin.post(f"/admin/keys/{key_id}/rotate")


def listed(app: InProcessServer, key_id: str) -> dict:
    with app.admin() as admin:
        return next(k for k in admin.get("/admin/keys").json() if k["id"] == key_id)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def assert_key_expired(r: httpx.Response) -> None:
    assert r.status_code == 401 and error_code(r) == "key_expired", r.text
    error = r.json()["error"]
    assert "administrator" in error["hint"] and "grace period" in error["hint"]
    # it says that the key expired, and when; never whose key it was nor its id
    assert set(error["context"]) == {"expired_at"} and error["context"]["expired_at"] in error["message"]
    assert "acme" not in r.text and "key_id" not in r.text and "tenant" not in r.text


def test_a_key_with_expires_in_works_then_gets_401_key_expired_with_a_hint(app):
    r = create(app, expires_in="90d")
    assert r.status_code == 201, r.text
    long = r.json()
    assert at(long["expires_at"]) == at(long["created_at"]) + timedelta(days=90)
    assert long["state"] == "active" and long["replaced_by"] is None
    short = create(app, expires_in="2s").json()
    assert list_jobs(app, short["key"]).status_code == 200
    assert_key_expired(wait_refused(app, short["key"], EXPIRY_WAIT_S))
    assert listed(app, short["id"])["state"] == "expired"
    assert list_jobs(app, long["key"]).status_code == 200
    r = list_jobs(app, "ld_" + "x" * 43)  # an unknown key still says unauthorized, not expired
    assert r.status_code == 401 and error_code(r) == "unauthorized"


@pytest.mark.parametrize("expires_in", ["90", "-1d", "0d", "0s", "3651d", "1.5h", "2w", "", "1d1d"])
def test_a_bad_expires_in_is_400_invalid_duration_and_makes_no_key(app, expires_in):
    with app.admin() as admin:
        before = len(admin.get("/admin/keys").json())
    r = create(app, expires_in=expires_in)
    assert r.status_code == 400 and error_code(r) == "invalid_duration", r.text
    assert "expires_in" in r.json()["error"]["message"]
    with app.admin() as admin:
        assert len(admin.get("/admin/keys").json()) == before


def test_a_rotated_key_works_for_its_grace_period_then_gets_401_key_expired(app):
    old = create(app, rate_limit_per_minute=50, expires_in="30d").json()
    r = rotate(app, old["id"], {"grace": "2s"})
    assert r.status_code == 201, r.text
    new = r.json()
    assert new["id"] != old["id"] and new["key"] != old["key"]
    assert (new["tenant"], new["rate_limit_per_minute"], new["webhook_secret"]) == \
        ("acme", 50, old["webhook_secret"])  # webhook receivers keep verifying with the same secret
    assert at(new["expires_at"]) == at(new["created_at"]) + timedelta(days=30)  # the old key's lifetime
    assert new["replaces"]["id"] == old["id"] and new["replaces"]["replaced_by"] == new["id"]
    assert at(new["replaces"]["expires_at"]) == at(new["created_at"]) + timedelta(seconds=2)
    assert list_jobs(app, old["key"]).status_code == 200  # in its grace period
    assert list_jobs(app, new["key"]).status_code == 200
    assert_key_expired(wait_refused(app, old["key"], EXPIRY_WAIT_S))
    assert list_jobs(app, new["key"]).status_code == 200
    shown = listed(app, old["id"])
    assert (shown["state"], shown["replaced_by"]) == ("expired", new["id"])


def test_rotation_without_a_body_uses_the_default_grace_and_zero_grace_stops_the_old_key_now(app):
    old = create(app).json()
    new = rotate(app, old["id"]).json()
    assert at(new["replaces"]["expires_at"]) == at(new["created_at"]) + timedelta(days=7)
    assert new["expires_at"] is None  # the old key never expired: neither does the new one
    newest = rotate(app, new["id"], {"grace": "0s", "expires_in": "12h"}).json()
    assert at(newest["expires_at"]) == at(newest["created_at"]) + timedelta(hours=12)
    assert_key_expired(list_jobs(app, new["key"]))
    assert list_jobs(app, old["key"]).status_code == 200  # its own grace runs on
    assert list_jobs(app, newest["key"]).status_code == 200


def test_keys_that_cannot_be_rotated_and_bad_graces_are_refused_with_stable_codes(app):
    old = create(app).json()
    revoked = create(app).json()
    with app.admin() as admin:
        assert admin.delete(f"/admin/keys/{revoked['id']}").status_code == 204
    cases = [
        (revoked["id"], None, 409, "key_not_rotatable"),
        ("0" * 32, None, 404, "key_not_found"),
        (old["id"], {"grace": "7"}, 400, "invalid_duration"),
        (old["id"], {"grace": "-1d"}, 400, "invalid_duration"),
        (old["id"], {"expires_in": "0d"}, 400, "invalid_duration"),
        (old["id"], {"grace": "7d", "tenant": "other"}, 422, "invalid_request"),
    ]
    for key_id, body, status, code in cases:
        r = rotate(app, key_id, body)
        assert (r.status_code, error_code(r)) == (status, code), (key_id, body, r.text)
    assert listed(app, old["id"])["replaced_by"] is None  # the refused rotations changed nothing
    assert rotate(app, old["id"]).status_code == 201
    r = rotate(app, old["id"])  # a second rotation of the same key
    assert r.status_code == 409 and error_code(r) == "key_not_rotatable"


def test_an_expired_key_counts_as_a_failed_authentication(start_app):
    srv = start_app(service={"auth_failures_per_minute": 3})
    old = create(srv).json()
    rotate(srv, old["id"], {"grace": "0s"})
    for _ in range(3):
        assert_key_expired(list_jobs(srv, old["key"]))
    r = list_jobs(srv, old["key"])
    assert r.status_code == 429 and error_code(r) == "rate_limited"


def expiring(srv: InProcessServer) -> float:
    r = srv.request("GET", "/metrics")
    assert r.status_code == 200
    for family in text_string_to_metric_families(r.text):
        if family.name == "longdoc_api_keys_expiring":
            return family.samples[0].value
    raise AssertionError("no longdoc_api_keys_expiring in /metrics")


def test_the_metric_counts_keys_expiring_within_7_days_that_nobody_replaced(start_app):
    srv = start_app(service={"key_rotation_grace": "1d"})
    assert expiring(srv) == 0
    create(srv)
    create(srv, expires_in="30d")
    soon = create(srv, expires_in="6d").json()
    create(srv, expires_in="1d12h")
    assert expiring(srv) == 2
    new = rotate(srv, soon["id"], {"expires_in": "90d"}).json()  # the default grace: 1d here
    assert at(new["replaces"]["expires_at"]) == at(new["created_at"]) + timedelta(days=1)
    assert expiring(srv) == 1  # a rotated key in its grace is not counted: it has its replacement
    rotate(srv, new["id"], {"expires_in": "2d"})
    assert expiring(srv) == 2
