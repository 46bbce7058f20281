"""One settings object, validated at start-up.

Sources, lowest to highest precedence: built-in defaults, the YAML file
(``--config FILE`` or ``LONGDOC_CONFIG``), environment variables
``LONGDOC_<SECTION>__<KEY>`` (e.g. ``LONGDOC_INFERENCE__PAGE_CHUNK_SIZE=16``),
then explicit overrides (CLI flags). Nothing else in longdoc reads the
environment.
"""

from __future__ import annotations

import logging
import os
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from longdoc.durations import parse_duration
from longdoc.errors import ConfigError, InvalidDuration

log = logging.getLogger("longdoc.config")

OcrMode = Literal["auto", "force", "off"]
FurnitureMode = Literal["keep", "drop"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ServiceSettings(_Section):
    host: str = Field(default="127.0.0.1", description="address the HTTP service listens on")
    port: int = Field(default=8000, ge=1, le=65535, description="port the HTTP service listens on")
    max_concurrency: int = Field(default=16, ge=1, description="embedded: jobs running at once, at most "
                                 "max_concurrency - 1 of them long (a short document always has room); the server's "
                                 "pools: max_concurrency threads for short tasks, max_concurrency - 1 (at least "
                                 "one) each for cpu and engine tasks")
    timeout_seconds: int = Field(default=600, ge=1, description="a job's deadline: wall-clock seconds from its "
                                 "start (its first task), whatever ran, waited or restarted in between; checked "
                                 "when a task starts and between page groups, on both backends; past it the job "
                                 "fails job_timeout (a reconciler fails it queue.lease_seconds later should its "
                                 "engine never return)")
    max_queued: int = Field(default=1000, ge=1, description="queued jobs, counted exactly; then submit answers 429 "
                            "queue_full")
    short_doc_pages: int = Field(default=16, ge=1, description="documents up to this many pages use the short lane")
    rate_limit_per_minute: int = Field(default=120, ge=1, description="requests per API key (a key may override)")
    retention_hours: float = Field(default=168.0, gt=0, description="stored data of finished jobs expires after this")
    sync_max_pages: int = Field(default=10, ge=1, description="page cap of POST /v1/parse")
    sync_timeout_seconds: float = Field(default=60.0, gt=0, description="bounded wait of POST /v1/parse")
    admin_token: SecretStr | None = Field(default=None, description="enables /admin; at least 24 characters")
    allow_private_callbacks: bool = Field(default=False, description="allow webhooks to loopback/private addresses")
    tenant_engines: list[str] = Field(default_factory=list, description="engines a job's `engine` option may "
                                      "name besides inference.engine (what jobs that name none use); any other "
                                      "name, fake (the test double) included, is 400 unknown_engine at submit")
    webhook_max_attempts: int = Field(default=5, ge=1, description="delivery attempts of one webhook (exponential "
                                      "backoff, Retry-After honoured), each one recorded; then it is given up")
    warmup: bool = Field(default=True, description="run a real page through the engine before /readyz says "
                         "ready; false: ready at once, the engine loads on the first job")
    log_json: bool = Field(default=True, description="logs as JSON lines (with job_id and tenant; document text "
                           "is never logged); false: plain text lines")
    work_dir: str = Field(default="./data/work", description="temporary copies of documents being parsed "
                          "(a private folder, 0700, never /tmp); emptied at start, a job's folder removed when it ends or is deleted")
    max_attempts: int = Field(default=3, ge=1, description="times one task of a job may be run by a worker "
                              "that then went silent (died, hung, lost the database); that many takeovers fail "
                              "the job with too_many_attempts (a shutdown's put-back does not count)")
    shutdown_grace_seconds: float = Field(default=8.0, ge=0, description="embedded server: after SIGTERM, how "
                                          "long running tasks have to reach their next page group; those still "
                                          "running are then handed back to the queue (their group in flight runs "
                                          "again after the restart; not a takeover). Counted from the signal: keep "
                                          "it below the process manager's stop timeout (docker: 10 s by default)")
    max_connections: int = Field(default=1000, ge=1, description="open HTTP connections; more are answered 503 "
                                 "and closed at once (also kept below the open-files limit)")
    max_connections_per_client: int = Field(default=100, ge=0, description="open connections per client "
                                            "address (0 = no per-address limit; set 0 behind a proxy)")
    header_timeout_seconds: float = Field(default=10.0, gt=0, description="a request head must be complete "
                                          "within this time, counted from the connection's opening (with TLS: "
                                          "the end of the handshake) or, on a kept-alive connection, from the "
                                          "request's first byte; bytes arriving do not extend it")
    body_timeout_seconds: float = Field(default=30.0, gt=0, description="longest pause between two parts of "
                                        "a request body; also the body's head start in "
                                        "body_min_bytes_per_second")
    body_min_bytes_per_second: int = Field(default=16384, ge=1, description="slowest average rate a request "
                                           "body may arrive at: the connection is closed once reading the body "
                                           "has taken longer than body_timeout_seconds + bytes received / this "
                                           "rate (time the server itself was not reading does not count), so "
                                           "a body of limits.max_upload_mb (200) takes at most ~3.6 h at 16 KiB/s")
    keep_alive_timeout_seconds: int = Field(default=5, ge=1, description="idle keep-alive connections close after this")
    auth_failures_per_minute: int = Field(default=30, ge=1, description="failed authentications per client "
                                          "address, API keys and the admin token counted apart; then 429 for "
                                          "each wrong credential of that kind from the address until the minute "
                                          "passes (a valid one is still served)")
    rate_limit_storage_url: str | None = Field(default=None, description="where request counts live: None = "
                                               "in this process for queue.backend embedded, the broker's Redis "
                                               "for queue.backend celery; or any `limits` storage URL, e.g. "
                                               "redis://host:6379/1")
    tls_certfile: str | None = Field(default=None, description="PEM file of the certificate (and its chain) "
                                     "the service presents; with tls_keyfile the service speaks HTTPS only "
                                     "(HTTP/1.1 over TLS, on every listener); null = plain HTTP")
    tls_keyfile: str | None = Field(default=None, description="PEM file of tls_certfile's private key")
    tls_client_ca: str | None = Field(default=None, description="PEM file of the CA(s) client certificates must "
                                      "be signed by: set, every connection must present one (mutual TLS); "
                                      "needs tls_certfile")
    admin_host: str = Field(default="127.0.0.1", description="address of the admin listener (with "
                            "admin_port); keep it on an internal interface")
    admin_port: int | None = Field(default=None, ge=1, le=65535, description="set: /admin is served only on a "
                                   "second listener, admin_host:admin_port (which serves /admin and /healthz "
                                   "alone), and the public listener answers 404 for it; null = /admin on the "
                                   "public listener. The admin token applies either way")
    key_rotation_grace: str = Field(default="7d", description="how long a rotated key keeps working after "
                                    "`longdoc keys rotate` (POST /admin/keys/{id}/rotate) when no grace is "
                                    "given: a duration such as 7d, 12h, 1d12h; 0s = it stops at once")

    @field_validator("key_rotation_grace")
    @classmethod
    def _grace_is_a_duration(cls, value: str) -> str:
        try:
            parse_duration(value, allow_zero=True)
        except InvalidDuration as exc:
            raise ValueError(str(exc)) from None
        return value.strip()

    @property
    def key_rotation_grace_delta(self) -> timedelta:
        """:attr:`key_rotation_grace` as a timedelta."""
        return parse_duration(self.key_rotation_grace, allow_zero=True)
    audit: bool = Field(default=True, description="write an audit record (time, tenant, key id, client address, "
                        "action, job id, HTTP status, error code; never document text or file contents) for "
                        "every request that reads or changes a tenant's data, every admin action and every "
                        "failed authentication, into the database table audit_events")
    audit_queue_size: int = Field(default=10_000, ge=1, description="audit records waiting to be written; "
                                  "when full, further records are dropped and counted in "
                                  "longdoc_audit_records_dropped_total (the request itself goes on)")
    audit_retention_days: float = Field(default=90.0, gt=0, description="audit records older than this are "
                                        "deleted by the retention pass")

    @model_validator(mode="after")
    def _no_weak_admin_token(self) -> ServiceSettings:
        token = self.admin_token.get_secret_value() if self.admin_token else None
        if token is not None and len(token) < 24:
            raise ValueError("service.admin_token must be at least 24 characters")
        return self

    @model_validator(mode="after")
    def _tls_files_go_together(self) -> ServiceSettings:
        if bool(self.tls_certfile) != bool(self.tls_keyfile):
            raise ValueError("service.tls_certfile and service.tls_keyfile go together: set both or neither")
        if self.tls_client_ca and not self.tls_certfile:
            raise ValueError("service.tls_client_ca needs service.tls_certfile and service.tls_keyfile")
        return self

    @model_validator(mode="after")
    def _admin_listener_apart(self) -> ServiceSettings:
        if self.admin_port is not None and self.admin_port == self.port:
            raise ValueError(f"service.admin_port ({self.admin_port}) must differ from service.port")
        return self


OpenAIProfile = Literal["unlimited-ocr", "deepseek-ocr-2", "paddleocr-vl", "generic"]


class OpenAISettings(_Section):
    """The ``openai`` engine: a vLLM or SGLang server's OpenAI-compatible API."""

    base_url: str = Field(default="http://127.0.0.1:8001/v1", description="the server's /v1 URL")
    model: str | None = Field(default=None, description="served model name; None = the server's first model")
    api_key: SecretStr | None = Field(default=None, description="sent to the model server as a Bearer token; "
                                      "None = none")
    profile: OpenAIProfile = Field(default="unlimited-ocr", description="prompt, image mode and output parser")
    server: Literal["vllm", "sglang"] = Field(
        default="vllm", description="how the profile's no-repeat-n-gram guard is sent: vllm: vllm_xargs (the "
        "server started with the model's NGramPerReqLogitsProcessor); sglang: custom_logit_processor (SGLang's "
        "DeepseekOCRNoRepeatNGramLogitProcessor) and custom_params, which needs the server started with "
        "--enable-custom-logit-processor")
    max_concurrency: int = Field(default=8, ge=1, description="requests (and groups) in flight at once")
    kv_budget_tokens: int = Field(default=262_144, ge=1_000, description="KV tokens the server can hold; "
                                  "groups start while the estimate stays under kv_cache_watermark of it")
    timeout_seconds: float = Field(default=300.0, gt=0, description="one request's total time, first byte to "
                                   "last, streamed or not, its retries included (waits out of 429/503 are not "
                                   "counted); a request cut there is not retried: its pages go down the recovery "
                                   "ladder at once")
    retries: int = Field(default=3, ge=0, description="retries of a request after a 500, 502 or 504 or a dropped "
                         "connection (not after a timeout; 429/503 are waited out, see busy_wait_seconds)")
    busy_wait_seconds: float = Field(default=120.0, ge=0, description="the most time one group's requests spend "
                                     "waiting out 429 and 503 answers in all (Retry-After honoured, else a capped "
                                     "exponential backoff); then its pages go down the recovery ladder")
    max_pages_per_request: int | None = Field(default=None, ge=1, description="None = the profile's")
    max_tokens_per_page: int | None = Field(default=None, ge=16, description="a request asks for this × its pages "
                                            "(never more than the context leaves); None = the profile's recipe: "
                                            "8192 for one page, what the context leaves for several")
    prompt: str | None = Field(default=None, description="overrides the profile's prompt (generic profile)")
    fallback_engine: str | None = Field(default="rapidocr", description="CPU engine for pages the model "
                                        "cannot produce whole; None = such pages fail")
    stream: bool = Field(default=True, description="stream answers (a repetition loop is stopped early)")


class NativeSettings(_Section):
    """The ``native`` engine: Unlimited-OCR in-process with longdoc's R-SWA / SR-SWA cache."""

    model_path: str | None = Field(default=None, description="checkpoint folder (config.json, *.safetensors, "
                                   "tokenizer, SHA256SUMS); None = inference.model_path")
    device: Literal["auto", "cpu", "cuda"] = Field(default="auto", description="auto: cuda when present")
    dtype: Literal["auto", "bfloat16", "float32", "float64"] = Field(
        default="auto", description="auto: bfloat16 on cuda, float32 on cpu")
    attention: Literal["srswa", "rswa"] = Field(default="rswa", description="rswa: every resident page, every "
                                                "block, as the model was trained and as the reference generate() "
                                                "decodes (exact); srswa: page gating and block selection, an "
                                                "approximation whose departure docs/engines.md measures")
    window: int | None = Field(default=None, ge=1, description="generated tokens each step attends to (n); "
                               "null = the checkpoint's text_config.sliding_window (128 for Unlimited-OCR, as "
                               "in its paper); another value is an experiment: warned of at start and recorded "
                               "in every page's engine_version (-w<n>-ckpt<checkpoint's n>). Not the "
                               "no-repeat-n-gram guard's window (1024 tokens)")
    top_pages: int = Field(default=4, ge=1, description="SR-SWA: pages a step looks at (besides the focus pages)")
    top_blocks: int = Field(default=64, ge=1, description="SR-SWA: blocks of keys per head inside them")
    block_size: int = Field(default=16, ge=1, description="SR-SWA: keys per block")
    gating: Literal["mean", "bound"] = Field(default="mean", description="SR-SWA page gating: by a page's mean "
                                             "key, or by the upper bound from its min/max keys")
    rebase_positions: bool = Field(default=True, description="each page group starts from rotary position 0: "
                                   "the window is moved by its positions alone (exact), a carried page's keys by one "
                                   "more rotation in float32 (one rounding to the cache's dtype; a page is carried "
                                   "once while chunk_overlap <= page_chunk_size / 2)")
    no_repeat_ngram_size: int = Field(default=35, ge=0, description="no n-gram of this many tokens is "
                                      "repeated within the guard's window (Unlimited-OCR's recipe: 35); 0 = off")
    no_repeat_ngram_window: int = Field(default=1024, ge=1, description="ids the n-gram guard searches: the "
                                        "last of the reference (BOS, image placeholders, prompt) and every "
                                        "generated token (the recipe's multi-page 1024)")
    max_tokens_per_page: int = Field(default=8192, ge=8, description="a page still open after this many tokens "
                                     "is cut and goes to the fallback engine (8192: the max_tokens of Unlimited-OCR's "
                                     "vLLM recipe for one page)")
    max_sequences: int = Field(default=16, ge=1, description="documents decoding together in one batch")
    kv_budget_mb: int | None = Field(default=None, ge=1, description="KV workspace capacity; sequences are "
                                     "admitted while their reserved peaks stay under kv_cache_watermark of it; "
                                     "null = sized from the architecture so max_sequences sequences fit "
                                     "(one sequence's peak × max_sequences / kv_cache_watermark). The start-up "
                                     "log and /readyz say how many fit")
    fallback_engine: str | None = Field(default="rapidocr", description="CPU engine for pages the model did "
                                        "not finish; None = such pages fail")


class RapidOcrSettings(_Section):
    """The rapidocr engine's own settings (``inference.rapidocr``)."""

    recognizer: Literal["auto", "cascade", "small", "tiny"] = Field(
        default="cascade", description="which text recognizer reads the lines; cascade: PP-OCRv6 tiny "
        "reads every line and the small model reads again the lines `recheck` names; small or tiny: that model "
        "alone; auto: small alone where this machine runs it at most 2.2x tiny's cost (timed with the runtimes, "
        "e.g. OpenVINO on AMX), else the cascade (what reads then depends on the machine; the profiles name one)")
    recheck_below: float = Field(default=0.93, ge=0.0, le=1.0, description="cascade: a line tiny reads "
                                 "with a mean character confidence below this (or with a run of 4+ digits) is "
                                 "read again by the small model")
    recheck: Literal["codes", "doubts"] = Field(
        default="codes", description="cascade: which lines the small model reads again; codes: those holding "
        "what users search for and tiny misreads while sure of itself (a run of 4+ digits, a token mixing letters "
        "and digits, a case change inside a word) and those read with a mean confidence below recheck_below; "
        "doubts: also every line with one hesitant character or punctuation glued to a word (about a third of a "
        "real page's lines)")
    glyph_checks: bool = Field(default=True, description="read again from the page's pixels what the "
                               "recognizer guesses in codes: O or 0 by the glyph's shape, the spaces of "
                               "fixed-pitch (code) lines by their character grid (about an eighth of the tiny "
                               "recognizer's page time; runs of a repeated symbol and leader dots are counted "
                               "from the pixels either way)")
    int8: bool = Field(default=False, description="the int8 copy of the small recognizer, built from the "
                       "wheel's model (its convolutions in int8): 1.2x faster on ONNX Runtime, slower on OpenVINO, "
                       "and it reads real documents worse (line CER 1.23% against 1.11%, bench/lines.py); "
                       "false = the float model")
    recycle_after_pages: int = Field(default=200, ge=0, description="a worker process is replaced after "
                                     "about this many pages, between groups (its runtime's memory arena never "
                                     "shrinks); 0 = never")


Profile = Literal["fast", "balanced", "accurate"]

#: What each ``inference.profile`` sets, as dotted keys under ``inference``.
#: A key the configuration (file, environment, flags) sets itself keeps its
#: own value: a profile only fills what was left unsaid. ``balanced``, the
#: default, is the fields' own defaults. The figures behind each bundle
#: (pages/s and CER against OCRmyPDF on real scanned manuals) are in
#: docs/profiles.md.
PROFILES: dict[str, dict[str, Any]] = {
    "fast": {"rapidocr.recognizer": "tiny", "rapidocr.glyph_checks": False, "regions": False},
    "balanced": {"rapidocr.recognizer": "cascade", "rapidocr.recheck": "codes", "rapidocr.glyph_checks": True,
                 "regions": True},
    "accurate": {"rapidocr.recognizer": "small", "rapidocr.glyph_checks": True, "regions": True},
}


class InferenceSettings(_Section):
    profile: Profile = Field(default="balanced", description="a bundle of the settings below that trades "
                             "reading for speed (docs/profiles.md): fast (the tiny recognizer alone, no layout "
                             "models), balanced (tiny, with the lines holding codes and numbers read again by the "
                             "small model), accurate (the small recognizer on every line); a setting given "
                             "explicitly wins over its profile's")
    engine: str = Field(default="rapidocr", description="OCR engine of `longdoc parse` and of jobs that name "
                        "none: rapidocr, tesseract, openai, native, fake, or one a plugin registers")
    plugins: list[str] = Field(default_factory=list, description="modules (dotted names or .py files) imported "
                               "before engines are looked up; each registers its engines with "
                               "longdoc.engines.register_engine. Installed packages can also declare engines "
                               "under the `longdoc.engines` entry-point group")
    model_path: str | None = Field(default=None, description="the native engine's checkpoint folder when "
                                   "inference.native.model_path is None")
    page_chunk_size: int = Field(default=32, ge=1, description="pages per group (C): the unit of "
                                 "scheduling, checkpoint and retry")
    chunk_overlap: int = Field(default=2, ge=0, description="pages shared by consecutive "
                                 "groups (O), below page_chunk_size; group g starts at g·(C−O)")
    kv_cache_watermark: float = Field(default=0.8, gt=0.0, le=1.0, description="a page group waits while the "
                                      "engine's workspace would pass this fraction of its budget")
    workspace_budget_mb: int = Field(
        default=2048, ge=16, description="workspace budget the watermark applies to"
    )
    dpi: int = Field(default=200, ge=50, le=600, description="resolution pages are rendered at for OCR (lower "
                     "where limits.max_render_pixels requires)")
    ocr: OcrMode = Field(default="auto", description="auto: the PDF text layer where it is sound, OCR where it "
                         "is missing or garbage; force: render and OCR every page; off: text layer only")
    workers: int = Field(default=0, ge=0, description="parallel page workers; 0 = one per core")
    threads_per_worker: int = Field(default=1, ge=1, description="threads of each page worker (rapidocr's "
                                    "runtimes; tesseract's OMP_THREAD_LIMIT)")
    page_timeout_seconds: float = Field(default=300.0, gt=0, description="one page in the OCR engine; past it "
                                        "the page fails with engine_failed (retryable)")
    backend: Literal["auto", "onnxruntime", "openvino"] = Field(
        default="auto", description="runtime of the rapidocr engine's models and of the layout model; auto: for each "
        "model (detector, recognizer, the cascade's second recognizer, layout) the faster one on this machine, timed "
        "once and remembered")
    regions: bool = Field(default=True, description="find tables (with their cells), figures, captions, headers "
                          "and footers with the layout and table-structure models before laying out a page")
    table_model_path: str | None = Field(default=None, description="SLANet-plus ONNX file for table cells; "
                                         "None = the one scripts/setup.sh installed")
    rapidocr: RapidOcrSettings = Field(default_factory=RapidOcrSettings, description="the rapidocr engine's own "
                                       "settings")
    openai: OpenAISettings = OpenAISettings()
    native: NativeSettings = NativeSettings()

    @model_validator(mode="after")
    def _apply_profile(self) -> InferenceSettings:
        """Fill each key of ``PROFILES[profile]`` that was not set
        explicitly (left out of ``model_fields_set``, so it stays unset:
        :meth:`with_profile` can tell the profile's values from the user's)."""
        for key, value in PROFILES[self.profile].items():
            section, _, name = key.rpartition(".")
            target: BaseModel = getattr(self, section) if section else self
            if name not in target.model_fields_set:
                target.__dict__[name] = value
        return self

    def with_profile(self, profile: str | None) -> InferenceSettings:
        """These settings under ``profile`` (None: as they are): what was set
        explicitly stays, the rest comes from the profile."""
        if profile is None or profile == self.profile:
            return self
        data = self.model_dump(exclude_unset=True)
        data["profile"] = profile
        return InferenceSettings.model_validate(data)

    @model_validator(mode="after")
    def _overlap_below_chunk(self) -> InferenceSettings:
        if self.chunk_overlap >= self.page_chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than "
                f"page_chunk_size ({self.page_chunk_size})"
            )
        return self

    def effective_workers(self) -> int:
        return self.workers or max(1, os.cpu_count() or 1)


