"""A page group prepared by a cpu task, so the engine task never opens
the document: the render stage of a long job's tasks.

A ``render:N`` task (cpu queue) opens the document in its sandbox and
writes what group N's engine task will ask of it, under the job's
``work/`` prefix in the object store::

    work/group-000003/manifest.json        per page: size, label, text layer (or
                                           the error reading it), renders and their DPI
    work/group-000003/text/000017.json     the page's text-layer lines
    work/group-000003/img/000017-200.png   the page rendered at 200 dpi (lossless)

What is rendered is what the group's run will read: every page that needs
OCR (by the same text-layer judgement the recognize stage makes) at the
job's DPI, the context pages too for engines that are shown them, and for
the regions stage the same pages plus the text-layer pages worth analysing
at :data:`~longdoc.regions.detector.REGION_DPI`.

The ``group:N`` task (engine queue) reads it back through
:class:`PreparedSource`, a :class:`~longdoc.ingest.source.DocumentSource`
over the store: the pipeline's stages run unchanged on it, so a page comes
out as it would from the document itself. A render it was not given is
resampled from the largest one it has; a page it knows nothing of fails
with ``page_render_failed``. Errors met while preparing (a page that
cannot be rendered, a text layer over the sandbox's limits) are kept and
raised again, with their class, when the page is asked for.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from longdoc import errors
from longdoc.errors import LongdocError, PageRenderFailed
from longdoc.ingest.source import DocumentSource, RenderedPage, TextLayerView
from longdoc.model import Line
from longdoc.storage.base import ObjectStore

#: which renders (DPIs) one owned page needs, judged by the pipeline from the
#: page's size and text layer (:func:`longdoc.pipeline.render.renders_wanted`)
Wanted = Callable[[TextLayerView, int], set[int]]


@dataclass
class _PageFacts:
    size: list[float] | None = None
    text: str = "none"                      # "lines" | "none" (no text layer) | "error"
    errors: dict[str, dict[str, str]] = field(default_factory=dict)   # "size" | "text" | "render:<dpi>"
    renders: dict[str, dict[str, Any]] = field(default_factory=dict)  # str(dpi asked) -> {dpi, downscaled}
    label: str | None = None                # the document's page label (PDF /PageLabels)


def prepare_group(source: DocumentSource, owned: Sequence[int], context: Sequence[int], wanted: Wanted,
                  ocr: str, context_dpi: int, store: ObjectStore, prefix: str) -> int:
    """Write group ``owned`` (+ ``context``, rendered at ``context_dpi``) of
    ``source`` under ``prefix``; returns how many images it rendered. Each
    page's size and text layer are read from the sandbox once; which
    renders an owned page needs is the pipeline's decision (``wanted``)."""
    facts: dict[int, _PageFacts] = {}
    lines: dict[int, list[Line] | None] = {}
    renders: dict[int, set[int]] = {}
    for number in owned:
        facts[number] = _read(source, number, ocr, lines)
        if facts[number].size is not None:
            dpis = wanted(_Read(facts, lines), number)
            if dpis:
                renders.setdefault(number, set()).update(dpis)
    for number in context:
        facts.setdefault(number, _read(source, number, "force", lines))
        renders.setdefault(number, set()).add(context_dpi)
    for number, found in lines.items():
        if found is not None:
            store.put_bytes(f"{prefix}/text/{number:06d}.json",
                            json.dumps([line.model_dump(mode="json") for line in found]).encode())
    count = 0
    for number, dpis in sorted(renders.items()):
        for dpi in sorted(dpis):
            count += _render(source, number, dpi, facts[number], store, prefix)
    manifest = {"source": {"name": source.name, "media_type": source.media_type, "sha256": source.sha256,
                           "page_count": source.page_count},
                "pages": {str(n): f.__dict__ for n, f in facts.items()}}
    store.put_bytes(f"{prefix}/manifest.json", json.dumps(manifest).encode())   # written last: the group is ready
    return count


def _read(source: DocumentSource, number: int, ocr: str, lines: dict[int, list[Line] | None]) -> _PageFacts:
    """A page's size and (unless OCR is forced) its text layer, errors kept."""
    f = _PageFacts(label=source.page_label(number))
    try:
        f.size = list(source.page_size(number))
    except LongdocError as exc:
        f.errors["size"] = _error(exc)
        return f
    if ocr == "force":
        return f
    try:
        found = source.text_layer(number)
    except LongdocError as exc:
        f.text, f.errors["text"] = "error", _error(exc)
        return f
    if found is not None:
        f.text, lines[number] = "lines", found
    return f


