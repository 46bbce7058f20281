"""Engines by name: ``get_engine("rapidocr", settings)``.

The registry maps a name to a factory that builds an (unloaded) engine from
the inference settings. Factories import their engine module lazily, so
asking for one engine never imports another's dependencies. ``openai``
drives a model server (:mod:`longdoc.engines.openai`); ``fake`` is the
official test double (:class:`~longdoc.engines.fake.FakeEngine`: one line
per page, no model), so a served process can run without OCR models.

More engines join as plugins, in the manner of OCRmyPDF's:

- an installed package declares them under the ``longdoc.engines``
  entry-point group (name → a factory taking the ``InferenceSettings``),
  loaded when first asked for;
- ``inference.plugins`` names modules (dotted names, or paths of ``.py``
  files) imported by :func:`load_plugins` before engines are looked up;
  each calls :func:`register_engine` at import.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterable
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING

from longdoc.engines.base import Engine
from longdoc.engines.fallback import Fallback
from longdoc.errors import ConfigError, UnknownEngine

if TYPE_CHECKING:
    from longdoc.config import InferenceSettings

EngineFactory = Callable[["InferenceSettings"], Engine]


def _rapidocr(settings: InferenceSettings) -> Engine:
    from longdoc.engines.paged import PagedEngine
    from longdoc.engines.rapidocr.engine import RapidOcrEngine

    recognizer = RapidOcrEngine(
        workers=settings.effective_workers(),
        threads_per_worker=settings.threads_per_worker,
        page_timeout_seconds=settings.page_timeout_seconds,
        backend=settings.backend,
        recycle_after_pages=settings.rapidocr.recycle_after_pages,
        int8=settings.rapidocr.int8,
        recognizer=settings.rapidocr.recognizer,
        recheck_below=settings.rapidocr.recheck_below,
        recheck=settings.rapidocr.recheck,
        glyph_checks=settings.rapidocr.glyph_checks,
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


def _fake(settings: InferenceSettings) -> Engine:
    from longdoc.engines.fake import FakeEngine

    return FakeEngine()


_FACTORIES: dict[str, EngineFactory] = {"rapidocr": _rapidocr, "tesseract": _tesseract, "openai": _openai,
                                        "native": _native, "fake": _fake}
#: the ``longdoc.engines`` entry-point group
ENTRY_POINTS = "longdoc.engines"
_loaded: set[str] = set()  # plugin modules imported


def load_plugins(modules: Iterable[str]) -> None:
    """Import each plugin module once (a dotted name, or a ``.py`` file's
    path); it registers its engines. A module that cannot be imported is a
    :class:`~longdoc.errors.ConfigError` naming it."""
    for module in modules:
        if module in _loaded:
            continue
        try:
            if module.endswith(".py") or "/" in module:
                path = Path(module)
                spec = importlib.util.spec_from_file_location(f"longdoc_plugin_{path.stem}", path)
                if spec is None or spec.loader is None or not path.is_file():
                    raise FileNotFoundError(f"no such file: {path}")
                loaded = importlib.util.module_from_spec(spec)
                sys.modules[spec.name] = loaded
                spec.loader.exec_module(loaded)
            else:
                importlib.import_module(module)
        except Exception as exc:  # an import error, or an error the plugin raised while registering
            raise ConfigError(f"The engine plugin {module!r} could not be loaded: {type(exc).__name__}: {exc}.",
                              hint="Check inference.plugins: a module on the Python path or a .py file.") from exc
        _loaded.add(module)


def _entry_point(name: str) -> EngineFactory | None:
    """The factory an installed package declares for ``name``, if any."""
    for ep in entry_points(group=ENTRY_POINTS):
        if ep.name == name:
            try:
                return ep.load()
            except Exception as exc:
                raise ConfigError(f"The engine {name!r} of the package {ep.value!r} could not be loaded: "
                                  f"{type(exc).__name__}: {exc}.",
                                  hint="Reinstall the package that provides it, or choose another engine.") from exc
    return None


def register_engine(name: str, factory: EngineFactory) -> None:
    """Make ``get_engine(name, …)`` build engines with ``factory``.

    Raises ``ValueError`` if ``name`` is already registered.
    """
    if name in _FACTORIES:
        raise ValueError(f"engine {name!r} is already registered")
    _FACTORIES[name] = factory


def available_engines() -> list[str]:
    """Registered engine names and those installed packages declare, sorted
    (whether each one's dependencies are installed is checked by its ``load()``)."""
    return sorted({*_FACTORIES, *(ep.name for ep in entry_points(group=ENTRY_POINTS))})


def check_engine_name(name: str) -> str:
    """``name`` if an engine of that name is registered or declared by an
    installed package (loaded then); otherwise raises
    :class:`UnknownEngine` listing the known names (builds nothing)."""
    if name not in _FACTORIES:
        factory = _entry_point(name)
        if factory is None:
            known = ", ".join(available_engines())
            raise UnknownEngine(f"Unknown engine {name!r}; known engines: {known}.", engine=name,
                                known=available_engines())
        _FACTORIES[name] = factory
    return name


def check_offered(name: str, offered: Iterable[str]) -> str:
    """``name`` if it is one of ``offered`` (the engines a deployment lets
    its callers choose) and registered or declared (:func:`check_engine_name`).
    Otherwise raises :class:`UnknownEngine` listing ``offered`` alone, the
    same whether or not an engine of that name exists: a caller learns
    nothing of the engines it may not use (the test double, an unconfigured
    model server)."""
    choices = list(dict.fromkeys(offered))
    if name in choices:
        try:
            return check_engine_name(name)
        except UnknownEngine:
            pass  # offered but not installed: to the caller, as good as not offered
    raise UnknownEngine(f"Engine {name!r} is not available here; choose one of: {', '.join(choices)}.",
                        engine=name, known=choices)


def get_engine(name: str, settings: InferenceSettings) -> Engine:
    """Build the engine ``name`` (not loaded) configured from ``settings``.

    Raises :class:`UnknownEngine` listing the known names.
    """
    return _FACTORIES[check_engine_name(name)](settings)
