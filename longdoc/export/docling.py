"""The document as a DoclingDocument (docling-core's JSON schema), streamed.

So that docling's chunkers and serializers run on our results unchanged.
Written by hand (docling-core is not a runtime dependency); the tests load
every file back with docling-core and run its HierarchicalChunker on it.

Mapping (block kind → docling label, content layer):

    title → title              heading → section_header (level)
    paragraph, side note → text                      list → a list group of list_item
    table → tables[] with its cells (first row as column header)
    figure → pictures[]        caption → caption     footnote → footnote
    formula → formula          header → page_header, footer and page number → page_footer (furniture)
    code → code (a CodeItem: its lines and indentation kept, language unknown)

Every item has one provenance per page it lies on, with its box on that
page in points and a BOTTOMLEFT origin, as docling expects: a list item
the provenance of its own lines (an item cut by a page break one on each
page), a paragraph joined over a break one per page. A list or table
continued over page breaks (its later parts' ``continues``) is one list
group or one table item: the group holds every part's items, the table
every part's cells (rows numbered on from the part before, each cell's box
on the page it is printed on) and one provenance per part. A caption is
linked to its table or figure on its page (``captions``, and its child,
as docling's converters do): the figure right before it, else the table or
figure right after it, else the table right before it.

Items appear in ``body`` in reading order (furniture items too, in the
furniture layer, as docling's own converters place them); a continued list
or table where its first part is. ``pages`` holds every page's size.

The file is written in sections (texts, tables, pictures, groups, body
order, pages) to temporary files beside it, one item at a time, and joined
on ``close``: memory holds the blocks waiting for a later page's height (a
paragraph joined over a page break, and what follows it) and the list or
table being written (a table's cells until it ends).
"""

from __future__ import annotations

import json
import shutil
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from longdoc.export.markdown import list_items
from longdoc.export.spans import piece_lines
from longdoc.export.text import block_text
from longdoc.model import BBox, Block, BlockKind, Line, Page

SCHEMA_VERSION = "1.10.0"
_SECTIONS = ("texts", "tables", "pictures", "groups", "body", "pages")
_TEXT_LABELS = {
    BlockKind.TITLE: "title", BlockKind.HEADING: "section_header", BlockKind.PARAGRAPH: "text",
    BlockKind.SIDENOTE: "text", BlockKind.CAPTION: "caption", BlockKind.FOOTNOTE: "footnote",
    BlockKind.FORMULA: "formula", BlockKind.HEADER: "page_header", BlockKind.FOOTER: "page_footer",
    BlockKind.PAGE_NUMBER: "page_footer", BlockKind.CODE: "code",
}
_FURNITURE = {BlockKind.HEADER, BlockKind.FOOTER, BlockKind.PAGE_NUMBER}


@dataclass
class _Open:
    """A list group or a table being written: its reserved ref, the id of
    its last part (a block whose ``continues`` names it goes on with it),
    what it holds so far."""

    ref: str
    last: str
    layer: str
    children: list[str] = field(default_factory=list)     # a list's items, a table's captions
    prov: list[dict[str, Any]] = field(default_factory=list)
    cells: list[dict[str, Any]] = field(default_factory=list)
    rows: int = 0
    cols: int = 0


