"""The one document model every stage passes along and every export reads.

Conventions:

- Page numbers are **1-based** everywhere (``page``, ``source_pages``).
- Boxes are ``BBox(x0, y0, x1, y1)`` in **PDF points** (1/72 inch) with the
  origin at the **top-left** of the page, y growing downwards. An image
  input's pixel becomes ``72 / image_dpi`` points (72 dpi assumed when the
  file declares none).

Document ─► Page (number, size, status, engine, timings) ─► Block (kind, bbox,
reading order, source pages) ─► Line (bbox, text, confidence, page).

This module depends on nothing else in longdoc.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import Enum
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

#: what no reader can see and no export can carry: control characters (tab,
#: newline and carriage return aside; a form feed separates pages in the
#: text export) and lone surrogates (not encodable as UTF-8)
_UNWRITABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` with each control character and lone surrogate replaced by
    U+FFFD, the replacement character (what an engine, a text layer or a
    plugin gives is never trusted to be writable; a text layer's control
    characters are glyphs it could not map, and the text-layer judge counts
    them so)."""
    if not _UNWRITABLE.search(text):
        return text
    return _UNWRITABLE.sub("\ufffd", text)


#: text as the document model holds it (:func:`clean_text`)
Text = Annotated[str, AfterValidator(clean_text)]

SCHEMA_VERSION = "longdoc.document/1"


class BBox(BaseModel):
    """Axis-aligned box in points, top-left origin."""

    model_config = ConfigDict(frozen=True)

    x0: float
    y0: float
    x1: float
    y1: float

    @property
    def width(self) -> float:
        return self.x1 - self.x0

    @property
    def height(self) -> float:
        return self.y1 - self.y0

    @property
    def cx(self) -> float:
        return (self.x0 + self.x1) / 2

    @property
    def cy(self) -> float:
        return (self.y0 + self.y1) / 2

    def union(self, other: BBox) -> BBox:
        return BBox(
            x0=min(self.x0, other.x0),
            y0=min(self.y0, other.y0),
            x1=max(self.x1, other.x1),
            y1=max(self.y1, other.y1),
        )

    @staticmethod
    def enclosing(boxes: list[BBox]) -> BBox:
        if not boxes:
            raise ValueError("enclosing() needs at least one box")
        return BBox(
            x0=min(b.x0 for b in boxes),
            y0=min(b.y0 for b in boxes),
            x1=max(b.x1 for b in boxes),
            y1=max(b.y1 for b in boxes),
        )


class TextSource(str, Enum):
    OCR = "ocr"
    TEXT_LAYER = "text_layer"


class Line(BaseModel):
    """One line of text as recognized (OCR) or extracted (text layer)."""

    text: Text
    bbox: BBox
    confidence: float = Field(ge=0.0, le=1.0)
    page: int = Field(ge=1, description="1-based page the line sits on")
    pitch: float | None = Field(
        default=None, gt=0.0, description="points per character when the line is set in a fixed-pitch "
        "(monospace) font, its characters on a grid (code); None otherwise")


class BlockKind(str, Enum):
    TITLE = "title"
    HEADING = "heading"
    PARAGRAPH = "paragraph"
    LIST = "list"
    TABLE = "table"
    FIGURE = "figure"
    CAPTION = "caption"
    FOOTNOTE = "footnote"
    SIDENOTE = "sidenote"
    HEADER = "header"
    FOOTER = "footer"
    PAGE_NUMBER = "page_number"
    FORMULA = "formula"
    CODE = "code"


#: Kinds kept out of the main text (Markdown/plain text) but present in JSON.
FURNITURE_KINDS = frozenset({BlockKind.HEADER, BlockKind.FOOTER, BlockKind.PAGE_NUMBER})
#: a page label (``Page.label``) is cut to this many characters: a label is a folio, not text
MAX_LABEL_CHARS = 64


class PageFlag(str, Enum):
    """What a reader checking a page by eye should know about it (stable
    words; ``longdoc.pipeline.review`` sets them)."""

    FALLBACK = "fallback"              # read by a model engine's fallback engine
    TRUNCATED = "truncated"            # the model's answer for this page was cut (max tokens)
    REPETITION = "repetition"          # the model's answer for this page ended in a repetition loop
    LOW_CONFIDENCE = "low_confidence"  # confidence below export.review_below
    ROTATED = "rotated"                # a scan turned to be read upright
    DOWNSCALED = "downscaled"          # rendered below the DPI asked for (limits.max_render_pixels)
    BLANK = "blank"                    # no text at all


