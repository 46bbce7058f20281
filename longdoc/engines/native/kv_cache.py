"""One sequence's KV cache for R-SWA and SR-SWA: a contiguous buffer per layer.

Layout of the buffer ``[L, 2, H, R + n, D]`` (keys and values; reference
keys stored after rotary embedding, ring keys before it)::

    slots 0 … R-1                          R … R+n-1
    ┌────────┬────────┬─────┬────────┬───┬─────────────────────┐
    │ prefix │ page a │ …   │ prompt │   │ ring: newest n      │
    └────────┴────────┴─────┴────────┴───┴─────────────────────┘
     pinned    gated pages     pinned       generated tokens

The *reference* (``R`` slots, the most one group needs) holds pinned spans
(the prompt) and page spans in the order they were prefilled; the *ring*
holds the last ``n`` generated tokens, written at slot ``R + t % n``: a
decode step writes one slot and reads the buffer in place, nothing is
concatenated, copied or rolled. Attention is order-free over keys that
carry their positions, so the ring needs no reordering. The ring keeps
each token's key *before* rotation and its position (``ring_positions``);
a step rotates the ring once for all layers' reads (:meth:`window_kv`), at
the cost of rotating ``n`` keys, so that re-basing the window is exact: it
changes positions, never stored keys. Rotating at read gives the very
values a rotation at write would (same arithmetic, same rounding).

For SR-SWA each page also has summaries of its keys, per layer and head:
per block of ``block_size`` tokens the min, max and mean key (blocks never
cross pages), and per page the mean key (page gating).

Infinite decoding calls :meth:`SequenceKV.keep_pages`: the kept pages move to
the front of the reference (once per group, not per step), their spans and
summaries with them; everything else in the reference is freed for the new
group's pages. :meth:`shift_positions` re-bases rotary positions: a page
span by one more rotation of its stored keys (float32 arithmetic, one
rounding to the cache's dtype), the window by its positions alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from longdoc.engines.native.rope import Rotary, rotate


@dataclass
class Span:
    """Tokens ``[start, end)`` of the reference; ``page`` None = pinned.
    ``position``: the rotary position of the span's first token."""

    start: int
    end: int
    position: int
    page: int | None = None
    first_block: int = 0  # index of its first block in the block table (pages only)
    #: pinned spans: "prefix" (kept from group to group) or "prompt" (re-made per group)
    kind: str = "page"

    @property
    def length(self) -> int:
        return self.end - self.start


class CacheFull(RuntimeError):
    """A prefill went past the reference capacity reserved for the sequence."""


