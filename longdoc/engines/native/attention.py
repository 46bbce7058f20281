"""Exact attention over pieces of a cache, merged by log-sum-exp.

Attention over a set of keys can be computed piece by piece and combined
exactly: for each piece ``i`` keep its softmax-weighted output ``o_i`` and
the log of its normaliser ``l_i = logsumexp(scores_i)``; then::

    l = logsumexp_i(l_i)        o = sum_i exp(l_i - l) * o_i

which equals attention over the union of the pieces (FlashAttention's
split-KV merge). R-SWA attends to the pinned reference and the window ring
as two pieces; SR-SWA to the pinned prompt, the selected blocks of the gated
pages and the window. Shapes: queries ``[H, Q, D]``, keys and values
``[H, N, D]``; a piece may carry a boolean ``mask`` ``[H, Q, N]`` (True =
attend) or ``[H, N]`` for a single query.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Part:
    """One piece's output ``[H, Q, D]`` and log-normaliser ``[H, Q]``."""

    out: torch.Tensor
    lse: torch.Tensor


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float,
           mask: torch.Tensor | None = None) -> Part:
    """Softmax attention of ``q`` over ``k``/``v`` (one piece). Rows with no
    key to attend to get ``lse = -inf`` and a zero output, so merging them
    changes nothing."""
    scores = torch.matmul(q, k.transpose(-1, -2))
    if scores.dtype in (torch.bfloat16, torch.float16):
        scores = scores.float()  # softmax statistics in float32
    scores = scores * scale
    if mask is not None:
        if mask.dim() == 2:
            mask = mask[:, None, :]
        scores = scores.masked_fill(~mask, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    safe = torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse))
    weights = torch.exp(scores - safe[..., None])
    out = torch.matmul(weights.to(v.dtype), v)
    return Part(out=out, lse=lse)


def merge(parts: list[Part]) -> torch.Tensor:
    """The exact attention output over the union of ``parts``."""
    parts = [p for p in parts if p.out.numel()]
    if len(parts) == 1:
        return parts[0].out
    lse = torch.stack([p.lse for p in parts])            # [P, H, Q]
    total = torch.logsumexp(lse, dim=0)                   # [H, Q]
    safe = torch.where(torch.isfinite(total), total, torch.zeros_like(total))
    weights = torch.exp(lse - safe)                       # [P, H, Q]
    out = sum(w[..., None].to(p.out.dtype) * p.out for w, p in zip(weights, parts))
    return out