#: the flags that put a page on the document's review list (``review_pages``)
REVIEW_FLAGS = frozenset({PageFlag.FALLBACK, PageFlag.TRUNCATED, PageFlag.REPETITION, PageFlag.LOW_CONFIDENCE})
#: the ``produced_by`` of a page a model engine's fallback engine read: ``fallback:<engine>``
FALLBACK_PRODUCER = "fallback:"


def needs_review(flags: Iterable[PageFlag]) -> bool:
    """Whether a page with ``flags`` belongs on its document's review list
    (a flag of :data:`REVIEW_FLAGS`)."""
    return any(flag in REVIEW_FLAGS for flag in flags)


class TableCell(BaseModel):
    """One cell of a table: 0-based ``row`` and ``col`` of its top-left
    grid position, how many rows and columns it spans, its text."""

    row: int = Field(ge=0)
    col: int = Field(ge=0)
    row_span: int = Field(default=1, ge=1)
    col_span: int = Field(default=1, ge=1)
    text: Text = ""
    bbox: BBox | None = None
    page: int | None = Field(
        default=None, ge=1, description="1-based page the cell is printed on, set on every cell of a table "
        "continued over a page break (each part's cells on the part's page); None on a table on one page")


class RegionKind(str, Enum):
    """The layout model's classes (CDLA)."""

    TEXT = "text"
    TITLE = "title"
    FIGURE = "figure"
    FIGURE_CAPTION = "figure_caption"
    TABLE = "table"
    TABLE_CAPTION = "table_caption"
    HEADER = "header"
    FOOTER = "footer"
    REFERENCE = "reference"
    EQUATION = "equation"


class Region(BaseModel):
    """An area of a page the layout model found; a table's carries its
    cells (``truncated``: the structure model stopped before the table's
    end, so the cells cover its top part only)."""

    kind: RegionKind
    bbox: BBox
    score: float = Field(ge=0.0, le=1.0)
    cells: list[TableCell] | None = None
    truncated: bool = False


class Block(BaseModel):
    """A unit of layout: a paragraph, heading, list, code listing, side note, header…

    ``order`` is the reading-order index within the page (0-based, over all
    blocks of the page including furniture). ``text`` is the block's text as
    exports print it (lines joined, hyphenation at line ends removed; a
    CODE block: its lines one per line, indentation as spaces).
    ``source_pages`` lists every page the block's lines come from: a
    paragraph or list item cut by a page break is joined once, on its first
    page. A list or table continued over a page break keeps its later items
    or rows on the page they are printed on, each part a block whose
    ``continues`` names the part before it.
    """

    id: str
    kind: BlockKind
    bbox: BBox
    order: int = Field(ge=0)
    text: Text
    lines: list[Line] = Field(default_factory=list)
    source_pages: list[int]
    level: int | None = Field(default=None, description="heading level (1 = top)")
    anchor: str | None = Field(
        default=None, description="for side notes: id of the block it sits beside"
    )
    cells: list[TableCell] | None = Field(
        default=None, description="for tables: the cells, row by row (text holds them as tab-separated rows)"
    )
    continues: str | None = Field(
        default=None, description="for a list, table or code listing continued over a page break: the id of "
        "the part before this one (on the page before, or on an earlier page when the pages between hold "
        "nothing else of the main text); this block holds the items, rows or lines printed on its own page (a table's "
        "rows numbered from 0 on this page, a repeated header row left out). None for a first part and "
        "any other block")


class PageStatus(str, Enum):
    OK = "ok"
    FAILED = "failed"


class ErrorInfo(BaseModel):
    code: str
    message: str
    hint: str | None = None
    page: int | None = None
    retryable: bool = False

    @classmethod
    def of(cls, exc: Any, page: int | None = None) -> ErrorInfo:
        """The record of a :class:`~longdoc.errors.LongdocError` (its code,
        message, hint and whether retrying can help), on ``page``."""
        return cls(code=exc.code, message=exc.message, hint=exc.hint, page=page, retryable=exc.retryable)


