"""The GPU check: what an operator with weights and a GPU needs to trust the
native engine's first page, in one run of about eight minutes.

With ``--model-path`` the checkpoint is loaded through the engine's own
loader (every weight file hashed against its ``SHA256SUMS``); without one,
random weights of the real architecture (transformers'
``UnlimitedOcrForConditionalGeneration`` at the published sizes: 12 decoder
layers, 10 heads × 128, 64 routed experts top-6, vocabulary 129,280, the
DeepEncoder's sizes) are built on the device. Steps, in order:

``environment``  versions, the device, whether transformers has Unlimited-OCR
                 and whether ``longdoc.engines.native.engine`` imports
``model``        the model on the device (loaded and hash-checked, or random)
``tokenizer``    the special ids the engine relies on (BOS, EOS, ``<PAGE>``,
                 ``<image>`` = ``config.image_token_id``, a pad id that is not
                 BOS) and the prompt's ids; with a model path, the real ones
``vision``       page images through the runtime's ``encode_page``: 273
                 visual tokens each, finite; where torchvision is there, the
                 engine's pixels against transformers' own image processor
``reference``    the definition of exact: the engine's session path (session
                 → scheduler) against the reference ``generate()`` on the same
                 ``pixel_values`` and ids, with the n-gram guard, at 4, 8 and
                 32 pages, in float32 (TF32 off) and in the serving dtype; and
                 SR-SWA's departure from the R-SWA decode (first divergence,
                 token agreement, token edit rate, text CER)
``groups``       infinite decoding in bfloat16 against its float32 twin (the
                 same weights, teacher-forced): the first group (no re-basing)
                 beside the later ones (re-based), and the first group run
                 twice (what bfloat16 on this device gives itself)
``memory``       the CUDA allocator's peak during a real prefill and decode:
                 the engine over a 32- and a 300-page document (groups of 32,
                 overlap 2), and transformers with full attention (SDPA) over
                 the same pages' reference plus a few decoded tokens; the
                 generated tokens' KV a full-attention document would add
                 is computed from the per-token bytes and said to be so
``throughput``   16 sequences decoding together: transformers' own
                 ``generate()`` with full attention (SDPA) over a 32-page
                 reference and a history of generated tokens, and with R-SWA;
                 the engine's scheduler with R-SWA and with SR-SWA
``resident_kv``  as bench/kv_scaling.py: the cache at the end of a 10-, 100-
                 and 300-page document, the decode step and attention alone
``summary``      the figures beside the claims, and the Markdown report

The JSON (``--out``, default ``$OUT/gpu_check.json`` when ``$OUT`` is set,
else ``bench/results/gpu_check.json``) is rewritten when each step starts and
ends, so a run stopped by a timeout keeps what it measured; the Markdown
report is written beside it (``.md``). A step that fails records its error
and the run goes on. ``--budget-s`` (480) bounds the run: a step that would
start past it is skipped, and the long loops stop early (``truncated``).

Without CUDA (or with ``--reduced``) it runs a reduced mode: the tiny preset
on CPU, few pages and tokens (tests/bench/test_gpu_check.py runs it). On a
lent device see docs/gpu-check.md::

    python bench/gpu_check.py                          # CUDA if there is one
    python bench/gpu_check.py --model-path /models/Unlimited-OCR
    python bench/gpu_check.py --reduced --out x.json
"""

from __future__ import annotations

import argparse
import copy
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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _common import ROOT

PREFIX, PROMPT = 1, 8  # as bench/kv_scaling.py
STEPS = ("environment", "model", "tokenizer", "vision", "reference", "groups", "memory", "throughput",
         "resident_kv", "summary")
MEASURES = ("vision", "reference", "groups", "memory", "throughput", "resident_kv")
NOT_ASKED = "not asked for (--only)"
CLAIMS = {
    "kv_peak_gb": {"full": 47.0, "srswa": 1.77, "text": "single-sequence KV peak 47 GB → 1.77 GB"},
    "tokens_per_s_16": {"full": 360.0, "srswa": 1315.0, "text": "16-way concurrency 360 → 1,315 tokens/s"},
    "step_ratio_100_pages": {"ratio": 7.0, "text": "~7× faster decode step at ~100 pages than full attention"},
    "accuracy_300_pages": {"text": "accuracy stable up to 300 pages (needs real weights and real pages)"},
}
#: bytes of KV a token holds in Unlimited-OCR (12 layers × keys and values × 10 heads × 128 × bfloat16)
KV_BYTES_PER_TOKEN_BF16 = 12 * 2 * 10 * 128 * 2

#: the sizes of each mode (command-line options override them)
FULL = dict(preset="real", dtype="bfloat16", vision_pages=8, ref_pages="4,8,32", ref_tokens=160,
            ref_dtypes="float32,bfloat16", group_pages=6, group_chunk=4, group_overlap=2, group_tokens=24,
            memory_pages="32,300", memory_chunk=32, memory_tokens_per_page=8, memory_decode=16, throughput_sequences=16,
            throughput_pages=32, throughput_history=4000, throughput_steps=48, kv_pages="10,100,300", kv_steps=10,
            chunk=32, tokens_per_page=1000)
REDUCED = dict(preset="tiny", dtype="float32", vision_pages=2, ref_pages="2,4,8", ref_tokens=40,
               ref_dtypes="float32", group_pages=5, group_chunk=3, group_overlap=1, group_tokens=10,
               memory_pages="4,12", memory_chunk=4, memory_tokens_per_page=8, memory_decode=4, throughput_sequences=4,
               throughput_pages=2, throughput_history=64, throughput_steps=8, kv_pages="10,100,300", kv_steps=3,
               chunk=32, tokens_per_page=20)


# -- the report ------------------------------------------------------------------------

