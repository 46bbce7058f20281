"""How a credential is read and when it is refused (in process): the
failed-authentication lockout refuses wrong credentials only, API keys and
the admin token are counted apart (on a separate admin listener too), and a
request with two ``Authorization`` headers is refused on every route."""

from __future__ import annotations

import httpx
import pytest

from longdoc.service.app import on_admin_listener
from tests.api.harness import BASE_URL, BlockingASGITransport, InProcessServer
from tests.service.helpers import error_code, submit

WRONG_KEY = "ld_" + "x" * 43
WRONG_TOKEN = "y" * 32


def status(srv: InProcessServer, method: str, url: str, token: str | None, **kwargs) -> tuple[int, str | None]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    r = srv.request(method, url, headers=headers, **kwargs)
    return r.status_code, error_code(r) if r.status_code >= 400 else None


def test_a_locked_out_address_is_refused_for_wrong_credentials_only(start_app, report_doc):
    srv = start_app(service={"auth_failures_per_minute": 3})
    key = srv.create_key("lockout")
    assert [status(srv, "GET", "/v1/jobs", WRONG_KEY)[0] for _ in range(4)] == [401, 401, 401, 429]
    r = srv.request("GET", "/v1/jobs", headers={"Authorization": f"Bearer {WRONG_KEY}"})
    assert r.status_code == 429 and int(r.headers["Retry-After"]) >= 1
    assert status(srv, "GET", "/v1/jobs", None) == (429, "rate_limited")  # no key at all is a wrong one
    # the valid key from the same address is still checked and served, uploads included
    assert status(srv, "GET", "/v1/jobs", key.key) == (200, None)
    with srv.http(key) as http:
        assert submit(http, report_doc.pdf_path, {"formats": ["md"], "pages": "1"}).status_code in (200, 202)
    # the admin token is not locked out by the API-key failures, and its own failures are counted apart
    assert status(srv, "GET", "/admin/keys", srv.admin_token) == (200, None)
    assert [status(srv, "GET", "/admin/keys", WRONG_TOKEN)[0] for _ in range(4)] == [403, 403, 403, 429]
    assert status(srv, "GET", "/admin/keys", srv.admin_token) == (200, None)
    assert status(srv, "GET", "/v1/jobs", key.key) == (200, None)


def test_the_admin_listener_is_not_locked_out_by_the_public_one(start_app):
    srv = start_app(service={"admin_port": 1, "auth_failures_per_minute": 2})  # no socket is bound in process
    assert srv.transport is not None
    admin_listener = BlockingASGITransport(srv.transport.portal, on_admin_listener(srv.transport.inner.app))
    for _ in range(3):  # the public listener: wrong keys, then wrong admin tokens (answered 404 there)
        srv.request("GET", "/v1/jobs", headers={"Authorization": f"Bearer {WRONG_KEY}"})
    assert status(srv, "GET", "/v1/jobs", WRONG_KEY) == (429, "rate_limited")
    with httpx.Client(base_url=BASE_URL, transport=admin_listener) as admin:
        def get(token: str) -> int:
            return admin.get("/admin/keys", headers={"Authorization": f"Bearer {token}"}).status_code

        assert get(WRONG_TOKEN) == 403  # its own count: the public listener's failures do not lock it
        assert get(srv.admin_token) == 200
        assert [get(WRONG_TOKEN) for _ in range(2)] == [403, 429]
        assert get(srv.admin_token) == 200


@pytest.mark.parametrize("order", ["valid-first", "valid-last"])
def test_two_authorization_headers_are_refused_on_every_route(start_app, report_doc, order):
    srv = start_app()
    key = srv.create_key("twice")
    for valid, wrong in ((key.key, WRONG_KEY), (srv.admin_token, WRONG_TOKEN)):
        pair = [valid, wrong] if order == "valid-first" else [wrong, valid]
        headers = [("Authorization", f"Bearer {token}") for token in pair]
        with httpx.Client(base_url=BASE_URL, transport=srv.transport) as http:
            answers = [http.get("/v1/jobs", headers=headers), http.get("/admin/keys", headers=headers),
                       submit(http, report_doc.pdf_path, {"formats": ["md"]}, headers=headers)]
        for r in answers:
            assert (r.status_code, error_code(r)) == (400, "duplicate_authorization"), (r.request.url, r.text)
    with srv.http(key) as http:
        assert http.get("/v1/jobs").json()["items"] == []  # no upload was taken
