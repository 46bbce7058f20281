"""Who is calling: API keys, per-key rate limits, and a per-address
throttle on failed authentication.

:class:`Authenticator` is the one place a bearer token becomes an
:class:`~longdoc.jobs.models.ApiKey`. The dependency in
:mod:`longdoc.service.deps` and the upload gate in
:mod:`longdoc.service.app` (which authenticates *before* an upload's body is
read) both call it.

Failed attempts (a missing, unknown or revoked key; a wrong admin token) are
counted per client address in a moving one-minute window; past
``service.auth_failures_per_minute`` every request from that address is
answered ``429 rate_limited`` with ``Retry-After``, without looking at its
key, until the window has room again.
"""

from __future__ import annotations

import hmac
import time

from limits import RateLimitItem, RateLimitItemPerMinute
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

from longdoc.errors import AdminForbidden, RateLimited, Unauthorized
from longdoc.jobs.models import ApiKey
from longdoc.jobs.repo import KeyRepo

UNKNOWN_CLIENT = "unknown"


class Authenticator:
    def __init__(self, keys: KeyRepo, *, rate_per_minute: int, failures_per_minute: int,
                 admin_token: str | None = None) -> None:
        self.keys = keys
        self.rate_per_minute = rate_per_minute
        self.admin_token = admin_token
        self._limiter = MovingWindowRateLimiter(MemoryStorage())
        self._failures = RateLimitItemPerMinute(failures_per_minute)

    def authenticate(self, authorization: str | None, client: str | None) -> ApiKey:
        """The key a ``Bearer`` header names, counted against its rate
        limit. Raises RateLimited (this address failed too often, or the
        key is over its limit) or Unauthorized."""
        client = client or UNKNOWN_CLIENT
        self._check_throttle(client)
        token = bearer(authorization)
        key = self.keys.authenticate(token) if token is not None else None
        if key is None:
            self._failed(client)
            raise Unauthorized("Missing API key." if token is None else "Invalid or revoked API key.")
        self._check_rate(key)
        return key

    def check_admin(self, authorization: str | None, client: str | None) -> None:
        """Return if the header carries the configured admin token; raises
        RateLimited or AdminForbidden (admin API off, or a wrong token)."""
        client = client or UNKNOWN_CLIENT
        self._check_throttle(client)
        token = bearer(authorization)
        if self.admin_token is None or token is None or not hmac.compare_digest(
            token.encode(), self.admin_token.encode()
        ):
            self._failed(client)
            raise AdminForbidden("Admin token missing or wrong.")

    def _check_throttle(self, client: str) -> None:
        if not self._limiter.test(self._failures, "auth-failures", client):
            raise RateLimited(
                f"Too many failed authentications from this address ({self._failures.amount} per minute).",
                hint="Check the API key; wait for `Retry-After` seconds before trying again.",
                retry_after=self._retry_after(self._failures, "auth-failures", client),
            )

    def _failed(self, client: str) -> None:
        self._limiter.hit(self._failures, "auth-failures", client)

    def _check_rate(self, key: ApiKey) -> None:
        item = RateLimitItemPerMinute(key.rate_limit_per_minute or self.rate_per_minute)
        if not self._limiter.hit(item, "key", key.id):
            raise RateLimited(f"Rate limit of {item.amount} requests per minute reached.",
                              retry_after=self._retry_after(item, "key", key.id))

    def _retry_after(self, item: RateLimitItem, *identifiers: str) -> int:
        reset, _ = self._limiter.get_window_stats(item, *identifiers)
        return max(1, int(reset - time.time()) + 1)


def bearer(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None."""
    scheme, _, token = (authorization or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None
