"""Who is calling: API keys, per-key rate limits, and a per-address
throttle on failed authentication.

:class:`Authenticator` is the one place a bearer token becomes an
:class:`~longdoc.jobs.models.ApiKey`. The dependency in
:mod:`longdoc.service.deps` and the upload gate in
:mod:`longdoc.service.app` (which authenticates *before* an upload's body is
read) both call it.

Failed attempts are counted per client address in a moving one-minute
window, API keys (a missing, unknown, revoked or expired key) and the admin
token (a missing or wrong one) apart. Past ``service.auth_failures_per_minute``
of its kind, a *wrong* credential from that address is answered
``429 rate_limited`` with ``Retry-After`` (instead of 401/403) until the window
has room again; a *right* one is still served. The lockout slows and marks a
guessing client; it is not what makes guessing hopeless (a key is 32 random
bytes, the admin token at least 24 characters), so a client sharing the
address (a NAT, a proxy) keeps working with its own valid key. Each locked-out
attempt costs what any request costs: one SHA-256 and one indexed lookup for
something shaped like a key (``ld_…``), nothing for anything else.
Key failures never lock the admin token out, nor admin failures an API key:
on a separate admin listener (``service.admin_port``) its lockout is its own.

A request carrying more than one ``Authorization`` header is refused
(:func:`authorization_header`, 400 ``duplicate_authorization``) on every
route, before any credential in it is looked at.

Where the counts live is :func:`rate_limit_storage_url`: in this process
(``memory://``) for one server, or a shared store (Redis) so every API
replica counts against the same limits. A shared store that fails does not
fail the request: the check is skipped (fail open), a warning is logged at
most every 30 s and :attr:`Authenticator.storage_errors` counts the skipped
checks; the store is tried again on later requests, so counting resumes when
it is back.
"""

from __future__ import annotations

import hmac
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from limits import RateLimitItem, RateLimitItemPerMinute
from limits.errors import ConfigurationError, StorageError
from limits.storage import Storage, storage_from_string
from limits.strategies import MovingWindowRateLimiter
from redis.backoff import NoBackoff
from redis.retry import Retry

from longdoc.config import Settings
from longdoc.errors import (
    AdminForbidden,
    ConfigError,
    DuplicateAuthorization,
    KeyExpired,
    RateLimited,
    Unauthorized,
)
from longdoc.jobs.models import ApiKey
from longdoc.jobs.repo import KeyRepo, KeyState, key_state
from longdoc.tls import redis_options

log = logging.getLogger("longdoc.auth")

UNKNOWN_CLIENT = "unknown"
MEMORY_STORAGE = "memory://"
KEY_PREFIX = "longdoc"
REDIS_SCHEMES = ("redis", "rediss")
# Redis clients give up fast: a dead Redis costs a request at most ~1 s.
STORAGE_SOCKET_TIMEOUT_SECONDS = 0.5
STORAGE_WARNING_INTERVAL_SECONDS = 30.0
#: the failed-attempt counts, per client address: API keys, the admin token
KEY_FAILURES = "auth-failures"
ADMIN_FAILURES = "admin-failures"


def rate_limit_storage_url(settings: Settings) -> str:
    """Where the request counts of this deployment live, as a `limits`
    storage URL: ``service.rate_limit_storage_url`` when set; otherwise
    ``memory://`` for ``queue.backend: embedded`` (one process) and the
    broker's Redis (``queue.broker_url``, redis:// or rediss://) for
    ``queue.backend: celery``, so every API replica shares one count.
    Raises ConfigError for celery on a broker that is not Redis (e.g. amqp)
    when no storage URL is set."""
    explicit = settings.service.rate_limit_storage_url
    if explicit:
        return explicit
    if settings.queue.backend != "celery":
        return MEMORY_STORAGE
    broker = settings.queue.broker_url or ""
    if urlsplit(broker).scheme in REDIS_SCHEMES:
        return broker
    raise ConfigError(
        "queue.backend celery: the rate limits of the API replicas need a shared store, and the broker "
        f"({urlsplit(broker).scheme or 'none'}://) is not Redis.",
        hint="Set service.rate_limit_storage_url to a Redis URL, e.g. redis://host:6379/1.",
    )


