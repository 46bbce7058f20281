"""The default CPU engine: RapidOCR's PP-OCRv6 detector and recognizers.

``engine`` (:class:`RapidOcrEngine`: the worker pool, runtimes, the
recognizer setting) runs ``worker`` (one page in a worker process) in
processes; a page's lines are read through ``cascade`` (tiny reads, small
re-reads the doubtful lines) with ``ctc`` (what the recognizer saw per
character); ``lookalikes``, ``pitch`` and ``symbol_runs`` read again from
the glyphs what the recognizer cannot tell; ``int8`` builds the int8 copy
of the small recognizer.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RECOGNIZERS", "RapidOcrEngine"]


def __getattr__(name: str) -> Any:
    """``RapidOcrEngine`` and ``RECOGNIZERS`` from ``engine``, imported on
    first use: a worker process imports ``worker`` alone, without the pool."""
    if name in __all__:
        from longdoc.engines.rapidocr import engine

        return getattr(engine, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
