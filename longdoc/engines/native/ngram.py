"""The model's no-repeat-n-gram guard, within a window of recent tokens.

Unlimited-OCR is run with no n-gram of 35 tokens repeated within the last
1024 generated ones (its vLLM recipe; transformers'
``UnlimitedOcrSlidingWindowNoRepeatNgramLogitsProcessor``): a greedy decode
that starts to loop is pushed off the loop instead of running to the page's
token cap. :func:`banned` lists the tokens that would complete such a
repeat; :func:`choose` is the greedy choice among the others.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

NGRAM = 35
WINDOW = 1024


def banned(history: Sequence[int], n: int = NGRAM, window: int = WINDOW) -> set[int]:
    """Tokens that, appended to ``history``, would repeat an n-gram found in its last ``window`` tokens."""
    recent = list(history)[-window:]
    if n < 2 or len(recent) < n:
        return set()
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
