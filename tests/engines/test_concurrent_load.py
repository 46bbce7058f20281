"""An engine's first use from several threads at once (a restarted server's
taken-back tasks while warm-up loads it): one load, one set of choices.

The old behaviour, each of which failed jobs after a restart: the pipeline
loaded an engine outside any lock, so two loads ran at once; RapidOCR
settled its recognizer and runtimes lazily with no lock, and with
``recognizer: auto`` the choice read ``cascade`` while it was still being
timed, so a second thread timed again and decided differently (its
runtimes missing the ``recheck`` role the first one then read: KeyError).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from longdoc.config import load_settings
from longdoc.engines import backends, model_files
from longdoc.engines.base import EngineCapabilities
from longdoc.engines.rapidocr.engine import RapidOcrEngine
from longdoc.pipeline import Pipeline

THREADS = 6


def _tiny_installed() -> bool:
    try:
        model_files.tiny_recognizer()
    except model_files.ModelFileError:
        return False
    return True


@pytest.mark.skipif(not _tiny_installed(), reason="the tiny recognizer is not installed (scripts/setup.sh)")
def test_rapidocr_settles_its_recognizer_and_runtimes_once_whichever_thread_asks_first(monkeypatch):
    timed: list[tuple[str, ...]] = []

    def slow_choose(asked, threads, roles, candidates, probe, models=()):
        timed.append(tuple(roles))
        time.sleep(0.3)  # timing the runtimes takes seconds: every other thread arrives meanwhile
        seconds = {"rec": {"onnxruntime": 1.0}, "recheck": {"onnxruntime": 3.0}}
        return {r: "onnxruntime" for r in roles}, "measured", seconds

    monkeypatch.setattr(backends, "choose", slow_choose)
    engine = RapidOcrEngine(workers=1, recognizer="auto")
    start = threading.Barrier(THREADS)

    def first_use(i: int) -> tuple[str, dict, str]:
        start.wait()
        if i % 3 == 0:
            version = engine.version
        elif i % 3 == 1:
            version = str(engine.params)
        else:
            version = str(engine.recheck)
        return engine.recognizer, dict(engine.runtimes), version

    with ThreadPoolExecutor(THREADS) as pool:
        seen = list(pool.map(first_use, range(THREADS)))
    assert timed == [("det", "rec", "recheck")]  # timed once, for the cascade's three models
    assert {(rec, tuple(sorted(rt.items()))) for rec, rt, _ in seen} == \
        {("cascade", (("det", "onnxruntime"), ("rec", "onnxruntime"), ("recheck", "onnxruntime")))}


class _CountingEngine:
    """An engine whose load takes a while and counts how many run at once."""

    name = "counting"
    version = "1"
    workspace_budget = 1 << 30

    def __init__(self) -> None:
        self.capabilities = EngineCapabilities(languages=("en",))
        self.loaded = False
        self.loads = 0
        self.at_once = 0
        self.most_at_once = 0
        self._count = threading.Lock()

    def load(self) -> None:
        with self._count:
            self.at_once += 1
            self.most_at_once = max(self.most_at_once, self.at_once)
        try:
            if not self.loaded:
                time.sleep(0.3)
                self.loads += 1
                self.loaded = True
        finally:
            with self._count:
                self.at_once -= 1

    def health(self) -> bool:
        return True

    def close(self) -> None:
        pass


def test_the_pipeline_loads_an_engine_once_while_every_other_caller_waits_for_it(tmp_path):
    engine = _CountingEngine()
    settings = load_settings(overrides={"service": {"work_dir": str(tmp_path / "work")}})
    pipeline = Pipeline(settings, engine_factory=lambda name: engine)
    start = threading.Barrier(THREADS)

    def use(_: int) -> bool:
        start.wait()
        return pipeline.host.engine("counting").loaded

    with ThreadPoolExecutor(THREADS) as pool:
        ready = list(pool.map(use, range(THREADS)))
    assert ready == [True] * THREADS  # nobody got the engine before it was loaded
    assert (engine.loads, engine.most_at_once) == (1, 1)
