"""Fakes for pipeline tests: engines that wrap a real engine and change one
thing (so the rest of the pipeline runs for real), an engine that must
never start, and a progress that interrupts a run between groups."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from longdoc.engines.base import Engine, EngineCapabilities, GroupPlan, PageGroup, PageImage
from longdoc.model import ErrorInfo, Page, PageStatus
from longdoc.progress import RecordingProgress


class NoEngineFake:
    """Engine factory whose engine fails the test if OCR is ever started
    (for born-digital documents or ``ocr=off``). Building it is allowed:
    the pipeline reads its version and capabilities."""

    name = "no-engine"
    version = "never-loaded"
    capabilities = EngineCapabilities(languages=("none",))
    workspace_budget = 1

    def __call__(self, name: str) -> NoEngineFake:
        return self

    def load(self) -> None:
        raise AssertionError("OCR engine started where no page needed OCR")

    def open_session(self):
        raise AssertionError("OCR engine started where no page needed OCR")

    def group_cost(self, plan: GroupPlan) -> int:
        raise AssertionError("OCR engine asked to cost a group where no page needed OCR")

    def health(self) -> bool:
        return True

    def close(self) -> None:
        pass


class StopAfterProgress(RecordingProgress):
    """Progress that interrupts the run after ``groups`` groups were
    checkpointed, as a Ctrl-C, crash or shutdown between groups would."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def advance(self, pages: Sequence[Page], *, resumed: bool = False) -> None:
        super().advance(pages, resumed=resumed)
        if sum(1 for e in self.events if e[0] == "advance") >= self.groups:
            raise KeyboardInterrupt


class CountingFakeEngine:
    """Delegates to ``inner`` (a real engine) and records which pages it
    was asked to recognize (to prove resumed pages are not recognized again)."""

    def __init__(self, inner: Engine) -> None:
        self.inner = inner
        self.name, self.version, self.capabilities = inner.name, inner.version, inner.capabilities
        self.workspace_budget = inner.workspace_budget
        self.seen: list[int] = []

    def load(self) -> None:
        self.inner.load()

    def open_session(self) -> _TappedSession:
        return _TappedSession(self, self.inner.open_session())

    def group_cost(self, plan: GroupPlan) -> int:
        return self.inner.group_cost(plan)

    def health(self) -> bool:
        return self.inner.health()

    def close(self) -> None:
        pass  # the inner engine belongs to the session fixture

    def result(self, page: Page) -> Page:
        return page


class _TappedSession:
    def __init__(self, fake: CountingFakeEngine, inner) -> None:
        self.fake, self.inner = fake, inner

    def recognize(self, group: PageGroup) -> Iterator[Page]:
        def tap(images: Iterable[PageImage]) -> Iterator[PageImage]:
            for image in images:
                self.fake.seen.append(image.page)
                yield image

        for page in self.inner.recognize(PageGroup(group.plan, tap(group.images))):
            yield self.fake.result(page)

    def cancel(self) -> None:
        self.inner.cancel()

    def close(self) -> None:
        self.inner.close()


class PageFailingFakeEngine(CountingFakeEngine):
    """Like the real engine, except the pages in ``fail`` come back failed
    with a retryable ``engine_failed`` error, as a crashed worker's would."""

    def __init__(self, inner: Engine, fail: set[int]) -> None:
        super().__init__(inner)
        self.fail = fail

    def result(self, page: Page) -> Page:
        if page.number not in self.fail:
            return page
        error = ErrorInfo(code="engine_failed", message="fake worker crash", page=page.number, retryable=True)
        return page.model_copy(update={"status": PageStatus.FAILED, "error": error, "lines": []})
