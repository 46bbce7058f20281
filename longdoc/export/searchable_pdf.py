"""The searchable PDF: the original pages, unchanged, with an invisible
text layer on every page that was read by OCR.

Two halves, so that no untrusted document is ever opened outside a sandbox:

    parent (the pipeline)                       child (forked, address space capped, timed)
    ─────────────────────                       ───────────────────────────────────────────
    SearchablePdfWriter.write_page(page) ──►    <stem>.pdf.layers.jsonl: one line per page
    SearchablePdfWriter.close()          ──►    build(): open the original with pikepdf,
                                                 add each page's text layer, save → <stem>.pdf

- A PDF original is changed in place and saved: every page, its images
  (never re-encoded), annotations, outline and metadata stay as they were.
  A page whose text came from its own text layer gets nothing (it is
  searchable already); an OCR page gets its lines (:mod:`pdf_layer`); a
  failed page keeps its image, and the document info lists it
  (``/LongdocFailedPages``). Pages outside the job's selection stay too.
- An image original (PNG, JPEG, TIFF, …) becomes one PDF page per frame at
  the frame's size in points: a JPEG without an EXIF turn goes in as its
  own bytes; any other image, as its pixels losslessly compressed (Flate).
- Only the per-page text plan is streamed by the parent (one page at a
  time); the child reads the plan one line at a time and qpdf copies page
  streams from the original as it writes, so memory does not follow the
  page count for PDFs. (An image original's pages are held until saved;
  image files have few pages.)
"""

from __future__ import annotations

import json
import os
import resource
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longdoc.config import LimitSettings
from longdoc.errors import LongdocError, OutputError, ResourceLimit
from longdoc.export import pdf_layer
from longdoc.model import Page, PageStatus, TextSource
from longdoc.runtime import capped

_MB = 1024 * 1024
FONT_RESOURCE = "LdOcr"
#: time the child may take: the sandbox's per-step limit, plus this per page
SECONDS_PER_PAGE = 0.5


@dataclass
class BuildReport:
    pages: int
    layered_pages: int
    peak_rss_bytes: int


class SearchablePdfWriter:
    """Streams the text plan while pages come (``write_page``), then builds
    ``path`` from ``original`` in a child process (``close``)."""

    def __init__(self, path: Path, original: Path | None, limits: LimitSettings) -> None:
        if original is None:
            raise OutputError("The pdf export needs the original document; this run has none.",
                              hint="Ask for the pdf format where the original is at hand (the CLI, a job).")
        self.path, self.original, self.limits = path, original, limits
        self.plan_path = path.with_name(path.name + ".layers.jsonl")
        self._plan = open(self.plan_path, "w", encoding="utf-8")  # noqa: SIM115  (closed by close/abort)
        self._carried: dict[int, list[list[Any]]] = {}
        self._failed: list[int] = []
        self._pages = 0
        self.report: BuildReport | None = None

    def write_page(self, page: Page) -> None:
        self._pages += 1
        if page.status is PageStatus.FAILED:
            self._failed.append(page.number)
        entry = {"page": page.number, "rotation": page.rotation, "ocr": page.text_source is TextSource.OCR,
                 "lines": self._lines(page)}
        self._plan.write(json.dumps(entry, ensure_ascii=False) + "\n")

    def _lines(self, page: Page) -> list[list[Any]]:
        """``[text, x0, y0, x1, y1]`` of every line on the page in reading
        order; lines a block carried over from the page before come first."""
        rows = self._carried.pop(page.number, [])
        rows += [[line.text, *_box(line.bbox)] for line in page.lines]
        for block in sorted(page.blocks, key=lambda b: b.order):
            if block.lines:
                for line in block.lines:
                    row = [line.text, *_box(line.bbox)]
                    (rows if line.page == page.number else self._carried.setdefault(line.page, [])).append(row)
            elif block.cells:
                rows += [[cell.text, *_box(cell.bbox)] for cell in block.cells if cell.bbox and cell.text]
            elif block.text:
                rows.append([block.text, *_box(block.bbox)])
        return rows

    def close(self) -> Path:
        self._plan.close()
        partial = self.path.with_name(self.path.name + ".partial")
        try:
            self.report = build(self.original, self.plan_path, partial, self.limits, pages=self._pages,
                                failed=self._failed)
            os.replace(partial, self.path)
        finally:
            partial.unlink(missing_ok=True)
            self.plan_path.unlink(missing_ok=True)
        return self.path

    def abort(self) -> None:
        self._plan.close()
        self.plan_path.unlink(missing_ok=True)


