"""The object store interface every store (local folder, later S3) implements.

Keys are ``/``-separated relative names such as
``tenants/acme/jobs/<id>/original``. :func:`check_key` is the single gate
every store runs a key through before touching anything, so a hostile tenant
name or filename can never address anything outside the store's root:

- not empty, at most 1024 bytes (UTF-8), each segment at most 255 bytes;
- no leading ``/`` (absolute), no empty segment (``a//b``, trailing ``/``);
- no segment starting with ``.`` (this also rules out ``.`` and ``..``;
  stores keep their own temporary files under such names);
- no backslash, NUL or other control character.

Errors: every method raises :class:`~longdoc.errors.InvalidObjectKey` for a
bad key, :class:`~longdoc.errors.ObjectNotFound` when a read names a missing
object, and :class:`~longdoc.errors.StorageError` (retryable) for anything
else that goes wrong underneath (I/O, permissions, unreachable service).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Protocol

from longdoc.errors import InvalidObjectKey

MAX_KEY_BYTES = 1024
MAX_SEGMENT_BYTES = 255


class ObjectStore(Protocol):
    """Flat key → bytes storage with folder-like prefixes.

    Writes are atomic: a reader sees the old object or the complete new
    one, never part of one. ``prefix`` arguments are keys naming a folder
    (a trailing ``/`` is optional): they match the object of that exact name
    and every object below it, never ``prefix + "x"``.

    :meth:`presigned_url` is an optional capability: a store that cannot
    hand out direct download URLs (or has them switched off) returns None
    and callers serve the bytes through the service instead.
    """

    def put_file(self, key: str, path: str | Path) -> int:
        """Store a copy of the file at ``path``; returns its size in bytes."""
        ...

    def put_bytes(self, key: str, data: bytes) -> None: ...

    def put_stream(self, key: str, fileobj: BinaryIO) -> int:
        """Copy ``fileobj`` to ``key`` in chunks (never whole in memory);
        returns the number of bytes written."""
        ...

    def open_read(self, key: str) -> BinaryIO:
        """A readable binary stream of the object; the caller closes it."""
        ...

    def get_bytes(self, key: str) -> bytes: ...

    def exists(self, key: str) -> bool: ...

    def size(self, key: str) -> int: ...

    def delete(self, key: str) -> bool:
        """Remove the object; False when there was none (not an error)."""
        ...

    def delete_prefix(self, prefix: str) -> int:
        """Remove every object under ``prefix`` (not empty); returns how many."""
        ...

    def list(self, prefix: str = "") -> Iterator[str]:
        """Keys under ``prefix`` (all keys for ``""``), in sorted order."""
        ...

    def ping(self) -> None:
        """Return if the store is reachable and writable; raise StorageError otherwise."""
        ...

    def presigned_url(self, key: str, expires_seconds: int | None = None) -> str | None:
        """Optional capability: a time-limited URL (``expires_seconds``, else
        the store's configured lifetime) from which anyone holding it can GET
        the object without going through the service; None when the store
        cannot make one (a local folder) or presigning is not configured, so
        callers serve the bytes themselves. Makes no request; the object need
        not exist."""
        ...


def check_key(key: str) -> str:
    """Return ``key`` unchanged if it is a valid object key (rules above);
    raise :class:`InvalidObjectKey` otherwise."""
    if not isinstance(key, str) or not key:
        raise InvalidObjectKey("Object key is empty.")
    if len(key.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
        raise InvalidObjectKey(f"Object key is longer than {MAX_KEY_BYTES} bytes.")
    if any(ch == "\\" or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in key):
        raise InvalidObjectKey(f"Object key {key!r} contains a backslash or a control character.")
    if key.startswith("/"):
        raise InvalidObjectKey(f"Object key {key!r} is absolute.")
    for segment in key.split("/"):
        if not segment:
            raise InvalidObjectKey(f"Object key {key!r} has an empty segment.")
        if segment.startswith("."):
            raise InvalidObjectKey(f"Object key {key!r} has a segment starting with '.'.")
        if len(segment.encode("utf-8", "surrogatepass")) > MAX_SEGMENT_BYTES:
            raise InvalidObjectKey(f"Object key {key!r} has a segment longer than {MAX_SEGMENT_BYTES} bytes.")
    return key


def check_prefix(prefix: str, *, allow_empty: bool) -> str:
    """Normalise a folder prefix: strip one trailing ``/`` and validate the
    rest as a key. ``""`` means "everything" and is allowed only when
    ``allow_empty``."""
    if prefix == "":
        if not allow_empty:
            raise InvalidObjectKey("An empty prefix would match every object.")
        return ""
    return check_key(prefix[:-1] if prefix.endswith("/") else prefix)
