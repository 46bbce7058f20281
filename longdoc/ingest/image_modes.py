"""Turn any Pillow image mode into 8-bit RGB the way a reader would see it.

- transparent pixels (RGBA, LA, palette or colour-key transparency) are laid
  on white paper, not on black;
- 16-bit and 32-bit integer greyscale keep their tonal range (Pillow's own
  conversion would clip everything above 255 to white);
- float greyscale is scaled to its maximum (``[0, 1]`` data as is);
- CMYK, palette, bilevel and the rest go through Pillow's conversion.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

_ALPHA_MODES = frozenset({"RGBA", "RGBa", "LA", "La", "PA"})
_WIDE_INT_MODES = frozenset({"I;16", "I;16L", "I;16B", "I;16N", "I"})

WHITE = (255, 255, 255)


def to_rgb(image: Image.Image) -> Image.Image:
    """A new RGB image with the content of ``image`` (which is not modified).
    Raises ValueError/OSError when Pillow cannot convert the mode."""
    mode = image.mode
    if mode in _WIDE_INT_MODES:
        return _wide_int_to_rgb(image)
    if mode == "F":
        return _float_to_rgb(image)
    if mode in _ALPHA_MODES or "transparency" in image.info:
        rgba = image.convert("RGBA")
        paper = Image.new("RGBA", rgba.size, WHITE + (255,))
        return Image.alpha_composite(paper, rgba).convert("RGB")
    return image.convert("RGB")


def _wide_int_to_rgb(image: Image.Image) -> Image.Image:
    values = np.asarray(image).astype(np.int64)
    if image.mode.startswith("I;16"):
        top = 65535
    else:  # "I": 32-bit; usually 16-bit data widened by Pillow
        peak = int(values.max(initial=0))
        top = 255 if peak <= 255 else 65535 if peak <= 65535 else peak
    grey = (np.clip(values, 0, top) * 255 // max(top, 1)).astype(np.uint8)
    return Image.fromarray(grey).convert("RGB")


def _float_to_rgb(image: Image.Image) -> Image.Image:
    values = np.nan_to_num(np.asarray(image, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    peak = float(values.max(initial=0.0))
    scale = 255.0 if peak <= 1.0 else 255.0 / peak
    grey = np.clip(values * scale, 0, 255).astype(np.uint8)
    return Image.fromarray(grey).convert("RGB")
