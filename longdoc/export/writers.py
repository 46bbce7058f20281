"""Streaming export writers.

``open_exports(out_dir, stem, formats, header)`` returns an :class:`ExportSet`;
feed it pages in order with ``write_page`` and finish with ``close(status,
errors, timings)``. Each format is written to ``<stem>.<ext>.partial`` and
renamed to ``<stem>.<ext>`` only on a successful close; ``abort()`` removes
the partial files.

The JSON file is the :class:`~longdoc.model.Document` schema, written
incrementally: header fields, then ``"pages": [ … ]`` one page at a time,
then status, errors and timings.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TextIO

from longdoc.errors import OutputError
from longdoc.export.markdown import page_markdown
from longdoc.export.text import PAGE_SEPARATOR, page_text
from longdoc.model import DocumentStatus, ErrorInfo, Page

FORMATS = ("md", "json", "txt")


class ExportSet:
    def __init__(self, out_dir: Path, stem: str, formats: tuple[str, ...], header: dict[str, Any]):
        unknown = [f for f in formats if f not in FORMATS]
        if unknown or not formats:
            raise ValueError(f"unknown export formats {unknown}; known: {FORMATS}")
        self.paths = {fmt: out_dir / f"{stem}.{fmt}" for fmt in formats}
        self._files: dict[str, TextIO] = {}
        self._pages = 0
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
            for fmt, path in self.paths.items():
                self._files[fmt] = open(_partial(path), "w", encoding="utf-8")
        except OSError as exc:
            self.abort()
            raise OutputError(f"Cannot write exports to {out_dir}: {exc.strerror or exc}.") from exc
        if "json" in self._files:
            head = json.dumps(header, ensure_ascii=False)
            self._files["json"].write(head[:-1] + ', "pages": [\n')

    def write_page(self, page: Page) -> None:
        first = self._pages == 0
        self._pages += 1
        try:
            if (f := self._files.get("md")) is not None:
                f.write(("" if first else "\n\n") + page_markdown(page))
            if (f := self._files.get("txt")) is not None:
                f.write(("" if first else PAGE_SEPARATOR) + page_text(page))
            if (f := self._files.get("json")) is not None:
                f.write(("" if first else ",\n") + page.model_dump_json())
        except OSError as exc:
            self.abort()
            raise OutputError(f"Writing exports failed: {exc.strerror or exc}.") from exc

    def close(self, status: DocumentStatus, errors: list[ErrorInfo], timings: dict[str, float]) -> dict[str, Path]:
        """Finish every file and move it to its final name; returns the paths."""
        try:
            if (f := self._files.get("json")) is not None:
                tail = {
                    "status": status.value,
                    "errors": [e.model_dump(mode="json") for e in errors],
                    "timings": timings,
                }
                f.write("\n], " + json.dumps(tail, ensure_ascii=False)[1:] + "\n")
            for fmt in ("md", "txt"):
                if (f := self._files.get(fmt)) is not None:
                    f.write("\n")
            for fmt, f in self._files.items():
                f.flush()
                os.fsync(f.fileno())
                f.close()
                os.replace(_partial(self.paths[fmt]), self.paths[fmt])
        except OSError as exc:
            self.abort()
            raise OutputError(f"Finishing exports failed: {exc.strerror or exc}.") from exc
        self._files = {}
        return dict(self.paths)

    def abort(self) -> None:
        for fmt, f in list(self._files.items()):
            try:
                f.close()
            finally:
                _partial(self.paths[fmt]).unlink(missing_ok=True)
        self._files = {}


def _partial(path: Path) -> Path:
    return path.with_name(path.name + ".partial")


def open_exports(out_dir: str | Path, stem: str, formats: tuple[str, ...], header: dict[str, Any]) -> ExportSet:
    return ExportSet(Path(out_dir), stem, tuple(formats), header)
