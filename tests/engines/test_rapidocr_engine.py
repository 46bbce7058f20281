"""RapidOCR engine: real OCR on drawn pages, order, laziness, failures."""

from __future__ import annotations

import os
import signal
from importlib.metadata import version

import numpy as np
import psutil
import pytest
from rapidfuzz.distance import Levenshtein

from longdoc.engines.base import PageImage
from longdoc.engines.paged import PageRecognizer
from longdoc.engines.rapidocr import RapidOcrEngine
from tests.engines.fakes import HangingFakeEngine, WorkerKillingFakeEngine, marker_page
from tests.engines.pages import SamplePage, cer, chinese_page, english_page, english_strip


def text_of(rec) -> str:
    return "\n".join(line.text for line in rec.lines)


@pytest.fixture(scope="module")
def engine():
    with RapidOcrEngine(workers=2) as e:
        yield e


def assert_recognized(rec, sample: SamplePage) -> None:
    assert rec.error is None, rec.error
    assert rec.page == sample.image.page
    assert cer(text_of(rec), sample.text) <= 0.01, text_of(rec)


def test_engine_describes_itself(engine):
    assert isinstance(engine, PageRecognizer)
    assert engine.name == "rapidocr"
    package, model, runtimes = engine.version.split("/")  # the defaults users get: auto recognizer and runtimes
    assert package == f"rapidocr-{version('rapidocr')}" and model in ("PP-OCRv6-tiny+small", "PP-OCRv6")
    assert set(runtimes.split("+")) <= {"onnxruntime", "openvino"} and len(runtimes.split("+")) in (1, 2, 3)
    assert set(engine.capabilities.languages) == {"ch", "en"}
    assert engine.workers == 2
    assert engine.max_in_flight == 4
    assert len(engine.worker_pids()) == 2


def test_pages_come_back_in_input_order(engine):
    samples = [english_strip(n) for n in (1, 2, 3, 4)]
    results = list(engine.recognize(s.image for s in samples))
    assert [r.page for r in results] == [1, 2, 3, 4]
    for rec, sample in zip(results, samples):
        assert_recognized(rec, sample)  # text matches *its* page, so order is real
        assert {line.page for line in rec.lines} == {sample.image.page}
        assert (rec.engine, rec.engine_version) == (engine.name, engine.version)
        assert all(0.5 <= line.confidence <= 1.0 for line in rec.lines)


def test_chinese_text_is_recognized(engine):
    sample = chinese_page()
    (rec,) = engine.recognize([sample.image])
    assert rec.error is None
    assert cer(text_of(rec), sample.text) <= 0.05, text_of(rec)


def test_full_english_page_has_low_cer_and_boxes_where_text_was_drawn(engine):
    sample = english_page(5)
    (rec,) = engine.recognize([sample.image])
    assert_recognized(rec, sample)
    assert len(rec.lines) == len(sample.lines)
    for drawn in sample.lines:
        line = min(rec.lines, key=lambda l: Levenshtein.distance(l.text, drawn.text))
        for got, want in zip(
            (line.bbox.x0, line.bbox.y0, line.bbox.x1, line.bbox.y1),
            (drawn.bbox.x0, drawn.bbox.y0, drawn.bbox.x1, drawn.bbox.y1),
        ):
            assert abs(got - want) <= 4.0, (drawn.text, line.bbox, drawn.bbox)


def test_input_is_pulled_lazily_within_the_window(engine):
    image = english_strip(6, n_lines=1).image
    pulled = 0

    def pages():
        nonlocal pulled
        for n in range(1, 8):
            pulled += 1
            yield PageImage(page=n, image=image.image, dpi=image.dpi, width_pt=image.width_pt, height_pt=image.height_pt)

    ahead = []
    for yielded, rec in enumerate(engine.recognize(pages()), start=1):
        assert rec.error is None
        ahead.append(pulled - yielded + 1)  # pulled but not yet returned, this one included
    assert len(ahead) == 7
    assert ahead[0] <= engine.max_in_flight
    assert max(ahead) <= engine.max_in_flight


