"""Fixed-pitch lines found by their glyph grid, spaced by it (real rendered
lines in real fonts; :mod:`longdoc.engines.rapidocr.pitch`)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from longdoc.engines.rapidocr import pitch

MONO = ["/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
        "/usr/share/fonts/truetype/liberation2/LiberationMono-Regular.ttf"]
PROPORTIONAL = ["/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf",
                "/usr/share/fonts/truetype/liberation2/LiberationSerif-Regular.ttf"]
CODE = "x0 = fz_lineto(ctx, pts[i].x, pts[i].y);"
PROSE = "The harbour master kept a ledger of every ship"


def line_crop(text: str, font: str, px: int = 28) -> np.ndarray:
    """``text`` rendered as a detector's line crop would be (RGB, a margin around it)."""
    face = ImageFont.truetype(font, px)
    width = int(face.getlength(text)) + px
    image = Image.new("RGB", (width, int(px * 1.5)), "white")
    ImageDraw.Draw(image).text((px // 2, px // 4), text, font=face, fill="black")
    return np.asarray(image)


def fonts(paths: list[str]) -> list[str]:
    found = [p for p in paths if __import__("pathlib").Path(p).is_file()]
    if not found:
        pytest.skip("fonts not installed")
    return found


@pytest.mark.parametrize("font", MONO)
def test_a_monospace_line_is_on_a_grid_of_its_advance(font):
    crop = line_crop(CODE, font)
    found = pitch.line_grid(crop, CODE)
    advance = ImageFont.truetype(font, 28).getlength("m")
    assert found is not None and abs(found.grid.pitch - advance) <= 0.6


@pytest.mark.parametrize("font", PROPORTIONAL)
def test_proportional_lines_are_not(font):
    fonts([font])
    for text in (PROSE, CODE):
        assert pitch.line_grid(line_crop(text, font), text) is None


@pytest.mark.parametrize("font", MONO)
def test_the_spaces_a_recognizer_dropped_in_a_monospace_line_come_back(font):
    crop = line_crop("if (a,b) {  return x;", font)
    found = pitch.line_grid(crop, "if(a,b){ return x;")
    assert found is not None
    assert pitch.respaced("if(a,b){ return x;", found) == "if (a,b) {  return x;"


def test_a_line_mixing_proportional_type_keeps_its_spacing():
    mono, prop = fonts(MONO)[0], fonts(PROPORTIONAL)[0]
    left, right = line_crop("return value;", mono), line_crop("  see the manual", prop)
    height = min(left.shape[0], right.shape[0])
    crop = np.concatenate([left[:height], right[:height]], axis=1)
    found = pitch.line_grid(crop, "return value; see the manual")
    if found is not None:  # a grid may be found on the monospace part; the spaces are left alone
        assert pitch.respaced("return value; see the manual", found) == "return value; see the manual"


def test_short_lines_of_a_listing_take_the_pitch_of_its_long_lines():
    font = fonts(MONO)[0]
    rows = ["for (i = 0; i < n; i++) {", "    total += i;", "}"]
    crops = [line_crop(r.strip(), font) for r in rows]
    advance = ImageFont.truetype(font, 28).getlength("m")
    places = [pitch.PlacedLine(left=100 + advance * (len(r) - len(r.lstrip())), cy=100 + 40 * k, height=42)
              for k, r in enumerate(rows)]
    grids = pitch.page_grids(crops, [r.strip() for r in rows], places)
    assert grids[0] is not None and pitch.line_grid(crops[2], "}") is None
    assert all(g is not None and abs(g.grid.pitch - grids[0].grid.pitch) < 1e-6 for g in grids)


def test_a_line_of_chinese_is_no_code():
    font = "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"
    fonts([font])
    text = "公司将继续聚焦主营业务加大对关键技术和核心产品的投入"
    assert pitch.line_grid(line_crop(text, font), text) is None


LONG_CODE = "static int draw_path(fz_context *ctx, const point *pts, int n)"


def _at_pitch(crop: np.ndarray, font: str, target: float) -> np.ndarray:
    """``crop`` squeezed across so that its characters are ``target`` pixels apart (as a scan at
    another resolution sets them: rarely a whole or a quarter number of pixels)."""
    import cv2

    advance = ImageFont.truetype(font, 28).getlength("m")
    width = round(crop.shape[1] * target / advance)
    return cv2.resize(crop, (width, crop.shape[0]), interpolation=cv2.INTER_AREA)


@pytest.mark.parametrize("target", [13.625, 14.875, 15.0, 15.06, 15.125, 16.125])
def test_a_long_monospace_line_is_on_its_grid_whatever_its_pitch(target):
    """A 62-character line's grid is found, at its pitch, whether that
    falls on or between the quarter pixels the old search stepped by (at
    15.125 px it tried 15.0 and 15.25, drifted half a cell along the line
    and found no grid: the same listing line was code on one runtime's
    boxes and prose on the other's)."""
    font = fonts(MONO)[0]
    found = pitch.line_grid(_at_pitch(line_crop(LONG_CODE, font), font, target), LONG_CODE)
    assert found is not None and abs(found.grid.pitch - target) <= 0.05


@pytest.mark.parametrize("skew", [0, 1, 2, 3])
def test_a_line_boxed_by_a_quad_a_pixel_off_a_rectangle_keeps_its_grid(skew):
    """The detector's quads are rectangles rounded to whole pixels of its
    smaller image: one end of a line's box comes out a pixel or two taller
    than the other. Cropped as a perspective warp, that stretched the line's
    left end against its right (15.3 px a character against 14.8) and its
    grid was lost; the crop of the rectangle the quad stands for keeps it."""
    from longdoc.engines.rapidocr.worker import _lines_by_glyph

    font = fonts(MONO)[0]
    crop = _at_pitch(line_crop(LONG_CODE, font), font, 15.06)
    h, w = crop.shape[:2]
    page = np.full((h + 60, w + 60, 3), 255, dtype=np.uint8)
    page[30:30 + h, 30:30 + w] = crop
    quad = [[30.0, 30.0], [30.0 + w, 30.0 - skew / 2], [30.0 + w, 30.0 + h + skew / 2], [30.0, 30.0 + h]]
    texts, pitches = _lines_by_glyph(page, [quad], [LONG_CODE], [])
    assert pitches[0] is not None and abs(pitches[0] - 15.06) <= 0.05


def test_a_short_line_boxed_with_the_ends_of_the_line_above_keeps_the_listing_pitch():
    """A box drawn a few pixels taller takes in the descenders of the line
    above (off the grid): they are not the line's glyphs. With them, a
    listing's ``return -1;`` sat off the pitch it took from its neighbours
    on one runtime's boxes and on it on the other's."""
    font = fonts(MONO)[0]
    rows = ["for (i = 0; i < n; i++) {", "    return -1;"]
    crops = [line_crop(r.strip(), font) for r in rows]
    advance = ImageFont.truetype(font, 28).getlength("m")
    short = crops[1].copy()
    for k in range(4):  # descenders of the line above cut by the box's top edge, half a cell off the grid
        x = int(14 + (2 * k + 1) * advance) - 2
        short[0:4, x:x + 4] = 0
    crops[1] = short
    places = [pitch.PlacedLine(left=100 + advance * (len(r) - len(r.lstrip())), cy=100 + 40 * k, height=42)
              for k, r in enumerate(rows)]
    grids = pitch.page_grids(crops, [r.strip() for r in rows], places)
    assert grids[0] is not None and grids[1] is not None
    assert len(pitch.glyph_boxes(short)) == len(pitch.glyph_boxes(line_crop("return -1;", font)))
