"""Pipeline vs a bare loop on the same scanned pages: ratio of pages/s.

Bare loop: render each page with pypdfium2 at the same DPI and hand it to a
pool of RapidOCR worker processes (same parameters, same number of workers,
same in-flight window) — no text-layer checks, layout, checkpoints or
exports. Pipeline: ``Pipeline.parse`` with ``ocr=force`` on the same pages.
Both engines are warmed up before timing; the order alternates per round.

    python bench/pipeline_vs_bare.py [--pages 16] [--dpi 200] [--workers 2] [--rounds 1]
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
import time
from collections import deque
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pypdfium2 as pdfium

from _common import EVAL

from longdoc.config import load_settings
from longdoc.engines.rapidocr import worker as rapidocr_worker
from longdoc.pipeline import ParseOptions, Pipeline

DOC = EVAL / "pymupdf" / "test_3842.pdf"


def bare_loop(pool: ProcessPoolExecutor, pages: int, dpi: int, window: int) -> float:
    t0 = time.perf_counter()
    pdf = pdfium.PdfDocument(str(DOC))
    inflight: deque = deque()
    done = 0
    for i in range(pages):
        image = np.asarray(pdf[i].render(scale=dpi / 72).to_pil().convert("RGB"))
        inflight.append(pool.submit(rapidocr_worker.ocr_page, image))
        while len(inflight) >= window:
            inflight.popleft().result()
            done += 1
    while inflight:
        inflight.popleft().result()
        done += 1
    pdf.close()
    assert done == pages
    return pages / (time.perf_counter() - t0)


def pipeline_run(pipeline: Pipeline, options: ParseOptions, out: str) -> float:
    t0 = time.perf_counter()
    result = pipeline.parse(DOC, out, options)
    assert result.pages == options_pages(options) and not result.failed_pages, result
    return result.pages / (time.perf_counter() - t0)


def options_pages(options: ParseOptions) -> int:
    a, b = options.pages.split("-")
    return int(b) - int(a) + 1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=16)
    ap.add_argument("--dpi", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()

    settings = load_settings(overrides={"inference": {"workers": args.workers, "dpi": args.dpi}})
    options = ParseOptions.from_settings(settings, pages=f"1-{args.pages}", ocr="force", formats=("md", "json", "txt"))
    window = 2 * args.workers
    ctx = multiprocessing.get_context("forkserver")
    bare, piped = [], []
    with Pipeline(settings) as pipeline, ProcessPoolExecutor(
        args.workers, mp_context=ctx, initializer=rapidocr_worker.init_worker,
        initargs=(rapidocr_worker.DEFAULT_PARAMS,),
    ) as pool:
        pipeline.host.engine("rapidocr")  # warm up (starts and warms its workers)
        for f in [pool.submit(rapidocr_worker.ocr_page, rapidocr_worker.warm_up_image()) for _ in range(args.workers)]:
            f.result()
        for r in range(args.rounds):
            order = ("bare", "pipeline") if r % 2 == 0 else ("pipeline", "bare")
            for which in order:
                if which == "bare":
                    bare.append(bare_loop(pool, args.pages, args.dpi, window))
                else:
                    with tempfile.TemporaryDirectory() as out:  # fresh: no resume
                        piped.append(pipeline_run(pipeline, options, out))
    b, p = float(np.median(bare)), float(np.median(piped))
    print(f"document: {DOC.name}, pages 1-{args.pages}, {args.dpi} dpi, {args.workers} workers, {args.rounds} round(s)")
    print(f"bare loop (render + RapidOCR): {b:.3f} pages/s")
    print(f"pipeline (ocr=force):          {p:.3f} pages/s")
    print(f"ratio pipeline/bare: {p / b:.3f}")


if __name__ == "__main__":
    main()