class Page(BaseModel):
    number: int = Field(ge=1, description="1-based page number in the source document")
    label: Text | None = Field(
        default=None, description="the page's printed number, as readers cite it: the PDF's page label "
        "(/PageLabels: roman front matter, restarts, prefixes) when the document has one for this page, "
        "otherwise the number of the page-number block longdoc found on it (the numeral as printed, "
        "\"Page 3 of 8\" → \"3\"; the block's text when it holds no folio), otherwise None")
    width: float = Field(description="points; 0 for a failed page whose size could not be read")
    height: float = Field(description="points; 0 for a failed page whose size could not be read")
    status: PageStatus = PageStatus.OK
    text_source: TextSource | None = Field(
        default=None, description="text layer or OCR; None for a failed page"
    )
    ocr_reason: str | None = Field(
        default=None, description="why this page went to OCR or not (ocr=auto)"
    )
    engine: str | None = None
    engine_version: str | None = None
    rotation: int = Field(
        default=0, description="clockwise degrees a scan was turned to read it upright; "
        "width, height and boxes refer to the upright page"
    )
    render_dpi: float | None = Field(
        default=None, description="DPI the page was rendered at for OCR; None when it was not rendered"
    )
    downscaled: bool = Field(
        default=False, description="rendered below the DPI asked for (or below an image's own) to stay "
        "within limits.max_render_pixels"
    )
    produced_by: str | None = Field(
        default=None, description="how the engine produced the page when it has more than one way "
        "(a model engine: group, split, single, page, fallback:<engine>)"
    )
    recovery: list[str] = Field(
        default_factory=list, description="what went wrong on the way to this page and what was done "
        "(retries, a truncated or looping answer and the smaller request that replaced it, a fallback)"
    )
    confidence: float | None = Field(
        default=None, ge=0.0, le=1.0, description="the mean confidence of the page's OCR lines, weighted by "
        "their characters; None where no OCR line gives one (a text-layer page, a model engine's page, a page "
        "with no text, a failed page)")
    flags: list[PageFlag] = Field(
        default_factory=list, description="what a reader checking the page by eye should know, in this order: "
        "fallback (read by the fallback engine), truncated, repetition (the model's own answer for the page "
        "was cut at its token limit, or ended in a repetition loop), low_confidence (below "
        "export.review_below), rotated, downscaled, blank (no text); empty for a failed page")
    timings: dict[str, float] = Field(default_factory=dict, description="seconds per stage")
    blocks: list[Block] = Field(default_factory=list)
    lines: list[Line] = Field(
        default_factory=list, description="recognized lines not laid out into blocks yet (a line engine's "
        "output); empty once the page is laid out"
    )
    regions: list[Region] = Field(
        default_factory=list, description="areas the layout model found (tables with their cells, figures, "
        "captions, headers, footers), read by layout; empty once the page is laid out"
    )
    error: ErrorInfo | None = None

    def main_blocks(self, *, furniture: bool = False) -> list[Block]:
        """Blocks of the main text in reading order: furniture excluded, or
        with ``furniture`` kept where it stands (layout numbers a page's
        top furniture before its body and its bottom furniture after).
        The one place the text exports decide what they print."""
        return [b for b in sorted(self.blocks, key=lambda b: b.order) if furniture or b.kind not in FURNITURE_KINDS]

    def all_lines(self) -> list[Line]:
        """Every line on this page: those not laid out yet, then those of
        its blocks (a block continued from this page keeps lines of the
        next one; those are left out)."""
        laid_out = [line for block in self.blocks for line in block.lines if line.page == self.number]
        return [*self.lines, *laid_out]

    def needs_review(self) -> bool:
        """Whether the page belongs on the document's review list (:func:`needs_review`)."""
        return needs_review(self.flags)

    def approx_bytes(self) -> int:
        """Rough in-memory size, for workspace accounting."""
        texts = [line.text for line in self.all_lines()] + [block.text for block in self.blocks]
        return 512 + sum(200 + 2 * len(text) for text in texts)


class DocumentStatus(str, Enum):
    SUCCEEDED = "succeeded"
    PARTIAL = "partial"
    FAILED = "failed"


class SourceInfo(BaseModel):
    name: str
    sha256: str
    media_type: str
    page_count: int = Field(description="pages in the source file")
    selected_pages: list[int] = Field(description="1-based pages processed, in order")


class Document(BaseModel):
    """Whole-document result. Exports stream it page by page; this class is
    the schema of the JSON export and what tests load it back into."""

    schema_: str = Field(default=SCHEMA_VERSION, alias="schema")
    longdoc_version: str
    source: SourceInfo
    options: dict[str, Any] = Field(default_factory=dict)
    status: DocumentStatus
    pages: list[Page]
    review_pages: list[int] = Field(
        default_factory=list, description="1-based numbers of the pages a person should check by eye: those "
        "flagged fallback, truncated, repetition or low_confidence")
    errors: list[ErrorInfo] = Field(default_factory=list)
    timings: dict[str, float] = Field(default_factory=dict)

    model_config = ConfigDict(populate_by_name=True)
