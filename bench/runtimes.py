"""One reading on both runtimes: the same scanned pages parsed with
``inference.backend: onnxruntime`` and with ``openvino`` (everything else
the same), compared page by page.

Pages: 4 of each scan of the English real corpus (two pairs of facing
pages, a third and two thirds of the way in; ``python bench/real_corpus.py``
builds it under ~/.cache/longdoc/real-corpus) and the generated documents
the tests read (tests/docgen: prose with headings, two columns, a code
listing, tables, a figure, a contents page, an index, a numbered list, a
side note), each scanned as an office scanner would (``office_scan``: 200
dpi, grey, skewed, JPEG).

Per page: the recognized lines' text (CER of the one runtime's against the
other's, all lines joined: what the models read), and the blocks: their
kinds in order, their count (a split or a join), their texts (CER block by
block) and their order (a block whose text matches another position's).
A page whose kinds, count and order agree and whose blocks' texts are
within ``--noise`` CER is "same"; its text differences are the recognizer's.

    python bench/runtimes.py                      # real corpus and generated pages
    python bench/runtimes.py --set generated      # generated pages only (a minute or two)
    python bench/runtimes.py --keep /tmp/rt       # also write each page as recognized (lines, regions)
                                                  # and laid out, per runtime, to replay layout on them

With ``--keep``, ``DIR/<doc>/<runtime>/p<N>.json`` holds ``{"page": the
recognized page before layout, "neighbors": the pages furniture was found
against, "laid_out": the result}``: ``lay_out(Page(**page), neighbors)``
(longdoc.pipeline.layout_group) gives the blocks again without OCR.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from _common import ROOT  # noqa: F401  (puts the checkout on sys.path)

import longdoc.pipeline.document as pipeline_document
from evaluation.metrics import cer
from longdoc.config import load_settings
from longdoc.model import Document, Page
from longdoc.pipeline import ParseOptions, Pipeline

REAL = Path.home() / ".cache" / "longdoc" / "real-corpus"
RUNTIMES = ("onnxruntime", "openvino")
#: a block whose text differs by more than this CER is not the same block (an order flip, a split)
SAME_BLOCK = 0.5


# --- inputs ------------------------------------------------------------------------------


def real_pages(count: int) -> list[tuple[str, Path, str]]:
    """``(name, scan, page range)``: per scan of the real corpus, two pairs
    of facing pages, a third and two thirds of the way in."""
    import pypdfium2 as pdfium

    out = []
    for scan in sorted(REAL.glob("*.scan.pdf")):
        n = len(pdfium.PdfDocument(str(scan)))
        starts = sorted({max(1, min(n - 1, round(n * f))) for f in (1 / 3, 2 / 3)})
        pages = sorted({p for s in starts for p in (s, s + 1) if p <= n})[:count]
        out.append((scan.name.removesuffix(".scan.pdf"), scan, ",".join(map(str, pages))))
    return out


def generated_pages(folder: Path) -> list[tuple[str, Path, str | None]]:
    """``(name, scan, None)`` for each generated document, office-scanned."""
    from tests.docgen import code_listing, english_report, side_note, two_column
    from tests.docgen.continued import numbered_list
    from tests.docgen.layouts import bordered_table, borderless_table, two_columns_figure
    from tests.docgen.manuals import contents_page, index_page
    from tests.docgen.raster import office_scan

    makers: dict[str, Callable[[Path], object]] = {
        "english_report": lambda d: english_report(d, pages=3),
        "two_column": lambda d: two_column(d, pages=2),
        "code_listing": code_listing,
        "bordered_table": bordered_table,
        "borderless_table": borderless_table,
        "two_columns_figure": two_columns_figure,
        "contents_page": contents_page,
        "index_page": index_page,
        "numbered_list": numbered_list,
        "side_note": side_note,
    }
    out = []
    for seed, (name, make) in enumerate(makers.items()):
        d = folder / name
        d.mkdir(parents=True, exist_ok=True)
        born = make(d).pdf_path  # type: ignore[attr-defined]
        office_scan(born, d / "scan.pdf", seed=seed)
        out.append((name, d / "scan.pdf", None))
    return out


# --- parsing -----------------------------------------------------------------------------


@contextmanager
def recording() -> Iterator[dict[int, tuple[Page, list[Page]]]]:
    """Record each page as layout receives it (recognized, not laid out)
    and the neighbours its furniture is found against."""
    seen: dict[int, tuple[Page, list[Page]]] = {}
    original = pipeline_document.layout_pages

    def layout_pages(owned, available):
        numbers = sorted(available)
        for n in owned:
            pos = numbers.index(n)
            seen[n] = (available[n], [available[m] for m in numbers[max(0, pos - 3):pos + 4] if m != n])
        return original(owned, available)

    pipeline_document.layout_pages = layout_pages
    try:
        yield seen
    finally:
        pipeline_document.layout_pages = original


def parse(pipeline: Pipeline, scan: Path, pages: str | None, out: Path
          ) -> tuple[dict[int, Page], dict[int, tuple[Page, list[Page]]]]:
    options = ParseOptions(pages=pages, ocr="force", dpi=200, page_chunk_size=2, chunk_overlap=1,
                           formats=("json",))
    with recording() as seen:
        result = pipeline.parse(scan, out, options)
    doc = Document.model_validate_json(result.outputs["json"].read_text(encoding="utf-8"))
    return {p.number: p for p in doc.pages}, dict(seen)


# --- comparing ---------------------------------------------------------------------------


def _lines_text(page: Page) -> str:
    return "\n".join(l.text for l in page.lines)


def compare(a: Page, b: Page, raw_a: Page, raw_b: Page, noise: float) -> dict:
    """What differs between one page's blocks on two runtimes."""
    ka, kb = [x.kind.value for x in a.blocks], [x.kind.value for x in b.blocks]
    ta, tb = [x.text for x in a.blocks], [x.text for x in b.blocks]
    diff: dict = {"lines_cer": cer(_lines_text(raw_b), _lines_text(raw_a)),
                  "lines": (len(raw_a.lines), len(raw_b.lines)), "blocks": (len(ka), len(kb))}
    problems = []
    if len(ka) != len(kb):
        problems.append("split/join")
    elif ka != kb:
        problems.append("kinds")
    if len(ta) == len(tb):
        cers = [cer(y, x) for x, y in zip(ta, tb)]
        diff["block_cer_max"] = max(cers, default=0.0)
        moved = [i for i, c in enumerate(cers) if c > SAME_BLOCK and
                 any(cer(tb[j], ta[i]) <= SAME_BLOCK for j in range(len(tb)) if j != i)]
        if moved:
            problems.append("order")
        elif any(c > noise for c in cers):
            problems.append("text")
        diff["worst"] = [(i, ka[i], kb[i], round(c, 3), ta[i][:70], tb[i][:70])
                         for i, c in sorted(enumerate(cers), key=lambda t: -t[1])[:3] if c > 0]
    diff["problems"] = problems
    if problems and problems[0] in ("split/join", "kinds"):
        diff["kinds"] = (ka, kb)
        diff["texts"] = ([t[:50] for t in ta], [t[:50] for t in tb])
    return diff


