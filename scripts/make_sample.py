"""Regenerate longdoc/samples/sample.pdf: three born-digital pages (text
layer) followed by two scanned pages (image only, two columns), so the quick
start exercises both the text-layer path and OCR.

    .venv/bin/python scripts/make_sample.py
"""

import sys
import tempfile
from pathlib import Path

import pypdfium2 as pdfium

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.docgen import english_report, rasterize, two_column  # noqa: E402


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        born = english_report(Path(tmp) / "a", pages=3)
        scan = rasterize(two_column(Path(tmp) / "b", pages=2), 150, Path(tmp) / "scan.pdf", jpeg_quality=80)
        out = pdfium.PdfDocument.new()
        for part in (born, scan):
            src = pdfium.PdfDocument(str(part.pdf_path))
            out.import_pages(src)
            src.close()
        target = ROOT / "longdoc" / "samples" / "sample.pdf"
        out.save(str(target))
        print(f"wrote {target} ({target.stat().st_size // 1024} KiB, {len(out)} pages)")


if __name__ == "__main__":
    main()
