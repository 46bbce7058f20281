"""The pipeline: a document in, exports out, group by group.

::

    ingest ─► plan ─► [ per group: recognize (text layer | render ─► engine)
                                   ─► layout ─► checkpoint ] ─► assemble ─► export

:meth:`Pipeline.parse` reads as that list of stages. Memory does not grow
with page count: pages are rendered lazily inside a group, only a group's
results plus the boundary cache are held, and the exports stream from the
checkpoint with one page of look-ahead for stitching.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pypdfium2

from longdoc import __version__
from longdoc.assemble import stitch
from longdoc.config import Settings
from longdoc.engines import get_engine
from longdoc.engines.base import Engine, RecognizedPage
from longdoc.export import open_exports
from longdoc.ingest import parse_page_range
from longdoc.ingest.sandbox import open_sandboxed
from longdoc.ingest.source import DocumentSource
from longdoc.model import DocumentStatus, ErrorInfo, Page, PageStatus, SourceInfo
from longdoc.pipeline.checkpoint import Checkpoint, DirectoryCheckpoint
from longdoc.pipeline.layout_group import layout_pages
from longdoc.pipeline.options import ParseOptions
from longdoc.pipeline.recognize import TEXT_LAYER_ENGINE, PageOutcome, recognize_group
from longdoc.plan import BoundaryCache, FairTurns, Group, Workspace, plan_groups
from longdoc.progress import NullProgress, Progress

log = logging.getLogger("longdoc.pipeline")

TEXT_LAYER_VERSION = f"pdfium-{pypdfium2.PDFIUM_INFO.build}"


@dataclass
class ParseResult:
    status: DocumentStatus
    outputs: dict[str, Path]
    pages: int
    failed_pages: list[int]
    resumed_pages: int
    errors: list[ErrorInfo] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    workspace_peak_bytes: int = 0


class Pipeline:
    """Parses documents with one set of settings; holds the engine (loaded
    on first need) across documents. Use as a context manager or call
    :meth:`close`.

    Thread-safe for concurrent :meth:`parse` calls: one group is recognized
    at a time (engines are not re-entrant), so concurrent documents
    interleave at group boundaries, taking turns round-robin by ``owner``
    (:class:`~longdoc.plan.FairTurns`); layout, checkpoints and exports run
    in parallel. All parses share one :attr:`workspace`.

    Documents are opened, read and rendered in a sandbox process
    (:mod:`longdoc.ingest.sandbox`): a hostile file costs at most
    ``limits.worker_memory_mb`` and ``limits.worker_timeout_seconds`` per
    step, outside this process."""

    def __init__(self, settings: Settings, engine_factory: Callable[[str], Engine] | None = None):
        self.settings = settings
        self._engine_factory = engine_factory or (lambda name: get_engine(name, settings.inference))
        self._engines: dict[str, Engine] = {}
        self._turns = FairTurns(slots=1)
        inf = settings.inference
        self.workspace = Workspace(budget_bytes=inf.workspace_budget_mb * 2**20, watermark=inf.kv_cache_watermark)

    def _engine_object(self, name: str) -> Engine:
        """The engine called ``name``, built (cheap) but not loaded."""
        if name not in self._engines:
            self._engines[name] = self._engine_factory(name)
        return self._engines[name]

    def engine(self, name: str) -> Engine:
        """The engine called ``name``, loaded (workers started, warmed up)."""
        engine = self._engine_object(name)
        engine.load()  # idempotent
        return engine

    def loaded_engines(self) -> list[str]:
        """Names of the engines built so far (an engine is built on first use
        and loaded before its first page)."""
        return list(self._engines)

    def close(self) -> None:
        for engine in self._engines.values():
            engine.close()
        self._engines.clear()

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
        with open_sandboxed(path, self.settings.limits, name=name) as source:           # ingest
            numbers = parse_page_range(options.pages, source.page_count)
            groups = plan_groups(len(numbers), options.page_chunk_size, options.chunk_overlap)  # plan
            checkpoint = checkpoint or DirectoryCheckpoint(out_dir / ".longdoc" / stem)
            checkpoint.begin(options.fingerprint(source.sha256, self._engine_version(options)))
            progress.start(source.name, len(numbers))
            workspace = self.workspace
            resumed = self._run_groups(source, numbers, groups, options, checkpoint, workspace, progress,
                                       control or (lambda: None), owner)
            t_groups = time.perf_counter()
            result = self._assemble_and_export(                                       # assemble, export
                source, numbers, options, checkpoint, out_dir, stem
            )
            progress.finish()
        result.resumed_pages = resumed
        result.workspace_peak_bytes = workspace.peak  # shared by concurrent parses
        result.timings = {
            "pages": t_groups - t_start,
            "assemble_export": time.perf_counter() - t_groups,
            "total": time.perf_counter() - t_start,
        }
        return result

    def _run_groups(
        self,
        source: DocumentSource,
        numbers: list[int],
        groups: list[Group],
        options: ParseOptions,
        checkpoint: Checkpoint,
        workspace: Workspace,
        progress: Progress,
        control: Callable[[], None],
        owner: str,
    ) -> int:
        """Recognize, lay out and checkpoint each group; returns how many
        pages were resumed from an earlier run."""
        boundary: BoundaryCache[PageOutcome] = BoundaryCache()
        resumed = 0
        for group in groups:
            owned = [numbers[i] for i in group.owned]
            saved = self._load_done_group(checkpoint, group, owned)
            if saved is not None:                                                     # resume
                for i, page in zip(group.owned, saved):
                    boundary.put(i, outcome_from_page(page))
                boundary.keep_only(range(group.end - options.chunk_overlap, group.end))
                resumed += len(owned)
                progress.advance(len(owned), resumed=True)
                continue
            control()                                                                 # cancel, timeout, shutdown
            with self._turns.turn(owner):
                outcomes = recognize_group(                                           # recognize
                    source, owned, ocr=options.ocr, dpi=options.dpi,
                    engine=lambda: self.engine(options.engine), workspace=workspace,
                    text_layer_version=TEXT_LAYER_VERSION,
                )
            available = {numbers[i]: boundary.get(i) for i in boundary.indexes()}
            available.update(outcomes)
            pages = layout_pages(owned, available)                                    # layout
            complete = all(p.status is PageStatus.OK or not _retryable(p) for p in pages)
            checkpoint.save_group(group.index, pages, complete)                       # checkpoint
            for i in group.owned:
                boundary.put(i, available[numbers[i]])
            boundary.keep_only(range(group.end - options.chunk_overlap, group.end))   # release
            progress.advance(len(owned))
        return resumed

    @staticmethod
    def _load_done_group(checkpoint: Checkpoint, group: Group, owned: list[int]) -> list[Page] | None:
        if not checkpoint.group_done(group.index):
            return None
        pages = [checkpoint.load_page(n) for n in owned]
        return None if any(p is None for p in pages) else pages  # type: ignore[return-value]

    def _assemble_and_export(
        self,
        source: DocumentSource,
        numbers: list[int],
        options: ParseOptions,
        checkpoint: Checkpoint,
        out_dir: Path,
        stem: str,
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
        errors: list[ErrorInfo] = []
        exports = open_exports(out_dir, stem, options.formats, header)
        try:
            for page in stitch(_checkpointed_pages(checkpoint, numbers)):
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
                           resumed_pages=0, errors=errors)

    def _engine_version(self, options: ParseOptions) -> str:
        name, version = self.engine_name_version(options)
        return f"{name}:{version}"

    def engine_name_version(self, options: ParseOptions) -> tuple[str, str]:
        """The engine ``options`` select and its version (the text layer's
        with ``ocr=off``), without loading it."""
        if options.ocr == "off":
            return TEXT_LAYER_ENGINE, TEXT_LAYER_VERSION
        return options.engine, self._engine_object(options.engine).version


def _retryable(page: Page) -> bool:
    return page.error is not None and page.error.retryable


def _checkpointed_pages(checkpoint: Checkpoint, numbers: list[int]) -> Iterator[Page]:
    for n in numbers:
        page = checkpoint.load_page(n)
        if page is None:  # invariant: every selected page was checkpointed
            raise AssertionError(f"page {n} missing from the checkpoint after all groups ran")
        yield page


def outcome_from_page(page: Page) -> PageOutcome:
    """Rebuild a boundary-cache entry from a checkpointed page (resume)."""
    lines = [line for block in page.blocks for line in block.lines if line.page == page.number]
    rec = RecognizedPage(
        page=page.number, width_pt=page.width, height_pt=page.height, lines=lines,
        error=page.error, engine=page.engine or "", engine_version=page.engine_version or "",
        rotation=page.rotation,
    )
    return PageOutcome(rec, page.text_source, page.ocr_reason or "", dict(page.timings),
                       page.render_dpi, page.downscaled)
