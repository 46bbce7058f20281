"""Admin API (keys, retention, the audit trail), guarded by
``service.admin_token`` and kept apart from the inference API."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from longdoc.audit import middleware as audit
from longdoc.audit.trail import MAX_LIST_LIMIT, audit_public
from longdoc.durations import parse_duration
from longdoc.errors import KeyNotFound
from longdoc.jobs.models import ApiKey, parse_utc
from longdoc.jobs.repo import key_state
from longdoc.service.deps import AdminDep, ContainerDep
from longdoc.service.schemas import (
    AuditEventPublic,
    ErrorResponse,
    KeyCreate,
    KeyCreated,
    KeyPublic,
    KeyRotate,
    KeyRotated,
)

router = APIRouter(prefix="/admin", tags=["admin"], dependencies=[AdminDep],
                   responses={403: {"model": ErrorResponse}})


def _public(key: ApiKey, now: datetime) -> dict:
    fields = {f: getattr(key, f) for f in KeyPublic.model_fields if f != "state"}
    return {**fields, "state": key_state(key, now)}


@router.post("/keys", status_code=201, response_model=KeyCreated, responses={400: {"model": ErrorResponse}})
def create_key(request: Request, body: KeyCreate, container: ContainerDep) -> KeyCreated:
    expires_in = parse_duration(body.expires_in, what="expires_in") if body.expires_in is not None else None
    key, plaintext = container.keys.create(body.tenant, rate_limit_per_minute=body.rate_limit_per_minute,
                                           expires_in=expires_in)
    audit.note_subject(request.scope, tenant=key.tenant, key_id=key.id)
    return KeyCreated(**_public(key, container.keys.now()), key=plaintext, webhook_secret=key.webhook_secret)


@router.get("/keys", response_model=list[KeyPublic])
def list_keys(container: ContainerDep, tenant: str | None = None) -> list[KeyPublic]:
    now = container.keys.now()
    return [KeyPublic(**_public(k, now)) for k in container.keys.list(tenant)]


@router.post("/keys/{key_id}/rotate", status_code=201, response_model=KeyRotated,
             responses={400: {"model": ErrorResponse}, 404: {"model": ErrorResponse}, 409: {"model": ErrorResponse}})
def rotate_key(request: Request, key_id: str, container: ContainerDep, body: KeyRotate | None = None) -> KeyRotated:
    """A new key for the same tenant, limits and webhook secret; the old key
    keeps working for the grace period (default ``service.key_rotation_grace``)."""
    body = body or KeyRotate()
    grace = (parse_duration(body.grace, what="grace", allow_zero=True) if body.grace is not None
             else container.settings.service.key_rotation_grace_delta)
    expires_in = parse_duration(body.expires_in, what="expires_in") if body.expires_in is not None else None
    made = container.keys.rotate(key_id, grace=grace, expires_in=expires_in)
    audit.note_subject(request.scope, tenant=made.key.tenant, key_id=made.old.id)
    now = container.keys.now()
    return KeyRotated(**_public(made.key, now), key=made.plaintext, webhook_secret=made.key.webhook_secret,
                      replaces=KeyPublic(**_public(made.old, now)))


@router.delete("/keys/{key_id}", status_code=204, responses={404: {"model": ErrorResponse}})
def revoke_key(key_id: str, container: ContainerDep) -> Response:
    if not container.keys.revoke(key_id):
        raise KeyNotFound(f"No key {key_id!r}.")
    return Response(status_code=204)


@router.post("/retention/run")
def run_retention(container: ContainerDep) -> dict[str, int]:
    """One retention pass now: jobs expired, audit records purged."""
    return container.run_retention()._asdict()


@router.get("/audit", response_model=list[AuditEventPublic], responses={400: {"model": ErrorResponse}})
def list_audit(container: ContainerDep,
               tenant: Annotated[str | None, Query(max_length=63)] = None,
               since: Annotated[str | None, Query(max_length=64, description="ISO 8601 date or time; "
                                                  "no zone = UTC")] = None,
               limit: Annotated[int, Query(ge=1, le=MAX_LIST_LIMIT)] = 100) -> list[dict]:
    """Audit records, newest first: of one tenant, at or after ``since``."""
    return [audit_public(e) for e in container.audit_events.list(tenant, parse_utc(since) if since else None,
                                                                 limit)]
