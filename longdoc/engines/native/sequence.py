"""One document's decode over its page groups: infinite decoding.

A :class:`DocumentSequence` holds the document's
:class:`~longdoc.engines.native.kv_cache.SequenceKV` from its first group to
its close. For each group::

    start_group(carried, new pages)
      keep_pages(carried)      the overlap pages' KV and the window stay,
                               every other page of the old group is freed
      re-base (switch)         prefix at 0, carried pages after it, the new
                               pages, the prompt, then the window: each
                               group starts from position 0, exactly
      prefill new pages        each page encoded once, then the prompt
    decode                     the scheduler steps it (batched with other
                               documents); accept() reads each token:
                               <PAGE> closes a page, EOS ends the document,
                               a page still open after max_tokens_per_page
                               is cut (and marked so)

The first token is chosen from the prefill's logits, as the reference
``generate()`` chooses it (with the n-gram guard), and is the first of
page 1's text unless it is a separator. The guard's history is what the
reference searches: the first group's reference ids (BOS, the image
placeholders, the prompt: :meth:`NativeModel.reference_ids`) then every
generated token, its last ``window`` ids. The group ends when the last
page it must transcribe is closed; the token that closed it is kept
(``pending``) and fed first in the next group, so the decode (and the
guard's history) continues as if the document were one sequence. Context
pages the sequence did not carry (the first group after a resume) are
prefilled and transcribed, and their text dropped: each page has one owner.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from longdoc.engines.native.kv_cache import SequenceKV
from longdoc.engines.native.ngram import NGramGuard
from longdoc.engines.native.runtime import NativeModel

_SEP_TEXT = re.compile(r"<\s*page\s*>\s*$", re.IGNORECASE)
#: the most tokens a tokenizer without a <PAGE> token spells it with
_SEP_PIECES = 8


@dataclass
class PageText:
    page: int
    ids: list[int] = field(default_factory=list)
    closed: bool = False
    cut: bool = False
    #: the document ended (EOS) before this page was written
    missing: bool = False


def reference_tokens(model: NativeModel, max_group_pages: int) -> int:
    """The most reference tokens one group holds: BOS, ``max_group_pages`` pages, the prompt."""
    return 1 + max_group_pages * model.visual_tokens_per_page + len(model.prompt_ids())


def peak_bytes(model: NativeModel, window: int, max_group_pages: int) -> int:
    """The most one document's cache holds (its admission reservation), before it exists."""
    return model.decoder.cache_bytes(reference_tokens(model, max_group_pages), window, max_group_pages)