class S3Settings(_Section):
    """How an ``s3://`` storage.url is reached; credentials come from boto3's
    usual sources (AWS_* environment variables, ~/.aws, instance role), never
    from longdoc's configuration."""

    endpoint_url: str | None = Field(default=None, description="S3-compatible service, e.g. http://minio:9000 "
                                     "(path-style addressing); null = AWS")
    region: str | None = Field(default=None, description="bucket region; null = boto3's default")
    multipart_threshold_mb: int = Field(default=16, ge=5, description="objects this large or larger are uploaded "
                                        "in parts of this size")
    presign_seconds: int | None = Field(default=None, ge=1, description="lifetime of presigned download URLs; "
                                        "null = no presigned URLs")
    ca_file: str | None = Field(default=None, description="PEM file of the CA(s) the S3 endpoint's certificate "
                                "is checked against (an https endpoint_url under a private CA); null = botocore's "
                                "own CA bundle")


class StorageSettings(_Section):
    url: str = Field(default="file://./data", description="where originals, page results and exports are "
                     "stored: file://FOLDER or s3://BUCKET/PREFIX")
    s3: S3Settings = S3Settings()


class DatabaseSettings(_Section):
    url: str = Field(default="sqlite:///./data/longdoc.db", description="the job database (SQLAlchemy URL): "
                     "sqlite:///FILE or postgresql+psycopg://user@host/db")
    pool_size: int = Field(default=5, ge=1, description="PostgreSQL: connections kept open per process")
    max_overflow: int = Field(default=10, ge=0, description="PostgreSQL: extra connections a process may open "
                              "under load")

    def engine_options(self) -> dict[str, int]:
        return {"pool_size": self.pool_size, "max_overflow": self.max_overflow}


