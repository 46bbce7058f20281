"""Page groups: the unit of scheduling, checkpointing and retry.

Given N pages, ``page_chunk_size`` C and ``chunk_overlap`` O (0 <= O < C),
group g covers page indexes ``[g*(C-O), min(g*(C-O)+C, N))``. Consecutive
groups share O pages. Every page is *owned* by exactly one group: the first
group that covers it, so group g > 0 owns ``[g*(C-O)+O, end)``::

    N=10, C=4, O=1              stride C-O = 3
    page index   0 1 2 3 4 5 6 7 8 9
    group 0      O O O O                 owns 0-3
    group 1            c O O O           owns 4-6   (3 = context)
    group 2                  c O O O     owns 7-9   (6 = context)

Context pages (``c``) are the boundary: an engine that decodes sequences
re-reads them as context and drops their output; a page engine takes their
results from the boundary cache instead of recognizing them again.

Indexes here are 0-based positions in the *selected* page list; the
pipeline maps them to 1-based page numbers.

A document's :class:`DocumentPlan` (C, O and the render DPI) is fixed when
it is accepted (a job stores it with its options) and is the one place
groups are made from; the engine is handed it with each session, so a
worker configured with another C reads the document as it was planned.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Group:
    """One page group. All ranges are half-open ``[start, end)`` indexes."""

    index: int
    start: int
    end: int
    owned_start: int

    @property
    def owned(self) -> range:
        return range(self.owned_start, self.end)

    @property
    def context(self) -> range:
        """Pages covered but owned by the previous group (the overlap)."""
        return range(self.start, self.owned_start)

    @property
    def num_pages(self) -> int:
        return self.end - self.start


def plan_groups(num_pages: int, page_chunk_size: int, chunk_overlap: int) -> list[Group]:
    """Split ``num_pages`` into overlapping groups (see module docstring).

    Raises ValueError on C < 1, O < 0, O >= C or a negative page count.
    Zero pages give no groups.
    """
    if page_chunk_size < 1:
        raise ValueError(f"page_chunk_size must be >= 1, got {page_chunk_size}")
    if not 0 <= chunk_overlap < page_chunk_size:
        raise ValueError(
            f"chunk_overlap must be in [0, page_chunk_size), got {chunk_overlap} "
            f"with page_chunk_size {page_chunk_size}"
        )
    if num_pages < 0:
        raise ValueError(f"num_pages must be >= 0, got {num_pages}")
    stride = page_chunk_size - chunk_overlap
    groups: list[Group] = []
    owned_start = 0
    g = 0
    while owned_start < num_pages:
        start = g * stride
        end = min(start + page_chunk_size, num_pages)
        groups.append(Group(index=g, start=start, end=end, owned_start=owned_start))
        owned_start = end
        g += 1
    return groups


@dataclass(frozen=True)
class DocumentPlan:
    """How one document is cut and rendered: ``page_chunk_size`` C pages
    per group, ``chunk_overlap`` O pages shared by consecutive groups,
    pages rendered at ``dpi``. Raises ValueError on C < 1, O outside
    [0, C) or a DPI below 1."""

    page_chunk_size: int
    chunk_overlap: int
    dpi: int

    def __post_init__(self) -> None:
        plan_groups(0, self.page_chunk_size, self.chunk_overlap)  # its checks, no groups
        if self.dpi < 1:
            raise ValueError(f"dpi must be >= 1, got {self.dpi}")

    def groups(self, num_pages: int) -> list[Group]:
        """The groups of a document of ``num_pages`` selected pages (see the module docstring)."""
        return plan_groups(num_pages, self.page_chunk_size, self.chunk_overlap)
