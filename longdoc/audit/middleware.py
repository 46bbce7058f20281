"""The access audit trail of the HTTP service: :class:`AuditTrail`, a pure
ASGI middleware that writes one record per audited request once its
response starts (its status known), through the container's
:class:`~longdoc.audit.trail.AuditWriter` (a queue: the request never waits
for the database).

Audited: every request to a route in :data:`ACTIONS` (a tenant's data, the
admin API), and every failed authentication (``auth.failed``: a missing,
unknown or revoked key, a wrong admin token, an address throttled for
failing too often), on either listener. Not audited: the public endpoints
(``/healthz``, ``/readyz``, ``/metrics``, ``/v1/meta``, the console) and
paths that match no route.

What the record holds comes from the request's state (``scope["state"]``,
i.e. ``request.state``), where the parts that know it note it:

- the caller's tenant and key id: the auth dependency and the upload gate
  (:func:`note_caller`), or for an admin action the tenant and key acted on
  (:func:`note_subject`; the caller is the admin token);
- a failed authentication: the same two places (:func:`note_auth_failed`);
- the error code of an error answer: the error handlers (:func:`note_error`);
- the job id: the path (``{job_id}``), or the submit route for a new job
  (:func:`note_job`); an admin action's key id: the path (``{key_id}``)
  unless noted;

and from the request itself: the client address (the socket's peer, as
the failed-authentication throttle counts it), and ``X-Request-ID`` when a
proxy or client sends one (1–64 of ``A-Z a-z 0-9 . _ : -``; otherwise none).
"""

from __future__ import annotations

import re
from collections.abc import MutableMapping
from datetime import datetime
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from longdoc.audit.trail import AuditRecord
from longdoc.jobs.models import ApiKey, utcnow

#: (method, route path) → action; DELETE of a job is ``job.cancel`` when it answers 202
ACTIONS: dict[tuple[str, str], str] = {
    ("POST", "/v1/jobs"): "job.submit",
    ("GET", "/v1/jobs"): "job.list",
    ("GET", "/v1/jobs/{job_id}"): "job.status",
    ("GET", "/v1/jobs/{job_id}/events"): "job.events",
    ("GET", "/v1/jobs/{job_id}/result"): "job.result",
    ("GET", "/v1/jobs/{job_id}/pages"): "job.pages",
    ("GET", "/v1/jobs/{job_id}/pages/{number}"): "job.page",
    ("GET", "/v1/jobs/{job_id}/pages/{number}/image"): "job.page_image",
    ("DELETE", "/v1/jobs/{job_id}"): "job.delete",
    ("POST", "/v1/parse"): "job.parse",
    ("POST", "/admin/keys"): "admin.keys.create",
    ("GET", "/admin/keys"): "admin.keys.list",
    ("DELETE", "/admin/keys/{key_id}"): "admin.keys.revoke",
    ("POST", "/admin/keys/{key_id}/rotate"): "admin.keys.rotate",
    ("POST", "/admin/retention/run"): "admin.retention.run",
    ("GET", "/admin/audit"): "admin.audit.list",
}
AUTH_FAILED = "auth.failed"
CANCEL = "job.cancel"
#: only paths under these can be audited; the rest pass straight through
PREFIXES = ("/v1/", "/admin")

# where the notes live in the request's state
TENANT, KEY_ID, JOB_ID, ERROR_CODE, FAILED = "tenant", "audit_key_id", "audit_job_id", "error_code", "auth_failed"
_REQUEST_ID = re.compile(rb"[A-Za-z0-9._:-]{1,64}")


def _state(scope: Scope) -> MutableMapping[str, Any]:
    return scope.setdefault("state", {})


def note_caller(scope: Scope, key: ApiKey) -> None:
    """The request was made with ``key`` (its tenant and id are recorded)."""
    state = _state(scope)
    state[TENANT], state[KEY_ID] = key.tenant, key.id


def note_subject(scope: Scope, tenant: str | None = None, key_id: str | None = None) -> None:
    """An admin action concerned ``tenant`` / the key ``key_id``."""
    state = _state(scope)
    state[TENANT], state[KEY_ID] = tenant, key_id


def note_auth_failed(scope: Scope) -> None:
    """Authentication failed (the record's action is ``auth.failed``)."""
    _state(scope)[FAILED] = True


def note_error(scope: Scope, code: str) -> None:
    """The request is answered with the error ``code``."""
    _state(scope)[ERROR_CODE] = code


def note_job(scope: Scope, job_id: str) -> None:
    """The request concerned job ``job_id`` (one it created)."""
    _state(scope)[JOB_ID] = job_id


def action_of(scope: Scope, status: int) -> str | None:
    """The audited action of a request answered ``status``, or None (not audited)."""
    if scope.get("state", {}).get(FAILED):
        return AUTH_FAILED
    route = scope.get("route")
    path = getattr(route, "path", None) or scope["path"]  # the upload gate answers before routing
    method = "GET" if scope["method"] == "HEAD" else scope["method"]
    action = ACTIONS.get((method, path))
    return CANCEL if action == "job.delete" and status == 202 else action


def request_id(scope: Scope) -> str | None:
    for name, value in scope.get("headers") or ():
        if name == b"x-request-id":
            return value.decode("ascii") if _REQUEST_ID.fullmatch(value) else None
    return None


class AuditTrail:
    """Records each audited request when its response starts; a request
    that raises before answering is recorded as 500 ``internal_error``
    (the answer the server's last-resort handler gives)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(PREFIXES):
            await self.app(scope, receive, send)
            return
        at = utcnow()
        recorded = False

        async def audited_send(message: Message) -> None:
            nonlocal recorded
            if not recorded and message["type"] == "http.response.start":
                recorded = True
                _record(scope, at, message["status"])
            await send(message)

        try:
            await self.app(scope, receive, audited_send)
        except Exception:
            if not recorded:
                recorded = True
                _state(scope).setdefault(ERROR_CODE, "internal_error")
                _record(scope, at, 500)
            raise


def _record(scope: Scope, at: datetime, status: int) -> None:
    action = action_of(scope, status)
    if action is None:
        return
    state = scope.get("state", {})
    params = scope.get("path_params", {})
    client = scope.get("client")
    scope["app"].state.container.audit.record(AuditRecord(
        at=at, action=action, status=status, tenant=state.get(TENANT),
        key_id=state.get(KEY_ID) or params.get("key_id"), client=client[0] if client else None,
        job_id=state.get(JOB_ID) or params.get("job_id"),
        error_code=state.get(ERROR_CODE), request_id=request_id(scope),
    ))
