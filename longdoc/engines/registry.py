"""Engines by name: ``get_engine("rapidocr", settings)``.

The registry maps a name to a factory that builds an (unloaded) engine from
the inference settings; more engines join with :func:`register_engine`. Factories import their engine module lazily, so
asking for one engine never imports another's dependencies. ``openai``
drives a model server (:mod:`longdoc.engines.openai`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from longdoc.engines.base import Engine
from longdoc.engines.fallback import Fallback
from longdoc.errors import UnknownEngine

if TYPE_CHECKING:
    from longdoc.config import InferenceSettings

EngineFactory = Callable[["InferenceSettings"], Engine]


def _rapidocr(settings: InferenceSettings) -> Engine:
    from longdoc.engines.paged import PagedEngine
    from longdoc.engines.rapidocr import RapidOcrEngine

    recognizer = RapidOcrEngine(
        workers=settings.effective_workers(),
        threads_per_worker=settings.threads_per_worker,
        page_timeout_seconds=settings.page_timeout_seconds,
        backend=settings.backend,
        recycle_after_pages=settings.recycle_after_pages,
        int8=settings.int8,
        recognizer=settings.recognizer,
        recheck_below=settings.recheck_below,
    )
    return PagedEngine(recognizer, workspace_budget=settings.workspace_budget_mb * 2**20)


def _tesseract(settings: InferenceSettings) -> Engine:
    from longdoc.engines.paged import PagedEngine
    from longdoc.engines.tesseract import TesseractEngine

    recognizer = TesseractEngine(
        workers=settings.effective_workers(),
        threads_per_worker=settings.threads_per_worker,
        page_timeout_seconds=settings.page_timeout_seconds,
    )
    return PagedEngine(recognizer, workspace_budget=settings.workspace_budget_mb * 2**20)


def fallback_for(settings: InferenceSettings, name: str | None, owner: str) -> Fallback:
    """The CPU engine a model engine (``owner``) hands the pages it could not
    produce to: ``name`` from this registry (none when unset or the owner itself)."""
    return Fallback(None if name in (None, owner) else name, lambda engine: get_engine(engine, settings))


def _openai(settings: InferenceSettings) -> Engine:
    from longdoc.engines.openai import OpenAIEngine

    return OpenAIEngine(settings, fallback=fallback_for(settings, settings.openai.fallback_engine, "openai"))


def _native(settings: InferenceSettings) -> Engine:
    try:
        from longdoc.engines.native.engine import NativeEngine
    except ImportError as exc:
        from longdoc.errors import EngineUnavailable

        raise EngineUnavailable("The native engine needs torch and transformers, which are not installed.",
                                hint="Install the torch extra: pip install 'longdoc[torch]'.") from exc
    return NativeEngine(settings, fallback=fallback_for(settings, settings.native.fallback_engine, "native"))


_FACTORIES: dict[str, EngineFactory] = {"rapidocr": _rapidocr, "tesseract": _tesseract, "openai": _openai,
                                        "native": _native}


def register_engine(name: str, factory: EngineFactory) -> None:
    """Make ``get_engine(name, …)`` build engines with ``factory``.

    Raises ``ValueError`` if ``name`` is already registered.
    """
    if name in _FACTORIES:
        raise ValueError(f"engine {name!r} is already registered")
    _FACTORIES[name] = factory


def available_engines() -> list[str]:
    """Registered engine names, sorted (whether each one's dependencies are
    installed is checked by its ``load()``)."""
    return sorted(_FACTORIES)


def check_engine_name(name: str) -> str:
    """``name`` if an engine of that name is registered; otherwise raises
    :class:`UnknownEngine` listing the known names (cheap: builds nothing)."""
    if name not in _FACTORIES:
        known = ", ".join(available_engines())
        raise UnknownEngine(f"Unknown engine {name!r}; known engines: {known}.", engine=name, known=available_engines())
    return name


def get_engine(name: str, settings: InferenceSettings) -> Engine:
    """Build the engine ``name`` (not loaded) configured from ``settings``.

    Raises :class:`UnknownEngine` listing the known names.
    """
    return _FACTORIES[check_engine_name(name)](settings)
