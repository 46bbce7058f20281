"""The service in this process: ``create_app(settings, container)`` with
its lifespan run, reached through :class:`httpx.ASGITransport`.

:class:`InProcessServer` offers what :class:`tests.service.conftest.Server`
offers the tests that only speak HTTP (``http``, ``create_key``, and from
:class:`~tests.service.conftest.ServiceAccess` ``admin_headers``,
``job_files``, ``store``, ``log_text``), without a
process, a port or a model: the same routes, container, database, store and
task pools as ``longdoc serve`` (embedded mode), so what these tests see is
what a client of the served process sees, apart from the socket.

httpx's ``ASGITransport`` is asynchronous; :class:`BlockingASGITransport`
runs it on an event loop of its own (an anyio blocking portal, one thread)
so the tests stay plain functions and use ``httpx.Client``, as those of the
served process do. A response is read whole before it is handed back, so
an endless stream (``/events``) belongs to the served-process tests.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from pathlib import Path
from typing import Any

import httpx
from anyio.from_thread import BlockingPortal, start_blocking_portal

from longdoc.config import load_settings
from longdoc.service.app import create_app
from longdoc.service.container import Container
from longdoc.service.logs import json_formatter
from tests.service.conftest import Key, ServiceAccess, deep_merge

BASE_URL = "http://longdoc.inprocess"


class BlockingASGITransport(httpx.BaseTransport):
    """A synchronous transport over :class:`httpx.ASGITransport` (run in ``portal``)."""

    def __init__(self, portal: BlockingPortal, app: Any) -> None:
        self.portal = portal
        self.inner = httpx.ASGITransport(app=app, client=("127.0.0.1", 50000))

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()

        async def call() -> tuple[int, list[tuple[bytes, bytes]], bytes]:
            forwarded = httpx.Request(request.method, request.url, headers=request.headers, content=body)
            response = await self.inner.handle_async_request(forwarded)
            try:
                return response.status_code, response.headers.raw, await response.aread()
            finally:
                await response.aclose()

        status, headers, content = self.portal.call(call)
        return httpx.Response(status, headers=headers, content=content, request=request)


class InProcessServer(ServiceAccess):
    """The app of ``longdoc serve`` (embedded mode) in this process."""

    def __init__(self, root: Path, **overrides: dict[str, Any]) -> None:
        self.root = root
        self.data = root / "data"
        self.data.mkdir(parents=True, exist_ok=True)
        self.admin_token = secrets.token_hex(16)
        self.log_path = root / "server.log"
        self.config = deep_merge({
            "service": {"admin_token": self.admin_token, "allow_private_callbacks": True, "warmup": False,
                        "work_dir": str(self.data / "work")},
            "inference": {"workers": 1, "page_chunk_size": 4, "chunk_overlap": 1},
            "storage": {"url": f"file://{self.data / 'store'}"},
            "database": {"url": f"sqlite:///{self.data / 'longdoc.db'}"},
        }, overrides)
        self.settings = load_settings(None, self.config)
        self._stack = contextlib.ExitStack()
        self.container: Container | None = None
        self.transport: BlockingASGITransport | None = None

    # -- lifetime --------------------------------------------------------------

    def start(self) -> InProcessServer:
        handler = logging.FileHandler(self.log_path, encoding="utf-8")
        handler.setFormatter(json_formatter())
        root_logger = logging.getLogger()
        root_logger.addHandler(handler)
        level = root_logger.level
        root_logger.setLevel(logging.INFO)
        self._stack.callback(root_logger.setLevel, level)
        self._stack.callback(root_logger.removeHandler, handler)
        self._stack.callback(handler.close)
        for name in ("httpx", "httpcore"):  # as configure_logging sets them (their INFO lines carry URLs)
            quiet = logging.getLogger(name)
            self._stack.callback(quiet.setLevel, quiet.level)
            quiet.setLevel(logging.WARNING)
        try:
            self.container = Container(self.settings)
            app = create_app(self.settings, self.container)
            portal = self._stack.enter_context(start_blocking_portal())
            self._stack.enter_context(portal.wrap_async_context_manager(app.router.lifespan_context(app)))
            self.transport = BlockingASGITransport(portal, app)
        except BaseException:
            self._stack.close()
            raise
        return self

    def stop(self) -> None:
        self._stack.close()

    # -- clients ---------------------------------------------------------------

    @property
    def url(self) -> str:
        return BASE_URL

    def http(self, key: str | Key | None = None, timeout: float = 60) -> httpx.Client:
        assert self.transport is not None, "not started"
        return httpx.Client(base_url=BASE_URL, headers=self.key_headers(key), timeout=timeout,
                            transport=self.transport)

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """One request without a key (give ``headers`` for one)."""
        with self.http() as http:
            return http.request(method, url, **kwargs)

    def admin(self) -> httpx.Client:
        return self.http(self.admin_token)

    def create_key(self, tenant: str, rate_limit: int | None = None) -> Key:
        """A new API key through ``POST /admin/keys``."""
        with self.admin() as http:
            body: dict[str, Any] = {"tenant": tenant}
            if rate_limit is not None:
                body["rate_limit_per_minute"] = rate_limit
            r = http.post("/admin/keys", json=body)
        assert r.status_code == 201, r.text
        made = r.json()
        return Key(key=made["key"], webhook_secret=made["webhook_secret"], id=made["id"], tenant=tenant)

