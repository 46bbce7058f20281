"""Model outputs → the document model's blocks.

Where each rule comes from (read from the models' own code and docs):

- **DeepSeek-OCR / DeepSeek-OCR-2** with ``<|grounding|>``: every block is
  ``<|ref|>label<|/ref|><|det|>[[x1, y1, x2, y2], …]<|/det|>`` then a
  newline and the block's Markdown (``deepseek-ai/DeepSeek-OCR``,
  ``DeepSeek-OCR-vllm/run_dpsk_ocr_image.py``: the pattern
  ``<\\|ref\\|>(.*?)<\\|/ref\\|><\\|det\\|>(.*?)<\\|/det\\|>``, a list of boxes,
  coordinates divided by 999 per axis); tables are HTML, display formulas
  ``\\[…\\]``, captions wrapped in ``<center>``; the end of the answer is
  ``<｜end▁of▁sentence｜>``.
- **Unlimited-OCR**: ``<|det|>label [x1, y1, x2, y2]<|/det|>content`` with no
  ``<|ref|>`` and no newline, pages of a multi-page answer separated by
  ``<PAGE>`` (transformers 5.24 ``models/unlimited_ocr/processing_unlimited_ocr.py``:
  ``<\\|det\\|>(\\S+) \\[(\\d+), (\\d+), (\\d+), (\\d+)\\]<\\|/det\\|>(.*?)(?=<\\|det\\|>|<PAGE>|\\Z)``,
  "coordinates normalized to [0, 999]"). Both tag forms are accepted for both
  models (vLLM's recipe describes the DeepSeek form for Unlimited-OCR).
- **PaddleOCR-VL** (prompt ``OCR:``): plain text, LaTeX as ``\\(…\\)`` /
  ``\\[…\\]``, tables as OTSL (``<fcel> <ecel> <lcel> <ucel> <xcel> <nl>``,
  PaddleX ``pipelines/paddleocr_vl/uilts.py`` ``convert_otsl_to_html``),
  turned into HTML here.
- **Generic** models: Markdown.

Boxes become points on the page (top-left origin); labels become block
kinds (:data:`LABEL_KINDS`; an unknown label is a paragraph). A ``code``
label, or a fenced block (```` ``` ```` / ``~~~``) in Markdown, is a CODE
block: its lines and indentation kept, the fences taken off.
"""

from __future__ import annotations

import html
import re

from longdoc.model import BBox, Block, BlockKind

#: the grid model boxes are normalised to (0..999 on each axis)
GRID = 999.0

LABEL_KINDS: dict[str, BlockKind] = {
    "title": BlockKind.TITLE, "doc_title": BlockKind.TITLE,
    "sub_title": BlockKind.HEADING, "subtitle": BlockKind.HEADING, "paragraph_title": BlockKind.HEADING,
    "heading": BlockKind.HEADING, "section_header": BlockKind.HEADING,
    "text": BlockKind.PARAGRAPH, "paragraph": BlockKind.PARAGRAPH, "abstract": BlockKind.PARAGRAPH,
    "reference": BlockKind.PARAGRAPH, "content": BlockKind.PARAGRAPH, "algorithm": BlockKind.PARAGRAPH,
    "list": BlockKind.LIST, "list_item": BlockKind.LIST,
    "table": BlockKind.TABLE,
    "image": BlockKind.FIGURE, "figure": BlockKind.FIGURE, "chart": BlockKind.FIGURE, "seal": BlockKind.FIGURE,
    "image_caption": BlockKind.CAPTION, "figure_caption": BlockKind.CAPTION, "table_caption": BlockKind.CAPTION,
    "caption": BlockKind.CAPTION, "figure_title": BlockKind.CAPTION, "chart_title": BlockKind.CAPTION,
    "table_title": BlockKind.CAPTION, "table_footnote": BlockKind.FOOTNOTE, "vision_footnote": BlockKind.FOOTNOTE,
    "footnote": BlockKind.FOOTNOTE, "page_footnote": BlockKind.FOOTNOTE,
    "header": BlockKind.HEADER, "page_header": BlockKind.HEADER, "header_image": BlockKind.HEADER,
    "footer": BlockKind.FOOTER, "page_footer": BlockKind.FOOTER, "footer_image": BlockKind.FOOTER,
    "page_number": BlockKind.PAGE_NUMBER, "number": BlockKind.PAGE_NUMBER,
    "equation": BlockKind.FORMULA, "formula": BlockKind.FORMULA, "isolate_formula": BlockKind.FORMULA,
    "display_formula": BlockKind.FORMULA, "interline_equation": BlockKind.FORMULA,
    "aside_text": BlockKind.SIDENOTE, "sidenote": BlockKind.SIDENOTE, "margin_note": BlockKind.SIDENOTE,
    "code": BlockKind.CODE,
}

