"""Every failure a user can cause, with a stable code.

One base class, :class:`LongdocError`. Each subclass fixes:

- ``code``: stable snake_case identifier clients and scripts match on;
- ``http_status``: what the HTTP surface answers;
- ``exit_code``: what the CLI exits with;
- ``retryable``: whether the same request may succeed later unchanged;
- ``hint``: one sentence telling the user what to do.

Surfaces (CLI, HTTP) translate errors in exactly one place each. Lower-level
library errors are mapped into this hierarchy at the boundary where they are
raised (never by matching message text). This module imports nothing from
longdoc.
"""

from __future__ import annotations

from typing import Any, ClassVar

# CLI exit codes (stable; documented in docs/reference/errors.md).
EXIT_OK = 0
EXIT_USAGE = 2
EXIT_ENGINE_UNAVAILABLE = 3
EXIT_BAD_INPUT = 4
EXIT_UNREADABLE = 5
EXIT_LIMIT = 6
EXIT_ENCRYPTED = 8
EXIT_CONFIG = 9
EXIT_PARTIAL = 10
EXIT_INTERNAL = 15


class LongdocError(Exception):
    """Base of every user-facing error.

    ``message`` says what happened to *this* input; ``hint`` (class level,
    overridable per instance) says what to do about it. ``context`` carries
    machine-readable details (limits, counts) for JSON error bodies.
    """

    code: ClassVar[str] = "internal_error"
    http_status: ClassVar[int] = 500
    exit_code: ClassVar[int] = EXIT_INTERNAL
    retryable: ClassVar[bool] = False
    hint: str = "This is a bug in longdoc; please report it with the log."

    def __init__(self, message: str, *, hint: str | None = None, **context: Any) -> None:
        super().__init__(message)
        self.message = message
        if hint is not None:
            self.hint = hint
        self.context = context

    def __str__(self) -> str:
        return f"{self.message} {self.hint}".strip()

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle with hint and context (errors cross process boundaries:
        document sandboxes and worker pools raise them in the parent)."""
        return (_rebuild, (type(self), self.message, dict(self.__dict__)))

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe body: ``{code, message, hint, retryable, context}``."""
        return {
            "code": self.code,
            "message": self.message,
            "hint": self.hint,
            "retryable": self.retryable,
            "context": {k: v for k, v in self.context.items() if _json_scalar(v)},
        }


def _rebuild(cls: type[LongdocError], message: str, state: dict[str, Any]) -> LongdocError:
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.__dict__.update(state)
    return error


def _json_scalar(v: Any) -> bool:
    return v is None or isinstance(v, (str, int, float, bool, list))


# --- input problems -------------------------------------------------------


class InputError(LongdocError):
    """The input document cannot be used as given."""

    code = "bad_input"
    http_status = 422
    exit_code = EXIT_BAD_INPUT
    hint = "Check that the file is a complete, valid document."


class UnreadablePath(InputError):
    """The path is missing, a directory, or unreadable."""

    code = "unreadable_path"
    http_status = 400
    exit_code = EXIT_UNREADABLE
    hint = "Check that the path exists, is a regular file and is readable by this user."


class UnsupportedType(InputError):
    """Not a PDF, PNG, JPEG, TIFF, BMP or WebP, by its content."""

    code = "unsupported_type"
    http_status = 415
    hint = "Send a PDF or an image (PNG, JPEG, TIFF, BMP, WebP); the type is read from the content, not the name."


class CorruptFile(InputError):
    """The document is damaged or truncated."""

    code = "corrupt_file"
    hint = "The file is damaged or truncated; re-export or re-download it and try again."


class EncryptedPdf(InputError):
    """A password-protected PDF."""

    code = "encrypted_pdf"
    exit_code = EXIT_ENCRYPTED
    hint = "Remove the password protection (e.g. `qpdf --decrypt in.pdf out.pdf`) and submit the decrypted file."


class EmptyDocument(InputError):
    """The document has no pages."""

    code = "empty_document"
    hint = "The document has no pages; check that you sent the right file."


class InvalidPageRange(InputError):
    """A page range that does not parse, or lies outside the document."""

    code = "invalid_page_range"
    exit_code = EXIT_USAGE
    hint = "Write pages as 1-based numbers and ranges, e.g. `1-20,35`, within the document's page count."


class InvalidOption(LongdocError):
    """A bad flag or option value."""

    code = "invalid_option"
    http_status = 400
    exit_code = EXIT_USAGE
    hint = "See `longdoc parse --help` for the accepted values."


