"""The FastAPI application: wiring, error translation, upload size guard.

Errors are translated in exactly one place (:func:`_longdoc_error`): every
:class:`~longdoc.errors.LongdocError` becomes ``{"error": {code, message,
hint, retryable, context}}`` with its HTTP status (and ``Retry-After`` when
it has one). Request validation errors become 422 ``invalid_request``;
anything unexpected becomes a logged 500 ``internal_error`` without details.
"""

from __future__ import annotations

import logging
import uuid
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from longdoc import __version__
from longdoc.config import Settings
from longdoc.errors import LongdocError, UploadTooLarge
from longdoc.service.container import Container
from longdoc.service.deps import RateLimiter
from longdoc.service.routes import admin, jobs, ops

log = logging.getLogger("longdoc.service")

UPLOAD_PATHS = ("/v1/jobs", "/v1/parse")
MULTIPART_OVERHEAD = 64 * 1024


def create_app(settings: Settings, container: Container | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI):
        c = container or Container(settings)
        app.state.container = c
        app.state.rate_limiter = RateLimiter(settings.service.rate_limit_per_minute)
        c.start()
        log.info("service started", extra={"version": __version__, "port": settings.service.port})
        try:
            yield
        finally:
            log.info("service stopping")
            c.stop()

    app = FastAPI(
        title="longdoc", version=__version__, lifespan=lifespan,
        description="Long documents to structured text in reading order. Auth: `Authorization: Bearer <api key>`.",
    )
    app.include_router(jobs.router)
    app.include_router(ops.router)
    app.include_router(admin.router)
    app.add_exception_handler(LongdocError, _longdoc_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
    limit = settings.limits.max_upload_mb * 2**20 + MULTIPART_OVERHEAD
    app.add_middleware(UploadSizeGuard, max_body_bytes=limit, max_upload_mb=settings.limits.max_upload_mb)
    return app


def error_response(exc: LongdocError) -> JSONResponse:
    headers = {}
    if "retry_after" in exc.context:
        headers["Retry-After"] = str(exc.context["retry_after"])
    return JSONResponse(status_code=exc.http_status, content={"error": exc.to_dict()}, headers=headers)


async def _longdoc_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, LongdocError)
    container = getattr(request.app.state, "container", None)
    if container is not None:
        container.metrics.errors.labels(exc.code).inc()
    log.info("request refused", extra={"code": exc.code, "status": exc.http_status, "path": request.url.path,
                                       "tenant": getattr(request.state, "tenant", None)})
    return error_response(exc)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())[:2000]
    body = {"code": "invalid_request", "message": f"Invalid request: {problems}",
            "hint": "See the OpenAPI description at /docs.", "retryable": False, "context": {}}
    return JSONResponse(status_code=422, content={"error": body})


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    body = {"code": code, "message": str(exc.detail), "hint": "See the OpenAPI description at /docs.",
            "retryable": False, "context": {}}
    return JSONResponse(status_code=exc.status_code, content={"error": body}, headers=getattr(exc, "headers", None))


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    incident = uuid.uuid4().hex[:12]
    log.exception("unexpected error", extra={"incident": incident, "path": request.url.path})
    body = {"code": "internal_error", "message": f"Internal error (incident {incident}).",
            "hint": LongdocError.hint, "retryable": True, "context": {}}
    return JSONResponse(status_code=500, content={"error": body})


class UploadSizeGuard:
    """Refuses an upload over the limit with 413 *before* reading its body
    when it declares a Content-Length, and stops reading it as soon as the
    limit is passed when it does not (chunked)."""

    def __init__(self, app: ASGIApp, max_body_bytes: int, max_upload_mb: int) -> None:
        self.app, self.max_body_bytes, self.max_upload_mb = app, max_body_bytes, max_upload_mb

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" or scope.get("path") not in UPLOAD_PATHS:
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:
            try:
                too_big = int(declared) > self.max_body_bytes
            except ValueError:
                too_big = False
            if too_big:
                await self._refuse(send)
                return
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
                await self._refuse(send)

        await self.app(scope, guarded_receive, guarded_send)

    async def _refuse(self, send: Send) -> None:
        exc = UploadTooLarge(f"The upload is larger than {self.max_upload_mb} MB.", limit_mb=self.max_upload_mb)
        await error_response(exc)({"type": "http"}, _no_receive, send)


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}
