"""longdoc as an OCRmyPDF engine: ``ocrmypdf --plugin longdoc.integrations.ocrmypdf IN.pdf OUT.pdf``.

OCRmyPDF (17 and later) makes the PDF (PDF/A by default) and hands each page
image it rasterized to an engine's ``generate_ocr``, which returns its OCR
element tree. This plugin is such an engine: longdoc's engine
(``inference.engine``, ``rapidocr`` by default) reads the page and longdoc's
layout puts its lines in reading order, so OCRmyPDF gets::

    ocr_page ─► ocr_par (a block, in reading order) ─► ocr_line (box, confidence)
                                                     ─► ocrx_word (its share of the line)

Boxes are in the page image's pixels, top-left origin. RapidOCR gives lines,
not words: a line's words share its box in proportion to their characters, as
longdoc's own text layer places them. A page longdoc read turned (a scan lying
sideways or upside down) keeps its image as it is; its lines say so with
``textangle``. With ``--rotate-pages`` OCRmyPDF asks ``get_orientation`` first
and turns the page upright; longdoc answers with the turn its engine found.

Each OCRmyPDF worker (a thread by default, a process with
``--no-use-threads``) reads its page with an engine of its own: ``-j N`` reads
N pages at once. An engine is built once per process and worker, from
longdoc's settings (``--longdoc-config FILE``, else ``$LONGDOC_CONFIG``,
else the defaults) with ``inference.workers`` 1 (the page is read in the
worker itself), reused for every later page and document, and closed when
the process exits. Loading this plugin makes longdoc the ``auto`` engine;
``--ocr-engine tesseract`` still picks Tesseract.

Imported only by OCRmyPDF (it imports ``ocrmypdf``): importing longdoc never
imports this module.
"""

from __future__ import annotations

import logging
import os
import threading
from argparse import ArgumentParser
from collections.abc import Iterator, Set
from contextlib import contextmanager
from functools import reduce
from multiprocessing.util import Finalize
from pathlib import Path

import numpy as np
from ocrmypdf import hookimpl
from ocrmypdf.exceptions import BadArgsError, MissingDependencyError
from ocrmypdf.hocrtransform import BoundingBox, OcrClass, OcrElement
from ocrmypdf.pluginspec import OcrEngine, OrientationConfidence
from PIL import Image
from pydantic import BaseModel, Field

from longdoc import __version__
from longdoc.config import Settings, load_settings
from longdoc.engines import Engine, GroupPlan, PageGroup, PageImage, get_engine, load_plugins
from longdoc.errors import ConfigError, EngineUnavailable
from longdoc.export.pdf_layer import apply, unturn
from longdoc.model import BBox, Line, Page, PageStatus, TextSource
from longdoc.pipeline.layout_group import lay_out

log = logging.getLogger(__name__)

#: an engine's language codes (its capabilities) as OCRmyPDF's ``-l`` names them
LANGUAGES = {"en": "eng", "ch": "chi_sim"}
#: what ``get_orientation`` answers (OCRmyPDF's units, 0-15) when longdoc's
#: engine read the page: it turns a page only when the turned reading is
#: clearly more confident, so its answer clears ``--rotate-pages-threshold``
#: (14 by default); 0 when it read nothing
SURE = 15.0
#: the DPI of a page image that does not record one
DEFAULT_DPI = 300.0


class LongdocOptions(BaseModel):
    """The plugin's OCRmyPDF options (``options.longdoc``)."""

    config: str | None = Field(default=None, description="longdoc's settings file (YAML)")


# --- the engines of this process ------------------------------------------------------