class InvalidDuration(InvalidOption):
    """A duration (``--expires-in``, ``--grace``, ``expires_in``) that does not read."""

    code = "invalid_duration"
    hint = ("Write a whole number and a unit: `90d`, `12h`, `30m`, `45s`, or several from the largest unit "
            "down (`1d12h`); at most 3650 days.")
class InvalidTime(LongdocError):
    """A time that is not ISO 8601 (a filter such as ``since``)."""

    code = "invalid_time"
    http_status = 400
    exit_code = EXIT_USAGE
    hint = ("Give an ISO 8601 date or time, e.g. 2026-12-05, 2026-12-05T14:30:00Z or "
            "2026-12-05T15:30:00+01:00; a date alone or a time without a zone is UTC.")


class CallbackRefused(LongdocError):
    """A webhook ``callback_url`` is not a safe public http(s) target."""

    code = "callback_refused"
    http_status = 422
    exit_code = EXIT_USAGE
    hint = (
        "Use a public http:// or https:// URL without credentials; loopback, private, "
        "link-local and reserved addresses are refused unless the operator sets "
        "`service.allow_private_callbacks`."
    )


# --- limits ---------------------------------------------------------------


class LimitExceeded(LongdocError):
    """The input is over one of the ``limits.*`` settings."""

    code = "limit_exceeded"
    http_status = 422
    exit_code = EXIT_LIMIT
    hint = "Split the document or ask the operator to raise the limit."


class TooManyPages(LimitExceeded):
    """The document has more pages than ``limits.max_pages``."""

    code = "too_many_pages"
    hint = "Split the document, or ask the operator to raise `limits.max_pages` (it counts the whole document, not a page range)."


class ImageTooLarge(LimitExceeded):
    """A page of an image file has more pixels than ``limits.max_pixels`` (read from its header
    before decoding)."""

    code = "image_too_large"
    hint = "Downscale the image or page, or raise `limits.max_pixels` if you trust the source."


class UploadTooLarge(LimitExceeded):
    """An upload over ``limits.max_upload_mb``: refused from ``Content-Length``
    before the body is read, or as soon as a chunked body passes it."""

    code = "upload_too_large"
    http_status = 413
    hint = "Split the document or raise `limits.max_upload_mb`."


class ResourceLimit(LimitExceeded):
    """Opening, reading or rendering the document (or one page of it) needed
    more memory or time than its sandbox allows. On a page, the page fails
    alone; on opening, the document is refused."""

    code = "resource_limit"
    hint = (
        "The document needs more memory or time than `limits.worker_memory_mb` / "
        "`limits.worker_timeout_seconds` allow (a damaged or hostile file, or an extreme page); "
        "other pages are still processed. Raise the limits only if you trust the source."
    )


class QuotaExceeded(LimitExceeded):
    """The tenant's stored data would pass ``limits.tenant_storage_mb``."""

    code = "quota_exceeded"
    http_status = 413
    hint = (
        "The tenant's stored data would pass `limits.tenant_storage_mb`; delete finished jobs "
        "(DELETE /v1/jobs/{id}) or wait for them to expire, or ask the operator to raise the quota."
    )


# --- configuration and engines --------------------------------------------


class ConfigError(LongdocError):
    """A bad configuration: file, environment variable or option."""

    code = "invalid_config"
    http_status = 400
    exit_code = EXIT_CONFIG
    hint = "Fix the configuration file or option named above; `longdoc config show` prints the effective configuration."


class UnknownEngine(ConfigError):
    """No engine is registered under the name asked for."""

    code = "unknown_engine"
    hint = "Choose one of the engines listed above."


class EngineUnavailable(LongdocError):
    """The engine's packages are missing, or its model server refuses connections."""

    code = "engine_unavailable"
    http_status = 503
    exit_code = EXIT_ENGINE_UNAVAILABLE
    retryable = True
    hint = "Install the engine's dependencies or choose another engine."


class EngineFailed(LongdocError):
    """An engine crashed or timed out on one page; the page fails, not the job."""

    code = "engine_failed"
    http_status = 500
    exit_code = EXIT_PARTIAL
    retryable = True
    hint = "Retry the page; if it keeps failing, try another engine or `--ocr force` at another DPI."


class KvBudgetExceeded(EngineFailed):
    """A document's KV cache can never fit under the watermark (native engine)."""

    code = "kv_budget_exceeded"
    http_status = 503
    retryable = False
    hint = ("Lower inference.page_chunk_size, or raise inference.native.kv_budget_mb (null sizes it for "
            "inference.native.max_sequences documents).")


