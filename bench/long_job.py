"""One long born-digital job through a served process: what a job's tasks
cost between its pages, against a baseline tree, in one run.

A ``longdoc serve`` (embedded, SQLite, a local store, ``service.warmup``
off, ``inference.workers`` 1, the served tests' config) reads a
``--pages``-page born-digital PDF (``tests.docgen.long_textlayer``, every
page running text: no region model, no OCR) at each ``--chunks`` page
group size with ``chunk_overlap`` 1: ingest, a render and a group task per
group, assemble. Printed per run: the wall time from submit to the job's
end, the tasks' summed run time by kind (from ``job_tasks``) and the
server's CPU time.

With ``--baseline-tree PATH`` (a checkout of another commit, e.g. ``git
worktree add /tmp/base HEAD~3``) the same job also runs on that tree's
``longdoc`` (``PYTHONPATH``), the two alternating for ``--rounds`` rounds;
the last line is the ratio of the medians, this tree / baseline, per chunk
size (below 1: this tree is faster).

    python bench/long_job.py [--pages 600] [--chunks 4,16] [--rounds 2] [--baseline-tree PATH]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

import psutil

from _common import ROOT

from tests.docgen import long_textlayer
from tests.service.conftest import Server
from tests.service.helpers import accepted, submit, wait_terminal


def run_job(doc: Path, chunk: int, tree: Path | None) -> dict:
    """One server on ``tree``'s longdoc (None: this checkout), one job; its figures."""
    saved = os.environ.get("PYTHONPATH")
    if tree is not None:
        os.environ["PYTHONPATH"] = str(tree)
    root = Path(tempfile.mkdtemp(prefix="long-job-"))
    try:
        srv = Server(root, None, service={"warmup": False},
                     inference={"page_chunk_size": chunk, "chunk_overlap": 1}).start()
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    try:
        key = srv.create_key("bench", rate_limit=100_000)
        with srv.http(key) as http:
            started = time.monotonic()
            job = accepted(submit(http, doc, {"formats": ["txt", "json"]}))
            final = wait_terminal(http, job["id"], timeout=1800)
            wall = time.monotonic() - started
        assert final["state"] == "succeeded", final
        cpu = sum(psutil.Process(srv.proc.pid).cpu_times()[:2])
    finally:
        srv.stop()
    tasks: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    with sqlite3.connect(root / "data" / "longdoc.db") as con:
        for name, st, fin in con.execute("select name, started_at, finished_at from job_tasks"):
            kind = name.split(":")[0]
            tasks[kind][0] += 1
            tasks[kind][1] += (datetime.fromisoformat(fin) - datetime.fromisoformat(st)).total_seconds()
    return {"wall": wall, "cpu": cpu, "tasks": dict(tasks)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=600)
    ap.add_argument("--chunks", default="4,16", help="page group sizes, comma-separated")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--baseline-tree", type=Path, default=None)
    args = ap.parse_args()
    chunks = [int(c) for c in args.chunks.split(",")]
    folder = Path(tempfile.mkdtemp(prefix="long-job-doc-"))
    doc = long_textlayer(folder, pages=args.pages, seed=5).pdf_path
    trees = {"this": None} | ({"baseline": args.baseline_tree.resolve()} if args.baseline_tree else {})
    walls: dict[tuple[str, int], list[float]] = defaultdict(list)
    print(f"{args.pages} born-digital pages, served (embedded, SQLite); this tree: {ROOT}")
    for r in range(args.rounds):
        order = list(trees.items()) if r % 2 == 0 else list(reversed(trees.items()))
        for chunk in chunks:
            for label, tree in order:
                got = run_job(doc, chunk, tree)
                walls[(label, chunk)].append(got["wall"])
                kinds = "  ".join(f"{k} {n}×{s / n * 1000:.0f} ms" for k, (n, s) in sorted(got["tasks"].items()))
                print(f"round {r + 1}  {label:8s} chunk {chunk:3d}: {got['wall']:6.2f} s wall, server CPU "
                      f"{got['cpu']:6.2f} s  |  {kinds}", flush=True)
    for chunk in chunks:
        this = statistics.median(walls[("this", chunk)])
        line = f"chunk {chunk}: this tree {this:.2f} s ({args.pages / this:.1f} pages/s)"
        if args.baseline_tree:
            base = statistics.median(walls[("baseline", chunk)])
            line += f", baseline {base:.2f} s, ratio this/baseline {this / base:.2f}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
