"""Fake RapidOCR engines that hang or kill their worker on a marker page.

The fakes subclass the real engine and swap only the per-page task the
worker processes run, so pool start, recovery and result conversion are the
real code. A *marker page* is a tiny image of :data:`MARKER_SHAPE`; every
other page is recognized for real.
"""

from __future__ import annotations

import os
import signal
import time

import numpy as np

from longdoc.engines.base import PageImage
from longdoc.engines.rapidocr import RapidOcrEngine
from longdoc.engines.rapidocr.worker import RawPage, ocr_page

MARKER_SHAPE = (9, 7, 3)


def marker_page(page: int) -> PageImage:
    image = np.full(MARKER_SHAPE, 255, dtype=np.uint8)
    return PageImage(page=page, image=image, dpi=200.0, width_pt=2.5, height_pt=3.2)


def _is_marker(image: np.ndarray) -> bool:
    return getattr(image, "shape", None) == MARKER_SHAPE


def hang_on_marker(image: np.ndarray) -> RawPage:
    if _is_marker(image):
        time.sleep(3600)
    return ocr_page(image)


def kill_worker_on_marker(image: np.ndarray) -> RawPage:
    if _is_marker(image):
        os.kill(os.getpid(), signal.SIGKILL)
    return ocr_page(image)


class HangingFakeEngine(RapidOcrEngine):
    """Real RapidOCR, except a marker page never finishes."""

    page_task = staticmethod(hang_on_marker)


class WorkerKillingFakeEngine(RapidOcrEngine):
    """Real RapidOCR, except a marker page SIGKILLs the worker running it."""

    page_task = staticmethod(kill_worker_on_marker)
