"""CER on the dev set, per file: the pipeline against bare RapidOCR.

For every file in ../shared/eval/dev/MANIFEST.tsv whose ground truth is a
text (gold or silver tier: .txt, .md) and exists, up to ``--max-pages``
pages:

- bare:     RapidOCR (same parameters) on each page rendered at ``--dpi``,
            lines joined in RapidOCR's raw output order;
- force:    the pipeline with ``ocr=force`` (OCR + layout + reading order),
            all blocks in reading order, furniture included (so it is
            compared on the same text as bare);
- main:     the same run's plain-text export (furniture removed) — lower is
            not expected where the ground truth keeps headers/page numbers;
- auto:     the pipeline with ``ocr=auto`` (text layer where sound).

CER = Levenshtein distance / ground-truth length after normalizing
whitespace and stripping Markdown markup from both sides.

    python bench/cer_devset.py [--max-pages 40] [--dpi 200] [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import csv
import re
import tempfile
from pathlib import Path

import numpy as np
import pypdfium2 as pdfium

from _common import EVAL

from evaluation.metrics import cer
from longdoc.config import load_settings
from longdoc.engines.rapidocr import worker as rapidocr_worker
from longdoc.model import Document
from longdoc.pipeline import ParseOptions, Pipeline

_MD = re.compile(r"<!--.*?-->|^#+\s*|[*_`|]|^\s*[-:|\s]+$|!\[[^\]]*\]\([^)]*\)", re.M | re.S)


def clean(text: str) -> str:
    return " ".join(_MD.sub(" ", text.replace("\f", " ")).split())


def ground_truth(row: dict[str, str], pages: int) -> str | None:
    gt = row["gt_path"]
    if not gt or not gt.endswith((".txt", ".md")) or not (EVAL / gt).is_file():
        return None
    text = (EVAL / gt).read_text(encoding="utf-8", errors="replace")
    if text.startswith("---"):  # YAML front matter (olmOCR sample format)
        text = text.split("---", 2)[-1]
    if pages < int(row["pages"]):
        if "\f" not in text:
            return None  # ground truth not split by page: cannot compare a prefix
        text = "\f".join(text.split("\f")[:pages])
    return text


def bare_text(ocr, pdf_path: Path, pages: int, dpi: int) -> str:
    pdf = pdfium.PdfDocument(str(pdf_path))
    out = []
    for i in range(pages):
        image = np.asarray(pdf[i].render(scale=dpi / 72).to_pil().convert("RGB"))
        out.append("\n".join(rapidocr_worker.run_ocr(ocr, image).texts))
    pdf.close()
    return "\n".join(out)


def pipeline_texts(pipeline: Pipeline, pdf: Path, pages: int, ocr: str, dpi: int, tmp: Path) -> tuple[str, str]:
    options = ParseOptions(pages=f"1-{pages}", ocr=ocr, dpi=dpi, formats=("json", "txt"))
    result = pipeline.parse(pdf, tmp / ocr, options)
    doc = Document.model_validate_json(result.outputs["json"].read_text())
    every = "\n".join(b.text for p in doc.pages for b in sorted(p.blocks, key=lambda b: b.order))
    return every, result.outputs["txt"].read_text()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-pages", type=int, default=40)
    ap.add_argument("--dpi", type=int, default=200)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    rows = list(csv.DictReader((EVAL / "MANIFEST.tsv").open(encoding="utf-8"), delimiter="\t"))
    settings = load_settings(overrides={"inference": {"dpi": args.dpi}})
    ocr = rapidocr_worker.build_ocr(rapidocr_worker.DEFAULT_PARAMS)
    print(f"{'file':<58}{'tier':>7}{'pages':>6}{'bare':>8}{'force':>8}{'main':>8}{'auto':>8}")
    totals: dict[str, list[float]] = {"bare": [], "force": [], "auto": []}
    with Pipeline(settings) as pipeline, tempfile.TemporaryDirectory() as tmp:
        for row in rows:
            if args.only not in row["path"] or not row["path"].endswith(".pdf"):
                continue
            pages = min(int(row["pages"]), args.max_pages)
            gt = ground_truth(row, pages)
            if gt is None:
                continue
            pdf = EVAL / row["path"]
            ref = clean(gt)
            work = Path(tmp) / pdf.stem
            c_bare = cer(clean(bare_text(ocr, pdf, pages, args.dpi)), ref)
            every, main_txt = pipeline_texts(pipeline, pdf, pages, "force", args.dpi, work)
            c_force, c_main = cer(clean(every), ref), cer(clean(main_txt), ref)
            auto_every, _ = pipeline_texts(pipeline, pdf, pages, "auto", args.dpi, work)
            c_auto = cer(clean(auto_every), ref)
            for k, v in (("bare", c_bare), ("force", c_force), ("auto", c_auto)):
                totals[k].append(v)
            tier = row["notes"].split("]")[0].lstrip("[")
            print(f"{row['path'][-57:]:<58}{tier:>7}{pages:>6}{c_bare:>8.3f}{c_force:>8.3f}{c_main:>8.3f}{c_auto:>8.3f}", flush=True)
    med = {k: float(np.median(v)) for k, v in totals.items() if v}
    print(f"median CER: bare {med.get('bare', 0):.3f}, pipeline force {med.get('force', 0):.3f}, "
          f"pipeline auto {med.get('auto', 0):.3f}; ratio force/bare {med.get('force', 0) / max(med.get('bare', 1e-9), 1e-9):.2f}")


if __name__ == "__main__":
    main()
