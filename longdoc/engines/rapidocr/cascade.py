"""Two text recognizers, one reading: a fast one reads every line, an
accurate one reads again the lines the fast one may have got wrong.

RapidOCR's recognizer is most of a page's OCR time. PP-OCRv6 *tiny* costs
a fifth of the *small* model in the ``rapidocr`` wheel (0.58 M against
3.1 M multiply-adds per input column) and reads clean running text almost
as well, but not real documents: line by line on 1,821 lines of real
scanned manuals (``python bench/lines.py``), tiny reads 1.68% of the
characters wrong and small 1.09%; tiny drops spaces after punctuation,
reads ``0`` for ``O`` and ``w`` for ``W`` inside codes, misses rare
characters (it knows 6,904 against 18,708) and glues digit groups
("1 220" → "1220") while sure of itself. Both read through
:class:`~longdoc.engines.rapidocr.ctc.MarginDecode`, which keeps per character its
probability and its margin over the second choice. A line is read again
by the accurate model (:func:`needs_recheck`) when

- its mean character confidence is below ``below`` (default 0.93);
- a character other than a space was read with a margin under
  :data:`MARGIN_BELOW` over its second choice (tiny hesitated between
  two readings, however sure it was on average);
- it holds something users search for and tiny misreads confidently: a
  run of four or more digits, a token mixing letters and digits
  (``PN-4471-AX3``, ``x0``), a case change inside a word (``QZX2wQ``);
  or punctuation glued to the next word (``x,y:The``: a space tiny dropped).

The accurate model's reading then replaces the fast one's. The rules,
replayed on the same real lines (``python bench/lines.py --rules``, 1,832
lines of 14 scanned manuals): the former two (confidence, digit runs)
re-read 14% of the lines for a CER of 1.41%; these re-read 36% for 1.20%
(small alone: 1.11%, tiny alone: 1.71%), each part paying for itself
(left out, the CER rises to 1.21-1.27%); a rule for code punctuation
re-read 7% more lines and changed nothing. Reading only the doubtful
tokens again instead of their lines was tried: 1.29% and hardly cheaper
(every piece is padded to the recognizer's minimum width, and each new
width costs OpenVINO a new shape).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from longdoc.config import RapidOcrSettings
from longdoc.engines.rapidocr.ctc import LineReading, install

#: a run of digits the tiny recognizer may have joined from several groups
DIGIT_RUN = re.compile(r"\d{4,}")
#: a token holding both letters and digits (codes, identifiers, part numbers)
MIXED_TOKEN = re.compile(r"(?=[^\s]*[^\W\d_])(?=[^\s]*\d)[^\s]{2,}")
#: a case change inside a word: lower then upper, or upper-upper-lower
CASE_FLIP = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")
#: mean character confidence under which a line is read again
#: (``inference.rapidocr.recheck_below``'s default)
DEFAULT_BELOW: float = RapidOcrSettings.model_fields["recheck_below"].default
#: punctuation glued to the next word ("x,y:The"): tiny drops those spaces, small reads them
GLUED = re.compile(r"[,;:!?)\]][A-Za-z]|[a-z][(\[]")
#: a character read this little ahead of its second choice is a doubt
MARGIN_BELOW = 0.2


#: the rule sets ``inference.rapidocr.recheck`` names
RECHECK_RULES = ("codes", "doubts")
DEFAULT_RULES: str = RapidOcrSettings.model_fields["recheck"].default


@dataclass(frozen=True)
class RecheckPlan:
    """What a worker needs to build the second recognizer: its RapidOCR
    settings (``Rec.*`` name the accurate model), the confidence bar and
    the rule set (:data:`RECHECK_RULES`)."""

    accurate_params: dict[str, Any]
    below: float = DEFAULT_BELOW
    rules: str = DEFAULT_RULES


def needs_recheck(reading: LineReading, below: float = DEFAULT_BELOW, rules: str = DEFAULT_RULES) -> bool:
    """Whether a line the fast recognizer read so is read again (the rules
    of the module docstring): with ``codes``, an empty line, a mean
    confidence under ``below`` or a code-like token; with ``doubts``, also
    a hesitant character or punctuation glued to a word."""
    text = reading.text
    if not text.strip() or reading.mean < below:
        return True
    if DIGIT_RUN.search(text) or MIXED_TOKEN.search(text) or CASE_FLIP.search(text):
        return True
    if rules == "codes":
        return False
    if any(m < MARGIN_BELOW for m, ch in zip(reading.margins, text) if not ch.isspace()):
        return True
    return bool(GLUED.search(text))


@dataclass
class Recognizer:
    """Stands where RapidOCR's ``TextRecognizer`` stands (called with a
    ``TextRecInput``, returns a ``TextRecOutput``) and always decodes with
    :class:`~longdoc.engines.rapidocr.ctc.MarginDecode`: the output's
    ``word_results`` hold one :class:`~longdoc.engines.rapidocr.ctc.LineReading`
    per line. ``lines`` counts what it has read since it was made."""

    model: Any
    lines: int = field(default=0, init=False)
    rechecked: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        install(self.model)

    def __call__(self, args: Any) -> Any:
        from rapidocr.ch_ppocr_rec.typings import TextRecInput

        out = self.model(TextRecInput(img=args.img, return_word_box=True))
        self.lines += len(out.txts or ())
        return out


@dataclass
class CascadeRecognizer(Recognizer):
    """A :class:`Recognizer` (``model``: the fast one) whose doubtful lines
    (:func:`needs_recheck`) ``accurate`` reads again; ``rechecked`` counts them."""

    accurate: Any = None
    below: float = DEFAULT_BELOW
    rules: str = DEFAULT_RULES

    def __post_init__(self) -> None:
        super().__post_init__()
        install(self.accurate)

    def __call__(self, args: Any) -> Any:
        from rapidocr.ch_ppocr_rec.typings import TextRecInput, TextRecOutput

        first = super().__call__(args)
        images = list(first.imgs or [])
        texts, scores = list(first.txts or ()), list(first.scores or ())
        readings = list(first.word_results or ())
        again = [i for i, reading in enumerate(readings) if needs_recheck(reading, self.below, self.rules)]
        self.rechecked += len(again)
        if not again:
            return first
        second = self.accurate(TextRecInput(img=[images[i] for i in again], return_word_box=True))
        for k, i in enumerate(again):
            texts[i], scores[i], readings[i] = second.txts[k], second.scores[k], second.word_results[k]
        return TextRecOutput(imgs=first.imgs, txts=tuple(texts), scores=scores, word_results=tuple(readings),
                             elapse=(first.elapse or 0.0) + (second.elapse or 0.0), viser=first.viser)


def attach(ocr: Any, plan: RecheckPlan | None) -> Recognizer:
    """Make ``ocr`` (a ``RapidOCR`` whose ``Rec`` settings name the first
    model) read lines through a :class:`Recognizer`, or through a
    :class:`CascadeRecognizer` with the accurate model of ``plan``.

    Uses RapidOCR 3.10's recognizer slot (``text_rec``, filled by
    ``_load_rec_model``): the pipeline calls whatever stands there.
    """
    if plan is None:
        recognizer = Recognizer(ocr._load_rec_model())
    else:
        from rapidocr import RapidOCR

        accurate = RapidOCR(params=plan.accurate_params)._load_rec_model()
        recognizer = CascadeRecognizer(ocr._load_rec_model(), accurate=accurate, below=plan.below, rules=plan.rules)
    ocr.text_rec = recognizer
    return recognizer
