"""Building :class:`RecognizedPage` values: pixel boxes to points, failed pages."""

from __future__ import annotations

from longdoc.engines.base import PageImage, RecognizedPage
from longdoc.errors import EngineFailed
from longdoc.model import BBox, ErrorInfo


def px_box(page: PageImage, x0: float, y0: float, x1: float, y1: float) -> BBox:
    """Axis-aligned pixel box → :class:`BBox` in points, clamped to the page.

    Pixels become points with ``page.dpi`` (``pt = px * 72 / dpi``); the
    result never leaves ``[0, width_pt] × [0, height_pt]``.
    """

    def clamp(v: float, hi: float) -> float:
        return min(max(v, 0.0), hi)

    w, h = page.width_pt, page.height_pt
    return BBox(
        x0=clamp(page.px_to_pt(min(x0, x1)), w),
        y0=clamp(page.px_to_pt(min(y0, y1)), h),
        x1=clamp(page.px_to_pt(max(x0, x1)), w),
        y1=clamp(page.px_to_pt(max(y0, y1)), h),
    )


def quad_box(page: PageImage, quad: list[list[float]]) -> BBox:
    """A detector's quadrilateral ``[[x, y] × 4]`` in pixels → enclosing box in points."""
    xs = [float(p[0]) for p in quad]
    ys = [float(p[1]) for p in quad]
    return px_box(page, min(xs), min(ys), max(xs), max(ys))


def confidence(value: float) -> float:
    """An engine score clamped into the model's ``[0, 1]``."""
    return min(max(float(value), 0.0), 1.0)


def failed_page(
    page: PageImage, message: str, *, engine: str, version: str, seconds: float = 0.0
) -> RecognizedPage:
    """The result for a page the engine could not recognize (``engine_failed``)."""
    return RecognizedPage(
        page=page.page,
        width_pt=page.width_pt,
        height_pt=page.height_pt,
        seconds=seconds,
        error=ErrorInfo.of(EngineFailed(message), page.page),
        engine=engine,
        engine_version=version,
    )


def check_image(image: object) -> None:
    """Raise ``ValueError`` unless ``image`` is a non-empty ``uint8`` (H, W, 3) array.

    Engines call this where the page is processed (in the worker), so a bad
    image fails that page only.
    """
    shape = getattr(image, "shape", None)
    dtype = getattr(image, "dtype", None)
    if shape is None or len(shape) != 3 or shape[2] != 3 or str(dtype) != "uint8":
        raise ValueError(f"page image must be uint8 (H, W, 3), got {dtype} {shape}")
    if shape[0] == 0 or shape[1] == 0:
        raise ValueError(f"page image is empty ({shape[1]}×{shape[0]} px)")
