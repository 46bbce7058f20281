"""The CPU engine that reads pages a model engine could not produce.

Model engines (``openai``, ``native``) hand such pages to a page engine
named in their settings (``fallback_engine``, e.g. ``rapidocr``).
:class:`Fallback` is the engine side: the fallback engine is built on first
need, shared by every session, and reads one group at a time (a page engine
is not re-entrant). :class:`FallbackSession` is one document's use of it,
opened on first need and cancelled or closed with the document's session.
The registry builds it (it knows how to build an engine by name) and
hands it to the model engine, so this module imports no engine::

    fallback = Fallback("rapidocr", lambda name: get_engine(name, settings))   # in the registry
    reader = fallback.session()              # in each document's session
    pages = reader.read(group, [4, 7])       # None: no fallback engine, or no way to render
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from longdoc.engines.base import Engine, EngineSession, GroupPlan, PageGroup
from longdoc.model import Page


class Fallback:
    """The engine ``name`` (None: none; pages the model could not produce
    fail), built by ``build(name)`` on first need."""

    def __init__(self, name: str | None = None, build: Callable[[str], Engine] | None = None) -> None:
        self.name = name if build is not None else None
        self._build = build
        self._engine: Engine | None = None
        self._lock = threading.Lock()
        self.read_lock = threading.Lock()

    def engine(self) -> Engine | None:
        """The fallback engine (built once), or None when none is configured."""
        if self.name is None:
            return None
        with self._lock:
            if self._engine is None:
                assert self._build is not None
                self._engine = self._build(self.name)
            return self._engine

    def session(self) -> FallbackSession:
        return FallbackSession(self)

    def close(self) -> None:
        with self._lock:
            if self._engine is not None:
                self._engine.close()
                self._engine = None


class FallbackSession:
    def __init__(self, fallback: Fallback) -> None:
        self.fallback = fallback
        self._session: EngineSession | None = None
        self._lock = threading.Lock()

    def read(self, group: PageGroup, pages: Sequence[int]) -> list[Page] | None:
        """The fallback engine's pages for ``pages`` of ``group`` (rendered
        again), or None when there is no fallback engine or no way to render."""
        engine = self.fallback.engine()
        if engine is None or group.render is None:
            return None
        with self._lock:
            if self._session is None:
                self._session = engine.open_session()
            session = self._session
        plan = GroupPlan(index=group.plan.index, owned=tuple(pages), sizes=group.plan.sizes, dpi=group.plan.dpi)
        with self.fallback.read_lock:
            return list(session.recognize(PageGroup(plan, group.render(list(pages)))))

    def cancel(self) -> None:
        with self._lock:
            if self._session is not None:
                self._session.cancel()

    def close(self) -> None:
        with self._lock:
            if self._session is not None:
                self._session.close()
                self._session = None
