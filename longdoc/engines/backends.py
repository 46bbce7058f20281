"""Which inference runtime each of RapidOCR's models runs on: ONNX Runtime or OpenVINO.

Both read the same ONNX files and give the same text; their speed depends
on the processor *and on the model*. Measured one model at a time on a
2-core Intel Xeon with AVX-512/AMX (``python bench/lines.py``, one thread):
the detector ran 0.16 s a page on OpenVINO against 0.61 s on ONNX Runtime,
the small recognizer 22 ms a line against 40 ms, but the tiny recognizer
10 ms against 8 ms: no single runtime is fastest for all three. So the
choice is made per *role* (:data:`ROLES`): ``det`` (the text detector),
``rec`` (the recognizer that reads every line) and ``recheck`` (the
cascade's accurate recognizer, which reads again the lines the first was
unsure of). Setting ``inference.backend``:

- ``onnxruntime`` or ``openvino``: that one for every role (OpenVINO
  missing → :class:`~longdoc.errors.EngineUnavailable`);
- ``auto`` (default): each role's model is timed on both runtimes in a
  worker process (:func:`~longdoc.engines.rapidocr.worker.time_roles`: the
  detector on a calibration strip, the recognizers on its lines) and each
  role keeps the faster — OpenVINO only when it is clearly faster
  (:data:`OPENVINO_MARGIN`). The choice is remembered per machine
  (processor model, core count, thread count, runtime versions and the
  models' hashes) in ``backend.json`` under the cache folder
  (``$LONGDOC_CACHE_DIR``, else ``$XDG_CACHE_HOME/longdoc``, else
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

from longdoc.engines.model_files import sha256_of
from longdoc.errors import EngineUnavailable
from longdoc.runtime import procs

log = logging.getLogger(__name__)

Backend = Literal["onnxruntime", "openvino"]
BACKENDS: tuple[Backend, ...] = ("onnxruntime", "openvino")
#: seconds the timing of both backends may take before ONNX Runtime is kept
PROBE_TIMEOUT_S = 300.0
#: how much faster OpenVINO must read to be kept: timings of one page vary
#: by ±5% run to run, and OpenVINO compiles its models at every start
#: (~1-2 s more than ONNX Runtime per worker)
OPENVINO_MARGIN = 0.10
#: bump when what is timed changes (the choice is then timed again, not read back)
#: 4: OpenVINO timed at the precision each model runs at; 5: a model that misreads at its precision is timed in
#: float32; 6: OpenVINO's recognizers read each line at its own width (no width buckets)
CALIBRATION = 6
#: the models of the rapidocr wheel
DET_MODEL = "PP-OCRv6_det_small.onnx"
REC_MODEL = "PP-OCRv6_rec_small.onnx"


def no_telemetry() -> None:
    """Keep OpenVINO from phoning home in this process. Importing
    ``openvino`` (2026.4) imports its model converter, which sends a usage
    event to Google Analytics from a child process unless a consent file in
    the user's home says no (or ``CI=true``): every OCR and layout worker
    did so at each start, on users' own machines, and paid ~0.1 s of CPU
    for a helper process. Declined here, before the first import; the
    user's files are left alone. Without the telemetry package, nothing to do."""
    try:
        from openvino_telemetry.utils import opt_in_checker
    except ImportError:
        return
    opt_in_checker.OptInChecker.check = lambda *args, **kwargs: opt_in_checker.ConsentCheckResult.DECLINED


def available(backend: str) -> bool:
    """Whether the runtime's Python package is installed."""
    return importlib.util.find_spec(backend) is not None


def engine_config(threads: int) -> dict[str, Any]:
    """RapidOCR's settings of both runtimes (``threads`` each; each model
    reads those of the runtime it runs on)."""
    return {
        "EngineConfig.onnxruntime.intra_op_num_threads": threads,
        "EngineConfig.openvino.inference_num_threads": threads,
        "EngineConfig.openvino.num_streams": 1,
        "EngineConfig.openvino.performance_hint": "LATENCY",
        "EngineConfig.openvino.enable_cpu_pinning": False,
    }


def det_params(backend: Backend, model: str | None = None) -> dict[str, Any]:
    """RapidOCR settings that run the text detector (``model``, default the
    wheel's PP-OCRv6 small detector) on ``backend``."""
    from rapidocr import EngineType

    return {"Det.engine_type": EngineType(backend), "Det.model_path": model or str(_model_dir() / DET_MODEL)}


def rec_params(backend: Backend, model: str | None = None, keys: str | None = None) -> dict[str, Any]:
    """RapidOCR settings that run a recognizer (``model`` and its dictionary
    ``keys``; default the wheel's PP-OCRv6 small recognizer, whose
    dictionary is inside the model) on ``backend``."""
    from rapidocr import EngineType

    out: dict[str, Any] = {"Rec.engine_type": EngineType(backend), "Rec.model_path": model or str(_model_dir() / REC_MODEL)}
    if keys:
        out["Rec.rec_keys_path"] = keys
    return out