def limits_storage(url: str, key_prefix: str = KEY_PREFIX, tls_ca_file: str | None = None) -> Storage:
    """A `limits` storage for ``url`` that raises
    :class:`limits.errors.StorageError` when the store fails. Redis-family
    stores get ``key_prefix`` (their keys are ``<key_prefix>:LIMITER/...``,
    apart from Celery's) and short socket timeouts; plain Redis clients do
    not retry; a ``rediss://`` store's certificate is checked against
    ``tls_ca_file`` (``queue.tls_ca_file``). Connects lazily: a store that is
    down fails on first use, not here. Raises ConfigError for an unknown
    scheme, a store without moving-window support or a CA file that cannot
    be read."""
    try:
        storage = storage_from_string(url, wrap_exceptions=True, **_storage_options(url, key_prefix),
                                      **redis_options(url, tls_ca_file))
    except ConfigurationError as exc:
        raise ConfigError(f"service.rate_limit_storage_url: {exc}",
                          hint="Use memory:// or a Redis URL such as redis://host:6379/1.") from exc
    if not isinstance(storage, Storage):  # async+redis:// and the like: its calls would return coroutines
        raise ConfigError(f"service.rate_limit_storage_url: {urlsplit(url).scheme}:// is an asyncio store.",
                          hint="Use memory:// or a Redis URL such as redis://host:6379/1.")
    if not hasattr(storage, "acquire_entry"):
        raise ConfigError(f"service.rate_limit_storage_url: {urlsplit(url).scheme}:// cannot count moving windows.",
                          hint="Use memory:// or a Redis URL such as redis://host:6379/1.")
    return storage


def _storage_options(url: str, key_prefix: str) -> dict[str, Any]:
    scheme = urlsplit(url).scheme
    if not scheme.startswith(("redis", "valkey")):
        return {}
    options: dict[str, Any] = {"key_prefix": key_prefix, "socket_timeout": STORAGE_SOCKET_TIMEOUT_SECONDS,
                               "socket_connect_timeout": STORAGE_SOCKET_TIMEOUT_SECONDS}
    if scheme in ("redis", "rediss", "redis+unix"):
        options["retry"] = Retry(NoBackoff(), 0)
    return options