def test_consumer_stopping_early_leaves_the_engine_usable(engine):
    samples = [english_strip(n) for n in range(1, 7)]
    run = engine.recognize(s.image for s in samples)
    assert next(run).page == 1
    run.close()  # pages 2..5 were in flight
    later = [english_strip(n) for n in (8, 9)]
    results = list(engine.recognize(s.image for s in later))
    for rec, sample in zip(results, later, strict=True):
        assert_recognized(rec, sample)


def test_bad_images_fail_only_their_own_pages(engine):
    good = {n: english_strip(n) for n in (1, 3, 5)}
    empty = PageImage(page=2, image=np.zeros((0, 0, 3), np.uint8), dpi=200, width_pt=1, height_pt=1)
    floats = PageImage(page=4, image=np.ones((50, 50, 3), np.float32), dpi=200, width_pt=18, height_pt=18)
    results = list(engine.recognize([good[1].image, empty, good[3].image, floats, good[5].image]))
    assert [r.page for r in results] == [1, 2, 3, 4, 5]
    for rec in (results[1], results[3]):
        assert rec.error is not None and rec.error.code == "engine_failed"
        assert rec.error.page == rec.page and rec.lines == []
    for rec in (results[0], results[2], results[4]):
        assert_recognized(rec, good[rec.page])


def test_worker_killed_from_outside_mid_run_loses_no_page():
    samples = [english_strip(n) for n in range(1, 6)]
    with RapidOcrEngine(workers=2) as engine:
        victim = engine.worker_pids()[0]
        results = []
        for rec in engine.recognize(s.image for s in samples):
            if not results:
                os.kill(victim, signal.SIGKILL)
            results.append(rec)
        assert victim not in engine.worker_pids()
        assert len(engine.worker_pids()) == 2
    for rec, sample in zip(results, samples, strict=True):
        assert_recognized(rec, sample)


def test_page_that_kills_its_worker_fails_alone_and_later_pages_work():
    samples = {n: english_strip(n) for n in (1, 3, 4, 5)}
    inputs = [samples[1].image, marker_page(2), samples[3].image, samples[4].image, samples[5].image]
    with WorkerKillingFakeEngine(workers=2) as engine:
        first_pids = engine.worker_pids()
        results = list(engine.recognize(inputs))
        assert not set(first_pids) & set(engine.worker_pids())
    assert [r.page for r in results] == [1, 2, 3, 4, 5]
    assert results[1].error is not None and results[1].error.code == "engine_failed"
    assert "died" in results[1].error.message
    for rec in results[:1] + results[2:]:
        assert_recognized(rec, samples[rec.page])
    assert not any(psutil.pid_exists(pid) for pid in first_pids)


def test_hung_page_times_out_and_later_pages_work():
    samples = {n: english_strip(n) for n in (1, 3, 4)}
    inputs = [samples[1].image, marker_page(2), samples[3].image, samples[4].image]
    with HangingFakeEngine(workers=2, page_timeout_seconds=3) as engine:
        results = list(engine.recognize(inputs))
        # the engine is still usable afterwards
        (again,) = engine.recognize([samples[1].image])
    assert [r.page for r in results] == [1, 2, 3, 4]
    assert results[1].error is not None and results[1].error.code == "engine_failed"
    assert "3 s" in results[1].error.message
    for rec in (results[0], results[2], results[3], again):
        assert_recognized(rec, samples[rec.page])


def test_one_worker_runs_in_process():
    sample = english_strip(7)
    bad = PageImage(page=2, image=np.zeros((10, 10), np.uint8), dpi=200, width_pt=4, height_pt=4)
    with RapidOcrEngine(workers=1) as engine:
        assert engine.worker_pids() == [] and engine.max_in_flight == 1
        ok, failed = engine.recognize([sample.image, bad])
    assert_recognized(ok, sample)
    assert failed.error is not None and failed.error.code == "engine_failed"


def test_workspace_counts_image_and_model_memory():
    engine = RapidOcrEngine(workers=2)  # not loaded: accounting needs no workers
    small = english_page(1).image
    big = PageImage(page=1, image=np.zeros((3508, 2480, 3), np.uint8), dpi=300, width_pt=595, height_pt=842)
    assert engine.workspace_bytes(small) > small.nbytes
    assert engine.workspace_bytes(big) - engine.workspace_bytes(small) >= big.nbytes - small.nbytes
