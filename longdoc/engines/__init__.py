"""OCR engines behind one protocol (:mod:`longdoc.engines.base`), found by
name in a registry (:mod:`longdoc.engines.registry`).

Importing this package is cheap: engine modules import their heavy
dependencies (RapidOCR, ONNX Runtime) only when an engine loads.
"""

from longdoc.engines.base import Engine, EngineCapabilities, PageImage, RecognizedPage
from longdoc.engines.registry import (
    EngineFactory,
    available_engines,
    check_engine_name,
    get_engine,
    register_engine,
)

__all__ = [
    "Engine",
    "EngineCapabilities",
    "EngineFactory",
    "PageImage",
    "RecognizedPage",
    "available_engines",
    "check_engine_name",
    "get_engine",
    "register_engine",
]
