"""Synthetic pages for engine tests: text drawn with real fonts at 200 dpi.

Each page records where every line was drawn (in points), so tests can
check recognized text *and* boxes against what is really on the image.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont
from rapidfuzz.distance import Levenshtein

from longdoc.engines.base import PageImage
from longdoc.model import BBox

LATIN_FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
CJK_FONT = Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")
DPI = 200.0
#: A5 keeps real OCR quick while the type is the size of a printed page's.
PAGE_W_PT, PAGE_H_PT = 420.0, 595.0

ENGLISH = [
    "The harbour master kept a ledger of every ship that entered the bay.",
    "Each entry listed the vessel, its cargo, and the weight in long tons.",
    "Grain arrived from the north in autumn; timber came down in spring.",
    "In 1887 the ledger recorded 412 arrivals and only 9 departures delayed.",
    "Storms closed the channel twice, for six days in March and four in May.",
    "A second volume, begun in July, notes the price of coal at each landing.",
    "Pilots were paid by the mile, with a bonus for passages made at night.",
    "The customs house stood on the quay, beside the old weighing station.",
    "Clerks copied each manifest by hand and filed the originals in boxes.",
    "Most of those boxes survive, although the river flooded the cellar.",
    "Researchers now compare the ledgers with letters sent by the captains.",
    "Their accounts rarely agree about the weather or the length of delays.",
]
CHINESE = ["长文档识别需要稳定的内存", "每一页都按照阅读顺序输出"]


@dataclass
class DrawnLine:
    text: str
    bbox: BBox  # points, top-left origin


@dataclass
class SamplePage:
    image: PageImage
    lines: list[DrawnLine]

    @property
    def text(self) -> str:
        return "\n".join(line.text for line in self.lines)


def render_page(
    lines: list[str],
    *,
    page: int = 1,
    font_path: Path = LATIN_FONT,
    size_pt: float = 10.0,
    top_pt: float = 60.0,
    height_pt: float = PAGE_H_PT,
    dpi: float = DPI,
) -> SamplePage:
    """Draw ``lines`` (one per row, 1.8 × size apart) on a white page, A5 wide
    and ``height_pt`` tall."""
    scale = dpi / 72.0
    width_px, height_px = round(PAGE_W_PT * scale), round(height_pt * scale)
    img = Image.new("RGB", (width_px, height_px), "white")
    draw = ImageDraw.Draw(img)
    font = ImageFont.truetype(str(font_path), round(size_pt * scale))
    drawn = []
    y_pt = top_pt
    for text in lines:
        x0, y0, x1, y1 = draw.textbbox((30 * scale, y_pt * scale), text, font=font)
        draw.text((30 * scale, y_pt * scale), text, fill="black", font=font)
        drawn.append(DrawnLine(text, BBox(x0=x0 / scale, y0=y0 / scale, x1=x1 / scale, y1=y1 / scale)))
        y_pt += size_pt * 1.8
    image = PageImage(page=page, image=np.asarray(img), dpi=dpi, width_pt=PAGE_W_PT, height_pt=height_pt)
    return SamplePage(image=image, lines=drawn)


def english_page(page: int = 1, n_lines: int = 12) -> SamplePage:
    """An A5 page of distinct English sentences (rotated by page number so pages differ)."""
    k = (page - 1) % len(ENGLISH)
    rotated = ENGLISH[k:] + ENGLISH[:k]
    return render_page(rotated[:n_lines], page=page)


def english_strip(page: int = 1, n_lines: int = 3) -> SamplePage:
    """A short page (A5 width, just tall enough for ``n_lines``): quick to OCR."""
    k = (page - 1) % len(ENGLISH)
    rotated = ENGLISH[k:] + ENGLISH[:k]
    return render_page(rotated[:n_lines], page=page, top_pt=20.0, height_pt=40.0 + 18.0 * n_lines)


def chinese_page(page: int = 1) -> SamplePage:
    return render_page(CHINESE, page=page, font_path=CJK_FONT, size_pt=14.0)


def normalize(text: str) -> str:
    """NFKC (ligatures like "ﬁ" → "fi") and runs of whitespace → one space."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


def cer(recognized: str, truth: str) -> float:
    """Character error rate: Levenshtein distance / length of the truth,
    after :func:`normalize`."""
    truth_n = normalize(truth)
    return Levenshtein.distance(normalize(recognized), truth_n) / max(1, len(truth_n))