class Authenticator:
    """Authentication and rate limits over ``keys``.

    ``storage_url`` (see :func:`rate_limit_storage_url`) is where counts
    live (a ``rediss://`` store's certificate checked against
    ``storage_tls_ca_file``); instances over the same shared store (API
    replicas) count together. The store failing never fails a request: the check passes
    uncounted (a ``Retry-After`` falls back to the whole window), and the
    store is not asked again for ``storage_retry_seconds``, so a hanging
    store slows few requests. ``storage_errors`` counts the store calls that
    failed or were skipped that way (a metric)."""

    storage_retry_seconds: float = 1.0

    def __init__(self, keys: KeyRepo, *, rate_per_minute: int, failures_per_minute: int,
                 admin_token: str | None = None, storage_url: str = MEMORY_STORAGE,
                 key_prefix: str = KEY_PREFIX, storage_tls_ca_file: str | None = None) -> None:
        self.keys = keys
        self.rate_per_minute = rate_per_minute
        self.admin_token = admin_token
        self._limiter = MovingWindowRateLimiter(limits_storage(storage_url, key_prefix, storage_tls_ca_file))
        self._failures = RateLimitItemPerMinute(failures_per_minute)
        self.storage_errors = 0
        self._lock = threading.Lock()
        self._failed_at: float | None = None
        self._warned_at: float | None = None

    def authenticate(self, authorization: str | None, client: str | None) -> ApiKey:
        """The key a ``Bearer`` header names, counted against its rate
        limit: :meth:`identify`, then :meth:`check_rate`. Raises RateLimited
        (this address failed too often, or the key is over its limit),
        KeyExpired (a key past its expiry or its grace period) or
        Unauthorized (no key, an unknown or revoked one)."""
        key = self.identify(authorization, client)
        self.check_rate(key)
        return key

    def identify(self, authorization: str | None, client: str | None) -> ApiKey:
        """The key a ``Bearer`` header names, not yet counted against its
        rate limit. A failure is counted against ``client`` (an expired key
        as an unknown one) and raises KeyExpired (only when it expired, no
        tenant or key id) or Unauthorized, or RateLimited when ``client`` is
        already past its failures."""
        client = client or UNKNOWN_CLIENT
        token = bearer(authorization)
        try:
            key = self.keys.authenticate(token) if token is not None else None
        except KeyExpired as exc:
            self._failed(KEY_FAILURES, client)
            raise _expired(exc.context) from None
        if key is None:
            self._failed(KEY_FAILURES, client)
            raise Unauthorized("Missing API key." if token is None else "Invalid or revoked API key.")
        return key

    def still_valid(self, key: ApiKey) -> None:
        """Return if ``key``, authenticated earlier (at the start of an
        answer that lasts: an event stream), still authenticates now; raises
        Unauthorized (revoked since, or deleted) or KeyExpired (only when,
        as at authentication). Reads the key's row, nothing is counted."""
        row = self.keys.get(key.id)
        state = key_state(row, self.keys.now()) if row is not None else KeyState.REVOKED
        if state is KeyState.REVOKED:
            raise Unauthorized("The API key was revoked.")
        if state is KeyState.EXPIRED:
            assert row is not None and row.expires_at is not None
            raise _expired({"expired_at": row.expires_at.isoformat(), "tenant": row.tenant, "key_id": row.id})

    def check_admin(self, authorization: str | None, client: str | None) -> None:
        """Return if the header carries the configured admin token; raises
        AdminForbidden (admin API off, or a missing or wrong token), or
        RateLimited when ``client`` is past its admin-token failures."""
        client = client or UNKNOWN_CLIENT
        token = bearer(authorization)
        if self.admin_token is None or token is None or not hmac.compare_digest(
            token.encode(), self.admin_token.encode()
        ):
            self._failed(ADMIN_FAILURES, client)
            raise AdminForbidden("Admin token missing or wrong.")

    def _failed(self, kind: str, client: str) -> None:
        """Count a failed attempt of ``kind`` from ``client``; raises
        RateLimited instead when the address is past its limit (a refused
        attempt is not counted: the lockout ends a minute after the attempts
        that filled it)."""
        if not self._ask(self._limiter.hit, self._failures, kind, client):
            what = "admin-token" if kind == ADMIN_FAILURES else "API-key"
            raise RateLimited(
                f"Too many failed {what} authentications from this address ({self._failures.amount} per minute).",
                hint="Check the credential; wait for `Retry-After` seconds before trying again.",
                retry_after=self._retry_after(self._failures, kind, client),
            )

    def check_rate(self, key: ApiKey) -> None:
        """Count a request of ``key``; raises RateLimited past its limit."""
        item = RateLimitItemPerMinute(key.rate_limit_per_minute or self.rate_per_minute)
        if not self._ask(self._limiter.hit, item, "key", key.id):
            raise RateLimited(f"Rate limit of {item.amount} requests per minute reached.",
                              retry_after=self._retry_after(item, "key", key.id))

    def _retry_after(self, item: RateLimitItem, *identifiers: str) -> int:
        """Seconds until ``item``'s window has room; its whole window when
        the store cannot say."""
        stats = self._ask(self._limiter.get_window_stats, item, *identifiers, fallback=None)
        if stats is None:
            return item.get_expiry()
        return max(1, int(stats.reset_time - time.time()) + 1)

    def _ask(self, call: Callable[..., Any], *args: Any, fallback: Any = True) -> Any:
        """``call(*args)`` on the store, or ``fallback`` (True = allowed) when
        the store fails or failed within ``storage_retry_seconds``."""
        if self._resting():
            self._let_through(None)
            return fallback
        try:
            result = call(*args)
        except StorageError as exc:
            self._let_through(exc)
            return fallback
        self._failed_at = None
        return result

    def _resting(self) -> bool:
        failed_at = self._failed_at
        return failed_at is not None and time.monotonic() - failed_at < self.storage_retry_seconds

    def _let_through(self, exc: StorageError | None) -> None:
        """Count a check skipped because of the store; remember a new
        failure; warn at most every 30 s."""
        now = time.monotonic()
        with self._lock:
            self.storage_errors += 1
            if exc is not None:
                self._failed_at = now
            warn = exc is not None and (self._warned_at is None
                                        or now - self._warned_at >= STORAGE_WARNING_INTERVAL_SECONDS)
            if warn:
                self._warned_at = now
        if warn and exc is not None:
            log.warning("rate-limit store failed; requests pass uncounted until it answers again",
                        extra={"error": type(exc.storage_error).__name__, "detail": str(exc.storage_error),
                               "skipped_checks": self.storage_errors})


def bearer(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None."""
    scheme, _, token = (authorization or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def authorization_header(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The one ``Authorization`` header of a request's raw ASGI ``headers``
    (``scope["headers"]``), or None. Raises DuplicateAuthorization when there
    are several: which one counts is then no server's guess (one reads the
    first, another the last), so the request is refused on every route."""
    found = [value for name, value in headers if name.lower() == b"authorization"]
    if len(found) > 1:
        raise DuplicateAuthorization(f"The request has {len(found)} Authorization headers.")
    return found[0].decode("latin-1") if found else None


def _expired(context: dict[str, Any]) -> KeyExpired:
    """What the caller of an expired key is told: that it expired, and when
    (``context["expired_at"]``); the key's ``tenant`` and ``key_id`` stay in
    ``context`` for the audit trail and are left out of the answer
    (:meth:`KeyExpired.to_dict`)."""
    when = context.get("expired_at")
    message = f"The API key expired at {when}." if when else "The API key has expired."
    return KeyExpired(message, **context)
