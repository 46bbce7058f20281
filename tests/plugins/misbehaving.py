"""Engines that misbehave, one way each (``inference.plugins:
[tests/plugins/misbehaving.py]``; page numbers through the environment so
a served process can be told too):

- ``noop``: reads nothing (every page comes back empty);
- ``crash``: raises on page ``$LONGDOC_TEST_CRASH_PAGE`` (default 2), reads the others;
- ``garbage``: reads every page as control characters and invalid surrogates;
- ``hang``: never returns page ``$LONGDOC_TEST_HANG_PAGE`` (default 2) until cancelled;
- ``oom``: asks for more memory than the machine has on page ``$LONGDOC_TEST_OOM_PAGE``;
- ``doubtful``: reads page N at confidence 0.5 + N / 10 (page 1: 0.6, page 4: 0.9, capped at 1.0), as an
  engine unsure of a poor scan.
"""

from __future__ import annotations

import os
import threading

from longdoc.engines import FakeEngine, register_engine
from longdoc.engines.base import PageImage
from longdoc.model import BBox, Line


def _page(name: str, default: int = 2) -> int:
    return int(os.environ.get(f"LONGDOC_TEST_{name}_PAGE", default))


def _line(image: PageImage, text: str) -> list[Line]:
    box = BBox(x0=72.0, y0=72.0, x1=max(73.0, image.width_pt - 72.0), y1=86.0)
    return [Line(text=text, bbox=box, confidence=1.0, page=image.page)]


def _crash(image: PageImage) -> list[Line]:
    if image.page == _page("CRASH"):
        raise RuntimeError(f"the crash plugin crashed on page {image.page}")
    return _line(image, f"Read page {image.page}")


_released = threading.Event()  # never set: a hung page waits for cancel


def _hang(image: PageImage) -> list[Line]:
    if image.page == _page("HANG"):
        _released.wait()
    return _line(image, f"Read page {image.page}")


def _oom(image: PageImage) -> list[Line]:
    if image.page == _page("OOM"):
        hog = bytearray(1 << 44)  # 16 TiB: MemoryError, never a page
        del hog
    return _line(image, f"Read page {image.page}")


def _doubtful(image: PageImage) -> list[Line]:
    box = BBox(x0=72.0, y0=72.0, x1=max(73.0, image.width_pt - 72.0), y1=86.0)
    return [Line(text=f"Read page {image.page}", bbox=box, confidence=min(1.0, 0.5 + image.page / 10),
                 page=image.page)]


register_engine("noop", lambda settings: FakeEngine(handler=lambda image: [], name="noop", version="noop-1"))
register_engine("crash", lambda settings: FakeEngine(handler=_crash, name="crash", version="crash-1"))
register_engine("garbage", lambda settings: FakeEngine(
    handler=lambda image: _line(image, "\x00\x07\ud800\x1b[2J" * 40), name="garbage", version="garbage-1"))
register_engine("hang", lambda settings: FakeEngine(handler=_hang, name="hang", version="hang-1"))
register_engine("oom", lambda settings: FakeEngine(handler=_oom, name="oom", version="oom-1"))
register_engine("doubtful", lambda settings: FakeEngine(handler=_doubtful, name="doubtful", version="doubtful-1"))
