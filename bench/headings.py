"""Headings found on real pages read by OCR, against the dev set's Markdown ground truth.

Every file of ../shared/eval/dev/MANIFEST.tsv whose ground truth is a
Markdown file with headings (``#`` lines; docling's regression snapshots:
silver) is parsed with ``--ocr force`` (its pages rendered and read by OCR,
as a scan would be) by the CLI of one or more checkouts, and the Markdown's
headings are matched to the ground truth's (text similarity ≥ 85 after
case and whitespace are folded). Printed per file and in all: headings
emitted, how many of them are ground-truth headings (precision), and how
many ground-truth headings were found (recall). Heading levels are not
compared (the ground truth's are another tool's).

    python bench/headings.py                          # this checkout
    python bench/headings.py --tree /tmp/before .     # a baseline checkout beside it, same run
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from rapidfuzz import fuzz

from _common import EVAL, ROOT

MATCH = 85


def heading_texts(markdown: str) -> list[str]:
    out = []
    for line in markdown.splitlines():
        m = re.match(r"^#{1,6}\s+(.*)", line.strip())
        if m:
            out.append(re.sub(r"\s+", " ", m.group(1)).strip().lower())
    return out


def files() -> list[tuple[Path, Path]]:
    with (EVAL / "MANIFEST.tsv").open() as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    out = []
    for row in rows:
        gt = EVAL / row["gt_path"] if row["gt_path"] else None
        if gt and gt.suffix == ".md" and gt.is_file() and heading_texts(gt.read_text()) \
                and row["path"].endswith(".pdf"):
            out.append((EVAL / row["path"], gt))
    return out


def parse(tree: Path, pdf: Path, out: Path) -> str:
    # run from the tree: ``python -m`` puts the working directory first on sys.path
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run([sys.executable, "-m", "longdoc.cli", "parse", str(pdf), "--ocr", "force", "-o", str(out),
                    "--format", "md", "-q"], env=env, cwd=tree, capture_output=True, timeout=1800)
    md = out / (pdf.stem + ".md")
    return md.read_text() if md.is_file() else ""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tree", action="append", type=Path, help="a checkout to run (repeatable; default: this one)")
    p.add_argument("trees", nargs="*", type=Path)
    a = p.parse_args()
    trees = [t.resolve() for t in (a.tree or []) + a.trees] or [ROOT]
    pairs = files()
    totals = {t: [0, 0, 0] for t in trees}
    wanted = 0
    print("file | ground-truth headings | " + " | ".join(f"{t.name}: emitted, right, found" for t in trees))
    with tempfile.TemporaryDirectory() as tmp:
        for pdf, gt in pairs:
            truth = heading_texts(gt.read_text())
            wanted += len(truth)
            row = [pdf.name, str(len(truth))]
            for i, tree in enumerate(trees):
                got = heading_texts(parse(tree, pdf, Path(tmp) / str(i)))
                right = sum(any(fuzz.ratio(g, t) >= MATCH for t in truth) for g in got)
                found = sum(any(fuzz.ratio(g, t) >= MATCH for g in got) for t in truth)
                for k, v in enumerate((len(got), right, found)):
                    totals[tree][k] += v
                row.append(f"{len(got)}, {right}, {found}")
            print(" | ".join(row), flush=True)
    for tree, (emitted, right, found) in totals.items():
        print(f"{tree}: headings emitted {emitted}, ground-truth headings among them {right} "
              f"(precision {right / max(emitted, 1):.2f}); ground-truth headings found {found} of {wanted} "
              f"(recall {found / max(wanted, 1):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
