"""Engines that export figures or do not (``inference.plugins:
[tests/plugins/reporting.py]``):

- ``gauged``: the fake engine with ``figures()`` (pages read, sessions
  open) and ``ready_details()`` (a model name, a float);
- ``plain``: an engine written against the protocol before ``figures()``
  and ``ready_details()`` existed: the required members only, no base
  class; it reads each page as ``Plain page N``.
"""

from __future__ import annotations

from dataclasses import dataclass

from longdoc.engines import FakeEngine, register_engine
from longdoc.engines.base import EngineCapabilities, GroupPlan, PageImage
from longdoc.model import BBox, Line


def _line(image: PageImage, text: str) -> list[Line]:
    box = BBox(x0=72.0, y0=72.0, x1=max(73.0, image.width_pt - 72.0), y1=86.0)
    return [Line(text=text, bbox=box, confidence=1.0, page=image.page)]


@dataclass
class GaugedEngine(FakeEngine):
    """The fake engine, exporting what it did as figures."""

    def figures(self) -> dict[str, float]:
        with self._lock:
            return {"pages_read": float(len(self.pages_seen)),
                    "sessions_open": float(self.sessions_opened - self.sessions_closed)}

    def ready_details(self) -> dict[str, object]:
        return {"gauged_model": "gauge-7b", "gauged_load_seconds": 0.25}


class PlainEngine:
    """The engine protocol's required members and nothing else."""

    name = "plain"
    version = "plain-1"

    def __init__(self) -> None:
        self._inner = FakeEngine(handler=lambda image: _line(image, f"Plain page {image.page}"), name=self.name,
                                 version=self.version)
        self.capabilities: EngineCapabilities = self._inner.capabilities
        self.workspace_budget = self._inner.workspace_budget

    def load(self) -> None:
        self._inner.load()

    def open_session(self):
        return self._inner.open_session()

    def group_cost(self, plan: GroupPlan) -> int:
        return self._inner.group_cost(plan)

    def health(self) -> bool:
        return True

    def close(self) -> None:
        self._inner.close()


register_engine("gauged", lambda settings: GaugedEngine(
    handler=lambda image: _line(image, f"Gauged page {image.page}"), name="gauged", version="gauged-1"))
register_engine("plain", lambda settings: PlainEngine())
