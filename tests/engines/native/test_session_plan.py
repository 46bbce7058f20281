"""A native session is sized by its document's plan (the page groups the
job was accepted with), not by the engine's own ``inference.page_chunk_size``:
an engine configured for groups of 2 reads a document planned in groups of
5 and reserves that document's peak; the same group in a session sized by
the engine's settings does not fit its cache, and fails alone: the session
and the decode loop read on."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from longdoc.config import InferenceSettings, NativeSettings
from longdoc.engines.base import GroupPlan, PageGroup, PageImage, open_session
from longdoc.engines.native.engine import NativeEngine
from longdoc.engines.native.kv_cache import CacheFull
from longdoc.engines.native.scheduler import Scheduler
from longdoc.engines.native.sequence import peak_bytes
from longdoc.plan import DocumentPlan

from .test_infinite_decoding import native_model

PLANNED = DocumentPlan(page_chunk_size=5, chunk_overlap=1, dpi=72)


@pytest.fixture
def engine(tiny_model):
    settings = InferenceSettings(engine="native", page_chunk_size=2, chunk_overlap=1,
                                 native=NativeSettings(fallback_engine=None, max_tokens_per_page=8))
    engine = NativeEngine(settings, native_model(tiny_model))
    engine.load()
    yield engine
    engine.close()


def _group(pages: range) -> PageGroup:
    rng = np.random.default_rng(1)
    images = [PageImage(page=p, image=rng.integers(0, 255, (60, 48, 3), dtype=np.uint8), dpi=72, width_pt=48,
                        height_pt=60) for p in pages]
    return PageGroup(GroupPlan(index=0, owned=tuple(pages), dpi=72), images)


def test_a_session_holds_a_group_of_its_documents_plan_and_reserves_its_peak(engine):
    assert engine.capabilities.session_plan
    session = open_session(engine, PLANNED)
    try:
        pages = list(session.recognize(_group(range(1, 6))))
        assert [p.number for p in pages] == [1, 2, 3, 4, 5]  # read (or cut at 8 tokens), none lost
        planned_peak = peak_bytes(engine.model, engine.window, PLANNED.page_chunk_size)
        assert engine.kv.reserved == planned_peak > engine.sequence_peak  # the engine's own: groups of 2
    finally:
        session.close()
    assert engine.kv.reserved == 0


def _within(seconds: float, call):
    """``call()``'s result, run in a thread; a failure (not a hung test) if it does not return in ``seconds``."""
    out: dict = {}

    def run() -> None:
        try:
            out["result"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"no answer in {seconds} s: the decode hangs"
    if "error" in out:
        raise out["error"]
    return out["result"]


def test_a_session_without_a_plan_is_sized_by_the_engines_settings_and_reads_on_after_a_group_too_big(engine):
    session = engine.open_session()
    try:
        with pytest.raises(CacheFull):
            list(session.recognize(_group(range(1, 6))))
        # the pipeline then reads the group's pages one at a time in the same session: they come back
        pages = _within(120, lambda: list(session.recognize(_group(range(1, 2)))))
        assert [p.number for p in pages] == [1]
    finally:
        session.close()
    assert engine.kv.reserved == 0


class _Broken:
    """A sequence (test fake) that cannot give its next step."""

    done = False

    def next_input(self):
        raise AssertionError("no token pending")


def test_a_sequence_that_cannot_step_fails_alone_and_the_decode_loop_goes_on(tiny_model):
    scheduler = Scheduler(native_model(tiny_model), max_batch=4)
    try:
        for _ in range(2):  # the second finds the loop still serving
            with pytest.raises(AssertionError, match="no token pending"):
                _within(30, lambda: scheduler.run(_Broken(), threading.Event()))
    finally:
        scheduler.close()
