"""Admin API (keys, retention), guarded by ``service.admin_token`` and kept
apart from the inference API."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Response

from longdoc.durations import parse_duration
from longdoc.errors import KeyNotFound
from longdoc.jobs.models import ApiKey
from longdoc.jobs.repo import key_state
from longdoc.service.deps import AdminDep, ContainerDep
from longdoc.service.schemas import ErrorResponse, KeyCreate, KeyCreated, KeyPublic, KeyRotate, KeyRotated

router = APIRouter(prefix="/admin", tags=["admin"], dependencies=[AdminDep],
                   responses={403: {"model": ErrorResponse}})


def _public(key: ApiKey, now: datetime) -> dict:
    fields = {f: getattr(key, f) for f in KeyPublic.model_fields if f != "state"}
    return {**fields, "state": key_state(key, now)}


@router.post("/keys", status_code=201, response_model=KeyCreated, responses={400: {"model": ErrorResponse}})
def create_key(body: KeyCreate, container: ContainerDep) -> KeyCreated:
    expires_in = parse_duration(body.expires_in, what="expires_in") if body.expires_in is not None else None
    key, plaintext = container.keys.create(body.tenant, rate_limit_per_minute=body.rate_limit_per_minute,
                                           expires_in=expires_in)
    return KeyCreated(**_public(key, container.keys.now()), key=plaintext, webhook_secret=key.webhook_secret)


@router.get("/keys", response_model=list[KeyPublic])
def list_keys(container: ContainerDep, tenant: str | None = None) -> list[KeyPublic]:
    now = container.keys.now()
    return [KeyPublic(**_public(k, now)) for k in container.keys.list(tenant)]


@router.post("/keys/{key_id}/rotate", status_code=201, response_model=KeyRotated,
             responses={400: {"model": ErrorResponse}, 404: {"model": ErrorResponse}, 409: {"model": ErrorResponse}})
def rotate_key(key_id: str, container: ContainerDep, body: KeyRotate | None = None) -> KeyRotated:
    """A new key for the same tenant, limits and webhook secret; the old key
    keeps working for the grace period (default ``service.key_rotation_grace``)."""
    body = body or KeyRotate()
    grace = (parse_duration(body.grace, what="grace", allow_zero=True) if body.grace is not None
             else container.settings.service.key_rotation_grace_delta)
    expires_in = parse_duration(body.expires_in, what="expires_in") if body.expires_in is not None else None
    made = container.keys.rotate(key_id, grace=grace, expires_in=expires_in)
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
    return {"expired": container.run_retention()}