class _Readers:
    """This process's engines, built from ``settings``: a worker reading a
    page takes an idle one (one is built when none is idle) and gives it
    back, so there are as many as pages were read at once. Closed when the
    process exits (multiprocessing's exit hook, which also runs in
    OCRmyPDF's worker processes); a copy a fork inherited is the parent's
    and left alone."""

    _building = threading.Lock()  # engines load one at a time: the first times the runtimes once per machine

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.pid = os.getpid()
        self._lock = threading.Lock()
        self._idle: list[Engine] = []
        self._built: list[Engine] = []
        Finalize(None, self.close, exitpriority=10)

    @contextmanager
    def engine(self) -> Iterator[Engine]:
        """A loaded engine for one page (raises :class:`EngineUnavailable`)."""
        with self._lock:
            engine = self._idle.pop() if self._idle else None
        if engine is None:
            engine = self._build()
        try:
            yield engine
        finally:
            with self._lock:
                self._idle.append(engine)

    def _build(self) -> Engine:
        with self._building:
            engine = build_engine(self.settings)
            try:
                engine.load()
            except BaseException:
                engine.close()
                raise
        with self._lock:
            self._built.append(engine)
        return engine

    def close(self) -> None:
        if os.getpid() != self.pid:
            return
        with self._lock:
            engines, self._built, self._idle = self._built, [], []
        for engine in engines:
            engine.close()


_readers: dict[str | None, _Readers] = {}
_readers_lock = threading.Lock()


def readers(options: object) -> _Readers:
    """This process's engines for the settings ``options`` name."""
    config = _config(options)
    with _readers_lock:
        found = _readers.get(config)
        if found is None or found.pid != os.getpid():
            found = _readers[config] = _Readers(settings_for(config))
        return found


def _config(options: object) -> str | None:
    ours = getattr(options, "longdoc", None)
    return getattr(ours, "config", None)


def settings_for(config: str | None) -> Settings:
    """longdoc's settings from ``config`` (else ``$LONGDOC_CONFIG``, else the
    defaults), each OCRmyPDF worker reading its page itself. Raises
    :class:`BadArgsError` with longdoc's sentence for a bad configuration."""
    try:
        return load_settings(config, overrides={"inference": {"workers": 1}})
    except ConfigError as exc:
        raise BadArgsError(f"longdoc: {exc}") from exc


def build_engine(settings: Settings) -> Engine:
    """The engine ``inference.engine`` names, built (not loaded) through
    longdoc's registry; it must give lines. Raises :class:`BadArgsError`."""
    try:
        load_plugins(settings.inference.plugins)
        engine = get_engine(settings.inference.engine, settings.inference)
    except ConfigError as exc:
        raise BadArgsError(f"longdoc: {exc}") from exc
    if engine.capabilities.output != "lines":
        engine.close()
        raise BadArgsError(f"longdoc: the engine {settings.inference.engine!r} gives a page's blocks, not its lines "
                           "with boxes, which OCRmyPDF needs; choose a page engine (rapidocr, tesseract) in "
                           "inference.engine.")
    return engine


def languages(settings: Settings) -> set[str]:
    """The ``-l`` codes the configured engine reads; empty for an engine
    that reads any (OCRmyPDF then checks none)."""
    engine = build_engine(settings)
    try:
        codes = engine.capabilities.languages
    finally:
        engine.close()
    return set() if "any" in codes else {LANGUAGES.get(code, code) for code in codes}


# --- one page --------------------------------------------------------------------------


def page_image(path: Path, number: int) -> PageImage:
    """The image file OCRmyPDF wrote as longdoc's page image (RGB; its
    DPI, else :data:`DEFAULT_DPI`)."""
    with Image.open(path) as im:
        dpi = float((im.info.get("dpi") or (DEFAULT_DPI,))[0]) or DEFAULT_DPI
        pixels = np.asarray(im.convert("RGB"))
    height, width = pixels.shape[:2]
    return PageImage(page=number, image=pixels, dpi=dpi, width_pt=width * 72 / dpi, height_pt=height * 72 / dpi)


def read(engine: Engine, image: PageImage) -> Page:
    """``image`` read by ``engine`` in a session of its own: the engine's
    page (failed, never raising, when the engine could not read it)."""
    plan = GroupPlan(index=0, owned=(image.page,), sizes={image.page: (image.width_pt, image.height_pt)},
                     dpi=round(image.dpi))
    session = engine.open_session()
    try:
        pages = list(session.recognize(PageGroup(plan, [image])))
    finally:
        session.close()
    if not pages:
        return Page(number=image.page, width=image.width_pt, height=image.height_pt, status=PageStatus.FAILED)
    return pages[0]


