"""An object store in an S3 bucket (AWS or any S3-compatible service):
``s3://BUCKET/PREFIX/<key>`` is the object.

Same semantics as :class:`~longdoc.storage.local.LocalStore`. S3 itself
makes writes atomic (a reader sees the old object or the complete new one);
large uploads go up in multipart parts of ``multipart_threshold_mb`` through
boto3's managed transfer, which aborts the upload on failure, so the old
object, if any, stays. Reads stream the response body.

Credentials are boto3's business: it reads the usual AWS environment
variables, config files or instance role; longdoc never sees them, and no
error message carries them. The identity needs s3:GetObject, PutObject,
DeleteObject and ListBucket on the bucket (without ListBucket, S3 answers
403 rather than 404 for a missing object: a StorageError), and
Get/PutLifecycleConfiguration for :meth:`S3Store.apply_retention`.

Every botocore/boto3 error is mapped to
:class:`~longdoc.errors.ObjectNotFound` or
:class:`~longdoc.errors.StorageError` in one place, :func:`_boto_errors`.
"""

from __future__ import annotations

import builtins
import io
import os
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

import boto3
from boto3.exceptions import Boto3Error
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from longdoc.errors import ConfigError, InvalidObjectKey, ObjectNotFound, StorageError
from longdoc.storage.base import check_key, check_prefix
from longdoc.tls import readable

MB = 1 << 20
DELETE_BATCH = 1000  # the most keys one DeleteObjects request takes
RETENTION_RULE_ID = "longdoc-retention"
PING_KEY = "health/ping"
_TRANSFER_THREADS = 4  # parts in flight per upload (and, for streams, parts buffered)
_CONNECT_TIMEOUT_SECONDS = 5
_READ_TIMEOUT_SECONDS = 60
_MAX_ATTEMPTS = 3
_MISSING_CODES = frozenset({"NoSuchKey", "404", "NotFound"})
_URL_USERINFO = re.compile(r"(\w+://)[^/@\s]+@")


