"""The FastAPI application: wiring, error translation, the upload gate.

Errors are translated in exactly one place (:func:`_longdoc_error`): every
:class:`~longdoc.errors.LongdocError` becomes ``{"error": {code, message,
hint, retryable, context}}`` with its HTTP status (and ``Retry-After`` when
it has one). Request validation errors become 422 ``invalid_request``; a
body that is not valid multipart on an upload path 400 ``invalid_upload``;
anything unexpected becomes a logged 500 ``internal_error`` without details.

Uploads pass :class:`UploadGate` before the application reads a byte of
their body: the API key is checked first (401 or 429 without reading the
body, and the connection closed), then the declared size (413).

With ``service.audit`` every request that reads or changes a tenant's data,
every admin action and every failed authentication is recorded by
:class:`~longdoc.service.audit.AuditTrail` (outside the upload gate, so its
refusals are recorded too); the error handlers note their code for it.

With ``service.admin_port`` the admin API is apart: :class:`AdminApart`
answers 404 for /admin on the public listener, and for everything but
/admin and /healthz on the admin listener (whose requests
:func:`on_admin_listener` marks; see :mod:`longdoc.service.listeners`).
"""

from __future__ import annotations

import logging
import uuid
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from longdoc import __version__
from longdoc.config import Settings
from longdoc.errors import InvalidUpload, LongdocError, UploadTooLarge
from longdoc.service import audit
from longdoc.service.container import Container
from longdoc.service.deps import AUTHENTICATED_KEY, authenticate
from longdoc.service.routes import admin, console, jobs, ops

log = logging.getLogger("longdoc.service")

UPLOAD_PATHS = ("/v1/jobs", "/v1/parse")
MULTIPART_OVERHEAD = 64 * 1024
#: the scope key naming the listener a request came in on (absent: the public one)
LISTENER_KEY = "longdoc.listener"
ADMIN_LISTENER = "admin"
ADMIN_PREFIX = admin.router.prefix
#: what the admin listener serves besides /admin (a liveness probe)
ADMIN_LISTENER_EXTRA = ("/healthz",)


def create_app(settings: Settings, container: Container | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI):
        c = container or Container(settings)
        app.state.container = c
        c.start()
        log.info("service started", extra={"version": __version__, "port": settings.service.port})
        try:
            yield
        finally:
            log.info("service stopping")
            c.stop()

    app = FastAPI(
        title="longdoc", version=__version__, lifespan=lifespan,
        description="Long documents to structured text in reading order. Auth: `Authorization: Bearer <api key>`. "
                    "A web console is at [/console/](/console/).",
    )
    app.include_router(jobs.router)
    app.include_router(ops.router)
    apart = settings.service.admin_port is not None
    app.include_router(admin.router, include_in_schema=not apart)  # /docs describes the public listener
    console.mount(app)
    app.add_exception_handler(LongdocError, _longdoc_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
    limit = settings.limits.max_upload_mb * 2**20 + MULTIPART_OVERHEAD
    app.add_middleware(UploadGate, max_body_bytes=limit, max_upload_mb=settings.limits.max_upload_mb)
    if settings.service.audit:
        app.add_middleware(audit.AuditTrail)  # outside the gate: its refusals are recorded too
    if apart:
        app.add_middleware(AdminApart)  # outermost: a path a listener does not serve goes no further
    return app


def error_response(exc: LongdocError, *, close: bool = False) -> JSONResponse:
    """The JSON error body with its status (``close``: end the connection
    after it, for a request whose body is left unread)."""
    headers = {}
    if "retry_after" in exc.context:
        headers["Retry-After"] = str(exc.context["retry_after"])
    if close:
        headers["Connection"] = "close"
    return JSONResponse(status_code=exc.http_status, content={"error": exc.to_dict()}, headers=headers)


async def _longdoc_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, LongdocError)
    audit.note_error(request.scope, exc.code)
    container = getattr(request.app.state, "container", None)
    if container is not None:
        container.metrics.errors.labels(exc.code).inc()
    log.info("request refused", extra={"code": exc.code, "status": exc.http_status, "path": request.url.path,
                                       "tenant": getattr(request.state, "tenant", None)})
    return error_response(exc)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())[:2000]
    audit.note_error(request.scope, "invalid_request")
    body = {"code": "invalid_request", "message": f"Invalid request: {problems}",
            "hint": "See the OpenAPI description at /docs.", "retryable": False, "context": {}}
    return JSONResponse(status_code=422, content={"error": body})


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400 and request.url.path in UPLOAD_PATHS:  # the multipart body did not parse
        return await _longdoc_error(request, InvalidUpload(f"The upload is not valid multipart/form-data ({exc.detail})."))
    audit.note_error(request.scope, _plain_code(exc.status_code))
    return _plain_error(exc.status_code, str(exc.detail), getattr(exc, "headers", None))


