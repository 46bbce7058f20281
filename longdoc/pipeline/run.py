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
from longdoc.config import Settings
from longdoc.engines.base import Engine
from longdoc.errors import OutputError, StorageError
from longdoc.export import ExportContext, open_exports
from longdoc.ingest import parse_page_range
from longdoc.ingest.sandbox import check_helper_sockets, open_sandboxed
from longdoc.ingest.source import DocumentSource
from longdoc.model import DocumentStatus, ErrorInfo, PageStatus, SourceInfo
from longdoc.pipeline.checkpoint import Checkpoint
from longdoc.pipeline.document import DocumentRun
from longdoc.pipeline.host import EngineHost
from longdoc.pipeline.labels import with_label
from longdoc.pipeline.options import ParseOptions
from longdoc.pipeline.recognize import TEXT_LAYER_ENGINE, EngineLane
from longdoc.pipeline.review import with_review
from longdoc.plan import Group
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
    """Parses documents with one set of settings, the stages in order; the
    engines, their admissions and turns, and the region detector are
    ``host``'s (:class:`~longdoc.pipeline.host.EngineHost`, shared across
    documents). Without a ``host`` it makes its own (from
    ``engine_factory``, default the registry) and closes it in
    :meth:`close`; a host handed in is its owner's to close. Use as a
    context manager or call :meth:`close`.

    Thread-safe for concurrent :meth:`parse` calls. Per engine, all
    documents share one workspace (admission by ``kv_cache_watermark``) and
    one set of turns, as many as the engine's ``groups_in_flight``, handed
    round-robin by ``owner`` (:class:`~longdoc.plan.FairTurns`); layout,
    checkpoints and exports run in parallel.

    Documents are opened, read and rendered in a sandbox process
    (:mod:`longdoc.ingest.sandbox`): a hostile file costs at most
    ``limits.worker_memory_mb`` and ``limits.worker_timeout_seconds`` per
    step, outside this process."""

    def __init__(self, settings: Settings, host: EngineHost | None = None, *,
                 engine_factory: Callable[[str], Engine] | None = None):
        if host is not None and engine_factory is not None:
            raise ValueError("pass an engine_factory to the EngineHost, not beside it")
        check_helper_sockets()
        self.settings = settings
        self._owns_host = host is None
        self.host = host or EngineHost(settings, engine_factory)

    def close(self) -> None:
        """Close the engine host if this pipeline made it."""
        if self._owns_host:
            self.host.close()

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
            groups = options.plan.groups(len(numbers))
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
            key = self.host.key(options.engine, options.profile)
            result.workspace_peak = self.host.admission(key).workspace.peak  # shared by concurrent parses
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
            key = self.host.key(options.engine, options.profile)
            capabilities = self.host.capabilities(key)
            lookahead = 1 if capabilities.sequential_groups else capabilities.groups_in_flight

            def lane() -> EngineLane:
                return EngineLane(self.host.engine(key), self.host.admission(key), self.host.turns(key), owner,
                                  threading.Event(), options.plan)

        regions = self.host.region_detector() if options.regions else None
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
        return options.engine, self.host.version(self.host.key(options.engine, options.profile))


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
