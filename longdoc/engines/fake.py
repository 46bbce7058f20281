"""The official test double for engines (as httpx ships ``MockTransport``).

:class:`FakeEngine` implements the engine protocol exactly, with no model:
a ``handler`` turns each page image it is handed into that page's result.
Its capabilities are whatever the test declares (lines or blocks, context
pages, groups in flight, sequential or not, cost per page), and it records
what the pipeline did with it, so tests can assert on scheduling rather
than on timing::

    engine = FakeEngine(lambda image: [Line(text=f"page {image.page}", ...)])
    Pipeline(settings, engine_factory=lambda name: engine).parse(...)
    engine.plans          # every GroupPlan, in the order groups started
    engine.session_plans  # the DocumentPlan each session was opened for (session_plan=True)
    engine.max_in_flight  # the most groups it ever ran at once

A handler returns a :class:`~longdoc.model.Page` (used as is), a list of
``Line`` (a line engine's output) or a list of ``Block`` (a model's). The
default handler reads nothing and returns one line ``Fake text of page N``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from longdoc.engines.base import EngineCapabilities, GroupPlan, PageGroup, PageImage
from longdoc.errors import JobCancelled
from longdoc.model import BBox, Block, Line, Page
from longdoc.plan.groups import DocumentPlan

Handler = Callable[[PageImage], Page | list[Line] | list[Block]]


def default_handler(image: PageImage) -> list[Line]:
    box = BBox(x0=72.0, y0=72.0, x1=max(73.0, image.width_pt - 72.0), y1=86.0)
    return [Line(text=f"Fake text of page {image.page}", bbox=box, confidence=1.0, page=image.page)]


@dataclass
class FakeEngine:
    handler: Handler = default_handler
    output: Literal["lines", "blocks"] = "lines"
    needs_context: bool = False
    groups_in_flight: int = 1
    sequential_groups: bool = True
    cost_unit: Literal["bytes", "tokens"] = "bytes"
    #: declare ``session_plan``: sessions are opened with the document's plan
    session_plan: bool = False
    cost_per_page: int = 1
    workspace_budget: int = 1_000_000
    #: seconds each page takes (lets tests hold groups in flight)
    seconds_per_page: float = 0.0
    name: str = "fake"
    version: str = "fake-1"
    #: what happened, for assertions
    plans: list[GroupPlan] = field(default_factory=list)
    pages_seen: list[int] = field(default_factory=list)
    session_plans: list[DocumentPlan | None] = field(default_factory=list)
    sessions_opened: int = 0
    sessions_closed: int = 0
    sessions_cancelled: int = 0
    max_in_flight: int = 0

    def __post_init__(self) -> None:
        self.capabilities = EngineCapabilities(
            languages=("any",), output=self.output, needs_context=self.needs_context,
            groups_in_flight=self.groups_in_flight, sequential_groups=self.sequential_groups,
            cost_unit=self.cost_unit, session_plan=self.session_plan,
        )
        self._lock = threading.Lock()
        self._in_flight = 0
        self.loaded = False

    def load(self) -> None:
        self.loaded = True

    def open_session(self, plan: DocumentPlan | None = None) -> FakeSession:
        self.load()
        with self._lock:
            self.sessions_opened += 1
            self.session_plans.append(plan)
        return FakeSession(self)

    def group_cost(self, plan: GroupPlan) -> int:
        return self.cost_per_page * (len(plan.owned) + len(plan.context))

    def health(self) -> bool:
        return True

    def close(self) -> None:
        self.loaded = False

    def _enter(self, plan: GroupPlan) -> None:
        with self._lock:
            self.plans.append(plan)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1


class FakeSession:
    def __init__(self, engine: FakeEngine) -> None:
        self.engine = engine
        self.cancelled = threading.Event()

    def recognize(self, group: PageGroup) -> Iterator[Page]:
        engine = self.engine
        engine._enter(group.plan)
        try:
            for image in group.images:
                if self.cancelled.is_set():
                    raise JobCancelled("The fake engine's session was cancelled.")
                with engine._lock:
                    engine.pages_seen.append(image.page)
                if engine.seconds_per_page:
                    time.sleep(engine.seconds_per_page)
                if image.page in group.plan.owned:
                    yield self._page(image)
        finally:
            engine._leave()

    def _page(self, image: PageImage) -> Page:
        result = self.engine.handler(image)
        if isinstance(result, Page):
            return result
        base = Page(number=image.page, width=image.width_pt, height=image.height_pt,
                    engine=self.engine.name, engine_version=self.engine.version)
        if result and isinstance(result[0], Block):
            return base.model_copy(update={"blocks": list(result)})
        return base.model_copy(update={"lines": list(result)})

    def cancel(self) -> None:
        if not self.cancelled.is_set():
            self.cancelled.set()
            with self.engine._lock:
                self.engine.sessions_cancelled += 1

    def close(self) -> None:
        with self.engine._lock:
            self.engine.sessions_closed += 1
