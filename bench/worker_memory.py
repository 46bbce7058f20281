"""RSS of the rapidocr engine's worker processes over a long run, with worker
recycling (``recycle_after_pages``) against without, in one invocation.

``--pages`` pages (default 1,000) go through one engine in groups of
``--group`` pages, as the pipeline hands them: A5 pages of English at
200 dpi, and every ``--big-every``-th page a dense A4 page at 300 dpi
(a 26-megapixel image, the kind that makes ONNX Runtime's memory arena
grow; the arena never gives memory back). After each group the RSS of
every worker is read. Printed per mode: the largest worker RSS in each
tenth of the run, and the ratio of the last tenth's to the first tenth's
(flat memory: about 1.0).

    python bench/worker_memory.py [--pages 1000] [--group 32] [--big-every 100] [--recycle 200]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import psutil
from PIL import Image, ImageDraw, ImageFont

import _common  # noqa: F401  (puts the repository on sys.path)

from longdoc.engines.base import PageImage
from longdoc.engines.rapidocr import RapidOcrEngine
from tests.engines.pages import ENGLISH, LATIN_FONT, english_page


def big_page(number: int) -> PageImage:
    """A dense A4 page at 300 dpi."""
    width, height = 2480, 3508
    img = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(img)
    font = ImageFont.truetype(str(LATIN_FONT), 42)
    for row in range(60):
        draw.text((150, 150 + row * 54), " ".join(ENGLISH[(row + k) % len(ENGLISH)] for k in range(2))[:110],
                  fill="black", font=font)
    return PageImage(page=number, image=np.asarray(img), dpi=300, width_pt=595.0, height_pt=842.0)


def pages(n: int, big_every: int):
    small = {k: english_page(k + 1).image for k in range(12)}
    for number in range(1, n + 1):
        if big_every and number % big_every == 0:
            yield big_page(number)
        else:
            image = small[number % 12]
            yield PageImage(page=number, image=image.image, dpi=image.dpi, width_pt=image.width_pt,
                            height_pt=image.height_pt)


def run(args: argparse.Namespace, recycle: int) -> list[tuple[int, int]]:
    """(pages done, largest worker RSS) after each group."""
    samples = []
    done = 0
    with RapidOcrEngine(workers=2, backend="onnxruntime", recycle_after_pages=recycle, int8=True) as engine:
        source = pages(args.pages, args.big_every)
        while done < args.pages:
            group = [p for _, p in zip(range(args.group), source)]
            failed = [r.page for r in engine.recognize(group) if r.error is not None]
            if failed:
                raise SystemExit(f"pages {failed} failed")
            done += len(group)
            rss = [psutil.Process(pid).memory_info().rss for pid in engine.worker_pids()]
            samples.append((done, max(rss)))
    return samples


def tenths(samples: list[tuple[int, int]], total: int) -> list[int]:
    out = []
    for k in range(10):  # a tenth with no group ending in it keeps the previous tenth's figure
        lo, hi = total * k / 10, total * (k + 1) / 10
        out.append(max((rss for done, rss in samples if lo < done <= hi), default=out[-1] if out else samples[0][1]))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=1000)
    ap.add_argument("--group", type=int, default=32)
    ap.add_argument("--big-every", type=int, default=100)
    ap.add_argument("--recycle", type=int, default=200)
    args = ap.parse_args()
    print(f"{args.pages} pages in groups of {args.group}, a dense 300-dpi A4 page every {args.big_every}; "
          f"2 workers", flush=True)
    rows = {}
    for label, recycle in ((f"recycle every {args.recycle}", args.recycle), ("never recycled", 0)):
        t0 = time.perf_counter()
        rows[label] = tenths(run(args, recycle), args.pages)
        print(f"  {label}: {time.perf_counter() - t0:.0f} s", flush=True)
    print(f"\n{'largest worker RSS (MiB) per tenth':<36}" + "".join(f"{k + 1:>7}" for k in range(10)) + "   last/first")
    for label, row in rows.items():
        print(f"{label:<36}" + "".join(f"{v / 2**20:>7.0f}" for v in row) + f"{row[-1] / row[0]:>12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
