"""Operations: liveness, readiness, Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from longdoc import __version__
from longdoc.service.deps import ContainerDep
from longdoc.service.schemas import Readiness

router = APIRouter(tags=["operations"])


@router.head("/healthz", include_in_schema=False)
@router.get("/healthz")
def healthz() -> dict[str, str]:
    """Alive (the process answers)."""
    return {"status": "ok", "version": __version__}


@router.head("/readyz", include_in_schema=False)
@router.get("/readyz", response_model=Readiness, responses={503: {"model": Readiness}})
async def readyz(container: ContainerDep):
    """Ready only after warm-up ran a real page through the engine, and while
    the database, the store and the engine are reachable."""
    checks = await run_in_threadpool(container.checks)
    ready = all(checks.get(k) is True for k in ("warmed_up", "accepting", "database", "storage", "engine"))
    body = Readiness(ready=ready, checks=checks).model_dump()
    return JSONResponse(status_code=200 if ready else 503, content=body)


@router.get("/metrics", response_class=Response)
def metrics(container: ContainerDep) -> Response:
    return Response(generate_latest(container.metrics.registry), media_type=CONTENT_TYPE_LATEST)