def read_file(path: Path, options: object, page_number: int) -> tuple[Page, PageImage]:
    """The page image at ``path`` read by one of this process's engines.
    Raises :class:`MissingDependencyError` when the engine cannot start."""
    image = page_image(path, page_number + 1)
    try:
        with readers(options).engine() as engine:
            return read(engine, image), image
    except EngineUnavailable as exc:
        raise MissingDependencyError(f"longdoc: {exc}") from exc


def ocr_tree(page: Page, image: PageImage, page_number: int) -> tuple[OcrElement, str]:
    """A read page as OCRmyPDF's element tree and its plain text: its blocks
    in reading order (paragraphs), their lines and words, boxes in the
    image's pixels. A page the engine failed on is an empty page (logged)."""
    height_px, width_px = image.image.shape[:2]
    root = OcrElement(ocr_class=OcrClass.PAGE, bbox=BoundingBox(left=0, top=0, right=width_px, bottom=height_px),
                      dpi=image.dpi, page_number=page_number)
    if page.status is PageStatus.FAILED:
        reason = page.error.message if page.error else "no result"
        log.warning("longdoc could not read page %d (%s); it gets no text", page_number + 1, reason)
        return root, ""
    to_image = _Placement(page, image)
    paragraphs, texts = [], []
    for block in blocks_of(page):
        lines = [line for line in block if line.text.strip()]
        if not lines:
            continue
        box = to_image.box(reduce(BBox.union, (line.bbox for line in lines)))
        paragraphs.append(OcrElement(ocr_class=OcrClass.PARAGRAPH, bbox=box,
                                     children=[to_image.line(line) for line in lines]))
        texts.append("\n".join(" ".join(line.text.split()) for line in lines))
    root.children = paragraphs
    return root, "\n\n".join(texts) + ("\n" if texts else "")


def blocks_of(page: Page) -> list[list[Line]]:
    """The page's lines by block, in reading order (longdoc's layout stage:
    spaces the engine dropped put back, columns, headers and footers); the
    engine's order in one block should the layout fail (logged)."""
    try:
        laid_out = lay_out(page.model_copy(update={"text_source": TextSource.OCR}), ())
    except Exception:  # a layout bug costs the page its reading order, not its text
        log.exception("longdoc's layout failed on page %d; its lines stay in the engine's order", page.number)
        return [list(page.lines)]
    return [block.lines for block in laid_out.blocks]


class _Placement:
    """Boxes of a read page (points, top-left origin, on the page turned
    upright by its ``rotation``) → pixels of the image as OCRmyPDF has it."""

    def __init__(self, page: Page, image: PageImage) -> None:
        self.rotation = page.rotation % 360
        self.unturn = unturn(self.rotation, page.width, page.height)
        self.scale = image.dpi / 72.0
        self.height_px, self.width_px = image.image.shape[:2]

    def box(self, box: BBox) -> BoundingBox:
        corners = [apply(self.unturn, x, y) for x in (box.x0, box.x1) for y in (box.y0, box.y1)]
        xs = [min(max(x * self.scale, 0.0), self.width_px) for x, _ in corners]
        ys = [min(max(y * self.scale, 0.0), self.height_px) for _, y in corners]
        return BoundingBox(left=min(xs), top=min(ys), right=max(xs), bottom=max(ys))

    def line(self, line: Line) -> OcrElement:
        """A line and its words; ``textangle`` (counter-clockwise) is the
        page's turn: a page turned 90° clockwise to be read has its lines
        running up the image."""
        words = [OcrElement(ocr_class=OcrClass.WORD, bbox=self.box(box), text=text, confidence=line.confidence)
                 for text, box in words_of(line)]
        return OcrElement(ocr_class=OcrClass.LINE, bbox=self.box(line.bbox), confidence=line.confidence,
                          textangle=float(self.rotation) if self.rotation else None, children=words)


def words_of(line: Line) -> list[tuple[str, BBox]]:
    """The line's words, each with its share of the line's box: characters
    (spaces included) evenly spaced along the line, as longdoc's text layer
    writes them (:mod:`longdoc.export.pdf_layer`)."""
    text = " ".join(line.text.split())
    box, words, start = line.bbox, [], 0
    for word in text.split(" ") if text else []:
        end = start + len(word)
        words.append((word, BBox(x0=box.x0 + box.width * start / len(text), y0=box.y0,
                                 x1=box.x0 + box.width * end / len(text), y1=box.y1)))
        start = end + 1
    return words


