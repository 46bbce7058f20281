"""`make bench`: every benchmark script with the arguments bench/results/ quotes,
one after another (each prints its own ratios against a baseline from the
same run). Takes several minutes; the dev-set CER table needs ../shared."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUNS = [
    ["pipeline_vs_bare.py", "--pages", "12", "--rounds", "2"],
    ["memory.py"],
    ["sandbox.py"],
    ["cer_devset.py", "--max-pages", "20"],
    ["reading_quality.py", "--max-pages", "20"],
    ["spacing.py"],
    ["vs_ocrmypdf.py", "--rounds", "2"],
    ["recognizers.py"],
    ["worker_memory.py"],
    ["kv_scaling.py", "--json", "kv_scaling.json", "--png", "kv_scaling.png"],
    ["service_load.py", "--clients", "8", "--per-client", "4", "--scans", "4", "--jobs", "0"],
    ["fleet.py", "--json", "bench/results/fleet.json"],
    ["long_job.py", "--rounds", "2", "--chunks", "4,16"],
]


def main() -> int:
    worst = 0
    for args in RUNS:
        print(f"\n$ python bench/{' '.join(args)}", flush=True)
        worst = max(worst, subprocess.call([sys.executable, str(HERE / args[0]), *args[1:]], cwd=HERE.parent))
    return worst


if __name__ == "__main__":
    sys.exit(main())
