"""The rapidocr engine's recognizers side by side, on the same pages, in one run:
``small`` (the rapidocr wheel's PP-OCRv6 small), ``tiny`` (PP-OCRv6 tiny) and
``cascade`` (tiny, with the lines it is unsure of read again by small; the default).

Pages:

- dev: every file of ../shared/eval/dev with a text ground truth (gold or
  silver tier; Arabic and Persian left out, which neither model reads), its
  first ``--dev-pages`` pages rendered at 200 dpi;
- generated: the dense scans of ``bench/vs_ocrmypdf.py`` (``--english``
  English and ``--chinese`` Chinese pages, exact ground truth).

Each recognizer reads every page in this process (one thread, ONNX Runtime,
float models, the engine's own settings). Printed per recognizer: seconds
of OCR (detection + recognition) and the ratio to small; on the dev pages
the word F1 against the ground truth (words as a multiset, so reading order
does not count: the raw OCR lines are compared); on the generated pages the
CER per language; for the cascade, the share of lines read twice.

    python bench/recognizers.py [--dev-pages 2] [--english 4] [--chinese 2]
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pypdfium2 as pdfium

from _common import EVAL

from cer_devset import clean, ground_truth
from evaluation.metrics import cer
from longdoc.engines.rapidocr import RECOGNIZERS, RapidOcrEngine, worker as rapidocr_worker
from tests.docgen.dense import scan, typeset
from vs_ocrmypdf import normalized

DPI = 200
WORD = re.compile(r"\w+")


def render(pdf: Path, pages: int) -> list[np.ndarray]:
    doc = pdfium.PdfDocument(str(pdf))
    images = [np.asarray(doc[i].render(scale=DPI / 72).to_pil().convert("RGB")) for i in range(min(pages, len(doc)))]
    doc.close()
    return images


def dev_files(pages: int) -> list[tuple[str, list[np.ndarray], str]]:
    rows = csv.DictReader((EVAL / "MANIFEST.tsv").open(encoding="utf-8"), delimiter="\t")
    out = []
    for row in rows:
        if not row["path"].endswith(".pdf") or row["language"] in ("ar", "fa"):
            continue
        n = min(pages, int(row["pages"]))
        gt = ground_truth(row, n)
        if gt is not None:
            out.append((row["path"], render(EVAL / row["path"], n), clean(gt)))
    return out


def f1(predicted: str, truth: str) -> tuple[int, int, int]:
    """(matched words, predicted words, truth words), lower-cased."""
    p, t = Counter(WORD.findall(predicted.lower())), Counter(WORD.findall(truth.lower()))
    return sum((p & t).values()), sum(p.values()), sum(t.values())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dev-pages", type=int, default=2)
    ap.add_argument("--english", type=int, default=4)
    ap.add_argument("--chinese", type=int, default=2)
    args = ap.parse_args()
    dev = dev_files(args.dev_pages)
    with tempfile.TemporaryDirectory() as tmp:
        truths = typeset(Path(tmp) / "born.pdf", args.english, args.chinese)
        scan(Path(tmp) / "born.pdf", Path(tmp) / "scans.pdf")
        generated = render(Path(tmp) / "scans.pdf", len(truths))
    print(f"dev: {len(dev)} files, {sum(len(imgs) for _, imgs, _ in dev)} pages; generated: {len(generated)} pages "
          f"({args.english} English, {args.chinese} Chinese) at {DPI} dpi", flush=True)
    results: dict[str, dict[str, float]] = {}
    for name in ("small", "tiny", "cascade"):
        assert name in RECOGNIZERS
        engine = RapidOcrEngine(workers=1, backend="onnxruntime", int8=False, recognizer=name)
        if engine.recognizer != name:
            print(f"{name}: not installed (run scripts/setup.sh)", file=sys.stderr)
            return 1
        ocr = rapidocr_worker.build_ocr(engine.params, engine.recheck)
        seconds = lines = rechecked = 0.0
        matched = predicted = truth_words = 0
        for _, images, truth in dev:
            texts = []
            for image in images:
                t0 = time.perf_counter()
                raw = rapidocr_worker.run_ocr(ocr, image)
                seconds += time.perf_counter() - t0
                lines, rechecked = lines + raw.lines_read, rechecked + raw.rechecked
                texts.append("\n".join(raw.texts))
            m, p, t = f1(clean("\n".join(texts)), truth)
            matched, predicted, truth_words = matched + m, predicted + p, truth_words + t
        dev_seconds, gen_seconds = seconds, 0.0
        by_language: dict[str, list[str]] = {}
        for image, (language, _) in zip(generated, truths):
            t0 = time.perf_counter()
            raw = rapidocr_worker.run_ocr(ocr, image)
            gen_seconds += time.perf_counter() - t0
            lines, rechecked = lines + raw.lines_read, rechecked + raw.rechecked
            by_language.setdefault(language, []).append("\n".join(raw.texts))
        cers = {}
        for language in by_language:
            truth = normalized(language, "\n".join(t for lang, t in truths if lang == language))
            cers[language] = cer(normalized(language, "\n".join(by_language[language])), truth)
        results[name] = {"dev_s": dev_seconds, "gen_s": gen_seconds, "f1": 2 * matched / max(1, predicted + truth_words),
                         "twice": rechecked / max(1, lines), **{f"cer_{k}": v for k, v in cers.items()}}
        print(f"  {name}: {dev_seconds + gen_seconds:.1f} s", flush=True)
    base = results["small"]
    print(f"\n{'recognizer':<11}{'dev s':>8}{'ratio':>7}{'word F1':>9}{'gen s':>8}{'ratio':>7}"
          f"{'CER en':>8}{'CER zh':>8}{'read twice':>12}")
    for name, r in results.items():
        print(f"{name:<11}{r['dev_s']:>8.1f}{base['dev_s'] / r['dev_s']:>6.2f}x{r['f1']:>9.4f}{r['gen_s']:>8.1f}"
              f"{base['gen_s'] / r['gen_s']:>6.2f}x{r.get('cer_en', 0):>8.2%}{r.get('cer_zh', 0):>8.2%}"
              f"{r['twice']:>12.1%}")
    print("\nratio: small's seconds / this recognizer's (same pages, same process); word F1 on the dev pages' "
          "raw OCR lines against their ground truth")
    return 0


if __name__ == "__main__":
    sys.exit(main())