# --- the engine OCRmyPDF calls -----------------------------------------------------------


class LongdocOcrEngine(OcrEngine):
    """longdoc behind OCRmyPDF's engine interface (see the module docstring)."""

    @staticmethod
    def version() -> str:
        return __version__

    @staticmethod
    def creator_tag(options: object) -> str:
        return f"longdoc {__version__} ({settings_for(_config(options)).inference.engine})"

    def __str__(self) -> str:
        return f"longdoc {__version__}"

    @staticmethod
    def languages(options: object) -> Set[str]:
        return languages(settings_for(_config(options)))

    @staticmethod
    def get_orientation(input_file: Path, options: object) -> OrientationConfidence:
        """The turn longdoc's engine read the page at (clockwise degrees
        that make it upright), as OCRmyPDF counts it (the other way round)."""
        page, _ = read_file(input_file, options, 0)
        if page.status is PageStatus.FAILED or not page.lines:
            return OrientationConfidence(angle=0, confidence=0.0)
        return OrientationConfidence(angle=-page.rotation % 360, confidence=SURE)

    @staticmethod
    def supports_generate_ocr() -> bool:
        return True

    @staticmethod
    def generate_ocr(input_file: Path, options: object, page_number: int = 0) -> tuple[OcrElement, str]:
        page, image = read_file(input_file, options, page_number)
        return ocr_tree(page, image, page_number)

    @staticmethod
    def generate_hocr(input_file: Path, output_hocr: Path, output_text: Path, options: object) -> None:
        raise NotImplementedError("longdoc gives OCRmyPDF its element tree (generate_ocr), not hOCR.")

    @staticmethod
    def generate_pdf(input_file: Path, output_pdf: Path, output_text: Path, options: object) -> None:
        raise NotImplementedError("longdoc gives OCRmyPDF its element tree, not a PDF: use the default "
                                  "--pdf-renderer, not sandwich.")


ENGINE = LongdocOcrEngine()


def _selected(options: object) -> bool:
    return getattr(options, "ocr_engine", "auto") == "auto"


@hookimpl
def register_options() -> dict[str, type[BaseModel]]:
    return {"longdoc": LongdocOptions}


@hookimpl
def add_options(parser: ArgumentParser) -> None:
    group = parser.add_argument_group("longdoc", "longdoc's OCR engine (longdoc.integrations.ocrmypdf)")
    group.add_argument("--longdoc-config", metavar="FILE", dest="longdoc_config",
                       help="longdoc's settings file (YAML; its inference section chooses and sets up the engine); "
                            "default: $LONGDOC_CONFIG, else longdoc's defaults")


@hookimpl
def check_options(options: object) -> None:
    """Refuse, before any page is read, what longdoc cannot do: a bad
    settings file, an engine without lines, a language its engine does not
    read, the sandwich renderer. ``--deskew`` is let through with a warning."""
    if not _selected(options):
        return
    settings = settings_for(_config(options))
    known = languages(settings)
    asked = list(getattr(options, "languages", None) or [])
    missing = [language for language in asked if known and language not in known]
    if missing:
        raise BadArgsError(f"longdoc's {settings.inference.engine} engine does not read {'+'.join(missing)}; "
                           f"it reads {', '.join(sorted(known))} (-l {'+'.join(sorted(known))}).")
    if getattr(options, "pdf_renderer", "auto") == "sandwich":
        raise BadArgsError("longdoc gives OCRmyPDF its text and boxes, not a PDF: leave --pdf-renderer at auto "
                           "(or fpdf2).")
    if getattr(options, "deskew", False):
        log.warning("longdoc reads skewed lines as they are: --deskew does not straighten pages with it")


@hookimpl
def get_ocr_engine(options: object) -> OcrEngine | None:
    """longdoc's engine, unless ``--ocr-engine`` names another."""
    return ENGINE if options is None or _selected(options) else None
