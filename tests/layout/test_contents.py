"""Contents and index entries: a line ending in a page number, set off by
leaders or a wide gap, one entry per line of one LIST block."""

from __future__ import annotations

import pytest

from longdoc.layout import layout_page
from longdoc.layout.contents import close_entry_gaps, entry_row
from longdoc.layout.geometry import LineBox
from longdoc.model import BlockKind

from .synth import CHAR_W, PARAGRAPHS, PITCH, SIZE, Column, line, page_of

H = SIZE  # the synthetic pages' line height


def _row(*parts: tuple[str, float]) -> list[LineBox]:
    """A row of fragments, each (text, x0)."""
    return [LineBox.of(i, line(text, x0, 200.0)) for i, (text, x0) in enumerate(parts)]


@pytest.mark.parametrize(
    ("parts", "entry"),
    [
        ((("2.1 Old versions . . . . . . . . . .", 88.0), ("4", 520.0)), True),  # leaders, the number boxed apart
        ((("2.2 Describing argument types .", 88.0), ("2", 520.0)), True),  # leaders read short, a wide gap
        ((("3 Copying and showing commands", 72.0), ("16", 515.0)), True),  # a wide gap only
        ((("1.1", 88.0), ("The Layers Below TikZ", 118.0), ("27", 518.0)), True),  # its number boxed apart too
        ((("Preface . . . . . . . . . . . . . . . vii", 88.0),), True),  # a roman page number
        ((("\\@tempa . 60, 79, 86–", 72.0),), True),  # an index entry
        ((("\\@dimen@ p349, p354, x12", 72.0),), True),  # code-line references (LaTeX's doc package)
        ((("see also \\@tempa and \\@tempb", 72.0),), False),  # a cross-reference, no number
        ((("Northern", 72.0), ("Spare parts", 200.0), ("214", 420.0)), False),  # a table row: two wide gaps
        ((("In 1887 the ledger recorded 412 arrivals and 9", 72.0),), False),  # prose ending in a number
        ((("Old versions", 88.0), ("Describing", 300.0)), False),  # two fragments, no number
    ],
)
def test_entry_rows(parts, entry):
    assert entry_row(_row(*parts), H, CHAR_W) is entry


def test_a_text_layer_row_joined_across_its_gap_is_an_entry_by_its_width():
    joined = LineBox.of(0, line("1 Introduction 2", 72.0, 200.0, 540.0))  # 16 characters over the text width
    prose = LineBox.of(1, line("The harbour master kept a ledger of 1887", 72.0, 220.0))
    assert entry_row([joined], H, CHAR_W) and not entry_row([prose], H, CHAR_W)


def _contents_page():
    """A paragraph, then entries (OCR fragments: words with leaders, the
    number at the right edge), one of them wrapped over two lines."""
    col = Column((72.0, 540.0), 90.0)
    col.paragraph(PARAGRAPHS[0])
    col.y += 20
    rows = [("1 Introduction", 72.0, "1"), ("1.1 Old versions . . . . . . . . . . . .", 88.0, "2"),
            ("1.2 Checking the configuration of a new installation against the", 88.0, None),
            ("defaults shipped with the distribution . . . . . . . .", 110.0, "14"),
            ("2 Case changing", 72.0, "33")]
    lines = list(col.lines)
    for text, x0, folio in rows:
        lines.append(line(text, x0, col.y))
        if folio is not None:
            lines.append(line(folio, 540.0 - CHAR_W * len(folio), col.y))
        col.y += PITCH
    return page_of(lines)


def test_consecutive_entries_are_one_list_one_entry_per_line():
    blocks = layout_page(_contents_page(), {})
    assert [b.kind for b in blocks] == [BlockKind.PARAGRAPH, BlockKind.LIST]
    assert blocks[1].text.split("\n") == [
        "1 Introduction 1",
        "1.1 Old versions . . . . . . . . . . . . 2",
        "1.2 Checking the configuration of a new installation against the defaults shipped with the distribution"
        " . . . . . . . . 14",
        "2 Case changing 33",
    ]


def test_a_single_line_ending_in_a_number_is_no_list():
    col = Column((72.0, 540.0), 90.0)
    col.paragraph(PARAGRAPHS[0])
    col.y += 20
    lines = [*col.lines, line("Total", 72.0, col.y), line("12", 520.0, col.y)]
    blocks = layout_page(page_of(lines), {})
    assert BlockKind.LIST not in {b.kind for b in blocks}


def test_an_entrys_words_reach_its_references_but_never_the_next_column():
    leaders = LineBox.of(0, line("2.1 Old versions . . . . . . . .", 88.0, 200.0))
    number = LineBox.of(1, line("4", leaders.x1 + 1.5 * H, 200.0))
    name = LineBox.of(2, line("\\@botlist", 300.0, 200.0))
    refs = LineBox.of(3, line("b123, s320,", 400.0, 200.0))
    other = LineBox.of(4, line("p532, b908", 480.0, 200.0))  # the next column's continued references
    stretched = {l.idx: l for l in close_entry_gaps([leaders, number, name, refs, other], H, columnar={2, 3, 4})}
    assert stretched[0].x1 == number.x0 and stretched[2].x1 == refs.x0  # no gutter inside an entry
    assert stretched[3].x1 == refs.x1  # references reach no further
    assert close_entry_gaps([name, refs], H)[0].x1 == name.x1  # outside a mistaken table or figure: as drawn
    chapter = LineBox.of(5, line("3 Copying and showing commands", 72.0, 240.0))
    folio = LineBox.of(6, line("16", 515.0, 240.0))
    row = close_entry_gaps([chapter, folio], H, columnar={5, 6})
    assert row[0].x1 == folio.x0 and entry_row(row, H, CHAR_W)  # the gap is measured on the engine's boxes