class Report:
    """The JSON, rewritten (atomically) whenever a step starts, reports or ends."""

    def __init__(self, path: Path, budget_s: float, meta: dict[str, Any]) -> None:
        self.path = path
        self.t0 = time.monotonic()
        self.budget_s = budget_s
        self.data: dict[str, Any] = {"check": "gpu_check", "format": 2,
                                     "started": datetime.now(UTC).isoformat(timespec="seconds"),
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
        self.data["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
        self.write()
        self.path.with_suffix(".md").write_text(markdown(self.data))


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


def _error(exc: BaseException) -> dict[str, str]:
    return {"error": f"{type(exc).__name__}: {exc}"[:2000], "traceback": traceback.format_exc()[-3000:]}


# -- pages and comparisons ----------------------------------------------------------------

def page_images(count: int, seed: int) -> list[Any]:
    """``count`` page-like pictures (white A4 at 150 dpi with dark text bars,
    portrait and landscape so base mode pads both ways) as the engine's PageImages."""
    import numpy as np

    from longdoc.engines.base import PageImage

    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        h, w = (1754, 1240) if i % 3 else (1240, 1754)
        img = np.full((h, w, 3), 250, dtype=np.uint8)
        for y in range(80, h - 80, 40):
            x1 = int(rng.integers(w // 3, w - 80))
            img[y:y + 18, 80:x1] = int(rng.integers(0, 80))
        out.append(PageImage(page=i + 1, image=img, dpi=150, width_pt=w * 72 / 150, height_pt=h * 72 / 150))
    return out


def edit_rate(ours: list[Any], truth: list[Any]) -> float | None:
    """Levenshtein distance / len(truth) (tokens or characters)."""
    from rapidfuzz.distance import Levenshtein

    return Levenshtein.distance(ours, truth) / len(truth) if truth else None


def first_difference(a: list[int], b: list[int]) -> int | None:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None if len(a) == len(b) else min(len(a), len(b)))


def logit_gaps(ours: list[Any], theirs: list[Any]) -> dict[str, Any]:
    m = min(len(ours), len(theirs))
    if not m:
        return {"compared": 0}
    delta = [float((a.float() - b.float()).abs().max()) for a, b in zip(ours[:m], theirs[:m])]
    agree = [int(a.argmax()) == int(b.argmax()) for a, b in zip(ours[:m], theirs[:m])]
    scale = max(float(x.float().abs().max()) for x in theirs[:m])
    return dict(compared=m, max_abs_dlogit=max(delta), mean_abs_dlogit=statistics.fmean(delta),
                max_abs_logit=scale, relative=max(delta) / scale if scale else None,
                top1_agreement=sum(agree) / m, first_top1_disagreement=next((i for i, ok in enumerate(agree)
                                                                              if not ok), None))


# -- the check ---------------------------------------------------------------------------

class Check:
    def __init__(self, a: argparse.Namespace, report: Report) -> None:
        self.a = a
        self.report = report
        self.torch: Any = None
        self.device = a.device
        self.dtype: Any = None
        self.models: dict[str, Any] = {}     # dtype name → UnlimitedOcrForConditionalGeneration
        self.natives: dict[tuple[str, str], Any] = {}  # (dtype, attention) → NativeModel
        self.tokenizer: Any = None
        self.version = ""

    # helpers

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

    def reset_peak(self) -> None:
        if self.device == "cuda":
            self.sync()
            self.torch.cuda.reset_peak_memory_stats()

    def peak(self) -> int | None:
        if self.device != "cuda":
            return None
        self.sync()
        return int(self.torch.cuda.max_memory_allocated())

    def randn(self, *shape: int, gen: Any, dtype: Any = None) -> Any:
        return self.torch.randn(*shape, generator=gen, device=self.device, dtype=dtype or self.dtype)

    def generator(self, seed: int) -> Any:
        return self.torch.Generator(device=self.device).manual_seed(seed)

    def measure(self, rows: list[dict[str, Any]], row: dict[str, Any], fn: Callable[[dict[str, Any]], None],
                min_left_s: float) -> None:
        """Append ``row`` to ``rows`` and fill it with ``fn``, unless the budget is spent (``skipped``);
        a failure is recorded in the row and the step goes on with the next."""
        rows.append(row)
        if self.report.left() < min_left_s:
            row["skipped"] = "budget"
            return
        try:
            fn(row)
        except Exception as exc:  # noqa: BLE001 - the other rows still run
            row.update(_error(exc))
        _free()
        self.report.write()

    def need_model(self) -> Any:
        if self.a.dtype not in self.models:
            raise RuntimeError("no model (the model step failed)")
        return self.models[self.a.dtype]

    def model_in(self, dtype: str) -> Any:
        """The model in ``dtype``: the loaded one, a cast copy of it, or the checkpoint loaded again."""
        if dtype not in self.models:
            from longdoc.engines.native import weights

            torch = self.torch
            if self.a.model_path:
                self.models[dtype], _, _ = weights.load(self.a.model_path, getattr(torch, dtype), self.device)
            else:
                self.models[dtype] = copy.deepcopy(self.need_model()).to(getattr(torch, dtype))
                weights.use_eager_experts(self.models[dtype])
        return self.models[dtype]

    def native(self, dtype: str, attention: str = "rswa") -> Any:
        """The engine's view of the model in ``dtype`` with ``attention`` (built once)."""
        from longdoc.engines.native.runtime import NativeModel
        from longdoc.engines.native.srswa import SrswaSettings

        key = (dtype, attention)
        if key not in self.natives:
            self.natives[key] = NativeModel.build(self.model_in(dtype), self.tokenizer, self.version, attention,
                                                  SrswaSettings())
        return self.natives[key]

    def engine(self, nm: Any, pages: int, overlap: int = 0, max_tokens_per_page: int = 8192,
               sequences: int = 1) -> Any:
        """A NativeEngine over ``nm`` (the service's engine: KV workspace, scheduler)."""
        from longdoc.config import InferenceSettings, NativeSettings
        from longdoc.engines.native.engine import NativeEngine

        settings = InferenceSettings(engine="native", page_chunk_size=pages, chunk_overlap=overlap,
                                     native=NativeSettings(attention=nm.decoder.mode, fallback_engine=None,
                                                           max_tokens_per_page=max_tokens_per_page,
                                                           max_sequences=sequences, device=self.device))
        engine = NativeEngine(settings, model=nm)
        engine.load()
        return engine

    def decode_document(self, engine: Any, images: list[Any], steps: int | None) -> dict[str, Any]:
        """The document through one session, group by group (the real path:
        session → scheduler), stopped after ``steps`` decode steps (None:
        to its end). Returns, for a document of one group, the model's own
        tokens (before the first the engine fed itself) and the logits each
        was chosen from; and for any, the steps, seconds and KV figures."""
        from longdoc.engines.base import GroupPlan, PageGroup
        from longdoc.errors import JobCancelled
        from longdoc.plan.groups import plan_groups

        decoder = engine.model.decoder
        prefill, step = decoder.prefill, decoder.step
        logits: list[Any] = []
        state = {"steps": 0, "first": True}
        session = engine.open_session()

        def recording_prefill(*args: Any, **kwargs: Any) -> Any:
            out = prefill(*args, **kwargs)
            if state["first"]:
                logits[:] = [out.float().cpu()]
            return out

        def recording_step(*args: Any, **kwargs: Any) -> Any:
            out = step(*args, **kwargs)
            state["first"] = False
            logits.append(out[0].float().cpu())
            state["steps"] += 1
            if steps is not None and state["steps"] >= steps:
                session.cancel()
            return out

        decoder.prefill, decoder.step = recording_prefill, recording_step
        by_page = {i.page: i for i in images}
        settings = engine.settings
        stopped = False
        t0 = time.perf_counter()
        try:
            for g in plan_groups(len(images), settings.page_chunk_size, settings.chunk_overlap):
                owned = tuple(p + 1 for p in g.owned)
                context = tuple(p + 1 for p in g.context)
                plan = GroupPlan(index=g.index, owned=owned, context=context, dpi=150)
                try:
                    list(session.recognize(PageGroup(plan, [by_page[p] for p in (*context, *owned)])))
                except JobCancelled:
                    stopped = True
                    break
            self.sync()
            seq = session.sequence
            own = seq.forced[0] if seq.forced else len(seq.generated)
            one = g.index == 0
            return dict(tokens=seq.generated[:own] if one else None, logits=logits[:own] if one else None,
                        stopped=stopped, steps=state["steps"], seconds=time.perf_counter() - t0,
                        kv_bytes=seq.kv.nbytes if seq.kv is not None else None, reserved=seq.peak_bytes())
        finally:
            del decoder.prefill, decoder.step
            session.close()

    def generate(self, model: Any, images: list[Any], reference_ids: list[int], new_tokens: int) -> dict[str, Any]:
        """transformers' own ``generate()`` on the same pixel_values and ids, the guard set as the engine's."""
        from transformers import GenerationConfig

        from longdoc.engines.native.runtime import base_mode

        torch = self.torch
        nm_ids = self.special_ids()
        config = GenerationConfig(do_sample=False, max_new_tokens=new_tokens, no_repeat_ngram_size=35,
                                  eos_token_id=nm_ids["eos"], bos_token_id=nm_ids["bos"], pad_token_id=nm_ids["eos"],
                                  output_logits=True, return_dict_in_generate=True)
        config.no_repeat_ngram_window_size = 1024  # generate() refuses it as a keyword
        dtype = next(model.parameters()).dtype
        pixels = torch.stack([torch.from_numpy(base_mode(i.image)) for i in images]).to(self.device, dtype)
        ids = torch.tensor([reference_ids], device=self.device)
        t0 = time.perf_counter()
        with torch.no_grad():
            out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), pixel_values=pixels,
                                 generation_config=config)
        self.sync()
        return dict(tokens=out.sequences[0, ids.shape[1]:].tolist(), logits=[row[0].float().cpu() for row in out.logits],
                    seconds=time.perf_counter() - t0)

    def special_ids(self) -> dict[str, Any]:
        nm = self.native(self.a.dtype)
        return {"bos": nm.bos_id, "eos": nm.eos_id, "page": nm.page_id, "image": nm.image_token_id}

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
            rec["has_unlimited_ocr"] = hasattr(transformers, "UnlimitedOcrForConditionalGeneration")
        except ImportError as exc:
            rec["transformers"] = None
            rec["has_unlimited_ocr"] = False
            rec["transformers_error"] = str(exc)
        for name in ("tokenizers", "safetensors", "huggingface_hub", "pydantic", "numpy", "PIL", "rapidfuzz",
                     "torchvision"):
            try:
                rec[name] = getattr(__import__(name), "__version__", "?")
            except Exception:  # noqa: BLE001 - torchvision beside another torch fails at import
                rec[name] = None
        try:
            import longdoc.engines.native.engine  # noqa: F401  (what the service imports)
            rec["engine_imports"] = True
        except Exception as exc:  # noqa: BLE001
            rec["engine_imports"] = False
            rec["engine_import_error"] = f"{type(exc).__name__}: {exc}"
        if self.device == "cuda":
            props = torch.cuda.get_device_properties(0)
            rec.update(gpu=props.name, gpu_memory_bytes=int(props.total_memory),
                       capability=f"{props.major}.{props.minor}", bf16_supported=bool(torch.cuda.is_bf16_supported()))
            # float32 means float32: no TF32 in matmuls or convolutions (the exactness comparison)
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
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

        torch = self.torch
        t0 = time.perf_counter()
        if self.a.model_path:
            model, tokenizer, checkpoint = weights.load(self.a.model_path, self.dtype, self.device)
            rec.update(source="checkpoint", checkpoint=str(checkpoint.path), version=checkpoint.version)
            self.version = checkpoint.version
        else:
            with torch.device(self.device):  # weights initialised on the device, not copied there
                model = weights.random_model(self.a.preset, seed=self.a.seed, dtype=self.dtype, layers=self.a.layers)
            tokenizer = weights.byte_tokenizer(model.config.text_config.vocab_size, model.config.image_token_id)
            rec.update(source=f"random weights, preset {self.a.preset}", version=f"random-{self.a.preset}")
            self.version = f"random-{self.a.preset}"
        self.sync()
        rec["load_s"] = round(time.perf_counter() - t0, 2)
        self.models[self.a.dtype] = model
        self.tokenizer = tokenizer
        t = model.config.text_config
        rec["decoder"] = json.loads(weights.describe(model))
        rec.update(hidden=t.hidden_size, vocab=t.vocab_size, sliding_window=t.sliding_window,
                   parameters=sum(p.numel() for p in model.parameters()),
                   weight_bytes=sum(p.numel() * p.element_size() for p in model.parameters()),
                   device=str(next(model.parameters()).device),
                   dtype=str(next(model.parameters()).dtype).removeprefix("torch."),
                   attn_implementation=getattr(t, "_attn_implementation", None),
                   visual_tokens_per_page=self.native(self.a.dtype).visual_tokens_per_page,
                   allocated_bytes=self.allocated())

    # -- tokenizer ---------------------------------------------------------------------------

    def check_tokenizer(self, rec: dict[str, Any]) -> None:
        from longdoc.engines.native import weights

        model = self.need_model()
        nm = self.native(self.a.dtype)
        config = model.config
        ids = self.special_ids()
        rec.update(source="the checkpoint's" if self.a.model_path else "a byte-level tokenizer (random weights)",
                   ids=ids, config_image_token_id=int(config.image_token_id),
                   config_bos=config.text_config.bos_token_id, config_eos=config.text_config.eos_token_id,
                   prompt=nm.prompt_ids(), prompt_text=nm.decode(nm.prompt_ids()),
                   page_token=weights.PAGE, image_token=weights.IMAGE)
        problems = []
        if ids["image"] != self.tokenizer.convert_tokens_to_ids(weights.IMAGE):
            problems.append(f"{weights.IMAGE} is id {self.tokenizer.convert_tokens_to_ids(weights.IMAGE)}, "
                            f"config.image_token_id {ids['image']}")
        if ids["page"] is None:
            problems.append(f"{weights.PAGE} is not one token (pages are found by their spelling)")
        if config.text_config.bos_token_id is not None and ids["bos"] != config.text_config.bos_token_id:
            problems.append(f"BOS {ids['bos']} is not config's {config.text_config.bos_token_id}")
        if config.text_config.eos_token_id is not None and ids["eos"] != config.text_config.eos_token_id:
            problems.append(f"EOS {ids['eos']} is not config's {config.text_config.eos_token_id}")
        if len({ids["bos"], ids["eos"], ids["image"], ids["page"]}) < 4:
            problems.append("two special ids are the same")
        pad = getattr(self.tokenizer, "pad_token_id", None)
        rec["tokenizer_pad_token_id"] = pad
        rec["pad_equals_bos"] = pad == ids["bos"]  # generate() would mask BOS: the reference step sets pad = EOS
        if nm.decode(nm.prompt_ids()) != "Multi page parsing.":
            problems.append(f"the prompt decodes as {nm.decode(nm.prompt_ids())!r}")
        rec["problems"] = problems
        if problems:
            raise AssertionError("; ".join(problems))

    # -- vision ------------------------------------------------------------------------------

    def vision(self, rec: dict[str, Any]) -> None:
        torch = self.torch
        model = self.need_model()
        nm = self.native(self.a.dtype)
        want = [nm.visual_tokens_per_page, model.config.text_config.hidden_size]
        rec["expected_shape"] = want
        shapes, times, finite = [], [], []
        for image in page_images(self.a.vision_pages, self.a.seed):
            t0 = time.perf_counter()
            out = nm.encode_page(image.image)
            self.sync()
            times.append(round((time.perf_counter() - t0) * 1000, 2))
            shapes.append(list(out.shape))
            finite.append(bool(torch.isfinite(out).all()))
        rec.update(pages=len(shapes), shapes=shapes, shapes_ok=all(s == want for s in shapes), finite=all(finite),
                   ms_per_page=times,
                   ms_per_page_after_first=round(statistics.median(times[1:]), 2) if len(times) > 1 else times[0])
        rec["processor"] = self._against_processor()
        if not rec["shapes_ok"]:
            raise AssertionError(f"visual tokens of shape {shapes}, expected {want} each")

    def _against_processor(self) -> dict[str, Any]:
        """The engine's pixels (PIL bicubic) against transformers' image processor (torchvision), where it runs."""
        try:
            from transformers import UnlimitedOcrImageProcessor

            from longdoc.engines.native.runtime import base_mode

            processor = UnlimitedOcrImageProcessor()
            out = {}
            for image in page_images(2, self.a.seed):
                theirs = processor(images=[image.image], crop_to_patches=False, return_tensors="pt")["pixel_values"][0]
                ours = self.torch.from_numpy(base_mode(image.image))
                out[f"page {image.page}"] = {"max_abs": float((ours - theirs).abs().max()),
                                             "mean_abs": float((ours - theirs).abs().mean())}
            return out
        except Exception as exc:  # noqa: BLE001 - torchvision is often absent or broken beside another torch
            return {"skipped": f"{type(exc).__name__}: {exc}"[:300]}

    # -- reference -------------------------------------------------------------------------------

    def reference(self, rec: dict[str, Any]) -> None:
        self.need_model()
        a = self.a
        rec.update(pages=a.ref_pages, new_tokens=a.ref_tokens, dtypes=a.ref_dtypes, ngram=35,
                   note="engine: NativeEngine session → scheduler; reference: transformers generate() on the same "
                        "pixel_values; compared up to the first token the engine fed itself (a <PAGE> after a cut)")
        rec["runs"] = []
        for dtype in a.ref_dtypes.split(","):
            for pages in [int(p) for p in a.ref_pages.split(",")]:
                self.measure(rec["runs"], {"dtype": dtype, "pages": pages},
                             lambda run, d=dtype, n=pages: self._reference_run(run, d, n), 40)
        _raise_failed(rec["runs"])

    def _reference_run(self, run: dict[str, Any], dtype: str, pages: int) -> None:
        a = self.a
        images = page_images(pages, a.seed + pages)
        decodes = {}
        for attention in ("rswa", "srswa"):
            engine = self.engine(self.native(dtype, attention), pages, max_tokens_per_page=a.ref_tokens)
            try:
                decodes[attention] = self.decode_document(engine, images, a.ref_tokens)
            finally:
                engine.close()
        rswa, srswa = decodes["rswa"], decodes["srswa"]
        nm = self.native(dtype)
        ref = self.generate(self.model_in(dtype), images, nm.reference_ids(pages), len(rswa["tokens"]))
        n = len(rswa["tokens"])
        run["rswa_vs_generate"] = dict(
            tokens=n, identical=rswa["tokens"] == ref["tokens"][:n],
            first_token_difference=first_difference(rswa["tokens"], ref["tokens"][:n]),
            engine_s=round(rswa["seconds"], 2), generate_s=round(ref["seconds"], 2),
            **logit_gaps(rswa["logits"], ref["logits"]))
        m = min(len(srswa["tokens"]), n)
        text = nm.decode(rswa["tokens"][:m])
        run["srswa_vs_rswa"] = dict(
            tokens=m, first_divergence=first_difference(srswa["tokens"][:m], rswa["tokens"][:m]),
            token_agreement=sum(x == y for x, y in zip(srswa["tokens"][:m], rswa["tokens"][:m])) / m if m else None,
            token_edit_rate=edit_rate(srswa["tokens"][:m], rswa["tokens"][:m]),
            text_cer=edit_rate(nm.decode(srswa["tokens"][:m]), text) if text else None,
            **logit_gaps(srswa["logits"][:m], rswa["logits"][:m]))

    # -- groups in bfloat16 ------------------------------------------------------------------------

    def groups(self, rec: dict[str, Any]) -> None:
        """Infinite decoding in bfloat16 against its float32 twin, teacher-forced."""
        from longdoc.engines.native.ngram import NGramGuard
        from longdoc.engines.native.sequence import DocumentSequence
        from longdoc.plan.groups import plan_groups

        self.need_model()
        a = self.a
        images = page_images(a.group_pages, a.seed + 100)
        plan = plan_groups(a.group_pages, a.group_chunk, a.group_overlap)
        rec.update(pages=a.group_pages, chunk=a.group_chunk, overlap=a.group_overlap, tokens_per_page=a.group_tokens,
                   groups=len(plan), note="float32 decodes freely (pages cut at tokens_per_page); bfloat16 is fed "
                   "the same tokens; |Δlogit| per group against the float32 logits")

        def run(dtype: str, forced: list[int] | None) -> tuple[list[list[Any]], list[int]]:
            """Each group's step logits and every token chosen; ``forced``: the
            tokens to feed instead of this run's own choices (the first one
            included, which the prefill chooses)."""
            nm = self.native(dtype)
            window = nm.sliding_window
            seq = DocumentSequence(nm, window, a.group_chunk, a.group_tokens, guard=NGramGuard(0))
            embeds = {i.page: nm.encode_page(i.image) for i in images}
            per_group, chosen, fed = [], [], 0
            for g in plan:
                pages = [p + 1 for p in range(g.start, g.end)]
                new = [(p, embeds[p]) for p in pages if p not in seq.resident_pages]
                with nm.lock:
                    seq.start_group([p + 1 for p in g.context], new, [p + 1 for p in g.owned])
                if forced is not None and fed == 0:
                    seq.pending = seq.generated[0] = forced[0]  # the prefill's choice, as the twin made it
                    fed = 1
                logits = []
                while not seq.done:
                    token, position = seq.next_input()
                    with nm.lock:
                        out = nm.decoder.step([seq.kv], [token], [position])[0].float().cpu()
                    logits.append(out)
                    seq.accept(forced[fed] if forced is not None else int(out.argmax()))
                    fed += 1
                per_group.append(logits)
                chosen += seq.generated
            seq.close()
            return per_group, chosen

        truth, tokens = run("float32", None)
        low, _ = run("bfloat16", tokens)
        again, _ = run("bfloat16", tokens)
        rec["by_group"] = []
        for i, (t, b, b2) in enumerate(zip(truth, low, again)):
            gaps = logit_gaps(b, t)
            rec["by_group"].append(dict(group=i + 1, rebased=i > 0, steps=len(t), **gaps,
                                        repeat_max_abs_dlogit=max((float((x - y).abs().max()) for x, y in zip(b, b2)),
                                                                  default=0.0)))
        first = rec["by_group"][0]
        later = rec["by_group"][1:]
        rec["one_shot_mean_abs_dlogit"] = first["mean_abs_dlogit"]
        rec["rebased_mean_abs_dlogit"] = statistics.fmean(g["mean_abs_dlogit"] for g in later) if later else None
        rec["rebased_over_one_shot"] = (rec["rebased_mean_abs_dlogit"] / first["mean_abs_dlogit"]
                                        if later and first["mean_abs_dlogit"] else None)
        rec["one_shot_repeat_max_abs_dlogit"] = first["repeat_max_abs_dlogit"]
        rec["page_shift_bf16"] = self._shift_keys()

    def _shift_keys(self) -> dict[str, Any]:
        """A carried page's keys re-based once in bfloat16: the share bit for bit equal to the exact
        rotation of the stored keys rounded once, for the engine's shift (float32 arithmetic) and for a
        shift in bfloat16 arithmetic (how it was done before 2026-12-07)."""
        from longdoc.engines.native.rope import Rotary, rotate

        torch = self.torch
        model = self.need_model()
        rotary = Rotary(model.model.language_model.rotary_emb, torch.bfloat16, self.device)
        head_dim = model.config.text_config.head_dim
        g = self.generator(self.a.seed + 5)

        def turn(positions: Any, dtype: Any) -> tuple[Any, Any]:
            freqs = positions.to(torch.float64)[:, None] * rotary.inv_freq[None, :]
            emb = torch.cat((freqs, freqs), dim=-1)
            return emb.cos().to(dtype), emb.sin().to(dtype)

        keys = torch.randn(4, 2000, head_dim, generator=g, device=self.device, dtype=torch.float64)
        stored = rotate(keys, *turn(torch.arange(8000, 10000, device=self.device), torch.float64)).to(torch.bfloat16)
        delta = torch.tensor([-7999], device=self.device)
        exact = rotate(stored.double(), *turn(delta, torch.float64)).to(torch.bfloat16)
        out = {}
        for name, moved in (("float32_arithmetic", rotary.shift(stored, -7999)),
                            ("bfloat16_arithmetic", rotate(stored, *turn(delta, torch.bfloat16)))):
            off = (moved.double() - exact.double()).abs() / exact.double().abs().clamp_min(2.0 ** -20)
            out[name] = {"bit_identical": float((moved.view(torch.int16) == exact.view(torch.int16)).float().mean()),
                         "max_relative_error": float(off.max())}
        return out

    # -- memory ------------------------------------------------------------------------------------

    def memory(self, rec: dict[str, Any]) -> None:
        self.need_model()
        a = self.a
        rec.update(pages=a.memory_pages, tokens_per_page=a.memory_tokens_per_page, chunk=a.memory_chunk, overlap=2,
                   kv_bytes_per_token_bf16=KV_BYTES_PER_TOKEN_BF16,
                   note="peaks are the CUDA allocator's max_memory_allocated above the weights, during the run; "
                        "None on CPU")
        rec["engine"], rec["full_attention"] = [], []
        for pages in [int(p) for p in a.memory_pages.split(",")]:
            self.measure(rec["engine"], {"pages": pages}, lambda row, n=pages: self._engine_memory(row, n), 60)
            self.measure(rec["full_attention"], {"pages": pages},
                         lambda row, n=pages: self._full_attention_memory(row, n), 40)
        _raise_failed(rec["engine"] + rec["full_attention"])

    def _engine_memory(self, row: dict[str, Any], pages: int) -> None:
        a = self.a
        nm = self.native(self.a.dtype)
        chunk = min(pages, a.memory_chunk)
        engine = self.engine(nm, chunk, overlap=2 if pages > chunk else 0, max_tokens_per_page=a.memory_tokens_per_page)
        try:
            base = self.allocated()
            self.reset_peak()
            out = self.decode_document(engine, page_images(pages, a.seed + 200), None)
            peak = self.peak()
        finally:
            engine.close()
        row.update(groups=-(-max(pages - 2, 1) // max(chunk - 2, 1)) if pages > chunk else 1,
                   steps=out["steps"], seconds=round(out["seconds"], 2), kv_bytes=out["kv_bytes"],
                   kv_reserved_bytes=out["reserved"], peak_allocated_bytes=peak,
                   peak_above_weights_bytes=(peak - base) if peak is not None and base is not None else None)

    def _full_attention_memory(self, row: dict[str, Any], pages: int) -> None:
        """transformers' decoder with full attention (every layer ``full_attention``, its own SDPA) over the
        pages' visual tokens and the prompt, then ``memory_decode`` tokens."""
        torch = self.torch
        a = self.a
        model = self.need_model()
        nm = self.native(self.a.dtype)
        embeds = torch.cat([nm.embed_ids([nm.bos_id]),
                            *[nm.encode_page(i.image) for i in page_images(pages, a.seed + 200)],
                            nm.embed_ids(nm.prompt_ids())])[None]
        text = model.model.language_model
        saved = list(text.config.layer_types)
        text.config.layer_types = ["full_attention"] * len(saved)
        try:
            from transformers import DynamicCache

            base = self.allocated()
            self.reset_peak()
            cache = DynamicCache(config=text.config)
            t0 = time.perf_counter()
            with torch.no_grad():
                out = text(inputs_embeds=embeds, cache=cache, use_cache=True)
                token = int(model.lm_head(out.last_hidden_state[:, -1]).argmax())
                n = embeds.shape[1]
                for i in range(a.memory_decode):
                    out = text(input_ids=torch.tensor([[token]], device=self.device), cache=cache, use_cache=True,
                               position_ids=torch.tensor([[n + i]], device=self.device))
                    token = int(model.lm_head(out.last_hidden_state[:, -1]).argmax())
            peak = self.peak()
            row.update(reference_tokens=int(n), decoded=a.memory_decode, seconds=round(time.perf_counter() - t0, 2),
                       cache_tokens=int(cache.get_seq_length()), peak_allocated_bytes=peak,
                       peak_above_weights_bytes=(peak - base) if peak is not None and base is not None else None,
                       attn_implementation=text.config._attn_implementation,
                       generated_kv_bytes_at_1000_a_page=pages * a.tokens_per_page * KV_BYTES_PER_TOKEN_BF16,
                       generated_kv_is="computed: tokens × bytes a token, not measured")
            del cache, out
        finally:
            text.config.layer_types = saved

    # -- throughput ----------------------------------------------------------------------------------

    def throughput(self, rec: dict[str, Any]) -> None:
        self.need_model()
        a = self.a
        rec.update(sequences=a.throughput_sequences, pages=a.throughput_pages, history=a.throughput_history,
                   steps=a.throughput_steps,
                   note="decode tokens/s of all sequences together, prefill excluded; transformers full attention "
                        "holds the pages, the prompt and a history of generated tokens (random ids); R-SWA runs "
                        "keep their window")
        rec["runs"] = []
        for name, fn in (("transformers_full_sdpa", lambda r: self._generate_throughput(r, "full_attention", True)),
                         ("transformers_rswa", lambda r: self._generate_throughput(r, "reference_sliding_attention",
                                                                                   False)),
                         ("longdoc_rswa", lambda r: self._engine_throughput(r, "rswa")),
                         ("longdoc_srswa", lambda r: self._engine_throughput(r, "srswa"))):
            self.measure(rec["runs"], {"name": name}, fn, 40)
        base = rec["runs"][0].get("tokens_per_s")
        for r in rec["runs"]:
            if base and r.get("tokens_per_s"):
                r["over_transformers_full"] = round(r["tokens_per_s"] / base, 3)
        _raise_failed(rec["runs"])

    def _batch_embeds(self, history: int) -> Any:
        torch = self.torch
        a = self.a
        nm = self.native(self.a.dtype)
        pages = [nm.encode_page(i.image) for i in page_images(a.throughput_pages, a.seed + 300)]
        g = torch.Generator().manual_seed(a.seed)
        rows = []
        for _ in range(a.throughput_sequences):
            vocab = nm.model.config.text_config.vocab_size
            ids = torch.randint(min(300, vocab // 2), vocab - 2, (history,), generator=g).tolist()
            rows.append(torch.cat([nm.embed_ids([nm.bos_id]), *pages, nm.embed_ids(nm.prompt_ids()),
                                   nm.embed_ids(ids) if ids else pages[0][:0]]))
        return torch.stack(rows)

    def _generate_throughput(self, run: dict[str, Any], layer_type: str, history: bool) -> None:
        """transformers' generate() for a batch over the same reference, decode time from two runs (1 and N tokens)."""
        from transformers import GenerationConfig

        torch = self.torch
        a = self.a
        model = self.need_model()
        text = model.model.language_model
        embeds = self._batch_embeds(a.throughput_history if history else 0)
        saved = list(text.config.layer_types)
        text.config.layer_types = [layer_type] * len(saved)
        try:
            def timed(new: int) -> float:
                # no EOS: every sequence decodes all ``new`` tokens
                config = GenerationConfig(do_sample=False, max_new_tokens=new, pad_token_id=1, eos_token_id=None,
                                          bos_token_id=0)
                self.sync()
                t0 = time.perf_counter()
                with torch.no_grad():
                    model.generate(inputs_embeds=embeds, attention_mask=torch.ones(embeds.shape[:2], dtype=torch.long,
                                                                                 device=self.device),
                                   generation_config=config)
                self.sync()
                return time.perf_counter() - t0

            self.reset_peak()
            one = timed(1)
            many = timed(a.throughput_steps + 1)
            peak = self.peak()
        finally:
            text.config.layer_types = saved
        decode = max(many - one, 1e-9)
        run.update(layer_type=layer_type, context_tokens=int(embeds.shape[1]), attn_implementation=
                   text.config._attn_implementation, prefill_and_one_s=round(one, 3), decode_s=round(decode, 3),
                   tokens_per_s=round(a.throughput_sequences * a.throughput_steps / decode, 2),
                   peak_allocated_bytes=peak)

    def _engine_throughput(self, run: dict[str, Any], attention: str) -> None:
        """The engine's scheduler stepping every sequence together after a real prefill of the pages."""
        from longdoc.engines.native.scheduler import Scheduler
        from longdoc.engines.native.sequence import DocumentSequence

        a = self.a
        nm = self.native(self.a.dtype, attention)
        window = nm.sliding_window
        pages = [(i.page, nm.encode_page(i.image)) for i in page_images(a.throughput_pages, a.seed + 300)]
        seqs = []
        self.reset_peak()
        t0 = time.perf_counter()
        for _ in range(a.throughput_sequences):
            seq = DocumentSequence(nm, window, a.throughput_pages, a.throughput_steps + 1)
            with nm.lock:
                seq.start_group([], pages, [1])
            seqs.append(seq)
        self.sync()
        prefill_s = time.perf_counter() - t0
        scheduler = Scheduler(nm, max_batch=a.throughput_sequences)
        cancel = threading.Event()
        errors: list[BaseException] = []
        start = threading.Barrier(len(seqs))

        def go(seq: Any) -> None:
            try:
                start.wait(timeout=60)
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
        if any(t.is_alive() for t in threads):
            cancel.set()
        scheduler.close()
        peak = self.peak()
        kv = seqs[0].kv.nbytes if seqs[0].kv is not None else None
        for s in seqs:
            s.close()
        if errors:
            raise errors[0]
        run.update(attention=attention, window=window, prefill_s=round(prefill_s, 3), tokens=scheduler.tokens,
                   scheduler_steps=scheduler.steps, largest_batch=scheduler.largest_batch, decode_s=round(elapsed, 3),
                   tokens_per_s=round(scheduler.tokens / elapsed, 2), kv_bytes_per_sequence=kv,
                   peak_allocated_bytes=peak)

    # -- resident KV against pages -----------------------------------------------------------------

    def resident_kv(self, rec: dict[str, Any]) -> None:
        from longdoc.engines.native.decoder import Decoder
        from longdoc.engines.native.kv_cache import SequenceKV
        from longdoc.engines.native.srswa import SrswaSettings, rswa_step, srswa_step

        torch = self.torch
        a = self.a
        model = self.need_model()
        text, head = model.model.language_model, model.lm_head
        settings = SrswaSettings(top_pages=4, top_blocks=64, block_size=16)
        window = int(text.config.sliding_window)
        rec.update(window=window, chunk=a.chunk, tokens_per_page=a.tokens_per_page,
                   note="shapes as bench/kv_scaling.py (random keys): full keeps every page and generated token; "
                        "rswa one group of all pages and the window; srswa groups of --chunk pages (one resident) "
                        "with summaries. The memory step measures real runs")
        rec["rows"] = []

        def row_of(row: dict[str, Any]) -> None:
            mode, pages = row["mode"], row["pages"]
            decoder = Decoder(text, head, mode="srswa" if mode == "srswa" else "rswa", srswa=settings)
            reference, slots, resident = _shape(mode, pages, a, window)
            row.update(reference=reference, window_slots=slots, resident_pages=resident)
            row["kv_bytes_12_layers_bf16"] = SequenceKV.bytes_for(
                12, decoder.heads, decoder.head_dim, reference, slots, settings.block_size,
                torch.bfloat16, mode == "srswa", max(resident, 1))
            kv, pos = self._filled(decoder, reference, slots, resident, seed=pages)
            row["kv_bytes"] = kv.nbytes
            row["kv_bytes_expected"] = decoder.cache_bytes(reference, slots, max(resident, 1))
            focus = [frozenset({1, 2})]
            row["step_ms"] = round(self.timed_ms(lambda: decoder.step([kv], [5], [pos], focus), a.kv_steps), 3)
            q = self.randn(decoder.heads, 1, decoder.head_dim, gen=self.generator(1))
            attn = ((lambda: srswa_step(q, kv, 0, decoder.scale, settings, frozenset({1, 2})))
                    if mode == "srswa" else (lambda: rswa_step(q, kv, 0, decoder.scale)))
            row["attn_ms_all_layers"] = round(self.timed_ms(attn, a.kv_steps) * len(decoder.layers), 3)
            kv.drop()

        for pages in [int(p) for p in a.kv_pages.split(",")]:
            for mode in ("full", "rswa", "srswa"):
                self.measure(rec["rows"], {"pages": pages, "mode": mode}, row_of, 20)
        _raise_failed(rec["rows"])

    def _filled(self, decoder: Any, reference: int, window: int, resident: int, seed: int) -> tuple[Any, int]:
        """A cache in its end-of-document state, random keys made on the device."""
        torch = self.torch
        kv = decoder.new_cache(reference, window, max_pages=max(resident, 1))
        g = self.generator(seed)
        L, H, D = len(decoder.layers), decoder.heads, decoder.head_dim
        pos = 0
        spans = [(PREFIX, None, "prefix")] + [(273, p, "page") for p in range(1, resident + 1)] \
            + [(PROMPT, None, "prompt")]
        for length, page, kind in spans:
            span = kv.reserve_span(length, pos, page, kind=kind)
            for layer in range(L):
                kv.write(layer, span, self.randn(H, length, D, gen=g), self.randn(H, length, D, gen=g))
            kv.summarize(span)
            pos += length
        kv.load_window(self.randn(L, H, window, D, gen=g), self.randn(L, H, window, D, gen=g),
                       torch.arange(pos, pos + window, device=self.device))
        return kv, pos + window

    # -- summary -------------------------------------------------------------------------------------

    def summary(self, rec: dict[str, Any]) -> None:
        steps = self.report.data["steps"]
        out: dict[str, Any] = {}
        out["reference"] = [{k: r.get(k) for k in ("dtype", "pages")} | {
            "identical": r.get("rswa_vs_generate", {}).get("identical"),
            "tokens": r.get("rswa_vs_generate", {}).get("tokens"),
            "max_abs_dlogit": r.get("rswa_vs_generate", {}).get("max_abs_dlogit"),
            "top1_agreement": r.get("rswa_vs_generate", {}).get("top1_agreement"),
            "srswa_first_divergence": r.get("srswa_vs_rswa", {}).get("first_divergence"),
            "srswa_max_abs_dlogit": r.get("srswa_vs_rswa", {}).get("max_abs_dlogit"),
            "srswa_token_agreement": r.get("srswa_vs_rswa", {}).get("token_agreement"),
            "srswa_text_cer": r.get("srswa_vs_rswa", {}).get("text_cer")}
            for r in steps["reference"].get("runs", []) if "rswa_vs_generate" in r]
        g = steps["groups"]
        if "rebased_over_one_shot" in g:
            out["groups_bf16"] = {k: g.get(k) for k in ("one_shot_mean_abs_dlogit", "rebased_mean_abs_dlogit",
                                                        "rebased_over_one_shot", "one_shot_repeat_max_abs_dlogit",
                                                        "page_shift_bf16")}
        mem = steps["memory"]
        eng = {r["pages"]: r for r in mem.get("engine", []) if "steps" in r}
        full = {r["pages"]: r for r in mem.get("full_attention", []) if "cache_tokens" in r}
        if eng or full:
            out["memory"] = {p: {"engine_peak": eng.get(p, {}).get("peak_above_weights_bytes"),
                                 "engine_kv_reserved": eng.get(p, {}).get("kv_reserved_bytes"),
                                 "full_attention_peak": full.get(p, {}).get("peak_above_weights_bytes"),
                                 "full_attention_generated_kv_computed": full.get(p, {}).get(
                                     "generated_kv_bytes_at_1000_a_page")} for p in sorted({*eng, *full})}
            out["memory"]["claim"] = CLAIMS["kv_peak_gb"]
        runs = {r["name"]: r.get("tokens_per_s") for r in steps["throughput"].get("runs", [])}
        if any(runs.values()):
            out["tokens_per_s"] = dict(runs, claim=CLAIMS["tokens_per_s_16"],
                                       sequences=steps["throughput"].get("sequences"))
        kv = {(r["pages"], r["mode"]): r for r in steps["resident_kv"].get("rows", []) if "step_ms" in r}
        mid = min((p for p, _ in kv), key=lambda p: abs(p - 100), default=None)
        if mid is not None and all((mid, m) in kv for m in ("full", "srswa")):
            f, s = kv[(mid, "full")], kv[(mid, "srswa")]
            out["step_at_100_pages"] = dict(claim=CLAIMS["step_ratio_100_pages"], pages=mid, full_ms=f["step_ms"],
                                            srswa_ms=s["step_ms"], ratio=round(f["step_ms"] / s["step_ms"], 2),
                                            attention_ratio=round(f["attn_ms_all_layers"] / s["attn_ms_all_layers"], 2))
        out["vision_shapes_ok"] = steps["vision"].get("shapes_ok")
        out["tokenizer_problems"] = steps["tokenizer"].get("problems")
        out["steps_ok"] = [n for n in STEPS[:-1] if steps[n].get("status") == "ok"]
        out["steps_not_ok"] = {n: steps[n].get("status") for n in STEPS[:-1]
                               if steps[n].get("status") not in ("ok", None) and steps[n].get("error") != NOT_ASKED}
        rec.update(out)
        print(markdown(self.report.data | {"steps": {**steps, "summary": {**rec, "status": "ok"}}}, short=True))


def _raise_failed(rows: list[dict[str, Any]]) -> None:
    failed = [r for r in rows if "error" in r]
    if failed:
        raise RuntimeError(f"{len(failed)} of {len(rows)} runs failed: {failed[0]['error']}")


def _shape(mode: str, pages: int, a: argparse.Namespace, window: int) -> tuple[int, int, int]:
    """(reference tokens, window slots, resident pages) at the end of a document (bench/kv_scaling.py's)."""
    if mode == "full":
        return PREFIX + pages * 273 + PROMPT, pages * a.tokens_per_page, pages
    resident = pages if mode == "rswa" else min(pages, a.chunk)
    return PREFIX + resident * 273 + PROMPT, window, resident


# -- the Markdown report --------------------------------------------------------------------------------

def _gb(x: Any) -> str:
    return "–" if x is None else f"{x / 1e9:.2f} GB"


def _num(x: Any, digits: int = 3) -> str:
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.{digits}g}"
    return str(x)


def markdown(data: dict[str, Any], short: bool = False) -> str:
    """The run as a Markdown report (the summary's tables; ``short``: what is printed at the end)."""
    steps = data["steps"]
    env, model = steps.get("environment", {}), steps.get("model", {})
    s = steps.get("summary", {})
    lines = []
    if not short:
        lines += [f"# GPU check, {data.get('started')}", "",
                  f"{data.get('mode')} mode on {env.get('gpu') or env.get('cpu') or data.get('device')}; torch "
                  f"{env.get('torch')}, transformers {env.get('transformers')}; model: {model.get('source')} "
                  f"({model.get('dtype')}, {_num(model.get('parameters'))} parameters); {data.get('elapsed_s')} s.", ""]
    lines += ["## Exact: the engine against transformers' generate()", "",
              "| dtype | pages | tokens | identical | max \\|Δlogit\\| | top-1 | SR-SWA max \\|Δlogit\\| | "
              "SR-SWA first divergence | SR-SWA token agreement | SR-SWA text CER |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for r in s.get("reference", []):
        lines.append(f"| {r['dtype']} | {r['pages']} | {_num(r['tokens'])} | {_num(r['identical'])} | "
                     f"{_num(r['max_abs_dlogit'])} | {_num(r['top1_agreement'])} | {_num(r['srswa_max_abs_dlogit'])} | "
                     f"{_num(r['srswa_first_divergence'])} "
                     f"| {_num(r['srswa_token_agreement'])} | {_num(r['srswa_text_cer'])} |")
    if "groups_bf16" in s:
        g = s["groups_bf16"]
        lines += ["", "## Page groups in bfloat16 (against the float32 twin)", "",
                  f"mean \\|Δlogit\\|: first group (no re-basing) {_num(g['one_shot_mean_abs_dlogit'])}, re-based "
                  f"groups {_num(g['rebased_mean_abs_dlogit'])} (ratio {_num(g['rebased_over_one_shot'])}); the first "
                  f"group run twice: max \\|Δ\\| {_num(g['one_shot_repeat_max_abs_dlogit'])}"]
        shift = g.get("page_shift_bf16") or {}
        if shift:
            lines.append(f"\na carried page's keys after one re-basing, bit for bit the exact rotation rounded once: "
                         f"{_num(shift['float32_arithmetic']['bit_identical'], 5)} (the engine's float32 arithmetic) "
                         f"against {_num(shift['bfloat16_arithmetic']['bit_identical'], 5)} (bfloat16 arithmetic)")
    if "memory" in s:
        lines += ["", "## Peak memory (CUDA allocator, above the weights)", "",
                  "| pages | engine peak | engine KV reserved | full attention peak (prefill + decode) | "
                  "+ generated KV at 1,000 tokens a page (computed) |", "|---|---|---|---|---|"]
        for p, m in s["memory"].items():
            if p == "claim":
                continue
            lines.append(f"| {p} | {_gb(m['engine_peak'])} | {_gb(m['engine_kv_reserved'])} | "
                         f"{_gb(m['full_attention_peak'])} | {_gb(m['full_attention_generated_kv_computed'])} |")
        lines.append(f"\nclaim: {CLAIMS['kv_peak_gb']['text']}")
    if "tokens_per_s" in s:
        t = s["tokens_per_s"]
        lines += ["", f"## Decode throughput, {t.get('sequences')} sequences (tokens/s)", ""]
        lines += [f"- {k}: {_num(v, 5)}" for k, v in t.items() if k not in ("claim", "sequences")]
        lines.append(f"\nclaim: {CLAIMS['tokens_per_s_16']['text']}")
    if "step_at_100_pages" in s:
        st = s["step_at_100_pages"]
        lines += ["", f"decode step at {st['pages']} pages: full / SR-SWA = {st['ratio']}× (attention alone "
                      f"{st['attention_ratio']}×; claim ~7×, random keys)"]
    lines += ["", f"steps ok: {', '.join(s.get('steps_ok', []))}; not ok: {s.get('steps_not_ok') or 'none'}", ""]
    return "\n".join(lines)


# -- command line --------------------------------------------------------------------------------------

def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=None,
                   help="the JSON (default $OUT/gpu_check.json when $OUT is set, else bench/results/gpu_check.json); "
                        "the Markdown report is written beside it (.md)")
    p.add_argument("--model-path", default=None, help="a checkpoint folder with its SHA256SUMS (loaded and "
                   "hash-checked by the engine's loader); default: random weights")
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    p.add_argument("--reduced", action="store_true", help="the reduced mode (the default without CUDA)")
    p.add_argument("--budget-s", type=float, default=480.0, help="the whole run's time (default 8 minutes)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--layers", type=int, default=None, help="decoder layers built (random weights; default: all)")
    p.add_argument("--only", default=None,
                   help=f"comma-separated steps among {', '.join(MEASURES)} (a rerun of what a first run missed; "
                        "environment, model, tokenizer and summary always run)")
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
    print(f"gpu_check: {meta['mode']} mode on {a.device}, {a.model_path or 'random ' + a.preset}, {a.dtype}; "
          f"JSON → {a.out}", flush=True)
    check = Check(a, report)
    env = report.run("environment", check.environment)
    if env["status"] != "ok":
        for name in STEPS[1:-1]:
            report.data["steps"][name] = {"status": "skipped", "error": env.get("error")}
        report.run("summary", check.summary, min_left_s=0)
        report.finish()
        return 1
    report.run("model", check.build_model)
    report.run("tokenizer", check.check_tokenizer)
    measures = [("vision", check.vision, 5.0), ("reference", check.reference, 40.0), ("groups", check.groups, 30.0),
                ("memory", check.memory, 40.0), ("throughput", check.throughput, 40.0),
                ("resident_kv", check.resident_kv, 20.0)]
    only = set(a.only.split(",")) if a.only else {name for name, _, _ in measures}
    for name, fn, min_left in measures:
        if name in only:
            report.run(name, fn, min_left_s=min_left)
        else:
            report.data["steps"][name] = {"status": "skipped", "error": NOT_ASKED}
    report.run("summary", check.summary, min_left_s=0)
    report.finish()
    print(f"json: {a.out} ({report.elapsed():.1f} s); report: {a.out.with_suffix('.md')}")
    bad = [n for n, st in report.data["steps"].items() if st.get("status") != "ok" and st.get("error") != NOT_ASKED]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
