"""Fakes for pipeline tests: engines that wrap a real engine and change one
thing (so the rest of the pipeline runs for real), and a progress that
interrupts a run between groups."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from longdoc.engines.base import Engine, PageImage, RecognizedPage
from longdoc.model import ErrorInfo
from longdoc.progress import RecordingProgress


class NoEngineFake:
    """Engine factory whose engine fails the test if OCR is ever started
    (for born-digital documents or ``ocr=off``). Building it is allowed:
    the pipeline reads its version for the checkpoint fingerprint."""

    version = "never-loaded"

    def __call__(self, name: str) -> NoEngineFake:
        return self

    def load(self) -> None:
        raise AssertionError("OCR engine started where no page needed OCR")

    def close(self) -> None:
        pass


class StopAfterProgress(RecordingProgress):
    """Progress that interrupts the run after ``groups`` groups were
    checkpointed, as a Ctrl-C, crash or shutdown between groups would."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def advance(self, pages: int, *, resumed: bool = False) -> None:
        super().advance(pages, resumed=resumed)
        if sum(1 for e in self.events if e[0] == "advance") >= self.groups:
            raise KeyboardInterrupt


class CountingFakeEngine:
    """Delegates to ``inner`` and records which pages it was asked to
    recognize (to prove resumed pages are not recognized again)."""

    def __init__(self, inner: Engine) -> None:
        self.inner = inner
        self.name, self.version, self.capabilities = inner.name, inner.version, inner.capabilities
        self.seen: list[int] = []

    def load(self) -> None:
        self.inner.load()

    def recognize(self, pages: Iterable[PageImage], max_in_flight: int | None = None) -> Iterator[RecognizedPage]:
        def tap(it):
            for page in it:
                self.seen.append(page.page)
                yield page

        return self.inner.recognize(tap(pages), max_in_flight=max_in_flight)

    def workspace_bytes(self, page: PageImage) -> int:
        return self.inner.workspace_bytes(page)

    def close(self) -> None:
        pass  # the inner engine belongs to the session fixture


class PageFailingFakeEngine(CountingFakeEngine):
    """Like the real engine, except the pages in ``fail`` come back failed
    with a retryable ``engine_failed`` error, as a crashed worker's would."""

    def __init__(self, inner: Engine, fail: set[int]) -> None:
        super().__init__(inner)
        self.fail = fail

    def recognize(self, pages: Iterable[PageImage], max_in_flight: int | None = None) -> Iterator[RecognizedPage]:
        for rec in super().recognize(pages, max_in_flight):
            if rec.page in self.fail:
                rec = RecognizedPage(
                    page=rec.page, width_pt=rec.width_pt, height_pt=rec.height_pt, engine=self.name,
                    error=ErrorInfo(code="engine_failed", message="fake worker crash", page=rec.page, retryable=True),
                )
            yield rec