class S3Store:
    """:class:`~longdoc.storage.base.ObjectStore` over ``bucket``, objects
    under ``prefix/`` (``""``: the bucket's top level; the prefix follows the
    key rules, a trailing ``/`` optional).

    ``endpoint_url`` and ``region`` select the service (None: boto3's
    defaults, i.e. AWS); an endpoint URL implies path-style addressing, as
    S3-compatible services expect. Objects of ``multipart_threshold_mb`` or
    more go up in parts of that size. ``presign_seconds`` enables
    :meth:`presigned_url`. ``client`` replaces the boto3 S3 client the store
    would build (then ``endpoint_url`` and ``region`` are ignored). Raises
    InvalidObjectKey for an invalid prefix, ConfigError for an empty bucket
    name or when boto3 cannot build a client (a malformed endpoint URL, an
    unknown AWS profile). Safe to share between threads (boto3 clients are).
    """

    def __init__(self, bucket: str, prefix: str = "", *, endpoint_url: str | None = None, region: str | None = None,
                 multipart_threshold_mb: int = 16, presign_seconds: int | None = None, ca_file: str | None = None,
                 client: Any = None) -> None:
        if not bucket:
            raise ConfigError("S3Store needs a bucket name.", hint="Use storage.url: s3://bucket/prefix.")
        self.bucket = bucket
        self.prefix = check_prefix(prefix, allow_empty=True)
        self._root = f"{self.prefix}/" if self.prefix else ""
        self.presign_seconds = presign_seconds
        self.client = client if client is not None else _make_client(endpoint_url, region, ca_file)
        self.multipart_threshold_mb = multipart_threshold_mb
        part_bytes = multipart_threshold_mb * MB
        self._transfer = TransferConfig(multipart_threshold=part_bytes, multipart_chunksize=part_bytes,
                                        max_concurrency=_TRANSFER_THREADS, preferred_transfer_client="classic")
        self._transfer.max_in_memory_upload_chunks = _TRANSFER_THREADS

    def __repr__(self) -> str:
        url = f"s3://{self.bucket}/{self.prefix}"
        return f"S3Store({url!r})"

    # -- writes ---------------------------------------------------------------

    def put_file(self, key: str, path: str | Path) -> int:
        """Upload the file at ``path`` (multipart when large, parts read from
        the file on demand); returns its size in bytes."""
        full = self._full(key)
        try:
            size = os.stat(path).st_size
            with _boto_errors(f"Cannot write object {key!r}"):
                self.client.upload_file(str(path), self.bucket, full, Config=self._transfer)
        except OSError as exc:  # missing, unreadable, or went away meanwhile
            raise StorageError(f"Cannot read {path}: {exc.strerror or exc}.", errno=exc.errno) from exc
        return size

    def put_bytes(self, key: str, data: bytes) -> None:
        full = self._full(key)
        with _boto_errors(f"Cannot write object {key!r}"):
            self.client.put_object(Bucket=self.bucket, Key=full, Body=data)

    def put_stream(self, key: str, fileobj: BinaryIO) -> int:
        """Upload ``fileobj`` read in parts (at most a few parts in memory);
        returns the bytes written. Errors raised by ``fileobj.read`` itself
        (a client that went away) propagate unchanged; the old object, if
        any, stays."""
        full = self._full(key)
        reader = _CountingReader(fileobj)
        try:
            with _boto_errors(f"Cannot write object {key!r}"):
                self.client.upload_fileobj(reader, self.bucket, full, Config=self._transfer)
        except BaseException:
            if reader.failure is not None:
                raise reader.failure from None
            raise
        return reader.count

    # -- reads ----------------------------------------------------------------

    def open_read(self, key: str) -> BinaryIO:
        """The object's streaming body (read as the caller reads; errors while
        reading are StorageError); the caller closes it."""
        full = self._full(key)
        with _boto_errors(f"Cannot read object {key!r}", key=key):
            body = self.client.get_object(Bucket=self.bucket, Key=full)["Body"]
        return _Body(body, key)  # type: ignore[return-value]  # a RawIOBase; typing's BinaryIO is nominal

    def get_bytes(self, key: str) -> bytes:
        with self.open_read(key) as f:
            return f.read()

    def exists(self, key: str) -> bool:
        return self._head(self._full(key), key) is not None

    def size(self, key: str) -> int:
        head = self._head(self._full(key), key)
        if head is None:
            raise ObjectNotFound(f"No object {key!r}.", key=key)
        return int(head["ContentLength"])

    def list(self, prefix: str = "") -> Iterator[str]:
        """Keys in lexicographic order (S3's own listing order), lazily, page
        by page. Objects whose names are not valid keys (written by someone
        else) are not reported."""
        prefix = check_prefix(prefix, allow_empty=True)
        for full in self._full_keys_under(prefix):
            rel = full[len(self._root):]
            if _is_key(rel):
                yield rel

    def presigned_url(self, key: str, expires_seconds: int | None = None) -> str | None:
        """A URL anyone holding it can GET the object from, valid for
        ``expires_seconds`` (default ``presign_seconds``); None when the
        store was built without ``presign_seconds`` (presigning is off). The
        object need not exist yet. Makes no request."""
        full = self._full(key)
        if self.presign_seconds is None:
            return None
        with _boto_errors(f"Cannot presign object {key!r}"):
            return self.client.generate_presigned_url(
                "get_object", Params={"Bucket": self.bucket, "Key": full},
                ExpiresIn=expires_seconds or self.presign_seconds)

    # -- deletes --------------------------------------------------------------

    def delete(self, key: str) -> bool:
        """Remove the object; False when there was none (checked just before,
        as S3 deletes answer the same either way)."""
        full = self._full(key)
        if self._head(full, key) is None:
            return False
        with _boto_errors(f"Cannot delete object {key!r}"):
            self.client.delete_object(Bucket=self.bucket, Key=full)
        return True

    def delete_prefix(self, prefix: str) -> int:
        """Remove the object ``prefix`` and every object below it, in batches
        of 1000 (one request each); returns how many were removed."""
        prefix = check_prefix(prefix, allow_empty=False)
        removed = 0
        for batch in _batches(self._full_keys_under(prefix), DELETE_BATCH):
            removed += self._delete_batch(batch, prefix)
        return removed

    def _delete_batch(self, full_keys: builtins.list[str], prefix: str) -> int:
        what = f"Cannot delete objects under {prefix!r}"
        with _boto_errors(what):
            reply = self.client.delete_objects(
                Bucket=self.bucket, Delete={"Objects": [{"Key": k} for k in full_keys], "Quiet": True})
        if errors := reply.get("Errors"):
            first = errors[0]
            raise StorageError(f"{what}: {len(errors)} of {len(full_keys)} failed "
                               f"({first.get('Code')}: {first.get('Message')}).")
        return len(full_keys)

    # -- bucket ---------------------------------------------------------------

    def ping(self) -> None:
        """Return if the bucket is reachable and writable (a HEAD of the
        bucket, then a write and delete of ``PING_KEY`` under the prefix);
        raise StorageError otherwise."""
        full = self._full(PING_KEY)
        with _boto_errors(f"The S3 bucket {self.bucket!r} is not reachable or not writable"):
            self.client.head_bucket(Bucket=self.bucket)
            self.client.put_object(Bucket=self.bucket, Key=full, Body=b"")
            self.client.delete_object(Bucket=self.bucket, Key=full)

    def apply_retention(self, days: int) -> None:
        """Make the bucket expire objects under ``PREFIX/tenants/`` ``days``
        days after they were written (lifecycle rule ``longdoc-retention``,
        replaced if present; the bucket's other rules stay). A backstop to
        the service's own retention, which deletes earlier and exactly.
        Raises ValueError for ``days < 1``, StorageError if the bucket's
        lifecycle cannot be read or written."""
        if days < 1:
            raise ValueError(f"Retention must be at least one day, not {days}.")
        rule = {"ID": RETENTION_RULE_ID, "Status": "Enabled", "Filter": {"Prefix": f"{self._root}tenants/"},
                "Expiration": {"Days": days}}
        what = f"Cannot set the lifecycle of the S3 bucket {self.bucket!r}"
        rules = [r for r in self._lifecycle_rules(what) if r.get("ID") != RETENTION_RULE_ID]
        with _boto_errors(what):
            self.client.put_bucket_lifecycle_configuration(
                Bucket=self.bucket, LifecycleConfiguration={"Rules": [*rules, rule]})

    def _lifecycle_rules(self, what: str) -> builtins.list[dict[str, Any]]:
        """The bucket's lifecycle rules ([] when it has none)."""
        with _boto_errors(what):
            try:
                reply = self.client.get_bucket_lifecycle_configuration(Bucket=self.bucket)
            except ClientError as exc:
                if _error_code(exc) != "NoSuchLifecycleConfiguration":
                    raise
                return []
        return list(reply.get("Rules", []))

    # -- helpers --------------------------------------------------------------

    def _full(self, key: str) -> str:
        return self._root + check_key(key)

    def _head(self, full: str, key: str) -> dict[str, Any] | None:
        """HEAD of the object; None when there is none."""
        try:
            with _boto_errors(f"Cannot stat object {key!r}", key=key):
                return self.client.head_object(Bucket=self.bucket, Key=full)
        except ObjectNotFound:
            return None

    def _full_keys_under(self, prefix: str) -> Iterator[str]:
        """Bucket keys of the store key ``prefix`` itself and of everything
        below ``prefix/`` (every key of the store for ``""``), sorted. The
        exact object sorts before everything below it."""
        if not prefix:
            yield from self._listed(self._root)
            return
        full = self._root + prefix
        what = f"Cannot list objects under {prefix!r}"
        with _boto_errors(what):
            first = self.client.list_objects_v2(Bucket=self.bucket, Prefix=full, MaxKeys=1).get("Contents", [])
        if first and first[0]["Key"] == full:
            yield full
        yield from self._listed(f"{full}/")

    def _listed(self, bucket_prefix: str) -> Iterator[str]:
        what = f"Cannot list objects under {bucket_prefix[len(self._root):]!r}"
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=bucket_prefix)
        iterator = iter(pages)
        while True:
            with _boto_errors(what):
                page = next(iterator, None)
            if page is None:
                return
            for item in page.get("Contents", []):
                yield item["Key"]


