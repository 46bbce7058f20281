"""Which inference runtime RapidOCR's models run on: ONNX Runtime or OpenVINO.

Both read the same ONNX files from the ``rapidocr`` wheel and give the same
text; their speed depends on the processor (OpenVINO ran the recognizer
about twice as fast on a 2-core Intel Xeon with AVX-512/AMX). Setting
``inference.backend``:

- ``onnxruntime`` or ``openvino``: that one (OpenVINO missing →
  :class:`~longdoc.errors.EngineUnavailable`);
- ``auto`` (default): time both on one calibration page in a worker process
  (:func:`~longdoc.engines.rapidocr_worker.time_backends`, the engine's own
  recognizers) and keep the faster — OpenVINO only when it is clearly
  faster (:data:`OPENVINO_MARGIN`). The choice is remembered per machine (processor model, core count,
  thread count and runtime versions) in ``backend.json`` under the cache
  folder (``$LONGDOC_CACHE_DIR``, else ``$XDG_CACHE_HOME/longdoc``, else
  ``~/.cache/longdoc``), so the timing runs once per machine, not per start.

OpenVINO runs with one stream, ``inference_num_threads`` threads and CPU
pinning off: with pinning on, every worker process pins its thread to the
same core and two workers share one core.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import platform
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Literal

from longdoc import procs
from longdoc.engines.model_files import sha256_of
from longdoc.errors import EngineUnavailable

log = logging.getLogger(__name__)

Backend = Literal["onnxruntime", "openvino"]
BACKENDS: tuple[Backend, ...] = ("onnxruntime", "openvino")
#: seconds the timing of both backends may take before ONNX Runtime is kept
PROBE_TIMEOUT_S = 300.0
#: how much faster OpenVINO must read to be kept: timings of one page vary
#: by ±5% run to run, and OpenVINO compiles its models at every start
#: (~1-2 s more than ONNX Runtime per worker)
OPENVINO_MARGIN = 0.10


def available(backend: str) -> bool:
    """Whether the runtime's Python package is installed."""
    return importlib.util.find_spec(backend) is not None


def params(backend: Backend, threads: int) -> dict[str, Any]:
    """RapidOCR settings that put detector and recognizer on ``backend``."""
    if backend == "onnxruntime":
        return {"EngineConfig.onnxruntime.intra_op_num_threads": threads}
    from rapidocr import EngineType

    models = _model_dir()
    return {
        "Det.engine_type": EngineType.OPENVINO,
        "Rec.engine_type": EngineType.OPENVINO,
        "Det.model_path": str(models / "PP-OCRv6_det_small.onnx"),
        "Rec.model_path": str(models / "PP-OCRv6_rec_small.onnx"),
        "EngineConfig.openvino.inference_num_threads": threads,
        "EngineConfig.openvino.num_streams": 1,
        "EngineConfig.openvino.performance_hint": "LATENCY",
        "EngineConfig.openvino.enable_cpu_pinning": False,
    }


#: an OCR set-up per backend: RapidOCR settings and the cascade plan (or None)
Setup = tuple[dict[str, Any], Any]


def choose(asked: str, threads: int, setup: Callable[[Backend], Setup] | None = None,
           models: Sequence[str | None] = ()) -> tuple[Backend, str]:
    """The backend to use for ``asked`` (auto, onnxruntime, openvino) and
    why: ``asked``, ``measured``, ``remembered`` or ``only one installed``.
    ``setup(backend)`` gives the engine's OCR set-up on that backend (what
    is timed; default: the wheel's models with longdoc's settings);
    ``models``: the model files it reads (their hashes are part of what the
    choice is remembered under). OpenVINO is kept only when it reads
    :data:`OPENVINO_MARGIN` faster: it compiles its models at every start."""
    if asked in BACKENDS:
        if not available(asked):
            raise EngineUnavailable(f"inference.backend is {asked!r} but the `{asked}` package is not installed.",
                                    hint=f"pip install {asked}, or set inference.backend: auto")
        return asked, "asked"  # type: ignore[return-value]
    if not available("openvino"):
        return "onnxruntime", "only one installed"
    key = machine_key(threads, models)
    remembered = _read_cache().get(key)
    if remembered and remembered.get("backend") in BACKENDS:
        return remembered["backend"], "remembered"
    setup = setup or (lambda backend: (default_params(backend, threads), None))
    seconds = _probe({backend: setup(backend) for backend in BACKENDS if available(backend)})
    if not seconds:
        return "onnxruntime", "timing failed"
    best = faster(seconds)
    log.info("backend chosen", extra={"backend": best, "seconds": seconds})
    _write_cache(key, {"backend": best, "seconds": seconds, "measured_at": time.time()})
    return best, "measured"


def faster(seconds: dict[str, float]) -> Backend:
    """ONNX Runtime unless OpenVINO took at most 1 − :data:`OPENVINO_MARGIN`
    of its time (or ONNX Runtime was not timed)."""
    ort, ov = seconds.get("onnxruntime"), seconds.get("openvino")
    if ort is None:
        return "openvino"
    return "openvino" if ov is not None and ov <= (1 - OPENVINO_MARGIN) * ort else "onnxruntime"


def default_params(backend: Backend, threads: int) -> dict[str, Any]:
    """The wheel's models with longdoc's default settings, on ``backend``."""
    from longdoc.engines.rapidocr_worker import DEFAULT_PARAMS

    return {**DEFAULT_PARAMS, **params(backend, threads)}


def machine_key(threads: int, models: Sequence[str | None] = ()) -> str:
    """What the speed of a backend depends on, hashed."""
    facts = {"cpu": cpu_model(), "cores": os.cpu_count(), "machine": platform.machine(), "threads": threads,
             "models": [sha256_of(Path(m)) if m else None for m in models],
             **{name: _version(name) for name in ("rapidocr", "onnxruntime", "openvino")}}
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]


def cache_dir() -> Path:
    if os.environ.get("LONGDOC_CACHE_DIR"):
        return Path(os.environ["LONGDOC_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "longdoc"


def _probe(setups: dict[str, Setup]) -> dict[str, float]:
    from longdoc.engines import rapidocr_worker

    try:
        with ProcessPoolExecutor(1, mp_context=procs.context()) as pool:
            future = pool.submit(rapidocr_worker.time_backends, setups, os.getpid())
            return future.result(timeout=PROBE_TIMEOUT_S)
    except Exception as exc:  # a backend that fails to build or run loses
        log.warning("backend timing failed", extra={"error": f"{type(exc).__name__}: {exc}"})
        return {}


def _read_cache() -> dict[str, Any]:
    try:
        data = json.loads((cache_dir() / "backend.json").read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_cache(key: str, entry: dict[str, Any]) -> None:
    path = cache_dir() / "backend.json"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {**_read_cache(), key: entry}
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(path)
    except OSError as exc:  # a read-only home: measure again next start
        log.warning("backend choice not saved", extra={"path": str(path), "error": str(exc)})


def _model_dir() -> Path:
    import rapidocr

    return Path(rapidocr.__file__).parent / "models"


def cpu_model() -> str:
    """The processor's model name (the key the timed choice is remembered under)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return ""
