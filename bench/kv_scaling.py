"""KV cache size and decode-step cost against page count: full attention,
R-SWA and SR-SWA with infinite decoding, at Unlimited-OCR's real decoder
dimensions (12 layers, 10 heads × 128, hidden 1280, 64 routed experts top-6,
vocabulary 129,280) with random weights.

For each number of pages the cache is put in the state it has at the end of
the document (every resident page's visual tokens and the generated text it
keeps), then decode steps are timed:

- ``full``: one sequence keeps every page (273 visual tokens each) and every
  generated token (``--tokens-per-page``, default 1,000);
- ``rswa``: one group of all pages, pinned, plus a window of ``--window`` (128, the checkpoint's);
- ``srswa``: infinite decoding in groups of ``--chunk`` pages (32, overlap 2),
  so at most one group is resident, plus the window and the SR-SWA summaries;
  steps gate 4 pages and select 64 blocks of 16 per head.

On CPU only ``--layers`` decoder layers (default 2) are built and run:
``kv_bytes`` is the cache of all 12 layers in bfloat16 (60 KiB a token, as
the claims count; every layer holds the same, so it is exact) and
``kv_bytes_measured`` the buffer actually allocated for the layers run (in
float32 on CPU, whose matmuls are faster there), ``step_ms`` is the measured step over the
layers run (plus embedding and head), ``step_ms_12`` an estimate for all 12
(the per-layer part × 12 plus the head), and ``attn_ms`` the attention alone,
per step, for all 12 layers. Tokens/s at a concurrency of c: c sequences
stepped together in one batch, each with its own cache; a mode whose caches
do not fit ``--memory-cap-gb`` at that concurrency is reported as not fitting
(null), as the KV workspace manager would refuse it.

    python bench/kv_scaling.py --json kv.json --png kv.png
    python bench/kv_scaling.py --device cuda --layers 12 --json kv.json   # the GPU check
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from _common import ROOT  # noqa: F401  (ROOT puts the repo on sys.path)

from longdoc.engines.backends import cpu_model
from longdoc.engines.native import weights
from longdoc.engines.native.decoder import Decoder
from longdoc.engines.native.kv_cache import SequenceKV
from longdoc.engines.native.srswa import SrswaSettings, rswa_step, srswa_step

VISUAL = 273          # tokens per page (1024 × 1024, base mode)
PREFIX, PROMPT = 1, 8
ALL_LAYERS = 12


def build(layers: int, device: str, dtype: torch.dtype):
    from transformers import UnlimitedOcrTextConfig, UnlimitedOcrTextModel

    torch.manual_seed(0)
    config = UnlimitedOcrTextConfig(**weights.text_config("real", layers=layers))
    text = UnlimitedOcrTextModel(config).to(device=device, dtype=dtype).eval()
    head = torch.nn.Linear(config.hidden_size, config.vocab_size, bias=False).to(device=device, dtype=dtype)
    return text, head


def shape(mode: str, pages: int, a: argparse.Namespace) -> tuple[int, int, int]:
    """(reference tokens, window slots, resident pages) at the end of a document."""
    if mode == "full":
        return PREFIX + pages * VISUAL + PROMPT, pages * a.tokens_per_page, pages
    resident = pages if mode == "rswa" else min(pages, a.chunk)
    return PREFIX + resident * VISUAL + PROMPT, a.window, resident


def filled_cache(decoder: Decoder, mode: str, pages: int, a: argparse.Namespace, seed: int):
    """A cache in its end-of-document state, filled with random keys (the
    reference's rotated to their positions, the window's as the ring keeps
    them, before rotation)."""
    reference, window, resident = shape(mode, pages, a)
    kv = decoder.new_cache(reference, window, max_pages=max(resident, 1))
    g = torch.Generator(device="cpu").manual_seed(seed)
    L, H, D = len(decoder.layers), decoder.heads, decoder.head_dim

    def keys(t: int, start: int):
        k = torch.randn(L, H, t, D, generator=g).to(device=decoder.device, dtype=decoder.dtype)
        return k, torch.randn(L, H, t, D, generator=g).to(device=decoder.device, dtype=decoder.dtype)

    pos = 0
    for length, page in [(PREFIX, None)] + [(VISUAL, p) for p in range(1, resident + 1)] + [(PROMPT, None)]:
        span = kv.reserve_span(length, pos, page, kind="prefix" if pos == 0 else "prompt")
        k, v = keys(length, pos)
        for layer in range(L):
            kv.write(layer, span, k[layer], v[layer])
        kv.summarize(span)
        pos += length
    k, v = keys(window, pos)
    kv.load_window(k, v, torch.arange(pos, pos + window, device=decoder.device))
    return kv, pos + window


def timed(fn, steps: int, sync) -> float:
    fn()
    sync()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pages", default="10,50,100,300")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--layers", type=int, default=None, help="decoder layers run (cpu 2, cuda 12)")
    p.add_argument("--tokens-per-page", type=int, default=1000)
    p.add_argument("--window", type=int, default=128,
                   help="attention window: Unlimited-OCR's checkpoint has sliding_window 128 (the default)")
    p.add_argument("--chunk", type=int, default=32)
    p.add_argument("--concurrency", default="1,16")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--memory-cap-gb", type=float, default=None, help="cpu 10, cuda 120")
    p.add_argument("--json", type=Path)
    p.add_argument("--png", type=Path)
    a = p.parse_args()
    layers = a.layers or (ALL_LAYERS if a.device == "cuda" else 2)
    cap = (a.memory_cap_gb or (120.0 if a.device == "cuda" else 10.0)) * 2**30
    dtype = torch.bfloat16 if a.device == "cuda" else torch.float32  # CPU matmuls are faster in float32
    text, head = build(layers, a.device, dtype)
    settings = SrswaSettings(top_pages=4, top_blocks=64, block_size=16)
    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)
    device_name = torch.cuda.get_device_name() if a.device == "cuda" else (cpu_model() or "cpu")
    print(f"device {a.device} ({device_name}), {str(dtype)[6:]}, {layers} of {ALL_LAYERS} decoder layers run; "
          f"{a.tokens_per_page} generated tokens per page, window {a.window}, groups of {a.chunk} pages")

    ids = torch.zeros(1, dtype=torch.long, device=a.device)
    head_ms = timed(lambda: head(text.norm(text.embed_tokens(ids))), a.steps, sync)
    rows = []
    for pages in [int(x) for x in a.pages.split(",")]:
        for mode in ("full", "rswa", "srswa"):
            decoder = Decoder(text, head, mode="rswa" if mode != "srswa" else "srswa", srswa=settings)
            reference, window, resident = shape(mode, pages, a)
            one = decoder.cache_bytes(reference, window, max(resident, 1))
            bf16 = SequenceKV.bytes_for(ALL_LAYERS, decoder.heads, decoder.head_dim, reference, window,
                                        settings.block_size, torch.bfloat16, mode == "srswa", max(resident, 1))
            row = {"pages": pages, "mode": mode, "device": a.device, "layers_run": layers, "dtype_run": str(dtype)[6:],
                   "kv_bytes": bf16, "kv_bytes_measured": None}
            for c in [int(x) for x in a.concurrency.split(",")]:
                if one * c > cap:
                    row[f"tokens_per_s_c{c}"] = None
                    row.setdefault("note", f"concurrency {c} needs {one * c / 2**30:.1f} GiB > cap")
                    continue
                caches = [filled_cache(decoder, mode, pages, a, seed=i) for i in range(c)]
                kvs = [kv for kv, _ in caches]
                positions = [pos for _, pos in caches]
                if c == 1:
                    row["kv_bytes_measured"] = kvs[0].nbytes
                    ms = timed(functools.partial(decoder.step, kvs, [5], positions, [frozenset({1, 2})]), a.steps, sync)
                    row["step_ms"] = round(ms, 3)
                    row["step_ms_12"] = round(head_ms + (ms - head_ms) / layers * ALL_LAYERS, 3)
                    q = torch.randn(decoder.heads, 1, decoder.head_dim, device=a.device, dtype=dtype)
                    attn = functools.partial(srswa_step, q, kvs[0], 0, decoder.scale, settings, frozenset({1, 2})) \
                        if mode == "srswa" else functools.partial(rswa_step, q, kvs[0], 0, decoder.scale)
                    row["attn_ms"] = round(timed(attn, a.steps, sync) * ALL_LAYERS, 3)
                ms = timed(functools.partial(decoder.step, kvs, [5] * c, positions, [frozenset({1, 2})] * c),
                           max(2, a.steps // 2), sync)
                row[f"tokens_per_s_c{c}"] = round(c / (head_ms + (ms - head_ms) / layers * ALL_LAYERS) * 1000, 2)
                del caches, kvs
            rows.append(row)
            print(json.dumps(row), flush=True)
    report(rows)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))
        print(f"json: {a.json}")
    if a.png:
        plot(rows, a.png)
        print(f"png: {a.png}")
    return 0


def _get(rows, pages, mode, key):
    for r in rows:
        if r["pages"] == pages and r["mode"] == mode:
            return r.get(key)
    return None


def report(rows) -> None:
    pages = sorted({r["pages"] for r in rows})
    lo, hi = pages[0], pages[-1]
    print("\npages  mode    KV (12 layers)   step ms (12, est.)   attention ms   tok/s c=1   tok/s c=16")
    for r in rows:
        c16 = r.get("tokens_per_s_c16")
        print(f"{r['pages']:5d}  {r['mode']:6s} {r['kv_bytes'] / 2**30:10.2f} GiB {r.get('step_ms_12', 0):14.1f}"
              f" {r.get('attn_ms', 0):14.2f} {r.get('tokens_per_s_c1') or 0:11.1f} "
              f"{'does not fit' if c16 is None else f'{c16:10.1f}'}")
    full, sr = _get(rows, hi, "full", "kv_bytes"), _get(rows, hi, "srswa", "kv_bytes")
    print(f"\nKV at {hi} pages: full / SR-SWA+infinite = {full / sr:.1f}x")
    a, b = _get(rows, hi, "srswa", "step_ms_12"), _get(rows, lo, "srswa", "step_ms_12")
    print(f"SR-SWA step at {hi} pages / at {lo} pages = {a / b:.2f}x "
          f"(attention alone {_get(rows, hi, 'srswa', 'attn_ms') / _get(rows, lo, 'srswa', 'attn_ms'):.2f}x)")
    mid = min(pages, key=lambda n: abs(n - 100))
    print(f"decode step at {mid} pages: full / SR-SWA = "
          f"{_get(rows, mid, 'full', 'step_ms_12') / _get(rows, mid, 'srswa', 'step_ms_12'):.2f}x "
          f"(attention alone {_get(rows, mid, 'full', 'attn_ms') / _get(rows, mid, 'srswa', 'attn_ms'):.1f}x)")


def plot(rows, path: Path) -> None:
    """Two panels (KV GiB, estimated step ms) against pages, log scale; Pillow only."""
    import math

    from PIL import Image, ImageDraw

    colours = {"full": (200, 40, 40), "rswa": (40, 90, 200), "srswa": (30, 150, 60)}
    img = Image.new("RGB", (1000, 420), "white")
    draw = ImageDraw.Draw(img)
    pages = sorted({r["pages"] for r in rows})
    for panel, (key, title) in enumerate([("kv_bytes", "KV cache, GiB (log)"), ("step_ms_12", "decode step, ms (log)")]):
        x0, y0, w, h = 60 + panel * 490, 40, 420, 320
        values = [r[key] / (2**30 if key == "kv_bytes" else 1) for r in rows if r.get(key)]
        lo, hi = math.log10(min(values)), math.log10(max(values))
        draw.rectangle([x0, y0, x0 + w, y0 + h], outline="black")
        draw.text((x0, 10), title, fill="black")
        xy = functools.partial(_point, box=(x0, y0, w, h), pages=pages, lo=lo, hi=hi)

        for n in pages:
            draw.text((xy(n, 10**lo)[0] - 8, y0 + h + 5), str(n), fill="black")
        for mode, colour in colours.items():
            pts = [xy(r["pages"], r[key] / (2**30 if key == "kv_bytes" else 1)) for r in rows
                   if r["mode"] == mode and r.get(key)]
            draw.line(pts, fill=colour, width=3)
            for px, py in pts:
                draw.ellipse([px - 4, py - 4, px + 4, py + 4], fill=colour)
        for i, (mode, colour) in enumerate(colours.items()):
            draw.text((x0 + 10, y0 + 10 + 14 * i), mode, fill=colour)
        draw.text((x0 + w - 40, y0 + h + 20), "pages", fill="black")
    img.save(path)


def _point(n, v, box, pages, lo, hi):
    """(x, y) of n pages and value v in a panel at box (x0, y0, w, h), both axes log, v's from 10**lo to 10**hi."""
    import math

    x0, y0, w, h = box
    fx = (math.log10(n) - math.log10(pages[0])) / max(1e-9, math.log10(pages[-1]) - math.log10(pages[0]))
    fy = (math.log10(v) - lo) / max(1e-9, hi - lo)
    return x0 + 10 + fx * (w - 20), y0 + h - 10 - fy * (h - 20)


if __name__ == "__main__":
    sys.exit(main())
