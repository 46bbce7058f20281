"""Inference API under /v1: thin routes over :class:`JobService`."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, PlainTextResponse, RedirectResponse, StreamingResponse

from longdoc.audit import middleware as audit
from longdoc.errors import JobNotFinished, LongdocError
from longdoc.export.formats import ExportFormat
from longdoc.jobs.states import JobState
from longdoc.model import Page
from longdoc.service.deps import ContainerDep, JobsDep, KeyDep
from longdoc.service.schemas import ErrorResponse, JobList, JobPublic, PageList
from longdoc.service.uploads import UploadDep

router = APIRouter(prefix="/v1", tags=["jobs"])

ERRORS: dict[int | str, dict[str, Any]] = {
    s: {"model": ErrorResponse} for s in (400, 401, 404, 409, 410, 413, 415, 422, 429, 503)
}
#: the upload's form as OpenAPI describes it (the body is read by longdoc.service.uploads, not by FastAPI)
UPLOAD_BODY = {"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": {
    "type": "object", "required": ["file"], "title": "Upload", "properties": {
        "file": {"type": "string", "contentMediaType": "application/octet-stream", "title": "File",
                 "description": "PDF or image (PNG, JPEG, TIFF, BMP, WebP)"},
        "options": {"anyOf": [{"type": "string"}, {"type": "null"}], "title": "Options",
                    "description": "JSON: formats, pages, ocr, engine, profile, dpi, regions, priority, callback_url"}}}}}}}
IdemHeader = Annotated[str | None, Header(alias="Idempotency-Key", max_length=200)]
POLL_S = 0.25
#: how often an open event stream checks that its key still authenticates
KEY_RECHECK_S = 5.0


@router.post("/jobs", status_code=202, response_model=JobPublic, responses=ERRORS, openapi_extra=UPLOAD_BODY)
def submit_job(request: Request, response: Response, key: KeyDep, jobs: JobsDep, container: ContainerDep,
               upload: UploadDep, idempotency_key: IdemHeader = None) -> JobPublic:
    """Submit a document; 202 with the new job, 200 with an existing one
    (same Idempotency-Key, or same document and options)."""
    t0 = time.perf_counter()
    submitted = jobs.submit(key, upload.file, upload.filename, upload.options, idempotency_key)
    audit.note_job(request.scope, submitted.job.id)
    container.metrics.submit_seconds.observe(time.perf_counter() - t0)
    if submitted.existing:
        response.status_code = 200
    response.headers["Location"] = submitted.job.links.self
    return submitted.job


@router.get("/jobs", response_model=JobList, responses=ERRORS)
def list_jobs(key: KeyDep, jobs: JobsDep,
              # the states' values, from the one enum (mypy cannot read a Literal built at import)
              state: Annotated[Literal[tuple(s.value for s in JobState)] | None, Query()] = None,  # type: ignore[valid-type]
              limit: Annotated[int, Query(ge=1, le=200)] = 50,
              cursor: Annotated[str | None, Query(max_length=200)] = None) -> JobList:
    items, nxt = jobs.list(key, state, limit, cursor)
    return JobList(items=items, next=nxt)


@router.get("/jobs/{job_id}", response_model=JobPublic, responses=ERRORS)
async def get_job(request: Request, key: KeyDep, jobs: JobsDep, job_id: str,
                  wait: Annotated[float, Query(ge=0, le=60, description="long-poll seconds")] = 0) -> JobPublic:
    """The job; with ``wait``, returns as soon as its state or progress
    changes (or after ``wait`` seconds)."""
    job = await run_in_threadpool(jobs.get, key, job_id)
    seen = (job.state, job.pages_done)
    deadline = time.monotonic() + wait
    while wait and not JobState(job.state).terminal and time.monotonic() < deadline:
        if await request.is_disconnected() or request.app.state.container.readiness.shutting_down:
            break
        await asyncio.sleep(POLL_S)
        job = await run_in_threadpool(jobs.get, key, job_id)
        if (job.state, job.pages_done) != seen:
            break
    return await run_in_threadpool(jobs.public, job)


@router.get("/jobs/{job_id}/events", responses=ERRORS,
            response_class=StreamingResponse, description="Server-sent events: `progress` (job JSON) … `end`; "
            "`error` (`{\"error\": {code, …}}`) and the stream's end once its key is revoked or expires "
            "(checked every few seconds).")
async def job_events(request: Request, key: KeyDep, jobs: JobsDep, container: ContainerDep,
                     job_id: str) -> StreamingResponse:
    first = await run_in_threadpool(jobs.get, key, job_id)

    async def stream() -> AsyncIterator[str]:
        seen = None
        job = first
        last_beat = last_check = time.monotonic()
        while True:
            if time.monotonic() - last_check >= KEY_RECHECK_S:
                last_check = time.monotonic()
                try:
                    await run_in_threadpool(container.auth.still_valid, key)
                except LongdocError as exc:
                    yield f"event: error\ndata: {json.dumps({'error': exc.to_dict()})}\n\n"
                    return
            public = await run_in_threadpool(jobs.public, job)
            state = (public.state, public.pages_done, public.queue_position)
            if state != seen:
                seen = state
                yield f"event: progress\ndata: {public.model_dump_json()}\n\n"
            if JobState(public.state).terminal:
                yield f"event: end\ndata: {json.dumps({'state': public.state})}\n\n"
                return
            if container.readiness.shutting_down or await request.is_disconnected():
                return
            if time.monotonic() - last_beat > 15:
                last_beat = time.monotonic()
                yield ": keep-alive\n\n"
            await asyncio.sleep(POLL_S * 2)
            job = await run_in_threadpool(jobs.get, key, job_id)

    return StreamingResponse(stream(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


@router.get("/jobs/{job_id}/pages", response_model=PageList, responses=ERRORS)
def list_pages(key: KeyDep, jobs: JobsDep, job_id: str) -> PageList:
    """Every selected page with its outcome so far: ok, failed (with its
    error code), or pending."""
    return jobs.page_list(key, job_id)


@router.get("/jobs/{job_id}/pages/{number}", response_model=Page, responses={
    **ERRORS, 200: {"content": {"application/json": {}, "text/markdown": {}}}})
def get_page(key: KeyDep, jobs: JobsDep, job_id: str, number: int,
             format: Annotated[Literal["json", "md"], Query()] = "json") -> Page | PlainTextResponse:
    """One page's result once its group is done: the document model's Page,
    or with ``format=md`` the page's Markdown."""
    if format == "md":
        return PlainTextResponse(jobs.page_markdown(key, job_id, number), media_type="text/markdown; charset=utf-8")
    return jobs.page(key, job_id, number)


