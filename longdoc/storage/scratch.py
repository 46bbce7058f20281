"""Local scratch space for documents being accepted or parsed.

The service keeps its temporary copies under ``service.work_dir`` (default
``./data/work``), never in the system's ``/tmp``: the folder is private
(mode 0700), emptied when the service starts (nothing in it belongs to a
live job then: the owner of the last copies was killed), and a job's copy
is removed when the job ends or is deleted::

    WORK/upload-<random>/upload          an upload as it arrives, then checked (the only
                                         copy on disk until the store has it; removed then)
    WORK/originals/<job id>              the document of a job whose tasks run here
    WORK/viewer-originals/<job id>       the document of a job whose pages someone views
    WORK/task-<job id>-<random>/out/     a task's exports before they go to the store
    WORK/fleet-<pid>/...                 a fleet worker's own scratch folder, laid out alike
"""

from __future__ import annotations

import fcntl
import os
import shutil
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from longdoc.errors import StorageError
from longdoc.storage.keys import check_job_id


class ScratchDir:
    """Scratch folders under ``root`` (created 0700; a relative root is
    resolved against the current directory once, here). Raises
    :class:`StorageError` when the folder cannot be created."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).absolute()
        try:
            self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            self.root.chmod(0o700)
        except OSError as exc:
            raise StorageError(f"Cannot create the work folder {self.root} ({exc.strerror or exc}).") from exc

    def clear(self) -> int:
        """Remove everything inside (at start-up); returns how many entries went."""
        removed = 0
        for entry in self.root.iterdir():
            _remove(entry)
            removed += 1
        return removed

    @contextmanager
    def upload(self) -> Iterator[Path]:
        """A fresh private folder for one upload, removed afterwards."""
        with self._folder(f"upload-{uuid.uuid4().hex}") as path:
            yield path

    @contextmanager
    def task(self, job_id: str) -> Iterator[Path]:
        """A fresh folder for one task of the job (tasks of one job may run
        side by side, in threads or processes sharing this root), removed
        afterwards."""
        with self._folder(f"task-{check_job_id(job_id)}-{uuid.uuid4().hex[:12]}") as path:
            yield path

    @cached_property
    def originals(self) -> OriginalCache:
        """The copies of originals of the jobs whose tasks run here."""
        return OriginalCache(self.root / "originals")

    def remove_job(self, job_id: str) -> None:
        """Remove what a job left here: its copy of the original, here and
        in the scratch folders nested in this one (a fleet worker's
        ``fleet-<pid>/`` on this machine). A task of the job still running
        removes its own folder when it ends."""
        self.originals.forget(job_id)
        name = check_job_id(job_id)
        for nested in self.root.glob("*/originals"):
            _remove_copy(nested, name)

    def entries(self) -> list[str]:
        """Names of the folders here now (for tests and diagnostics)."""
        return sorted(p.name for p in self.root.iterdir())

    @contextmanager
    def _folder(self, name: str) -> Iterator[Path]:
        path = self.root / name
        _remove(path)
        try:
            path.mkdir(mode=0o700)
        except OSError as exc:
            raise StorageError(f"Cannot create {path} ({exc.strerror or exc}).") from exc
        try:
            yield path
        finally:
            _remove(path)


@dataclass(frozen=True)
class Received:
    """An upload written into a folder of :meth:`ScratchDir.upload` as it
    arrived: ``size`` bytes at ``path``, whose SHA-256 is ``sha256``."""

    path: Path
    size: int
    sha256: str

    @contextmanager
    def taken(self) -> Iterator[Path]:
        """The file while the block runs (it goes to the store, or is
        refused); removed afterwards, whatever happened."""
        try:
            yield self.path
        finally:
            self.path.unlink(missing_ok=True)


def remove_tree(path: Path) -> None:
    """Remove a folder (or file) left by another process; missing is fine."""
    _remove(path)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


class OriginalCache:
    """Local copies of the originals of the last ``keep`` jobs this process
    worked on, so the next page group of a document on the same worker does
    not download it again. Files are written under a temporary name and
    renamed, so a copy is whole or absent.

    A copy in use (:meth:`use`) is pinned by a shared ``flock`` on it, so
    making room for newer copies never removes one a task is about to read,
    in this process or another sharing the folder; only :meth:`forget` (the
    job ended) removes a pinned copy."""

    def __init__(self, root: str | Path, keep: int = 4) -> None:
        self.root = Path(root)
        self.keep = keep
        self._lock = threading.Lock()

    @contextmanager
    def use(self, job_id: str, size: int, fetch: Callable[[Path], object]) -> Iterator[Path]:
        """The local copy of job ``job_id``'s original (``size`` bytes),
        pinned while the block runs, calling ``fetch(dest)`` to write it
        when there is none."""
        with self._lock:
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            dest = self.root / check_job_id(job_id)
            fd = None
            while fd is None:
                if not (dest.is_file() and dest.stat().st_size == size):
                    partial = dest.with_name(f"{dest.name}.part")
                    try:
                        fetch(partial)
                        os.replace(partial, dest)
                    except BaseException:
                        partial.unlink(missing_ok=True)   # a copy cut short holds part of the document
                        raise
                try:
                    fd = os.open(dest, os.O_RDONLY)
                except FileNotFoundError:  # another process's forget() between the check and the open
                    continue
            fcntl.flock(fd, fcntl.LOCK_SH)
            os.utime(dest)
            self._evict()
        try:
            yield dest
        finally:
            os.close(fd)  # releases the pin

    def forget(self, job_id: str) -> None:
        """Remove the copy of ``job_id``'s original (the job ended or was
        deleted), pinned or not, and any partial copy of it. A process still
        reading a pinned copy keeps its open file; the name is gone at once."""
        with self._lock:
            _remove_copy(self.root, check_job_id(job_id))

    def job_ids(self) -> list[str]:
        """The jobs whose original has a copy here (whole or partial)."""
        if not self.root.is_dir():
            return []
        return sorted({p.name.removesuffix(".part") for p in self.root.iterdir()})

    def _evict(self) -> None:
        """Remove the least recently used copies past ``keep``, skipping pinned ones."""
        copies = []
        for p in self.root.iterdir():
            if p.name.endswith(".part"):
                continue
            try:
                copies.append((p.stat().st_mtime, p))
            except FileNotFoundError:
                continue
        copies.sort(reverse=True)
        for _, old in copies[self.keep:]:
            _remove_unpinned(old)


def _remove_copy(folder: Path, name: str) -> None:
    """Remove ``folder/name`` and ``folder/name.part``; missing is fine."""
    (folder / name).unlink(missing_ok=True)
    (folder / f"{name}.part").unlink(missing_ok=True)


def _remove_unpinned(path: Path) -> None:
    """Remove ``path`` unless a task holds its pin (a shared ``flock``)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        path.unlink(missing_ok=True)
    except BlockingIOError:
        pass  # a task is reading it
    finally:
        os.close(fd)