class QueueSettings(_Section):
    """Where jobs' tasks run: ``embedded`` (pools of threads in the server
    process) or ``celery`` (API replicas plus ``longdoc worker`` processes on
    a broker). The tasks, their records and their leases are the same."""

    backend: Literal["embedded", "celery"] = Field(default="embedded", description="embedded: jobs' tasks run "
                                                   "in pools of threads in the server process; celery: API "
                                                   "replicas plus longdoc worker processes")
    broker_url: str | None = Field(default=None, description="celery (needed there): the broker, e.g. "
                                   "redis://127.0.0.1:6379/0 or amqp://guest:guest@127.0.0.1:5672//")
    lease_seconds: float = Field(default=60.0, ge=1.0, description="a running task whose heartbeat is older than "
                                 "this is taken back and run again from its last checkpointed group (its worker "
                                 "heartbeats every third of it); also the grace a job's task has to stop it past its "
                                 "deadline or a cancel before a reconciler ends it")
    redeliver_after_seconds: float = Field(default=120.0, ge=1.0, description="celery: a task queued this long "
                                           "without starting is sent again (its message was lost, e.g. the broker "
                                           "restarted); a second copy is harmless")
    reconcile_interval_seconds: float = Field(default=5.0, gt=0.0, description="how often the reconciler looks "
                                              "for stale leases and lost tasks")
    task_time_limit_seconds: int = Field(default=3600, ge=10, description="celery: hard limit of one task (one "
                                         "page group, ingest or assemble); the worker process is replaced past it")
    task_retries: int = Field(default=8, ge=0, description="times a task is retried after a transient "
                              "fault (database, store or broker unreachable), with exponential backoff from 2 s "
                              "(8 retries ride out ~8 minutes of outage)")
    max_running_jobs: int | None = Field(default=None, ge=1, description="celery: jobs running at once on the "
                                         "whole fleet, at most max_running_jobs - 1 of them long (a short document "
                                         "always has room): a job's first task that finds no room goes back to the "
                                         "queue for a few seconds; null = as many as the workers take (the embedded "
                                         "server counts against service.max_concurrency)")
    render_ahead_groups: int = Field(default=4, ge=1, description="page groups of one document rendered "
                                     "(by cpu tasks, into the store) ahead of the engine tasks; bounds the "
                                     "rendered images a document keeps in the store at once")
    worker_metrics_port: int | None = Field(default=None, ge=1, le=65535, description="celery: each worker "
                                            "process serves its own Prometheus metrics (pages, stage seconds, "
                                            "webhook attempts) on this port plus its pool index (0, 1, …); "
                                            "null = off")
    max_tasks_per_child: int | None = Field(default=200, ge=1, description="celery: a worker process is "
                                            "replaced after this many tasks (the OCR runtime's memory arena never "
                                            "shrinks); null = never")
    tls_ca_file: str | None = Field(default=None, description="PEM file of the CA(s) the certificates of "
                                    "Redis servers reached over rediss:// (the broker, the rate-limit store) are "
                                    "checked against; null = the system's CAs. A rediss:// server's certificate "
                                    "is always checked")

    @model_validator(mode="after")
    def _celery_needs_a_broker(self) -> QueueSettings:
        if self.backend == "celery" and not self.broker_url:
            raise ValueError("queue.backend celery needs queue.broker_url (e.g. redis://127.0.0.1:6379/0)")
        return self


