"""Reading quality on the dev set, with the region models (layout + table
structure) on and off — the "off" run is the baseline of the same run.

1. olmOCR-bench pass rate by test kind (present/absent/order/table/baseline):
   every dev PDF with a ``*.tests.jsonl`` beside it, ``ocr=auto``; each test
   runs (:func:`evaluation.metrics.run_olmocr_test`) on its page's Markdown (the
   export's ``<!-- page N -->`` sections).
2. CER on gold-tier pages (ground truth loaded as bench/cer_devset.py does,
   plus the HTML source of gold HTML ground truth), ``ocr=auto``: of the
   Markdown export (main text, furniture left out) and of every block in
   reading order (furniture included).
3. Table cells against docling's ground truth (``docling/pdf/*.gt.json``),
   ``ocr=auto``: each ground-truth table is paired with the predicted table
   block of the same page sharing the most words (one to one, greedy; none
   when no word is shared). A ground-truth cell with text is correct when the
   predicted table has a cell starting at the same (row, col) — after one
   row/column offset per table, chosen to maximize matches — whose
   whitespace-normalized, case-folded text has rapidfuzz ratio >= 90.
4. Speed: pages/s of ``Pipeline.parse`` (fresh output folder, no resume)
   with regions on and off on (a) born-digital pages with ``ocr=auto`` and
   (b) scans with ``ocr=force`` (the first ``--speed-pages`` pages of a
   born-digital PDF forced through OCR, plus the first ``--scan-pages`` of
   every dev scan), after a warm-up (born-digital: its first
   ``--born-pages`` pages); and the region models' share of OCR
   time on scans: sum of page ``timings["regions"]`` / sum of
   ``timings["recognize"]`` (the OCR engine; rendering for OCR is printed
   beside it). Rounds alternate the order; the median is printed.

5. Generated layouts with exact truth (``tests/docgen/layouts.py``), born-digital
   and scanned at 200 dpi, regions on and off: tables found, cells right
   (``tests/docgen/table_score.py``), phrase pairs in order, furniture
   strings leaked into the Markdown.

Nothing is asserted; zero tables found is a valid result.

    [LONGDOC_INFERENCE__PROFILE=fast|balanced|accurate] python bench/reading_quality.py [--max-pages 20] [--only SUBSTRING] [--skip-speed]
                                    [--born-pages 12] [--speed-pages 4] [--scan-pages 1] [--rounds 1]
                                    [--generated-only]
"""

from __future__ import annotations

import argparse
import csv
import html
import json
import re
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz

from _common import EVAL

from cer_devset import clean, ground_truth
from evaluation.metrics import cer, load_olmocr_tests, normalize_ws, order_ok, run_olmocr_test
from longdoc.config import load_settings
from longdoc.pipeline import ParseOptions, Pipeline

KINDS = ("present", "absent", "order", "table", "baseline")
MODES = (("on", True), ("off", False))
SPEED_DOC = "pymupdf/test_3842.pdf"  # born-digital, figures and tables
_PAGE_MARK = re.compile(r"<!-- page (\d+) -->")


# --- running the pipeline -------------------------------------------------------


class Runner:
    """Parses into fresh folders (so nothing resumes) and keeps the results of
    parts 1-3 by (file, pages, ocr, regions)."""

    def __init__(self, pipeline: Pipeline, tmp: Path) -> None:
        self.pipeline = pipeline
        self.tmp = tmp
        self.count = 0
        self.cache: dict[tuple, tuple[str, dict[str, Any], float]] = {}

    def parse(self, pdf: Path, pages: str | None, ocr: str, regions: bool) -> tuple[str, dict[str, Any], float]:
        """(Markdown, JSON document, wall seconds), uncached."""
        self.count += 1
        out = self.tmp / f"run{self.count}"
        # from the settings: their profile (LONGDOC_INFERENCE__PROFILE) reads, regions as asked
        options = ParseOptions.from_settings(self.pipeline.settings, pages=pages, ocr=ocr, regions=regions, dpi=200,
                                             formats=("md", "json"))
        t0 = time.perf_counter()
        result = self.pipeline.parse(pdf, out, options)
        seconds = time.perf_counter() - t0
        md = result.outputs["md"].read_text(encoding="utf-8")
        doc = json.loads(result.outputs["json"].read_text(encoding="utf-8"))
        return md, doc, seconds

    def cached(self, pdf: Path, pages: int, regions: bool) -> tuple[str, dict[str, Any]]:
        key = (pdf, pages, regions)
        if key not in self.cache:
            self.cache[key] = self.parse(pdf, f"1-{pages}", "auto", regions)
        md, doc, _ = self.cache[key]
        return md, doc