def _box(bbox: Any) -> tuple[float, float, float, float]:
    return (round(bbox.x0, 2), round(bbox.y0, 2), round(bbox.x1, 2), round(bbox.y1, 2))


# -- the child ------------------------------------------------------------------


def build(original: Path, plan: Path, out: Path, limits: LimitSettings, *, pages: int,
          failed: Sequence[int] = ()) -> BuildReport:
    """Write the searchable PDF of ``original`` with the text ``plan`` (of
    ``pages`` pages) to ``out`` in a child process with the sandbox's memory
    cap (:class:`~longdoc.runtime.capped.CappedChild`). Raises
    ResourceLimit when it passes the cap or its time, OutputError when the
    file cannot be written, the original's input errors."""
    deadline_s = limits.worker_timeout_seconds + SECONDS_PER_PAGE * pages
    with capped.CappedChild(_Builder, (limits.model_dump(),), memory_bytes=limits.worker_memory_mb * _MB,
                            replied=(LongdocError,), name="longdoc-pdf") as child:
        return child.call((str(original), str(plan), str(out), list(failed)), deadline_s=deadline_s,
                          failed=_overrun)


def _overrun(overrun: capped.Overrun) -> ResourceLimit:
    if overrun.cause == "deadline":
        return ResourceLimit(f"Writing the searchable PDF took longer than {overrun.deadline_s:.0f} s.",
                             hint="Raise limits.worker_timeout_seconds.", seconds=round(overrun.deadline_s))
    return ResourceLimit("Writing the searchable PDF needed more memory than the sandbox allows "
                         "(limits.worker_memory_mb).", hint="Raise limits.worker_memory_mb.")


class _Builder:
    """The child's side: ``(original, plan, out, failed)`` → the
    :class:`BuildReport` of the file written; what goes wrong as a
    LongdocError (a MemoryError is left to the capped child)."""

    def __init__(self, limits: dict[str, Any]) -> None:
        self.limits = LimitSettings(**limits)

    def __call__(self, request: tuple[str, str, str, list[int]]) -> BuildReport:
        original, plan, out, failed = request
        try:
            return _write(Path(original), Path(plan), Path(out), self.limits, failed)
        except (LongdocError, MemoryError):
            raise
        except OSError as exc:
            raise OutputError(f"Cannot write the searchable PDF: {exc.strerror or exc}.") from None
        except Exception as exc:  # noqa: BLE001 - pikepdf/qpdf errors on a damaged original
            raise OutputError(f"The searchable PDF could not be written ({type(exc).__name__}: "
                              f"{str(exc)[:300]}).",
                              hint="The other formats are not affected; report the document if "
                                   "it opens in a viewer.") from None