class ModelFilesInvalid(EngineUnavailable):
    """A model folder whose files are missing, unlisted or differ from its SHA-256 manifest."""

    code = "model_files_invalid"
    retryable = False
    hint = ("Restore the model folder from its source; every weight file must be listed in its SHA256SUMS "
            "manifest (`sha256sum *.safetensors > SHA256SUMS`) with a matching hash.")


class PageRenderFailed(LongdocError):
    """One page cannot be read or rendered (e.g. a page tree that claims more
    pages than it holds); the page fails, not the document."""

    code = "page_render_failed"
    http_status = 422
    exit_code = EXIT_PARTIAL
    hint = "This page could not be read or rendered; the other pages are processed without it."


class LayoutFailed(LongdocError):
    """Laying out one recognized page raised; the page fails, not the document."""

    code = "layout_failed"
    http_status = 500
    exit_code = EXIT_PARTIAL
    hint = "This is a bug in longdoc's layout stage; please report it. The other pages are processed without this one."


class OutputError(LongdocError):
    """The output folder is not writable."""

    code = "output_unwritable"
    http_status = 500
    exit_code = EXIT_UNREADABLE
    hint = "Check that the output folder is writable and has free space."


# --- service: storage, database, job records ------------------------------


class StorageError(LongdocError):
    """The object store could not be read or written (I/O, permissions, full disk)."""

    code = "storage_unavailable"
    http_status = 503
    exit_code = EXIT_UNREADABLE
    retryable = True
    hint = "Retry later; if it persists, check that the object store is reachable, writable and has free space."


class ObjectNotFound(LongdocError):
    code = "object_not_found"
    http_status = 404
    exit_code = EXIT_UNREADABLE
    hint = "The stored object does not exist (never written, deleted or expired)."


class InvalidObjectKey(LongdocError):
    code = "invalid_object_key"
    http_status = 400
    exit_code = EXIT_USAGE
    hint = "Object keys are '/'-separated relative names without empty, '.'-leading or '..' segments, backslashes or control characters."


class InvalidTenant(LongdocError):
    code = "invalid_tenant"
    http_status = 422
    exit_code = EXIT_USAGE
    hint = "Tenant names are 1-63 characters of lowercase letters, digits, '_' and '-', starting with a letter or digit."


class DatabaseUnavailable(LongdocError):
    code = "database_unavailable"
    http_status = 503
    exit_code = EXIT_INTERNAL
    retryable = True
    hint = "Retry later; if it persists, check that the database is running and `database.url` is right."


class IdempotencyKeyReused(LongdocError):
    code = "idempotency_key_reused"
    http_status = 409
    exit_code = EXIT_USAGE
    hint = "An Idempotency-Key names one request; send a new key for another file or other options."


# --- jobs and the service ---------------------------------------------------


class JobStopped(LongdocError):
    """A running job was stopped between two groups (its work so far is
    checkpointed)."""

    code = "job_stopped"
    http_status = 409


class JobCancelled(JobStopped):
    code = "job_cancelled"
    hint = "The job was cancelled at your request; submit it again to redo it."


class JobTimedOut(JobStopped):
    code = "job_timeout"
    http_status = 504
    retryable = True
    hint = "The job ran past `service.timeout_seconds`; split the document or ask the operator to raise the limit."


class TooManyAttempts(LongdocError):
    """The job's process died N times while running it (it is presumed to be
    what kills it)."""

    code = "too_many_attempts"
    http_status = 422
    exit_code = EXIT_LIMIT
    hint = (
        "The service stopped unexpectedly every time it ran this job (`service.max_attempts`); "
        "check the document, split it, or ask the operator to look at the service logs."
    )


class LeaseLost(JobStopped):
    """The run's lease was taken back (its heartbeat went stale and another
    worker now runs the job or task): this run stops and writes nothing more."""

    code = "lease_lost"
    retryable = True
    hint = "Another worker took the work over after this one stopped heartbeating; nothing to do."


class BrokerUnavailable(LongdocError):
    code = "broker_unavailable"
    http_status = 503
    exit_code = EXIT_INTERNAL
    retryable = True
    hint = "Retry later; if it persists, check that the broker (`queue.broker_url`) is running."


class ShuttingDown(JobStopped):
    code = "shutting_down"
    http_status = 503
    retryable = True
    hint = "The server is restarting; retry shortly. Accepted jobs resume after the restart."


class Unauthorized(LongdocError):
    code = "unauthorized"
    http_status = 401
    exit_code = EXIT_USAGE
    hint = "Send `Authorization: Bearer <api key>` with a valid, unrevoked key (`longdoc keys create --tenant NAME`)."