class ClientSettings(_Section):
    url: str = Field(default="http://127.0.0.1:8000", description="the server `longdoc submit` talks to")
    api_key: SecretStr | None = Field(default=None, description="the API key `longdoc submit` sends")
    ca_file: str | None = Field(default=None, description="PEM file of the CA(s) an https server's "
                                "certificate is checked against (`longdoc submit`, LongdocClient); null = the "
                                "public CAs of certifi's bundle")
    cert_file: str | None = Field(default=None, description="PEM file of the client certificate sent to a server "
                                  "that asks for one (service.tls_client_ca); may hold the key too")
    key_file: str | None = Field(default=None, description="PEM file of cert_file's private key, when it is not "
                                 "in cert_file")


class ExportSettings(_Section):
    chunk_tokens: int = Field(default=512, ge=32, le=100_000, description="token budget of one chunk in the "
                              "chunks export (counted as longdoc.export.chunks.count_tokens does)")
    furniture: FurnitureMode = Field(default="drop", description="running headers, footers and page numbers "
                                     "in the md, txt and chunks exports: keep (where they stand on the page) or "
                                     "drop; the JSON always has them. `longdoc parse --furniture` and a job's "
                                     "`furniture` option default to this")
    review_below: float = Field(default=0.85, ge=0.0, le=1.0, description="an OCR page whose confidence (the "
                                "mean of its lines', weighted by characters) is below this is flagged "
                                "low_confidence and listed in the document's review_pages")