class DoclingWriter:
    """Writes ``path`` (a DoclingDocument) from pages given in order."""

    def __init__(self, path: Path, name: str, sha256: str, media_type: str) -> None:
        self.path = path
        self.header = {
            "schema_name": "DoclingDocument", "version": SCHEMA_VERSION, "name": Path(name).stem or "document",
            "origin": {"mimetype": media_type, "binary_hash": int(sha256[:16], 16) if sha256 else 0,
                       "filename": name},
            "furniture": {"self_ref": "#/furniture", "children": [], "content_layer": "furniture",
                          "name": "_root_", "label": "unspecified"},
        }
        self._files: dict[str, TextIO] = {
            s: open(self._part(s), "w", encoding="utf-8") for s in _SECTIONS  # noqa: SIM115  (closed by close/abort)
        }
        self._counts = dict.fromkeys(_SECTIONS, 0)
        self._heights: dict[int, float] = {}
        # in reading order, what waits for a later page's height: (block, its page, its captions), or
        # (None, a page's number, the ids its blocks continue) where a page starts
        self._queue: deque[tuple[Block | None, int, Any]] = deque()
        self._open: dict[str, _Open] = {}               # "groups" (a list), "tables" (a table) being written

    def _part(self, section: str) -> Path:
        return self.path.with_name(f"{self.path.name}.{section}.part")

    def write_page(self, page: Page) -> None:
        self._heights[page.number] = page.height
        self._emit("pages", f'"{page.number}": ' + json.dumps(
            {"size": {"width": page.width, "height": page.height}, "page_no": page.number}))
        blocks = sorted(page.blocks, key=lambda b: b.order)
        self._queue.append((None, page.number, {b.continues for b in blocks if b.continues}))
        captions = _captions(blocks)
        for block in blocks:
            if block.kind is not BlockKind.CAPTION or block.id not in captions.linked:
                self._queue.append((block, page.number, captions.of.get(block.id, [])))
        self._drain(page.number)

    def close(self) -> Path:
        self._drain(None)
        for section in list(self._open):
            self._finish(section)
        for f in self._files.values():
            f.close()
        partial = self.path.with_name(self.path.name + ".partial")
        with open(partial, "w", encoding="utf-8") as out:
            out.write(json.dumps(self.header, ensure_ascii=False)[:-1])
            out.write(', "body": {"self_ref": "#/body", "children": [')
            self._copy("body", out)
            out.write('], "content_layer": "body", "name": "_root_", "label": "unspecified"}')
            for section in ("groups", "texts", "pictures", "tables"):
                out.write(f', "{section}": [')
                self._copy(section, out)
                out.write("]")
            out.write(', "key_value_items": [], "form_items": [], "pages": {')
            self._copy("pages", out)
            out.write("}}\n")
        partial.replace(self.path)
        self._remove_parts()
        return self.path

    def abort(self) -> None:
        for f in self._files.values():
            f.close()
        self._remove_parts()
        self.path.with_name(self.path.name + ".partial").unlink(missing_ok=True)

    # -- items ----------------------------------------------------------------------

    def _drain(self, given: int | None) -> None:
        """Write what waits, in order, up to the first block that lies on a
        page after ``given`` (everything when ``given`` is None)."""
        while self._queue:
            block, number, extra = self._queue[0]
            if block is not None and given is not None and max(block.source_pages or [number]) > given:
                return
            self._queue.popleft()
            if block is None:
                for section in [s for s, o in self._open.items() if o.last not in extra]:
                    self._finish(section)
            else:
                self._item(block, number, extra)

    def _item(self, block: Block, number: int, captions: list[Block]) -> None:
        text = _item_text(block)
        layer = "furniture" if block.kind in _FURNITURE else "body"
        if block.kind is BlockKind.TABLE and block.cells:
            self._table(block, number, layer, captions)
            return
        if block.kind is BlockKind.LIST:
            self._list(block, number, layer)
            return
        if block.kind is BlockKind.FIGURE:
            ref = self._ref("pictures")
            children = [self._text(c, "caption", layer, number, parent=ref) for c in captions]
            self._emit("pictures", json.dumps(_base(ref, "picture", layer, self._provenance(block, number, text)) | {
                "children": [{"$ref": r} for r in children], "captions": [{"$ref": r} for r in children],
                "references": [], "footnotes": [], "annotations": []}, ensure_ascii=False))
            self._emit("body", json.dumps({"$ref": ref}))
            return
        label = _TEXT_LABELS.get(block.kind, "text")
        extra: dict[str, Any] = {"level": max(1, min(100, block.level or 1))} if block.kind is BlockKind.HEADING else {}
        if block.kind is BlockKind.CODE:
            extra = {"captions": [], "references": [], "footnotes": [], "code_language": "unknown"}
        if block.kind is BlockKind.TABLE:   # a table without cells: its text
            label = "text"
        if text:
            self._emit("body", json.dumps({"$ref": self._text(block, label, layer, number, extra=extra, text=text)}))

    def _list(self, block: Block, number: int, layer: str) -> None:
        """A list's items into its group (a new one, unless ``block`` goes on
        with the list being written), each with the provenance of its lines."""
        group = self._continued("groups", block)
        if group is None:
            group = self._start("groups", block, layer)
        group.last = block.id
        items = [item[2:] for item in list_items(block)]
        lines = piece_lines(block, items)
        for n, item in enumerate(items):
            prov = self._boxes(lines[n], number, item) if lines is not None and lines[n] else \
                self._provenance(block, number, item)
            group.children.append(self._write_text(item, "list_item", layer, prov, parent=group.ref,
                                                   extra={"enumerated": False, "marker": ""}))

    def _table(self, block: Block, number: int, layer: str, captions: list[Block]) -> None:
        """A table's part: its cells under those of the parts before (a new
        table unless ``block`` goes on with the table being written), each
        cell's box on its own page, one provenance per page."""
        table = self._continued("tables", block)
        if table is None:
            table = self._start("tables", block, layer)
        table.last = block.id
        table.children += [self._text(c, "caption", layer, number, parent=table.ref) for c in captions]
        table.prov += self._provenance(block, number, _item_text(block))
        cells = block.cells or []
        for c in cells:
            height = self._heights.get(c.page or number, 0.0)
            table.cells.append({
                "row_span": c.row_span, "col_span": c.col_span,
                "start_row_offset_idx": table.rows + c.row, "end_row_offset_idx": table.rows + c.row + c.row_span,
                "start_col_offset_idx": c.col, "end_col_offset_idx": c.col + c.col_span,
                "text": " ".join(c.text.split()), "column_header": table.rows + c.row == 0, "row_header": False,
                "row_section": False, "fillable": False,
            } | ({"bbox": _bbox(c.bbox, height)} if c.bbox else {}))
        table.rows += max((c.row + c.row_span for c in cells), default=0)
        table.cols = max(table.cols, max((c.col + c.col_span for c in cells), default=0))

    def _continued(self, section: str, block: Block) -> _Open | None:
        """The list or table being written when ``block`` goes on with it;
        otherwise None, that one finished (a new one starts)."""
        open_ = self._open.get(section)
        if open_ is not None and block.continues == open_.last:
            return open_
        if open_ is not None:
            self._finish(section)
        return None

    def _start(self, section: str, block: Block, layer: str) -> _Open:
        """A list group or table whose ref is taken now (nothing else of its
        section is written until it is finished) and placed in ``body``."""
        open_ = self._open[section] = _Open(ref=self._ref(section), last=block.id, layer=layer)
        self._emit("body", json.dumps({"$ref": open_.ref}))
        return open_

    def _finish(self, section: str) -> None:
        open_ = self._open.pop(section)
        children = [{"$ref": r} for r in open_.children]
        if section == "groups":
            item = {"self_ref": open_.ref, "parent": {"$ref": "#/body"}, "children": children,
                    "content_layer": open_.layer, "name": "list", "label": "list"}
        else:
            item = _base(open_.ref, "table", open_.layer, open_.prov) | {
                "children": children, "captions": children, "references": [], "footnotes": [], "annotations": [],
                "data": {"table_cells": open_.cells, "num_rows": open_.rows, "num_cols": open_.cols}}
        if self._ref(section) != open_.ref:   # invariant: nothing else of its section was written meanwhile
            raise AssertionError(f"docling {section}: {open_.ref} written as {self._ref(section)}")
        self._emit(section, json.dumps(item, ensure_ascii=False))

    def _text(self, block: Block, label: str, layer: str, number: int, *, parent: str = "#/body",
              extra: dict[str, Any] | None = None, text: str | None = None) -> str:
        """``block`` (on page ``number``) as a text item (``text``: its item text, when known); its ref."""
        text = _item_text(block) if text is None else text
        return self._write_text(text, label, layer, self._provenance(block, number, text), parent=parent, extra=extra)

    def _write_text(self, text: str, label: str, layer: str, prov: list[dict[str, Any]], *,
                    parent: str = "#/body", extra: dict[str, Any] | None = None) -> str:
        ref = self._ref("texts")
        item = _base(ref, label, layer, prov, parent) | {"orig": text, "text": text} | (extra or {})
        self._emit("texts", json.dumps(item, ensure_ascii=False))
        return ref

    def _ref(self, section: str) -> str:
        return f"#/{section}/{self._counts[section]}"

    def _emit(self, section: str, item: str) -> None:
        f = self._files[section]
        f.write(("," if self._counts[section] else "") + item)
        self._counts[section] += 1

    def _provenance(self, block: Block, number: int, text: str) -> list[dict[str, Any]]:
        """One provenance per page the block lies on: its lines' box there
        (the block's own box on its first page when it has no lines)."""
        if not block.lines:
            return [self._prov(number, [block.bbox], number, text)]
        return self._boxes(block.lines, number, text)

    def _boxes(self, lines: list[Line], number: int, text: str) -> list[dict[str, Any]]:
        by_page: dict[int, list[BBox]] = {}
        for line in lines:
            by_page.setdefault(line.page, []).append(line.bbox)
        return [self._prov(page, boxes, number, text) for page, boxes in sorted(by_page.items())]

    def _prov(self, page: int, boxes: list[BBox], number: int, text: str) -> dict[str, Any]:
        height = self._heights.get(page) or self._heights.get(number) or 0.0
        x0, y0 = min(b.x0 for b in boxes), min(b.y0 for b in boxes)
        x1, y1 = max(b.x1 for b in boxes), max(b.y1 for b in boxes)
        return {"page_no": page, "bbox": {"l": x0, "t": height - y0, "r": x1, "b": height - y1,
                                          "coord_origin": "BOTTOMLEFT"}, "charspan": [0, len(text)]}

    def _copy(self, section: str, out: TextIO) -> None:
        with open(self._part(section), encoding="utf-8") as f:
            shutil.copyfileobj(f, out)

    def _remove_parts(self) -> None:
        for section in _SECTIONS:
            self._part(section).unlink(missing_ok=True)


