"""The boundary cache: results of the overlap pages between two groups.

After group g, the results of its last O pages (which group g+1 covers as
context) are kept here so cross-page analysis in group g+1 sees both sides
of the seam without recognizing those pages again. They are released as
soon as group g+1 is done with them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, Protocol, TypeVar


class _Sized(Protocol):
    def approx_bytes(self) -> int: ...


T = TypeVar("T", bound=_Sized)


class BoundaryCache(Generic[T]):
    """Page results keyed by 0-based page index within the selection."""

    def __init__(self) -> None:
        self._items: dict[int, T] = {}

    def put(self, index: int, item: T) -> None:
        self._items[index] = item

    def get(self, index: int) -> T | None:
        return self._items.get(index)

    def __contains__(self, index: int) -> bool:
        return index in self._items

    def __len__(self) -> int:
        return len(self._items)

    def indexes(self) -> list[int]:
        return sorted(self._items)

    def keep_only(self, indexes: Iterable[int]) -> None:
        """Release every entry whose index is not in ``indexes``."""
        keep = set(indexes)
        for i in [i for i in self._items if i not in keep]:
            del self._items[i]

    def approx_bytes(self) -> int:
        return sum(item.approx_bytes() for item in self._items.values())
