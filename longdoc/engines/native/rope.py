"""Rotary position embedding helpers for keys stored after rotation.

The decoder stores keys already rotated to their positions (so a decode
step never rotates the cache). Moving tokens to other positions, as
infinite decoding does when a new page group starts from position 0, is
one more rotation: rotating by ``p`` then by ``delta`` equals rotating by
``p + delta`` (rotations of each frequency pair compose), so a shift is
exact up to floating-point rounding. The convention is transformers'
``rotate_half`` one (``emb = cat(freqs, freqs)``), as the model uses.
"""

from __future__ import annotations

import torch


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def cos_sin(positions: torch.Tensor, inv_freq: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin ``[len(positions), D]`` for integer ``positions``."""
    freqs = positions.to(torch.float64)[:, None] * inv_freq.to(device=positions.device, dtype=torch.float64)[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """``x`` ``[..., T, D]`` rotated by the angles in cos/sin ``[T, D]``."""
    return x * cos + rotate_half(x) * sin


def shift(x: torch.Tensor, delta: int, inv_freq: torch.Tensor) -> torch.Tensor:
    """Keys ``[..., T, D]`` rotated at positions ``p`` → the same keys at ``p + delta``."""
    if delta == 0:
        return x
    cos, sin = cos_sin(torch.tensor([delta], device=x.device), inv_freq, x.dtype)
    return rotate(x, cos, sin)
