"""Operations: liveness, readiness, Prometheus metrics, and what the
service knows (``/v1/meta``: formats, job states, block kinds, engines, job options)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from longdoc import __version__
from longdoc.export.formats import DEFAULT_FORMATS, FILE_NAMES, FORMATS, LABELS, MEDIA_TYPES
from longdoc.jobs.states import TERMINAL, WITH_RESULTS, JobState
from longdoc.model import BlockKind
from longdoc.service.deps import ContainerDep, JobsDep
from longdoc.service.schemas import JobOptions, Meta, MetaFormat, Readiness

router = APIRouter(tags=["operations"])


@router.head("/healthz", include_in_schema=False)
@router.get("/healthz")
def healthz() -> dict[str, str]:
    """Alive (the process answers)."""
    return {"status": "ok", "version": __version__}


@router.head("/readyz", include_in_schema=False)
@router.get("/readyz", response_model=Readiness, responses={503: {"model": Readiness}})
async def readyz(container: ContainerDep) -> JSONResponse:
    """Ready only after warm-up ran a real page through the engine, and while
    the database, the store and the engine are reachable."""
    checks = await run_in_threadpool(container.checks)
    ready = all(checks.get(k) is True for k in ("warmed_up", "accepting", "database", "storage", "engine"))
    body = Readiness(ready=ready, checks=checks).model_dump()
    return JSONResponse(status_code=200 if ready else 503, content=body)


@router.get("/metrics", response_class=Response)
def metrics(container: ContainerDep) -> Response:
    return Response(generate_latest(container.metrics.registry), media_type=CONTENT_TYPE_LATEST)


@router.get("/v1/meta", response_model=Meta)
def meta(jobs: JobsDep) -> Meta:
    """What the service knows, from the one place each is defined: export
    formats (name, label, file name, media type, written by default), job
    states (which are terminal, which have results), block kinds, the
    engines a job may name (``inference.engine`` first, then
    ``service.tenant_engines``; never the others registered), the JSON
    schema of a job's options (their choices and bounds). The console builds
    its choices from it; no key needed (nothing here is a tenant's)."""
    return Meta(
        version=__version__,
        formats=[MetaFormat(name=f, label=LABELS[f], file_suffix=FILE_NAMES[f], media_type=MEDIA_TYPES[f],
                            default=f in DEFAULT_FORMATS) for f in FORMATS],
        states=[s.value for s in JobState], terminal_states=[s.value for s in JobState if s in TERMINAL],
        result_states=[s.value for s in JobState if s in WITH_RESULTS],
        block_kinds=[k.value for k in BlockKind], engines=list(jobs.offered_engines),
        options=JobOptions.model_json_schema(),
    )
