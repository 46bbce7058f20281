"""Checkpoints: after each group, its owned pages are written out, so a
rerun (or a restarted worker) resumes at the next group instead of redoing.

Layout of a :class:`DirectoryCheckpoint` rooted at ``ROOT``::

    ROOT/manifest.json          {"fingerprint": …}  (options + input + engine)
    ROOT/pages/000017.json      one laid-out Page (before cross-page stitching)
    ROOT/groups/000003.done     written last: group 3's pages are all saved

Every file is written to a temporary name and renamed, so a crash leaves
either the old state or the new one. A group with a page that failed with a
retryable error is not marked done, so a rerun retries it.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from longdoc.errors import OutputError
from longdoc.model import Page


class Checkpoint(Protocol):
    def begin(self, fingerprint: str) -> None: ...
    def group_done(self, group_index: int) -> bool: ...
    def save_group(self, group_index: int, pages: Iterable[Page], complete: bool) -> None: ...
    def load_page(self, number: int) -> Page | None: ...


class DirectoryCheckpoint:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def begin(self, fingerprint: str) -> None:
        """Start or resume. A checkpoint made for another input, other
        options or another engine version is discarded."""
        manifest = self.root / "manifest.json"
        try:
            if manifest.is_file():
                old = json.loads(manifest.read_text(encoding="utf-8")).get("fingerprint")
                if old == fingerprint:
                    return
                shutil.rmtree(self.root)
            (self.root / "pages").mkdir(parents=True, exist_ok=True)
            (self.root / "groups").mkdir(parents=True, exist_ok=True)
            _atomic_write(manifest, json.dumps({"fingerprint": fingerprint}))
        except (OSError, ValueError) as exc:
            raise OutputError(f"Cannot use checkpoint folder {self.root}: {exc}.") from exc

    def group_done(self, group_index: int) -> bool:
        return (self.root / "groups" / f"{group_index:06d}.done").is_file()

    def save_group(self, group_index: int, pages: Iterable[Page], complete: bool) -> None:
        try:
            for page in pages:
                _atomic_write(self._page_path(page.number), page.model_dump_json())
            if complete:
                _atomic_write(self.root / "groups" / f"{group_index:06d}.done", "")
        except OSError as exc:
            raise OutputError(f"Cannot write checkpoint in {self.root}: {exc.strerror or exc}.") from exc

    def load_page(self, number: int) -> Page | None:
        path = self._page_path(number)
        try:
            return Page.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            return None
        except ValueError:
            return None  # a damaged page file is redone, not trusted

    def _page_path(self, number: int) -> Path:
        return self.root / "pages" / f"{number:06d}.json"


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
