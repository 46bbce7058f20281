"""Rotary position embedding for keys stored after rotation: the model's own.

Angles come from the checkpoint's own rotary module
(transformers' ``UnlimitedOcrTextRotaryEmbedding``: its ``inv_freq``, its
float32 angle arithmetic, its ``attention_scaling``), so prefill and decode
rotate queries and keys with exactly the cos/sin the reference ``generate()``
uses. The convention is transformers' ``rotate_half`` one
(``emb = cat(freqs, freqs)``).

The decoder stores keys already rotated to their positions (so a decode
step never rotates the cache). Moving tokens to other positions, as
infinite decoding does when a new page group starts from position 0, is
one more rotation: rotating by ``p`` then by ``delta`` equals rotating by
``p + delta`` (the rotations of each frequency pair compose). A shift is
computed in float32 from float64 angles and rounded to the cache's dtype
once: in bfloat16 a shift done in bfloat16 (cos/sin rounded to 8 bits,
three roundings) moved keys by ~1 % per shift; this way it costs one
rounding, the same a key gets when it is first stored.
"""

from __future__ import annotations

from typing import Any

import torch


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """``x`` ``[..., T, D]`` rotated by the angles in cos/sin ``[T, D]``."""
    return x * cos + rotate_half(x) * sin


class Rotary:
    """cos/sin for integer positions from the model's rotary module, and
    exact shifts of stored keys."""

    def __init__(self, module: Any, dtype: torch.dtype, device: torch.device | str) -> None:
        self.module = module
        self.dtype = dtype
        self.device = device
        #: the module's inverse frequencies (float32 in transformers), as float64 for shifts
        self.inv_freq = module.inv_freq.detach().to(device=device, dtype=torch.float64)
        self._probe = torch.empty(0, dtype=dtype, device=device)

    def cos_sin(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sin ``[len(positions), D]`` in the model's dtype, as the
        model's own rotary module computes them for ``position_ids``."""
        cos, sin = self.module(self._probe, positions.to(self.device)[None])
        return cos[0], sin[0]

    def shift(self, x: torch.Tensor, delta: int) -> torch.Tensor:
        """Keys ``[..., T, D]`` rotated at positions ``p`` → the same keys at
        ``p + delta``: the rotation by ``delta`` in float32 or wider (angles
        in float64), rounded to ``x``'s dtype once."""
        if delta == 0:
            return x
        wide = torch.promote_types(x.dtype, torch.float32)
        freqs = float(delta) * self.inv_freq.to(x.device)
        emb = torch.cat((freqs, freqs), dim=-1)
        return rotate(x.to(wide), emb.cos().to(wide), emb.sin().to(wide)).to(x.dtype)
