"""Streaming export writers.

``open_exports(out_dir, stem, formats, header, context)`` returns an
:class:`ExportSet`; feed it pages in order with ``write_page`` and finish
with ``close(status, errors, timings)``. Each format is written to
``<file>.partial`` and renamed to its final name (:data:`FILE_NAMES`) only
on a successful close; ``abort()`` removes the partial files.

- ``md``, ``txt``: the main text, page by page (furniture too when
  ``context.furniture``); Markdown writes a list, table or code listing
  continued over a page break as one (:class:`~longdoc.export.markdown.MarkdownJoiner`);
- ``json``: the :class:`~longdoc.model.Document` schema, written
  incrementally (header fields, then ``"pages": [ … ]`` one page at a time,
  then status, review pages — those :meth:`~longdoc.model.Page.needs_review`
  — errors and timings);
- ``pdf``: the original made searchable (:mod:`searchable_pdf`);
- ``chunks``: JSON Lines for retrieval (:mod:`chunks`);
- ``docling``: a DoclingDocument (:mod:`docling`).
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

from longdoc.config import LimitSettings
from longdoc.errors import LongdocError, OutputError
from longdoc.export.chunks import ChunkWriter
from longdoc.export.docling import DoclingWriter
from longdoc.export.formats import FILE_NAMES, FORMATS
from longdoc.export.markdown import MarkdownJoiner
from longdoc.export.searchable_pdf import SearchablePdfWriter
from longdoc.export.text import PAGE_SEPARATOR, page_text
from longdoc.model import DocumentStatus, ErrorInfo, Page


@dataclass(frozen=True)
class ExportContext:
    """What the exports beyond the page text need: the original document
    (pdf), the sandbox limits to open it under (pdf), the chunk budget,
    whether md, txt and chunks keep furniture (headers, footers, page
    numbers; the JSON always has it)."""

    original: Path | None = None
    limits: LimitSettings = field(default_factory=LimitSettings)
    chunk_tokens: int = 512
    furniture: bool = False


class _Writer(Protocol):
    def write_page(self, page: Page) -> None: ...

    def close(self, status: DocumentStatus, errors: list[ErrorInfo], timings: dict[str, float]) -> None: ...

    def abort(self) -> None: ...


class _TextFile:
    """A text file written to ``<path>.partial`` and renamed on close."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.f: TextIO = open(_partial(path), "w", encoding="utf-8")  # noqa: SIM115  (closed by finish/abort)

    def finish(self) -> None:
        self.f.flush()
        os.fsync(self.f.fileno())
        self.f.close()
        os.replace(_partial(self.path), self.path)

    def abort(self) -> None:
        self.f.close()
        _partial(self.path).unlink(missing_ok=True)


class _Text(_TextFile):
    """Plain text: each page's text, joined by the page separator."""

    def __init__(self, path: Path, furniture: bool) -> None:
        super().__init__(path)
        self.furniture, self.first = furniture, True

    def write_page(self, page: Page) -> None:
        self.f.write(("" if self.first else PAGE_SEPARATOR) + page_text(page, furniture=self.furniture))
        self.first = False

    def close(self, status: DocumentStatus, errors: list[ErrorInfo], timings: dict[str, float]) -> None:
        self.f.write("\n")
        self.finish()


class _Markdown(_TextFile):
    def __init__(self, path: Path, furniture: bool) -> None:
        super().__init__(path)
        self.joiner = MarkdownJoiner(furniture=furniture)

    def write_page(self, page: Page) -> None:
        self.f.write(self.joiner.page(page))

    def close(self, status: DocumentStatus, errors: list[ErrorInfo], timings: dict[str, float]) -> None:
        self.f.write(self.joiner.close() + "\n")
        self.finish()


class _Json(_TextFile):
    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        super().__init__(path)
        self.first = True
        self.review: list[int] = []
        head = json.dumps(header, ensure_ascii=False)
        self.f.write(head[:-1] + ', "pages": [\n')

    def write_page(self, page: Page) -> None:
        self.f.write(("" if self.first else ",\n") + page.model_dump_json())
        self.first = False
        if page.needs_review():
            self.review.append(page.number)

    def close(self, status: DocumentStatus, errors: list[ErrorInfo], timings: dict[str, float]) -> None:
        tail = {"status": status.value, "review_pages": self.review,
                "errors": [e.model_dump(mode="json") for e in errors], "timings": timings}
        self.f.write("\n], " + json.dumps(tail, ensure_ascii=False)[1:] + "\n")
        self.finish()


