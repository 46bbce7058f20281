"""The native engine's model: a checkpoint folder checked file by file, or
random weights of the same architecture.

A checkpoint folder holds transformers' files (``config.json``, the
``*.safetensors`` weights, the tokenizer) and a ``SHA256SUMS`` manifest in
``sha256sum`` format. Every weight file is hashed and compared before
anything is loaded; a missing manifest, an unlisted weight file or a
mismatch refuses the folder (:class:`~longdoc.errors.ModelFilesInvalid`),
and so do weights that do not fit the architecture once loaded (a tensor
missing, unexpected or of another shape: :func:`fits`), rather than run on
the tensors transformers would initialise at random in their place.
The model version recorded with each page is the folder's name and the
first 12 hex digits of the manifest's own SHA-256.

:func:`random_model` builds ``UnlimitedOcrForConditionalGeneration`` with
random weights from a preset: ``tiny`` (exactness tests, end-to-end runs on
CPU) or ``real`` (the published dimensions: 12 decoder layers, 10 heads ×
128, 64 routed experts; for benchmarks). :func:`write_checkpoint` saves one
as a checkpoint folder with its manifest and a byte-level tokenizer.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longdoc.errors import EngineUnavailable, ModelFilesInvalid

MANIFEST = "SHA256SUMS"
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
#: the specials the engine needs from a tokenizer
BOS, EOS, IMAGE, PAGE = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<image>", "<PAGE>"


def _torch() -> Any:
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError as exc:
        raise EngineUnavailable(
            "The native engine needs torch and transformers, which are not installed.",
            hint="Install the torch extra: pip install 'longdoc[torch]'.") from exc
    return torch


# -- presets ---------------------------------------------------------------------------

def text_config(preset: str, layers: int | None = None, window: int = 128) -> dict[str, Any]:
    cfg: dict[str, Any]
    if preset == "tiny":
        cfg = dict(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=4, n_routed_experts=4, num_experts_per_tok=2,
                   moe_intermediate_size=32, n_shared_experts=1)
    elif preset == "real":
        cfg = dict(vocab_size=129280, hidden_size=1280, intermediate_size=6848, num_hidden_layers=12,
                   num_attention_heads=10, num_key_value_heads=10, n_routed_experts=64, num_experts_per_tok=6,
                   moe_intermediate_size=896, n_shared_experts=2)
    else:
        raise ValueError(f"unknown preset {preset!r} (tiny, real)")
    if layers is not None:
        cfg["num_hidden_layers"] = layers
    cfg.update(sliding_window=window, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
               bos_token_id=0, eos_token_id=1)
    return cfg


def vision_config(preset: str) -> dict[str, Any]:
    if preset == "tiny":
        return dict(sam_config=dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, mlp_dim=64,
                                    output_channels=16, downsample_channels=[32, 64], global_attn_indexes=[1],
                                    window_size=4),
                    encoder_config=dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                        num_attention_heads=2))
    return {}


def random_model(preset: str = "tiny", seed: int = 0, dtype: Any = None, layers: int | None = None,
                 window: int = 128) -> Any:
    """``UnlimitedOcrForConditionalGeneration`` with random weights (eval mode)."""
    torch = _torch()
    from transformers import UnlimitedOcrConfig, UnlimitedOcrForConditionalGeneration

    torch.manual_seed(seed)
    vocab = text_config(preset, layers, window)["vocab_size"]
    config = UnlimitedOcrConfig(vision_config=vision_config(preset), text_config=text_config(preset, layers, window),
                                image_token_id=vocab - 1)
    model = UnlimitedOcrForConditionalGeneration(config)
    if dtype is not None:
        model = model.to(dtype)
    use_eager_experts(model)
    return model.eval()


def use_eager_experts(model: Any) -> None:
    """transformers' grouped-GEMM experts need float32 or lower; the eager
    loop runs any dtype (float64 in the exactness tests) and on any device."""
    torch = _torch()
    if model.dtype in (torch.float32, torch.bfloat16, torch.float16):
        return
    for config in (model.config, getattr(model.config, "text_config", None)):
        if config is not None:
            config._experts_implementation = "eager"


# -- checkpoint folders ----------------------------------------------------------------

@dataclass(frozen=True)
class Checkpoint:
    path: Path
    version: str


def verify(path: str | Path) -> Checkpoint:
    """Check every weight file of ``path`` against its ``SHA256SUMS``."""
    folder = Path(path)
    if not folder.is_dir():
        raise ModelFilesInvalid(f"The model folder {folder} does not exist.", path=str(folder))
    manifest = folder / MANIFEST
    if not manifest.is_file():
        raise ModelFilesInvalid(f"The model folder {folder} has no {MANIFEST} manifest.", path=str(folder))
    listed = _read_manifest(manifest)
    weights = sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith(WEIGHT_SUFFIXES))
    if not weights:
        raise ModelFilesInvalid(f"The model folder {folder} holds no weight files.", path=str(folder))
    for file in weights:
        expected = listed.get(file.name)
        if expected is None:
            raise ModelFilesInvalid(f"{file.name} in {folder} is not listed in {MANIFEST}.", file=file.name)
        actual = sha256_file(file)
        if actual != expected:
            raise ModelFilesInvalid(f"{file.name} in {folder} does not match {MANIFEST} "
                                    f"(SHA-256 {actual[:12]}…, expected {expected[:12]}…).", file=file.name)
    for name in listed:
        if not (folder / name).is_file():
            raise ModelFilesInvalid(f"{name}, listed in {MANIFEST}, is missing from {folder}.", file=name)
    digest = hashlib.sha256(manifest.read_bytes()).hexdigest()[:12]
    return Checkpoint(folder, f"{folder.name}@{digest}")


def load(path: str | Path, dtype: Any, device: str) -> tuple[Any, Any, Checkpoint]:
    """(model, tokenizer, checkpoint) from a verified folder."""
    checkpoint = verify(path)
    _torch()
    from transformers import AutoTokenizer, UnlimitedOcrForConditionalGeneration

    try:
        # mismatched shapes are reported (not raised) so that fits() names them with the rest
        loaded: Any = UnlimitedOcrForConditionalGeneration.from_pretrained(  # (model, loading info)
            checkpoint.path, dtype=dtype, local_files_only=True, output_loading_info=True,
            ignore_mismatched_sizes=True)
        model, info = loaded
        tokenizer = AutoTokenizer.from_pretrained(checkpoint.path, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ModelFilesInvalid(f"The model in {checkpoint.path} could not be loaded: {exc}") from exc
    fits(info, checkpoint.path)
    use_eager_experts(model)
    return model.to(device).eval(), tokenizer, checkpoint


#: tensor names a refusal lists, per kind
SHOWN_NAMES = 3


def fits(info: dict[str, Any], folder: Path) -> None:
    """Refuse weights that do not fit the architecture: any tensor the model
    has and the checkpoint lacks (transformers would initialise it at random),
    any the checkpoint has and the model does not take, any of another shape.
    ``info`` is ``from_pretrained(..., output_loading_info=True)``'s report.
    Raises :class:`ModelFilesInvalid` naming the first few of each."""
    found = {"missing": sorted(info.get("missing_keys") or ()),
             "unexpected": sorted(info.get("unexpected_keys") or ()),
             "of another shape": sorted(str(k[0]) for k in info.get("mismatched_keys") or ())}
    found = {kind: names for kind, names in found.items() if names}
    if not found:
        return
    from transformers import __version__ as transformers_version

    listed = "; ".join(f"{len(names)} {kind} ({', '.join(names[:SHOWN_NAMES])}"
                       f"{', …' if len(names) > SHOWN_NAMES else ''})" for kind, names in found.items())
    raise ModelFilesInvalid(
        f"The weights in {folder} do not fit transformers' UnlimitedOcrForConditionalGeneration: tensors {listed}. "
        "It is a checkpoint of another revision or with renamed tensors; nothing is run on "
        "freshly initialised weights.",
        hint=f"Use an Unlimited-OCR checkpoint that transformers {transformers_version} loads as it is "
             "(its config.json and tensor names unchanged).",
        path=str(folder), **{kind.replace(" ", "_"): names[:SHOWN_NAMES] for kind, names in found.items()})


def write_checkpoint(model: Any, path: str | Path) -> Checkpoint:
    """Save ``model`` (e.g. :func:`random_model`) with a byte-level tokenizer
    and the manifest, as a folder :func:`load` accepts."""
    folder = Path(path)
    model.save_pretrained(folder)
    byte_tokenizer(model.config.text_config.vocab_size, model.config.image_token_id).save_pretrained(folder)
    lines = [f"{sha256_file(p)}  {p.name}" for p in sorted(folder.iterdir())
             if p.is_file() and p.name.endswith(WEIGHT_SUFFIXES)]
    (folder / MANIFEST).write_text("\n".join(lines) + "\n")
    return verify(folder)


def byte_tokenizer(vocab_size: int, image_token_id: int) -> Any:
    """A byte-level tokenizer (the 256 bytes and the specials) for a random
    model's checkpoint: ids 0 and 1 are BOS and EOS, ``image_token_id`` the
    image placeholder, the page separator right after the bytes."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {BOS: 0, EOS: 1}
    for ch in sorted(alphabet):
        vocab[ch] = len(vocab)
    vocab[PAGE] = len(vocab)
    if len(vocab) >= image_token_id or image_token_id >= vocab_size:
        raise ValueError("vocabulary too small for a byte tokenizer")
    vocab[IMAGE] = image_token_id
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=BOS, eos_token=EOS)
    fast.add_special_tokens({"additional_special_tokens": [PAGE, IMAGE]})
    return fast


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _read_manifest(path: Path) -> dict[str, str]:
    listed: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2 or len(parts[0]) != 64:
            raise ModelFilesInvalid(f"{path} has a line that is not '<sha256>  <file>': {line[:80]!r}")
        listed[parts[1].lstrip("*")] = parts[0].lower()
    return listed


def describe(model: Any) -> str:
    """One line for logs: the decoder's dimensions."""
    t = model.config.text_config
    return json.dumps({"layers": t.num_hidden_layers, "heads": t.num_attention_heads, "head_dim": t.head_dim,
                       "experts": t.n_routed_experts, "window": t.sliding_window})