@router.get("/jobs/{job_id}/pages/{number}/image", responses={
    **ERRORS, 200: {"content": {"image/jpeg": {}}, "description": "the page as JPEG"}},
    response_class=Response)
def get_page_image(key: KeyDep, jobs: JobsDep, job_id: str, number: int,
                   dpi: Annotated[int, Query(ge=36, le=300, description="resolution; lower when the page "
                                                                     "would pass limits.max_render_pixels")] = 100,
                   ) -> Response:
    """Page ``number`` of the job's original, rendered on demand in the
    sandbox (for the console's page viewer), turned upright like its result
    so the result's boxes fit: a box's points times the image's width over
    the page's width are pixels."""
    image = jobs.page_image(key, job_id, number, dpi)
    return Response(image, media_type="image/jpeg", headers={"Cache-Control": "private, max-age=3600"})


@router.get("/jobs/{job_id}/result", responses={**ERRORS, 202: {"model": JobPublic}},
            response_class=StreamingResponse)
def get_result(key: KeyDep, jobs: JobsDep, job_id: str,
               format: Annotated[ExportFormat, Query()] = "md") -> Response:
    """The final result, streamed from the store, or a 307 redirect to a
    presigned URL of it when the store gives them (S3 with
    ``storage.s3.presign_seconds``). 202 while the job runs, 409 when it
    failed or was cancelled, 410 when it expired."""
    try:
        url = jobs.result_url(key, job_id, format)
        if url is not None:
            return RedirectResponse(url, status_code=307)
        chunks, media_type, size = jobs.result_stream(key, job_id, format)
    except JobNotFinished as exc:
        return JSONResponse(status_code=202, content=exc.context.get("job"))
    return StreamingResponse(chunks, media_type=media_type, headers={"Content-Length": str(size)})


@router.delete("/jobs/{job_id}", status_code=204, responses={**ERRORS, 202: {"model": JobPublic}})
def delete_job(key: KeyDep, jobs: JobsDep, job_id: str) -> Response:
    """Cancel a queued or running job (202); delete a finished one and all
    its stored data (204)."""
    job = jobs.cancel_or_delete(key, job_id)
    if job is not None:
        return JSONResponse(status_code=202, content=job.model_dump(mode="json"))
    return Response(status_code=204)


@router.post("/parse", responses={**ERRORS, 202: {"model": JobPublic}}, openapi_extra=UPLOAD_BODY)
async def parse_sync(request: Request, key: KeyDep, jobs: JobsDep, container: ContainerDep, upload: UploadDep,
                     format: Annotated[Literal["md", "json", "txt"], Query()] = "json") -> Response:
    """Synchronous parse of a small input (page cap ``service.sync_max_pages``):
    the result in the body, or 202 with the job if it takes longer than
    ``service.sync_timeout_seconds`` (the job carries on)."""
    settings = container.settings.service
    submitted = await run_in_threadpool(
        lambda: jobs.submit(key, upload.file, upload.filename, upload.options, None,
                            max_pages=settings.sync_max_pages, priority_boost=5, ensure_format=format))
    job_id = submitted.job.id
    audit.note_job(request.scope, job_id)
    deadline = time.monotonic() + settings.sync_timeout_seconds
    while time.monotonic() < deadline:
        job = await run_in_threadpool(jobs.get, key, job_id)
        if JobState(job.state).terminal:
            break
        if await request.is_disconnected():
            break
        await asyncio.sleep(POLL_S)
    try:
        chunks, media_type, size = await run_in_threadpool(jobs.result_stream, key, job_id, format)
    except JobNotFinished as exc:
        return JSONResponse(status_code=202, content=exc.context.get("job"),
                            headers={"Location": f"/v1/jobs/{job_id}"})
    return StreamingResponse(chunks, media_type=media_type, headers={"Content-Length": str(size),
                                                                     "X-Longdoc-Job": job_id})