END_OF_ANSWER = "<｜end▁of▁sentence｜>"
_TAG = re.compile(
    r"<\|ref\|>(?P<ref>.*?)<\|/ref\|>\s*<\|det\|>(?P<boxes>.*?)<\|/det\|>"      # DeepSeek-OCR
    r"|<\|det\|>(?P<label>[^\s\[<]+)\s*\[(?P<box>[^\]]*)\]\s*<\|/det\|>",        # Unlimited-OCR
    re.DOTALL,
)
_NUMBERS = re.compile(r"-?\d+(?:\.\d+)?")
_PAGE_SEP = re.compile(r"<\s*page\s*>", re.IGNORECASE)
_HEADING = re.compile(r"^(#{1,6})\s+")
_CENTER = re.compile(r"</?center>", re.IGNORECASE)
_OTSL = re.compile(r"<(fcel|ecel|lcel|ucel|xcel)>([^<]*)|<nl>")
_LIST_ITEM = re.compile(r"^\s*(?:[-*•]|\d{1,3}[.)])\s+")
#: a Markdown code fence opening (its info string after it) and closing
_FENCE_OPEN = re.compile(r"^[ ]{0,3}(?P<fence>`{3,}|~{3,})[^\n]*$", re.MULTILINE)


def split_pages(text: str, expected: int | None = None) -> list[str]:
    """A multi-page answer's pages, split on ``<PAGE>`` (any case, also
    ``<page>``); the empty text before the first separator is dropped, and
    so is the empty text after a trailing separator when it would make one
    page more than the ``expected`` number (a blank last page still counts
    when the answer holds one chunk per page)."""
    chunks = _PAGE_SEP.split(clean(text))
    if chunks and not chunks[0].strip():
        chunks = chunks[1:]
    if expected is not None and len(chunks) == expected + 1 and not chunks[-1].strip():
        chunks = chunks[:-1]
    return chunks


def clean(text: str) -> str:
    """The answer without its end-of-answer token."""
    return text.replace(END_OF_ANSWER, "")


def grounded_blocks(text: str, page: int, width: float, height: float) -> list[Block]:
    """One page of grounded output (either tag form) → blocks in the order
    written. Text before the first tag, or an answer with no tags at all, is
    read as Markdown."""
    text = clean(text)
    matches = list(_TAG.finditer(text))
    if not matches:
        return markdown_blocks(text, page, width, height)
    blocks = markdown_blocks(text[: matches[0].start()], page, width, height) if matches[0].start() else []
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        label = (m.group("ref") or m.group("label") or "text").strip().lower()
        box = _box(m.group("boxes") or m.group("box") or "", width, height)
        blocks.append(_block(label, text[m.end():end], box, page, len(blocks)))
    return blocks


def paddle_blocks(text: str, page: int, width: float, height: float) -> list[Block]:
    """PaddleOCR-VL's plain answer: OTSL tables as HTML tables, the rest as
    Markdown-ish text."""
    text = clean(text).replace("</s>", "")
    if "<fcel>" in text or "<ecel>" in text:
        start = min(i for i in (text.find("<fcel>"), text.find("<ecel>")) if i >= 0)
        end = text.rfind("<nl>")
        end = len(text) if end < start else end + len("<nl>")
        before = markdown_blocks(text[:start], page, width, height)
        table = _block("table", otsl_to_html(text[start:end]), _whole(width, height), page, len(before))
        after = markdown_blocks(text[end:], page, width, height)
        return _renumber([*before, table, *after], page)
    return markdown_blocks(text, page, width, height)


def markdown_blocks(text: str, page: int, width: float, height: float) -> list[Block]:
    """Markdown → blocks: ``#`` headings, HTML or pipe tables, list items,
    ``\\[…\\]`` / ``$$…$$`` formulas, paragraphs (split on blank lines).
    No boxes are known: each block has the whole page's box."""
    blocks: list[Block] = []
    for chunk in _chunks(text):
        label = _markdown_label(chunk)
        blocks.append(_block(label, chunk, _whole(width, height), page, len(blocks)))
    return blocks


def _chunks(text: str) -> list[str]:
    """Paragraph-sized pieces: blank-line separated, HTML tables and fenced
    code blocks whole (a fence left open runs to the end)."""
    out: list[str] = []
    rest = _CENTER.sub("", text)
    while rest:
        table, fence = rest.find("<table"), _FENCE_OPEN.search(rest)
        start = min(i for i in (table, fence.start() if fence else -1, len(rest)) if i >= 0)
        out += [c.strip() for c in re.split(r"\n\s*\n", rest[:start]) if c.strip()]
        if start == len(rest):
            break
        if start == table:
            end = rest.find("</table>", start)
            end = len(rest) if end < 0 else end + len("</table>")
            out.append(rest[start:end].strip())
        else:
            assert fence is not None
            end = _fence_end(rest, fence)
            out.append(rest[start:end].strip("\n"))
        rest = rest[end:]
    return out


def _fence_end(text: str, opening: re.Match[str]) -> int:
    """Where the fenced block opened by ``opening`` ends: after its closing
    fence (the same character, at least as long), or at the end of ``text``."""
    mark = opening.group("fence")
    closing = re.compile(rf"^[ ]{{0,3}}{re.escape(mark[0])}{{{len(mark)},}}[ \t]*$", re.MULTILINE)
    found = closing.search(text, opening.end())
    return found.end() if found else len(text)