class _Chunks(_TextFile):
    def __init__(self, path: Path, sha256: str, budget: int, furniture: bool) -> None:
        super().__init__(path)
        self.chunks = ChunkWriter(self.f, sha256, budget, furniture=furniture)

    def write_page(self, page: Page) -> None:
        self.chunks.write_page(page)

    def close(self, status: DocumentStatus, errors: list[ErrorInfo], timings: dict[str, float]) -> None:
        self.chunks.close()
        self.finish()


class _Summaryless:
    """A writer whose ``close`` needs no document summary (pdf, docling)."""

    def __init__(self, writer: DoclingWriter | SearchablePdfWriter) -> None:
        self.writer = writer

    def write_page(self, page: Page) -> None:
        self.writer.write_page(page)

    def close(self, status: DocumentStatus, errors: list[ErrorInfo], timings: dict[str, float]) -> None:
        self.writer.close()

    def abort(self) -> None:
        self.writer.abort()


class ExportSet:
    def __init__(self, out_dir: Path, stem: str, formats: tuple[str, ...], header: dict[str, Any],
                 context: ExportContext | None = None) -> None:
        unknown = [f for f in formats if f not in FORMATS]
        if unknown or not formats:
            raise ValueError(f"unknown export formats {unknown}; known: {FORMATS}")
        context = context or ExportContext()
        self.paths = {fmt: out_dir / f"{stem}{FILE_NAMES[fmt]}" for fmt in formats}
        self._writers: dict[str, _Writer] = {}
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
            for fmt, path in self.paths.items():
                self._writers[fmt] = _open(fmt, path, header, context)
        except OSError as exc:
            self.abort()
            raise OutputError(f"Cannot write exports to {out_dir}: {exc.strerror or exc}.") from exc
        except BaseException:
            self.abort()
            raise

    def write_page(self, page: Page) -> None:
        try:
            for writer in self._writers.values():
                writer.write_page(page)
        except OSError as exc:
            self.abort()
            raise OutputError(f"Writing exports failed: {exc.strerror or exc}.") from exc

    def close(self, status: DocumentStatus, errors: list[ErrorInfo], timings: dict[str, float]) -> dict[str, Path]:
        """Finish every file and move it to its final name; returns the paths."""
        try:
            for fmt in list(self._writers):
                self._writers[fmt].close(status, errors, timings)
                del self._writers[fmt]
        except OSError as exc:
            self.abort()
            raise OutputError(f"Finishing exports failed: {exc.strerror or exc}.") from exc
        except LongdocError:
            self.abort()
            raise
        return dict(self.paths)

    def abort(self) -> None:
        for writer in self._writers.values():
            with contextlib.suppress(OSError):
                writer.abort()
        self._writers = {}


def _open(fmt: str, path: Path, header: dict[str, Any], context: ExportContext) -> _Writer:
    source = header.get("source") or {}
    if fmt == "md":
        return _Markdown(path, context.furniture)
    if fmt == "txt":
        return _Text(path, context.furniture)
    if fmt == "json":
        return _Json(path, header)
    if fmt == "chunks":
        return _Chunks(path, source.get("sha256", ""), context.chunk_tokens, context.furniture)
    if fmt == "docling":
        return _Summaryless(DoclingWriter(path, source.get("name", "document"), source.get("sha256", ""),
                                          source.get("media_type", "application/pdf")))
    return _Summaryless(SearchablePdfWriter(path, context.original, context.limits))


def _partial(path: Path) -> Path:
    return path.with_name(path.name + ".partial")


def open_exports(out_dir: str | Path, stem: str, formats: tuple[str, ...], header: dict[str, Any],
                 context: ExportContext | None = None) -> ExportSet:
    return ExportSet(Path(out_dir), stem, tuple(formats), header, context)
