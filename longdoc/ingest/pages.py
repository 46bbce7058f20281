"""Page-range selections such as ``"1-20,35"``.

Grammar (whitespace anywhere is ignored)::

    spec  := item ("," item)*
    item  := N | N "-" M | N "-" | "-" M       (1-based, inclusive)

``"5-"`` means page 5 to the last page, ``"-3"`` pages 1 to 3. Only ASCII
digits count as numbers. Ranges must run forwards (``"9-3"`` is refused rather
than guessed at), every page named must exist, and an empty item (``"1,,2"``)
or an empty spec is refused: a selection either means exactly what it says or
is an :class:`~longdoc.errors.InvalidPageRange`. ``None`` (no selection) means
every page.
"""

from __future__ import annotations

import re

from longdoc.errors import InvalidPageRange

_ITEM = re.compile(r"^(?P<start>[0-9]*)(?P<dash>-?)(?P<end>[0-9]*)$")


def parse_page_range(spec: str | None, page_count: int) -> list[int]:
    """Pages selected by ``spec`` in a document of ``page_count`` pages.

    Returns the selected 1-based page numbers, sorted and without duplicates;
    ``spec=None`` selects all pages. Raises :class:`InvalidPageRange` naming
    the offending item and the document's page count when the spec is
    malformed, names a page outside ``1..page_count``, or selects nothing.
    """
    if page_count < 1:
        raise InvalidPageRange(
            "The document has no pages to select.", spec=spec, page_count=page_count
        )
    if spec is None:
        return list(range(1, page_count + 1))
    compact = re.sub(r"\s+", "", spec)
    if not compact:
        raise InvalidPageRange(
            f"The page range is empty; the document has {page_count} pages.",
            spec=spec,
            page_count=page_count,
        )
    selected: set[int] = set()
    for item in compact.split(","):
        start, end = _parse_item(item, spec, page_count)
        selected.update(range(start, end + 1))
    return sorted(selected)


def _parse_item(item: str, spec: str, page_count: int) -> tuple[int, int]:
    """Inclusive (start, end) of one item, validated against the page count."""

    def fail(problem: str) -> InvalidPageRange:
        return InvalidPageRange(
            f"Invalid page range {spec!r}: {problem}; the document has {page_count} pages.",
            spec=spec,
            item=item,
            page_count=page_count,
        )

    match = _ITEM.match(item)
    if not item or match is None or item == "-":
        shown = repr(item) if item else "an empty item"
        raise fail(f"{shown} is not a page number or range")
    start_text, dash, end_text = match.group("start", "dash", "end")
    if not dash:
        start = end = int(start_text)
    else:
        start = int(start_text) if start_text else 1
        end = int(end_text) if end_text else page_count
    for page in (start, end):
        if page < 1 or page > page_count:
            raise fail(f"page {page} in {item!r} is outside 1-{page_count}")
    if start > end:
        raise fail(f"{item!r} runs backwards; write it as {end}-{start}")
    return start, end


def selection_of_size(spec: str | None, selected_count: int) -> list[int]:
    """The pages ``spec`` selected in a document where it selected
    ``selected_count`` pages, without knowing the document's page count
    (what a job records: its spec and how many pages it has).

    A spec of closed items selects the same pages in any document long
    enough; each open item (``"5-"``) grows by one page per page the
    document has past the highest page named, and overlapping open items
    grow together, so the page count is the highest page named plus what
    is still missing. Raises :class:`InvalidPageRange` for a malformed spec."""
    if spec is None:
        return list(range(1, selected_count + 1))
    compact = re.sub(r"\s+", "", spec)
    count = max([int(n) for n in re.findall(r"[0-9]+", compact)] or [1])
    selected = parse_page_range(spec, count)
    if len(selected) < selected_count and re.search(r"[0-9]-(,|$)", compact):
        selected = parse_page_range(spec, count + selected_count - len(selected))
    return selected
