"""Engine registry: names to configured, not yet loaded engines."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from longdoc.config import InferenceSettings
from longdoc.engines import Engine, available_engines, get_engine, register_engine, registry
from longdoc.engines.paged import PagedEngine
from longdoc.engines.rapidocr import RapidOcrEngine
from longdoc.engines.tesseract import TesseractEngine
from longdoc.errors import UnknownEngine
from longdoc.pipeline.options import ParseOptions


def test_page_engines_are_registered():
    assert {"rapidocr", "tesseract"} <= set(available_engines())


def test_rapidocr_is_built_from_settings_without_starting_workers():
    settings = InferenceSettings(workers=3, threads_per_worker=2, page_timeout_seconds=12, backend="onnxruntime",
                                 rapidocr={"recognizer": "small", "recheck_below": 0.9})
    paged = get_engine("rapidocr", settings)
    assert isinstance(paged, PagedEngine) and isinstance(paged, Engine)
    assert paged.capabilities.output == "lines" and paged.capabilities.groups_in_flight == 1
    assert paged.workspace_budget == settings.workspace_budget_mb * 2**20
    engine = paged.recognizer
    assert isinstance(engine, RapidOcrEngine)
    assert engine.workers == 3 and engine.max_in_flight == 6
    assert engine.page_timeout_seconds == 12
    assert engine.params["EngineConfig.onnxruntime.intra_op_num_threads"] == 2
    assert engine.asked_recognizer == "small" and engine.recheck_below == 0.9
    assert engine.worker_pids() == []


def test_the_rapidocr_keys_outside_their_section_are_refused():
    """0.1.0 had no release: ``inference.recognizer`` never was a key, and a
    configuration that uses it is refused rather than silently read."""
    with pytest.raises(ValidationError, match="recognizer"):
        InferenceSettings(recognizer="tiny")
    assert InferenceSettings(rapidocr={"recognizer": "tiny"}).rapidocr.recognizer == "tiny"


def test_an_engine_built_without_settings_reads_as_the_default_settings_do():
    engine, options = RapidOcrEngine(workers=1), ParseOptions()
    defaults = InferenceSettings()
    assert (engine.asked_backend, engine.asked_recognizer, engine.recheck_below, engine.int8,
            engine.recycle_after_pages) == (defaults.backend, defaults.rapidocr.recognizer,
                                            defaults.rapidocr.recheck_below, defaults.rapidocr.int8,
                                            defaults.rapidocr.recycle_after_pages)
    assert (options.engine, options.dpi, options.page_chunk_size, options.chunk_overlap, options.regions) == (
        defaults.engine, defaults.dpi, defaults.page_chunk_size, defaults.chunk_overlap, defaults.regions)


def test_tesseract_is_built_from_settings():
    engine = get_engine("tesseract", InferenceSettings(workers=2, page_timeout_seconds=7)).recognizer
    assert isinstance(engine, TesseractEngine)
    assert engine.workers == 2 and engine.page_timeout_seconds == 7


def test_zero_workers_means_one_per_core():
    settings = InferenceSettings(workers=0)
    engine = get_engine("rapidocr", settings).recognizer
    assert engine.workers == settings.effective_workers()


def test_unknown_engine_lists_the_known_ones():
    with pytest.raises(UnknownEngine) as info:
        get_engine("nope", InferenceSettings())
    assert info.value.code == "unknown_engine"
    assert "rapidocr" in info.value.message and "tesseract" in info.value.message


def test_new_engines_register_by_name(monkeypatch):
    monkeypatch.setattr(registry, "_FACTORIES", dict(registry._FACTORIES))
    built = []

    def factory(settings):
        built.append(settings.page_timeout_seconds)
        return RapidOcrEngine(workers=1)

    register_engine("fake-vlm", factory)
    assert "fake-vlm" in available_engines()
    assert isinstance(get_engine("fake-vlm", InferenceSettings(page_timeout_seconds=5)), RapidOcrEngine)
    assert built == [5]
    with pytest.raises(ValueError):
        register_engine("fake-vlm", factory)