class _Read:
    """What was read, seen as a source (for the recognize stage's own judgement)."""

    def __init__(self, facts: dict[int, _PageFacts], lines: dict[int, list[Line] | None]) -> None:
        self.facts, self.lines = facts, lines

    def page_size(self, page: int) -> tuple[float, float]:
        f = self.facts[page]
        if "size" in f.errors:
            _raise(f.errors["size"])
        assert f.size is not None
        return f.size[0], f.size[1]

    def text_layer(self, page: int) -> list[Line] | None:
        f = self.facts[page]
        if f.text == "error":
            _raise(f.errors["text"])
        return self.lines.get(page)


def _render(source: DocumentSource, number: int, dpi: int, f: _PageFacts, store: ObjectStore, prefix: str) -> int:
    try:
        page = source.render(number, dpi)
    except LongdocError as exc:
        f.errors[f"render:{dpi}"] = _error(exc)
        return 0
    buf = io.BytesIO()
    page.image.save(buf, format="PNG", compress_level=1)
    page.image.close()
    store.put_bytes(f"{prefix}/img/{number:06d}-{dpi}.png", buf.getvalue())
    f.renders[str(dpi)] = {"dpi": page.dpi, "downscaled": page.downscaled}
    return 1


def _error(exc: LongdocError) -> dict[str, str]:
    return {"class": type(exc).__name__, "message": exc.message}


def _raise(error: dict[str, str]) -> None:
    cls = getattr(errors, error.get("class", ""), None)
    if not (isinstance(cls, type) and issubclass(cls, LongdocError)):
        cls = PageRenderFailed
    raise cls(error.get("message", "The page could not be read."))


class PreparedSource:
    """The :class:`DocumentSource` a ``render:N`` task prepared (see the
    module docstring). Raises ObjectNotFound when the group was never
    prepared (or was cleaned up)."""

    def __init__(self, store: ObjectStore, prefix: str) -> None:
        self.store, self.prefix = store, prefix
        manifest = json.loads(store.get_bytes(f"{prefix}/manifest.json"))
        src = manifest["source"]
        self.name, self.media_type, self.sha256 = src["name"], src["media_type"], src["sha256"]
        self.page_count = int(src["page_count"])
        self._pages = {int(n): _PageFacts(**f) for n, f in manifest["pages"].items()}

    def _facts(self, page: int) -> _PageFacts:
        if not 1 <= page <= self.page_count:
            raise ValueError(f"page {page} is outside 1..{self.page_count}")
        facts = self._pages.get(page)
        if facts is None:
            raise PageRenderFailed(f"Page {page} was not prepared for this group.")
        return facts

    def page_size(self, page: int) -> tuple[float, float]:
        facts = self._facts(page)
        if "size" in facts.errors:
            _raise(facts.errors["size"])
        assert facts.size is not None
        return facts.size[0], facts.size[1]

    def text_layer(self, page: int) -> list[Line] | None:
        facts = self._facts(page)
        if facts.text == "error":
            _raise(facts.errors["text"])
        if facts.text == "none":
            return None
        raw = json.loads(self.store.get_bytes(f"{self.prefix}/text/{page:06d}.json"))
        return [Line.model_validate(line) for line in raw]

    def page_label(self, page: int) -> str | None:
        return self._facts(page).label

    def render(self, page: int, dpi: float) -> RenderedPage:
        facts = self._facts(page)
        key = str(int(dpi))
        if f"render:{key}" in facts.errors:
            _raise(facts.errors[f"render:{key}"])
        if key in facts.renders:
            return self._load(page, key)
        if not facts.renders:
            raise PageRenderFailed(f"Page {page} was not rendered for this group.")
        best = max(facts.renders, key=lambda k: facts.renders[k]["dpi"])
        rendered = self._load(page, best)
        scale = dpi / rendered.dpi
        if scale >= 1:
            return rendered
        size = (max(1, round(rendered.image.width * scale)), max(1, round(rendered.image.height * scale)))
        return RenderedPage(page, rendered.image.resize(size, Image.Resampling.LANCZOS), dpi, rendered.downscaled)

    def _load(self, page: int, key: str) -> RenderedPage:
        meta = self._pages[page].renders[key]
        data = self.store.get_bytes(f"{self.prefix}/img/{page:06d}-{key}.png")
        image = Image.open(io.BytesIO(data))
        image.load()
        return RenderedPage(page, image.convert("RGB") if image.mode != "RGB" else image, float(meta["dpi"]),
                            bool(meta["downscaled"]))

    def close(self) -> None:
        """Nothing is held open."""

    def __enter__(self) -> PreparedSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
