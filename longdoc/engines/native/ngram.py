"""The model's no-repeat-n-gram guard, within a window of recent token ids.

Unlimited-OCR is run with no n-gram of 35 tokens repeated within the last
1024 ids (its vLLM recipe; transformers'
``UnlimitedOcrSlidingWindowNoRepeatNgramLogitsProcessor``, which searches
the last ``window`` ids of the whole sequence: the prompt, the image
placeholders and every generated token): a greedy decode that starts to
loop is pushed off the loop instead of running to the page's token cap.
:func:`banned` lists the tokens that would complete such a repeat;
:meth:`NGramGuard.choose` is the greedy choice among the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

NGRAM = 35
WINDOW = 1024


def banned(history: Sequence[int], n: int = NGRAM, window: int = WINDOW) -> set[int]:
    """Tokens that, appended to ``history``, would repeat an n-gram found in its last ``window`` tokens."""
    recent = list(history)[-window:]
    if n < 1 or len(recent) < n - 1 or not recent:
        return set()
    if n == 1:
        return set(recent)
    tail = recent[-(n - 1):]
    return {recent[i + n - 1] for i in range(len(recent) - n + 1) if recent[i:i + n - 1] == tail}


def choose(logits: torch.Tensor, history: Sequence[int], n: int = NGRAM, window: int = WINDOW) -> int:
    """The highest-scoring token that does not repeat an n-gram (greedy)."""
    ban = banned(history, n, window)
    if not ban:
        return int(logits.argmax())
    scores = logits.clone()
    scores[list(ban)] = float("-inf")
    return int(scores.argmax())


@dataclass(frozen=True)
class NGramGuard:
    """The guard's settings: ``size`` 0 turns it off."""

    size: int = NGRAM
    window: int = WINDOW

    def choose(self, logits: torch.Tensor, history: Sequence[int]) -> int:
        if self.size <= 0:
            return int(logits.argmax())
        return choose(logits, history, self.size, self.window)
