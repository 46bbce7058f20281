"""What the new exports cost, against the default exports, in one run.

1. Time: the same documents parsed with ``--format md,json,txt`` (the
   baseline) and with each of ``pdf``, ``chunks``, ``docling`` added, best
   of ``--rounds``; the ratio is each against the baseline. The documents:
   the bundled sample (3 born-digital pages, 2 scans read by OCR) and a
   generated ``--pages``-page born-digital document (text layer, no OCR), in
   one ``Pipeline`` so the OCR workers start once; every run a fresh output
   folder (no checkpoint reuse across runs; pages are recognized again).
2. Memory: the searchable PDF's writer (the child process that opens the
   original) for 10 and for ``--memory-pages`` pages of a generated scan,
   its own peak RSS; the ratio is large / small (flat memory: about 1.0).

    .venv/bin/python bench/exports.py [--pages 300] [--rounds 3] [--memory-pages 1000] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from longdoc.config import LimitSettings, load_settings  # noqa: E402
from longdoc.export.searchable_pdf import SearchablePdfWriter  # noqa: E402
from longdoc.model import Page, TextSource  # noqa: E402
from longdoc.pipeline import ParseOptions, Pipeline  # noqa: E402
from tests.docgen import long_textlayer  # noqa: E402
from tests.docgen.raster import rasterize  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[1] / "longdoc" / "samples" / "sample.pdf"
BASE = ("md", "json", "txt")
EXTRA = ("pdf", "chunks", "docling")


def timed_parse(pipeline: Pipeline, settings, path: Path, formats: tuple[str, ...], work: Path) -> float:
    out = Path(tempfile.mkdtemp(dir=work))
    t0 = time.perf_counter()
    pipeline.parse(path, out, ParseOptions.from_settings(settings, formats=formats))
    return time.perf_counter() - t0


def peak_rss(scan: Path, pages: list[Page], n: int, out: Path) -> int:
    writer = SearchablePdfWriter(out, scan, LimitSettings())
    for number in range(1, n + 1):
        template = pages[(number - 1) % len(pages)]
        writer.write_page(Page(number=number, width=template.width, height=template.height,
                               text_source=TextSource.OCR,
                               lines=[line.model_copy(update={"page": number}) for line in template.all_lines()]))
    writer.close()
    assert writer.report is not None
    return writer.report.peak_rss_bytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--memory-pages", type=int, default=1000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-exports-"))
    long_doc = long_textlayer(work, pages=args.pages, seed=2).pdf_path
    settings = load_settings(None)
    results: dict = {"machine": platform.processor() or platform.machine(), "time": {}, "memory": {}}
    with Pipeline(settings) as pipeline:
        timed_parse(pipeline, settings, SAMPLE, ("txt",), work)       # start the OCR workers outside the timing
        for name, path in (("sample (5 pages, 2 OCR)", SAMPLE), (f"born-digital ({args.pages} pages)", long_doc)):
            variants = {"md,json,txt": BASE, **{f"+{fmt}": BASE + (fmt,) for fmt in EXTRA}}
            best = {label: min(timed_parse(pipeline, settings, path, formats, work) for _ in range(args.rounds))
                    for label, formats in variants.items()}
            base = best["md,json,txt"]
            results["time"][name] = {label: {"seconds": round(s, 3), "ratio": round(s / base, 3)}
                                     for label, s in best.items()}
            print(f"{name}: " + ", ".join(f"{label} {s:.2f} s ({s / base:.2f}x)" for label, s in best.items()))
    digital = long_textlayer(work, pages=args.memory_pages, seed=9)
    scan = rasterize(digital, 20, work / "scan.pdf").pdf_path
    settings_off = load_settings(None, overrides={"inference": {"ocr": "off"}})
    with Pipeline(settings_off) as pipeline:
        pipeline.parse(digital.pdf_path, work / "read", ParseOptions.from_settings(settings_off, formats=("json",),
                                                                                     pages="1-10"))
    from longdoc.model import Document
    pages = Document.model_validate_json((work / "read" / f"{digital.pdf_path.stem}.json").read_text()).pages
    small = peak_rss(scan, pages, 10, work / "ten.pdf")
    large = peak_rss(scan, pages, args.memory_pages, work / "many.pdf")
    results["memory"] = {"pages_small": 10, "pages_large": args.memory_pages, "peak_rss_small_mib":
                         round(small / 2**20, 1), "peak_rss_large_mib": round(large / 2**20, 1),
                         "ratio": round(large / small, 3)}
    print(f"searchable PDF writer peak RSS: 10 pages {small / 2**20:.0f} MiB, {args.memory_pages} pages "
          f"{large / 2**20:.0f} MiB ({large / small:.2f}x)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
