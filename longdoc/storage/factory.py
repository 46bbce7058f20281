"""Build the configured object store from ``storage.url``.

=====================  ==================================================
``file://./data``      :class:`LocalStore` at ``./data`` (relative to the
                       current directory when the store is built)
``file:///srv/data``   :class:`LocalStore` at the absolute ``/srv/data``
``s3://bucket/prefix`` not yet: :class:`ConfigError` (comes with scale-out)
=====================  ==================================================
"""

from __future__ import annotations

from pathlib import Path

from longdoc.errors import ConfigError
from longdoc.storage.base import ObjectStore
from longdoc.storage.local import LocalStore


def store_from_url(url: str) -> ObjectStore:
    """The store ``url`` names. Raises ConfigError for an unknown scheme or
    an empty path, StorageError when the local folder cannot be created."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ConfigError(f"storage.url {url!r} has no scheme.", hint="Use file://./data, file:///absolute/path or s3://bucket/prefix.")
    scheme = scheme.lower()
    if scheme == "file":
        return LocalStore(_local_path(url, rest))
    if scheme == "s3":
        raise ConfigError(
            f"storage.url {url!r}: S3 comes with the scale-out issue.",
            hint="Use a local folder for now, e.g. storage.url: file://./data.",
        )
    raise ConfigError(f"storage.url {url!r} has the unsupported scheme {scheme!r}.", hint="Use file://./data or file:///absolute/path.")


def _local_path(url: str, rest: str) -> Path:
    if rest.startswith("localhost/"):
        rest = rest[len("localhost"):]
    if not rest or rest == "/":
        raise ConfigError(f"storage.url {url!r} names no folder.", hint="Use file://./data or file:///absolute/path.")
    return Path(rest)
