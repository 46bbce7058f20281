"""The web console: plain HTML, CSS and JavaScript files served from the
package at ``/console`` (same origin and same API keys as the API; nothing
is built or downloaded at run time). ``/`` points a browser there.

The files are sent with a strict Content-Security-Policy: scripts and styles
from this origin only, images from this origin or ``blob:`` (page images are
fetched with the key and shown as blobs), no framing."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.responses import RedirectResponse
from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

FILES = Path(__file__).resolve().parents[1] / "console"
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' blob: data:; style-src 'self'; "
                               "script-src 'self'; connect-src 'self'; frame-ancestors 'none'; "
                               "base-uri 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}

router = APIRouter(include_in_schema=False)


@router.get("/")
def root() -> RedirectResponse:
    return RedirectResponse("/console/", status_code=307)


@router.get("/console")
def console_slash() -> RedirectResponse:
    return RedirectResponse("/console/", status_code=307)


class ConsoleFiles(StaticFiles):
    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        response.headers.update(HEADERS)
        return response


def mount(app: FastAPI) -> None:
    """Serve the console under /console/ (and redirect / and /console there)."""
    app.include_router(router)
    app.mount("/console/", ConsoleFiles(directory=FILES, html=True), name="console")