#: the models a RapidOCR set-up runs, in the order the engine version lists them
ROLES = ("det", "rec", "recheck")
#: per role, the RapidOCR settings that run the role's model on each runtime (what is timed)
Candidates = dict[str, dict[str, dict[str, Any]]]


def choose(asked: str, threads: int, roles: Sequence[str], candidates: Callable[[], Candidates],
           probe: Callable[..., dict[str, dict[str, float]]], models: Sequence[str | None] = ()
           ) -> tuple[dict[str, Backend], str, dict[str, dict[str, float]]]:
    """The runtime of each of ``roles`` for ``asked`` (auto, onnxruntime,
    openvino), why (``asked``, ``measured``, ``remembered``, ``only one
    installed`` or ``timing failed``) and the seconds timed per role and
    runtime (empty unless measured or remembered). ``candidates()`` gives, per role, the
    settings that run its model on each runtime (called only when timing);
    ``models``: the model files the roles read (their hashes are part of
    what the choice is remembered under); ``probe(candidates, owner_pid)``
    times them in a worker process (RapidOCR's models:
    :func:`~longdoc.engines.rapidocr.worker.time_roles`). Per role, OpenVINO
    is kept only when it ran :data:`OPENVINO_MARGIN` faster: it compiles its
    models at every start."""
    if asked in BACKENDS:
        if not available(asked):
            raise EngineUnavailable(f"inference.backend is {asked!r} but the `{asked}` package is not installed.",
                                    hint=f"pip install {asked}, or set inference.backend: auto")
        return {role: asked for role in roles}, "asked", {}
    if not available("openvino"):
        return {role: "onnxruntime" for role in roles}, "only one installed", {}
    key = machine_key(threads, [*roles, *(m or "" for m in models)])
    remembered = _read_cache().get(key)
    if remembered and set(remembered.get("runtimes", {})) == set(roles) and \
            all(b in BACKENDS for b in remembered["runtimes"].values()):
        return remembered["runtimes"], "remembered", remembered.get("seconds", {})
    seconds = _probe(candidates(), probe)
    if set(seconds) != set(roles):
        return {role: "onnxruntime" for role in roles}, "timing failed", {}
    runtimes = {role: faster(seconds[role]) for role in roles}
    log.info("runtimes chosen", extra={"runtimes": runtimes, "seconds": seconds})
    _write_cache(key, {"runtimes": runtimes, "seconds": seconds, "measured_at": time.time()})
    return runtimes, "measured", seconds


def faster(seconds: dict[str, float]) -> Backend:
    """ONNX Runtime unless OpenVINO took at most 1 − :data:`OPENVINO_MARGIN`
    of its time (or ONNX Runtime was not timed)."""
    ort, ov = seconds.get("onnxruntime"), seconds.get("openvino")
    if ort is None:
        return "openvino"
    return "openvino" if ov is not None and ov <= (1 - OPENVINO_MARGIN) * ort else "onnxruntime"


def machine_key(threads: int, models: Sequence[str] = ()) -> str:
    """What the speed of the runtimes depends on, hashed (``models``: role
    names and model files, the files by their hash)."""
    facts = {"calibration": CALIBRATION, "cpu": cpu_model(), "cores": os.cpu_count(), "machine": platform.machine(),
             "threads": threads,
             "models": [sha256_of(Path(m)) if m and Path(m).is_file() else m for m in models],
             **{name: _version(name) for name in ("rapidocr", "onnxruntime", "openvino")}}
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]


def cache_dir() -> Path:
    if os.environ.get("LONGDOC_CACHE_DIR"):
        return Path(os.environ["LONGDOC_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "longdoc"


def _probe(candidates: Candidates, probe: Callable[..., dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    try:
        with ProcessPoolExecutor(1, mp_context=procs.context()) as pool:
            future = pool.submit(probe, candidates, os.getpid())
            return future.result(timeout=PROBE_TIMEOUT_S)
    except Exception as exc:  # a backend that fails to build or run loses
        log.warning("backend timing failed", extra={"error": f"{type(exc).__name__}: {exc}"})
        return {}


#: the file of :func:`remember` (apart from the runtimes' choice, ``backend.json``)
FACTS_FILE = "machine-facts.json"


def remembered(key: str) -> dict[str, Any] | None:
    """What :func:`remember` kept under ``key`` in this machine's cache (None: nothing)."""
    entry = _read_cache(FACTS_FILE).get(key)
    return entry if isinstance(entry, dict) else None


def remember(key: str, entry: dict[str, Any]) -> None:
    """Keep ``entry`` (JSON) under ``key`` (a :func:`machine_key`-based name)
    in this machine's cache folder (:data:`FACTS_FILE`)."""
    _write_cache(key, entry, FACTS_FILE)


def _read_cache(name: str = "backend.json") -> dict[str, Any]:
    try:
        data = json.loads((cache_dir() / name).read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_cache(key: str, entry: dict[str, Any], name: str = "backend.json") -> None:
    path = cache_dir() / name
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {**_read_cache(name), key: entry}
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
