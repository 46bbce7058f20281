"""One decode step's attention over a :class:`SequenceKV`: R-SWA and SR-SWA.

R-SWA (Unlimited-OCR's paper, arXiv 2606.23050; what transformers' model
does): the query attends to the whole reference (every resident page and
the pinned prompt) and to a sliding window over the generated tokens (the
checkpoint's ``sliding_window``), two pieces merged exactly.

SR-SWA has no public paper. What is known of it is a description: narrow
the reference a step looks at (pages first, then the most relevant tokens
inside them), keep the reference/page tokens and the generated window as
R-SWA does, and attend exactly, so a step costs about the same whatever the
page count; a third-party engine describes Unlimited-OCR-2's version as
block-sparse attention over 32-token key blocks summarised per block, the
candidates restricted to the query's page (at most ~512 keys a step). What
follows is **longdoc's own implementation** of that described mechanism,
not the model's: it is not known to match what Unlimited-OCR-2 was trained
with. From the paper (R-SWA): the pinned reference and prompt, the sliding
window over generated tokens, exact attention. longdoc's design: the page
gating, the block scores, the top-k selection and their sizes::

    page gating     score every resident page from its summary (mean key,
                    or the min/max bound), keep the top ``top_pages``, and
                    always the focus pages (the page being transcribed and
                    the next, tracked from the <page> separators emitted)
    token selector  inside them, score every block of ``block_size`` keys
                    (16 by default, not the described 32) per head by its
                    upper bound  Σ_d max(q_d·min_d, q_d·max_d)  (Quest) and
                    keep the top ``top_blocks`` per head
    attention       exact over  pinned prompt ∪ selected blocks ∪ window,
                    the pieces merged by log-sum-exp

With every page and every block selected it is R-SWA (a test checks it).
The cost of a step is then about constant in the number of pages: gating
reads one summary per page, the selector only the gated pages' blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

from longdoc.engines.native.attention import Part, attend, merge
from longdoc.engines.native.kv_cache import SequenceKV, Span


@dataclass(frozen=True)
class SrswaSettings:
    top_pages: int = 4
    top_blocks: int = 64
    block_size: int = 16
    gating: Literal["mean", "bound"] = "mean"

    def __post_init__(self) -> None:
        if self.top_pages < 1 or self.top_blocks < 1 or self.block_size < 1:
            raise ValueError("top_pages, top_blocks and block_size must be at least 1")


@dataclass
class Selection:
    """The reference keys one head set attends to: slot indexes ``[H, K]``
    and which of them are real (``valid``; a page's last block may be short)."""

    pages: list[int]
    index: torch.Tensor
    valid: torch.Tensor


def rswa_step(q: torch.Tensor, kv: SequenceKV, layer: int, scale: float) -> torch.Tensor:
    """``q`` ``[H, 1, D]`` → the step's attention output ``[H, 1, D]``."""
    k, v = kv.reference_kv(layer)
    wk, wv = kv.window_kv(layer)
    return merge([attend(q, k, v, scale), attend(q, wk, wv, scale)])


def srswa_step(q: torch.Tensor, kv: SequenceKV, layer: int, scale: float, settings: SrswaSettings,
               focus: frozenset[int] = frozenset()) -> torch.Tensor:
    parts: list[Part] = []
    pk, pv = kv.span_kv(layer, kv.pinned_spans)
    parts.append(attend(q, pk, pv, scale))
    chosen = select(q, kv, layer, settings, focus)
    if chosen is not None:
        k = _gather(kv.buf[layer, 0], chosen.index)
        v = _gather(kv.buf[layer, 1], chosen.index)
        parts.append(attend(q, k, v, scale, mask=chosen.valid))
    wk, wv = kv.window_kv(layer)
    parts.append(attend(q, wk, wv, scale))
    return merge(parts)


def select(q: torch.Tensor, kv: SequenceKV, layer: int, settings: SrswaSettings,
           focus: frozenset[int] = frozenset()) -> Selection | None:
    """Gate pages, then pick blocks per head (see the module docstring);
    None when no page is resident."""
    spans = kv.page_spans
    if not spans:
        return None
    pages = gate_pages(q, kv, layer, settings, focus)
    blocks = torch.cat([torch.arange(s.first_block, s.first_block + _nblocks(s, kv.block_size),
                                     device=q.device) for s in pages])
    qh = q[:, 0, :]                                                     # [H, D]
    lo, hi = kv.kmin[layer][:, blocks], kv.kmax[layer][:, blocks]       # [H, nb, D]
    bound = torch.maximum(qh[:, None, :] * lo, qh[:, None, :] * hi).sum(-1)   # [H, nb]
    take = min(settings.top_blocks, blocks.numel())
    best = blocks[bound.topk(take, dim=-1).indices]                     # [H, take] block ids
    offsets = torch.arange(kv.block_size, device=q.device)
    index = kv.block_start[best][..., None] + offsets                   # [H, take, bs]
    valid = offsets < kv.block_len[best][..., None]
    index = torch.where(valid, index, kv.block_start[best][..., None])
    return Selection(pages=[s.page for s in pages if s.page is not None],
                     index=index.flatten(1), valid=valid.flatten(1))


def gate_pages(q: torch.Tensor, kv: SequenceKV, layer: int, settings: SrswaSettings,
               focus: frozenset[int]) -> list[Span]:
    """The resident pages a step looks at, in reference order."""
    spans = kv.page_spans
    if len(spans) <= settings.top_pages:
        return spans
    qh = q[:, 0, :]                                                     # [H, D]
    n = len(spans)
    if settings.gating == "mean":
        score = torch.einsum("hd,hpd->hp", qh, kv.pmean[layer][:, :n])
    else:
        lo, hi = kv.pmin[layer][:, :n], kv.pmax[layer][:, :n]
        score = torch.maximum(qh[:, None, :] * lo, qh[:, None, :] * hi).sum(-1)
    score = score.amax(dim=0)                                           # a page any head wants
    keep = {i for i, s in enumerate(spans) if s.page in focus}
    for i in score.argsort(descending=True).tolist():
        if len(keep) >= settings.top_pages:
            break
        keep.add(i)
    return [spans[i] for i in sorted(keep)]


def _nblocks(span: Span, block_size: int) -> int:
    return -(-span.length // block_size)


def _gather(buf: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``buf`` ``[H, S, D]`` at per-head slots ``index`` ``[H, K]`` → ``[H, K, D]``."""
    return torch.gather(buf, 1, index[..., None].expand(-1, -1, buf.shape[-1]))
