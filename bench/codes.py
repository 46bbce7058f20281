"""Code-like tokens read exactly? tiny, small and the cascade side by side.

The set (``tests/docgen/codes.py``): part numbers, invoice ids, IBANs
(grouped and not), hexadecimal ids, mixed-case keys and serials of
look-alike characters, one per line after a label, one page per font and
size (8 real fonts: Liberation Sans / Serif / Mono, Carlito, DejaVu Sans /
Serif / Sans Mono, FreeSerif; 8, 10 and 12 pt), 21 lines a page; scanned
as an office scanner would (200 dpi grey, ±0.6° skew, JPEG quality 75).

Each recognizer reads the whole set through ``longdoc parse`` (the
pipeline users get, ``inference.rapidocr.recognizer`` set through the environment;
``cascade`` is the default engine). A token counts when it stands in its
page's text exactly (every block of the JSON, running footers included;
runs of whitespace as one space). Printed: tokens read
exactly per recognizer, by kind and by font, the misreadings of the
default engine, and seconds of each run (ratio to small).

    python bench/codes.py [--per-page 21] [--seed 0] [--recognizers tiny,small,cascade,cascade+int8] [--ocrmypdf]
    python bench/codes.py --recognizers fast,balanced,accurate   # the profiles (inference.profile)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from _common import ROOT

from longdoc.config import PROFILES
from tests.docgen.codes import CodeLine, code_pages
from tests.docgen.raster import office_scan


def read_longdoc(scan: Path, work: Path, recognizer: str) -> tuple[float, list[str]]:
    """Seconds, and per page every block's text in reading order (running
    headers and footers included: a form's last line repeated on every
    page is furniture, and still read)."""
    out = work / recognizer
    shutil.rmtree(out, ignore_errors=True)
    name, _, int8 = recognizer.partition("+")  # "cascade+int8": with the int8 small recognizer
    if name in PROFILES:  # a profile's bundle (inference.profile), not one recognizer
        env = {**os.environ, "LONGDOC_INFERENCE__PROFILE": name}
    else:
        env = {**os.environ, "LONGDOC_INFERENCE__RAPIDOCR__RECOGNIZER": name,
               "LONGDOC_INFERENCE__RAPIDOCR__INT8": str(int8 == "int8").lower()}
    cmd = [str(Path(sys.executable).parent / "longdoc"), "parse", str(scan), "-o", str(out), "--format", "json",
           "-q"]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - t0
    document = json.loads((out / f"{scan.stem}.json").read_text(encoding="utf-8"))
    return seconds, ["\n".join(b["text"] for b in sorted(p["blocks"], key=lambda b: b["order"]))
                     for p in document["pages"]]


def read_ocrmypdf(scan: Path, work: Path) -> tuple[float, list[str]]:
    sidecar = work / "ocrmypdf.txt"
    cmd = [str(Path(sys.executable).parent / "ocrmypdf"), "-j", str(os.cpu_count() or 1), "-l", "eng", "--force-ocr",
           "--output-type", "pdf", "--sidecar", str(sidecar), "-q", str(scan), str(work / "ocrmypdf.pdf")]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env={**os.environ, "OMP_THREAD_LIMIT": "1"})
    return time.perf_counter() - t0, sidecar.read_text(encoding="utf-8").split("\f")


def exact(line: CodeLine, pages: list[str]) -> bool:
    text = " ".join(pages[line.page - 1].split()) if line.page <= len(pages) else ""
    return " ".join(line.token.split()) in text


def misread(line: CodeLine, pages: list[str]) -> str:
    """What stands after the token's label on its page (as many words as the token has)."""
    text = " ".join(pages[line.page - 1].split()) if line.page <= len(pages) else ""
    at = text.find(f"{line.label} ")
    while at >= 0:
        rest = text[at + len(line.label) + 1:].split(" ")
        guess = " ".join(rest[:len(line.token.split())])
        if sum(a == b for a, b in zip(guess, line.token)) >= len(line.token) / 2:
            return guess
        at = text.find(f"{line.label} ", at + 1)
    return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-page", type=int, default=21)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--recognizers", default="tiny,small,cascade")
    ap.add_argument("--ocrmypdf", action="store_true", help="OCRmyPDF (Tesseract) too, for reference")
    ap.add_argument("--keep", type=Path)
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="codes-"))
    work.mkdir(parents=True, exist_ok=True)
    truth = code_pages(work / "codes.born.pdf", per_page=args.per_page, seed=args.seed)
    scan = work / "codes.pdf"
    office_scan(work / "codes.born.pdf", scan, seed=args.seed)
    pages = max(t.page for t in truth)
    print(f"{len(truth)} tokens on {pages} pages (200 dpi grey, ±0.6°, JPEG 75)", flush=True)
    runs: dict[str, tuple[float, list[str]]] = {}
    names = [r for r in args.recognizers.split(",") if r]
    subprocess.run([str(Path(sys.executable).parent / "longdoc"), "parse", str(scan), "--pages", "1", "-o",
                    str(work / "warm"), "-q"], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    for name in names:
        runs[name] = read_longdoc(scan, work, name)
    if args.ocrmypdf:
        runs["ocrmypdf"] = read_ocrmypdf(scan, work)
    cols = list(runs)
    print(f"\n{'':<18}" + "".join(f"{c:>12}" for c in cols))
    ok = {c: [exact(t, runs[c][1]) for t in truth] for c in cols}
    print(f"{'exact':<18}" + "".join(f"{sum(ok[c]):>8}/{len(truth):<3}" for c in cols))
    print(f"{'share':<18}" + "".join(f"{sum(ok[c]) / len(truth):>12.2%}" for c in cols))
    base = runs.get("small", next(iter(runs.values())))[0]
    print(f"{'seconds':<18}" + "".join(f"{runs[c][0]:>12.1f}" for c in cols))
    print(f"{'vs small':<18}" + "".join(f"{base / runs[c][0]:>11.2f}x" for c in cols))
    for key, title in ((lambda t: t.kind, "by kind"), (lambda t: t.font, "by font"), (lambda t: f"{t.size:g} pt", "by size")):
        groups: dict[str, list[int]] = defaultdict(list)
        for i, t in enumerate(truth):
            groups[key(t)].append(i)
        print(f"\n{title}")
        for group, idx in groups.items():
            print(f"  {group:<16}" + "".join(f"{sum(ok[c][i] for i in idx):>8}/{len(idx):<3}" for c in cols))
    default = "cascade" if "cascade" in runs else cols[0]
    wrong = [t for t, good in zip(truth, ok[default]) if not good]
    if wrong:
        print(f"\n{default} misread {len(wrong)}:")
        for t in wrong[:40]:
            print(f"  p{t.page:<3} {t.font:<15} {t.size:>4g} pt  {t.token!r:<32} -> {misread(t, runs[default][1])!r}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