class AdminForbidden(Unauthorized):
    code = "admin_forbidden"
    http_status = 403
    hint = "Admin endpoints need `Authorization: Bearer <service.admin_token>`; they are off when no admin token is configured."


class KeyExpired(Unauthorized):
    """A known, unrevoked key past its ``expires_at`` (set at creation, or
    the end of a rotated key's grace period). ``context`` may name the key's
    ``tenant`` and ``key_id`` (for the audit trail); the answer never does."""

    code = "key_expired"
    hint = ("This API key has expired: ask your administrator for a new key. A rotated key stops working "
            "at the end of its grace period; switch to its replacement before then.")
    #: context kept for the server's records, left out of :meth:`to_dict`
    PRIVATE_CONTEXT: ClassVar[tuple[str, ...]] = ("tenant", "key_id")

    def to_dict(self) -> dict[str, Any]:
        body = super().to_dict()
        body["context"] = {k: v for k, v in body["context"].items() if k not in self.PRIVATE_CONTEXT}
        return body


class DuplicateAuthorization(Unauthorized):
    """A request with more than one ``Authorization`` header."""

    code = "duplicate_authorization"
    http_status = 400
    hint = "Send exactly one `Authorization: Bearer <key>` header."


class JobNotFound(LongdocError):
    code = "job_not_found"
    http_status = 404
    exit_code = EXIT_USAGE
    hint = "Check the job id; jobs of other tenants are not visible."


class PageNotReady(LongdocError):
    code = "page_not_ready"
    http_status = 404
    retryable = True
    hint = "The page's group has not finished yet; poll the job and retry."


class PageNotFound(LongdocError):
    code = "page_not_found"
    http_status = 404
    exit_code = EXIT_USAGE
    hint = "Pages are the document's 1-based page numbers within the job's selected range."


class JobNotFinished(LongdocError):
    code = "job_not_finished"
    http_status = 202
    retryable = True
    hint = "The job is still queued or running; poll `GET /v1/jobs/{id}?wait=30` and fetch the result when it has succeeded."


class JobFailed(LongdocError):
    code = "job_failed"
    http_status = 409
    hint = "The job did not produce a result; its `error` says why."


class JobExpired(LongdocError):
    code = "job_expired"
    http_status = 410
    hint = "The job's stored data passed the retention period and was deleted; submit the document again."


class InvalidUpload(LongdocError):
    code = "invalid_upload"
    http_status = 400
    exit_code = EXIT_USAGE
    hint = "Send multipart/form-data with the document in a `file` field and optional `options` JSON (see /docs)."


class RateLimited(LongdocError):
    code = "rate_limited"
    http_status = 429
    retryable = True
    hint = "Slow down: wait for the number of seconds in `Retry-After`, then retry."


class TooManyConnections(LongdocError):
    code = "too_many_connections"
    http_status = 503
    retryable = True
    hint = "The server is at its connection limit; retry after `Retry-After` seconds, reusing one connection."


class MalformedRequest(LongdocError):
    """A request that is not valid HTTP/1.1 (its head could not be parsed);
    answered and the connection closed."""

    code = "malformed_request"
    http_status = 400
    exit_code = EXIT_USAGE
    hint = "Send a valid HTTP/1.1 request."


class AmbiguousRequestLength(MalformedRequest):
    """A request head that gives its body's length two ways (Content-Length
    with Transfer-Encoding, or Content-Length more than once): a proxy in
    front could read the body differently (request smuggling)."""

    code = "ambiguous_request_length"
    hint = "Send either one Content-Length or Transfer-Encoding: chunked, never both, and Content-Length once."


class BodyTooLarge(LimitExceeded):
    """A request body over what its path accepts (an /admin call's JSON)."""

    code = "body_too_large"
    http_status = 413
    hint = "Admin requests are small JSON objects; send the body the API describes (see /docs)."


class QueueFull(LongdocError):
    code = "queue_full"
    http_status = 429
    retryable = True
    hint = "The server's queue is full; retry after `Retry-After` seconds."


class KeyNotFound(LongdocError):
    code = "key_not_found"
    http_status = 404
    exit_code = EXIT_USAGE
    hint = "List keys with `longdoc keys list` or GET /admin/keys."


class KeyNotRotatable(LongdocError):
    """Only an active key (not revoked, not expired, not already rotated) can be rotated."""

    code = "key_not_rotatable"
    http_status = 409
    exit_code = EXIT_USAGE
    hint = ("Rotate the key's replacement (`replaced_by` in `longdoc keys list`), or make a new key with "
            "`longdoc keys create --tenant NAME`.")
