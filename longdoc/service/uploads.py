"""Uploads received straight into the work folder, written once.

``POST /v1/jobs`` and ``POST /v1/parse`` take ``multipart/form-data`` with
the document in a ``file`` part and optional ``options`` JSON. The body is
read here as it arrives, with python-multipart's streaming parser::

    request body ──► parser ──► file part ──► WORK/upload-<random>/upload
                        │                     (counted, hashed; refused past
                        │                      limits.max_upload_mb)
                        └─────► options part (kept, at most MAX_FIELD_BYTES);
                                other parts dropped unread

so the document's bytes are on disk once: no spool in the system's
temporary folder, no second copy. The job service gives that file to the
store and removes it; the folder goes once the route has answered,
whatever happened (:func:`received_upload`).

Errors: a body that is not multipart (or has no ``file`` part) is 422
``invalid_request`` as a missing field is; a malformed or cut-short one,
or one with two ``file`` parts, 400 ``invalid_upload``; a document over
the limit 413 ``upload_too_large`` (the rest of the body, at most
``DRAIN_BYTES``, is read first so the client gets the answer).
"""

from __future__ import annotations

import codecs
import hashlib
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, BinaryIO

from fastapi import Depends, Request
from fastapi.exceptions import RequestValidationError
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from longdoc.errors import InvalidUpload, StorageError, UploadTooLarge
from longdoc.service.deps import JobsDep
from longdoc.storage.scratch import Received

if TYPE_CHECKING:
    from python_multipart.multipart import MultipartCallbacks

#: the document's part, and the options' part
FILE_FIELD, OPTIONS_FIELD = "file", "options"
#: longest ``options`` value (Starlette's own bound on a form field)
MAX_FIELD_BYTES = 2**20
#: most parts in one body (Starlette's own bound)
MAX_PARTS = 1000
#: bytes gathered before one write to disk (one thread hop each)
WRITE_BYTES = 2**20
#: most bytes read (and dropped) after the document passed the limit
DRAIN_BYTES = 2**20
_FILE_MODE = 0o600


@dataclass
class Upload:
    """A received upload: the document (in the work folder), the file name
    the client gave (``upload`` when none), the ``options`` field (None
    when absent)."""

    file: Received
    filename: str
    options: str | None


async def received_upload(request: Request, jobs: JobsDep) -> AsyncIterator[Upload]:
    """The request's upload, received into a fresh folder of the work
    folder, which is removed once the route has answered."""
    with jobs.scratch.upload() as folder:
        yield await receive_upload(request, folder / "upload", jobs.settings.limits.max_upload_mb)


#: the folder goes before the response is sent (scope "function"), so a
#: client that has its answer finds no copy left
UploadDep = Annotated[Upload, Depends(received_upload, scope="function")]


async def receive_upload(request: Request, dest: Path, max_upload_mb: int) -> Upload:
    """Read the multipart body of ``request``, writing its ``file`` part to
    ``dest`` (a new file); raises as the module docstring says."""
    media_type, params = parse_options_header(request.headers.get("content-type"))
    if media_type != b"multipart/form-data":
        raise _missing_file()
    if b"boundary" not in params:
        raise _invalid("Missing boundary in multipart.")
    charset = _charset(params.get(b"charset", b"utf-8"))
    with _Sink(dest, max_upload_mb * 2**20) as sink:
        form = _Form(sink, charset)
        try:
            parser = MultipartParser(params[b"boundary"], form.callbacks())
            stream = request.stream()
            async for chunk in stream:
                parser.write(chunk)
                if sink.over:
                    await _drain(stream)
                    break
                await sink.flush(WRITE_BYTES)
            await sink.flush(0)
        except FormParserError as exc:
            raise _invalid("Invalid multipart data.") from exc
        except ClientDisconnect as exc:
            raise _invalid("The client went away before the upload ended.") from exc
        if sink.over:
            raise UploadTooLarge(f"The upload is larger than {max_upload_mb} MB.", limit_mb=max_upload_mb)
        if not form.ended:
            raise _invalid("The body ended before its closing boundary.")
        if not form.has_file:
            raise _missing_file()
        received = sink.received()
    return Upload(received, form.filename or "upload", form.options)