def _write(original: Path, plan: Path, out: Path, limits: LimitSettings, failed: list[int]) -> BuildReport:
    import pikepdf  # imported in the child only

    from longdoc.ingest.open import open_document

    with open_document(original, limits) as source:
        media_type = source.media_type
        if media_type == "application/pdf":
            pdf = pikepdf.open(original)
        else:
            pdf = pikepdf.new()
            for n in range(1, source.page_count + 1):
                _image_page(pdf, source, original, n)
    with pdf:
        font = _font(pdf)
        layered = 0
        for entry in _plan(plan):
            page = pdf.pages[entry["page"] - 1]
            if entry["ocr"] and entry["lines"]:
                _add_layer(pdf, page, entry, font)
                layered += 1
        if failed:
            pdf.docinfo["/LongdocFailedPages"] = ",".join(str(n) for n in failed)
        pdf.save(out, compress_streams=True, object_stream_mode=pikepdf.ObjectStreamMode.preserve)
        pages = len(pdf.pages)
    return BuildReport(pages=pages, layered_pages=layered,
                       peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


def _plan(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)


def _add_layer(pdf: Any, page: Any, entry: dict[str, Any], font: Any) -> None:
    import pikepdf

    box = [float(v) for v in page.cropbox]
    geometry = pdf_layer.PageGeometry(crop=(box[0], box[1], box[2], box[3]), rotate=int(page.rotation or 0))
    to_user = geometry.from_result(entry["rotation"])
    name = str(page.add_resource(font, pikepdf.Name.Font, pikepdf.Name("/" + FONT_RESOURCE), replace_existing=True))
    ops = b"".join(pdf_layer.line_operators(text, (x0, y0, x1, y1), to_user, name.lstrip("/"))
                   for text, x0, y0, x1, y1 in entry["lines"])
    page.contents_add(pikepdf.Stream(pdf, b"q\n"), prepend=True)
    page.contents_add(pikepdf.Stream(pdf, b"\nQ\nq\n" + ops + b"Q\n"))


def _font(pdf: Any) -> Any:
    """The glyph-less Type0 font (one object per document, shared by every page)."""
    import pikepdf

    data = pdf_layer.FONT_FILE.read_bytes()
    font_file = pikepdf.Stream(pdf, data)
    font_file.Length1 = len(data)
    descriptor = pikepdf.Dictionary(
        Type=pikepdf.Name.FontDescriptor, FontName=pikepdf.Name("/" + pdf_layer.FONT_NAME), Flags=4,
        FontBBox=[0, 0, 500, 1000], ItalicAngle=0, Ascent=1000, Descent=0, CapHeight=1000, StemV=80,
        FontFile2=font_file)
    cid_to_gid = pikepdf.Stream(pdf, zlib.compress(b"\x00\x01" * 65536, 9))
    cid_to_gid.Filter = pikepdf.Name.FlateDecode
    cid_font = pikepdf.Dictionary(
        Type=pikepdf.Name.Font, Subtype=pikepdf.Name.CIDFontType2, BaseFont=pikepdf.Name("/" + pdf_layer.FONT_NAME),
        CIDSystemInfo=pikepdf.Dictionary(Registry=pikepdf.String("Adobe"), Ordering=pikepdf.String("Identity"),
                                         Supplement=0),
        FontDescriptor=pdf.make_indirect(descriptor), DW=int(pdf_layer.GLYPH_WIDTH * 1000),
        CIDToGIDMap=cid_to_gid)
    to_unicode = pikepdf.Stream(pdf, pdf_layer.to_unicode_cmap())
    font = pikepdf.Dictionary(
        Type=pikepdf.Name.Font, Subtype=pikepdf.Name.Type0, BaseFont=pikepdf.Name("/" + pdf_layer.FONT_NAME),
        Encoding=pikepdf.Name("/Identity-H"), DescendantFonts=[pdf.make_indirect(cid_font)], ToUnicode=to_unicode)
    return pdf.make_indirect(font)


def _image_page(pdf: Any, source: Any, original: Path, number: int) -> None:
    """Page ``number`` of an image original: the frame at its size in points."""
    import pikepdf

    width_pt, height_pt = source.page_size(number)
    raw = _jpeg_as_is(original, source) if source.page_count == 1 else None
    if raw is not None:
        data, (w, h), colorspace = raw
        image = pikepdf.Stream(pdf, data)
        image.Filter = pikepdf.Name.DCTDecode
    else:
        rendered = source.render(number, 72)          # the frame's own pixels, upright, as RGB
        w, h = rendered.image.size
        colorspace = "/DeviceRGB"
        image = pikepdf.Stream(pdf, zlib.compress(rendered.image.tobytes(), 6))
        image.Filter = pikepdf.Name.FlateDecode
        rendered.image.close()
    image.Type, image.Subtype = pikepdf.Name.XObject, pikepdf.Name.Image
    image.Width, image.Height, image.BitsPerComponent = w, h, 8
    image.ColorSpace = pikepdf.Name(colorspace)
    page = pdf.add_blank_page(page_size=(width_pt, height_pt))
    name = str(page.add_resource(pdf.make_indirect(image), pikepdf.Name.XObject, pikepdf.Name("/Im0")))
    page.contents_add(pikepdf.Stream(pdf, f"q {width_pt:.4f} 0 0 {height_pt:.4f} 0 0 cm {name} Do Q\n".encode()))


def _jpeg_as_is(original: Path, source: Any) -> tuple[bytes, tuple[int, int], str] | None:
    """The JPEG file's own bytes when they display as the page does (no
    EXIF turn, a colour space PDF takes as is), else None."""
    if source.media_type != "image/jpeg":
        return None
    from PIL import Image

    with Image.open(original, formats=["JPEG"]) as image:
        orientation = image.getexif().get(0x0112, 1)
        spaces = {"L": "/DeviceGray", "RGB": "/DeviceRGB"}
        if orientation not in (0, 1) or image.mode not in spaces:
            return None
        size, mode = image.size, image.mode
    return original.read_bytes(), size, spaces[mode]
