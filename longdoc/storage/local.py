"""An object store in a local folder: ``ROOT/<key>`` is the object.

Every write goes to a temporary file next to its target
(``.tmp-<random>``, a name no key can have), is flushed and fsynced,
then ``os.replace``-d into place and the folder fsynced: a reader sees the
old object or the complete new one, and a crash leaves at most a temporary
file that :meth:`LocalStore.list` never reports. Folders are created on
demand and left in place when emptied (harmless; ``delete_prefix`` removes
its whole folder). The store is private to the service whatever the umask:
folders are created 0700 and objects 0600.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

from longdoc.errors import ObjectNotFound, StorageError
from longdoc.storage.base import check_key, check_prefix

CHUNK_BYTES = 1 << 20
_TMP_PREFIX = ".tmp-"
_MISSING = (errno.ENOENT, errno.ENOTDIR)
_DIR_MODE = 0o700
_FILE_MODE = 0o600
#: passes of :func:`_remove_folder` over a folder others keep writing into
_REMOVE_PASSES = 5


class LocalStore:
    """:class:`~longdoc.storage.base.ObjectStore` over the folder ``root``
    (created if missing; a relative root is resolved against the current
    directory once, here). Safe to share between threads and processes."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).absolute()
        try:
            self.root.mkdir(parents=True, exist_ok=True, mode=_DIR_MODE)
        except OSError as exc:
            raise _storage_error(f"Cannot create the storage folder {self.root}", exc) from exc

    def _folders(self, folder: Path) -> None:
        """``folder`` and every folder between it and the root, each created
        0700 (``mkdir(parents=True)`` gives the parents it makes the umask's mode)."""
        missing = []
        while folder != self.root and not folder.is_dir():
            missing.append(folder)
            folder = folder.parent
        for path in reversed(missing):
            with suppress(FileExistsError):
                path.mkdir(mode=_DIR_MODE)

    def __repr__(self) -> str:
        return f"LocalStore({str(self.root)!r})"

    # -- writes ---------------------------------------------------------------

    def put_file(self, key: str, path: str | Path) -> int:
        try:
            src = open(path, "rb")  # noqa: SIM115  (a with below: only the open's error is the caller's)
        except OSError as exc:
            raise _storage_error(f"Cannot read {path}", exc) from exc
        with src:
            return self.put_stream(key, src)

    def put_bytes(self, key: str, data: bytes) -> None:
        with self._atomic(key) as sink:
            sink.write(data)

    def put_stream(self, key: str, fileobj: BinaryIO) -> int:
        """Errors raised by ``fileobj.read`` itself (a client that went
        away) propagate unchanged; the old object, if any, stays."""
        written = 0
        with self._atomic(key) as sink:
            while chunk := fileobj.read(CHUNK_BYTES):
                sink.write(chunk)
                written += len(chunk)
        return written

    @contextmanager
    def _atomic(self, key: str) -> Iterator[_Sink]:
        """Yield a sink for the new object's bytes; publish the object on a
        clean exit, discard it on any exception. The store's own I/O
        failures become StorageError; the caller's exceptions propagate."""
        target = self._path(key)
        tmp = target.with_name(f"{_TMP_PREFIX}{uuid.uuid4().hex}")
        try:
            self._folders(target.parent)
            f = os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _FILE_MODE), "wb")
        except OSError as exc:
            raise _storage_error(f"Cannot write object {key!r}", exc) from exc
        try:
            yield _Sink(f)
            _guarded(f.flush)
            _guarded(lambda: os.fsync(f.fileno()))
            _guarded(f.close)
            _guarded(lambda: os.replace(tmp, target))
            _guarded(lambda: _fsync_dir(target.parent))
        except BaseException as exc:
            with suppress(OSError):
                f.close()
            tmp.unlink(missing_ok=True)
            if isinstance(exc, _WriteFailed):
                raise _storage_error(f"Cannot write object {key!r}", exc.cause) from exc.cause
            raise

    # -- reads ----------------------------------------------------------------

    def open_read(self, key: str) -> BinaryIO:
        path = self._path(key)
        try:
            return open(path, "rb")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
            raise ObjectNotFound(f"No object {key!r}.", key=key) from exc
        except OSError as exc:
            raise _storage_error(f"Cannot read object {key!r}", exc) from exc

    def get_bytes(self, key: str) -> bytes:
        with self.open_read(key) as f:
            try:
                return f.read()
            except OSError as exc:
                raise _storage_error(f"Cannot read object {key!r}", exc) from exc

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def size(self, key: str) -> int:
        try:
            st = self._path(key).stat()
        except OSError as exc:
            if exc.errno in _MISSING:
                raise ObjectNotFound(f"No object {key!r}.", key=key) from exc
            raise _storage_error(f"Cannot stat object {key!r}", exc) from exc
        if not stat.S_ISREG(st.st_mode):
            raise ObjectNotFound(f"No object {key!r}.", key=key)
        return st.st_size

    def list(self, prefix: str = "") -> Iterator[str]:
        """Keys in lexicographic order (as S3 lists them), lazily."""
        prefix = check_prefix(prefix, allow_empty=True)
        base = self.root / prefix if prefix else self.root
        if base.is_file():
            yield prefix
            return
        try:
            yield from _walk_sorted(base, prefix)
        except OSError as exc:
            raise _storage_error(f"Cannot list objects under {prefix!r}", exc) from exc

    # -- deletes --------------------------------------------------------------

    def delete(self, key: str) -> bool:
        path = self._path(key)
        try:
            if not path.is_file():
                return False
            path.unlink()
            return True
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise _storage_error(f"Cannot delete object {key!r}", exc) from exc

    def delete_prefix(self, prefix: str) -> int:
        prefix = check_prefix(prefix, allow_empty=False)
        base = self.root / prefix
        if base.is_file():
            return int(self.delete(prefix))
        if not base.is_dir():
            return 0
        try:
            count = sum(1 for _ in _walk_sorted(base, prefix))
            _remove_folder(base)
        except OSError as exc:
            raise _storage_error(f"Cannot delete objects under {prefix!r}", exc) from exc
        return count

    # -- health ---------------------------------------------------------------

    def ping(self) -> None:
        if not self.root.is_dir():
            raise StorageError(f"The storage folder {self.root} does not exist.")
        if not os.access(self.root, os.W_OK | os.X_OK):
            raise StorageError(f"The storage folder {self.root} is not writable by this user.")

    def presigned_url(self, key: str, expires_seconds: int | None = None) -> str | None:
        """Always None: a local folder has no URLs (callers serve the bytes)."""
        check_key(key)
        return None

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)


