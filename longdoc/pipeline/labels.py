"""Page labels: the number a reader cites a page by ("page 105"), not its
place in the file (physical page 118).

A page's ``label`` is, in this order:

1. the document's own label for it: a PDF's ``/PageLabels`` (roman front
   matter, restarts, prefixes such as ``A-3``), read once when the
   document is opened (:meth:`~longdoc.ingest.source.DocumentSource.page_label`);
2. otherwise the number printed on the page, when layout found its
   page-number block (the first, in reading order, of kind ``page_number``):
   the numeral as printed when the block reads as a folio
   (:func:`~longdoc.layout.furniture.folio_token`: ``"Page 3 of 8"`` → ``"3"``,
   ``"- xiv -"`` → ``"xiv"``), else the block's text, whitespace collapsed;
3. otherwise None.

The label is set when a group is laid out, so it is checkpointed with the
page (a resumed page keeps it), and filled in again at assembly for a page
checkpointed without one (a checkpoint written before labels existed).
"""

from __future__ import annotations

from longdoc.errors import LongdocError
from longdoc.ingest.source import DocumentSource
from longdoc.layout.furniture import folio_token
from longdoc.model import MAX_LABEL_CHARS, BlockKind, Page


def printed_label(page: Page) -> str | None:
    """The label the page's page-number block gives (rule 2 above), or None."""
    for block in sorted(page.blocks, key=lambda b: b.order):
        if block.kind is BlockKind.PAGE_NUMBER:
            text = " ".join(block.text.split())
            if text:
                return (folio_token(text) or text)[:MAX_LABEL_CHARS]
    return None


def with_label(page: Page, source: DocumentSource) -> Page:
    """``page`` with its ``label`` set (module docstring); the page itself
    when it already has one or none can be found."""
    if page.label is not None:
        return page
    try:
        label = source.page_label(page.number)
    except LongdocError:  # a prepared group that lacks the page: its blocks still tell
        label = None
    label = label or printed_label(page)
    return page if label is None else page.model_copy(update={"label": label})
