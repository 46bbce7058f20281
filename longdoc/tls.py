"""TLS on each hop, from the settings that name its files, in one place.

===================  ===========================================  ==========================
hop                  settings                                     built by
===================  ===========================================  ==========================
clients → API        ``service.tls_certfile``, ``tls_keyfile``,    :func:`server_context`
                     ``tls_client_ca`` (mutual TLS)
longdoc submit /     ``client.ca_file``, ``cert_file``,            :func:`client_context`
LongdocClient → API  ``key_file``
→ Redis (broker,     ``rediss://`` URL + ``queue.tls_ca_file``     :func:`redis_options`
rate limits)
→ S3                 ``https://`` endpoint + ``storage.s3.ca_file``  :func:`readable` (boto3's
                                                                  ``verify=``)
→ PostgreSQL         ``sslmode=verify-full&sslrootcert=…`` in      libpq itself
                     ``database.url``
===================  ===========================================  ==========================

A file that is missing, unreadable or not what it should be (a key that
does not match its certificate, a CA file with no certificate) is a
:class:`~longdoc.errors.ConfigError` naming the setting, raised when the
context is built (at start-up), never a failure of the first connection.
"""

from __future__ import annotations

import os
import ssl
from typing import Any
from urllib.parse import urlsplit

import certifi

from longdoc.errors import ConfigError

#: URL schemes of Redis over TLS (redis-py, kombu, limits)
REDIS_TLS_SCHEMES = ("rediss",)


def readable(path: str, setting: str) -> str:
    """``path`` if it is a readable file; ConfigError naming ``setting`` otherwise."""
    if not os.path.isfile(path) or not os.access(path, os.R_OK):
        raise ConfigError(f"{setting}: {path} is not a readable file.",
                          hint=f"Point {setting} at a PEM file this process can read.")
    return path


def server_context(certfile: str, keyfile: str, client_ca: str | None = None) -> ssl.SSLContext:
    """The context of an HTTPS listener: TLS 1.2 or later, the certificate
    chain in ``certfile`` with its key; with ``client_ca``, every client must
    present a certificate signed by it (mutual TLS)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    _load_chain(context, certfile, keyfile, "service.tls_certfile", "service.tls_keyfile")
    if client_ca:
        _load_ca(context, client_ca, "service.tls_client_ca")
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def client_context(ca_file: str | None = None, cert_file: str | None = None,
                   key_file: str | None = None) -> ssl.SSLContext:
    """The context of a client of the API: the server's certificate checked
    (host name included) against ``ca_file``, or certifi's public CAs (as
    httpx by default) when None;
    ``cert_file`` (with ``key_file``, or the key inside it) sent when the
    server asks for a client certificate."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # host name and certificate checked
    if ca_file:  # only the CA named here is trusted
        _load_ca(context, ca_file, "client.ca_file")
    else:
        context.load_verify_locations(cafile=certifi.where())  # what httpx trusts by default
    if cert_file:
        _load_chain(context, cert_file, key_file, "client.cert_file", "client.key_file")
    elif key_file:
        raise ConfigError("client.key_file is set without client.cert_file.",
                          hint="Set client.cert_file to the client certificate the key belongs to.")
    return context


def redis_options(url: str, ca_file: str | None) -> dict[str, Any]:
    """Connection options for a Redis URL, in the names redis-py and kombu's
    Redis transport share (``broker_use_ssl`` takes them as they are): for
    ``rediss://``, the server's certificate required and checked against
    ``ca_file`` (``queue.tls_ca_file``), or the system's CAs when None;
    nothing for other schemes."""
    if urlsplit(url).scheme not in REDIS_TLS_SCHEMES:
        return {}
    options: dict[str, Any] = {"ssl_cert_reqs": ssl.CERT_REQUIRED}
    if ca_file:
        options["ssl_ca_certs"] = readable(ca_file, "queue.tls_ca_file")
    return options


def _load_chain(context: ssl.SSLContext, certfile: str, keyfile: str | None, cert_setting: str,
                key_setting: str) -> None:
    readable(certfile, cert_setting)
    if keyfile:
        readable(keyfile, key_setting)
    try:
        context.load_cert_chain(certfile, keyfile)
    except ssl.SSLError as exc:
        raise ConfigError(f"{cert_setting} / {key_setting}: the certificate and key do not load ({exc.reason}).",
                          hint="Give a PEM certificate chain and the unencrypted PEM private key that belongs to "
                               "it.") from exc


def _load_ca(context: ssl.SSLContext, ca_file: str, setting: str) -> None:
    readable(ca_file, setting)
    try:
        context.load_verify_locations(cafile=ca_file)
    except ssl.SSLError as exc:
        raise ConfigError(f"{setting}: {ca_file} holds no CA certificate ({exc.reason}).",
                          hint=f"Point {setting} at a PEM file of CA certificates.") from exc
