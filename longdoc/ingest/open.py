"""The ingest entry point: a path in, a validated :class:`DocumentSource` out.

Checks, in order, each failing with a typed error:

1. the path is a readable regular file (:class:`UnreadablePath`: missing,
   a directory, a FIFO or device, permission denied, I/O error);
2. its size is within ``limits.max_upload_mb`` (:class:`UploadTooLarge`;
   1 MB = 1024 x 1024 bytes), before any content is read;
3. its type, from its first bytes (:class:`EmptyDocument` for 0 bytes,
   :class:`UnsupportedType`);
4. it opens as that type (:class:`CorruptFile`, :class:`EncryptedPdf`,
   :class:`EmptyDocument`, :class:`ImageTooLarge`);
5. its page count is within ``limits.max_pages`` (:class:`TooManyPages`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from longdoc.config import LimitSettings
from longdoc.errors import TooManyPages, UnreadablePath, UploadTooLarge
from longdoc.ingest.image import ImageSource
from longdoc.ingest.pdf import PdfSource
from longdoc.ingest.sniff import HEAD_BYTES, PDF, sniff_media_type
from longdoc.ingest.source import DocumentSource

_MB = 1024 * 1024


def open_document(path: str | Path, limits: LimitSettings, *, name: str | None = None) -> DocumentSource:
    """Open ``path`` as a PDF or image document, enforcing ``limits``,
    **in this process** (use :func:`longdoc.ingest.sandbox.open_sandboxed`
    for untrusted documents).

    ``name`` is the document's name in the source and in every message
    about its content (default: the file's name). Returns an open
    :class:`DocumentSource` (the caller closes it). Raises a
    :class:`~longdoc.errors.LongdocError` subclass for every problem with the
    input (see the module docstring); nothing is left open when it raises.
    """
    path = Path(path)
    name = name or path.name
    size = _regular_file_size(path)
    if size > limits.max_upload_mb * _MB:
        raise UploadTooLarge(
            f"{name} is {size:,} bytes ({size / _MB:.1f} MB); the limit is "
            f"{limits.max_upload_mb} MB ({limits.max_upload_mb * _MB:,} bytes).",
            size_bytes=size,
            max_upload_mb=limits.max_upload_mb,
        )
    media_type = sniff_media_type(_read_head(path))
    source: DocumentSource
    if media_type == PDF:
        source = PdfSource(path, max_pixels=min(limits.max_pixels, limits.max_render_pixels), name=name)
    else:
        source = ImageSource(
            path, media_type, max_pixels=limits.max_pixels, max_pages=limits.max_pages,
            max_render_pixels=limits.max_render_pixels, name=name,
        )
    if source.page_count > limits.max_pages:
        source.close()
        raise TooManyPages(
            f"{name} has {source.page_count} pages; the limit is {limits.max_pages}.",
            page_count=source.page_count,
            max_pages=limits.max_pages,
        )
    return source


def _regular_file_size(path: Path) -> int:
    """Size in bytes of a regular file, or UnreadablePath saying why not."""
    try:
        info = os.stat(path)
    except FileNotFoundError as exc:
        raise UnreadablePath(f"{path} does not exist.") from exc
    except PermissionError as exc:
        raise UnreadablePath(f"{path} cannot be accessed (permission denied).") from exc
    except OSError as exc:
        raise UnreadablePath(f"{path} cannot be accessed ({exc.strerror or exc}).") from exc
    if stat.S_ISDIR(info.st_mode):
        raise UnreadablePath(f"{path} is a directory, not a file.")
    if not stat.S_ISREG(info.st_mode):
        raise UnreadablePath(f"{path} is not a regular file.")
    return info.st_size


def _read_head(path: Path) -> bytes:
    try:
        with path.open("rb") as fh:
            return fh.read(HEAD_BYTES)
    except PermissionError as exc:
        raise UnreadablePath(f"{path} cannot be read (permission denied).") from exc
    except OSError as exc:
        raise UnreadablePath(f"{path} cannot be read ({exc.strerror or exc}).") from exc
