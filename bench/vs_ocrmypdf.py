"""longdoc against OCRmyPDF on the same scans, in the same run.

The test set (made here, exact ground truth):

- ``--english`` dense English pages: the licence texts Debian ships in
  ``/usr/share/common-licenses`` (GPL-3, Apache-2.0, MPL-2.0…), set in
  DejaVu Sans 10 pt on A4;
- ``--chinese`` dense Chinese pages: generated manual-style prose
  (``tests/docgen/prose.py``), WenQuanYi Micro Hei 11 pt;
- every page rendered at 200 dpi in grey, turned by a random angle within
  ±0.6°, stored as JPEG (quality 85) in an image-only PDF.

Both tools run as cold CLI processes on the whole set, alternated, best of
``--rounds``: ``ocrmypdf -j <cores> -l eng+chi_sim --force-ocr
--output-type pdf --sidecar`` and ``longdoc parse --ocr force --format txt``
with its defaults, and with ``--plugin`` a third: the same ``ocrmypdf``
command with ``--plugin longdoc.integrations.ocrmypdf`` (longdoc as
OCRmyPDF's engine) (one untimed longdoc run on one page first, so the
backend choice of ``inference.backend: auto`` is already remembered, as on
any machine after its first run). Printed: pages/s of each and their ratio,
and CER per tool on the English pages, the Chinese pages and all (each
language's pages joined in order, since a paragraph continued over a page
break comes out on its first page; English compared with runs of whitespace
as one space, Chinese with whitespace removed: Tesseract spaces out CJK
characters).

    python bench/vs_ocrmypdf.py [--english 16] [--chinese 4] [--rounds 2] [--plugin] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT

from evaluation.metrics import cer
from tests.docgen.dense import DPI, MAX_SKEW, scan, typeset

# --- running the tools ----------------------------------------------------------------


def run_ocrmypdf(pdf: Path, work: Path, plugin: bool = False) -> tuple[float, list[str]]:
    """OCRmyPDF with Tesseract, or with longdoc as its engine (``plugin``)."""
    sidecar = work / "ocrmypdf.txt"
    cmd = [str(Path(sys.executable).parent / "ocrmypdf"), "-j", str(os.cpu_count() or 1), "-l", "eng+chi_sim",
           "--force-ocr", "--output-type", "pdf", "--sidecar", str(sidecar), "-q", str(pdf), str(work / "out.pdf")]
    if plugin:
        cmd[1:1] = ["--plugin", "longdoc.integrations.ocrmypdf"]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env={**os.environ, "OMP_THREAD_LIMIT": "1"})
    seconds = time.perf_counter() - t0
    return seconds, sidecar.read_text(encoding="utf-8").split("\f")


def run_longdoc(pdf: Path, work: Path, pages: str | None = None) -> tuple[float, list[str]]:
    out = work / "longdoc"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [str(Path(sys.executable).parent / "longdoc"), "parse", str(pdf), "-o", str(out), "--ocr", "force",
           "--format", "txt", "-q"] + (["--pages", pages] if pages else [])
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT)
    seconds = time.perf_counter() - t0
    return seconds, (out / f"{pdf.stem}.txt").read_text(encoding="utf-8").split("\f")


def normalized(language: str, text: str) -> str:
    """English: runs of whitespace as one space; Chinese: whitespace removed."""
    return "".join(text.split()) if language == "zh" else " ".join(text.split())


def score(pages: list[str], truths: list[tuple[str, str]]) -> dict[str, float]:
    """CER per language over the language's pages joined in order (a
    paragraph continued over a page break may come out on its first page,
    so pages are not compared one by one), and over all characters."""
    errors: dict[str, float] = {}
    lengths: dict[str, int] = {}
    for language in dict.fromkeys(lang for lang, _ in truths):
        numbers = [i for i, (lang, _) in enumerate(truths) if lang == language]
        truth = normalized(language, "\n".join(truths[i][1] for i in numbers))
        predicted = normalized(language, "\n".join(pages[i] for i in numbers if i < len(pages)))
        errors[language], lengths[language] = cer(predicted, truth) * len(truth), len(truth)
    result = {lang: errors[lang] / lengths[lang] for lang in errors}
    result["all"] = sum(errors.values()) / sum(lengths.values())
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--english", type=int, default=16)
    ap.add_argument("--chinese", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--plugin", action="store_true", help="also OCRmyPDF with longdoc as its engine")
    ap.add_argument("--keep", type=Path, help="keep the test set and outputs here")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="vs-ocrmypdf-"))
    work.mkdir(parents=True, exist_ok=True)
    truths = typeset(work / "born.pdf", args.english, args.chinese)
    pdf = work / "scans.pdf"
    scan(work / "born.pdf", pdf)
    n = len(truths)
    print(f"{n} pages ({args.english} English, {args.chinese} Chinese), {DPI} dpi grey JPEG, skew ±{MAX_SKEW}°; "
          f"{os.cpu_count()} cores", flush=True)
    run_longdoc(pdf, work, pages="1")  # untimed: the backend choice is remembered from here on
    best: dict[str, tuple[float, list[str]]] = {}
    tools = ("ocrmypdf", "longdoc", "plugin") if args.plugin else ("ocrmypdf", "longdoc")
    runners = {"ocrmypdf": lambda: run_ocrmypdf(pdf, work), "longdoc": lambda: run_longdoc(pdf, work),
               "plugin": lambda: run_ocrmypdf(pdf, work, plugin=True)}
    for round_ in range(args.rounds):
        order = tools if round_ % 2 == 0 else tools[::-1]
        for tool in order:
            seconds, pages = runners[tool]()
            print(f"  round {round_ + 1}: {tool:<9} {seconds:6.1f} s  {n / seconds:.3f} pages/s", flush=True)
            if tool not in best or seconds < best[tool][0]:
                best[tool] = (seconds, pages)
    print(f"\n{'tool':<10}{'pages/s':>9}{'CER en':>9}{'CER zh':>9}{'CER all':>9}")
    scores = {}
    for tool, (seconds, pages) in best.items():
        scores[tool] = score(pages, truths)
        s = scores[tool]
        print(f"{tool:<10}{n / seconds:>9.3f}{s['en']:>9.2%}{s['zh']:>9.2%}{s['all']:>9.2%}")
    speed = best["ocrmypdf"][0] / best["longdoc"][0]
    print(f"\nlongdoc / OCRmyPDF pages/s: {speed:.2f}x (best of {args.rounds}, alternated); CER ratio "
          f"en {_ratio(scores['longdoc']['en'], scores['ocrmypdf']['en'])}, "
          f"zh {_ratio(scores['longdoc']['zh'], scores['ocrmypdf']['zh'])}")
    if args.plugin:
        print(f"ocrmypdf --plugin longdoc / ocrmypdf pages/s: {best['ocrmypdf'][0] / best['plugin'][0]:.2f}x; "
              f"CER ratio en {_ratio(scores['plugin']['en'], scores['ocrmypdf']['en'])}, "
              f"zh {_ratio(scores['plugin']['zh'], scores['ocrmypdf']['zh'])}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


if __name__ == "__main__":
    sys.exit(main())
