"""Signed job webhooks: signatures, target checks, one delivery attempt
(:func:`attempt_delivery`) and the wait before the next (:func:`retry_delay`).

Deliveries are made by the durable outbox (:mod:`longdoc.webhooks.outbox`), the
one way webhooks are sent: it makes its attempts with :func:`attempt_delivery`
and waits :func:`retry_delay` between them.

Wire format (service contract, "Webhooks")::

    POST <callback_url>
    Content-Type: application/json
    X-Longdoc-Event: job.finished
    X-Longdoc-Delivery: <uuid, the same for every attempt of one delivery>
    X-Longdoc-Timestamp: <unix seconds, fresh per attempt>
    X-Longdoc-Signature: sha256=<hex HMAC-SHA256(webhook_secret, f"{timestamp}." + raw body)>

    {"event": "job.finished", "job": {...JobPublic...}}

Safety: a target must be http(s), carry no credentials, and every address its
host resolves to must be public (not loopback, private, link-local, multicast,
reserved, unspecified, shared or otherwise non-global; IPv4 embedded in IPv6
is judged as IPv4) unless ``allow_private``. The check runs when a job is
submitted (:func:`check_target`) and again before every delivery attempt, and
the attempt connects to exactly the addresses that were checked (the URL is
pinned to the IP; ``Host`` and TLS SNI/certificate checks keep the original
name), so a DNS answer that changes between check and connect cannot redirect
the request. Redirects are never followed and environment proxies are ignored.

Receivers verify a delivery with :func:`verify`.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
import random
import re
import socket
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from longdoc import __version__
from longdoc.errors import CallbackRefused

log = logging.getLogger("longdoc.webhooks")

EVENT_HEADER = "X-Longdoc-Event"
DELIVERY_HEADER = "X-Longdoc-Delivery"
TIMESTAMP_HEADER = "X-Longdoc-Timestamp"
SIGNATURE_HEADER = "X-Longdoc-Signature"
_SIGNATURE_PREFIX = "sha256="
_MAX_URL_CHARS = 2048
_MAX_ERROR_CHARS = 500

# --- signatures -------------------------------------------------------------


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """``"sha256=<hex>"``: HMAC-SHA256 keyed by ``secret`` over ``f"{timestamp}." + body``."""
    message = f"{int(timestamp)}.".encode() + body
    return _SIGNATURE_PREFIX + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def verify(
    secret: str,
    timestamp: int | str,
    body: bytes,
    signature: str,
    *,
    tolerance_s: float = 300,
    now: float | None = None,
) -> bool:
    """True when ``signature`` signs ``body`` at ``timestamp`` with ``secret`` and
    ``timestamp`` is within ``tolerance_s`` of ``now`` (default: the clock).

    ``timestamp`` may be the raw header string. Malformed input gives False,
    never an exception. The digest comparison is constant-time.
    """
    try:
        ts = int(timestamp)
    except (TypeError, ValueError):
        return False
    current = time.time() if now is None else now
    if abs(current - ts) > tolerance_s:
        return False
    if not isinstance(signature, str):
        return False
    return hmac.compare_digest(sign(secret, ts, body).encode(), signature.strip().encode())


# --- targets ----------------------------------------------------------------


class _Unresolvable(Exception):
    """The host has no address right now (DNS trouble): retry later."""


@dataclass(frozen=True)
class _Target:
    url: httpx.URL
    addresses: tuple[str, ...]  # every one checked, resolver order


def check_target(url: str, *, allow_private: bool) -> None:
    """Accept ``url`` as a webhook target or raise :class:`CallbackRefused`.

    Refused: anything but http/https, credentials in the URL, no host, a host
    that does not resolve, or (unless ``allow_private``) any resolved address
    that is not public. Resolves with ``socket.getaddrinfo``.
    """
    try:
        _resolve_target(url, allow_private=allow_private)
    except _Unresolvable as exc:
        raise CallbackRefused(
            f"callback_url host does not resolve ({exc}).", url=_redact(url)
        ) from exc


def _resolve_target(url: str, *, allow_private: bool) -> _Target:
    parsed = _parse(url)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    addresses = _resolve(parsed.host, port)
    if not allow_private:
        for ip in addresses:
            reason = _refusal(ipaddress.ip_address(ip))
            if reason is not None:
                # The address itself is not echoed: the answer must not serve
                # as an oracle for the internal DNS.
                raise CallbackRefused(
                    f"callback_url host {parsed.host} resolves to a {reason} address.",
                    url=_redact(url),
                )
    return _Target(url=parsed, addresses=addresses)


def _parse(url: str) -> httpx.URL:
    """The same parser the request uses (no parser differential)."""
    if not isinstance(url, str) or not url or len(url) > _MAX_URL_CHARS:
        raise CallbackRefused(f"callback_url must be a URL of at most {_MAX_URL_CHARS} characters.")
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        raise CallbackRefused(f"callback_url is not a valid URL ({exc}).") from exc
    if parsed.scheme not in ("http", "https"):
        raise CallbackRefused(f"callback_url scheme {parsed.scheme or '(none)'!r} is not http or https.")
    if parsed.userinfo or "@" in _authority(url):
        raise CallbackRefused("callback_url must not contain credentials (user:password@).")
    if not parsed.host:
        raise CallbackRefused("callback_url has no host.")
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise CallbackRefused(f"callback_url port {parsed.port} is out of range.")
    return parsed


def _authority(url: str) -> str:
    """The raw ``[userinfo@]host[:port]`` part (catches an empty ``@`` the parser drops)."""
    rest = url.split("//", 1)[1] if "//" in url else ""
    return re.split(r"[/?#\\]", rest, maxsplit=1)[0]


def _resolve(host: str, port: int) -> tuple[str, ...]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError) as exc:
        raise _Unresolvable(str(exc)) from exc
    addresses = tuple(dict.fromkeys(str(info[4][0]) for info in infos))
    if not addresses:
        raise _Unresolvable(f"no address for {host}")
    return addresses


_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def _refusal(addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why ``addr`` is not a public unicast address, or None when it is."""
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.ipv4_mapped is not None:
            return _refusal(addr.ipv4_mapped)
        if addr in _NAT64:
            return _refusal(ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF))
        if addr.sixtofour is not None and (inner := _refusal(addr.sixtofour)):
            return f"6to4 {inner}"
    for kind in ("unspecified", "loopback", "link_local", "multicast", "private", "reserved"):
        if getattr(addr, f"is_{kind}"):
            return kind.replace("_", "-")
    if not addr.is_global:
        return "non-global"
    return None


