"""The GPU check (issue 22): the native engine on a lent GPU, in one run.

Random weights of the real architecture (transformers'
``UnlimitedOcrForConditionalGeneration`` at the published sizes: 12 decoder
layers, 10 heads × 128, 64 routed experts top-6, vocabulary 129,280, the
DeepEncoder's default sizes) in bfloat16 on CUDA. Steps, in order:

``environment``   versions, the device, whether transformers has Unlimited-OCR
                  and whether ``longdoc.engines.native.engine`` imports
``model``         the random model built on the device (seconds, weight bytes)
``vision``        8 page images through the runtime's ``encode_page`` (the
                  DeepEncoder, base mode): each must give ``[273, hidden]``,
                  finite
``rswa``          longdoc's R-SWA decoder against transformers' own R-SWA
                  (its reference-sliding-window cache and mask) at the
                  checkpoint's window (128) and at 1024: the reference is the
                  8 pages' visual tokens and the prompt, both fed the same
                  tokens (longdoc's greedy ones) for window + 64 steps, so the
                  window wraps; max |Δlogit| and top-1 agreement per step
``engine``        the engine's decode path (``DocumentSequence`` prefilled by
                  ``start_group``, the ``Scheduler`` thread stepping all of
                  them in one batch, as sessions do) for 1 and 16 sequences,
                  SR-SWA (window 128) against full attention (a window that
                  holds every generated token of a 32-page group, 1,000 a page,
                  loaded before the timed steps); tokens/s, prefill time,
                  KV bytes per sequence and the device's peak memory
``resident_kv``   as bench/kv_scaling.py: the cache in its end-of-document
                  state at 10, 100 and 300 pages (full, R-SWA, SR-SWA with
                  infinite decoding), filled on the device with random keys;
                  resident bytes (the buffer and the memory the device
                  allocated), the decode step and the attention alone
``summary``       the figures beside the seed's claims (KV 47 → 1.77 GB,
                  16-way 360 → 1,315 tokens/s, ~7× step at ~100 pages)

The JSON (``--out``, default ``$OUT/gpu_check.json`` when ``$OUT`` is set,
else ``bench/results/gpu_check.json``) is written when each step starts
and ends, and within the long steps, so a run stopped by a timeout keeps
what it measured. A step that fails records its error and the run goes on.
``--budget-s`` (480) bounds the whole run: a step that would start past it
is skipped, and the long loops stop early (marked ``truncated``).

Without CUDA (or with ``--reduced``) it runs a reduced mode: the tiny
preset in float32 on CPU, few pages and tokens, in well under a minute
(tests/bench/test_gpu_check.py runs it). On a lent device, see
docs/gpu-check.md::

    python bench/gpu_check.py                       # CUDA if there is one
    python bench/gpu_check.py --reduced --out x.json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import threading
import time
import traceback
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from _common import ROOT

VISUAL = 273          # visual tokens a page (1024 × 1024, base mode)
PREFIX, PROMPT = 1, 8  # as bench/kv_scaling.py
STEPS = ("environment", "model", "vision", "rswa", "engine", "resident_kv", "summary")
MEASURES = ("vision", "rswa", "engine", "resident_kv")
NOT_ASKED = "not asked for (--only)"
CLAIMS = {
    "kv_peak_gb": {"full": 47.0, "srswa": 1.77,
                   "text": "single-sequence KV peak 47 GB → 1.77 GB"},
    "tokens_per_s_16": {"full": 360.0, "srswa": 1315.0,
                        "text": "16-way concurrency 360 → 1,315 tokens/s"},
    "step_ratio_100_pages": {"ratio": 7.0, "text": "~7× faster decode step at ~100 pages than full attention"},
}

#: the sizes of each mode (command-line options override them)
FULL = dict(preset="real", dtype="bfloat16", vision_pages=8, windows="128,1024", rswa_extra=64,
            engine_pages=32, engine_steps=64, engine_window=128, tokens_per_page=1000, concurrency="1,16",
            kv_pages="10,100,300", kv_window=128, chunk=32, kv_steps=10)
REDUCED = dict(preset="tiny", dtype="float32", vision_pages=2, windows="16,48", rswa_extra=8,
               engine_pages=2, engine_steps=8, engine_window=8, tokens_per_page=20, concurrency="1,16",
               kv_pages="10,100,300", kv_window=64, chunk=32, kv_steps=3)


# -- the report ------------------------------------------------------------------------

class Report:
    """The JSON, rewritten (atomically) whenever a step starts, reports or ends."""

    def __init__(self, path: Path, budget_s: float, meta: dict[str, Any]) -> None:
        self.path = path
        self.t0 = time.monotonic()
        self.budget_s = budget_s
        self.data: dict[str, Any] = {"check": "gpu_check", "format": 1,
                                     "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                                     "finished": None, "elapsed_s": 0.0, **meta,
                                     "steps": {name: {"status": "pending"} for name in STEPS}}
        self.write()

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def left(self) -> float:
        return self.budget_s - self.elapsed()

    def write(self) -> None:
        self.data["elapsed_s"] = round(self.elapsed(), 2)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(self.data, indent=1, default=_jsonable))
        os.replace(tmp, self.path)

    def run(self, name: str, fn: Callable[[dict[str, Any]], None], min_left_s: float = 5.0) -> dict[str, Any]:
        rec: dict[str, Any] = {"status": "running"}
        self.data["steps"][name] = rec
        if self.left() < min_left_s:
            rec.update(status="skipped", error=f"the run's budget ({self.budget_s:.0f} s) is spent")
            self.write()
            print(f"[{name}] skipped: budget spent", flush=True)
            return rec
        self.write()
        print(f"[{name}] ...", flush=True)
        t = time.monotonic()
        try:
            fn(rec)
            rec["status"] = "ok"
        except BaseException as exc:  # noqa: BLE001 - every failure is recorded and the run goes on
            if isinstance(exc, KeyboardInterrupt):
                raise
            rec["status"] = "error"
            rec["error"] = f"{type(exc).__name__}: {exc}"[:2000]
            rec["traceback"] = traceback.format_exc()[-4000:]
        finally:
            rec["seconds"] = round(time.monotonic() - t, 2)
            self.write()
            _free()
        print(f"[{name}] {rec['status']} in {rec['seconds']} s"
              + (f": {rec['error']}" if rec["status"] == "error" else ""), flush=True)
        return rec

    def finish(self) -> None:
        self.data["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.write()


def _jsonable(x: Any) -> Any:
    try:
        return float(x)
    except (TypeError, ValueError):
        return str(x)


def _free() -> None:
    gc.collect()
    try:
        import torch
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001
        pass


# -- the check ---------------------------------------------------------------------------

class Check:
    def __init__(self, a: argparse.Namespace, report: Report) -> None:
        self.a = a
        self.report = report
        self.torch: Any = None
        self.device = a.device
        self.dtype: Any = None
        self.model: Any = None
        self.native: Any = None       # NativeModel (R-SWA decoder) over self.model
        self.page_tokens: list[Any] = []

    # timing helpers

    def sync(self) -> None:
        if self.device == "cuda":
            self.torch.cuda.synchronize()

    def timed_ms(self, fn: Callable[[], Any], steps: int) -> float:
        fn()
        self.sync()
        times = []
        for _ in range(max(1, steps)):
            t0 = time.perf_counter()
            fn()
            self.sync()
            times.append(time.perf_counter() - t0)
        return statistics.median(times) * 1000

    def allocated(self) -> int | None:
        return int(self.torch.cuda.memory_allocated()) if self.device == "cuda" else None

    def randn(self, *shape: int, gen: Any, scale: float = 1.0) -> Any:
        t = self.torch.randn(*shape, generator=gen, device=self.device, dtype=self.dtype)
        return t * scale if scale != 1.0 else t

    def generator(self, seed: int) -> Any:
        return self.torch.Generator(device=self.device).manual_seed(seed)

    # -- environment ---------------------------------------------------------------------

    def environment(self, rec: dict[str, Any]) -> None:
        import torch

        self.torch = torch
        rec["python"] = platform.python_version()
        rec["torch"] = torch.__version__
        rec["cuda_available"] = torch.cuda.is_available()
        rec["torch_cuda"] = torch.version.cuda
        try:
            import transformers
            rec["transformers"] = transformers.__version__
            rec["transformers_path"] = str(Path(transformers.__file__).parent)
            rec["has_unlimited_ocr"] = hasattr(transformers, "UnlimitedOcrForConditionalGeneration")
        except ImportError as exc:
            rec["transformers"] = None
            rec["has_unlimited_ocr"] = False
            rec["transformers_error"] = str(exc)
        for name in ("tokenizers", "safetensors", "huggingface_hub", "pydantic", "numpy", "PIL"):
            try:
                rec[name] = getattr(__import__(name), "__version__", "?")
            except ImportError:
                rec[name] = None
        try:
            import longdoc.engines.native.engine  # noqa: F401  (what the service imports)
            rec["engine_imports"] = True
        except Exception as exc:  # noqa: BLE001
            rec["engine_imports"] = False
            rec["engine_import_error"] = f"{type(exc).__name__}: {exc}"
        if self.device == "cuda":
            props = torch.cuda.get_device_properties(0)
            rec["gpu"] = props.name
            rec["gpu_memory_bytes"] = int(props.total_memory)
            rec["capability"] = f"{props.major}.{props.minor}"
            rec["bf16_supported"] = bool(torch.cuda.is_bf16_supported())
        else:
            rec["cpu"] = platform.processor() or platform.machine()
            rec["threads"] = torch.get_num_threads()
        self.dtype = getattr(torch, self.a.dtype)
        rec["dtype"] = self.a.dtype
        if not rec["has_unlimited_ocr"]:
            raise RuntimeError(f"transformers {rec.get('transformers')} has no UnlimitedOcrForConditionalGeneration: "
                               "install the wheels of scripts/gpu-wheels.sh (docs/gpu-check.md)")

    # -- model -----------------------------------------------------------------------------

    def build_model(self, rec: dict[str, Any]) -> None:
        from longdoc.engines.native import weights
        from longdoc.engines.native.runtime import NativeModel
        from longdoc.engines.native.srswa import SrswaSettings

        torch = self.torch
        t0 = time.perf_counter()
        with torch.device(self.device):  # weights initialised on the device, not copied there
            model = weights.random_model(self.a.preset, seed=self.a.seed, dtype=self.dtype, layers=self.a.layers)
        self.sync()
        rec["build_s"] = round(time.perf_counter() - t0, 2)
        self.model = model
        tok = weights.byte_tokenizer(model.config.text_config.vocab_size, model.config.image_token_id)
        self.native = NativeModel.build(model, tok, f"random-{self.a.preset}", "rswa", SrswaSettings())
        t = model.config.text_config
        rec["preset"] = self.a.preset
        rec["decoder"] = json.loads(weights.describe(model))
        rec["hidden"] = t.hidden_size
        rec["vocab"] = t.vocab_size
        rec["parameters"] = sum(p.numel() for p in model.parameters())
        rec["weight_bytes"] = sum(p.numel() * p.element_size() for p in model.parameters())
        rec["device"] = str(next(model.parameters()).device)
        rec["dtype"] = str(next(model.parameters()).dtype).removeprefix("torch.")
        rec["attn_implementation"] = getattr(t, "_attn_implementation", None)
        rec["experts_implementation"] = getattr(t, "_experts_implementation", None)
        rec["visual_tokens_per_page"] = self.native.visual_tokens_per_page
        rec["allocated_bytes"] = self.allocated()

    def need_model(self) -> None:
        if self.model is None:
            raise RuntimeError("no model (the model step failed)")

    # -- vision ------------------------------------------------------------------------------

    def vision(self, rec: dict[str, Any]) -> None:
        import numpy as np

        self.need_model()
        torch = self.torch
        hidden = self.model.config.text_config.hidden_size
        want = [self.native.visual_tokens_per_page, hidden]
        rec["expected_shape"] = want
        rng = np.random.default_rng(self.a.seed)
        pages = []
        for i in range(self.a.vision_pages):
            # a page-like picture: white A4 at 150 dpi with dark text bars (sizes differ, so base mode pads)
            h, w = (1754, 1240) if i % 2 == 0 else (1240, 1754)
            img = np.full((h, w, 3), 250, dtype=np.uint8)
            for y in range(80, h - 80, 40):
                x1 = int(rng.integers(w // 2, w - 80))
                img[y:y + 18, 80:x1] = rng.integers(0, 80)
            pages.append(img)
        shapes, times, finite = [], [], []
        for img in pages:
            t0 = time.perf_counter()
            out = self.native.encode_page(img)
            self.sync()
            times.append(round((time.perf_counter() - t0) * 1000, 2))
            shapes.append(list(out.shape))
            finite.append(bool(torch.isfinite(out).all()))
            self.page_tokens.append(out)
        rec["pages"] = len(pages)
        rec["shapes"] = shapes
        rec["shapes_ok"] = all(s == want for s in shapes)
        rec["finite"] = all(finite)
        rec["ms_per_page"] = times
        rec["ms_per_page_after_first"] = round(statistics.median(times[1:]), 2) if len(times) > 1 else times[0]
        rec["dtype"] = str(self.page_tokens[0].dtype).removeprefix("torch.")
        if not rec["shapes_ok"]:
            raise AssertionError(f"visual tokens of shape {shapes}, expected {want} each")

    # -- R-SWA against transformers --------------------------------------------------------------

    def reference_embeds(self, rec: dict[str, Any]) -> Any:
        torch = self.torch
        nm = self.native
        if self.page_tokens:
            pages = self.page_tokens
            rec["reference_pages"] = f"{len(pages)} pages from the vision step"
        else:
            g = self.generator(self.a.seed + 1)
            std = float(nm.decoder.embed.weight.detach().float().std())
            pages = [self.randn(VISUAL, self.model.config.text_config.hidden_size, gen=g, scale=std)
                     for _ in range(self.a.vision_pages)]
            rec["reference_pages"] = f"{len(pages)} pages of random embeddings (no vision output)"
        return [nm.embed_ids([nm.bos_id]), *[p.to(self.dtype) for p in pages], nm.embed_ids(nm.prompt_ids())]

    def rswa(self, rec: dict[str, Any]) -> None:
        from transformers import DynamicCache

        from longdoc.engines.native.decoder import Decoder, inverse_frequencies
        from longdoc.engines.native.rope import cos_sin

        self.need_model()
        torch = self.torch
        text, head = self.model.model.language_model, self.model.lm_head
        parts = self.reference_embeds(rec)
        reference = torch.cat(parts)
        rec["reference_tokens"] = int(reference.shape[0])
        rec["checkpoint_window"] = int(text.config.sliding_window)
        rec["angles"] = "float64 on both sides (transformers' rotary patched as in tests/engines/native/conftest.py)"
        rec["runs"] = {}
        inv_freq = inverse_frequencies(text.config)

        def rotary(x: Any, position_ids: Any) -> tuple[Any, Any]:
            c, s = cos_sin(position_ids[0], inv_freq.to(x.device), x.dtype)
            return c[None], s[None]

        saved_window = text.config.sliding_window
        text.rotary_emb.forward = rotary
        try:
            for window in [int(w) for w in self.a.windows.split(",")]:
                run: dict[str, Any] = {"window": window, "steps": window + self.a.rswa_extra}
                rec["runs"][str(window)] = run
                try:
                    self._rswa_window(run, text, head, parts, reference, window, Decoder, DynamicCache)
                except Exception as exc:  # noqa: BLE001 - the other window still runs
                    run["error"] = f"{type(exc).__name__}: {exc}"[:2000]
                    run["traceback"] = traceback.format_exc()[-3000:]
                self.report.write()
        finally:
            text.config.sliding_window = saved_window
            del text.rotary_emb.forward
        errors = [r for r in rec["runs"].values() if "error" in r]
        if errors:
            raise RuntimeError(f"{len(errors)} of {len(rec['runs'])} windows failed: {errors[0]['error']}")

    def _rswa_window(self, run: dict[str, Any], text: Any, head: Any, parts: list[Any], reference: Any,
                     window: int, Decoder: Any, DynamicCache: Any) -> None:
        torch = self.torch
        steps = run["steps"]
        decoder = Decoder(text, head, mode="rswa")
        kv = decoder.new_cache(reference=int(reference.shape[0]), window=window, max_pages=len(parts))
        # longdoc: prefix, each page, prompt as spans (as DocumentSequence does), then greedy steps
        t0 = time.perf_counter()
        pos = 0
        for i, e in enumerate(parts):
            page = i if 0 < i < len(parts) - 1 else None
            logits = decoder.prefill(kv, e, pos, page, kind="prefix" if i == 0 else "prompt")
            pos += int(e.shape[0])
        mine = [logits.float()]
        tokens = []
        truncated = False
        t1 = time.perf_counter()
        for i in range(steps):
            if self.report.left() < 30:
                truncated = True
                break
            token = int(mine[-1].argmax())
            tokens.append(token)
            mine.append(decoder.step([kv], [token], [pos + i])[0].float())
        self.sync()
        run["longdoc_prefill_s"] = round(t1 - t0, 3)
        run["longdoc_step_ms"] = round((time.perf_counter() - t1) / max(1, len(tokens)) * 1000, 3)
        kv.drop()
        del kv
        # transformers: its R-SWA cache at this window, fed the same tokens
        text.config.sliding_window = window
        cache = DynamicCache(config=text.config)
        for layer in cache.layers:
            layer.set_prefill_length(int(reference.shape[0]))
        n = int(reference.shape[0])
        theirs = []
        t0 = time.perf_counter()
        with torch.no_grad():
            out = text(inputs_embeds=reference[None], cache=cache, use_cache=True)
            theirs.append(head(out.last_hidden_state[0, -1]).float())
            t1 = time.perf_counter()
            for i, t in enumerate(tokens):
                if self.report.left() < 15:
                    truncated = True
                    break
                out = text(input_ids=torch.tensor([[t]], device=self.device), cache=cache, use_cache=True,
                           position_ids=torch.tensor([[n + i]], device=self.device))
                theirs.append(head(out.last_hidden_state[0, -1]).float())
        self.sync()
        run["transformers_prefill_s"] = round(t1 - t0, 3)
        run["transformers_step_ms"] = round((time.perf_counter() - t1) / max(1, len(theirs) - 1) * 1000, 3)
        cache_len = [int(layer.keys.shape[-2]) if getattr(layer, "keys", None) is not None else None
                     for layer in cache.layers[:1]]
        run["transformers_window_slots"] = cache_len[0]
        del cache
        m = min(len(mine), len(theirs))
        delta = [float((a - b).abs().max()) for a, b in zip(mine[:m], theirs[:m])]
        agree = [int(a.argmax()) == int(b.argmax()) for a, b in zip(mine[:m], theirs[:m])]
        scale = max(float(x.abs().max()) for x in mine[:m])
        run.update(
            compared=m, truncated=truncated,
            max_abs_dlogit=max(delta), mean_abs_dlogit_max=statistics.fmean(delta),
            max_abs_logit=scale, relative=max(delta) / scale if scale else None,
            top1_agreement=sum(agree) / m,
            # steps 0…window-1 attend to every generated token; after that the window has wrapped
            top1_agreement_before_wrap=_ratio(agree[:window + 1]),
            top1_agreement_after_wrap=_ratio(agree[window + 1:]),
            max_abs_dlogit_after_wrap=max(delta[window + 1:]) if len(delta) > window + 1 else None,
            first_disagreement=next((i for i, ok in enumerate(agree) if not ok), None),
            dlogit_per_step=[round(d, 6) for d in delta],
            agree_per_step="".join("1" if ok else "0" for ok in agree))

    # -- the engine's decode path ----------------------------------------------------------------

    def engine(self, rec: dict[str, Any]) -> None:
        from longdoc.engines.native.runtime import NativeModel
        from longdoc.engines.native.srswa import SrswaSettings

        self.need_model()
        a = self.a
        settings = SrswaSettings(top_pages=4, top_blocks=64, block_size=16)
        history = a.engine_pages * a.tokens_per_page
        rec.update(pages=a.engine_pages, decode_steps=a.engine_steps, srswa_window=a.engine_window,
                   full_window=history + a.engine_steps, generated_before=history,
                   srswa=dict(top_pages=settings.top_pages, top_blocks=settings.top_blocks,
                              block_size=settings.block_size),
                   note="full attention = the engine's R-SWA decode with a window holding every generated token "
                        f"({a.tokens_per_page} a page, loaded before the timed steps); SR-SWA's window holds "
                        f"the last {a.engine_window}")
        rec["runs"] = []
        concurrency = [int(c) for c in a.concurrency.split(",")]
        for mode in ("full", "srswa"):
            nm = NativeModel.build(self.model, self.native.tokenizer, "random", "rswa" if mode == "full" else "srswa",
                                   settings)
            window = history + a.engine_steps if mode == "full" else a.engine_window
            loaded = history if mode == "full" else a.engine_window  # the window full, as at a document's end
            self._engine_run(nm, window, 1, 4, 0, None)  # warm-up (kernels, allocator), not recorded
            for c in concurrency:
                run: dict[str, Any] = {"mode": mode, "sequences": c, "window": window}
                rec["runs"].append(run)
                if self.report.left() < 30:
                    run["skipped"] = "budget"
                    continue
                try:
                    self._engine_run(nm, window, c, a.engine_steps, loaded, run)
                except Exception as exc:  # noqa: BLE001 - the other runs still go
                    run["error"] = f"{type(exc).__name__}: {exc}"[:2000]
                    run["traceback"] = traceback.format_exc()[-3000:]
                _free()
                self.report.write()
        by = {(r["mode"], r["sequences"]): r for r in rec["runs"]}
        for c in concurrency:
            f, s = by.get(("full", c), {}), by.get(("srswa", c), {})
            if f.get("tokens_per_s") and s.get("tokens_per_s"):
                rec[f"srswa_over_full_tokens_per_s_c{c}"] = round(s["tokens_per_s"] / f["tokens_per_s"], 3)
        failed = [r for r in rec["runs"] if "error" in r]
        if failed:
            raise RuntimeError(f"{len(failed)} of {len(rec['runs'])} runs failed: {failed[0]['error']}")

    def _engine_run(self, nm: Any, window: int, c: int, steps: int, loaded: int,
                    run: dict[str, Any] | None) -> None:
        """``c`` sequences prefilled, ``loaded`` generated tokens put in each window, then ``steps`` decoded."""
        from longdoc.engines.native.rope import cos_sin, rotate
        from longdoc.engines.native.scheduler import Scheduler
        from longdoc.engines.native.sequence import DocumentSequence

        torch = self.torch
        a = self.a
        pages = a.engine_pages if run is not None else 1
        hidden = self.model.config.text_config.hidden_size
        g = self.generator(a.seed + 7)
        std = float(nm.decoder.embed.weight.detach().float().std())
        if self.device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        base = self.allocated()
        seqs = []
        t0 = time.perf_counter()
        for _ in range(c):
            seq = DocumentSequence(nm, window, max_group_pages=pages, max_tokens_per_page=steps)
            embeds = [(p, self.randn(nm.visual_tokens_per_page, hidden, gen=g, scale=std)) for p in range(1, pages + 1)]
            with nm.lock:
                seq.start_group([], embeds, [1])
            seqs.append(seq)
        self.sync()
        prefill_s = time.perf_counter() - t0
        d = nm.decoder
        for seq in seqs:
            if loaded:
                pos = seq.position
                L, H, D = len(d.layers), d.heads, d.head_dim
                k = self.randn(L, H, loaded, D, gen=g)
                cos, sin = cos_sin(torch.arange(pos, pos + loaded, device=self.device), d.inv_freq, d.dtype)
                for layer in range(L):
                    k[layer] = rotate(k[layer], cos, sin)
                seq.kv.load_window(k, self.randn(L, H, loaded, D, gen=g),
                                   torch.arange(pos, pos + loaded, device=self.device))
                seq.position = pos + loaded
                del k
        self.sync()
        scheduler = Scheduler(nm, max_batch=c)
        cancel = threading.Event()
        errors: list[BaseException] = []

        start = threading.Barrier(len(seqs))  # every sequence joins before the first step, as far as threads allow

        def go(seq: Any) -> None:
            try:
                start.wait(timeout=30)
                scheduler.run(seq, cancel)
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        threads = [threading.Thread(target=go, args=(s,), daemon=True) for s in seqs]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=max(30.0, self.report.left()))
        self.sync()
        elapsed = time.perf_counter() - t0
        alive = any(t.is_alive() for t in threads)
        if alive:
            cancel.set()
        scheduler.close()
        kv_bytes = [s.kv.nbytes for s in seqs if s.kv is not None]
        peak = int(torch.cuda.max_memory_allocated()) if self.device == "cuda" else None
        for s in seqs:
            s.close()
        if errors:
            raise errors[0]
        if alive:
            raise TimeoutError(f"{c} sequences did not finish {steps} steps within the budget")
        if run is not None:
            run.update(
                prefill_s=round(prefill_s, 3), prefill_pages_per_s=round(c * pages / prefill_s, 2),
                generated_loaded=loaded, tokens=scheduler.tokens, scheduler_steps=scheduler.steps,
                largest_batch=scheduler.largest_batch, decode_s=round(elapsed, 3),
                tokens_per_s=round(scheduler.tokens / elapsed, 2),
                step_ms=round(elapsed / max(1, scheduler.steps) * 1000, 3),
                kv_bytes_per_sequence=kv_bytes[0] if kv_bytes else None, kv_bytes_total=sum(kv_bytes),
                peak_allocated_bytes=peak,
                peak_above_model_bytes=(peak - base) if peak is not None and base is not None else None,
                reserved_peak_bytes=seqs[0].peak_bytes() if seqs else None)

    # -- resident KV against pages -----------------------------------------------------------------

    def resident_kv(self, rec: dict[str, Any]) -> None:
        from longdoc.engines.native.decoder import Decoder
        from longdoc.engines.native.kv_cache import SequenceKV
        from longdoc.engines.native.srswa import SrswaSettings, rswa_step, srswa_step

        self.need_model()
        torch = self.torch
        a = self.a
        text, head = self.model.model.language_model, self.model.lm_head
        settings = SrswaSettings(top_pages=4, top_blocks=64, block_size=16)
        rec.update(window=a.kv_window, chunk=a.chunk, tokens_per_page=a.tokens_per_page,
                   fill="random rotated keys generated on the device" if self.device == "cuda" else "random (CPU)",
                   note="as bench/kv_scaling.py: full keeps every page and generated token; rswa one group of "
                        "all pages and the window; srswa groups of --chunk pages (one resident) with summaries")
        rec["rows"] = []
        for pages in [int(p) for p in a.kv_pages.split(",")]:
            for mode in ("full", "rswa", "srswa"):
                row: dict[str, Any] = {"pages": pages, "mode": mode}
                rec["rows"].append(row)
                if self.report.left() < 20:
                    row["skipped"] = "budget"
                    continue
                try:
                    decoder = Decoder(text, head, mode="srswa" if mode == "srswa" else "rswa", srswa=settings)
                    reference, window, resident = _shape(mode, pages, a)
                    row.update(reference=reference, window_slots=window, resident_pages=resident)
                    row["kv_bytes_12_layers_bf16"] = SequenceKV.bytes_for(
                        12, decoder.heads, decoder.head_dim, reference, window, settings.block_size,
                        torch.bfloat16, mode == "srswa", max(resident, 1))
                    before = self.allocated()
                    t0 = time.perf_counter()
                    kv, pos = self._filled(decoder, reference, window, resident, seed=pages)
                    self.sync()
                    row["fill_s"] = round(time.perf_counter() - t0, 3)
                    _free()
                    row["kv_bytes"] = kv.nbytes
                    row["kv_bytes_expected"] = decoder.cache_bytes(reference, window, max(resident, 1))
                    if before is not None:
                        row["allocated_bytes"] = self.allocated() - before
                    focus = [frozenset({1, 2})]
                    row["step_ms"] = round(self.timed_ms(lambda: decoder.step([kv], [5], [pos], focus), a.kv_steps), 3)
                    q = self.randn(decoder.heads, 1, decoder.head_dim, gen=self.generator(1))
                    attn = ((lambda: srswa_step(q, kv, 0, decoder.scale, settings, frozenset({1, 2})))
                            if mode == "srswa" else (lambda: rswa_step(q, kv, 0, decoder.scale)))
                    row["attn_ms_all_layers"] = round(self.timed_ms(attn, a.kv_steps) * len(decoder.layers), 3)
                    kv.drop()
                    del kv
                except Exception as exc:  # noqa: BLE001 - the other rows still run
                    row["error"] = f"{type(exc).__name__}: {exc}"[:2000]
                    row["traceback"] = traceback.format_exc()[-3000:]
                _free()
                self.report.write()
        failed = [r for r in rec["rows"] if "error" in r]
        if failed:
            raise RuntimeError(f"{len(failed)} of {len(rec['rows'])} rows failed: {failed[0]['error']}")

    def _filled(self, decoder: Any, reference: int, window: int, resident: int, seed: int) -> tuple[Any, int]:
        """A cache in its end-of-document state: rotated random keys made on the device."""
        from longdoc.engines.native.rope import cos_sin, rotate

        torch = self.torch
        kv = decoder.new_cache(reference, window, max_pages=max(resident, 1))
        g = self.generator(seed)
        L, H, D = len(decoder.layers), decoder.heads, decoder.head_dim

        def rotated(t: int, start: int) -> Any:
            k = self.randn(L, H, t, D, gen=g)
            cos, sin = cos_sin(torch.arange(start, start + t, device=self.device), decoder.inv_freq, decoder.dtype)
            for layer in range(L):
                k[layer] = rotate(k[layer], cos, sin)
            return k

        pos = 0
        spans = [(PREFIX, None, "prefix")] + [(VISUAL, p, "page") for p in range(1, resident + 1)] \
            + [(PROMPT, None, "prompt")]
        for length, page, kind in spans:
            span = kv.reserve_span(length, pos, page, kind=kind)
            k, v = rotated(length, pos), self.randn(L, H, length, D, gen=g)
            for layer in range(L):
                kv.write(layer, span, k[layer], v[layer])
            kv.summarize(span)
            pos += length
        k = rotated(window, pos)
        v = self.randn(L, H, window, D, gen=g)
        kv.load_window(k, v, torch.arange(pos, pos + window, device=self.device))
        del k, v
        return kv, pos + window

    # -- summary -------------------------------------------------------------------------------------

    def summary(self, rec: dict[str, Any]) -> None:
        steps = self.report.data["steps"]
        out: dict[str, Any] = {}
        kv = {(r["pages"], r["mode"]): r for r in steps["resident_kv"].get("rows", []) if "kv_bytes" in r}
        top = max((p for p, _ in kv), default=None)
        if top is not None and (top, "full") in kv and (top, "srswa") in kv:
            f, s = kv[(top, "full")], kv[(top, "srswa")]
            key = "kv_bytes" if self.device == "cuda" and self.a.layers is None else "kv_bytes_12_layers_bf16"
            out["kv_peak"] = dict(claim=CLAIMS["kv_peak_gb"], pages=top, measured_from=key,
                                  full_gb=round(f[key] / 1e9, 3), srswa_gb=round(s[key] / 1e9, 3),
                                  ratio=round(f[key] / s[key], 2),
                                  claimed_ratio=round(CLAIMS["kv_peak_gb"]["full"] / CLAIMS["kv_peak_gb"]["srswa"], 2))
        runs = {(r["mode"], r["sequences"]): r for r in steps["engine"].get("runs", [])}
        cmax = max((c for _, c in runs), default=None)
        if cmax is not None and all(runs.get((m, cmax), {}).get("tokens_per_s") for m in ("full", "srswa")):
            f, s = runs[("full", cmax)]["tokens_per_s"], runs[("srswa", cmax)]["tokens_per_s"]
            out["tokens_per_s"] = dict(claim=CLAIMS["tokens_per_s_16"], sequences=cmax, full=f, srswa=s,
                                       ratio=round(s / f, 2),
                                       claimed_ratio=round(CLAIMS["tokens_per_s_16"]["srswa"]
                                                           / CLAIMS["tokens_per_s_16"]["full"], 2))
        mid = min((p for p, _ in kv), key=lambda p: abs(p - 100), default=None)
        if mid is not None and all("step_ms" in kv.get((mid, m), {}) for m in ("full", "srswa")):
            f, s = kv[(mid, "full")], kv[(mid, "srswa")]
            out["step_at_100_pages"] = dict(claim=CLAIMS["step_ratio_100_pages"], pages=mid,
                                            full_ms=f["step_ms"], srswa_ms=s["step_ms"],
                                            ratio=round(f["step_ms"] / s["step_ms"], 2),
                                            attention_ratio=round(f["attn_ms_all_layers"] / s["attn_ms_all_layers"], 2))
        runs_rswa = steps["rswa"].get("runs", {})
        out["rswa_vs_transformers"] = {w: {k: r.get(k) for k in ("top1_agreement", "top1_agreement_after_wrap",
                                                                  "max_abs_dlogit", "relative", "compared")}
                                       for w, r in runs_rswa.items()}
        out["vision_shapes_ok"] = steps["vision"].get("shapes_ok")
        out["steps_ok"] = [n for n in STEPS[:-1] if steps[n].get("status") == "ok"]
        out["steps_not_ok"] = {n: steps[n].get("status") for n in STEPS[:-1] if steps[n].get("status") != "ok"}
        rec.update(out)
        _print_summary(out)


def _ratio(flags: list[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


def _shape(mode: str, pages: int, a: argparse.Namespace) -> tuple[int, int, int]:
    """(reference tokens, window slots, resident pages) at the end of a document (bench/kv_scaling.py's)."""
    if mode == "full":
        return PREFIX + pages * VISUAL + PROMPT, pages * a.tokens_per_page, pages
    resident = pages if mode == "rswa" else min(pages, a.chunk)
    return PREFIX + resident * VISUAL + PROMPT, a.kv_window, resident


def _print_summary(out: dict[str, Any]) -> None:
    print("\nbeside the seed's claims:")
    if "kv_peak" in out:
        k = out["kv_peak"]
        print(f"  KV at {k['pages']} pages: full {k['full_gb']} GB → SR-SWA {k['srswa_gb']} GB ({k['ratio']}×; "
              f"claim 47 → 1.77 GB, {k['claimed_ratio']}×) [{k['measured_from']}]")
    if "tokens_per_s" in out:
        t = out["tokens_per_s"]
        print(f"  {t['sequences']}-way: full {t['full']} → SR-SWA {t['srswa']} tokens/s ({t['ratio']}×; "
              f"claim 360 → 1,315, {t['claimed_ratio']}×)")
    if "step_at_100_pages" in out:
        s = out["step_at_100_pages"]
        print(f"  decode step at {s['pages']} pages: full / SR-SWA = {s['ratio']}× "
              f"(attention alone {s['attention_ratio']}×; claim ~7×)")
    for w, r in out["rswa_vs_transformers"].items():
        print(f"  R-SWA vs transformers, window {w}: top-1 agreement {r['top1_agreement']} "
              f"(after the wrap {r['top1_agreement_after_wrap']}), max |Δlogit| {r['max_abs_dlogit']}")
    print(f"  steps ok: {', '.join(out['steps_ok'])}; not ok: {out['steps_not_ok'] or 'none'}")


# -- command line --------------------------------------------------------------------------------------

def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=None,
                   help="the JSON (default $OUT/gpu_check.json when $OUT is set, else bench/results/gpu_check.json)")
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    p.add_argument("--reduced", action="store_true", help="the reduced mode (the default without CUDA)")
    p.add_argument("--budget-s", type=float, default=480.0, help="the whole run's time (default 8 minutes)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--layers", type=int, default=None, help="decoder layers built (default: the preset's)")
    p.add_argument("--only", default=None,
                   help="comma-separated steps to run among vision, rswa, engine, resident_kv (a rerun of "
                        "what a first run missed; environment, model and summary always run)")
    for key, value in FULL.items():
        p.add_argument("--" + key.replace("_", "-"), type=type(value), default=None,
                       help=f"full mode {value!r}, reduced {REDUCED[key]!r}")
    a = p.parse_args(argv)
    if a.only and not set(a.only.split(",")) <= set(MEASURES):
        p.error(f"--only takes steps among {', '.join(MEASURES)}")
    if a.device == "auto":
        try:
            import torch
            a.device = "cuda" if torch.cuda.is_available() and not a.reduced else "cpu"
        except ImportError:
            a.device = "cpu"
    if a.device == "cpu":
        a.reduced = True
    sizes = REDUCED if a.reduced else FULL
    for key, value in sizes.items():
        if getattr(a, key) is None:
            setattr(a, key, value)
    if a.out is None:
        a.out = Path(os.environ["OUT"]) / "gpu_check.json" if os.environ.get("OUT") else \
            ROOT / "bench" / "results" / "gpu_check.json"
    return a


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    meta = {"mode": "reduced" if a.reduced else "full", "device": a.device,
            "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items()},
            "claims": CLAIMS, "host": platform.node()}
    report = Report(a.out, a.budget_s, meta)
    print(f"gpu_check: {meta['mode']} mode on {a.device}, preset {a.preset}, {a.dtype}; JSON → {a.out}", flush=True)
    check = Check(a, report)
    env = report.run("environment", check.environment)
    if check.torch is None:
        for name in STEPS[1:]:
            report.data["steps"][name] = {"status": "skipped", "error": "torch did not import"}
        report.finish()
        return 1
    if env["status"] != "ok" and not env.get("has_unlimited_ocr"):
        for name in STEPS[1:-1]:
            report.data["steps"][name] = {"status": "skipped", "error": env.get("error")}
        report.run("summary", check.summary)
        report.finish()
        return 1
    report.run("model", check.build_model)
    measures = [("vision", check.vision, 5.0), ("rswa", check.rswa, 30.0), ("engine", check.engine, 30.0),
                ("resident_kv", check.resident_kv, 20.0)]
    only = set(a.only.split(",")) if a.only else {name for name, _, _ in measures}
    for name, fn, min_left in measures:
        if name in only:
            report.run(name, fn, min_left_s=min_left)
        else:
            report.data["steps"][name] = {"status": "skipped", "error": NOT_ASKED}
    report.run("summary", check.summary, min_left_s=0)
    report.finish()
    print(f"json: {a.out} ({report.elapsed():.1f} s)")
    bad = [n for n, st in report.data["steps"].items() if st.get("status") != "ok" and st.get("error") != NOT_ASKED]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
