"""What the job routes do, without HTTP: accept, describe, stream, cancel,
delete. Routes stay thin and call these methods; every failure a client can
cause is a typed :class:`~longdoc.errors.LongdocError`.

Accepting a job is the API's whole part in running it, the same for both
backends: the job's row and its first task's row are written (``whole`` on
the ``short`` queue for a short document, ``ingest`` on ``cpu`` for a long
one: :func:`~longdoc.jobs.task_repo.first_tasks`) and the task is handed to
the process's :class:`~longdoc.runner.transport.TaskTransport`. Everything
after that is the task steps' (:mod:`longdoc.runner.steps`). An accepted job
is never refused later, and a transport that cannot take the task loses
nothing: its row is queued and the reconciler sends it again.
:meth:`JobService.stop_intake` makes the service refuse new jobs (503)."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from pydantic import ValidationError

from longdoc.assemble import stitched_page
from longdoc.config import Settings
from longdoc.engines.registry import check_offered
from longdoc.errors import (
    InvalidOption,
    JobCancelled,
    JobExpired,
    JobFailed,
    JobNotFinished,
    JobNotFound,
    PageNotFound,
    PageNotReady,
    QueueFull,
    QuotaExceeded,
    ShuttingDown,
    TooManyPages,
)
from longdoc.export import MEDIA_TYPES
from longdoc.export.markdown import page_markdown
from longdoc.ingest import parse_page_range
from longdoc.ingest.pages import selection_of_size
from longdoc.ingest.sandbox import open_sandboxed
from longdoc.jobs.models import ApiKey, Job, JobPage
from longdoc.jobs.repo import JobRepo, hash_options
from longdoc.jobs.states import JobState
from longdoc.jobs.task_repo import TaskRepo, first_tasks
from longdoc.model import Page, PageFlag, needs_review
from longdoc.pipeline import ParseOptions
from longdoc.pipeline.options import problems
from longdoc.runner.transport import TaskTransport
from longdoc.service.page_images import PageImages
from longdoc.service.schemas import JobOptions, JobPublic, PageList, PageSummary, job_public
from longdoc.storage import keys
from longdoc.storage.base import ObjectStore
from longdoc.storage.checkpoint import StoreCheckpoint
from longdoc.storage.scratch import Received, ScratchDir
from longdoc.webhooks.delivery import check_target

log = logging.getLogger("longdoc.service")

CHUNK = 1 << 20


@dataclass
class Submitted:
    job: JobPublic
    existing: bool


class JobService:
    def __init__(self, settings: Settings, repo: JobRepo, store: ObjectStore, tasks: TaskRepo,
                 transport: TaskTransport, scratch: ScratchDir, images: PageImages,
                 on_finished: Callable[[str], None] | None = None) -> None:
        """``transport`` carries a new job's first task (see the module
        docstring); ``images`` renders page images (the page viewer).
        ``on_finished(job_id)`` is called when this service itself ends a
        job (a queued job cancelled before it ran); the task steps announce the rest."""
        self.settings, self.repo, self.store = settings, repo, store
        self.tasks, self.transport = tasks, transport
        self._accepting = True
        self.scratch = scratch
        self.images = images
        self.on_finished = on_finished
        #: intake (queue room, quota, dedupe, create, enqueue) is one step
        self._intake = threading.Lock()

    # -- submit --------------------------------------------------------------

    def submit(
        self,
        key: ApiKey,
        upload: Received,
        filename: str,
        options_json: str | None,
        idempotency_key: str | None,
        *,
        max_pages: int | None = None,
        priority_boost: int = 0,
        ensure_format: str | None = None,
    ) -> Submitted:
        """Validate and accept an upload. Raises input/limit errors (an
        engine not :attr:`offered_engines`: UnknownEngine) before anything is
        stored; returns the existing job for a repeated
        idempotency key or the same document with the same options.

        The upload is the file the request wrote to the work folder as it
        arrived (:mod:`longdoc.service.uploads`); it is opened only in a
        sandbox process (type, page count, encryption, limits), this
        process never parses it, and it is removed once the store has it
        or it is refused. Intake is atomic: ``service.max_queued``
        and ``limits.tenant_storage_mb`` are exact bounds, and concurrent
        identical uploads make one job."""
        options = parse_options(options_json)
        parse_opts = self._parse_options(options, ensure_format)
        check_offered(parse_opts.engine, self.offered_engines)
        if options.callback_url:
            check_target(options.callback_url, allow_private=self.settings.service.allow_private_callbacks)
        self.check_room()
        name = safe_name(filename)
        with upload.taken() as path:
            size, sha256 = upload.size, upload.sha256
            self._check_quota(key.tenant, size)
            with open_sandboxed(path, self.settings.limits, name=name) as source:   # type, limits, encryption…
                selected = parse_page_range(options.pages, source.page_count)
                media_type, page_count = source.media_type, source.page_count
            if max_pages is not None and len(selected) > max_pages:
                raise TooManyPages(
                    f"The synchronous endpoint takes at most {max_pages} pages; this request selects {len(selected)}.",
                    hint="Submit it as a job with POST /v1/jobs, or select fewer pages.",
                    limit=max_pages, pages=len(selected),
                )
            opts = parse_opts.public()
            job_id = uuid.uuid4().hex
            self.store.put_file(keys.original_key(key.tenant, job_id), path)
        lane = "short" if len(selected) <= self.settings.service.short_doc_pages else "long"
        try:
            with self._intake:
                job, existing = self._accept(
                    id=job_id, tenant=key.tenant, api_key_id=key.id, filename=name,
                    media_type=media_type, size_bytes=size, sha256=sha256, options=opts,
                    options_hash=request_hash(opts, options.callback_url),
                    idempotency_key=idempotency_key, callback_url=options.callback_url,
                    priority=min(9, options.priority + priority_boost), lane=lane, pages_total=len(selected),
                )
        except BaseException:
            self.store.delete(keys.original_key(key.tenant, job_id))  # nothing accepted: leave nothing behind
            raise
        if existing:
            self.store.delete(keys.original_key(key.tenant, job_id))
        else:
            log.info("job accepted", extra={"job_id": job.id, "tenant": key.tenant, "pages": len(selected),
                                            "page_count": page_count, "lane": lane, "bytes": size})
        return Submitted(self.public(job), existing)

    def _accept(self, **fields: Any) -> tuple[Job, bool]:
        """Under the intake lock: the existing job for this request, or
        a new one if the queue has room and the tenant's quota allows it."""
        found = self.repo.find_reusable(fields["tenant"], fields["idempotency_key"], fields["sha256"],
                                        fields["options_hash"])
        if found is not None:
            return found, True
        self._check_quota(fields["tenant"], fields["size_bytes"])
        job, reused = self.repo.create(**fields, max_queued=self.settings.service.max_queued)
        if reused is None:
            self._queue_first_task(job)
        return job, reused is not None

    def _queue_first_task(self, job: Job) -> None:
        """Write the new job's first task and send it (idempotent)."""
        for name, queue in self.tasks.add(job.id, first_tasks(job.lane)):
            try:
                self.transport.send(job.id, name, queue, 0.0)
            except Exception as exc:
                log.warning("job accepted but not sent; the reconciler will send it",
                            extra={"job_id": job.id, "error": type(exc).__name__})

    @property
    def accepting(self) -> bool:
        """False once shutdown began: new jobs are refused (503)."""
        return self._accepting

    def stop_intake(self) -> None:
        """Accept no more jobs; only sets a flag, so safe in a signal handler."""
        self._accepting = False

    @property
    def offered_engines(self) -> tuple[str, ...]:
        """The engines a job may name: ``inference.engine`` (what it gets
        when it names none) and ``service.tenant_engines``."""
        return (self.settings.inference.engine, *self.settings.service.tenant_engines)

    def check_room(self) -> None:
        """Raise ShuttingDown (503) or QueueFull (429) when a new job cannot
        be accepted now. A cheap early answer before an upload is opened;
        the exact bound is kept when the job row is created."""
        if not self._accepting:
            raise ShuttingDown("The server is shutting down and accepts no new jobs.")
        if self.repo.queued_count() >= self.settings.service.max_queued:
            raise QueueFull(f"The queue holds {self.settings.service.max_queued} jobs already.", retry_after=30)

    def _check_quota(self, tenant: str, upload_bytes: int) -> None:
        quota_mb = self.settings.limits.tenant_storage_mb
        if quota_mb is None:
            return
        used = self.repo.tenant_stored_bytes(tenant)
        if used + upload_bytes > quota_mb * 2**20:
            raise QuotaExceeded(
                f"Tenant {tenant!r} stores {used / 2**20:.1f} MB; this upload of {upload_bytes / 2**20:.1f} MB "
                f"would pass the quota of {quota_mb} MB.",
                used_mb=round(used / 2**20, 1), upload_mb=round(upload_bytes / 2**20, 1), quota_mb=quota_mb,
            )

    def _parse_options(self, options: JobOptions, ensure_format: str | None = None) -> ParseOptions:
        """The job's options: what the request set, the settings the rest
        (the page groups always); ``ensure_format`` added to its formats.
        Raises InvalidOption."""
        asked = options.model_dump(exclude={"priority", "callback_url"}, exclude_none=True)
        formats = (*options.formats, ensure_format) if ensure_format is not None else options.formats
        return ParseOptions.from_settings(self.settings, **{**asked, "formats": tuple(dict.fromkeys(formats))})

    # -- read ----------------------------------------------------------------

    def get(self, key: ApiKey, job_id: str) -> Job:
        job = self.repo.get(key.tenant, job_id)
        if job is None:
            raise JobNotFound(f"No job {job_id!r}.")
        return job

    def public(self, job: Job) -> JobPublic:
        position = self.repo.queue_position(job) if job.state == JobState.QUEUED.value else None
        return job_public(job, position)

    def list(self, key: ApiKey, state: str | None, limit: int, cursor: str | None) -> tuple[list[JobPublic], str | None]:
        jobs, nxt = self.repo.list(key.tenant, state=state, limit=limit, cursor=cursor)
        return [self.public(j) for j in jobs], nxt

    def page(self, key: ApiKey, job_id: str, number: int) -> Page:
        """A page's result as soon as its group is checkpointed, stitched
        with its neighbours as the exports have it (:func:`stitched_page`:
        what the break after it cut is joined once the next page is done,
        a list or table it continues marked). Raises PageNotReady while it
        may still come, PageNotFound when it never will."""
        job = self.get(key, job_id)
        self._not_expired(job)
        checkpoint = StoreCheckpoint(self.store, keys.checkpoint_prefix(job.tenant, job.id))
        page = stitched_page(checkpoint.load_page, number)
        if page is not None:
            return page
        if JobState(job.state).terminal:
            raise PageNotFound(f"Job {job_id} has no page {number}.")
        raise PageNotReady(f"Page {number} of job {job_id} is not finished yet.")

    def page_list(self, key: ApiKey, job_id: str) -> PageList:
        """Every selected page of the job with its outcome so far (pending
        until its group reports)."""
        job = self.get(key, job_id)
        rows = {row.page: row for row in self.repo.pages(job.id)}
        numbers = selection_of_size(job.options.get("pages"), job.pages_total) if job.pages_total else []
        pages = [PageSummary(number=n, status="pending") for n in numbers if n not in rows]
        pages += [_summary(r) for r in rows.values()]
        return PageList(job_id=job.id, state=job.state, pages_total=job.pages_total,
                        pages=sorted(pages, key=lambda p: p.number))

    def page_markdown(self, key: ApiKey, job_id: str, number: int) -> str:
        """A finished page as Markdown (what the Markdown export holds for it)."""
        return page_markdown(self.page(key, job_id, number))

    def page_image(self, key: ApiKey, job_id: str, number: int, dpi: float) -> bytes:
        """Page ``number`` of the job's original as JPEG, turned like its
        result when the result read it rotated. Raises JobNotFound (another
        tenant's job too), JobExpired, PageNotFound (a page the job did not
        select), the page's render errors."""
        job = self.get(key, job_id)
        self._not_expired(job)
        count = self.images.page_count(job)
        selected = parse_page_range(job.options.get("pages"), count)
        if number not in selected:
            raise PageNotFound(f"Job {job_id} has no page {number}; it reads pages "
                               f"{_span(selected)} of {count}.", page=number)
        done = StoreCheckpoint(self.store, keys.checkpoint_prefix(job.tenant, job.id)).load_page(number)
        return self.images.jpeg(job, number, dpi, rotation=done.rotation if done is not None else 0)

    def result_stream(self, key: ApiKey, job_id: str, fmt: str) -> tuple[Iterator[bytes], str, int]:
        """``(chunks, media type, size)`` of a finished job's export; raises
        JobNotFinished (202), JobFailed (409), JobExpired (410)."""
        key_name = self._export(key, job_id, fmt)
        size = self.store.size(key_name)
        return _chunks(self.store.open_read(key_name)), MEDIA_TYPES[fmt], size

    def result_url(self, key: ApiKey, job_id: str, fmt: str) -> str | None:
        """A presigned URL of a finished job's export when the store gives
        them (``storage.s3.presign_seconds``), else None; raises as
        :meth:`result_stream`."""
        return self.store.presigned_url(self._export(key, job_id, fmt))

    def _export(self, key: ApiKey, job_id: str, fmt: str) -> str:
        """The store key of a finished job's export in ``fmt``."""
        if fmt not in MEDIA_TYPES:
            raise InvalidOption(f"Unknown format {fmt!r}; choose one of {', '.join(MEDIA_TYPES)}.")
        job = self.get(key, job_id)
        self._not_expired(job)
        if job.state in (JobState.QUEUED.value, JobState.RUNNING.value):
            raise JobNotFinished(f"Job {job_id} is {job.state}.", job=self.public(job).model_dump(mode="json"))
        if job.state in (JobState.FAILED.value, JobState.CANCELLED.value):
            err = job.error or {"code": "job_cancelled", "message": "The job was cancelled."}
            raise JobFailed(f"Job {job_id} {job.state}: {err.get('message', '')}".strip(),
                            job_state=job.state, job_error_code=err.get("code"))  # context keeps scalars only
        if fmt not in job.options.get("formats", []):
            raise InvalidOption(f"Job {job_id} was not asked for format {fmt!r}; it has {job.options.get('formats')}.")
        return keys.export_key(job.tenant, job.id, fmt)

    # -- change ----------------------------------------------------------------

    def cancel_or_delete(self, key: ApiKey, job_id: str) -> JobPublic | None:
        """Cancel a queued or running job (returns it); delete a finished one
        with its stored data and every copy of its document this process
        keeps in the work folder, the page viewer's included (returns None)."""
        job = self.get(key, job_id)
        if job.state in (JobState.QUEUED.value, JobState.RUNNING.value):
            was_queued = job.state == JobState.QUEUED.value
            self.repo.request_cancel(job.id)
            log.info("job cancel requested", extra={"job_id": job.id, "tenant": key.tenant})
            current = self.get(key, job_id)
            if was_queued and current.state == JobState.CANCELLED.value:
                # it never ran: close its queued task, so no queue counts it and nothing starts it
                self.tasks.fail_open(current.id, JobCancelled("The job was cancelled before it ran.").to_dict())
                if self.on_finished is not None:
                    self.on_finished(current.id)  # and no task will announce it
            return self.public(current)
        self.images.forget(job.id)
        self.store.delete_prefix(keys.job_prefix(job.tenant, job.id))
        self.scratch.remove_job(job.id)
        self.repo.delete(job.id)
        log.info("job deleted", extra={"job_id": job.id, "tenant": key.tenant})
        return None

    def _not_expired(self, job: Job) -> None:
        if job.state == JobState.EXPIRED.value:
            raise JobExpired(f"Job {job.id} expired at {job.expires_at}.")