def _redact(url: str) -> str:
    """The URL without query and fragment (they may carry tokens), for errors and logs."""
    return url.split("?", 1)[0].split("#", 1)[0][:200] if isinstance(url, str) else "?"


# --- delivery ---------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What one delivery attempt came to.

    ``ok``: a 2xx answer. ``retry``: worth another attempt later (connection
    trouble, a timeout, DNS failure, 5xx, 429); neither: a permanent refusal
    (any other status, or a refused target). ``status`` is the HTTP status
    when an answer came, ``error`` the reason when none did or the target
    was refused, ``retry_after_s`` the server's ``Retry-After`` in seconds.
    """

    ok: bool = False
    retry: bool = False
    status: int | None = None
    error: str | None = None
    retry_after_s: float | None = None


def encode_payload(payload: dict[str, Any]) -> bytes:
    """The exact bytes that are sent and signed: compact UTF-8 JSON."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


def make_client(timeout_s: float) -> httpx.Client:
    """The client every attempt goes through: no redirects followed, no
    environment proxies, ``timeout_s`` for each phase of a request."""
    return httpx.Client(timeout=timeout_s, follow_redirects=False, trust_env=False)


def retry_delay(
    attempt: int, *, base_delay_s: float, max_delay_s: float, retry_after_s: float | None = None
) -> float:
    """Seconds to wait after the ``attempt``-th (1-based) attempt failed
    retryably: the server's ``retry_after_s`` when it gave one, else
    ``base_delay_s · 2^(attempt-1)`` plus up to ``base_delay_s`` of jitter;
    capped at ``max_delay_s`` either way."""
    if retry_after_s is not None:
        return min(retry_after_s, max_delay_s)
    jitter = random.uniform(0, base_delay_s)
    try:
        delay = base_delay_s * 2 ** (attempt - 1) + jitter
    except OverflowError:
        return max_delay_s
    return max(0.0, min(delay, max_delay_s))


def attempt_delivery(
    client: httpx.Client,
    url: str,
    body: bytes,
    secret: str,
    delivery_id: str,
    event: str,
    allow_private: bool,
) -> Outcome:
    """One delivery attempt of ``body`` (already encoded, see
    :func:`encode_payload`) to ``url`` through ``client`` (see
    :func:`make_client`): re-check the target, sign with ``secret`` at a
    fresh timestamp, then POST to the checked addresses in turn (the next
    one only when nothing could be sent to the previous), with ``Host`` and
    SNI kept. The answer's body is never read. Network trouble never
    raises: it comes back as a retryable :class:`Outcome`."""
    try:
        target = _resolve_target(url, allow_private=allow_private)
    except CallbackRefused as exc:
        return Outcome(error=f"{exc.code}: {exc.message}")
    except _Unresolvable as exc:
        return Outcome(retry=True, error=_describe(exc))
    timestamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": f"longdoc-webhooks/{__version__}",
        EVENT_HEADER: event,
        DELIVERY_HEADER: delivery_id,
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: sign(secret, timestamp, body),
    }
    connect_error: httpx.ConnectError | None = None
    for ip in target.addresses:
        try:
            request = _pinned_request(client, target.url, ip, body, headers)
            response = client.send(request, stream=True)
        except httpx.ConnectError as exc:  # nothing was sent: try the next checked address
            connect_error = exc
            continue
        except httpx.InvalidURL as exc:
            return Outcome(error=_describe(exc))
        except httpx.HTTPError as exc:
            return Outcome(retry=True, error=_describe(exc))
        try:  # the body is never read: a receiver cannot make us buffer it
            return _classify(response.status_code, response.headers.get("Retry-After"))
        finally:
            response.close()
    return Outcome(retry=True, error=_describe(connect_error))


def _pinned_request(
    client: httpx.Client, url: httpx.URL, ip: str, body: bytes, headers: dict[str, str]
) -> httpx.Request:
    """A request to ``ip`` that still presents ``url``'s host (Host header, SNI, cert check)."""
    extensions: dict[str, Any] = {}
    if url.scheme == "https" and not _is_ip_literal(url.host):
        extensions["sni_hostname"] = url.host
    return client.build_request(
        "POST",
        url.copy_with(host=ip),
        content=body,
        headers={**headers, "Host": url.netloc.decode("ascii")},
        extensions=extensions,
    )


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _classify(status: int, retry_after: str | None) -> Outcome:
    if 200 <= status < 300:
        return Outcome(ok=True, status=status)
    if status == 429 or status >= 500:
        return Outcome(retry=True, status=status, retry_after_s=_parse_retry_after(retry_after))
    return Outcome(status=status)


def _parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` value (delta-seconds or HTTP date); None if absent/bad."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def _describe(exc: BaseException | None) -> str:
    if exc is None:
        return "no address to connect to"
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return text[:_MAX_ERROR_CHARS]
