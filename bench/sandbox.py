"""What the document sandbox costs and what it saves, in one run.

1. Overhead: the same pages read and rendered in this process
   (``open_document``) and through the sandbox (``open_sandboxed``), order
   alternated; prints pages/s of each and the ratio.
2. A compressed-stream bomb (one page whose content inflates to
   ``--bomb-mib`` MiB): the peak memory of a process that reads it in
   process (a child, so this one survives) against this process's memory
   while the sandbox reads it.

    python bench/sandbox.py [--pages 20] [--rounds 3] [--dpi 200] [--bomb-mib 1024]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from _common import ROOT, TreeRssSampler  # noqa: F401  (ROOT puts the repo on sys.path)

from longdoc.config import LimitSettings
from longdoc.errors import LongdocError
from longdoc.ingest.open import open_document
from longdoc.ingest.sandbox import open_sandboxed
from tests.docgen import english_report
from tests.ingest.files import good_page, pdf_with_pages, stream_bomb_page


def read_all(source, pages: int, dpi: int) -> None:
    for page in range(1, pages + 1):
        source.text_layer(page)
        source.render(page, dpi).image.close()


def overhead(path: Path, pages: int, rounds: int, dpi: int) -> None:
    limits = LimitSettings()
    times = {"in process": [], "sandbox": []}
    for r in range(rounds):
        order = ["in process", "sandbox"] if r % 2 == 0 else ["sandbox", "in process"]
        for how in order:
            t0 = time.perf_counter()
            opener = open_document if how == "in process" else open_sandboxed
            with opener(path, limits) as source:
                read_all(source, pages, dpi)
            times[how].append(time.perf_counter() - t0)
    best = {how: min(t) for how, t in times.items()}
    for how, seconds in best.items():
        print(f"  {how:<12} {pages / seconds:7.1f} pages/s  (best of {rounds}: {seconds:.2f} s)")
    print(f"  ratio sandbox/in-process pages/s: {best['in process'] / best['sandbox']:.3f}")


CHILD = """
import sys
from longdoc.config import LimitSettings
from longdoc.ingest.open import open_document
with open_document(sys.argv[1], LimitSettings()) as s:
    s.text_layer(2)
"""


def bomb(path: Path, mib: int) -> None:
    print(f"  file: {path.stat().st_size / 2**20:.2f} MiB on disk, page 2 inflates to {mib} MiB")
    t0 = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], cwd=ROOT)
    with TreeRssSampler(child.pid, interval=0.02) as sampler:
        child.wait()
    print(f"  in process:  peak RSS {sampler.peak / 2**20:7.0f} MiB of the reading process, "
          f"{time.perf_counter() - t0:.1f} s (exit status {child.returncode})")
    me = psutil.Process()
    before = me.memory_info().rss
    limits = LimitSettings(worker_memory_mb=256)
    t0 = time.perf_counter()
    with TreeRssSampler(me.pid, interval=0.02) as tree, open_sandboxed(path, limits) as source:
        try:
            source.text_layer(2)
            outcome = "read"
        except LongdocError as exc:
            outcome = exc.code
        source.text_layer(3)
    grown = me.memory_info().rss - before
    print(f"  sandboxed:   this process +{grown / 2**20:.0f} MiB, its tree peak {tree.peak / 2**20:.0f} MiB, "
          f"{time.perf_counter() - t0:.1f} s, page 2 → {outcome}, page 3 read")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dpi", type=int, default=200)
    ap.add_argument("--bomb-mib", type=int, default=1024)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        doc = english_report(Path(tmp), pages=args.pages)
        print(f"1. read + render {args.pages} born-digital pages at {args.dpi} dpi")
        overhead(doc.pdf_path, args.pages, args.rounds, args.dpi)
        print("2. compressed-stream bomb")
        path = pdf_with_pages(Path(tmp) / "bomb.pdf", [good_page(1), stream_bomb_page(args.bomb_mib), good_page(3)])
        bomb(path, args.bomb_mib)


if __name__ == "__main__":
    main()
