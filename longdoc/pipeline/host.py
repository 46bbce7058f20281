"""The engines one process runs, and what they share between documents.

An :class:`EngineHost` holds each engine by its key (its name, or
``<name>@<profile>`` when a job's profile configures it otherwise), built
on first need and loaded before its first page, with what every document
on that engine shares::

    key ──► engine       built (cheap) on first need; load() runs once, callers wait for it
        ──► admission    one workspace: budget × kv_cache_watermark, in the engine's cost unit
        ──► turns        groups_in_flight turns, handed round-robin by owner (tenant)
    region detector      the layout and table models' worker pool (built on first use)

The process's :class:`~longdoc.runner.runner.Runner` (or the CLI) owns
one, hands it to its :class:`~longdoc.pipeline.Pipeline` (the stages) and
closes it; a ``Pipeline`` built without one makes its own. The service
reads capabilities, health, figures and ready details from it (``/metrics``,
``/readyz``) without knowing which engines run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from longdoc.config import InferenceSettings, Settings
from longdoc.engines import get_engine, load_plugins
from longdoc.engines.base import Engine, EngineCapabilities, engine_figures, engine_ready_details
from longdoc.plan import Admission, FairTurns, Workspace
from longdoc.regions.detector import RegionDetector


@dataclass
class _Hosted:
    """One engine and what the documents on it share."""

    engine: Engine
    admission: Admission
    turns: FairTurns
    #: its load runs once, and every other caller waits for it
    loading: threading.Lock = field(default_factory=threading.Lock)


class EngineHost:
    """Engines by key with their admissions and turns, and the region
    detector, for one process. ``engine_factory`` builds an engine by name
    (default: the registry, from ``settings.inference``); an engine under
    another profile's key is always the registry's. Thread-safe; use as a
    context manager or call :meth:`close`."""

    def __init__(self, settings: Settings, engine_factory: Callable[[str], Engine] | None = None) -> None:
        self.settings = settings
        load_plugins(settings.inference.plugins)
        self._engine_factory = engine_factory or (lambda name: get_engine(name, settings.inference))
        self._hosted: dict[str, _Hosted] = {}
        self._regions: RegionDetector | None = None
        self._lock = threading.Lock()

    def key(self, engine: str, profile: str) -> str:
        """Under which key the host holds ``engine`` for a job of
        ``profile``: the engine's own name, or ``<name>@<profile>`` when
        that profile (:data:`~longdoc.config.PROFILES`) configures the
        engine otherwise than the settings' own (one more pool of workers,
        built on the first job that asks for it)."""
        inference = self.settings.inference
        if profile == inference.profile or _engine_part(inference.with_profile(profile)) == _engine_part(inference):
            return engine
        return f"{engine}@{profile}"

    def engine(self, key: str) -> Engine:
        """The engine under ``key``, loaded (workers started, warmed up).
        Callers that come while it loads (a restarted server's taken-back
        tasks while warm-up loads it) wait for that one load and share it.
        Raises UnknownEngine, EngineUnavailable."""
        hosted = self._built(key)
        with hosted.loading:
            hosted.engine.load()  # idempotent
        return hosted.engine

    def capabilities(self, key: str) -> EngineCapabilities:
        """What the engine under ``key`` declares (built if needed, not loaded)."""
        return self._built(key).engine.capabilities

    def version(self, key: str) -> str:
        """The version of the engine under ``key`` (built if needed, not loaded)."""
        return self._built(key).engine.version

    def health(self, key: str) -> bool:
        """Whether the engine under ``key`` can take work now (built if needed, not loaded)."""
        return self._built(key).engine.health()

    def admission(self, key: str) -> Admission:
        """The admission (workspace and counters) of the engine under ``key``."""
        return self._built(key).admission

    def turns(self, key: str) -> FairTurns:
        """The fair turns of the engine under ``key``."""
        return self._built(key).turns

    def engines(self) -> dict[str, Engine]:
        """Every engine built so far, by key."""
        with self._lock:
            return {key: hosted.engine for key, hosted in self._hosted.items()}

    def admissions(self) -> dict[str, Admission]:
        """The admission of every engine built so far, by key."""
        with self._lock:
            return {key: hosted.admission for key, hosted in self._hosted.items()}

    def figures(self) -> dict[str, Mapping[str, float]]:
        """Each built engine's live gauges (its ``figures()``), by key; an
        engine that exports none is left out."""
        out = {key: engine_figures(engine) for key, engine in self.engines().items()}
        return {key: figures for key, figures in out.items() if figures}

    def ready_details(self, key: str) -> dict[str, bool | int | str]:
        """What ``/readyz`` shows of the engine under ``key`` (its
        ``ready_details()``); nothing while it is not built."""
        engine = self.engines().get(key)
        return engine_ready_details(engine) if engine is not None else {}

    def region_detector(self) -> RegionDetector:
        """The layout and table models' worker pool (built on first use)."""
        with self._lock:
            if self._regions is None:
                inf = self.settings.inference
                self._regions = RegionDetector(inf.effective_workers(), inf.table_model_path, backend=inf.backend)
            return self._regions

    def close(self) -> None:
        """Close every engine and the region detector; an engine asked for
        afterwards is built again. Idempotent."""
        with self._lock:
            hosted, regions = list(self._hosted.values()), self._regions
            self._hosted, self._regions = {}, None
        for each in hosted:
            each.engine.close()
        if regions is not None:
            regions.close()

    def __enter__(self) -> EngineHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _built(self, key: str) -> _Hosted:
        """The engine under ``key``, built (cheap) but not loaded, with its
        admission and turns."""
        with self._lock:
            if key not in self._hosted:
                engine = self._build(key)
                workspace = Workspace(budget=engine.workspace_budget,
                                      watermark=self.settings.inference.kv_cache_watermark,
                                      unit=engine.capabilities.cost_unit)
                self._hosted[key] = _Hosted(engine, Admission(workspace),
                                            FairTurns(slots=engine.capabilities.groups_in_flight))
            return self._hosted[key]

    def _build(self, key: str) -> Engine:
        name, _, profile = key.partition("@")
        if not profile:
            return self._engine_factory(name)
        return get_engine(name, self.settings.inference.with_profile(profile))


def _engine_part(inference: InferenceSettings) -> dict[str, object]:
    """The settings an engine is built from: all of ``inference`` but what
    each run passes itself (profile, regions, dpi, the page groups)."""
    return inference.model_dump(exclude={"profile", "regions", "dpi", "ocr", "page_chunk_size", "chunk_overlap"})
