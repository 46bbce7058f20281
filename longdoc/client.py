"""Python client for the longdoc HTTP API (``/v1``, see the service contract).

::

    with LongdocClient("http://localhost:8000", api_key) as client:
        job = client.submit("scan.pdf", options={"formats": ["md", "json"]})
        job = client.wait(job["id"], timeout=600)
        client.result(job["id"], "md", dest="scan.md")

Jobs and pages come back as the server's JSON (plain dicts). Every failure is
a :class:`ClientError` carrying the server's ``code``, ``message``, ``hint``,
``retryable``, ``context``, the HTTP status and ``Retry-After``; transport
failures (refused connection, timeout, a TLS handshake that failed) get
``code`` ``connection_failed``, ``timeout`` or ``tls_failed`` and ``status``
None. The mapping lives in :func:`_error_from` and
:func:`_transport_errors` only. The client does not retry on its own: check
``retryable`` / ``retry_after_s``.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import httpx

from longdoc import __version__
from longdoc.errors import LongdocError
from longdoc.jobs.states import TERMINAL
from longdoc.tls import client_context

TERMINAL_STATES = frozenset(state.value for state in TERMINAL)
_MAX_PAGE_SIZE = 200  # the server's cap on ``GET /v1/jobs?limit=``
_CHUNK_BYTES = 1 << 16

Upload = str | os.PathLike[str] | IO[bytes]


class ClientError(LongdocError):
    """An API call failed. ``code`` is the server's stable code (or
    ``connection_failed`` / ``timeout`` / ``wait_timeout`` / ``bad_response``
    from the client itself); ``status`` the HTTP status (None without an
    answer); ``retry_after_s`` the server's ``Retry-After``; ``body`` the
    decoded JSON answer when there was one (e.g. the job for a 202)."""

    code = "client_error"
    http_status = 0

    def __init__(
        self,
        message: str,
        *,
        code: str,
        status: int | None,
        hint: str | None = None,
        retryable: bool = False,
        retry_after_s: float | None = None,
        body: Any = None,
        context: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message, hint=hint if hint is not None else "")
        self.context = dict(context or {})
        self.code = code  # type: ignore[misc]  # the server's code, per instance
        self.status = status
        self.http_status = status or 0  # type: ignore[misc]  # the server's, per instance
        self.retryable = retryable  # type: ignore[misc]  # the server's, per instance
        self.retry_after_s = retry_after_s
        self.body = body


class LongdocClient:
    """A connection to one longdoc server, authenticated with one API key.

    ``base_url`` may carry a path prefix (``https://host/longdoc``);
    ``timeout`` (seconds) applies to connecting and to each read;
    ``transport`` replaces the network (``httpx.MockTransport`` in tests).
    Over https the server's certificate is checked against ``ca_file``
    (``client.ca_file``; certifi's public CAs when None); ``cert_file`` and
    ``key_file`` (``client.cert_file``, ``client.key_file``) are the client
    certificate a server with mutual TLS asks for. A TLS file that does not
    load raises :class:`~longdoc.errors.ConfigError` here.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 30,
        transport: httpx.BaseTransport | None = None,
        ca_file: str | os.PathLike[str] | None = None,
        cert_file: str | os.PathLike[str] | None = None,
        key_file: str | os.PathLike[str] | None = None,
    ) -> None:
        self._timeout = timeout
        ca, cert, key = (os.fspath(p) if p is not None else None for p in (ca_file, cert_file, key_file))
        self._verify = client_context(ca)  # presigned downloads: the same trust, no client certificate
        self._http = httpx.Client(
            base_url=base_url,
            headers={"Authorization": f"Bearer {api_key}", "User-Agent": f"longdoc-client/{__version__}"},
            timeout=timeout,
            transport=transport,
            follow_redirects=False,
            verify=client_context(ca, cert, key) if cert or key else self._verify,
        )

    # --- lifecycle ------------------------------------------------------

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> LongdocClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- jobs -----------------------------------------------------------

    def submit(
        self,
        file: Upload,
        *,
        options: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Upload ``file`` (a path or a binary file object, streamed) as a new job.

        Returns ``{id, state, queue_position, links, ...}``; the server answers
        an existing job (same key, or same content and options) instead of a
        new one.
        """
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        with _opened(file) as (name, stream):
            return self._json(
                "POST", "/v1/jobs", files=_multipart(name, stream), data=_options(options), headers=headers
            )

    def get(self, job_id: str, wait: float | None = None) -> dict[str, Any]:
        """The job. With ``wait`` (seconds, ≤ 60) the server holds the answer
        until the state or progress changes or ``wait`` passes."""
        if not wait:
            return self._json("GET", f"/v1/jobs/{job_id}")
        return self._json(
            "GET",
            f"/v1/jobs/{job_id}",
            params={"wait": wait},
            timeout=httpx.Timeout(self._timeout, read=self._timeout + wait),
        )

    def wait(self, job_id: str, timeout: float | None = None, poll: float = 30.0) -> dict[str, Any]:
        """Long-poll until the job is terminal and return it.

        Raises :class:`ClientError` ``wait_timeout`` (with the last job in
        ``body``) when ``timeout`` seconds pass first.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        seen: tuple[Any, Any] | None = None
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            hold = poll if remaining is None else max(0.0, min(poll, remaining))
            started = time.monotonic()
            job = self.get(job_id, wait=min(hold, 60.0))
            if job.get("state") in TERMINAL_STATES:
                return job
            if deadline is not None and time.monotonic() >= deadline:
                raise ClientError(
                    f"Job {job_id} is still {job.get('state')} after {timeout} s.",
                    code="wait_timeout",
                    status=None,
                    retryable=True,
                    hint="Wait longer, or follow `events()` for progress.",
                    body=job,
                    context={"job_id": job_id},
                )
            progress = (job.get("state"), job.get("pages_done"))
            if progress == seen and time.monotonic() - started < 1.0:
                time.sleep(1.0)  # the server did not hold the request: do not spin
            seen = progress

    def events(self, job_id: str, *, read_timeout: float | None = 120.0) -> Iterator[dict[str, Any]]:
        """Server-sent events of the job: ``{"event", "data", "id"}`` dicts.

        ``data`` is decoded JSON when it is JSON (``progress`` carries the
        job), else the text. Comments and keep-alives are skipped. The
        iterator ends after the ``end`` event or when the server closes the
        stream. An ``error`` event (the key was revoked or expired while
        the stream was open) raises it as a :class:`ClientError` with the
        server's code. ``read_timeout`` bounds the silence between two lines.
        """
        timeout = httpx.Timeout(self._timeout, read=read_timeout)
        headers = {"Accept": "text/event-stream"}
        with (
            self._stream("GET", f"/v1/jobs/{job_id}/events", headers=headers, timeout=timeout) as response,
            _transport_errors(),
        ):
            for event in parse_sse(response.iter_lines()):
                if event["event"] == "error":
                    raise _stream_error(event["data"])
                yield event
                if event["event"] == "end":
                    return

    def page(self, job_id: str, n: int) -> dict[str, Any]:
        """Page ``n`` (1-based) of the job as the document model's Page JSON;
        ``page_not_ready`` until its page group is done."""
        return self._json("GET", f"/v1/jobs/{job_id}/pages/{int(n)}")

    def result(
        self, job_id: str, format: str = "md", dest: str | os.PathLike[str] | None = None
    ) -> bytes | Path:
        """The final result in ``format`` (md, json, txt, pdf, chunks, docling).

        Without ``dest`` returns the bytes; with ``dest`` streams them into that
        file (written under ``<dest>.partial``, renamed when complete) and
        returns its path. Raises ``job_not_finished`` (job in ``body``) while
        the job runs, the job's error when it failed or was cancelled
        (409), ``job_expired`` (410).
        """
        with self._stream("GET", f"/v1/jobs/{job_id}/result", params={"format": format},
                          allow_redirect=True) as response:
            if response.status_code == 202:
                raise _not_finished(job_id, _decode(response))
            if response.is_redirect:  # a presigned URL of the object store: fetched without our key
                return self._download(response.headers["Location"], dest)
            with _transport_errors():
                if dest is None:
                    return response.read()
                return _stream_to_file(response, Path(dest))

    def _download(self, url: str, dest: str | os.PathLike[str] | None) -> bytes | Path:
        with _transport_errors(), httpx.stream("GET", url, timeout=self._http.timeout,
                                               verify=self._verify) as response:
            if response.is_error:
                response.read()
                raise _error_from(response)
            if dest is None:
                return response.read()
            return _stream_to_file(response, Path(dest))

    def cancel(self, job_id: str) -> dict[str, Any]:
        """Cancel a queued or running job and return it.

        A job already terminal is returned unchanged (never deleted). If it
        finishes between the check and the cancel request the server deletes
        it instead (the API's DELETE does both); the job as last seen is
        returned.
        """
        job = self.get(job_id)
        if job.get("state") in TERMINAL_STATES:
            return job
        response = self._send("DELETE", f"/v1/jobs/{job_id}")
        return _decode(response) if response.status_code == 202 else job

    def delete(self, job_id: str) -> None:
        """Delete the job and its stored data, cancelling it first if it runs."""
        for _ in range(3):
            response = self._send("DELETE", f"/v1/jobs/{job_id}")
            if response.status_code == 204:
                return
            job = _decode(response)  # 202: it was cancelled; delete it now it is terminal
            if job.get("state") not in TERMINAL_STATES:
                self.wait(job_id, timeout=self._timeout)
        raise ClientError(
            f"Job {job_id} was cancelled but could not be deleted.",
            code="delete_pending",
            status=response.status_code,
            retryable=True,
            hint="Retry the delete in a moment.",
            context={"job_id": job_id},
        )

    def list(self, state: str | None = None, limit: int = 50) -> builtins.list[dict[str, Any]]:
        """The caller's jobs (newest first as the server orders them), at most
        ``limit``, following the server's cursor across pages."""
        items: builtins.list[dict[str, Any]] = []
        cursor: str | None = None
        while len(items) < limit:
            params: dict[str, Any] = {"limit": min(limit - len(items), _MAX_PAGE_SIZE)}
            if state is not None:
                params["state"] = state
            if cursor is not None:
                params["cursor"] = cursor
            body = self._json("GET", "/v1/jobs", params=params)
            items.extend(body.get("items", []))
            cursor = body.get("next")
            if not cursor or not body.get("items"):
                break
        return items[:limit]

    def parse(
        self,
        file: Upload,
        format: str = "json",
        options: dict[str, Any] | None = None,
        *,
        timeout: float | None = 300,
    ) -> dict[str, Any] | str:
        """Synchronous parse of a small input: the document JSON (``format``
        json) or the text (md, txt).

        When the server gives up waiting it answers 202 with the job, which
        carries on: this raises ``job_not_finished`` with the job in ``body``
        (``wait()`` then ``result()`` it). ``timeout`` bounds the read.
        """
        with _opened(file) as (name, stream):
            response = self._send(
                "POST",
                "/v1/parse",
                params={"format": format},
                files=_multipart(name, stream),
                data=_options(options),
                timeout=httpx.Timeout(self._timeout, read=timeout),
            )
        if response.status_code == 202:
            job = _decode(response)
            raise _not_finished(str(job.get("id", "")), job)
        if format == "json":
            return _decode(response)
        return response.text

    # --- transport ------------------------------------------------------

    def _send(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """One request, read in full; a non-2xx answer raises :class:`ClientError`."""
        with _transport_errors():
            response = self._http.request(method, url, **kwargs)
        if response.is_error or response.is_redirect:
            raise _error_from(response)
        return response

    def _json(self, method: str, url: str, **kwargs: Any) -> dict[str, Any]:
        return _decode(self._send(method, url, **kwargs))

    @contextlib.contextmanager
    def _stream(self, method: str, url: str, allow_redirect: bool = False, **kwargs: Any) -> Iterator[httpx.Response]:
        """A streamed request; a non-2xx answer (or a redirect, unless
        ``allow_redirect``) raises :class:`ClientError`."""
        with _transport_errors(), self._http.stream(method, url, **kwargs) as response:
            if response.is_error or (response.is_redirect and not allow_redirect):
                response.read()
                raise _error_from(response)
            yield response


# --- error mapping (the one place) -------------------------------------------


def _error_from(response: httpx.Response) -> ClientError:
    """The server's ``{"error": {code, message, hint, retryable, context}}`` as a ClientError."""
    status = response.status_code
    retry_after = _retry_after_s(response.headers.get("Retry-After"))
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        text = response.text.strip()[:500]
        return ClientError(
            f"HTTP {status} from {response.request.url.path}" + (f": {text}" if text else "."),
            code=f"http_{status}",
            status=status,
            retryable=status == 429 or status >= 500,
            retry_after_s=retry_after,
            body=body,
        )
    return _from_error(error, status, retry_after, body)


def _from_error(error: dict[str, Any], status: int | None, retry_after: float | None, body: Any) -> ClientError:
    """The server's error object (``{code, message, hint, retryable, context}``) as a ClientError."""
    context = error.get("context") if isinstance(error.get("context"), dict) else {}
    return ClientError(
        str(error.get("message") or f"HTTP {status}"),
        code=str(error.get("code") or f"http_{status}"),
        status=status,
        hint=error.get("hint"),
        retryable=bool(error.get("retryable", False)),
        retry_after_s=retry_after,
        body=body,
        context=context,
    )


def _stream_error(data: Any) -> ClientError:
    """An event stream's ``error`` event (``{"error": {...}}``) as a ClientError."""
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return ClientError(f"The event stream ended with an error: {str(data)[:200]}", code="bad_response",
                           status=None, body=data)
    return _from_error(error, None, None, data)


@contextlib.contextmanager
def _transport_errors() -> Iterator[None]:
    """Map httpx's transport failures into :class:`ClientError`."""
    try:
        yield
    except httpx.TimeoutException as exc:
        raise ClientError(
            f"The server did not answer in time ({type(exc).__name__}).",
            code="timeout",
            status=None,
            retryable=True,
            hint="Retry, or raise the client's timeout.",
        ) from exc
    except httpx.TransportError as exc:
        tls = _tls_error(exc)
        if tls is not None:
            raise ClientError(
                f"The TLS handshake with the server failed: {tls}.",
                code="tls_failed",
                status=None,
                hint="Check client.ca_file (the CA that signed the server's certificate) and, where the server "
                     "asks for a client certificate, client.cert_file and client.key_file.",
            ) from exc
        raise ClientError(
            f"Could not talk to the server: {exc or type(exc).__name__}.",
            code="connection_failed",
            status=None,
            retryable=True,
            hint="Check the base URL and that the server is running and reachable."
                 + (_CLOSED_OVER_TLS if _over_https(exc) else ""),
        ) from exc


#: TLS 1.3 checks a client certificate after the client's side of the
#: handshake: a refused client may see only the connection closed
_CLOSED_OVER_TLS = (" Over https, a server that requires a client certificate closes the connection of a "
                    "client without one: set client.cert_file and client.key_file.")


def _over_https(exc: httpx.TransportError) -> bool:
    try:
        return exc.request.url.scheme == "https"
    except RuntimeError:  # an error raised outside a request
        return False


def _tls_error(exc: BaseException) -> str | None:
    """What the TLS layer said, when ``exc`` was caused by an ssl error
    (a certificate not trusted, a client certificate refused)."""
    seen: BaseException | None = exc
    for _ in range(8):  # httpx → httpcore → ssl: a short chain
        if seen is None:
            break
        if isinstance(seen, ssl.SSLError):
            return getattr(seen, "verify_message", None) or seen.reason or type(seen).__name__
        seen = seen.__cause__ or seen.__context__
    return None


def _not_finished(job_id: str, job: dict[str, Any]) -> ClientError:
    return ClientError(
        f"Job {job_id} is still {job.get('state', 'running')}.",
        code="job_not_finished",
        status=202,
        retryable=True,
        hint="Wait for the job (`wait()`), then fetch the result.",
        body=job,
        context={"job_id": job_id},
    )


def _decode(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError as exc:
        raise ClientError(
            f"The server answered {response.status_code} with a body that is not JSON.",
            code="bad_response",
            status=response.status_code,
            hint="Check that the base URL points at a longdoc server.",
        ) from exc
    return body if isinstance(body, dict) else {"value": body}


def _retry_after_s(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: longdoc sends seconds


# --- uploads, downloads, SSE -------------------------------------------------


@contextlib.contextmanager
def _opened(file: Upload) -> Iterator[tuple[str, IO[bytes]]]:
    """``(filename, binary stream)`` for a path (opened here, closed after) or a file object."""
    if isinstance(file, (str, os.PathLike)):
        path = Path(file)
        try:
            stream = path.open("rb")
        except OSError as exc:
            raise ClientError(
                f"Cannot read {path}: {exc.strerror or exc}.",
                code="unreadable_path",
                status=None,
                hint="Check that the path exists, is a regular file and is readable.",
            ) from exc
        with stream:
            yield path.name, stream
    else:
        name = getattr(file, "name", None)
        yield (Path(name).name if isinstance(name, str) and name else "upload"), file


def _multipart(name: str, stream: IO[bytes]) -> dict[str, Any]:
    return {"file": (name, stream, "application/octet-stream")}


def _options(options: dict[str, Any] | None) -> dict[str, str] | None:
    return {"options": json.dumps(options)} if options else None


def _stream_to_file(response: httpx.Response, dest: Path) -> Path:
    partial = dest.with_name(dest.name + ".partial")
    try:
        with partial.open("wb") as out:
            for chunk in response.iter_bytes(_CHUNK_BYTES):
                out.write(chunk)
        partial.replace(dest)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return dest


def parse_sse(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """Events from the lines of a ``text/event-stream`` (WHATWG rules).

    ``data:`` lines of one event are joined with newlines; lines starting
    with ``:`` are comments (keep-alives); a blank line ends an event; an
    event without data is dropped; ``event`` defaults to ``message``.
    """
    name, event_id = "", None
    data: list[str] = []
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data:
                yield _sse_event(name or "message", "\n".join(data), event_id)
            name, data = "", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
        elif field == "id" and "\0" not in value:
            event_id = value
    # an event not closed by a blank line is incomplete and dropped (WHATWG)


def _sse_event(name: str, text: str, event_id: str | None) -> dict[str, Any]:
    try:
        data: Any = json.loads(text)
    except ValueError:
        data = text
    return {"event": name, "data": data, "id": event_id}
