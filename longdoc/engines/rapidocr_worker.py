"""RapidOCR on one page, run inside a worker process (or in-process).

Worker processes import only this module: :func:`init_worker` builds one
``RapidOCR`` object per process and warms it up; :func:`ocr_page` then
recognizes one page image per call and returns plain, cheaply pickled values
(:class:`RawPage`). Conversion to the document model happens in the parent.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from longdoc.engines.results import check_image

#: Settings measured on this project's scans (see the engine's docstring).
DEFAULT_PARAMS: dict[str, Any] = {
    "Global.use_cls": False,
    "Global.log_level": "warning",
    "EngineConfig.onnxruntime.intra_op_num_threads": 1,
    "EngineConfig.onnxruntime.inter_op_num_threads": 1,
    "EngineConfig.onnxruntime.enable_cpu_mem_arena": True,
    "Rec.rec_batch_num": 1,
    "Det.limit_type": "max",
    "Det.limit_side_len": 960,
}

_ocr: Any = None  # this process's RapidOCR object


@dataclass
class RawPage:
    """One page's OCR output in pixels: quads ``[[x, y] × 4]``, texts, scores."""

    quads: list[list[list[float]]]
    texts: list[str]
    scores: list[float]
    seconds: float


def build_ocr(params: dict[str, Any]) -> Any:
    """A warmed-up ``RapidOCR`` with ``params`` (raises ImportError if missing)."""
    from rapidocr import RapidOCR

    ocr = RapidOCR(params=params)
    run_ocr(ocr, warm_up_image())
    return ocr


def init_worker(params: dict[str, Any]) -> None:
    """Process-pool initializer: build this process's OCR object once."""
    global _ocr
    _ocr = build_ocr(params)


def ocr_page(image: np.ndarray) -> RawPage:
    """Recognize one RGB page image with this process's OCR object."""
    if _ocr is None:
        raise RuntimeError("worker not initialized: init_worker() was not run")
    return run_ocr(_ocr, image)


def ping(delay_s: float = 0.05) -> int:
    """A no-op task returning the worker's pid (used to see every worker start)."""
    time.sleep(delay_s)
    return os.getpid()


def run_ocr(ocr: Any, image: np.ndarray) -> RawPage:
    """Run ``ocr`` on an RGB ``uint8`` (H, W, 3) image.

    Raises ``ValueError`` for an image of the wrong shape or type; whatever
    RapidOCR raises passes through (the caller fails the page).
    """
    check_image(image)
    t0 = time.perf_counter()
    # RapidOCR reads a 3-channel ndarray as BGR (OpenCV order).
    out = ocr(np.ascontiguousarray(image[..., ::-1]))
    seconds = time.perf_counter() - t0
    boxes, texts, scores = out.boxes, out.txts, out.scores
    if boxes is None or texts is None or scores is None:
        return RawPage([], [], [], seconds)
    return RawPage(
        quads=np.asarray(boxes, dtype=float).tolist(),
        texts=[str(t) for t in texts],
        scores=[float(s) for s in scores],
        seconds=seconds,
    )


def warm_up_image() -> np.ndarray:
    """A small RGB image with one printed line, so detection *and*
    recognition models both run once."""
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", (480, 96), "white")
    ImageDraw.Draw(img).text(
        (16, 24), "Warm up 0123", fill="black", font=ImageFont.load_default(size=40)
    )
    return np.asarray(img)
