"""The FastAPI application: wiring, error translation, the upload gate.

Errors are translated in exactly one place (:func:`_longdoc_error`): every
:class:`~longdoc.errors.LongdocError` becomes ``{"error": {code, message,
hint, retryable, context}}`` with its HTTP status (and ``Retry-After`` when
it has one). Request validation errors become 422 ``invalid_request``; a
body that is not valid multipart on an upload path 400 ``invalid_upload``;
anything unexpected becomes a logged 500 ``internal_error`` without details.

Uploads pass :class:`UploadGate` before the application reads a byte of
their body: the API key is checked first (401 or 429 without reading the
body, and the connection closed), then the declared size (413). /admin
requests pass :class:`AdminGate` the same way: the admin token first (403
or 429), then a body cap of :data:`ADMIN_MAX_BODY_BYTES` (413
``body_too_large``), on whichever listener serves /admin.

The API docs (``/docs``, Swagger UI, and ``/redoc``) load their scripts and
styles from this server (:func:`_api_docs`, files of the pinned
``fastapi-offline`` package), not from a CDN: an air-gapped site has none.

With ``service.audit`` every request that reads or changes a tenant's data,
every admin action and every failed authentication is recorded by
:class:`~longdoc.audit.middleware.AuditTrail` (outside the upload gate, so its
refusals are recorded too); the error handlers note their code for it.

With ``service.admin_port`` the admin API is apart: :class:`AdminApart`
answers 404 for /admin on the public listener, and for everything but
/admin and /healthz on the admin listener (whose requests
:func:`on_admin_listener` marks; see :mod:`longdoc.service.listeners`).
"""

from __future__ import annotations

import importlib.resources
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from longdoc import __version__
from longdoc.audit import middleware as audit
from longdoc.config import Settings
from longdoc.errors import BodyTooLarge, InvalidUpload, LongdocError, UploadTooLarge
from longdoc.service.container import Container
from longdoc.service.deps import AUTHENTICATED_KEY, authenticate, require_admin
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
#: the largest body an /admin request may have (its JSON is a few hundred bytes)
ADMIN_MAX_BODY_BYTES = 64 * 1024
#: where /docs and /redoc load their scripts and styles from
DOCS_ASSETS = "/docs/assets"