class _Sink:
    """The document's bytes on their way to ``path``: gathered in memory,
    written (and hashed) in a worker thread; past ``limit`` bytes nothing
    more is kept and :attr:`over` is set."""

    def __init__(self, path: Path, limit: int) -> None:
        self.path, self.limit = path, limit
        self.size = 0
        self.over = False
        self._pending = bytearray()
        self._digest = hashlib.sha256()
        self._out: BinaryIO | None = None

    def __enter__(self) -> _Sink:
        try:
            self._out = os.fdopen(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _FILE_MODE), "wb")
        except OSError as exc:
            raise _unwritable(self.path, exc) from exc
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._out is not None
        self._out.close()

    def add(self, data: bytes) -> None:
        if self.over:
            return
        self.size += len(data)
        if self.size > self.limit:
            self.over = True
            self._pending.clear()
            return
        self._pending += data

    async def flush(self, at_least: int) -> None:
        """Write what is gathered once it is ``at_least`` bytes."""
        if self._pending and len(self._pending) >= at_least:
            block, self._pending = bytes(self._pending), bytearray()
            await run_in_threadpool(self._write, block)

    def _write(self, block: bytes) -> None:
        assert self._out is not None
        self._digest.update(block)
        try:
            self._out.write(block)
        except OSError as exc:  # a full disk
            raise _unwritable(self.path, exc) from exc

    def received(self) -> Received:
        assert self._out is not None and not self._pending, "received() before the last flush"
        try:
            self._out.flush()
        except OSError as exc:
            raise _unwritable(self.path, exc) from exc
        return Received(self.path, self.size, self._digest.hexdigest())


class _Form:
    """python-multipart's callbacks for one body: the ``file`` part goes
    to the sink, ``options`` is kept, other parts are dropped."""

    def __init__(self, sink: _Sink, charset: str) -> None:
        self.sink, self.charset = sink, charset
        self.filename: str | None = None
        self.has_file = False
        self.ended = False
        self._options: bytearray | None = None
        self._parts = 0
        self._header = bytearray()
        self._value = bytearray()
        self._disposition = b""
        self._into: Callable[[bytes], None] = _drop

    @property
    def options(self) -> str | None:
        return None if self._options is None else _decoded(bytes(self._options), self.charset)

    def callbacks(self) -> MultipartCallbacks:
        return {"on_part_begin": self._part_begin, "on_header_field": self._header_field,
                "on_header_value": self._header_value, "on_header_end": self._header_end,
                "on_headers_finished": self._headers_finished, "on_part_data": self._part_data,
                "on_end": self._end}

    def _part_begin(self) -> None:
        self._parts += 1
        if self._parts > MAX_PARTS:
            raise _invalid(f"Too many parts; at most {MAX_PARTS}.")
        self._disposition = b""
        self._into = _drop

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self._header += data[start:end]

    def _header_value(self, data: bytes, start: int, end: int) -> None:
        self._value += data[start:end]

    def _header_end(self) -> None:
        if bytes(self._header).lower() == b"content-disposition":
            self._disposition = bytes(self._value)
        self._header, self._value = bytearray(), bytearray()

    def _headers_finished(self) -> None:
        _, params = parse_options_header(self._disposition)
        if b"name" not in params:
            raise _invalid('The Content-Disposition header field "name" must be provided.')
        name = _decoded(params[b"name"], self.charset)
        if name == FILE_FIELD:
            if self.has_file:
                raise _invalid(f"The body has more than one `{FILE_FIELD}` part; send one document per request.")
            self.has_file = True
            self.filename = _decoded(params[b"filename"], self.charset) if b"filename" in params else None
            self._into = self.sink.add
        elif name == OPTIONS_FIELD:
            self._options = bytearray()
            self._into = self._option_data

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        self._into(data[start:end])

    def _option_data(self, data: bytes) -> None:
        assert self._options is not None
        if len(self._options) + len(data) > MAX_FIELD_BYTES:
            raise _invalid(f"The `{OPTIONS_FIELD}` field is over {MAX_FIELD_BYTES // 1024} KB.")
        self._options += data

    def _end(self) -> None:
        self.ended = True


def _drop(data: bytes) -> None:
    """Where the bytes of a part nobody reads go."""


async def _drain(stream: AsyncIterator[bytes]) -> None:
    """Read (and drop) at most DRAIN_BYTES more of the body."""
    read = 0
    async for chunk in stream:
        read += len(chunk)
        if read > DRAIN_BYTES:
            return


def _charset(name: bytes | str) -> str:
    try:
        return codecs.lookup(name.decode("latin-1") if isinstance(name, bytes) else name).name
    except LookupError:
        return "latin-1"


def _decoded(raw: bytes, charset: str) -> str:
    try:
        return raw.decode(charset)
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _invalid(detail: str) -> InvalidUpload:
    return InvalidUpload(f"The upload is not valid multipart/form-data ({detail}).")


def _unwritable(path: Path, exc: OSError) -> StorageError:
    return StorageError(f"Cannot write the upload to the work folder ({exc.strerror or exc}).", errno=exc.errno)


def _missing_file() -> RequestValidationError:
    """As FastAPI answers a form without its required ``file`` field."""
    return RequestValidationError([{"type": "missing", "loc": ("body", FILE_FIELD), "msg": "Field required",
                                    "input": None}])