class DocumentSequence:
    def __init__(self, model: NativeModel, window: int, max_group_pages: int, max_tokens_per_page: int,
                 rebase: bool = True, guard: NGramGuard | None = None) -> None:
        self.model = model
        self.decoder = model.decoder
        self.window = window
        self.max_tokens_per_page = max_tokens_per_page
        self.rebase = rebase
        self.prefix = [model.bos_id]
        self.prompt = model.prompt_ids()
        self.reference = reference_tokens(model, max_group_pages)
        self.max_group_pages = max_group_pages
        self.kv: SequenceKV | None = None
        self.pending: int | None = None
        self.position = 0
        self.ended = False
        self.pages: list[PageText] = []
        self._current = 0
        #: pages encoded, for the "each page encoded once" check
        self.encoded: list[int] = []
        self.guard = guard or NGramGuard()
        #: the last ids of the sequence: the reference's then the generated ones (the guard's window)
        self.history: deque[int] = deque(maxlen=max(1, self.guard.window))
        #: every token the model chose in this group, in order (separators and EOS included)
        self.generated: list[int] = []
        #: indexes into ``generated`` before which the engine fed a token of its own instead
        #: of the model's last (a <PAGE> after a cut page, or after an early EOS)
        self.forced: list[int] = []

    # -- sizes -----------------------------------------------------------------------

    def peak_bytes(self) -> int:
        """The most this sequence's cache will hold (its admission reservation)."""
        return peak_bytes(self.model, self.window, self.max_group_pages)

    @property
    def resident_pages(self) -> list[int]:
        return self.kv.pages if self.kv is not None else []

    # -- a group -----------------------------------------------------------------------

    def start_group(self, carried: list[int], new_pages: list[tuple[int, Any]], transcribe: list[int]) -> None:
        """Set the cache up for a group: keep ``carried``, prefill ``new_pages``
        (page number, visual tokens), then decode ``transcribe`` in order."""
        d = self.decoder
        first = self.kv is None
        if self.kv is None:
            self.kv = d.new_cache(self.reference, self.window, self.max_group_pages)
            d.prefill(self.kv, self.model.embed_ids(self.prefix), 0, kind="prefix")
            position = len(self.prefix)
            self.history.extend(self.model.reference_ids([int(e.shape[0]) for _, e in new_pages]))
        else:
            self.kv.keep_pages(carried)
            position = self._rebase_pages() if self.rebase else self.position
        for page, embeds in new_pages:
            d.prefill(self.kv, embeds, position, page)
            self.encoded.append(page)
            position += int(embeds.shape[0])
        logits = d.prefill(self.kv, self.model.embed_ids(self.prompt), position)
        position += len(self.prompt)
        if self.kv.generated:
            if self.rebase:
                oldest = self.kv.window_first_position()
                self.kv.shift_positions(None, position - (oldest if oldest is not None else position))
                position += self.kv.window_len
            else:
                position = max(position, self.position)
        self.position = position
        self.pages = [PageText(p) for p in transcribe]
        self._current = 0
        self.generated, self.forced = [], []  # a group's own: a document's would grow with its length
        if first:
            self._take(self.guard.choose(logits, self.history))
        elif self.ended:  # the model ended the document early: ask for the next page
            self.ended = False
            self._force(self.model.page_id)

    def _rebase_pages(self) -> int:
        assert self.kv is not None
        cursor = len(self.prefix)
        for span in self.kv.page_spans:
            self.kv.shift_positions(span, cursor - span.position)
            cursor += span.length
        return cursor

    # -- decoding ----------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self._current >= len(self.pages)

    def focus(self) -> frozenset[int]:
        """The page being transcribed and the next (always attended by SR-SWA)."""
        return frozenset(p.page for p in self.pages[self._current:self._current + 2])

    def next_input(self) -> tuple[int, int]:
        """(token, position) of this sequence's next step."""
        assert self.pending is not None
        return self.pending, self.position

    def choose(self, logits: Any) -> int:
        """The next token from a step's logits: greedy under the n-gram guard."""
        return self.guard.choose(logits, self.history)

    def accept(self, token: int) -> None:
        """The step fed ``pending`` at ``position``; ``token`` is what the model chose next."""
        self.position += 1
        self._take(token)

    def _take(self, token: int) -> None:
        """``token`` is the model's next: into the history, then its page
        (or it closes one); it is fed at the next step (``pending``)."""
        self.history.append(token)
        self.generated.append(token)
        if self.done:  # a group transcribing nothing (every page was carried)
            self.pending = token
            return
        page = self.pages[self._current]
        if token == self.model.eos_id:
            self.ended = True
            self._close(page)
            for rest in self.pages[self._current:]:
                rest.missing, rest.closed = True, True
            self._current = len(self.pages)
            self.pending = token
            return
        if self._is_separator(token, page):
            if page.ids:
                self._close(page)
            self.pending = token
            return
        page.ids.append(token)
        self.pending = token
        if len(page.ids) >= self.max_tokens_per_page:
            page.cut = True
            self._close(page)
            self._force(self.model.page_id)

    def _is_separator(self, token: int, page: PageText) -> bool:
        if self.model.page_id is not None:
            return token == self.model.page_id
        ids = [*page.ids[-(_SEP_PIECES - 1):], token]
        if not _SEP_TEXT.search(self.model.decode(ids)):
            return False
        # the fewest last tokens that spell the separator: its earlier pieces are not the page's text
        pieces = next(k for k in range(1, len(ids) + 1) if _SEP_TEXT.search(self.model.decode(ids[-k:])))
        del page.ids[len(page.ids) - (pieces - 1):]
        return True

    def _force(self, token: int | None) -> None:
        """Feed ``token`` (a separator) next instead of the model's last choice."""
        if token is not None:
            self.pending = token
            self.forced.append(len(self.generated))

    def _close(self, page: PageText) -> None:
        page.closed = True
        self._current += 1

    def text(self, page: PageText) -> str:
        return self.model.decode(page.ids)

    def close(self) -> None:
        if self.kv is not None:
            self.kv.drop()
            self.kv = None