def _code_body(content: str) -> str:
    """A code block's text without its fences (when it has them): its lines
    and indentation as written, blank lines at either end dropped."""
    lines = content.strip("\n").split("\n")
    opening = _FENCE_OPEN.match(lines[0]) if lines else None
    if opening is not None:
        lines = lines[1:]
        mark = opening.group("fence")
        if lines and lines[-1].strip() and set(lines[-1].strip()) == {mark[0]} and len(lines[-1].strip()) >= len(mark):
            lines = lines[:-1]
    return "\n".join(lines).strip("\n").rstrip()


def _markdown_label(chunk: str) -> str:
    if _FENCE_OPEN.match(chunk):
        return "code"
    if chunk.startswith("<table") or chunk.lstrip().startswith("|"):
        return "table"
    if chunk.startswith(("\\[", "$$")):
        return "formula"
    heading = _HEADING.match(chunk)
    if heading:
        return "title" if len(heading.group(1)) == 1 else "heading"
    lines = [l for l in chunk.splitlines() if l.strip()]
    if lines and all(_LIST_ITEM.match(l) for l in lines):
        return "list"
    return "text"


def _block(label: str, content: str, box: BBox, page: int, order: int) -> Block:
    kind = LABEL_KINDS.get(label, BlockKind.PARAGRAPH)
    if kind is BlockKind.CODE:  # "# comment" in a listing is no heading
        return Block(id=f"p{page}-b{order}", kind=kind, bbox=box, order=order, text=_code_body(content),
                     source_pages=[page])
    text = _CENTER.sub("", content).strip()
    hashes = 0
    heading = _HEADING.match(text)
    if heading:  # "## Methods": a heading whatever the label says, "#" count for its level
        text, hashes = text[heading.end():].strip(), len(heading.group(1))
        if kind is BlockKind.PARAGRAPH:
            kind = BlockKind.HEADING
    level = max(1, hashes - 1) if kind is BlockKind.HEADING else None
    return Block(id=f"p{page}-b{order}", kind=kind, bbox=box, order=order, text=text, source_pages=[page],
                 level=level)


def _box(spec: str, width: float, height: float) -> BBox:
    """The union of the boxes in ``spec`` (``[[x1,y1,x2,y2], …]`` or
    ``x1, y1, x2, y2`` on the 0..999 grid), in points; the whole page when
    there is no readable box."""
    values = [float(v) for v in _NUMBERS.findall(spec)]
    quads = [values[i:i + 4] for i in range(0, len(values) - len(values) % 4, 4)]
    if not quads:
        return _whole(width, height)

    def x(v: float) -> float:
        return min(max(v, 0.0), GRID) / GRID * width

    def y(v: float) -> float:
        return min(max(v, 0.0), GRID) / GRID * height

    x0 = min(min(q[0], q[2]) for q in quads)
    x1 = max(max(q[0], q[2]) for q in quads)
    y0 = min(min(q[1], q[3]) for q in quads)
    y1 = max(max(q[1], q[3]) for q in quads)
    return BBox(x0=x(x0), y0=y(y0), x1=x(x1), y1=y(y1))


def _whole(width: float, height: float) -> BBox:
    return BBox(x0=0.0, y0=0.0, x1=max(width, 0.0), y1=max(height, 0.0))


def _renumber(blocks: list[Block], page: int) -> list[Block]:
    return [b.model_copy(update={"order": i, "id": f"p{page}-b{i}"}) for i, b in enumerate(blocks)]


def otsl_to_html(otsl: str) -> str:
    """An OTSL table (``<fcel>text`` a cell, ``<ecel>`` an empty cell,
    ``<lcel>`` merged with the cell to its left, ``<ucel>`` with the cell
    above, ``<xcel>`` both, ``<nl>`` end of row) as an HTML table with
    ``rowspan``/``colspan``. Ragged rows are padded with empty cells."""
    rows: list[list[tuple[str, str]]] = [[]]
    for m in _OTSL.finditer(otsl):
        if m.group(0) == "<nl>":
            rows.append([])
        else:
            rows[-1].append((m.group(1), m.group(2).strip()))
    rows = [r for r in rows if r]
    width = max((len(r) for r in rows), default=0)
    grid = [r + [("ecel", "")] * (width - len(r)) for r in rows]
    out = ["<table>"]
    for r, row in enumerate(grid):
        cells = []
        for c, (tag, text) in enumerate(row):
            if tag not in ("fcel", "ecel"):
                continue  # covered by a span
            colspan = 1
            while c + colspan < width and grid[r][c + colspan][0] in ("lcel", "xcel"):
                colspan += 1
            rowspan = 1
            while r + rowspan < len(grid) and grid[r + rowspan][c][0] in ("ucel", "xcel"):
                rowspan += 1
            attrs = (f' rowspan="{rowspan}"' if rowspan > 1 else "") + (f' colspan="{colspan}"' if colspan > 1 else "")
            cells.append(f"<td{attrs}>{html.escape(text)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "".join(out)