@dataclass
class _Captions:
    of: dict[str, list[Block]]        # a table's or figure's id -> its captions
    linked: set[str]                  # ids of the captions in ``of``


def _captions(blocks: list[Block]) -> _Captions:
    """Each caption's table or figure on its page: the one right before it
    in reading order when that is a figure, else the one right after it,
    else the one right before it (a table's caption is usually above it, a
    figure's below)."""
    out = _Captions({}, set())
    floats = [b for b in blocks if b.kind is BlockKind.FIGURE or b.kind is BlockKind.TABLE and b.cells]
    for i, block in enumerate(blocks):
        if block.kind is not BlockKind.CAPTION:
            continue
        before = blocks[i - 1] if i else None
        after = blocks[i + 1] if i + 1 < len(blocks) else None
        if before is not None and before.kind is BlockKind.FIGURE:
            target = before
        elif after is not None and after in floats:
            target = after
        elif before is not None and before in floats:
            target = before
        else:
            continue
        out.of.setdefault(target.id, []).append(block)
        out.linked.add(block.id)
    return out


def _item_text(block: Block) -> str:
    """An item's text: a list's lines, a code block's lines with their
    indentation, any other block's words on one line."""
    if block.kind is BlockKind.LIST:
        return block.text.strip()
    if block.kind is BlockKind.CODE:
        return block_text(BlockKind.CODE, block.text)
    return " ".join(block.text.split())


def _base(ref: str, label: str, layer: str, prov: list[dict[str, Any]], parent: str = "#/body") -> dict[str, Any]:
    return {"self_ref": ref, "parent": {"$ref": parent}, "children": [], "content_layer": layer, "label": label,
            "prov": prov}


def _bbox(box: BBox, height: float) -> dict[str, Any]:
    """``box`` (top-left origin) as docling's box with a bottom-left origin on a page ``height`` tall."""
    return {"l": box.x0, "t": height - box.y0, "r": box.x1, "b": height - box.y1, "coord_origin": "BOTTOMLEFT"}