class LimitSettings(_Section):
    max_upload_mb: int = Field(default=200, ge=1, description="bytes of one upload, in MiB; more is answered "
                               "413 upload_too_large")
    max_pages: int = Field(default=2000, ge=1, description="pages of one document (the whole document, not the "
                           "range); more is answered 422 too_many_pages")
    max_pixels: int = Field(default=60_000_000, ge=1, description="an image file's page above this is refused")
    max_render_pixels: int = Field(default=20_000_000, ge=10_000, description="a page is rendered at the "
                                   "asked DPI or lower, so it has at most this many pixels (its JSON says so)")
    worker_memory_mb: int = Field(default=1536, ge=64, description="address space a document sandbox may "
                                  "add to its start size while it opens, reads or renders the document")
    worker_timeout_seconds: float = Field(default=60.0, gt=0, description="time one sandbox step (open, "
                                          "one page's text or render) may take")
    tenant_storage_mb: int | None = Field(default=10240, ge=1, description="stored bytes per tenant (originals, "
                                          "checkpoints, exports of jobs not yet expired or deleted); null = no quota")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="LONGDOC_", env_nested_delimiter="__", extra="forbid"
    )

    service: ServiceSettings = ServiceSettings()
    inference: InferenceSettings = InferenceSettings()
    storage: StorageSettings = StorageSettings()
    database: DatabaseSettings = DatabaseSettings()
    queue: QueueSettings = QueueSettings()
    limits: LimitSettings = LimitSettings()
    client: ClientSettings = ClientSettings()
    export: ExportSettings = ExportSettings()

    yaml_file: ClassVar[Path | None] = None

    @model_validator(mode="after")
    def _request_timeout_below_job_timeout(self) -> Settings:
        if self.inference.engine == "openai" and self.inference.openai.timeout_seconds >= self.service.timeout_seconds:
            raise ValueError(
                f"inference.openai.timeout_seconds ({self.inference.openai.timeout_seconds:g}) must be below "
                f"service.timeout_seconds ({self.service.timeout_seconds}): a request times out before its job"
            )
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if cls.yaml_file is not None:
            sources.append(YamlConfigSettingsSource(settings_cls, yaml_file=cls.yaml_file))
        return tuple(sources)