def create_app(settings: Settings, container: Container | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
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
        title="longdoc", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
        description="Long documents to structured text in reading order. Auth: `Authorization: Bearer <api key>`. "
                    "A web console is at [/console/](/console/).",
    )
    app.include_router(jobs.router)
    app.include_router(ops.router)
    apart = settings.service.admin_port is not None
    app.include_router(admin.router, include_in_schema=not apart)  # /docs describes the public listener
    console.mount(app)
    _api_docs(app)
    app.add_exception_handler(LongdocError, _longdoc_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
    limit = settings.limits.max_upload_mb * 2**20 + MULTIPART_OVERHEAD
    app.add_middleware(UploadGate, max_body_bytes=limit, max_upload_mb=settings.limits.max_upload_mb)
    app.add_middleware(AdminGate, max_body_bytes=ADMIN_MAX_BODY_BYTES)
    if settings.service.audit:
        app.add_middleware(audit.AuditTrail)  # outside the gate: its refusals are recorded too
    if apart:
        app.add_middleware(AdminApart)  # outermost: a path a listener does not serve goes no further
    return app


def _api_docs(app: FastAPI) -> None:
    """``/docs`` (Swagger UI) and ``/redoc`` for ``app``'s OpenAPI
    description, their scripts, styles and icon served from
    :data:`DOCS_ASSETS` (the files of the ``fastapi-offline`` package):
    nothing is fetched from elsewhere."""
    assets = importlib.resources.files("fastapi_offline") / "static"
    app.mount(DOCS_ASSETS, StaticFiles(directory=str(assets)), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(openapi_url=f"{root}{app.openapi_url}", title=f"{app.title} - API",
                                   swagger_js_url=f"{root}{DOCS_ASSETS}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{root}{DOCS_ASSETS}/swagger-ui.css",
                                   swagger_favicon_url=f"{root}{DOCS_ASSETS}/favicon.png",
                                   oauth2_redirect_url=None)

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(openapi_url=f"{root}{app.openapi_url}", title=f"{app.title} - API",
                              redoc_js_url=f"{root}{DOCS_ASSETS}/redoc.standalone.js",
                              redoc_favicon_url=f"{root}{DOCS_ASSETS}/favicon.png", with_google_fonts=False)


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


class BodyGate:
    """Guards a request before the application reads its body:

    1. checks its credentials from the headers (:meth:`authenticate`); a
       refusal (401, 403, 429) is answered with ``Connection: close``,
       without reading the body;
    2. refuses a declared ``Content-Length`` over ``max_body_bytes`` with
       413 (:meth:`too_large`);
    3. cuts a chunked body off once it passes the limit (413).

    Subclasses say which requests it guards and how they authenticate.
    """

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app, self.max_body_bytes = app, max_body_bytes

    def guards(self, scope: Scope) -> bool:
        raise NotImplementedError

    async def authenticate(self, scope: Scope) -> None:
        """Return if the request's credentials are good; else raise."""
        raise NotImplementedError

    def too_large(self) -> LongdocError:
        raise NotImplementedError

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.guards(scope):
            await self.app(scope, receive, send)
            return
        try:
            await self.authenticate(scope)
        except LongdocError as exc:
            await _metered(scope, exc)
            await error_response(exc, close=True)(scope, _no_receive, send)
            return
        if _declared_length(scope) > self.max_body_bytes:
            await self._refuse(scope, send)
            return
        await self._guarded(scope, receive, send)

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
        exc = self.too_large()
        await _metered(scope, exc)
        await error_response(exc, close=True)(scope, _no_receive, send)


class UploadGate(BodyGate):
    """Guards the upload paths (:data:`UPLOAD_PATHS`): the API key is
    authenticated (and goes to ``scope["state"]`` for the route's
    dependency), a missing or wrong one answered 401 (or 429 when the
    address failed too often); over ``limits.max_upload_mb``: 413
    ``upload_too_large``."""

    def __init__(self, app: ASGIApp, max_body_bytes: int, max_upload_mb: int) -> None:
        super().__init__(app, max_body_bytes)
        self.max_upload_mb = max_upload_mb

    def guards(self, scope: Scope) -> bool:
        return scope.get("method") == "POST" and scope.get("path") in UPLOAD_PATHS

    async def authenticate(self, scope: Scope) -> None:
        """The upload's key, by the rule of every route (:func:`authenticate`: one Authorization header)."""
        container = scope["app"].state.container
        key = await run_in_threadpool(authenticate, container.auth, scope)
        scope.setdefault("state", {})[AUTHENTICATED_KEY] = key

    def too_large(self) -> LongdocError:
        return UploadTooLarge(f"The upload is larger than {self.max_upload_mb} MB.", limit_mb=self.max_upload_mb)


class AdminGate(BodyGate):
    """Guards /admin (every method, on whichever listener serves it): the
    admin token is checked by the admin routes' own rule
    (:func:`~longdoc.service.deps.require_admin`), a missing or wrong one
    answered 403 ``admin_forbidden`` (or 429); a body over
    ``max_body_bytes`` (:data:`ADMIN_MAX_BODY_BYTES`): 413
    ``body_too_large``."""

    def guards(self, scope: Scope) -> bool:
        return is_admin_path(scope.get("path", ""))

    async def authenticate(self, scope: Scope) -> None:
        await run_in_threadpool(require_admin, Request(scope), scope["app"].state.container)

    def too_large(self) -> LongdocError:
        return BodyTooLarge(f"An admin request's body may be at most {self.max_body_bytes // 1024} KiB.",
                            limit_bytes=self.max_body_bytes)


def is_admin_path(path: str) -> bool:
    return path == ADMIN_PREFIX or path.startswith(ADMIN_PREFIX + "/")


def _declared_length(scope: Scope) -> int:
    """The request's ``Content-Length`` (0 when absent or not a number:
    h11 has refused a malformed one already)."""
    for name, value in scope.get("headers") or ():
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return 0
    return 0


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
        is_admin = is_admin_path(path)
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
