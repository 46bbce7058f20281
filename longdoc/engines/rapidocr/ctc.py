"""What a CTC text recognizer saw in one line, beyond its text.

RapidOCR's recognizers (PP-OCRv6 tiny and small) emit, for every column
of frames across a line crop, a probability for each character of their
dictionary (plus a *blank*); its decoder keeps the most likely character
per frame, collapses repeats and blanks, and reports the mean probability.
:class:`MarginDecode` stands where that decoder stands and gives the same
text and mean, and also, per character:

- ``probs``: its probability (the frame's best);
- ``margins``: how far ahead of the frame's second choice it was (a
  confident "O" whose second choice "0" is close has a small margin);
- ``alts``: that second choice (blank as ``""``);
- ``cols``: the frame it was read at; ``span`` is the number of frames
  the crop itself covers (the rest is padding), so ``cols[i] / span`` is
  where across the crop the character stands (0 left, 1 right).

The cascade (:mod:`~longdoc.engines.rapidocr.cascade`) reads these to decide which
lines to read again; the worker uses the positions to set the spaces of a
fixed-pitch line by its character grid (:func:`fixed_pitch`).

Cost: the second choice is looked up only at the frames that kept a
character (a masked max over the dictionary), ~1 ms for a line of 60
characters with the small model's 18,708 classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

BLANK = 0


@dataclass(frozen=True)
class LineReading:
    """One line as the recognizer read it (see the module docstring)."""

    text: str
    probs: tuple[float, ...]
    margins: tuple[float, ...]
    alts: tuple[str, ...]
    cols: tuple[int, ...]
    span: float

    @property
    def mean(self) -> float:
        return float(np.mean(self.probs)) if self.probs else 0.0

    @property
    def min_margin(self) -> float:
        return min(self.margins) if self.margins else 0.0

    def positions(self) -> list[float]:
        """Where each character stands across the crop (0..1)."""
        return [min(1.0, (c + 0.5) / self.span) for c in self.cols] if self.span > 0 else []


class MarginDecode:
    """A drop-in for RapidOCR's ``CTCLabelDecode`` (``character``: its list,
    blank first). Called with ``return_word_box=True`` its second result is
    one :class:`LineReading` per line instead of RapidOCR's word info."""

    def __init__(self, character: list[str]) -> None:
        self.character = list(character)

    def __call__(self, preds: np.ndarray, return_word_box: bool = False, **kwargs: Any
                 ) -> tuple[list[tuple[str, float]], list[LineReading]]:
        wh_ratios = kwargs.get("wh_ratio_list", (1.0,) * len(preds))
        max_ratio = kwargs.get("max_wh_ratio", 1.0)
        lines, readings = [], []
        for b in range(len(preds)):
            reading = self.decode(preds[b], wh_ratios[b] / max_ratio if max_ratio else 1.0)
            lines.append((reading.text, round(reading.mean, 5) if reading.probs else 0.0))
            readings.append(reading)
        return lines, (readings if return_word_box else [])

    def decode(self, frames: np.ndarray, coverage: float = 1.0) -> LineReading:
        """One line's frames (T × classes) → its reading; ``coverage``: the
        share of the frames the crop covers."""
        idx = frames.argmax(axis=1)
        keep = np.ones(len(idx), dtype=bool)
        keep[1:] = idx[1:] != idx[:-1]
        keep &= idx != BLANK
        cols = np.nonzero(keep)[0]
        if not len(cols):
            return LineReading("", (), (), (), (), len(idx) * coverage)
        chosen = frames[cols]
        best = chosen[np.arange(len(cols)), idx[cols]]
        masked = chosen.copy()
        masked[np.arange(len(cols)), idx[cols]] = -np.inf
        second = masked.argmax(axis=1)
        runner = masked[np.arange(len(cols)), second]
        text = "".join(self.character[i] for i in idx[cols])
        alts = tuple("" if s == BLANK else self.character[s] for s in second)
        return LineReading(text, tuple(float(p) for p in best), tuple(float(m) for m in best - runner), alts,
                           tuple(int(c) for c in cols), len(idx) * coverage)


def install(recognizer: Any) -> Any:
    """Make a RapidOCR ``TextRecognizer`` decode with :class:`MarginDecode`
    (same text and scores); returns it. Each line is read at its own width
    on every runtime: padding it up to a bucket of widths (fewer input
    shapes for OpenVINO to compile) changes how the model reads the whole
    line, e.g. digit groups run together (``tests/engines/test_backends.py``)."""
    recognizer.postprocess_op = MarginDecode(recognizer.postprocess_op.character)
    return recognizer
