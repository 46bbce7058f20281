"""OCR engines behind one protocol (:mod:`longdoc.engines.base`): a session
per document, page groups in, pages out; found by name in a registry
(:mod:`longdoc.engines.registry`). Page engines (RapidOCR, Tesseract) sit
behind :class:`~longdoc.engines.paged.PagedEngine`;
:class:`~longdoc.engines.fake.FakeEngine` is the official test double.

Importing this package is cheap: engine modules import their heavy
dependencies (RapidOCR, ONNX Runtime, httpx) only when an engine is built.
"""

from longdoc.engines.base import (
    Engine,
    EngineCapabilities,
    EngineSession,
    GroupPlan,
    PageGroup,
    PageImage,
    RecognizedPage,
)
from longdoc.engines.fake import FakeEngine
from longdoc.engines.registry import (
    EngineFactory,
    available_engines,
    check_engine_name,
    get_engine,
    load_plugins,
    register_engine,
)

__all__ = [
    "Engine",
    "EngineCapabilities",
    "EngineFactory",
    "EngineSession",
    "FakeEngine",
    "GroupPlan",
    "PageGroup",
    "PageImage",
    "RecognizedPage",
    "available_engines",
    "check_engine_name",
    "get_engine",
    "load_plugins",
    "register_engine",
]
