"""Chunks for retrieval: JSON Lines, one chunk per line, streamed.

Chunks follow the document's structure within a token budget
(``export.chunk_tokens``):

- the main text only: running headers, footers and page numbers are not in
  a chunk (they are furniture; the JSON export keeps them), unless
  ``furniture=True`` (export.furniture keep): then each is a block of the
  chunks where it stands on its page;
- a title or heading starts a chunk (headings in a row start it together) and
  sets the heading path every later chunk carries until a heading of the
  same or a higher level replaces it;
- blocks are added in reading order while the chunk stays within the budget;
- a block over the budget on its own is split: a paragraph or a list
  between sentences (a single sentence longer than the whole budget, and
  only then, between words), a table between rows, each part keeping the
  table's header row so it reads as a table, a code block between its lines
  (a line longer than the whole budget, and only then, between words), each
  part fenced as code. Such a block's id is in each chunk that holds a part
  of it, and only there is a block in more than one;
- a list or table continued over a page break (a block whose ``continues``
  names the part before it): its items or rows on the next page go on
  directly under the part before when that part ends the chunk and they
  fit (one list, one pipe table); otherwise they start the next chunk, a
  table's rows under its header row again.

Each line: ``{"id", "index", "text" (Markdown), "pages": [first, last]
(the pages the chunk's text is printed on: each block's ``source_pages``,
or for a part of a split block the pages of the lines it comes from,
:mod:`~longdoc.export.spans`, or the pages of its rows' cells),
"page_labels": [first's, last's], "headings": [path], "block_ids", "kinds",
"tokens"}``. ``page_labels`` are the printed labels of the pages in
``pages``, same order (each page's ``label``; null where it has none): cite
a chunk as "pp. ix-3" rather than by physical page. A chunk whose last
block continues on the next page is written once that page's label is
known (when the next page is given, or at close). ``id`` hashes the
document's SHA-256, the budget and the chunk's position (its blocks and
part), so parsing the same document again gives the same ids and
re-indexing is idempotent.

Tokens are counted by :func:`count_tokens`, an estimate that leans high
against the BPE tokenizers embedding models use (no tokenizer file has to
be downloaded): a run of letters or digits counts one token per four
characters (rounded up), every other visible character one, and every
CJK, kana or hangul character one. English prose counts about 1.3 tokens
per word this way, against about 1.2-1.3 with cl100k.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TextIO

from longdoc.export.markdown import block_markdown, code_markdown, spans, table_markdown, table_rows_markdown
from longdoc.export.spans import piece_pages
from longdoc.model import Block, BlockKind, Page, TableCell

_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]|[^\W_]+|[^\s]",
                    re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
#: a sentence ends at . ! ? (or their CJK forms) followed by space, or at a CJK full stop
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+(?=\S)|(?<=[。！？])")
_HEADINGS = (BlockKind.TITLE, BlockKind.HEADING)


def count_tokens(text: str) -> int:
    """Estimated tokens of ``text`` (see the module docstring)."""
    total = 0
    for piece in _TOKEN.findall(text):
        if len(piece) > 1 and not _CJK.match(piece):
            total += math.ceil(len(piece) / 4)
        else:
            total += 1
    return total


@dataclass
class _Part:
    """A block, or one part of a block split to fit the budget: its text
    alone, or (``under``) its items or rows to go on directly under the
    part of the same list or table before it; the pages its text is
    printed on."""

    block: Block
    text: str
    tokens: int
    pages: list[int]
    part: int = 0
    under: str | None = None
    joined: bool = False               # written under the part before it (a newline, not a blank line)


@dataclass
class _Chunk:
    parts: list[_Part] = field(default_factory=list)
    #: the heading path in effect for the chunk's first text (None while it holds only headings)
    headings: list[str] | None = None

    @property
    def tokens(self) -> int:
        # parts are joined by a blank line: count it as one token
        return sum(p.tokens for p in self.parts) + max(0, len(self.parts) - 1)

    @property
    def only_headings(self) -> bool:
        return all(p.block.kind in _HEADINGS for p in self.parts)

    @property
    def text(self) -> str:
        return "".join((("\n" if p.joined else "\n\n") if i else "") + p.text for i, p in enumerate(self.parts))


class ChunkWriter:
    """Writes chunks of the pages it is given, in order, to ``out``."""

    def __init__(self, out: TextIO, doc_sha256: str, budget: int, *, furniture: bool = False) -> None:
        self.out, self.doc_sha256, self.budget, self.furniture = out, doc_sha256, budget, furniture
        self.index = 0
        self._path: list[tuple[int, str]] = []       # (level, text) of the open headings
        self._chunk = _Chunk()
        self._labels: dict[int, str | None] = {}     # page number -> label, for the pages given so far
        self._held: list[dict] = []                  # records waiting for a later page's label
        self._open: Block | None = None              # the last block added when a list or table
        self._header: list[TableCell] | None = None  # the header row of that table (its first part's first row)
        self._pipe = False                           # that table's parts so far are pipe tables (no cell spans)

    def write_page(self, page: Page) -> None:
        self._labels[page.number] = page.label
        self._release(page.number)
        for block in page.main_blocks(furniture=self.furniture):
            self._add(block)

    def close(self) -> None:
        self._flush()
        self._release(None)

    def _release(self, given: int | None) -> None:
        """Write the held records whose pages are all given (all of them
        when ``given`` is None), in order."""
        while self._held and (given is None or max(self._held[0]["pages"], default=0) <= given):
            record = self._held.pop(0)
            record["page_labels"] = [self._labels.get(n) for n in record["pages"]]
            self.out.write(json.dumps(record, ensure_ascii=False) + "\n")

    # -- building -------------------------------------------------------------------

    def _add(self, block: Block) -> None:
        text, goes_on = self._markdown(block)
        if not text.strip():
            return
        if block.kind in _HEADINGS:
            if not self._chunk.only_headings:
                self._flush()
            self._enter_heading(block)
        for part in self._parts(block, text, goes_on):
            last = self._chunk.parts[-1] if self._chunk.parts else None
            if part.under is not None and last is not None and last.block.id == block.continues \
                    and self._chunk.tokens + 1 + count_tokens(part.under) <= self.budget:
                part.text, part.tokens, part.joined = part.under, count_tokens(part.under), True
            elif self._chunk.parts and self._chunk.tokens + 1 + part.tokens > self.budget:
                self._flush()
            if self._chunk.headings is None and block.kind not in _HEADINGS:
                self._chunk.headings = [t for _, t in self._path]
            self._chunk.parts.append(part)

    def _markdown(self, block: Block) -> tuple[str, bool]:
        """``block``'s Markdown in a chunk (a later part of a table under its
        table's header row), and whether it goes on from the list or table
        added last."""
        goes_on = self._open is not None and block.continues == self._open.id and block.kind is self._open.kind
        if block.kind is BlockKind.TABLE and block.cells:
            if block.continues is None:
                first = min(c.row for c in block.cells)
                self._header = [c for c in block.cells if c.row == first]
            elif not goes_on:
                self._header = None
            self._pipe = (self._pipe or not goes_on) and not spans(block.cells)
            self._open = block
            if goes_on and self._header is not None:
                return table_markdown(self._table(block.cells)), True
            return block_markdown(block), False
        self._open, self._header = (block if block.kind is BlockKind.LIST else None), None
        return block_markdown(block), goes_on

    def _table(self, rows: list[TableCell]) -> list[TableCell]:
        """``rows`` (a later part's cells) under the open table's header row."""
        header = self._header or []
        return [*header, *(c.model_copy(update={"row": c.row + 1}) for c in rows)]

    def _enter_heading(self, block: Block) -> None:
        level = 0 if block.kind is BlockKind.TITLE else (block.level or 1)
        while self._path and self._path[-1][0] >= level:
            self._path.pop()
        self._path.append((level, " ".join(block.text.split())))

    def _parts(self, block: Block, text: str, goes_on: bool) -> Iterator[_Part]:
        """``block`` whole, or cut within the budget; ``goes_on``: it goes on
        from the list or table added before it (its part may be written
        directly under that one's)."""
        tokens = count_tokens(text)
        if tokens <= self.budget:
            under = None
            if goes_on and block.kind is BlockKind.LIST:
                under = text
            elif goes_on and block.cells and self._pipe:
                under = table_rows_markdown(block.cells, as_html=False)
            yield _Part(block, text, tokens, list(block.source_pages), under=under)
            return
        if block.kind is BlockKind.TABLE and block.cells:
            rows = self._table(block.cells) if goes_on else block.cells
            for i, (piece, cells) in enumerate(_table_parts(rows, self.budget)):
                pages = sorted({c.page for c in cells if c.page is not None}) or list(block.source_pages)
                yield _Part(block, piece, count_tokens(piece), pages, part=i)
            return
        pieces = _code_parts(block.text, self.budget) if block.kind is BlockKind.CODE else _text_parts(text, self.budget)
        for i, (piece, pages) in enumerate(zip(pieces, piece_pages(block, pieces))):
            yield _Part(block, piece, count_tokens(piece), pages, part=i)

    def _flush(self) -> None:
        chunk = self._chunk
        self._chunk = _Chunk()
        if not chunk.parts:
            return
        pages = [p for part in chunk.parts for p in part.pages]
        block_ids = list(dict.fromkeys(p.block.id for p in chunk.parts))
        position = "|".join(f"{p.block.id}#{p.part}" for p in chunk.parts)
        record = {
            "id": hashlib.sha256(f"{self.doc_sha256}:{self.budget}:{position}".encode()).hexdigest()[:32],
            "index": self.index,
            "text": chunk.text,
            "pages": [min(pages), max(pages)] if pages else [],
            "page_labels": [],                      # filled in by _release
            "headings": chunk.headings if chunk.headings is not None else [t for _, t in self._path],
            "block_ids": block_ids,
            "kinds": list(dict.fromkeys(p.block.kind.value for p in chunk.parts)),
            "tokens": chunk.tokens,
        }
        self.index += 1
        self._held.append(record)
        self._release(max(self._labels, default=0))


def _text_parts(text: str, budget: int) -> list[str]:
    """``text`` cut into parts within ``budget``: between lines first (a
    list's items), a line over the budget between sentences, a sentence over
    the budget on its own between words."""
    lines = [line for line in text.split("\n") if line.strip()]
    if len(lines) == 1:
        return _sentence_parts(lines[0], budget)
    pieces: list[str] = []
    for line in lines:
        pieces.extend(_sentence_parts(line, budget) if count_tokens(line) > budget else [line])
    return _pack(pieces, budget, "\n")


def _code_parts(code: str, budget: int) -> list[str]:
    """A code block cut between lines into fenced blocks within ``budget``
    (the fences counted in); blank lines inside are kept, a line over the
    budget alone is cut between words."""
    room = max(1, budget - 2 * count_tokens(code_markdown(code).split("\n", 1)[0]))
    pieces: list[str] = []
    for line in code.strip("\n").split("\n"):
        pieces.extend(_word_parts(line, room) if count_tokens(line) > room else [line])
    return [code_markdown(part) for part in _pack(pieces, room, "\n") if part.strip()]


def _sentence_parts(text: str, budget: int) -> list[str]:
    pieces: list[str] = []
    for sentence in (s for s in _SENTENCE_END.split(text) if s.strip()):
        if count_tokens(sentence) <= budget:
            pieces.append(sentence)
        else:
            pieces.extend(_word_parts(sentence, budget))
    return _pack(pieces, budget, " " if not _CJK.search(text) else "")


def _word_parts(sentence: str, budget: int) -> list[str]:
    words = re.findall(r"\S+", sentence) if not _CJK.search(sentence) else list(sentence)
    sep = "" if _CJK.search(sentence) else " "
    return _pack(words, budget, sep)


def _pack(pieces: list[str], budget: int, sep: str) -> list[str]:
    """Consecutive ``pieces`` joined by ``sep`` into parts within ``budget``.
    Pieces are counted alone: joining can only merge runs of letters, which
    lowers the count, so a part's sum bounds its joined text's count."""
    parts: list[str] = []
    current: list[str] = []
    used = 0
    for piece in pieces:
        tokens = count_tokens(piece)
        if current and used + tokens > budget:
            parts.append(sep.join(current))
            current, used = [], 0
        current.append(piece)
        used += tokens
    if current:
        parts.append(sep.join(current))
    return parts


def _table_parts(cells: list[TableCell], budget: int) -> list[tuple[str, list[TableCell]]]:
    """A table cut between rows into tables within ``budget``, each with the
    first row as its header row; each with the cells of its rows below
    the header."""
    rows: dict[int, list[TableCell]] = {}
    for cell in cells:
        rows.setdefault(cell.row, []).append(cell)
    order = sorted(rows)
    header, body = rows[order[0]], [rows[r] for r in order[1:]]
    parts: list[tuple[str, list[TableCell]]] = []
    current: list[list[TableCell]] = []
    for row in body:
        candidate = _renumbered(header, current + [row])
        if current and count_tokens(table_markdown(candidate)) > budget:
            parts.append((table_markdown(_renumbered(header, current)), [c for r in current for c in r]))
            current = [row]
        else:
            current.append(row)
    if current or not parts:
        parts.append((table_markdown(_renumbered(header, current)), [c for r in current for c in r]))
    return parts


def _renumbered(header: list[TableCell], rows: list[list[TableCell]]) -> list[TableCell]:
    """Cells of ``header`` then ``rows``, renumbered from row 0, spans cut to
    the rows kept."""
    out = [c.model_copy(update={"row": 0, "row_span": 1}) for c in header]
    for i, row in enumerate(rows, start=1):
        out += [c.model_copy(update={"row": i, "row_span": 1}) for c in row]
    return out