class _CountingReader:
    """Read-only view of the caller's stream that counts the bytes read and
    remembers an exception the stream itself raised (not the store's)."""

    def __init__(self, fileobj: BinaryIO) -> None:
        self._f = fileobj
        self.count = 0
        self.failure: BaseException | None = None

    def read(self, size: int = -1) -> bytes:
        try:
            data = self._f.read(size)
        except BaseException as exc:
            self.failure = exc
            raise
        self.count += len(data)
        return data


class _Body(io.RawIOBase):
    """A response body as a binary file object; read errors become StorageError."""

    def __init__(self, body: Any, key: str) -> None:
        super().__init__()
        self._body = body
        self._what = f"Cannot read object {key!r}"

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        with _boto_errors(self._what):
            return self._body.read(None if size is None or size < 0 else size)

    def readall(self) -> bytes:
        return self.read()

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._body.close()
        super().close()


def _make_client(endpoint_url: str | None, region: str | None, ca_file: str | None = None) -> Any:
    """The boto3 client; over https the endpoint's certificate is checked
    against ``ca_file`` (``storage.s3.ca_file``), else botocore's CA bundle."""
    verify = readable(ca_file, "storage.s3.ca_file") if ca_file else None
    config = Config(signature_version="s3v4", connect_timeout=_CONNECT_TIMEOUT_SECONDS,
                    read_timeout=_READ_TIMEOUT_SECONDS,
                    retries={"mode": "standard", "max_attempts": _MAX_ATTEMPTS},
                    s3={"addressing_style": "path"} if endpoint_url else None)
    try:
        return boto3.session.Session().client("s3", endpoint_url=endpoint_url, region_name=region, config=config,
                                              verify=verify)
    except (BotoCoreError, ValueError) as exc:  # a bad endpoint URL, an unknown AWS_PROFILE, ...
        raise ConfigError(f"Cannot set up the S3 client: {_redacted(exc)}",
                          hint="Check storage.s3.endpoint_url and region, and boto3's AWS_* environment "
                               "variables and ~/.aws files.") from exc


