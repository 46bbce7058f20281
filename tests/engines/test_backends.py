"""The runtimes under RapidOCR's models: asked for, or chosen per model by
timing both once per machine; either reads the same text; workers are
recycled between groups."""

from __future__ import annotations

import json

import pytest

from longdoc.engines import backends
from longdoc.engines.model_files import ModelFileError
from longdoc.engines.rapidocr import RapidOcrEngine, int8 as int8_model
from longdoc.errors import EngineUnavailable
from tests.engines.pages import cer, english_page, english_strip

needs_openvino = pytest.mark.skipif(not backends.available("openvino"), reason="openvino is not installed")


def _text(rec) -> str:
    return "\n".join(line.text for line in rec.lines)


def _untimed():
    raise AssertionError("nothing should be timed here")


def test_an_asked_backend_is_used_as_asked_for_every_model():
    assert backends.choose("onnxruntime", 1, backends.ROLES, _untimed, _untimed) == (
        {"det": "onnxruntime", "rec": "onnxruntime", "recheck": "onnxruntime"}, "asked", {})


def test_an_asked_backend_that_is_missing_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(backends, "available", lambda name: name != "openvino")
    with pytest.raises(EngineUnavailable) as err:
        backends.choose("openvino", 1, backends.ROLES, _untimed, _untimed)
    assert err.value.code == "engine_unavailable" and "openvino" in str(err.value)
    assert backends.choose("auto", 1, ("det", "rec"), _untimed, _untimed) == (
        {"det": "onnxruntime", "rec": "onnxruntime"}, "only one installed", {})


def test_openvino_is_kept_only_when_clearly_faster():
    assert backends.faster({"onnxruntime": 1.0, "openvino": 0.95}) == "onnxruntime"  # within run-to-run noise
    assert backends.faster({"onnxruntime": 1.0, "openvino": 0.85}) == "openvino"
    assert backends.faster({"openvino": 1.0}) == "openvino"  # ONNX Runtime failed to run


def test_an_unknown_backend_is_refused():
    with pytest.raises(ValueError):
        RapidOcrEngine(workers=1, backend="tensorflow")


@needs_openvino
def test_auto_times_each_model_on_both_once_then_remembers_the_faster(tmp_path, monkeypatch):
    monkeypatch.setenv("LONGDOC_CACHE_DIR", str(tmp_path))
    engine = RapidOcrEngine(workers=1, backend="auto", recognizer="cascade")  # detector, tiny, small
    chosen = engine.runtimes
    (entry,) = json.loads((tmp_path / "backend.json").read_text()).values()
    assert set(entry["seconds"]) == set(backends.ROLES)
    for role, seconds in entry["seconds"].items():
        assert set(seconds) == {"onnxruntime", "openvino"} and all(s > 0 for s in seconds.values())
        assert chosen[role] == backends.faster(seconds)
    again = RapidOcrEngine(workers=1, backend="auto", recognizer="cascade")
    assert again.runtimes == chosen and again._runtimes[1] == "remembered"
    assert RapidOcrEngine(workers=1, backend="auto", recognizer="cascade").version == engine.version
    assert backends.machine_key(2) != backends.machine_key(1)  # another thread count is another machine


@needs_openvino
def test_auto_reads_with_small_alone_where_small_costs_little_more_than_tiny(tmp_path, monkeypatch):
    monkeypatch.setenv("LONGDOC_CACHE_DIR", str(tmp_path))
    timed = {"det": {"onnxruntime": 0.2, "openvino": 0.05}, "rec": {"onnxruntime": 0.10, "openvino": 0.12},
             "recheck": {"onnxruntime": 0.5, "openvino": None}}
    for small, expected in ((0.30, "cascade"), (0.20, "small")):
        timed["recheck"]["openvino"] = small
        monkeypatch.setattr(backends, "_probe", lambda candidates, probe: {r: dict(s) for r, s in timed.items()})
        (tmp_path / "backend.json").unlink(missing_ok=True)
        engine = RapidOcrEngine(workers=1, backend="auto", recognizer="auto")
        assert engine.recognizer == expected
        assert engine.runtimes == ({"det": "openvino", "rec": "onnxruntime", "recheck": "openvino"} if expected == "cascade"
                                   else {"det": "openvino", "rec": "openvino"})
        assert engine.version.endswith("/PP-OCRv6-tiny+small/openvino+onnxruntime+openvino" if expected == "cascade"
                                       else "/PP-OCRv6/openvino")


@needs_openvino
def test_models_on_different_runtimes_read_a_page(tmp_path):
    sample = english_page()
    with RapidOcrEngine(workers=1, backend="onnxruntime") as engine:
        engine._runtimes = ({"det": "openvino", "rec": "onnxruntime", "recheck": "openvino"}, "asked")
        assert engine.version.endswith("/PP-OCRv6-tiny+small/openvino+onnxruntime+openvino")
        (rec,) = engine.recognize([sample.image])
    assert rec.error is None and cer(_text(rec), sample.text) <= 0.01


