"""Image files (PNG, JPEG, TIFF, BMP, WebP) through Pillow.

Pages: every frame of a TIFF is a page. Other formats have one page: for an
animated WebP or PNG, or a multi-picture JPEG (MPO), only the first frame,
which is the still image viewers show, is read.

Size: a page measures ``px * 72 / dpi`` points, with the DPI the file
declares, or 72 when it declares none or an absurd one (outside
:data:`MIN_DPI`..:data:`MAX_DPI`). The EXIF orientation is applied, so sizes
and renders are the image as viewers show it.

Rendering: an image page is rendered at its own pixels; the ``dpi`` asked
for is not used to resample (that would invent or discard detail) and the
file's DPI is reported in :class:`RenderedPage`. Only two cases resample: a
file with different horizontal and vertical DPI (faxes) is stretched to
square pixels at the higher of the two, and a result above ``max_pixels`` is
shrunk to fit.

Safety: every frame's width x height is read from its header and checked
against ``max_pixels`` **before** anything is decoded (:class:`ImageTooLarge`).
Pillow's ``DecompressionBombError`` maps to ImageTooLarge too; its
``DecompressionBombWarning`` is silenced while opening, because the explicit
check against ``max_pixels`` (the operator's limit) supersedes it. Opening decodes the
first frame once and drops it, so a truncated or damaged file fails up front
with :class:`CorruptFile`; a later TIFF frame that fails to decode fails only
its page (:class:`PageRenderFailed`). ``ImageFile.LOAD_TRUNCATED_IMAGES`` is
left off: truncated data is an error, never grey padding.

No decoded pixels are kept between calls: each render opens the file afresh,
so a source is safe to share between threads.
"""

from __future__ import annotations

import math
import struct
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self

from PIL import Image

from longdoc.errors import CorruptFile, ImageTooLarge, PageRenderFailed, TooManyPages
from longdoc.ingest.image_modes import to_rgb
from longdoc.ingest.sniff import BMP, JPEG, PNG, TIFF, WEBP
from longdoc.ingest.source import RenderedPage, file_sha256

DEFAULT_DPI = 72.0
MIN_DPI = 20.0
MAX_DPI = 10_000.0

_PIL_FORMATS = {PNG: "PNG", JPEG: "JPEG", TIFF: "TIFF", BMP: "BMP", WEBP: "WEBP"}

#: What Pillow raises on malformed data (it has no exception hierarchy of its own).
_PIL_DATA_ERRORS = (
    OSError, SyntaxError, ValueError, EOFError, struct.error, IndexError,
    KeyError, TypeError, ZeroDivisionError, OverflowError, MemoryError,
)

_EXIF_ORIENTATION = 0x0112
_TRANSPOSE = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}


@dataclass(frozen=True)
class _Frame:
    """One page as displayed (after EXIF orientation)."""

    index: int  # frame index in the file
    width_px: int
    height_px: int
    xdpi: float
    ydpi: float
    orientation: int

    @property
    def size_pt(self) -> tuple[float, float]:
        return self.width_px * 72.0 / self.xdpi, self.height_px * 72.0 / self.ydpi


