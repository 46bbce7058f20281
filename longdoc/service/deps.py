"""Typed dependencies: the container, the caller's API key (authenticated
and rate limited), the admin guard. Routes declare these and nothing else.

Both guards (and the upload gate of :mod:`longdoc.service.app`) read the
request's credential from its raw ASGI headers through
:func:`~longdoc.service.auth.authorization_header`: one rule for every route,
and a request with two ``Authorization`` headers is refused."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from starlette.types import Scope

from longdoc.audit import middleware as audit
from longdoc.errors import KeyExpired, LongdocError
from longdoc.jobs.models import ApiKey
from longdoc.service.auth import Authenticator, authorization_header
from longdoc.service.container import Container
from longdoc.service.jobs_service import JobService

#: where the upload gate leaves the key it authenticated (in ``scope["state"]``)
AUTHENTICATED_KEY = "longdoc_api_key"


def get_container(request: Request) -> Container:
    return request.app.state.container


ContainerDep = Annotated[Container, Depends(get_container)]


def get_jobs(container: ContainerDep) -> JobService:
    return container.service


JobsDep = Annotated[JobService, Depends(get_jobs)]


def client_address(scope: Scope) -> str | None:
    """The client's address of an ASGI ``scope`` (None when unknown)."""
    client = scope.get("client")
    return client[0] if client else None


def authenticate(auth: Authenticator, scope: Scope) -> ApiKey:
    """The caller's key (:meth:`Authenticator.identify` over the request's
    one Authorization header), counted against its rate limit and noted for
    the audit trail: its tenant and id once the key is known (a request over
    its rate limit is recorded with them), or a failed authentication (an
    expired key's with the tenant and id of the key). Raises
    DuplicateAuthorization, Unauthorized, KeyExpired, RateLimited."""
    try:
        key = auth.identify(authorization_header(scope.get("headers") or ()), client_address(scope))
    except KeyExpired as exc:
        audit.note_subject(scope, tenant=exc.context.get("tenant"), key_id=exc.context.get("key_id"))
        audit.note_auth_failed(scope)
        raise
    except LongdocError:
        audit.note_auth_failed(scope)
        raise
    audit.note_caller(scope, key)
    auth.check_rate(key)
    return key


def current_key(request: Request, container: ContainerDep) -> ApiKey:
    key = getattr(request.state, AUTHENTICATED_KEY, None)  # an upload: authenticated before its body
    if key is None:
        key = authenticate(container.auth, request.scope)
    return key


KeyDep = Annotated[ApiKey, Depends(current_key)]


def require_admin(request: Request, container: ContainerDep) -> None:
    try:
        container.auth.check_admin(authorization_header(request.scope.get("headers") or ()),
                                   client_address(request.scope))
    except LongdocError:
        audit.note_auth_failed(request.scope)
        raise


AdminDep = Depends(require_admin)