@needs_openvino
def test_openvino_reads_a_page_as_onnx_runtime_does():
    sample = english_page()
    texts = {}
    for backend in backends.BACKENDS:
        with RapidOcrEngine(workers=1, backend=backend) as engine:
            (rec,) = engine.recognize([sample.image])
            assert rec.error is None and rec.engine_version.endswith(f"/{backend}")
            texts[backend] = _text(rec)
    assert cer(texts["openvino"], sample.text) <= 0.01
    assert cer(texts["openvino"], texts["onnxruntime"]) <= 0.005


def test_workers_are_recycled_between_groups_and_lose_no_page():
    samples = [english_strip(n) for n in range(1, 7)]
    with RapidOcrEngine(workers=2, recycle_after_pages=1) as engine:
        seen = []
        for group in (samples[:2], samples[2:4], samples[4:]):
            results = list(engine.recognize(s.image for s in group))
            seen.append(engine.worker_pids())
            assert [r.page for r in results] == [s.image.page for s in group]
            for rec, sample in zip(results, group):
                assert rec.error is None and cer(_text(rec), sample.text) <= 0.01
    assert not set(seen[0]) & set(seen[1]) and not set(seen[1]) & set(seen[2])  # fresh workers each group


def test_the_int8_recognizer_reads_as_the_float_one_does():
    sample = english_page()
    texts = {}
    for int8 in (False, True):
        with RapidOcrEngine(workers=1, backend="onnxruntime", int8=int8, recognizer="small") as engine:
            assert engine.version.endswith("PP-OCRv6-int8/onnxruntime" if int8 else "PP-OCRv6/onnxruntime")
            (rec,) = engine.recognize([sample.image])
            texts[int8] = _text(rec)
    assert cer(texts[True], sample.text) <= 0.01
    assert cer(texts[True], texts[False]) <= 0.005