class SequenceKV:
    def __init__(self, layers: int, heads: int, head_dim: int, reference: int, window: int, rotary: Rotary,
                 block_size: int = 16, dtype: torch.dtype = torch.float32,
                 device: torch.device | str = "cpu", summaries: bool = True, max_pages: int = 64) -> None:
        if window < 1 or reference < 1:
            raise ValueError("reference and window must be at least 1")
        self.rotary = rotary
        #: cos/sin of the filled ring slots' positions for the current step (None: to compute)
        self._window_angles: tuple[torch.Tensor, torch.Tensor] | None = None
        self.layers, self.heads, self.head_dim = layers, heads, head_dim
        self.reference, self.window, self.block_size = reference, window, block_size
        self.buf = torch.zeros(layers, 2, heads, reference + window, head_dim, dtype=dtype, device=device)
        self.spans: list[Span] = []
        self.ref_len = 0
        #: generated tokens written so far (the ring holds the last ``window``)
        self.generated = 0
        self.ring_positions = torch.full((window,), -1, dtype=torch.long, device=device)
        self.summaries = summaries
        nblocks = _block_capacity(reference, block_size, max_pages)
        self.block_capacity = nblocks
        if summaries:
            self.kmin = torch.zeros(layers, heads, nblocks, head_dim, dtype=dtype, device=device)
            self.kmax = torch.zeros_like(self.kmin)
            self.kmean = torch.zeros_like(self.kmin)
            self.block_start = torch.zeros(nblocks, dtype=torch.long, device=device)
            self.block_len = torch.zeros(nblocks, dtype=torch.long, device=device)
            # per page (in the order of page_spans): mean, min and max key, for page gating
            self.pmean = torch.zeros(layers, heads, max_pages, head_dim, dtype=dtype, device=device)
            self.pmin = torch.zeros_like(self.pmean)
            self.pmax = torch.zeros_like(self.pmean)
        self.max_pages = max_pages
        self.num_blocks = 0

    # -- sizes -------------------------------------------------------------------------

    @property
    def nbytes(self) -> int:
        """Resident bytes: the buffer and the summaries."""
        total = self.buf.numel() * self.buf.element_size()
        if self.summaries:
            total += 3 * (self.kmin.numel() + self.pmean.numel()) * self.kmin.element_size()
        return total

    @staticmethod
    def bytes_for(layers: int, heads: int, head_dim: int, reference: int, window: int,
                  block_size: int = 16, dtype: torch.dtype = torch.float32, summaries: bool = True,
                  max_pages: int = 64) -> int:
        """What a cache of these sizes will hold (for reservations before it exists)."""
        item = torch.empty((), dtype=dtype).element_size()
        total = layers * 2 * heads * (reference + window) * head_dim * item
        if summaries:
            nblocks = _block_capacity(reference, block_size, max_pages)
            total += 3 * layers * heads * (nblocks + max_pages) * head_dim * item
        return total

    @property
    def window_len(self) -> int:
        return min(self.generated, self.window)

    @property
    def page_spans(self) -> list[Span]:
        return [s for s in self.spans if s.page is not None]

    @property
    def pinned_spans(self) -> list[Span]:
        return [s for s in self.spans if s.page is None]

    @property
    def pages(self) -> list[int]:
        return [s.page for s in self.spans if s.page is not None]

    # -- writing ---------------------------------------------------------------------

    def reserve_span(self, length: int, position: int, page: int | None = None, kind: str = "prompt") -> Span:
        """Claim the next ``length`` reference slots (filled layer by layer
        with :meth:`write`; pages get their summaries in :meth:`summarize`)."""
        if self.ref_len + length > self.reference:
            raise CacheFull(f"reference of {self.reference} tokens is full ({self.ref_len} + {length})")
        if page is not None and len(self.page_spans) >= self.max_pages:
            raise CacheFull(f"more than {self.max_pages} pages in one reference")
        span = Span(self.ref_len, self.ref_len + length, position, page, self.num_blocks,
                    "page" if page is not None else kind)
        self.ref_len += length
        self.spans.append(span)
        if page is not None and self.summaries:
            self.num_blocks += -(-length // self.block_size)
            if self.num_blocks > self.block_capacity:
                raise CacheFull(f"more than {self.block_capacity} blocks of summaries (too many pages)")
        return span

    def write(self, layer: int, span: Span, k: torch.Tensor, v: torch.Tensor) -> None:
        """Keys/values ``[H, span.length, D]`` of one layer into the span."""
        self.buf[layer, 0, :, span.start:span.end] = k
        self.buf[layer, 1, :, span.start:span.end] = v

    def summarize(self, span: Span) -> None:
        """Block and page summaries of a page span, every layer (after its KV is written)."""
        if not self.summaries or span.page is None:
            return
        bs = self.block_size
        for i, start in enumerate(range(span.start, span.end, bs)):
            end = min(start + bs, span.end)
            b = span.first_block + i
            keys = self.buf[:, 0, :, start:end]                       # [L, H, t, D]
            self.kmin[:, :, b] = keys.amin(dim=2)
            self.kmax[:, :, b] = keys.amax(dim=2)
            self.kmean[:, :, b] = keys.mean(dim=2)
            self.block_start[b] = start
            self.block_len[b] = end - start
        i = self.page_index(span.page)
        keys = self.buf[:, 0, :, span.start:span.end]
        self.pmean[:, :, i] = keys.mean(dim=2)
        self.pmin[:, :, i] = keys.amin(dim=2)
        self.pmax[:, :, i] = keys.amax(dim=2)

    def page_index(self, page: int) -> int:
        """Position of ``page`` among the resident pages (index into the page summaries)."""
        for i, s in enumerate(self.page_spans):
            if s.page == page:
                return i
        raise KeyError(page)

    def begin_step(self, position: int) -> None:
        """A decode token at ``position`` takes the next ring slot (evicting
        the token ``window`` steps back); its layers then :meth:`write_generated`."""
        self.ring_positions[self.generated % self.window] = position
        self.generated += 1
        self._window_angles = None

    def write_generated(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> None:
        """The current decode token's key (before rotation) and value ``[H, D]`` into its ring slot."""
        slot = self.reference + (self.generated - 1) % self.window
        self.buf[layer, 0, :, slot] = k
        self.buf[layer, 1, :, slot] = v

    def load_window(self, k: torch.Tensor, v: torch.Tensor, positions: torch.Tensor) -> None:
        """Set the ring to given generated tokens (``[L, H, t, D]`` keys
        before rotation and values, ``t <= window``; their positions): a
        window restored whole, as benchmarks and a resumed sequence need."""
        t = k.shape[2]
        if t > self.window:
            raise ValueError(f"{t} tokens do not fit a window of {self.window}")
        self.buf[:, 0, :, self.reference:self.reference + t] = k
        self.buf[:, 1, :, self.reference:self.reference + t] = v
        self.ring_positions[:t] = positions
        self.generated = t
        self._window_angles = None

    # -- reading ---------------------------------------------------------------------

    def reference_kv(self, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Every resident reference token of a layer, ``[H, ref_len, D]`` (views)."""
        return self.buf[layer, 0, :, :self.ref_len], self.buf[layer, 1, :, :self.ref_len]

    def span_kv(self, layer: int, spans: Sequence[Span]) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys/values of ``spans`` (a view when they are one run of slots)."""
        if not spans:
            empty = self.buf[layer, 0, :, :0]
            return empty, empty
        if all(a.end == b.start for a, b in zip(spans, spans[1:])):
            s, e = spans[0].start, spans[-1].end
            return self.buf[layer, 0, :, s:e], self.buf[layer, 1, :, s:e]
        idx = torch.cat([torch.arange(s.start, s.end, device=self.buf.device) for s in spans])
        return self.buf[layer, 0, :, idx], self.buf[layer, 1, :, idx]

    def window_kv(self, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The ring's filled slots ``[H, min(t, n), D]``: keys rotated to
        their positions (the angles computed once a step), values a view."""
        end = self.reference + self.window_len
        if self._window_angles is None:
            self._window_angles = self.rotary.cos_sin(self.ring_positions[:self.window_len])
        cos, sin = self._window_angles
        return rotate(self.buf[layer, 0, :, self.reference:end], cos, sin), self.buf[layer, 1, :, self.reference:end]

    # -- infinite decoding -------------------------------------------------------------

    def keep_pages(self, pages: Sequence[int]) -> list[Span]:
        """Keep the prefix and the spans of ``pages`` (in their order), moved
        to the front of the reference with their summaries; the prompt and
        other pages are freed. Returns the kept spans."""
        old = self.page_spans
        wanted = set(pages)
        keep = [s for s in self.spans if s.kind == "prefix" or s.page in wanted]
        kept_pages = [s for s in keep if s.page is not None]
        if self.summaries:
            order = [old.index(s) for s in kept_pages]
            for t in (self.pmean, self.pmin, self.pmax):
                t[:, :, :len(order)] = t[:, :, order].clone()
        cursor, block = 0, 0
        moved: list[Span] = []
        for s in keep:
            n = s.length
            if s.start != cursor:
                self.buf[:, :, :, cursor:cursor + n] = self.buf[:, :, :, s.start:s.end].clone()
            nb = -(-n // self.block_size) if self.summaries and s.page is not None else 0
            if self.summaries and s.first_block != block:
                src = slice(s.first_block, s.first_block + nb)
                dst = slice(block, block + nb)
                for t in (self.kmin, self.kmax, self.kmean):
                    t[:, :, dst] = t[:, :, src].clone()
                self.block_len[dst] = self.block_len[src].clone()
            if nb:
                self.block_start[block:block + nb] = torch.arange(nb, device=self.buf.device) * self.block_size + cursor
            moved.append(Span(cursor, cursor + n, s.position, s.page, block, s.kind))
            cursor += n
            block += nb
        self.spans = moved
        self.ref_len = cursor
        self.num_blocks = block
        return moved

    def shift_positions(self, span: Span | None, delta: int) -> None:
        """Re-base a reference span by ``delta`` positions (its keys are
        rotated once more: :meth:`Rotary.shift`, one rounding to the cache's
        dtype), or, with ``span=None``, the window (its positions only: exact)."""
        if delta == 0:
            return
        if span is None:
            filled = self.ring_positions >= 0
            self.ring_positions[filled] += delta
            self._window_angles = None
            return
        keys = self.buf[:, 0, :, span.start:span.end]
        self.buf[:, 0, :, span.start:span.end] = self.rotary.shift(keys, delta)
        span.position += delta
        if self.summaries:
            self.summarize(span)

    def window_first_position(self) -> int | None:
        filled = self.ring_positions[self.ring_positions >= 0]
        return int(filled.min()) if filled.numel() else None

    def drop(self) -> None:
        """Free the buffer (a closed or cancelled sequence)."""
        self.buf = self.buf.new_zeros(0)
        self.spans, self.ref_len, self.generated = [], 0, 0
        if self.summaries:
            self.kmin = self.kmax = self.kmean = self.buf.new_zeros(0)
            self.pmean = self.pmin = self.pmax = self.buf.new_zeros(0)


def _block_capacity(reference: int, block_size: int, max_pages: int) -> int:
    """Blocks the reference can need: a page may end mid-block, so each page adds at most one."""
    return -(-reference // block_size) + max_pages