def page_markdown(md: str) -> dict[int, str]:
    """The Markdown export cut at its ``<!-- page N -->`` markers."""
    parts = _PAGE_MARK.split(md)
    return {int(parts[i]): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def all_blocks_text(doc: dict[str, Any]) -> str:
    return "\n".join(b["text"] for p in doc["pages"] for b in sorted(p["blocks"], key=lambda b: b["order"]))


def fmt_rate(passed: int, total: int) -> str:
    return f"{passed}/{total} ({100 * passed / total:.0f}%)" if total else "-"


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


# --- 1. olmOCR-bench tests -----------------------------------------------------------


def olmocr_tests(runner: Runner, rows: list[dict[str, str]], max_pages: int) -> None:
    print("\n== 1. olmOCR-bench tests (ocr=auto), passed/total ==")
    print(f"{'file':<60}{'tests':>6}{'regions on':>16}{'regions off':>16}")
    by_kind = {mode: {k: [0, 0] for k in KINDS} for mode, _ in MODES}
    for row in rows:
        pdf = EVAL / row["path"]
        jsonl = pdf.with_name(pdf.name.removesuffix(".pdf") + ".tests.jsonl")
        if not jsonl.is_file():
            continue
        pages = min(int(row["pages"]), max_pages)
        tests = [t for t in load_olmocr_tests(jsonl) if t.get("pdf") in (None, pdf.name)]
        tests = [t for t in tests if int(t.get("page", 1)) <= pages]
        if not tests:
            continue
        cells = []
        for mode, regions in MODES:
            md, _ = runner.cached(pdf, pages, regions)
            sections = page_markdown(md)
            passed = 0
            for test in tests:
                ok, _why = run_olmocr_test(test, sections.get(int(test.get("page", 1)), ""))
                passed += ok
                if test["type"] in by_kind[mode]:
                    by_kind[mode][test["type"]][0] += ok
                    by_kind[mode][test["type"]][1] += 1
            cells.append(fmt_rate(passed, len(tests)))
        print(f"{row['path'][-59:]:<60}{len(tests):>6}{cells[0]:>16}{cells[1]:>16}", flush=True)
    print(f"{'by kind':<60}{'tests':>6}{'regions on':>16}{'regions off':>16}")
    for kind in KINDS:
        total = by_kind["on"][kind][1]
        print(f"{kind:<60}{total:>6}{fmt_rate(*by_kind['on'][kind]):>16}{fmt_rate(*by_kind['off'][kind]):>16}")
    on = [sum(v[i] for v in by_kind["on"].values()) for i in (0, 1)]
    off = [sum(v[i] for v in by_kind["off"].values()) for i in (0, 1)]
    print(f"{'all':<60}{on[1]:>6}{fmt_rate(*on):>16}{fmt_rate(*off):>16}")


# --- 2. CER on gold pages ----------------------------------------------------------------


def gold_truth(row: dict[str, str], pages: int) -> str | None:
    """cer_devset's ground truth, plus the visible text of an HTML source."""
    gt = row["gt_path"]
    if gt.endswith((".html", ".htm")) and (EVAL / gt).is_file() and pages == int(row["pages"]):
        source = (EVAL / gt).read_text(encoding="utf-8", errors="replace")
        source = re.sub(r"<head\b.*?</head>|<script\b.*?</script>|<style\b.*?</style>", " ", source, flags=re.S | re.I)
        return html.unescape(re.sub(r"<[^>]+>", " ", source))
    return ground_truth(row, pages)


def gold_cer(runner: Runner, rows: list[dict[str, str]], max_pages: int) -> None:
    print("\n== 2. CER on gold pages (ocr=auto); md = Markdown export, all = every block ==")
    print(f"{'file':<52}{'pages':>6}{'md on':>9}{'md off':>9}{'all on':>9}{'all off':>9}")
    sums = {k: [] for k in ("md on", "md off", "all on", "all off")}
    for row in rows:
        if not row["notes"].startswith("[gold]") or not row["path"].endswith(".pdf"):
            continue
        pages = min(int(row["pages"]), max_pages)
        truth = gold_truth(row, pages)
        if truth is None:
            continue
        ref = clean(truth)
        values = {}
        for mode, regions in MODES:
            md, doc = runner.cached(EVAL / row["path"], pages, regions)
            values[f"md {mode}"] = cer(clean(md), ref)
            values[f"all {mode}"] = cer(clean(all_blocks_text(doc)), ref)
        for k, v in values.items():
            sums[k].append(v)
        line = "".join(f"{values[k]:>9.3f}" for k in sums)
        print(f"{row['path'][-51:]:<52}{pages:>6}{line}", flush=True)
    if sums["md on"]:
        means = {k: statistics.fmean(v) for k, v in sums.items()}
        print(f"{'mean':<58}" + "".join(f"{means[k]:>9.3f}" for k in sums))
        print(f"ratio on/off (mean CER): md {ratio(means['md on'], means['md off'])}, "
              f"all {ratio(means['all on'], means['all off'])}")


# --- 3. table cells against docling ---------------------------------------------------------


def norm_cell(text: str) -> str:
    return normalize_ws(text).casefold()


def words(texts: list[str]) -> Counter[str]:
    return Counter(w for t in texts for w in norm_cell(t).split())


def cell_accuracy(predicted: list[dict[str, Any]], truth: list[dict[str, Any]]) -> tuple[int, int, tuple[int, int]]:
    """(correct, total, offset): ``truth`` cells (docling ``table_cells``) with text,
    how many the ``predicted`` cells (longdoc ``cells``) get right under the one
    (row, col) offset that gets the most right."""
    gt: dict[tuple[int, int], str] = {}
    for c in truth:
        text = norm_cell(c.get("text") or "")
        if text:
            gt.setdefault((c["start_row_offset_idx"], c["start_col_offset_idx"]), text)
    pred: dict[tuple[int, int], str] = {}
    for c in predicted:
        text = norm_cell(c.get("text") or "")
        if text:
            pred.setdefault((c["row"], c["col"]), text)
    votes: Counter[tuple[int, int]] = Counter()
    for (gr, gc), gt_text in gt.items():
        for (pr, pc), pred_text in pred.items():
            if fuzz.ratio(gt_text, pred_text) >= 90:
                votes[(pr - gr, pc - gc)] += 1
    if not votes:
        return 0, len(gt), (0, 0)
    best = max(votes, key=lambda o: (votes[o], o == (0, 0), -abs(o[0]) - abs(o[1])))
    return votes[best], len(gt), best


def predicted_tables(doc: dict[str, Any]) -> dict[int, list[list[dict[str, Any]]]]:
    """Page number -> the cells of each table block on it."""
    out: dict[int, list[list[dict[str, Any]]]] = {}
    for page in doc["pages"]:
        for block in page["blocks"]:
            if block["kind"] == "table" and block.get("cells"):
                out.setdefault(page["number"], []).append(block["cells"])
    return out


def score_tables(doc: dict[str, Any], gt_tables: list[dict[str, Any]]) -> tuple[int, int, int]:
    """(correct cells, total cells, predicted tables) for one document."""
    predicted = predicted_tables(doc)
    correct = total = 0
    by_page: dict[int, list[dict[str, Any]]] = {}
    for table in gt_tables:
        by_page.setdefault(table["prov"][0]["page_no"], []).append(table)
    for page_no, tables in by_page.items():
        preds = predicted.get(page_no, [])
        overlaps = []
        for i, table in enumerate(tables):
            gt_words = words([c.get("text") or "" for c in table["data"]["table_cells"]])
            for j, cells in enumerate(preds):
                shared = sum((gt_words & words([c.get("text") or "" for c in cells])).values())
                if shared:
                    overlaps.append((shared, i, j))
        pairs: dict[int, int] = {}
        used: set[int] = set()
        for _shared, i, j in sorted(overlaps, reverse=True):
            if i not in pairs and j not in used:
                pairs[i] = j
                used.add(j)
        for i, table in enumerate(tables):
            cells = preds[pairs[i]] if i in pairs else []
            ok, n, _offset = cell_accuracy(cells, table["data"]["table_cells"])
            correct += ok
            total += n
    return correct, total, sum(len(v) for v in predicted.values())


def table_cells(runner: Runner, rows: list[dict[str, str]], max_pages: int) -> None:
    print("\n== 3. table cells vs docling ground truth (ocr=auto), correct/total ==")
    print(f"{'file':<42}{'pages':>6}{'gt tables':>10}{'pred on':>8}{'pred off':>9}"
          f"{'regions on':>16}{'regions off':>16}")
    overall = {mode: [0, 0] for mode, _ in MODES}
    for row in rows:
        gt_path = EVAL / row["gt_path"].replace(".gt.md", ".gt.json")
        if not row["gt_path"].endswith(".gt.md") or not gt_path.is_file():
            continue
        pages = min(int(row["pages"]), max_pages)
        gt_tables = [
            t for t in json.loads(gt_path.read_text(encoding="utf-8")).get("tables", [])
            if t.get("prov") and t["prov"][0]["page_no"] <= pages
        ]
        if not gt_tables:
            continue
        scores = {}
        for mode, regions in MODES:
            _, doc = runner.cached(EVAL / row["path"], pages, regions)
            scores[mode] = score_tables(doc, gt_tables)
            overall[mode][0] += scores[mode][0]
            overall[mode][1] += scores[mode][1]
        on, off = scores["on"], scores["off"]
        print(f"{row['path'][-41:]:<42}{pages:>6}{len(gt_tables):>10}{on[2]:>8}{off[2]:>9}"
              f"{fmt_rate(on[0], on[1]):>16}{fmt_rate(off[0], off[1]):>16}", flush=True)
    on, off = overall["on"], overall["off"]
    print(f"{'overall':<75}{fmt_rate(*on):>16}{fmt_rate(*off):>16}")


# --- 4. speed -------------------------------------------------------------------------------


def speed(runner: Runner, rows: list[dict[str, str]], args: argparse.Namespace) -> None:
    doc_row = next(r for r in rows if r["path"] == SPEED_DOC)
    born = [(EVAL / SPEED_DOC, f"1-{min(int(doc_row['pages']), args.born_pages)}")]
    scans = [(EVAL / SPEED_DOC, f"1-{min(int(doc_row['pages']), args.speed_pages)}")]
    scans += [
        (EVAL / r["path"], f"1-{min(int(r['pages']), args.scan_pages)}")
        for r in rows
        if r["kind"] == "scan" and r["path"].endswith(".pdf") and args.only in r["path"]
    ]
    sets = (("born-digital, ocr=auto", born, "auto"), ("scans, ocr=force", scans, "force"))
    n_scans = len(scans) - 1
    print(f"\n== 4. speed: pages/s, regions on vs off (median of {args.rounds} round(s)) ==")
    print(f"born-digital: {SPEED_DOC} pages {born[0][1]}; scans: {SPEED_DOC} pages {scans[0][1]} forced + "
          f"first {args.scan_pages} page(s) of {n_scans} dev scans")
    # warm up: start the OCR workers and the region models' workers
    runner.parse(EVAL / SPEED_DOC, "1", "force", True)
    runner.parse(EVAL / SPEED_DOC, "1", "auto", False)
    print(f"{'set':<26}{'pages':>6}{'on p/s':>9}{'off p/s':>9}{'on/off':>8}{'regions s':>11}{'recognize s':>13}"
          f"{'render s':>10}{'share':>7}")
    for name, items, ocr in sets:
        rates: dict[str, list[float]] = {"on": [], "off": []}
        stage = Counter()
        pages_n = 0
        for r in range(args.rounds):
            order = MODES if r % 2 else MODES[::-1]  # off first in round 0
            for mode, regions in order:
                pages_n = seconds = 0
                for pdf, pages in items:
                    _, doc, s = runner.parse(pdf, pages, ocr, regions)
                    seconds += s
                    pages_n += len(doc["pages"])
                    if regions and r == 0:
                        for page in doc["pages"]:
                            stage.update({k: v for k, v in page["timings"].items()})
                rates[mode].append(pages_n / seconds)
        on, off = statistics.median(rates["on"]), statistics.median(rates["off"])
        share = ratio(stage["regions"], stage["recognize"]) if stage["recognize"] else "-"
        print(f"{name:<26}{pages_n:>6}{on:>9.3f}{off:>9.3f}{ratio(on, off):>8}{stage['regions']:>11.2f}"
              f"{stage['recognize']:>13.2f}{stage['render']:>10.2f}{share:>7}", flush=True)
    print("share = sum of page timings['regions'] / sum of timings['recognize'] (regions on, first round)")


# --- 5. generated layouts -------------------------------------------------------


def generated(runner: Runner) -> None:
    from tests.docgen.layouts import LAYOUT_GENERATORS
    from tests.docgen.table_score import cell_accuracy as generated_cells

    print("\n== 5. generated layouts: tables found/truth, cells right, phrase pairs in order, furniture leaked ==")
    print(f"{'document':<30}{'regions on':>34}{'regions off':>34}")
    for name, make in LAYOUT_GENERATORS.items():
        for scanned in (False, True):
            folder = runner.tmp / f"gen-{name}-{scanned}"
            doc = make(folder)
            if scanned:
                doc = doc.scan(folder / "scan.pdf", dpi=200)
            cols = []
            for _, regions in MODES:
                md, parsed, _ = runner.parse(doc.pdf_path, None, "force" if scanned else "auto", regions)
                tables = [b.get("cells") or [] for p in parsed["pages"] for b in p["blocks"] if b["kind"] == "table"]
                right = total = 0
                for truth in doc.truth.tables:
                    scores = [generated_cells([(c["row"], c["col"], c["row_span"], c["col_span"], c["text"])
                                               for c in t], truth.cells) for t in tables] or [(0, len(truth.cells))]
                    best = max(scores)
                    right, total = right + best[0], total + best[1]
                pairs = list(zip(doc.truth.order, doc.truth.order[1:]))
                in_order = sum(order_ok(md, a, b, max_diffs=2) for a, b in pairs)
                leaked = sum(normalize_ws(a) in normalize_ws(md) for a in doc.truth.absent)
                cols.append(f"{len(tables)}/{len(doc.truth.tables)} t, {right}/{total} c, "
                            f"{in_order}/{len(pairs)} o, {leaked}/{len(doc.truth.absent)} f")
            label = f"{name} ({'scan' if scanned else 'digital'})"
            print(f"{label:<30}{cols[0]:>34}{cols[1]:>34}", flush=True)
    print("t = tables, c = cells, o = phrase pairs in order, f = furniture strings in the Markdown")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-pages", type=int, default=20, help="pages per file for parts 1-3")
    ap.add_argument("--only", default="", help="only files whose path contains this")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--born-pages", type=int, default=12, help="born-digital pages timed with ocr=auto")
    ap.add_argument("--speed-pages", type=int, default=4, help="born-digital pages forced through OCR")
    ap.add_argument("--scan-pages", type=int, default=1, help="pages of each dev scan timed")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--generated-only", action="store_true", help="only part 5")
    args = ap.parse_args()
    rows = list(csv.DictReader((EVAL / "MANIFEST.tsv").open(encoding="utf-8"), delimiter="\t"))
    chosen = [r for r in rows if args.only in r["path"] and r["path"].endswith(".pdf")]
    settings = load_settings()
    t0 = time.perf_counter()
    with Pipeline(settings) as pipeline, tempfile.TemporaryDirectory() as tmp:
        runner = Runner(pipeline, Path(tmp))
        detector = pipeline.host.region_detector()
        print(f"region models available: {detector.available()}"
              + (f" ({detector.problem})" if detector.problem else "")
              + f"; max {args.max_pages} pages per file")
        if not args.generated_only:
            olmocr_tests(runner, chosen, args.max_pages)
            gold_cer(runner, chosen, args.max_pages)
            table_cells(runner, chosen, args.max_pages)
            if not args.skip_speed:
                speed(runner, rows, args)
        generated(runner)
    print(f"\n{runner.count} parses in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
