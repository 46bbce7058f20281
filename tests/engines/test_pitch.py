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