class _WriteFailed(Exception):
    """The store's own write failed (as opposed to the caller's stream)."""

    def __init__(self, cause: OSError) -> None:
        super().__init__(str(cause))
        self.cause = cause


class _Sink:
    def __init__(self, f: BinaryIO) -> None:
        self._f = f

    def write(self, data: bytes) -> None:
        _guarded(lambda: self._f.write(data))


def _guarded(op: Callable[[], object]) -> None:
    try:
        op()
    except OSError as exc:
        raise _WriteFailed(exc) from exc


def _walk_sorted(folder: Path, rel: str) -> Iterator[str]:
    """Keys of the files below ``folder`` (whose key is ``rel``), sorted as
    whole keys: a folder ``a`` sorts as ``a/``, so ``a-b`` comes before ``a/x``."""
    try:
        with os.scandir(folder) as it:
            entries = [(e.name + "/" if e.is_dir(follow_symlinks=False) else e.name, e) for e in it
                       if not e.name.startswith(".")]
    except OSError as exc:
        if exc.errno in _MISSING:
            return
        raise
    for sort_name, entry in sorted(entries, key=lambda pair: pair[0]):
        key = f"{rel}/{entry.name}" if rel else entry.name
        if sort_name.endswith("/"):
            yield from _walk_sorted(Path(entry.path), key)
        elif entry.is_file(follow_symlinks=False):
            yield key


def _remove_folder(folder: Path) -> None:
    """Remove ``folder`` and everything in it while other threads or
    processes may write or delete there (a job's tasks finishing as it is
    deleted): an entry that went meanwhile is skipped, a folder that got a
    new entry meanwhile is emptied again. Missing is fine; raises OSError
    when it cannot be removed."""
    for attempt in range(_REMOVE_PASSES):
        try:
            if sys.version_info >= (3, 12):
                shutil.rmtree(folder, onexc=lambda fn, path, exc: _skip_missing(exc))
            else:
                shutil.rmtree(folder, onerror=lambda fn, path, info: _skip_missing(info[1]))
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.ENOTEMPTY or attempt == _REMOVE_PASSES - 1:
                raise


def _skip_missing(exc: BaseException) -> None:
    if not isinstance(exc, FileNotFoundError):
        raise exc


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _storage_error(what: str, exc: OSError) -> StorageError:
    return StorageError(f"{what}: {exc.strerror or exc}.", errno=exc.errno)