def dump(keep: Path, name: str, runtime: str, laid: dict[int, Page], seen: dict[int, tuple[Page, list[Page]]]):
    folder = keep / name / runtime
    folder.mkdir(parents=True, exist_ok=True)
    for n, (raw, neighbors) in seen.items():
        (folder / f"p{n}.json").write_text(json.dumps({
            "page": raw.model_dump(mode="json"), "neighbors": [p.model_dump(mode="json") for p in neighbors],
            "laid_out": laid[n].model_dump(mode="json")}))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", choices=("all", "real", "generated"), default="all")
    ap.add_argument("--per-doc", type=int, default=4, help="pages of each real scan (default 4)")
    ap.add_argument("--only", nargs="*", default=(), help="documents by name (e.g. memman two_column)")
    ap.add_argument("--noise", type=float, default=0.02, help="a block's CER up to this is the recognizer's noise")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--keep", type=Path, help="write each page as recognized and laid out here")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        inputs: list[tuple[str, Path, str | None]] = []
        if args.set in ("all", "real"):
            inputs += real_pages(args.per_doc)
        if args.set in ("all", "generated"):
            inputs += generated_pages(tmp / "gen")
        if args.only:
            inputs = [i for i in inputs if i[0] in args.only]
        pipelines = {rt: Pipeline(load_settings(overrides={"inference": {
            "backend": rt, "workers": args.workers, "page_chunk_size": 2, "chunk_overlap": 1}}))
            for rt in RUNTIMES}
        tally: dict[str, int] = {}
        pages_total = 0
        try:
            for name, scan, pages in inputs:
                results = {}
                for rt, pipeline in pipelines.items():
                    t0 = time.perf_counter()
                    results[rt] = parse(pipeline, scan, pages, tmp / "out" / name / rt)
                    if args.keep:
                        dump(args.keep, name, rt, *results[rt])
                    print(f"# {name} {pages or 'all'} {rt}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
                (la, sa), (lb, sb) = results["onnxruntime"], results["openvino"]
                for n in sorted(la):
                    pages_total += 1
                    d = compare(la[n], lb[n], sa[n][0], sb[n][0], args.noise)
                    verdict = ",".join(d["problems"]) or "same"
                    tally[verdict] = tally.get(verdict, 0) + 1
                    print(f"{name} p{n}: {verdict}  lines {d['lines'][0]}/{d['lines'][1]} "
                          f"line CER {d['lines_cer']:.4f}  blocks {d['blocks'][0]}/{d['blocks'][1]}"
                          + (f"  block CER max {d['block_cer_max']:.3f}" if "block_cer_max" in d else ""))
                    if d["problems"]:
                        for key in ("kinds", "texts", "worst"):
                            if key in d:
                                print(f"    {key}: {d[key]}")
                    sys.stdout.flush()
        finally:
            for p in pipelines.values():
                p.close()
    print(f"\n{pages_total} pages: " + ", ".join(f"{k} {v}" for k, v in sorted(tally.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