@contextmanager
def _boto_errors(what: str, *, key: str | None = None) -> Iterator[None]:
    """The one place botocore/boto3 errors become longdoc's: with ``key``, a
    missing object (NoSuchKey, 404) is ObjectNotFound; everything else is
    StorageError (retryable)."""
    try:
        yield
    except ClientError as exc:
        if key is not None and _error_code(exc) in _MISSING_CODES:
            raise ObjectNotFound(f"No object {key!r}.", key=key) from exc
        raise _storage_error(what, exc) from exc
    except (BotoCoreError, Boto3Error) as exc:
        raise _storage_error(what, exc) from exc


def _storage_error(what: str, exc: Exception) -> StorageError:
    """StorageError saying ``what`` and why: the service's error code and
    message for a ClientError, botocore's text otherwise (with any
    ``user:password@`` of an endpoint URL removed). Botocore puts no
    credentials in either."""
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        detail = f"{error.get('Code') or status}: {error.get('Message') or 'no message'}"
        return StorageError(f"{what}: {detail}.", status=status)
    return StorageError(f"{what}: {_redacted(exc)}.")


def _redacted(exc: Exception) -> str:
    """``str(exc)`` without the ``user:password@`` of any URL in it."""
    return _URL_USERINFO.sub(r"\1", str(exc))


def _error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _is_key(rel: str) -> bool:
    try:
        check_key(rel)
    except InvalidObjectKey:
        return False
    return True


def _batches(items: Iterable[str], size: int) -> Iterator[list[str]]:
    batch: list[str] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
