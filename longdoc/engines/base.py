"""The engine protocol: a session per document, page groups in, pages out.

An engine is an object (it may hold a loaded model or a connection pool)
with a name, a version and declared capabilities that the pipeline reads.
It never touches storage, HTTP routes or the database, and imports only the
document model, errors and the plan's plain records (a document's
:class:`~longdoc.plan.groups.DocumentPlan`)::

    pipeline                              engine
    ────────                              ──────
    engine.group_cost(plan)  ──────────►  cost in the engine's unit (bytes | tokens),
                                          reserved in the workspace before the group starts
    session = open_session(engine, document plan)
                             ──────────►  engine.open_session(plan) when its capabilities
                                          say ``session_plan``, else engine.open_session()
    session.recognize(group) ──────────►  one Page per owned page it was handed, in order
                             ◄──────────  (lines with boxes, or model blocks)
    session.cancel() / session.close()    frees what the session holds (requests in flight, KV)

Contract of :meth:`EngineSession.recognize`:

- input: a :class:`PageGroup`; its ``images`` iterator renders lazily, the
  context pages first (only for engines that ask for them), then the owned
  pages; a page that cannot be rendered is skipped (the pipeline records it);
- output: one :class:`~longdoc.model.Page` per owned page received, in
  order, with ``lines`` (a line engine) or ``blocks`` (a model engine);
- a page the engine cannot read is a ``Page`` with status failed and an
  ``error``, never an exception; exceptions mean the engine itself is
  unusable (:class:`~longdoc.errors.EngineUnavailable`) or the session was
  cancelled.

Page engines (RapidOCR, Tesseract) recognize one page image at a time and
sit behind :class:`~longdoc.engines.paged.PagedEngine`; the
:class:`RecognizedPage` they return stays inside the engines package.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from longdoc.model import ErrorInfo, Line, Page
from longdoc.plan.groups import DocumentPlan


@dataclass(frozen=True)
class EngineCapabilities:
    """What the pipeline reads to drive an engine.

    - ``output``: ``lines`` (lines with boxes; longdoc lays them out) or
      ``blocks`` (the model's own blocks with kinds, in reading order);
    - ``needs_context``: hand it a group's overlap pages as images too;
    - ``groups_in_flight``: groups it may work on at once, all documents
      together (the size of its turn semaphore);
    - ``sequential_groups``: a document's groups must run one after the
      other (a KV cache carried from group to group); otherwise the next
      groups of a document may start while earlier ones run, and on the
      fleet they spread over engine workers;
    - ``cost_unit``: the unit of :meth:`Engine.group_cost` and of its
      workspace budget (``bytes`` or ``tokens``);
    - ``session_plan``: :meth:`Engine.open_session` is handed the
      document's :class:`~longdoc.plan.groups.DocumentPlan` (its group
      size, overlap and DPI, fixed when the job was accepted) and sizes the
      session by it rather than by the engine's own settings (a KV cache
      per document); other engines are called without it.
    """

    languages: tuple[str, ...]
    output: Literal["lines", "blocks"] = "lines"
    needs_context: bool = False
    groups_in_flight: int = 1
    sequential_groups: bool = False
    cost_unit: Literal["bytes", "tokens"] = "bytes"
    session_plan: bool = False

    def __post_init__(self) -> None:
        if self.groups_in_flight < 1:
            raise ValueError(f"groups_in_flight must be at least 1, got {self.groups_in_flight}")


@dataclass
class PageImage:
    """A rendered page handed to an engine.

    ``image`` is an RGB ``uint8`` array of shape (height_px, width_px, 3).
    ``dpi`` converts pixels to points: ``pt = px * 72 / dpi``.
    ``downscaled``: rendered below the DPI asked for (render pixel cap).
    """

    page: int  # 1-based
    image: np.ndarray
    dpi: float
    width_pt: float
    height_pt: float
    downscaled: bool = False

    @property
    def nbytes(self) -> int:
        return int(self.image.nbytes)

    def px_to_pt(self, v: float) -> float:
        return v * 72.0 / self.dpi


@dataclass(frozen=True)
class GroupPlan:
    """What is known of a group before it starts (enough to cost it).

    ``owned``: 1-based pages the engine must return, in order; ``context``:
    the overlap pages before them that a context-reading engine is shown
    (their results are not returned); ``sizes``: every page's (width,
    height) in points; ``dpi``: the render resolution asked for."""

    index: int
    owned: tuple[int, ...]
    context: tuple[int, ...] = ()
    sizes: Mapping[int, tuple[float, float]] = field(default_factory=dict)
    dpi: int = 200


@dataclass
class PageGroup:
    """A group handed to a session: its plan and its images, rendered
    lazily in order (context pages first when the engine asked for them).
    ``render`` renders given pages again (an engine's recovery path, e.g.
    a fallback engine that needs full-resolution pages); pages that fail
    to render are skipped."""

    plan: GroupPlan
    images: Iterable[PageImage]
    render: Callable[[Sequence[int]], Iterable[PageImage]] | None = None

    @property
    def owned(self) -> tuple[int, ...]:
        return self.plan.owned

    @property
    def context(self) -> tuple[int, ...]:
        return self.plan.context


@runtime_checkable
class EngineSession(Protocol):
    """One document's use of an engine. Not shared between documents; one
    :meth:`recognize` per group, several at once only when the engine's
    ``sequential_groups`` is false."""

    def recognize(self, group: PageGroup) -> Iterator[Page]:
        """One Page per owned page received, in order (see the module docstring)."""

    def cancel(self) -> None:
        """Stop the work in flight (may be called from another thread); a
        running :meth:`recognize` ends soon after, possibly by raising."""

    def close(self) -> None:
        """Free what the session holds. Idempotent."""


@runtime_checkable
class Engine(Protocol):
    """The members every engine has. Two more are optional, read through
    :func:`engine_figures` and :func:`engine_ready_details` (an engine
    written before them exports nothing and keeps working):

    - ``figures() -> Mapping[str, float]``: live gauges, by figure name
      with its unit (``kv_reserved_bytes``, ``requests_in_flight``); cheap,
      read at every scrape of ``/metrics``;
    - ``ready_details() -> Mapping[str, object]``: what ``/readyz`` shows
      of the engine once loaded (how many sequences its KV budget admits).
    """

    name: str
    capabilities: EngineCapabilities
    #: the budget ``kv_cache_watermark`` applies to, in ``capabilities.cost_unit``
    workspace_budget: int

    @property
    def version(self) -> str:
        """What made a page, with the name (read-only: some engines know it once loaded)."""

    def load(self) -> None:
        """Load models / start workers / check the server. Idempotent.
        Raises EngineUnavailable."""

    def open_session(self, plan: DocumentPlan | None = None) -> EngineSession:
        """A session for one document (loads the engine if needed). ``plan``:
        how the document is cut and rendered, handed only to engines whose
        capabilities say ``session_plan`` (:func:`open_session`); None: the
        engine's own settings'."""

    def group_cost(self, plan: GroupPlan) -> int:
        """What the group holds while in flight, in ``capabilities.cost_unit``."""

    def health(self) -> bool:
        """Whether the engine can take work now (a model server answering).
        Cheap; never raises."""

    def close(self) -> None:
        """Release models, workers and connections. Idempotent."""


def open_session(engine: Engine, plan: DocumentPlan) -> EngineSession:
    """A session of ``engine`` for a document of ``plan``: the plan is
    handed to an engine that sizes its sessions by it
    (``capabilities.session_plan``); the others, engines written before
    plans among them, are called without it."""
    return engine.open_session(plan) if engine.capabilities.session_plan else engine.open_session()


def engine_figures(engine: Engine) -> Mapping[str, float]:
    """The engine's live gauges (its ``figures()``), none for an engine
    that exports none."""
    figures = getattr(engine, "figures", None)
    return dict(figures()) if figures is not None else {}


def engine_ready_details(engine: Engine) -> dict[str, bool | int | str]:
    """What ``/readyz`` shows of the engine (its ``ready_details()``, a
    value other than a bool, an int or a string as text), nothing for an
    engine that says nothing more."""
    details = getattr(engine, "ready_details", None)
    if details is None:
        return {}
    return {key: value if isinstance(value, bool | int | str) else str(value) for key, value in details().items()}


@dataclass
class RecognizedPage:
    """What a *page* engine (RapidOCR, Tesseract) returns for one page
    image; :class:`~longdoc.engines.paged.PagedEngine` turns it into a
    :class:`~longdoc.model.Page`. Lines are in the engine's own order
    (often raster order); the layout stage decides reading order."""

    page: int  # 1-based
    width_pt: float
    height_pt: float
    lines: list[Line] = field(default_factory=list)
    seconds: float = 0.0
    error: ErrorInfo | None = None
    #: engine id (name) and version that produced this page
    engine: str = ""
    engine_version: str = ""
    #: clockwise degrees the page was turned to read it upright; boxes and
    #: width/height refer to the upright page
    rotation: int = 0
