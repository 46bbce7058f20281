"""The CPU engine that reads pages a model engine could not produce.

Model engines (``openai``, ``native``) hand such pages to a page engine
named in their settings (``fallback_engine``, e.g. ``rapidocr``).
:class:`Fallback` is the engine side: the fallback engine is built on first
need, shared by every session, and reads one group at a time (a page engine
is not re-entrant). :class:`FallbackSession` is one document's use of it,
opened on first need and cancelled or closed with the document's session::

    fallback = Fallback(settings, settings.openai.fallback_engine, owner="openai")
    reader = fallback.session()              # in each document's session
    pages = reader.read(group, [4, 7])       # None: no fallback engine, or no way to render
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from longdoc.engines.base import Engine, EngineSession, GroupPlan, PageGroup
from longdoc.model import Page

if TYPE_CHECKING:
    from longdoc.config import InferenceSettings


class Fallback:
    def __init__(self, settings: InferenceSettings, name: str | None, owner: str) -> None:
        self.settings = settings
        #: None: pages the model could not produce fail
        self.name = None if name == owner else name
        self._engine: Engine | None = None
        self._lock = threading.Lock()
        self.read_lock = threading.Lock()

    def engine(self) -> Engine | None:
        """The fallback engine (built once), or None when none is configured."""
        if self.name is None:
            return None
        with self._lock:
            if self._engine is None:
                from longdoc.engines.registry import get_engine

                self._engine = get_engine(self.name, self.settings)
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
