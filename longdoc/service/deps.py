"""Typed dependencies: the container, the caller's API key (authenticated
and rate limited), the admin guard. Routes declare these and nothing else."""

from __future__ import annotations

import hmac
import time
from typing import Annotated

from fastapi import Depends, Request
from limits import RateLimitItemPerMinute
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

from longdoc.errors import AdminForbidden, RateLimited, Unauthorized
from longdoc.jobs.models import ApiKey
from longdoc.service.container import Container
from longdoc.service.jobs_service import JobService


class RateLimiter:
    """Per-key moving-window limit (requests per minute)."""

    def __init__(self, default_per_minute: int) -> None:
        self.default = default_per_minute
        self._limiter = MovingWindowRateLimiter(MemoryStorage())

    def check(self, key: ApiKey) -> None:
        item = RateLimitItemPerMinute(key.rate_limit_per_minute or self.default)
        if not self._limiter.hit(item, key.id):
            reset, _ = self._limiter.get_window_stats(item, key.id)
            retry = max(1, int(reset - time.time()) + 1)
            raise RateLimited(f"Rate limit of {item.amount} requests per minute reached.", retry_after=retry)


def get_container(request: Request) -> Container:
    return request.app.state.container


ContainerDep = Annotated[Container, Depends(get_container)]


def get_jobs(container: ContainerDep) -> JobService:
    return container.service


JobsDep = Annotated[JobService, Depends(get_jobs)]


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def current_key(request: Request, container: ContainerDep) -> ApiKey:
    token = _bearer(request)
    if token is None:
        raise Unauthorized("Missing API key.")
    key = container.keys.authenticate(token)
    if key is None:
        raise Unauthorized("Invalid or revoked API key.")
    request.state.tenant = key.tenant
    request.app.state.rate_limiter.check(key)
    return key


KeyDep = Annotated[ApiKey, Depends(current_key)]


def require_admin(request: Request, container: ContainerDep) -> None:
    configured = container.settings.service.admin_token
    token = _bearer(request)
    if configured is None or token is None or not hmac.compare_digest(
        token.encode(), configured.get_secret_value().encode()
    ):
        raise AdminForbidden("Admin token missing or wrong.")


AdminDep = Depends(require_admin)
