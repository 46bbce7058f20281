"""The pipeline: a document in, exports out, group by group.

::

    ingest ─► plan ─► [ per group: recognize (text layer | render ─► engine)
                                   ─► regions ─► layout ─► checkpoint ] ─► assemble ─► export

:meth:`Pipeline.parse` reads as that list of stages. Memory does not grow
with page count: pages are rendered lazily inside a group, only the groups
in flight plus the boundary cache are held, and the exports stream from the
checkpoint with one page of look-ahead for stitching.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pypdfium2

from longdoc import __version__
from longdoc.assemble import stitch
from longdoc.config import InferenceSettings, Settings
from longdoc.engines import get_engine, load_plugins
from longdoc.engines.base import Engine, EngineCapabilities
from longdoc.regions.detector import RegionDetector
from longdoc.export import ExportContext, open_exports
from longdoc.ingest import parse_page_range
from longdoc.ingest.sandbox import check_helper_sockets, open_sandboxed
from longdoc.ingest.source import DocumentSource
from longdoc.errors import OutputError, StorageError
from longdoc.model import DocumentStatus, ErrorInfo, PageStatus, SourceInfo
from longdoc.pipeline.checkpoint import Checkpoint
from longdoc.pipeline.document import DocumentRun
from longdoc.pipeline.labels import with_label
from longdoc.pipeline.options import ParseOptions
from longdoc.pipeline.recognize import TEXT_LAYER_ENGINE, EngineLane
from longdoc.pipeline.review import with_review
from longdoc.plan import Admission, FairTurns, Group, Workspace, plan_groups
from longdoc.progress import NullProgress, Progress
from longdoc.storage.checkpoint import folder_checkpoint

log = logging.getLogger("longdoc.pipeline")

TEXT_LAYER_VERSION = f"pdfium-{pypdfium2.PDFIUM_INFO.build}"


@dataclass
class OpenDocument:
    """A document opened in its sandbox, with its selected page numbers
    (1-based) and page groups."""

    source: DocumentSource
    numbers: list[int]
    groups: list[Group]
    #: the original file (what the searchable PDF export is made from)
    path: Path | None = None


@dataclass
class ParseResult:
    status: DocumentStatus
    outputs: dict[str, Path]
    pages: int
    failed_pages: list[int]
    resumed_pages: int
    errors: list[ErrorInfo] = field(default_factory=list)
    #: pages a person should check by eye (:meth:`~longdoc.model.Page.needs_review`)
    review_pages: list[int] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    #: seconds per page stage (render, recognize, layout, text_layer, …) summed over the pages
    stage_seconds: dict[str, float] = field(default_factory=dict)
    workspace_peak: int = 0


class Pipeline:
    """Parses documents with one set of settings; holds the engines (built
    on first need, loaded before their first page) across documents. Use as
    a context manager or call :meth:`close`.

    Thread-safe for concurrent :meth:`parse` calls. Per engine, all
    documents share one workspace (admission by ``kv_cache_watermark``) and
    one set of turns, as many as the engine's ``groups_in_flight``, handed
    round-robin by ``owner`` (:class:`~longdoc.plan.FairTurns`); layout,
    checkpoints and exports run in parallel.

    Documents are opened, read and rendered in a sandbox process
    (:mod:`longdoc.ingest.sandbox`): a hostile file costs at most
    ``limits.worker_memory_mb`` and ``limits.worker_timeout_seconds`` per
    step, outside this process."""

    def __init__(self, settings: Settings, engine_factory: Callable[[str], Engine] | None = None):
        check_helper_sockets()
        self.settings = settings
        load_plugins(settings.inference.plugins)
        self._engine_factory = engine_factory or (lambda name: get_engine(name, settings.inference))
        self._engines: dict[str, Engine] = {}
        self._admissions: dict[str, Admission] = {}
        self._turns: dict[str, FairTurns] = {}
        self._regions: RegionDetector | None = None
        self._lock = threading.Lock()
        #: one per engine: its load runs once, and every other caller waits for it
        self._loading: dict[str, threading.Lock] = {}

    def engine_key(self, options: ParseOptions) -> str:
        """Under which name the pipeline holds the engine ``options`` select:
        the engine's own name, or ``<name>@<profile>`` when the job's
        profile (:data:`~longdoc.config.PROFILES`) configures the engine
        otherwise than the settings' own (one more pool of workers, built
        on the first job that asks for it)."""
        inference = self.settings.inference
        if options.profile == inference.profile or _engine_part(inference.with_profile(options.profile)) == \
                _engine_part(inference):
            return options.engine
        return f"{options.engine}@{options.profile}"

    def _build(self, key: str) -> Engine:
        name, _, profile = key.partition("@")
        if not profile:
            return self._engine_factory(name)
        return get_engine(name, self.settings.inference.with_profile(profile))

    def _engine_object(self, name: str) -> Engine:
        """The engine called ``name`` (an :meth:`engine_key`), built (cheap)
        but not loaded, with its admission and turns."""
        with self._lock:
            if name not in self._engines:
                engine = self._build(name)
                workspace = Workspace(budget=engine.workspace_budget, watermark=self.settings.inference.kv_cache_watermark,
                                      unit=engine.capabilities.cost_unit)
                self._admissions[name] = Admission(workspace)
                self._turns[name] = FairTurns(slots=engine.capabilities.groups_in_flight)
                self._loading[name] = threading.Lock()
                self._engines[name] = engine
            return self._engines[name]

    def engine(self, name: str) -> Engine:
        """The engine called ``name``, loaded (workers started, warmed up).
        Callers that come while it loads (a restarted server's taken-back
        tasks while warm-up loads it) wait for that one load and share it."""
        engine = self._engine_object(name)
        with self._loading[name]:
            engine.load()  # idempotent
        return engine

    def engine_capabilities(self, name: str) -> EngineCapabilities:
        """What the engine ``name`` declares (built if needed, not loaded)."""
        return self._engine_object(name).capabilities

    def engine_health(self, name: str) -> bool:
        """Whether the engine ``name`` can take work now (built if needed, not loaded)."""
        return self._engine_object(name).health()

    def admission(self, name: str) -> Admission:
        """The admission (workspace and counters) of the engine ``name``."""
        self._engine_object(name)
        return self._admissions[name]

    def engines(self) -> dict[str, Engine]:
        """Every engine built so far, by name."""
        with self._lock:
            return dict(self._engines)

    def admissions(self) -> dict[str, Admission]:
        """The admission of every engine built so far, by name."""
        with self._lock:
            return dict(self._admissions)

    def loaded_engines(self) -> list[str]:
        """Names of the engines built so far (an engine is built on first use
        and loaded before its first page)."""
        return list(self._engines)

    def region_detector(self) -> RegionDetector:
        """The layout and table models' worker pool (built on first use)."""
        with self._lock:
            if self._regions is None:
                inf = self.settings.inference
                self._regions = RegionDetector(inf.effective_workers(), inf.table_model_path, backend=inf.backend)
            return self._regions

    def close(self) -> None:
        for engine in self._engines.values():
            engine.close()
        self._engines.clear()
        if self._regions is not None:
            self._regions.close()

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the pipeline ------------------------------------------------------

    def parse(
        self,
        path: str | Path,
        out_dir: str | Path,
        options: ParseOptions,
        progress: Progress | None = None,
        checkpoint: Checkpoint | None = None,
        stem: str | None = None,
        control: Callable[[], None] | None = None,
        name: str | None = None,
        owner: str = "",
    ) -> ParseResult:
        """Parse ``path`` into ``out_dir/<stem>.<fmt>`` for each format.

        Raises input errors (LongdocError subclasses) before any page work;
        page-level failures end up in the result (status ``partial``).
        ``control`` is called before each group; it stops the run by raising
        (e.g. :class:`~longdoc.errors.JobCancelled`) — finished groups stay
        checkpointed, so a later call resumes. ``name`` is the document's
        name in the result and in messages (default: the file's); ``owner``
        (a tenant) is whom the engine's turns are shared fairly between.
        """
        progress = progress or NullProgress()
        out_dir = Path(out_dir)
        stem = stem or Path(path).stem
        t_start = time.perf_counter()
        with _folder_errors(out_dir / ".longdoc" if checkpoint is None else None):
            checkpoint = checkpoint or folder_checkpoint(out_dir / ".longdoc" / stem)
            with self.open_document(path, options, checkpoint, name=name) as doc:            # ingest, plan
                progress.start(doc.source.name, len(doc.numbers))
                resumed = self.run_groups(doc, options, checkpoint, progress, control, owner)  # recognize, layout, checkpoint
                t_groups = time.perf_counter()
                result = self.assemble(doc, options, checkpoint, out_dir, stem)             # assemble, export
                progress.finish()
        result.resumed_pages = resumed
        result.timings = {
            "pages": t_groups - t_start,
            "assemble_export": time.perf_counter() - t_groups,
            "total": time.perf_counter() - t_start,
        }
        return result

    # -- the stages, one at a time (the fleet runs each as its own task) ------

    @contextmanager
    def open_document(self, path: str | Path, options: ParseOptions, checkpoint: Checkpoint, *,
                      name: str | None = None, begin: bool = True) -> Iterator[OpenDocument]:
        """Open ``path`` in a sandbox and plan its page groups. ``begin``
        starts (or resumes) ``checkpoint`` for this input, these options and
        this engine version, discarding work made for others; tasks of a job
        already begun pass False so that a worker with another engine
        version never discards its peers' pages. Raises input errors."""
        with open_sandboxed(path, self.settings.limits, name=name) as source:
            numbers = parse_page_range(options.pages, source.page_count)
            groups = plan_groups(len(numbers), options.page_chunk_size, options.chunk_overlap)
            if begin:
                checkpoint.begin(options.fingerprint(source.sha256, self._engine_version(options)))
            yield OpenDocument(source, numbers, groups, Path(path))

    def run_groups(self, doc: OpenDocument, options: ParseOptions, checkpoint: Checkpoint,
                   progress: Progress | None = None, control: Callable[[], None] | None = None,
                   owner: str = "", only: set[int] | None = None) -> int:
        """Recognize, lay out and checkpoint the document's groups (those in
        ``only``, or every one not checkpointed yet); returns how many pages
        were resumed from the checkpoint."""
        with self._document_run(doc.source, doc.numbers, options, checkpoint, progress or NullProgress(),
                                control, owner) as run:
            return run.run(doc.groups, only)

    def assemble(self, doc: OpenDocument, options: ParseOptions, checkpoint: Checkpoint, out_dir: str | Path,
                 stem: str) -> ParseResult:
        """Stitch every checkpointed page into ``out_dir/<stem>.<fmt>``."""
        context = ExportContext(original=doc.path, limits=self.settings.limits,
                                chunk_tokens=self.settings.export.chunk_tokens,
                                furniture=options.furniture == "keep")
        result = self._assemble_and_export(doc.source, doc.numbers, options, checkpoint, Path(out_dir), stem,
                                           context)
        if options.ocr != "off":
            result.workspace_peak = self.admission(self.engine_key(options)).workspace.peak  # shared by concurrent parses
        return result

    def _document_run(
        self,
        source: DocumentSource,
        numbers: list[int],
        options: ParseOptions,
        checkpoint: Checkpoint,
        progress: Progress,
        control: Callable[[], None] | None,
        owner: str,
    ) -> DocumentRun:
        lane = None
        lookahead = 1
        if options.ocr != "off":
            name = self.engine_key(options)
            capabilities = self._engine_object(name).capabilities
            lookahead = 1 if capabilities.sequential_groups else capabilities.groups_in_flight

            def lane() -> EngineLane:
                return EngineLane(self.engine(name), self._admissions[name], self._turns[name], owner,
                                  threading.Event())

        regions = self.region_detector() if options.regions else None
        return DocumentRun(source, numbers, options, checkpoint, progress, control or (lambda: None), lane,
                           lookahead, TEXT_LAYER_VERSION, self.settings.export.review_below, regions)

    def _assemble_and_export(
        self,
        source: DocumentSource,
        numbers: list[int],
        options: ParseOptions,
        checkpoint: Checkpoint,
        out_dir: Path,
        stem: str,
        context: ExportContext,
    ) -> ParseResult:
        header = {
            "schema": "longdoc.document/1",
            "longdoc_version": __version__,
            "source": SourceInfo(
                name=source.name, sha256=source.sha256, media_type=source.media_type,
                page_count=source.page_count, selected_pages=numbers,
            ).model_dump(mode="json"),
            "options": options.public(),
        }
        failed: list[int] = []
        review: list[int] = []
        errors: list[ErrorInfo] = []
        stage_seconds: dict[str, float] = {}
        review_below = self.settings.export.review_below
        exports = open_exports(out_dir, stem, options.formats, header, context)
        try:
            reviewed = (with_review(page, review_below) for page in _checkpointed_pages(checkpoint, numbers))
            for page in stitch(reviewed):
                page = with_label(page, source)  # a page checkpointed before page labels existed
                if page.needs_review():
                    review.append(page.number)
                for stage, seconds in page.timings.items():
                    stage_seconds[stage] = stage_seconds.get(stage, 0.0) + seconds
                if page.status is PageStatus.FAILED:
                    failed.append(page.number)
                    if page.error is not None:
                        errors.append(page.error)
                exports.write_page(page)
        except BaseException:
            exports.abort()
            raise
        if not failed:
            status = DocumentStatus.SUCCEEDED
        elif len(failed) == len(numbers):
            status = DocumentStatus.FAILED
        else:
            status = DocumentStatus.PARTIAL
        outputs = exports.close(status, errors, {})
        return ParseResult(status=status, outputs=outputs, pages=len(numbers), failed_pages=failed,
                           resumed_pages=0, errors=errors, review_pages=review, stage_seconds=stage_seconds)

    def _engine_version(self, options: ParseOptions) -> str:
        name, version = self.engine_name_version(options)
        return f"{name}:{version}"

    def engine_name_version(self, options: ParseOptions) -> tuple[str, str]:
        """The engine ``options`` select and its version (the text layer's
        with ``ocr=off``), without loading it."""
        if options.ocr == "off":
            return TEXT_LAYER_ENGINE, TEXT_LAYER_VERSION
        return options.engine, self._engine_object(self.engine_key(options)).version


def _engine_part(inference: InferenceSettings) -> dict[str, object]:
    """The settings an engine is built from: all of ``inference`` but what
    each run passes itself (profile, regions, dpi, the page groups)."""
    return inference.model_dump(exclude={"profile", "regions", "dpi", "ocr", "page_chunk_size", "chunk_overlap"})


def _checkpointed_pages(checkpoint: Checkpoint, numbers: list[int]) -> Iterator:
    for n in numbers:
        page = checkpoint.load_page(n)
        if page is None:  # invariant: every selected page was checkpointed
            raise AssertionError(f"page {n} missing from the checkpoint after all groups ran")
        yield page


@contextmanager
def _folder_errors(folder: Path | None) -> Iterator[None]:
    """The checkpoint kept in ``folder`` (the CLI's, beside its outputs):
    a store error there is the output folder's (``output_unwritable``)."""
    try:
        yield
    except StorageError as exc:
        if folder is None:
            raise
        raise OutputError(f"Cannot write the checkpoint in {folder}: {exc.message}") from exc
