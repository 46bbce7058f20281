"""The pipeline's checkpoint, kept in an object store: jobs keep theirs in
the service's store (so any worker can resume any job), the CLI in a local
folder (:func:`folder_checkpoint`). Under ``prefix``::

    {prefix}/manifest.json          {"fingerprint": …}
    {prefix}/pages/000017.json      one laid-out Page
    {prefix}/groups/000003.done     written after the group's pages

- ``begin`` with another fingerprint (other input, options or engine
  version) deletes everything under ``prefix`` first; so does a damaged
  manifest (the manifest is written atomically, so damage means someone
  else wrote it).
- A group's pages are saved before its marker, so a marked group always has
  its pages; a group with a retryable page failure is saved unmarked.
- A page object that does not parse (or holds another page) reads as
  missing, so its group is redone rather than trusted.

Store failures propagate as :class:`~longdoc.errors.StorageError`
(retryable: the job can be requeued).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from longdoc.errors import ObjectNotFound
from longdoc.model import Page
from longdoc.storage.base import ObjectStore, check_prefix
from longdoc.storage.local import LocalStore

#: the checkpoint's prefix inside a folder checkpoint's store
FOLDER_PREFIX = "checkpoint"


def folder_checkpoint(folder: str | Path) -> StoreCheckpoint:
    """A checkpoint in the local folder ``folder`` (created 0700): the CLI's,
    ``OUT/.longdoc/<stem>``, the same store checkpoint jobs use."""
    return StoreCheckpoint(LocalStore(folder), FOLDER_PREFIX)


class StoreCheckpoint:
    """Implements the pipeline's ``Checkpoint`` protocol over ``store``."""

    def __init__(self, store: ObjectStore, prefix: str) -> None:
        self.store = store
        self.prefix = check_prefix(prefix, allow_empty=False)

    def begin(self, fingerprint: str) -> None:
        """Start or resume; discards work made for another fingerprint."""
        if self._fingerprint() != fingerprint:
            self._start_afresh(fingerprint)

    def _start_afresh(self, fingerprint: str) -> None:
        """Delete everything under the prefix, then write the manifest."""
        self.store.delete_prefix(self.prefix)
        self.store.put_bytes(self._key("manifest.json"), json.dumps({"fingerprint": fingerprint}).encode())

    def group_done(self, group_index: int) -> bool:
        return self.store.exists(self._group_key(group_index))

    def save_group(self, group_index: int, pages: Iterable[Page], complete: bool) -> None:
        for page in pages:
            self.store.put_bytes(self._page_key(page.number), page.model_dump_json().encode())
        if complete:
            self.store.put_bytes(self._group_key(group_index), b"")

    def forget_group(self, group_index: int, numbers: Iterable[int]) -> None:
        """Remove a group's marker, then the pages ``numbers`` (what
        :meth:`save_group` wrote), as if it had never been saved."""
        self.store.delete(self._group_key(group_index))
        for number in numbers:
            self.store.delete(self._page_key(number))

    def load_page(self, number: int) -> Page | None:
        try:
            data = self.store.get_bytes(self._page_key(number))
        except ObjectNotFound:
            return None
        try:
            page = Page.model_validate_json(data)
        except ValueError:
            return None  # a damaged page is redone, not trusted
        return page if page.number == number else None

    def done_pages(self) -> list[int]:
        """Numbers (1-based, ascending) of the pages saved so far, including
        those of a group saved unmarked (their result is final unless the
        job runs again)."""
        numbers = []
        for key in self.store.list(self._key("pages")):
            stem, _, ext = key.rpartition("/")[2].partition(".")
            if ext == "json" and stem.isdigit():
                numbers.append(int(stem))
        return sorted(numbers)

    def _fingerprint(self) -> str | None:
        try:
            manifest = json.loads(self.store.get_bytes(self._key("manifest.json")))
        except ObjectNotFound:
            return None
        except ValueError:
            return None  # damaged: start afresh
        return manifest.get("fingerprint") if isinstance(manifest, dict) else None

    def _key(self, name: str) -> str:
        return f"{self.prefix}/{name}"

    def _page_key(self, number: int) -> str:
        return self._key(f"pages/{number:06d}.json")

    def _group_key(self, group_index: int) -> str:
        return self._key(f"groups/{group_index:06d}.done")
