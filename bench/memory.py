"""Peak memory against page count.

Each run is a fresh ``longdoc parse`` process; the sampler sums the RSS of it
and all its children (OCR workers) and keeps the peak. Text-layer runs use a
generated born-digital document (``--ocr off``); the OCR run rasterizes a
generated document and parses it with ``--ocr force``. Ratios are against the
10-page run measured in the same invocation.

    python bench/memory.py [--counts 10,100,300,1000] [--ocr-pages 100] [--ocr-dpi 150]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, TreeRssSampler, mib

from tests.docgen import long_textlayer, rasterize

LONGDOC = [sys.executable, "-m", "longdoc.cli"]


def run(pdf: Path, out: Path, *extra: str) -> tuple[int, float]:
    t0 = time.perf_counter()
    proc = subprocess.Popen([*LONGDOC, "parse", str(pdf), "-o", str(out), "-q", *extra], cwd=ROOT)
    with TreeRssSampler(proc.pid) as sampler:
        rc = proc.wait()
    if rc != 0:
        raise SystemExit(f"longdoc parse failed with exit code {rc} on {pdf}")
    return sampler.peak, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--counts", default="10,100,300,1000")
    ap.add_argument("--ocr-pages", type=int, default=100, help="0 to skip the OCR run")
    ap.add_argument("--ocr-dpi", type=int, default=150)
    args = ap.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        rows = []
        for n in counts:
            doc = long_textlayer(tmp / f"gen{n}", pages=n)
            peak, secs = run(doc.pdf_path, tmp / f"out{n}", "--ocr", "off")
            rows.append((f"text layer, {n} pages", n, peak, secs))
        base = rows[0][2]
        print(f"{'run':<28}{'pages':>7}{'peak RSS':>12}{'vs first':>10}{'seconds':>9}")
        for name, n, peak, secs in rows:
            print(f"{name:<28}{n:>7}{mib(peak):>12}{peak / base:>10.2f}{secs:>9.1f}")
        if args.ocr_pages:
            small = rasterize(long_textlayer(tmp / "ocr10", pages=10), args.ocr_dpi, tmp / "scan10.pdf")
            big = rasterize(long_textlayer(tmp / "ocrN", pages=args.ocr_pages), args.ocr_dpi, tmp / "scanN.pdf")
            p10, s10 = run(small.pdf_path, tmp / "o10", "--ocr", "force", "--dpi", str(args.ocr_dpi))
            pn, sn = run(big.pdf_path, tmp / "oN", "--ocr", "force", "--dpi", str(args.ocr_dpi))
            print(f"{'OCR, 10 pages':<28}{10:>7}{mib(p10):>12}{1.0:>10.2f}{s10:>9.1f}")
            print(f"{f'OCR, {args.ocr_pages} pages':<28}{args.ocr_pages:>7}{mib(pn):>12}{pn / p10:>10.2f}{sn:>9.1f}")


if __name__ == "__main__":
    main()
