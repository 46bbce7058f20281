"""An int8 copy of RapidOCR's text recognizer, built here from the model in
the wheel (nothing is downloaded).

The recognizer is ~90% of a page's OCR time. A static int8 copy of its
convolutions (QDQ, weights per channel int8, activations uint8; ONNX
Runtime's ``quantize_static``) recognizes 1.2× faster with ONNX Runtime on
an AMD EPYC with the same character error rate. Only convolutions: with its
attention and output layers in int8 too, the error rate on dense English
pages rose eightfold (0.018% → 0.146%) for no more speed. How it is made:

1. the wheel's ``PP-OCRv6_rec_small.onnx`` is checked by SHA-256
   (:data:`SOURCE_SHA256`) and lifted to opset 13 (per-channel
   DequantizeLinear needs it);
2. activation ranges are calibrated on :data:`CALIBRATION_LINES` text lines
   drawn here with Debian's DejaVu Sans and WenQuanYi Micro Hei fonts
   (English, digits, punctuation, Chinese), never on evaluation pages;
3. the result is written to ``<venv>/share/longdoc/models`` with its
   SHA-256 beside it (``.sha256``); :func:`int8_recognizer` refuses a file
   that does not match (a torn or altered copy), and the engine then falls
   back to the float model with a warning.

``scripts/setup.sh`` builds it (``python -m longdoc.engines.rapidocr.int8``);
otherwise the first engine start does. ``inference.rapidocr.int8: false`` opts out.
Building needs the ``onnx`` package and takes ~15 s.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from longdoc.engines.model_files import ModelFileError, checked, sha256_of

log = logging.getLogger(__name__)

SOURCE_NAME = "PP-OCRv6_rec_small.onnx"
SOURCE_SHA256 = "6f327246b50388f3c176ae304bd95767ea6dc0c9ae92153ef8cbe210b3c14884"
CALIBRATION_LINES = 64
FONTS = (("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", (22, 26, 30)),
         ("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc", (24, 28)))
_WORDS = ("the quick brown fox jumps over a lazy dog while seven wizards quietly judge boxing matches "
          "Agreement Section 4(b) 2026 copyright holders WARRANTY LIABILITY 123.45 % ; : , ( ) \" - "
          "本软件按原样提供 不提供任何明示或暗示的担保 包括但不限于适销性 第三条 用户手册").split()


def default_path() -> Path:
    return Path(sys.prefix) / "share" / "longdoc" / "models" / SOURCE_NAME.replace(".onnx", ".int8.onnx")


def source_model() -> Path:
    import rapidocr

    return checked(Path(rapidocr.__file__).parent / "models" / SOURCE_NAME, SOURCE_SHA256)


def int8_recognizer(path: Path | None = None) -> Path:
    """The built int8 recognizer, checked against its recorded SHA-256.
    Raises ModelFileError when it is missing or does not match."""
    path = path or default_path()
    record = path.with_name(path.name + ".sha256")
    if not record.is_file():
        raise ModelFileError(f"{record} does not exist")
    return checked(path, record.read_text().split()[0])


def ensure(path: Path | None = None) -> Path:
    """The int8 recognizer, built first if missing or damaged."""
    try:
        return int8_recognizer(path)
    except ModelFileError:
        return build(path)


def build(dest: Path | None = None) -> Path:
    """Quantize the wheel's recognizer into ``dest`` (see the module docstring)."""
    import onnx
    from onnx import version_converter
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    dest = dest or default_path()
    dest.parent.mkdir(parents=True, exist_ok=True)
    lifted = dest.with_name(f".{dest.name}.{os.getpid()}.opset13")
    part = dest.with_name(f".{dest.name}.{os.getpid()}.part")

    class Lines(CalibrationDataReader):
        def __init__(self) -> None:
            self.lines = calibration_lines()

        def get_next(self) -> dict[str, np.ndarray] | None:
            line = next(self.lines, None)
            return None if line is None else {"x": line}

    try:
        onnx.save(version_converter.convert_version(onnx.load(str(source_model())), 13), str(lifted))
        quantize_static(str(lifted), str(part), Lines(), quant_format=QuantFormat.QDQ, per_channel=True,
                        weight_type=QuantType.QInt8, activation_type=QuantType.QUInt8,
                        op_types_to_quantize=["Conv"])
        digest = sha256_of(part)
        part.replace(dest)
        dest.with_name(dest.name + ".sha256").write_text(f"{digest}  {dest.name}\n")
    finally:
        lifted.unlink(missing_ok=True)
        part.unlink(missing_ok=True)
    log.info("int8 recognizer built", extra={"path": str(dest)})
    return dest


def calibration_lines() -> Iterator[np.ndarray]:
    """Text lines as the recognizer sees them: height 48, RGB scaled to
    [-1, 1], shape (1, 3, 48, width)."""
    from PIL import Image, ImageDraw, ImageFont

    fonts: list[ImageFont.FreeTypeFont | ImageFont.ImageFont] = [
        ImageFont.truetype(path, size) for path, sizes in FONTS if Path(path).is_file() for size in sizes]
    fonts = fonts or [ImageFont.load_default(size=26)]
    rng = np.random.default_rng(0)
    for i in range(CALIBRATION_LINES):
        font = fonts[i % len(fonts)]
        text = " ".join(_WORDS[j] for j in rng.integers(0, len(_WORDS), 8))
        width = int(font.getlength(text)) + 20
        image = Image.new("RGB", (width, 48), "white")
        ImageDraw.Draw(image).text((10, 8), text, fill="black", font=font)
        pixels = (np.asarray(image, dtype=np.float32) / 255.0 - 0.5) / 0.5
        yield np.ascontiguousarray(pixels.transpose(2, 0, 1)[None])


if __name__ == "__main__":
    print(build())
