"""Build the configured object store from ``storage.url``.

=====================  ==================================================
``file://./data``      :class:`LocalStore` at ``./data`` (relative to the
                       current directory when the store is built)
``file:///srv/data``   :class:`LocalStore` at the absolute ``/srv/data``
``s3://bucket/prefix`` :class:`S3Store` on ``bucket``, objects under
                       ``prefix/`` (optional: ``s3://bucket`` uses the
                       bucket's top level); endpoint, region, part size
                       presigning and the CA of an https endpoint
                       from ``storage.s3``, credentials
                       from boto3's usual sources
=====================  ==================================================
"""

from __future__ import annotations

import re
from pathlib import Path

from longdoc.config import S3Settings
from longdoc.errors import ConfigError, InvalidObjectKey
from longdoc.storage.base import ObjectStore, check_prefix
from longdoc.storage.local import LocalStore

# S3's bucket naming rules: 3-63 lowercase letters, digits, '.' and '-',
# starting and ending with a letter or digit.
_BUCKET_RE = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_S3_HINT = "Use s3://bucket or s3://bucket/prefix with a valid bucket name (3-63 characters: a-z, 0-9, '.', '-')."


def store_from_url(url: str, s3: S3Settings | None = None) -> ObjectStore:
    """The store ``url`` names; ``s3`` (``storage.s3``, defaults when None)
    configures an ``s3://`` store. Raises ConfigError for an unknown scheme,
    an empty path, a missing or invalid bucket name or an invalid prefix,
    StorageError when the local folder cannot be created. Sends nothing to
    the bucket: an unreachable one shows at the first use (or ``ping``)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ConfigError(f"storage.url {url!r} has no scheme.", hint="Use file://./data, file:///absolute/path or s3://bucket/prefix.")
    scheme = scheme.lower()
    if scheme == "file":
        return LocalStore(_local_path(url, rest))
    if scheme == "s3":
        return _s3_store(url, rest, s3 or S3Settings())
    raise ConfigError(f"storage.url {url!r} has the unsupported scheme {scheme!r}.",
                      hint="Use file://./data, file:///absolute/path or s3://bucket/prefix.")


def _local_path(url: str, rest: str) -> Path:
    if rest.startswith("localhost/"):
        rest = rest[len("localhost"):]
    if not rest or rest == "/":
        raise ConfigError(f"storage.url {url!r} names no folder.", hint="Use file://./data or file:///absolute/path.")
    return Path(rest)


def _s3_store(url: str, rest: str, s3: S3Settings) -> ObjectStore:
    from longdoc.storage.s3 import S3Store  # boto3 is imported only when S3 is configured

    bucket, _, prefix = rest.partition("/")
    if not _BUCKET_RE.fullmatch(bucket) or ".." in bucket:
        raise ConfigError(f"storage.url {url!r} names no valid bucket ({bucket!r}).", hint=_S3_HINT)
    try:
        check_prefix(prefix, allow_empty=True)
    except InvalidObjectKey as exc:
        raise ConfigError(f"storage.url {url!r} has an invalid prefix: {exc.message}", hint=_S3_HINT) from exc
    return S3Store(bucket, prefix, endpoint_url=s3.endpoint_url, region=s3.region,
                   multipart_threshold_mb=s3.multipart_threshold_mb, presign_seconds=s3.presign_seconds,
                   ca_file=s3.ca_file)