class ImageSource:
    """An opened image file; see the module docstring for the rules.

    ``media_type``: one of the image types of :mod:`longdoc.ingest.sniff`.
    ``max_pages``: stop counting TIFF frames past this and raise
    TooManyPages (None: count all). ``max_render_pixels``: a rendered page
    is shrunk to at most this many pixels (default ``max_pixels``).
    ``name``: the document's name in messages (default: the file's).
    Raises (from the constructor) ImageTooLarge, CorruptFile, TooManyPages.
    """

    def __init__(
        self,
        path: str | Path,
        media_type: str,
        *,
        max_pixels: int = 60_000_000,
        max_pages: int | None = None,
        max_render_pixels: int | None = None,
        name: str | None = None,
    ) -> None:
        if media_type not in _PIL_FORMATS:
            raise ValueError(f"not an image media type: {media_type}")
        self.path = Path(path)
        self.name = name or self.path.name
        self.media_type = media_type
        self.max_pixels = max_pixels
        self.max_render_pixels = min(max_pixels, max_render_pixels or max_pixels)
        self.sha256 = file_sha256(self.path)
        self._format = _PIL_FORMATS[media_type]
        with self._open_file(page=None) as image:
            self._frames = self._read_frames(image, max_pages)
            self._check_decodes(image)
        self.page_count = len(self._frames)
        self._closed = False

    # -- DocumentSource ----------------------------------------------------

    def page_size(self, page: int) -> tuple[float, float]:
        """Displayed (width, height) in points."""
        return self._frame(page).size_pt

    def render(self, page: int, dpi: float) -> RenderedPage:
        """The page at its own pixels as RGB (``dpi`` is not used to
        resample; see the module docstring). Raises PageRenderFailed when the
        frame cannot be decoded."""
        frame = self._frame(page)
        with self._open_file(page=page) as image:
            try:
                image.seek(frame.index)
                if image.size != _stored_size(frame):
                    raise ValueError("the file changed since it was opened")
                image.load()
                upright = _upright(image, frame.orientation)
                rgb = to_rgb(upright)
            except _PIL_DATA_ERRORS as exc:
                raise PageRenderFailed(
                    f"Page {page} of {self.name} could not be decoded ({_describe(exc)}).",
                    page=page,
                ) from exc
        rgb, used_dpi, shrunk = _square_and_fit(rgb, frame, self.max_render_pixels)
        return RenderedPage(page=page, image=rgb, dpi=used_dpi, downscaled=shrunk)

    def text_layer(self, page: int) -> None:
        """Images have no text layer."""
        self._frame(page)
        return None

    def page_label(self, page: int) -> None:
        """Images have no page labels."""
        self._frame(page)
        return None

    def close(self) -> None:
        self._closed = True

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ImageSource({self.name!r}, {self.media_type}, pages={self.page_count})"

    # -- opening -----------------------------------------------------------

    @contextmanager
    def _open_file(self, page: int | None) -> Iterator[Image.Image]:
        """Pillow image of the file, restricted to the sniffed format.
        Errors become CorruptFile (page None) or PageRenderFailed."""
        try:
            with warnings.catch_warnings():
                # The pixel limit is checked against max_pixels before any
                # decoding; Pillow's warning threshold is not this service's
                # limit. (catch_warnings is not thread-safe; the worst a race
                # can do is leave this one Pillow warning silenced.)
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)
                image = Image.open(self.path, formats=[self._format])
        except Image.DecompressionBombError as exc:
            raise self._bomb(exc) from exc
        except _PIL_DATA_ERRORS as exc:
            if page is None:
                raise CorruptFile(
                    f"{self.name} is not a readable image ({_describe(exc)})."
                ) from exc
            raise PageRenderFailed(
                f"Page {page}: {self.name} could not be reopened ({_describe(exc)}).", page=page
            ) from exc
        with image:
            yield image

    def _read_frames(self, image: Image.Image, max_pages: int | None) -> list[_Frame]:
        """Header facts of every page, checking the pixel limit of each."""
        frames: list[_Frame] = []
        try:
            while True:
                self._check_pixels(image, len(frames))
                frames.append(_frame_info(image, len(frames)))
                if self._format != "TIFF":
                    break
                if max_pages is not None and len(frames) > max_pages:
                    raise TooManyPages(
                        f"{self.name} has more than {max_pages} pages (at least {len(frames)}); "
                        f"the limit is {max_pages}.",
                        max_pages=max_pages,
                        page_count=len(frames),
                    )
                try:
                    image.seek(len(frames))
                except EOFError:
                    break
        except Image.DecompressionBombError as exc:
            raise self._bomb(exc) from exc
        except _PIL_DATA_ERRORS as exc:
            raise CorruptFile(
                f"{self.name}: frame {len(frames) + 1} is unreadable ({_describe(exc)})."
            ) from exc
        return frames

    def _bomb(self, exc: Image.DecompressionBombError) -> ImageTooLarge:
        return ImageTooLarge(
            f"{self.name} is larger than Pillow's decompression-bomb limit ({exc}).",
            max_pixels=self.max_pixels,
        )

    def _check_pixels(self, image: Image.Image, index: int) -> None:
        width, height = image.size
        if width * height > self.max_pixels:
            where = f" (page {index + 1})" if self._format == "TIFF" else ""
            raise ImageTooLarge(
                f"{self.name}{where} is {width}x{height} = {width * height:,} pixels; "
                f"the limit is {self.max_pixels:,}.",
                width_px=width,
                height_px=height,
                max_pixels=self.max_pixels,
            )
        if width < 1 or height < 1:
            raise CorruptFile(f"{self.name} declares an empty {width}x{height} image.")

    def _check_decodes(self, image: Image.Image) -> None:
        """Decode the first frame once (then drop it) to catch truncation."""
        try:
            image.seek(0)
            if self._format == "JPEG":
                # DCT scaling: every byte is still entropy-decoded, at 1/8 the work.
                image.draft(image.mode, (max(1, image.width // 8), max(1, image.height // 8)))
            image.load()
        except _PIL_DATA_ERRORS as exc:
            raise CorruptFile(
                f"{self.name} is truncated or damaged ({_describe(exc)})."
            ) from exc

    def _frame(self, page: int) -> _Frame:
        if self._closed:
            raise ValueError(f"{self!r} is closed")
        if not 1 <= page <= self.page_count:
            raise ValueError(f"page {page} is outside 1..{self.page_count}")
        return self._frames[page - 1]


def _frame_info(image: Image.Image, index: int) -> _Frame:
    width, height = image.size
    xdpi, ydpi = _declared_dpi(image)
    orientation = _orientation(image)
    if orientation >= 5:  # transposed: the axes swap
        width, height, xdpi, ydpi = height, width, ydpi, xdpi
    return _Frame(index, width, height, xdpi, ydpi, orientation)


def _stored_size(frame: _Frame) -> tuple[int, int]:
    if frame.orientation >= 5:
        return frame.height_px, frame.width_px
    return frame.width_px, frame.height_px


def _declared_dpi(image: Image.Image) -> tuple[float, float]:
    """(x, y) DPI from the file's metadata; DEFAULT_DPI for a missing or
    absurd value."""
    declared = image.info.get("dpi")
    try:
        xdpi, ydpi = (float(v) for v in declared)  # type: ignore[union-attr]  # None: the TypeError below
    except (TypeError, ValueError, ZeroDivisionError):
        return DEFAULT_DPI, DEFAULT_DPI
    if not all(math.isfinite(v) and MIN_DPI <= v <= MAX_DPI for v in (xdpi, ydpi)):
        return DEFAULT_DPI, DEFAULT_DPI
    return _snap(xdpi), _snap(ydpi)


def _snap(dpi: float) -> float:
    """150.0124 (PNG stores pixels per metre) → 150.0."""
    nearest = round(dpi)
    return float(nearest) if abs(dpi - nearest) < 0.05 else dpi


def _orientation(image: Image.Image) -> int:
    """EXIF orientation 1..8 (1 when absent or invalid)."""
    tags = getattr(image, "tag_v2", None)  # TIFF: the tags of the current frame
    value = tags.get(_EXIF_ORIENTATION, 1) if tags is not None else image.getexif().get(_EXIF_ORIENTATION, 1)
    return value if isinstance(value, int) and 1 <= value <= 8 else 1


def _upright(image: Image.Image, orientation: int) -> Image.Image:
    method = _TRANSPOSE.get(orientation)
    return image if method is None else image.transpose(method)


def _square_and_fit(
    image: Image.Image, frame: _Frame, max_pixels: int
) -> tuple[Image.Image, float, bool]:
    """Stretch non-square pixels to the higher DPI and shrink to max_pixels;
    returns the image, the DPI it now has and whether it was shrunk."""
    dpi = max(frame.xdpi, frame.ydpi)
    width = image.width * dpi / frame.xdpi
    height = image.height * dpi / frame.ydpi
    shrunk = width * height > max_pixels
    if shrunk:
        shrink = math.sqrt(max_pixels / (width * height))
        width, height, dpi = width * shrink, height * shrink, dpi * shrink
    target = (max(1, math.floor(width)), max(1, math.floor(height)))
    if abs(target[0] - image.width) > 1 or abs(target[1] - image.height) > 1:
        image = image.resize(target, Image.Resampling.LANCZOS)
    return image, dpi, shrunk


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
