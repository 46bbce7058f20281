"""The export formats, in one place: their names, which are written when
none are asked for, each one's file name, media type and label. The CLI,
the writers, the store's keys, the API's schemas and routes read them from
here, and the console from ``GET /v1/meta``."""

from __future__ import annotations

from typing import Literal, get_args

ExportFormat = Literal["md", "json", "txt", "pdf", "chunks", "docling"]
FORMATS: tuple[str, ...] = get_args(ExportFormat)
#: the formats written when none are asked for
DEFAULT_FORMATS: tuple[str, ...] = ("md", "json", "txt")
#: ``<stem>`` + this is each format's file name
FILE_NAMES = {"md": ".md", "json": ".json", "txt": ".txt", "pdf": ".pdf", "chunks": ".chunks.jsonl",
              "docling": ".docling.json"}
MEDIA_TYPES = {"md": "text/markdown; charset=utf-8", "json": "application/json",
               "txt": "text/plain; charset=utf-8", "pdf": "application/pdf",
               "chunks": "application/jsonl; charset=utf-8", "docling": "application/json"}
#: what each format is called where people choose it (the console's buttons, the CLI's help)
LABELS = {"md": "Markdown", "json": "JSON", "txt": "Text", "pdf": "Searchable PDF", "chunks": "Chunks (JSONL)",
          "docling": "Docling JSON"}
