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

Every item has one provenance per page it lies on, with its box in points
and a BOTTOMLEFT origin, as docling expects. Items appear in ``body`` in
reading order (furniture items too, in the furniture layer, as docling's
own converters place them). ``pages`` holds every page's size.

The file is written in sections (texts, tables, pictures, groups, body
order, pages) to temporary files beside it, one item at a time, and joined
on ``close``: memory holds at most the items of the page that waits for the
next one's height (a paragraph continued over a page break).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, TextIO

from longdoc.export.markdown import list_items
from longdoc.model import BBox, Block, BlockKind, Page

SCHEMA_VERSION = "1.10.0"
_SECTIONS = ("texts", "tables", "pictures", "groups", "body", "pages")
_TEXT_LABELS = {
    BlockKind.TITLE: "title", BlockKind.HEADING: "section_header", BlockKind.PARAGRAPH: "text",
    BlockKind.SIDENOTE: "text", BlockKind.CAPTION: "caption", BlockKind.FOOTNOTE: "footnote",
    BlockKind.FORMULA: "formula", BlockKind.HEADER: "page_header", BlockKind.FOOTER: "page_footer",
    BlockKind.PAGE_NUMBER: "page_footer", BlockKind.CODE: "code",
}
_FURNITURE = {BlockKind.HEADER, BlockKind.FOOTER, BlockKind.PAGE_NUMBER}


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
        self._files: dict[str, TextIO] = {s: open(self._part(s), "w", encoding="utf-8") for s in _SECTIONS}
        self._counts = dict.fromkeys(_SECTIONS, 0)
        self._heights: dict[int, float] = {}
        self._waiting: list[tuple[Block, int]] = []     # blocks that need a later page's height

    def _part(self, section: str) -> Path:
        return self.path.with_name(f"{self.path.name}.{section}.part")

    def write_page(self, page: Page) -> None:
        self._heights[page.number] = page.height
        self._emit("pages", f'"{page.number}": ' + json.dumps(
            {"size": {"width": page.width, "height": page.height}, "page_no": page.number}))
        ready = [(b, n) for b, n in self._waiting if max(b.source_pages or [n]) <= page.number]
        self._waiting = [(b, n) for b, n in self._waiting if max(b.source_pages or [n]) > page.number]
        for block, number in ready:
            self._item(block, number)
        for block in sorted(page.blocks, key=lambda b: b.order):
            if max(block.source_pages or [page.number]) > page.number:
                self._waiting.append((block, page.number))
            else:
                self._item(block, page.number)

    def close(self) -> Path:
        for block, number in self._waiting:
            self._item(block, number)
        self._waiting = []
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

    def _item(self, block: Block, number: int) -> None:
        text = _item_text(block)
        prov = self._provenance(block, number, text)
        layer = "furniture" if block.kind in _FURNITURE else "body"
        if block.kind is BlockKind.TABLE and block.cells:
            ref = self._ref("tables")
            self._emit("tables", json.dumps(_base(ref, "table", layer, prov) | {
                "captions": [], "references": [], "footnotes": [], "annotations": [],
                "data": _table_data(block, self._heights.get(number, 0.0))},
                ensure_ascii=False))
        elif block.kind is BlockKind.FIGURE:
            ref = self._ref("pictures")
            self._emit("pictures", json.dumps(_base(ref, "picture", layer, prov) | {
                "captions": [], "references": [], "footnotes": [], "annotations": []}, ensure_ascii=False))
        elif block.kind is BlockKind.LIST:
            ref = self._ref("groups")
            items = [item[2:] for item in list_items(block)]
            refs = [self._text(text_, "list_item", layer, prov, parent=ref, extra={"enumerated": False,
                                                                                 "marker": ""})
                    for text_ in items]
            self._emit("groups", json.dumps({"self_ref": ref, "parent": {"$ref": "#/body"},
                                             "children": [{"$ref": r} for r in refs], "content_layer": layer,
                                             "name": "list", "label": "list"}))
        else:
            label = _TEXT_LABELS.get(block.kind, "text")
            extra = {"level": max(1, min(100, block.level or 1))} if block.kind is BlockKind.HEADING else {}
            if block.kind is BlockKind.CODE:
                extra = {"captions": [], "references": [], "footnotes": [], "code_language": "unknown"}
            if block.kind is BlockKind.TABLE:   # a table without cells: its text
                label = "text"
            if not text:
                return
            ref = self._text(text, label, layer, prov, extra=extra)
        self._emit("body", json.dumps({"$ref": ref}))

    def _text(self, text: str, label: str, layer: str, prov: list[dict[str, Any]], *,
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
        by_page: dict[int, list[BBox]] = {}
        for line in block.lines:
            by_page.setdefault(line.page, []).append(line.bbox)
        if not by_page:
            by_page[number] = [block.bbox]
        out = []
        for page in sorted(by_page):
            boxes = by_page[page]
            height = self._heights.get(page) or self._heights.get(number) or 0.0
            x0, y0 = min(b.x0 for b in boxes), min(b.y0 for b in boxes)
            x1, y1 = max(b.x1 for b in boxes), max(b.y1 for b in boxes)
            out.append({"page_no": page, "bbox": {"l": x0, "t": height - y0, "r": x1, "b": height - y1,
                                                  "coord_origin": "BOTTOMLEFT"}, "charspan": [0, len(text)]})
        return out

    def _copy(self, section: str, out: TextIO) -> None:
        with open(self._part(section), encoding="utf-8") as f:
            shutil.copyfileobj(f, out)

    def _remove_parts(self) -> None:
        for section in _SECTIONS:
            self._part(section).unlink(missing_ok=True)


def _item_text(block: Block) -> str:
    """An item's text: a list's lines, a code block's lines with their
    indentation, any other block's words on one line."""
    if block.kind is BlockKind.LIST:
        return block.text.strip()
    if block.kind is BlockKind.CODE:
        return block.text.strip("\n").rstrip()
    return " ".join(block.text.split())


def _base(ref: str, label: str, layer: str, prov: list[dict[str, Any]], parent: str = "#/body") -> dict[str, Any]:
    return {"self_ref": ref, "parent": {"$ref": parent}, "children": [], "content_layer": layer, "label": label,
            "prov": prov}


def _table_data(block: Block, height: float) -> dict[str, Any]:
    cells = block.cells or []
    rows = max((c.row + c.row_span for c in cells), default=0)
    cols = max((c.col + c.col_span for c in cells), default=0)
    return {
        "table_cells": [{
            "row_span": c.row_span, "col_span": c.col_span,
            "start_row_offset_idx": c.row, "end_row_offset_idx": c.row + c.row_span,
            "start_col_offset_idx": c.col, "end_col_offset_idx": c.col + c.col_span,
            "text": " ".join(c.text.split()), "column_header": c.row == 0, "row_header": False,
            "row_section": False, "fillable": False,
        } | ({"bbox": {"l": c.bbox.x0, "t": height - c.bbox.y0, "r": c.bbox.x1, "b": height - c.bbox.y1,
                       "coord_origin": "BOTTOMLEFT"}} if c.bbox else {}) for c in cells],
        "num_rows": rows, "num_cols": cols,
    }
