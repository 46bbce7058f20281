"""Admin API (keys, retention), guarded by ``service.admin_token`` and kept
apart from the inference API."""

from __future__ import annotations

from fastapi import APIRouter, Response

from longdoc.errors import KeyNotFound
from longdoc.service.deps import AdminDep, ContainerDep
from longdoc.service.schemas import ErrorResponse, KeyCreate, KeyCreated, KeyPublic

router = APIRouter(prefix="/admin", tags=["admin"], dependencies=[AdminDep],
                   responses={403: {"model": ErrorResponse}})


def _public(key) -> dict:
    return {f: getattr(key, f) for f in KeyPublic.model_fields}


@router.post("/keys", status_code=201, response_model=KeyCreated)
def create_key(body: KeyCreate, container: ContainerDep) -> KeyCreated:
    key, plaintext = container.keys.create(body.tenant, rate_limit_per_minute=body.rate_limit_per_minute)
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
    return {"expired": container.run_retention()}
