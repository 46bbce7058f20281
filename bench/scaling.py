"""Pages/s against cores, and several documents at once against one by one.

Part 1 — cores. The same real scanned documents (``bench/real_corpus.py``;
``--only``, ``--max-pages``) read with 1 core and with every core:

- ``longdoc parse`` (``--profile``, ``inference.workers`` = cores), the whole
  process tree pinned to the cores with ``taskset``;
- ``ocrmypdf -j <cores> --force-ocr`` (Tesseract, ``OMP_THREAD_LIMIT=1``),
  pinned alike.

Printed per tool and core count: seconds, pages/s, and the speed-up of N
cores over one; and longdoc's pages/s as a ratio to OCRmyPDF's at the same
core count (both measured in this run, alternated).

Part 2 — several documents at once. One :class:`~longdoc.pipeline.Pipeline`
(what the embedded service runs its jobs through: one engine, its workers
shared by every job) reads the documents one after the other, then all at
once from one thread each (as ``service.max_concurrency`` jobs would).
Printed: pages/s of each and the ratio; every document's text must be the
same both ways (checked).

    python bench/scaling.py [--profile balanced] [--only ltnews,memman] [--max-pages 10]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _common import ROOT

from real_corpus import build
from real_docs import prefix


def _pinned(cores: int) -> list[str]:
    return ["taskset", "-c", ",".join(str(c) for c in range(cores))]


def run_longdoc(scans: list[Path], out: Path, cores: int, profile: str) -> float:
    env = {**os.environ, "LONGDOC_INFERENCE__WORKERS": str(cores), "LONGDOC_INFERENCE__PROFILE": profile}
    t0 = time.perf_counter()
    for scan in scans:
        shutil.rmtree(out / ".longdoc" / scan.stem, ignore_errors=True)
        subprocess.run([*_pinned(cores), str(Path(sys.executable).parent / "longdoc"), "parse", str(scan), "-o",
                        str(out), "--format", "json,txt", "-q"], check=True, cwd=ROOT, env=env,
                       stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def run_ocrmypdf(scans: list[Path], out: Path, cores: int) -> float:
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    t0 = time.perf_counter()
    for scan in scans:
        subprocess.run([*_pinned(cores), str(Path(sys.executable).parent / "ocrmypdf"), "-j", str(cores), "-l",
                        "eng", "--force-ocr", "--output-type", "pdf", "--sidecar", str(out / f"{scan.stem}.txt"),
                        "-q", str(scan), str(out / f"{scan.stem}.pdf")], check=True, env=env)
    return time.perf_counter() - t0


def cores_part(scans: list[Path], pages: int, work: Path, profile: str) -> None:
    counts = sorted({1, os.cpu_count() or 1})
    seconds: dict[tuple[str, int], float] = {}
    for i, cores in enumerate(counts):
        tools = [("ocrmypdf", lambda c=cores: run_ocrmypdf(scans, work / f"o{c}", c)),
                 (f"longdoc {profile}", lambda c=cores: run_longdoc(scans, work / f"l{c}", c, profile))]
        for folder in (work / f"o{cores}", work / f"l{cores}"):
            folder.mkdir(exist_ok=True)
        for name, run in (tools if i % 2 == 0 else tools[::-1]):
            seconds[(name, cores)] = run()
    print(f"\npart 1: {len(scans)} documents, {pages} pages, cores {counts}")
    print(f"{'tool':<22}{'cores':>6}{'seconds':>10}{'pages/s':>10}{'speed-up':>10}{'/ ocrmypdf':>12}")
    for (name, cores), s in seconds.items():
        base = seconds[(name, 1)]
        ocr = seconds[("ocrmypdf", cores)]
        print(f"{name:<22}{cores:>6}{s:>10.1f}{pages / s:>10.2f}{base / s:>9.2f}x{ocr / s:>11.2f}x")


def concurrent_part(scans: list[Path], pages: int, work: Path, profile: str) -> None:
    sys.path.insert(0, str(ROOT))
    from longdoc.config import load_settings
    from longdoc.pipeline import ParseOptions, Pipeline

    settings = load_settings(overrides={"inference": {"profile": profile}})
    options = ParseOptions.from_settings(settings, formats=("json", "txt"))
    texts: dict[str, dict[str, str]] = {"one by one": {}, "at once": {}}
    with Pipeline(settings) as pipeline:
        pipeline.host.engine(settings.inference.engine)  # loaded before either clock starts, as in a running service

        def parse(scan: Path, out: Path, into: dict[str, str]) -> None:
            pipeline.parse(scan, out, options, owner=scan.stem)
            into[scan.stem] = (out / f"{scan.stem}.txt").read_text(encoding="utf-8")

        t0 = time.perf_counter()
        for scan in scans:
            parse(scan, work / "serial", texts["one by one"])
        serial = time.perf_counter() - t0
        t0 = time.perf_counter()
        threads = [threading.Thread(target=parse, args=(scan, work / "concurrent", texts["at once"]))
                   for scan in scans]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        together = time.perf_counter() - t0
    same = texts["one by one"] == texts["at once"]
    print(f"\npart 2: one Pipeline ({profile}, {settings.inference.effective_workers()} workers), {len(scans)} documents, "
          f"{pages} pages")
    print(f"  one by one: {serial:.1f} s, {pages / serial:.2f} pages/s")
    print(f"  at once:    {together:.1f} s, {pages / together:.2f} pages/s ({serial / together:.2f}x); "
          f"same text both ways: {same}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="balanced")
    ap.add_argument("--only", default="ltnews,memman,listings")
    ap.add_argument("--max-pages", type=int, default=10, help="first N pages of each document")
    ap.add_argument("--skip-cores", action="store_true")
    ap.add_argument("--skip-concurrent", action="store_true")
    args = ap.parse_args()
    if shutil.which("taskset") is None:
        print("taskset (util-linux) is needed", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="scaling-"))
    docs = [d for d in build() if any(part in d.name for part in args.only.split(","))]
    docs = [prefix(d, args.max_pages, work) for d in docs]
    scans, pages = [d.scan for d in docs], sum(d.pages for d in docs)
    print(f"{len(docs)} documents, {pages} pages; {os.cpu_count()} cores; profile {args.profile}", flush=True)
    if not args.skip_cores:
        cores_part(scans, pages, work, args.profile)
    if not args.skip_concurrent:
        concurrent_part(scans, pages, work, args.profile)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