def request_hash(options: dict[str, Any], callback_url: str | None) -> str:
    """What makes two submits of one document the same request (and so the
    same job, or a reused Idempotency-Key): the job's options and, when it
    has one, its ``callback_url``, for a job's webhook goes to its own URL
    alone; a new URL is a new job rather than a URL dropped unseen. Without
    a callback it is the options' hash alone (as jobs recorded before)."""
    return hash_options(options if callback_url is None else {**options, "callback_url": callback_url})


def parse_options(options_json: str | None) -> JobOptions:
    if not options_json:
        return JobOptions()
    try:
        return JobOptions.model_validate_json(options_json)
    except ValidationError as exc:
        raise InvalidOption(f"Invalid options: {problems(exc)}", hint="`options` is a JSON object; see /docs.") from exc


#: the longest stored file name, in UTF-8 bytes (what file systems allow)
MAX_NAME_BYTES = 255


def safe_name(filename: str | None) -> str:
    """The upload's name as metadata: its last path segment without control
    characters, cut to :data:`MAX_NAME_BYTES` UTF-8 bytes on a character
    boundary (the extension kept when it fits); ``upload`` when nothing is
    left. It is never used as a file name on disk."""
    raw = (filename or "").replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(ch for ch in raw if ch.isprintable()).strip()
    if name in ("", ".", ".."):
        return "upload"
    encoded = name.encode("utf-8", "replace")
    if len(encoded) <= MAX_NAME_BYTES:
        return name
    stem, dot, ext = name.rpartition(".")
    tail = f".{ext}" if dot and stem and len(ext.encode()) <= 16 else ""
    room = MAX_NAME_BYTES - len(tail.encode("utf-8", "replace"))
    head = (name[: -len(tail)] if tail else name).encode("utf-8", "replace")[:room].decode("utf-8", "ignore")
    return head + tail


def _summary(row: JobPage) -> PageSummary:
    """A recorded page's outcome (a row written before pages had flags has none)."""
    flags = [PageFlag(flag) for flag in row.flags or []]
    return PageSummary(number=row.page, status="ok" if row.status == "ok" else "failed", error=row.error,
                       text_source=row.text_source, seconds=row.seconds, confidence=row.confidence, flags=flags,
                       review=needs_review(flags))


def _span(numbers: list[int]) -> str:
    return f"{numbers[0]}-{numbers[-1]}" if len(numbers) > 1 else str(numbers[0])


def _chunks(f: BinaryIO) -> Iterator[bytes]:
    try:
        while block := f.read(CHUNK):
            yield block
    finally:
        f.close()

