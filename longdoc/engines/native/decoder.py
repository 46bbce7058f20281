"""The decoder driven step by step over longdoc's own caches.

transformers' ``UnlimitedOcrTextModel`` provides the layers (attention
projections, MoE, norms) and their weights; this module runs them with a
:class:`~longdoc.engines.native.kv_cache.SequenceKV` per sequence instead of
transformers' cache objects, so the reference can be gated, paged out and
re-based:

- :meth:`Decoder.prefill` appends one span of reference tokens (a page's
  visual tokens or the prompt), causal within the span, attending to every
  reference token already resident; pages get their SR-SWA summaries;
- :meth:`Decoder.step` decodes one token for each of several sequences in
  one batch (projections, MoE and the head batched; attention per
  sequence, since each holds its own cache), with R-SWA or SR-SWA.

Rotary cos/sin are the model's own rotary module's
(:class:`~longdoc.engines.native.rope.Rotary`), as in the reference
``generate()``; re-basing shifts are exact rotations on top of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import torch

from longdoc.engines.native.attention import attend
from longdoc.engines.native.kv_cache import SequenceKV
from longdoc.engines.native.rope import Rotary, rotate
from longdoc.engines.native.srswa import SrswaSettings, rswa_step, srswa_step

Mode = Literal["rswa", "srswa"]


class Decoder:
    def __init__(self, text_model: Any, lm_head: torch.nn.Module, mode: Mode = "rswa",
                 srswa: SrswaSettings | None = None, layers: int | None = None) -> None:
        config = text_model.config
        self.config = config
        self.embed = text_model.embed_tokens
        self.layers = list(text_model.layers)[: layers or config.num_hidden_layers]
        self.norm = text_model.norm
        self.lm_head = lm_head
        self.heads = config.num_attention_heads
        self.head_dim = config.head_dim
        if config.num_key_value_heads != self.heads:
            raise ValueError("the native engine's cache assumes multi-head attention (as Unlimited-OCR has)")
        self.scale = self.head_dim ** -0.5
        self.mode: Mode = mode
        self.srswa = srswa or SrswaSettings()
        weight = self.embed.weight
        self.dtype, self.device = weight.dtype, weight.device
        self.rotary = Rotary(text_model.rotary_emb, self.dtype, self.device)

    # -- caches -------------------------------------------------------------------------

    def new_cache(self, reference: int, window: int, max_pages: int = 64) -> SequenceKV:
        return SequenceKV(len(self.layers), self.heads, self.head_dim, reference, window, self.rotary,
                          block_size=self.srswa.block_size, dtype=self.dtype, device=self.device,
                          summaries=self.mode == "srswa", max_pages=max_pages)

    def cache_bytes(self, reference: int, window: int, max_pages: int = 64) -> int:
        return SequenceKV.bytes_for(len(self.layers), self.heads, self.head_dim, reference, window,
                                    self.srswa.block_size, self.dtype, self.mode == "srswa", max_pages)

    # -- prefill -----------------------------------------------------------------------

    @torch.no_grad()
    def prefill(self, kv: SequenceKV, embeds: torch.Tensor, position: int, page: int | None = None,
                kind: str = "prompt") -> torch.Tensor:
        """Append ``embeds`` ``[T, hidden]`` at rotary positions ``position…``
        as one reference span; returns the logits after its last token."""
        t = embeds.shape[0]
        span = kv.reserve_span(t, position, page, kind)
        cos, sin = self.rotary.cos_sin(torch.arange(position, position + t, device=self.device))
        # causal within the span, everything resident before it
        cols = torch.arange(span.end, device=self.device)
        rows = torch.arange(t, device=self.device)
        mask = (cols[None, :] < span.start) | (cols[None, :] - span.start <= rows[:, None])
        h = embeds[None].to(self.dtype)
        for i, layer in enumerate(self.layers):
            attn = layer.self_attn
            x = layer.input_layernorm(h)
            q, k, v = (self._heads(p(x)) for p in (attn.q_proj, attn.k_proj, attn.v_proj))   # [1, H, T, D]
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
            kv.write(i, span, k[0], v[0])
            keys, values = kv.buf[i, 0, :, :span.end], kv.buf[i, 1, :, :span.end]
            out = attend(q[0], keys, values, self.scale, mask=mask[None]).out
            h = h + attn.o_proj(out.transpose(0, 1).reshape(1, t, -1))
            h = h + layer.mlp(layer.post_attention_layernorm(h))
        kv.summarize(span)
        return self.lm_head(self.norm(h[:, -1]))[0]

    # -- decode ------------------------------------------------------------------------

    @torch.no_grad()
    def step(self, caches: Sequence[SequenceKV], tokens: Sequence[int], positions: Sequence[int],
             focus: Sequence[frozenset[int]] | None = None) -> torch.Tensor:
        """One token for each sequence, batched; returns logits ``[S, vocab]``."""
        n = len(caches)
        ids = torch.tensor(list(tokens), device=self.device)
        h = self.embed(ids)[:, None, :]                                     # [S, 1, hidden]
        cos, sin = self.rotary.cos_sin(torch.tensor(list(positions), device=self.device))
        cos, sin = cos[:, None, None, :], sin[:, None, None, :]              # [S, 1, 1, D]
        for kv, p in zip(caches, positions):
            kv.begin_step(p)
        focus = focus or [frozenset()] * n
        for i, layer in enumerate(self.layers):
            attn = layer.self_attn
            x = layer.input_layernorm(h)
            q, k, v = (self._heads(p(x)) for p in (attn.q_proj, attn.k_proj, attn.v_proj))   # [S, H, 1, D]
            q = rotate(q, cos, sin)   # the ring keeps k before rotation (kv_cache)
            outs = []
            for s, kv in enumerate(caches):
                kv.write_generated(i, k[s, :, 0], v[s, :, 0])
                if self.mode == "srswa":
                    outs.append(srswa_step(q[s], kv, i, self.scale, self.srswa, focus[s]))
                else:
                    outs.append(rswa_step(q[s], kv, i, self.scale))
            out = torch.stack(outs)                                         # [S, H, 1, D]
            h = h + attn.o_proj(out.transpose(1, 2).reshape(n, 1, -1))
            h = h + layer.mlp(layer.post_attention_layernorm(h))
        return self.lm_head(self.norm(h[:, 0]))

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        return x.view(b, t, self.heads, self.head_dim).transpose(1, 2)
