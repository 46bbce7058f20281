"""Which pages a person should check by eye: each page's ``confidence``
and ``flags``, set in this one place.

- ``confidence``: the mean confidence of the page's OCR lines, weighted by
  their characters (a long line read at 0.99 outweighs a short one at
  0.5); None for a page without OCR lines (text layer, a model engine's
  blocks, no text, failed);
- ``flags`` (:class:`~longdoc.model.PageFlag`), from what the page records:

  ==================  =====================================================
  fallback            ``produced_by`` is ``fallback:<engine>``
  truncated,          kept as the engine set them: only a model engine
  repetition          knows its answer for the page was cut or looped
  low_confidence      ``confidence`` below ``export.review_below``
  rotated             ``rotation`` is not 0
  downscaled          ``downscaled``
  blank               no line and no block holds any text
  ==================  =====================================================

  A failed page has no flags (its error says what happened).

The document's ``review_pages`` are the pages with a flag of
:data:`~longdoc.model.REVIEW_FLAGS` (:meth:`~longdoc.model.Page.needs_review`).

Set when a group is laid out, so they are checkpointed with the page (the
page endpoints show them while the job runs), and set again at assembly,
before stitching (which moves a block continued over a page break onto its
first page): a checkpoint written before they existed gets them, and a
resumed document is judged by the ``review_below`` of the run that
assembles it. One pass over lines already in memory.
"""

from __future__ import annotations

from longdoc.model import FALLBACK_PRODUCER, Page, PageFlag, PageStatus, TextSource

#: flags only an engine can tell; the pipeline keeps them as it finds them
ENGINE_FLAGS = frozenset({PageFlag.TRUNCATED, PageFlag.REPETITION})


def with_review(page: Page, review_below: float) -> Page:
    """``page`` with its ``confidence`` and ``flags`` set (module
    docstring); the page itself when they are already right."""
    confidence, has_text = _read_lines(page)
    flags = page_flags(page, confidence, has_text, review_below)
    if confidence == page.confidence and flags == page.flags:
        return page
    return page.model_copy(update={"confidence": confidence, "flags": flags})


def page_flags(page: Page, confidence: float | None, has_text: bool, review_below: float) -> list[PageFlag]:
    """The page's flags in :class:`~longdoc.model.PageFlag` order, given its
    ``confidence`` and whether it holds any text."""
    if page.status is PageStatus.FAILED:
        return []
    found = {flag for flag in page.flags if flag in ENGINE_FLAGS}
    if page.produced_by is not None and page.produced_by.startswith(FALLBACK_PRODUCER):
        found.add(PageFlag.FALLBACK)
    if confidence is not None and confidence < review_below:
        found.add(PageFlag.LOW_CONFIDENCE)
    if page.rotation:
        found.add(PageFlag.ROTATED)
    if page.downscaled:
        found.add(PageFlag.DOWNSCALED)
    if not has_text:
        found.add(PageFlag.BLANK)
    return [flag for flag in PageFlag if flag in found]


def _read_lines(page: Page) -> tuple[float | None, bool]:
    """(the character-weighted mean confidence of an OCR page's lines, or
    None; whether the page holds any text at all). A page that is not OCR
    costs a look at its blocks' text until one holds some."""
    if page.text_source is not TextSource.OCR or page.status is PageStatus.FAILED:
        has_text = any(block.text.strip() for block in page.blocks) or any(line.text.strip() for line in page.lines)
        return None, has_text
    chars = 0
    weighted = 0.0
    for line in page.all_lines():
        n = len(line.text.strip())
        chars += n
        weighted += n * line.confidence
    if not chars:
        return None, any(block.text.strip() for block in page.blocks)
    return round(min(1.0, weighted / chars), 4), True