def _plain_code(status: int) -> str:
    return {404: "not_found", 405: "method_not_allowed"}.get(status, "http_error")


def _plain_error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """An HTTP error that is not a LongdocError (404, 405, ...) in the same envelope."""
    code = _plain_code(status)
    body = {"code": code, "message": message, "hint": "See the OpenAPI description at /docs.",
            "retryable": False, "context": {}}
    return JSONResponse(status_code=status, content={"error": body}, headers=headers)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    incident = uuid.uuid4().hex[:12]
    log.exception("unexpected error", extra={"incident": incident, "path": request.url.path})
    body = {"code": "internal_error", "message": f"Internal error (incident {incident}).",
            "hint": LongdocError.hint, "retryable": True, "context": {}}
    return JSONResponse(status_code=500, content={"error": body})


class UploadGate:
    """Guards the upload paths before the application reads their body:

    1. authenticates the API key (the key goes to ``scope["state"]`` for the
       route's dependency); a missing or wrong key is answered 401 (or 429
       when the address failed too often) with ``Connection: close``,
       without reading the body;
    2. refuses a declared ``Content-Length`` over the limit with 413;
    3. cuts a chunked body off once it passes the limit (413).
    """

    def __init__(self, app: ASGIApp, max_body_bytes: int, max_upload_mb: int) -> None:
        self.app, self.max_body_bytes, self.max_upload_mb = app, max_body_bytes, max_upload_mb

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" or scope.get("path") not in UPLOAD_PATHS:
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        try:
            await self._authenticate(scope)
        except LongdocError as exc:
            await _metered(scope, exc)
            await error_response(exc, close=True)(scope, _no_receive, send)
            return
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                too_big = int(declared) > self.max_body_bytes
            except ValueError:
                too_big = False
            if too_big:
                await self._refuse(scope, send)
                return
        await self._guarded(scope, receive, send)

    async def _authenticate(self, scope: Scope) -> None:
        """The upload's key, by the rule of every route (:func:`authenticate`: one Authorization header)."""
        container = scope["app"].state.container
        key = await run_in_threadpool(authenticate, container.auth, scope)
        scope.setdefault("state", {})[AUTHENTICATED_KEY] = key

    async def _guarded(self, scope: Scope, receive: Receive, send: Send) -> None:
        seen = 0
        over = False
        refused = False

        async def guarded_receive() -> Message:
            # Past the limit the body is cut short, so the app fails to parse
            # it; guarded_send then answers 413 instead of the app.
            nonlocal seen, over
            if over:
                return {"type": "http.request", "body": b"", "more_body": False}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body_bytes:
                    over = True
                    return {"type": "http.request", "body": b"", "more_body": False}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal refused
            if not over:
                await send(message)
            elif not refused and message["type"] == "http.response.start":
                refused = True
                await self._refuse(scope, send)

        await self.app(scope, guarded_receive, guarded_send)

    async def _refuse(self, scope: Scope, send: Send) -> None:
        exc = UploadTooLarge(f"The upload is larger than {self.max_upload_mb} MB.", limit_mb=self.max_upload_mb)
        await _metered(scope, exc)
        await error_response(exc, close=True)(scope, _no_receive, send)


def on_admin_listener(app: ASGIApp) -> ASGIApp:
    """``app`` as the admin listener serves it: every request marked as come
    in there (``scope[LISTENER_KEY] == ADMIN_LISTENER``)."""

    async def marked(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            scope = {**scope, LISTENER_KEY: ADMIN_LISTENER}
        await app(scope, receive, send)

    return marked


class AdminApart:
    """With ``service.admin_port``: /admin is served only to requests that
    came in on the admin listener, which is served nothing else but
    :data:`ADMIN_LISTENER_EXTRA`; anything else is answered 404 as an
    unknown path is (the body is not read)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._served(scope):
            await _plain_error(404, "Not Found")(scope, receive, send)
            return
        await self.app(scope, receive, send)

    @staticmethod
    def _served(scope: Scope) -> bool:
        path = scope.get("path", "")
        is_admin = path == ADMIN_PREFIX or path.startswith(ADMIN_PREFIX + "/")
        if scope.get(LISTENER_KEY) == ADMIN_LISTENER:
            return is_admin or path in ADMIN_LISTENER_EXTRA
        return not is_admin


async def _metered(scope: Scope, exc: LongdocError) -> None:
    audit.note_error(scope, exc.code)
    container = getattr(scope["app"].state, "container", None)
    if container is not None:
        container.metrics.errors.labels(exc.code).inc()
    log.info("request refused", extra={"code": exc.code, "status": exc.http_status, "path": scope.get("path")})


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}
