"""Two text recognizers, one reading: a fast one reads every line, an
accurate one reads again the lines the fast one may have got wrong.

RapidOCR's recognizer is ~90% of a page's OCR time. PP-OCRv6 *tiny* costs
a fifth of the *small* model in the ``rapidocr`` wheel (0.58 M against
3.1 M multiply-adds per input column; 5.6× faster on dense pages here) and
reads clean print as well: on the generated dense English and Chinese scans
of ``bench/vs_ocrmypdf.py`` its text equals the small model's. On harder
pages it drops letters now and then, and it knows 6,904 characters against
18,708, so a rare character comes out wrong — but then it is unsure: the
line's mean character confidence falls. A line is read again by the
accurate model when

- its mean confidence is below ``below`` (default 0.96), or
- its text has a run of four or more digits: the tiny model glues digit
  groups set apart by thin spaces ("1 220" → "1220") and is sure of it.

The accurate model's reading then replaces the fast one's. Measured with
``python bench/recognizers.py`` (one process, same pages, AMD EPYC): on 21
pages of the dev set's real documents, word F1 against the ground truth
0.7713 for the cascade, 0.7729 small alone, 0.7474 tiny alone, in 1.93×
less time than small; on dense generated scans (English and Chinese) the
same CER as small in 4.5× less time. The bar and the digit rule were chosen
on the dev set's lines (tiny against small line by line): at 0.96 a seventh
of the line width is read twice there; at 0.97 a quarter, for 0.06% fewer
differences from small.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

#: a run of digits the tiny recognizer may have joined from several groups
DIGIT_RUN = re.compile(r"\d{4,}")
#: mean character confidence under which a line is read again
DEFAULT_BELOW = 0.96


@dataclass(frozen=True)
class RecheckPlan:
    """What a worker needs to build the second recognizer: its RapidOCR
    settings (``Rec.*`` name the accurate model) and the confidence bar."""

    accurate_params: dict[str, Any]
    below: float = DEFAULT_BELOW


def needs_recheck(text: str, score: float, below: float) -> bool:
    """Whether a line the fast recognizer read as ``text`` with mean
    confidence ``score`` is read again."""
    return score < below or DIGIT_RUN.search(text) is not None


@dataclass
class CascadeRecognizer:
    """Stands where RapidOCR's ``TextRecognizer`` stands (called with a
    ``TextRecInput``, returns a ``TextRecOutput``). ``lines`` and
    ``rechecked`` count what it has read since it was made."""

    fast: Any
    accurate: Any
    below: float = DEFAULT_BELOW
    lines: int = field(default=0, init=False)
    rechecked: int = field(default=0, init=False)

    def __call__(self, args: Any) -> Any:
        from rapidocr.ch_ppocr_rec.typings import TextRecInput, TextRecOutput

        first = self.fast(args)
        images = list(first.imgs or [])
        texts, scores = list(first.txts or ()), list(first.scores or ())
        words = list(first.word_results or ())
        again = [i for i, (text, score) in enumerate(zip(texts, scores)) if needs_recheck(text, score, self.below)]
        self.lines += len(texts)
        self.rechecked += len(again)
        if not again:
            return first
        second = self.accurate(TextRecInput(img=[images[i] for i in again], return_word_box=args.return_word_box))
        for k, i in enumerate(again):
            texts[i], scores[i] = second.txts[k], second.scores[k]
            if i < len(words) and k < len(second.word_results or ()):
                words[i] = second.word_results[k]
        return TextRecOutput(imgs=first.imgs, txts=tuple(texts), scores=scores, word_results=tuple(words),
                             elapse=(first.elapse or 0.0) + (second.elapse or 0.0), viser=first.viser)


def attach(ocr: Any, plan: RecheckPlan) -> CascadeRecognizer:
    """Make ``ocr`` (a ``RapidOCR`` whose ``Rec`` settings name the fast
    model) read lines through a cascade with the accurate model of ``plan``.

    Uses RapidOCR 3.10's recognizer slot (``text_rec``, filled by
    ``_load_rec_model``): the pipeline calls whatever stands there.
    """
    from rapidocr import RapidOCR

    accurate = RapidOCR(params=plan.accurate_params)._load_rec_model()
    cascade = CascadeRecognizer(fast=ocr._load_rec_model(), accurate=accurate, below=plan.below)
    ocr.text_rec = cascade
    return cascade
