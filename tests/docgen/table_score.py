"""Cell-level accuracy of a predicted table against a ground-truth table.

Cells on both sides are ``(row, col, row_span, col_span, text)`` with 0-based
``row``/``col`` of the cell's top-left grid position (the format of
:class:`tests.docgen.layouts.TruthTable`). Spans are not scored: a truth cell
is correct when the prediction has a cell *starting* at the same position
whose text matches (:func:`cell_text_matches`). One global
``(row_offset, col_offset)`` shift of the prediction, chosen to maximize the
matches, is allowed, so a prediction with an extra empty header row or a
leading empty column still scores in full; swapped columns do not.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from rapidfuzz import fuzz

Cell = tuple[int, int, int, int, str]

#: rapidfuzz ``ratio`` (0–100) at or above which two normalized cell texts match.
MIN_RATIO = 90.0


def normalize_cell(text: str) -> str:
    """Whitespace runs collapsed to one space, ends stripped, case-folded."""
    return " ".join(text.split()).casefold()


def cell_text_matches(predicted: str, truth: str) -> bool:
    """Normalized texts equal, or rapidfuzz ratio >= :data:`MIN_RATIO` (one typo in a
    long cell passes; "12.5" vs "12.6" does not)."""
    p, t = normalize_cell(predicted), normalize_cell(truth)
    return p == t or (bool(p) and bool(t) and fuzz.ratio(p, t) >= MIN_RATIO)


def cell_accuracy(predicted_cells: Sequence[Cell], truth_cells: Sequence[Cell]) -> tuple[int, int]:
    """``(correct, total)``: ``total`` counts truth cells with non-empty text, ``correct``
    those matched at the best single ``(row, col)`` offset of the prediction.

    A truth cell at ``(r, c)`` is matched under offset ``(dr, dc)`` when some
    predicted cell starts at ``(r + dr, c + dc)`` with matching text. Empty
    prediction -> ``(0, total)``; no non-empty truth cell -> ``(0, 0)``.
    """
    truth = [(r, c, normalize_cell(t)) for r, c, _, _, t in truth_cells if normalize_cell(t)]
    if not truth:
        return 0, 0
    predicted = [(r, c, normalize_cell(t)) for r, c, _, _, t in predicted_cells if normalize_cell(t)]
    # Every (truth cell, offset) pair that would match, each counted once per truth cell.
    votes: Counter[tuple[int, int]] = Counter()
    for tr, tc, tt in truth:
        offsets = {(pr - tr, pc - tc) for pr, pc, pt in predicted if cell_text_matches(pt, tt)}
        votes.update(offsets)
    best = max(votes.values(), default=0)
    return best, len(truth)