def test_an_int8_file_that_does_not_match_its_hash_is_refused(tmp_path):
    built = int8_model.ensure()
    copy = tmp_path / built.name
    data = bytearray(built.read_bytes())
    data[len(data) // 2] ^= 0xFF
    copy.write_bytes(bytes(data))
    (tmp_path / f"{built.name}.sha256").write_text(built.with_name(built.name + ".sha256").read_text())
    with pytest.raises(ModelFileError):
        int8_model.int8_recognizer(copy)


# --- what a precision does to a model is checked on the machine ---------------------------------------------


def _ocr(runtime: str, model: str | None = None, keys: str | None = None):
    """A RapidOCR object whose recognizer (not loaded yet) is ``model`` on ``runtime``."""
    from rapidocr import RapidOCR

    from longdoc.engines.rapidocr import worker as rapidocr_worker

    params = {**rapidocr_worker.DEFAULT_PARAMS, **backends.engine_config(1), **backends.rec_params(runtime, model, keys)}
    rapidocr_worker.cache_openvino_models()
    return RapidOCR(params=params)


def _recognizer(runtime: str, precision: str | None, model: str | None = None, keys: str | None = None):
    """The recognizer ``model`` on ``runtime``, compiled at ``precision`` (OpenVINO; None: its default)."""
    from longdoc.engines.rapidocr import worker as rapidocr_worker

    ocr = _ocr(runtime, model, keys)
    with rapidocr_worker.openvino_precision(precision):
        return ocr._load_rec_model()


def test_a_recognizer_that_misreads_the_calibration_lines_is_found_out(tmp_path):
    from longdoc.engines import model_files
    from longdoc.engines.rapidocr import worker as rapidocr_worker

    assert rapidocr_worker.calibration_problem(_recognizer("onnxruntime", None), "rec") is None
    tiny, keys = model_files.tiny_recognizer()
    assert rapidocr_worker.calibration_problem(_recognizer("onnxruntime", None, str(tiny), str(keys)),
                                               "rec") is None
    chars = keys.read_text(encoding="utf-8").splitlines()
    shifted = tmp_path / "keys.txt"  # every character one place off: confident nonsense, as broken arithmetic reads
    shifted.write_text("\n".join(chars[1:] + chars[:1]) + "\n", encoding="utf-8")
    problem = rapidocr_worker.calibration_problem(
        _recognizer("onnxruntime", None, str(tiny), str(shifted)), "rec")
    assert problem is not None and "similarity" in problem


def test_the_detector_finds_every_calibration_line():
    from rapidocr import RapidOCR

    from longdoc.engines.rapidocr import worker as rapidocr_worker

    params = {**rapidocr_worker.DEFAULT_PARAMS, **backends.engine_config(1), **backends.det_params("onnxruntime")}
    assert rapidocr_worker.calibration_problem(RapidOCR(params=params)._load_det_model(), "det") is None


def _default_precision() -> str:
    import openvino

    return str(openvino.Core().get_property("CPU", "INFERENCE_PRECISION_HINT"))


@needs_openvino
def test_a_model_that_misreads_at_openvinos_own_precision_is_compiled_again_in_float32(caplog):
    """On a Xeon with AMX, OpenVINO 2026.4 computes in bfloat16 by default, and
    the small recognizer then reads garbage. Loaded as a fast model (where
    the engine lets OpenVINO choose its precision) it must come back in
    float32, reading right."""
    from longdoc.engines.rapidocr import worker as rapidocr_worker

    if "bf16" not in _default_precision() and "bfloat16" not in _default_precision():
        pytest.skip("this processor's OpenVINO default precision is float32")
    at_default = _recognizer("openvino", None)
    if rapidocr_worker.calibration_problem(at_default, "rec") is None:
        pytest.skip("the small recognizer reads right in bfloat16 on this processor")
    ocr = _ocr("openvino")
    with caplog.at_level("WARNING", logger="longdoc.engines.rapidocr.worker"):
        model = rapidocr_worker.load_model(ocr, "rec", cascade=True)  # the fast role: OpenVINO's own precision
    compiled = model.session.session.get_compiled_model()
    assert "32" in str(compiled.get_property("INFERENCE_PRECISION_HINT"))
    assert rapidocr_worker.calibration_problem(model, "rec") is None
    assert any("misreads" in r.getMessage() for r in caplog.records)


@needs_openvino
def test_the_calibration_verdict_is_remembered_per_model(tmp_path, monkeypatch):
    """A model OpenVINO computes at its own precision is checked on the
    calibration lines once per machine and model, not at every worker start."""
    from longdoc.engines.model_files import tiny_recognizer
    from longdoc.engines.rapidocr import worker as rapidocr_worker

    monkeypatch.setenv("LONGDOC_CACHE_DIR", str(tmp_path))
    checked: list[str] = []
    real = rapidocr_worker.calibration_problem
    monkeypatch.setattr(rapidocr_worker, "calibration_problem", lambda model, role: checked.append(role) or
                        real(model, role))
    tiny, keys = (str(p) for p in tiny_recognizer())
    for _ in range(2):
        rapidocr_worker.load_model(_ocr("openvino", tiny, keys), "rec", cascade=True)
    assert checked == ["rec"]
    rapidocr_worker.load_model(_ocr("openvino"), "rec", cascade=True)  # another model: checked on its own
    assert checked == ["rec", "rec"]


@needs_openvino
def test_a_recognizer_on_openvino_reads_each_line_as_on_onnx_runtime():
    """The small recognizer as the engine installs it (``ctc.install``), in
    float32 on OpenVINO, gives every line the text and scores it gets on ONNX
    Runtime: the runtime may change the speed, never the reading. Padding
    each line's width up to a bucket of 64 pixels (as OpenVINO's reading did,
    to reuse compiled shapes) changed the model's reading of the whole line:
    digit groups ran together ("3980 7651" read "39807651") and the code test
    misread 4 of 168 codes on a Xeon with AMX, against 2 unpadded."""
    import numpy as np
    from rapidocr.ch_ppocr_rec.typings import TextRecInput

    from longdoc.engines.rapidocr import ctc, worker as rapidocr_worker

    image = np.ascontiguousarray(rapidocr_worker.calibration_image()[..., ::-1])
    crops = [np.ascontiguousarray(image[top:bottom, : 300 + 97 * i]) for i, (top, bottom)
             in enumerate(rapidocr_worker.CALIBRATION_LINES)]  # widths that are no multiple of 64
    read = {}
    for runtime in backends.BACKENDS:
        recognizer = ctc.install(_recognizer(runtime, "f32"))
        read[runtime] = [(res.txts[0], res.scores[0]) for res in
                         (recognizer(TextRecInput(img=[crop])) for crop in crops)]
    assert [t for t, _ in read["openvino"]] == [t for t, _ in read["onnxruntime"]]
    assert np.allclose([s for _, s in read["openvino"]], [s for _, s in read["onnxruntime"]], atol=1e-4), read


_TELEMETRY_PROBE = """
import multiprocessing, sys, time
started = []
start = multiprocessing.Process.start
def recording_start(self):
    started.append(self)
    return start(self)
multiprocessing.Process.start = recording_start
from longdoc.engines.rapidocr.worker import cache_openvino_models
cache_openvino_models()
import openvino
time.sleep(1.0)  # the telemetry sender runs in a thread
print(len(started))
"""


def test_loading_openvino_sends_no_telemetry(tmp_path):
    """OpenVINO's import sends a usage event to Google Analytics from a
    child process unless a consent file says no (or ``CI=true``): a worker
    that loads it, outside CI and with no consent file, starts no process."""
    import os
    import subprocess
    import sys

    pytest.importorskip("openvino")
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "TF_BUILD", "JENKINS_URL")}
    env["HOME"] = str(tmp_path)  # no consent file in it
    out = subprocess.run([sys.executable, "-c", _TELEMETRY_PROBE], env=env, capture_output=True, text=True,
                         timeout=120, cwd=os.getcwd())
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-1] == "0", out.stdout
