"""Admin API (keys, retention, the audit trail), guarded by
``service.admin_token`` and kept apart from the inference API."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from longdoc.errors import KeyNotFound
from longdoc.jobs.audit import MAX_LIST_LIMIT, audit_public
from longdoc.jobs.models import parse_utc
from longdoc.service import audit
from longdoc.service.deps import AdminDep, ContainerDep
from longdoc.service.schemas import AuditEventPublic, ErrorResponse, KeyCreate, KeyCreated, KeyPublic

router = APIRouter(prefix="/admin", tags=["admin"], dependencies=[AdminDep],
                   responses={403: {"model": ErrorResponse}})


def _public(key) -> dict:
    return {f: getattr(key, f) for f in KeyPublic.model_fields}


@router.post("/keys", status_code=201, response_model=KeyCreated)
def create_key(request: Request, body: KeyCreate, container: ContainerDep) -> KeyCreated:
    key, plaintext = container.keys.create(body.tenant, rate_limit_per_minute=body.rate_limit_per_minute)
    audit.note_subject(request.scope, tenant=key.tenant, key_id=key.id)
    return KeyCreated(**_public(key), key=plaintext, webhook_secret=key.webhook_secret)


@router.get("/keys", response_model=list[KeyPublic])
def list_keys(container: ContainerDep, tenant: str | None = None) -> list[KeyPublic]:
    return [KeyPublic(**_public(k)) for k in container.keys.list(tenant)]


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
