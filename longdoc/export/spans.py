"""Which of a block's lines a piece of its text comes from.

A block's text is its lines joined (spaces put back, hyphens at line ends
dropped) and its exports rewrite it (list markers, Markdown), but its
letters and digits are its lines' letters and digits, in order. So
consecutive pieces of the text (a chunk's parts of a split paragraph, a
list's items) are mapped back to lines by counting letters and digits.
"""

from __future__ import annotations

from longdoc.model import Block, Line


def alnum_count(text: str) -> int:
    return sum(ch.isalnum() for ch in text)


def piece_lines(block: Block, pieces: list[str]) -> list[list[Line]] | None:
    """The lines each of ``pieces`` comes from: ``pieces`` are consecutive
    parts of ``block``'s text, in order, as any export writes them (their
    letters and digits those of the text). A line is given to every piece
    that holds one of its letters or digits. None when the pieces' letters
    and digits are not as many as its lines' (a block whose text is not
    made of its lines)."""
    counts = [alnum_count(line.text) for line in block.lines]
    sizes = [alnum_count(piece) for piece in pieces]
    if sum(counts) != sum(sizes) or not block.lines:
        return None
    out: list[list[Line]] = []
    line, used = 0, 0                      # the line the next letter comes from, its letters taken so far
    for size in sizes:
        taken: list[Line] = []
        while size > 0:
            while counts[line] == used:
                line, used = line + 1, 0
            step = min(size, counts[line] - used)
            if not taken or taken[-1] is not block.lines[line]:
                taken.append(block.lines[line])
            used += step
            size -= step
        out.append(taken)
    return out


def piece_pages(block: Block, pieces: list[str]) -> list[list[int]]:
    """The pages each of ``pieces`` is printed on (:func:`piece_lines`),
    each piece all of the block's ``source_pages`` where its lines do not
    tell, or it has no letters or digits."""
    lines = piece_lines(block, pieces)
    if lines is None:
        return [list(block.source_pages) for _ in pieces]
    return [sorted({ln.page for ln in taken}) or list(block.source_pages) for taken in lines]