def load_settings(
    config_file: str | Path | None = None,
    overrides: dict[str, dict[str, Any]] | None = None,
) -> Settings:
    """Build the effective settings.

    ``config_file`` falls back to ``$LONGDOC_CONFIG``. ``overrides`` is
    ``{section: {key: value}}`` (None values ignored) and wins over everything.
    Raises :class:`ConfigError` naming the offending field.
    """
    path = config_file or os.environ.get("LONGDOC_CONFIG")
    yaml_path: Path | None = None
    if path:
        yaml_path = Path(path)
        if not yaml_path.is_file():
            raise ConfigError(f"Config file {yaml_path} does not exist.")
        try:
            loaded = yaml.safe_load(yaml_path.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise ConfigError(f"Config file {yaml_path} is not valid YAML: {exc}") from exc
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"Config file {yaml_path} must be a mapping of sections.")
    init: dict[str, Any] = {}
    for section, values in (overrides or {}).items():
        clean = {k: v for k, v in values.items() if v is not None}
        if clean:
            init[section] = clean
    klass = type("Settings", (Settings,), {"yaml_file": yaml_path})
    try:
        return klass(**init)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(f"Invalid configuration: {problems}") from exc


def dump_settings(settings: Settings) -> str:
    """The effective configuration as YAML (secrets shown as ``**********``)."""
    return yaml.safe_dump(settings.model_dump(mode="json"), sort_keys=False)
