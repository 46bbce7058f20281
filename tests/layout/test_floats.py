"""Tables, figures and captions from the layout model's regions: taken out of
the text flow and placed where their column reaches them."""

from __future__ import annotations

from longdoc.layout import layout_page
from longdoc.model import BBox, BlockKind, Region, RegionKind, TableCell

from .synth import LEFT, PARAGRAPHS, PITCH, RIGHT, Column, line, page_of

FIG_TOP, FIG_BOTTOM = 300.0, 420.0
CAPTION = "Figure 1. Parcels delivered per week in the four districts, with the winter months shaded."


def _two_columns_around_a_figure():
    """Two columns of paragraphs with a full-width figure in the middle and
    a centred caption under it that crosses the gutter."""
    left, right = Column(LEFT, 100.0), Column(RIGHT, 100.0)
    for col, texts in ((left, PARAGRAPHS[0:2]), (right, PARAGRAPHS[4:6])):
        for t in texts:
            col.paragraph(t, gap=6.0)
    caption = line(CAPTION, 120.0, FIG_BOTTOM + 8)
    left.y = right.y = FIG_BOTTOM + 8 + 3 * PITCH
    for col, texts in ((left, PARAGRAPHS[2:4]), (right, PARAGRAPHS[6:8])):
        for t in texts:
            col.paragraph(t, gap=6.0)
    regions = [
        Region(kind=RegionKind.FIGURE, bbox=BBox(x0=72.0, y0=FIG_TOP, x1=540.0, y1=FIG_BOTTOM), score=0.9),
        Region(kind=RegionKind.FIGURE_CAPTION, bbox=BBox(x0=118.0, y0=FIG_BOTTOM + 6, x1=545.0, y1=FIG_BOTTOM + 20),
               score=0.8),
    ]
    return page_of([*left.lines, *right.lines, caption]).model_copy(update={"regions": regions})


def _starts(blocks):
    return [b.text[:12] for b in blocks if b.kind is BlockKind.PARAGRAPH]


def test_a_caption_across_the_gutter_does_not_break_the_columns():
    blocks = layout_page(_two_columns_around_a_figure(), {})
    # column by column: the left column runs on below the figure before the right column starts
    assert _starts(blocks) == ["Alpha paragr", "Bravo paragr", "Charlie para", "Delta paragr",
                               "Echo paragra", "Foxtrot para", "Golf paragra", "Hotel paragr"]
    (caption,) = [b for b in blocks if b.kind is BlockKind.CAPTION]
    assert caption.text == CAPTION


def test_a_caption_the_model_called_text_is_still_a_caption():
    page = _two_columns_around_a_figure()
    regions = [page.regions[0], page.regions[1].model_copy(update={"kind": RegionKind.TEXT})]
    blocks = layout_page(page.model_copy(update={"regions": regions}), {})
    assert [b.text for b in blocks if b.kind is BlockKind.CAPTION] == [CAPTION]


def test_a_figure_region_over_prose_is_not_trusted():
    col = Column(LEFT, 100.0)
    for t in PARAGRAPHS[:3]:
        col.paragraph(t, gap=6.0)
    region = Region(kind=RegionKind.FIGURE, bbox=BBox(x0=60.0, y0=90.0, x1=300.0, y1=col.y), score=0.6)
    blocks = layout_page(page_of(col.lines).model_copy(update={"regions": [region]}), {})
    assert [b.kind for b in blocks] == [BlockKind.PARAGRAPH] * 3


def test_a_table_becomes_one_block_with_cells_between_the_paragraphs_around_it():
    col = Column((72.0, 540.0), 100.0)
    col.paragraph(PARAGRAPHS[0])
    top = col.y + 10
    rows = [["Name", "Count"], ["alpha", "12"], ["beta", "7"]]
    cells_lines = [line(t, 80.0 + 200 * c, top + r * 16) for r, row in enumerate(rows) for c, t in enumerate(row)]
    col.y = top + 3 * 16 + 10
    col.paragraph(PARAGRAPHS[1])
    grid = [TableCell(row=r, col=c, bbox=BBox(x0=76.0 + 200 * c, y0=top + r * 16 - 2, x1=260.0 + 200 * c,
                                              y1=top + r * 16 + 12)) for r in range(3) for c in range(2)]
    region = Region(kind=RegionKind.TABLE, bbox=BBox(x0=74.0, y0=top - 4, x1=470.0, y1=top + 46), score=0.95,
                    cells=grid)
    page = page_of([*col.lines, *cells_lines]).model_copy(update={"regions": [region]})
    blocks = layout_page(page, {})
    assert [b.kind for b in blocks] == [BlockKind.PARAGRAPH, BlockKind.TABLE, BlockKind.PARAGRAPH]
    table = blocks[1]
    assert {(c.row, c.col): c.text for c in table.cells} == {(r, c): t for r, row in enumerate(rows)
                                                             for c, t in enumerate(row)}
    assert table.text == "Name\tCount\nalpha\t12\nbeta\t7"


def test_a_table_region_without_a_grid_keeps_its_lines_in_the_text():
    col = Column((72.0, 540.0), 100.0)
    col.paragraph(PARAGRAPHS[0])
    region = Region(kind=RegionKind.TABLE, bbox=BBox(x0=60.0, y0=90.0, x1=550.0, y1=col.y), score=0.7)
    blocks = layout_page(page_of(col.lines).model_copy(update={"regions": [region]}), {})
    assert [b.kind for b in blocks] == [BlockKind.PARAGRAPH]


def test_a_figure_region_over_a_listing_of_short_lines_gives_them_back_to_the_text():
    """A contents listing the model called a figure: short entries one under
    the other, their page numbers at the right edge."""
    col = Column((72.0, 540.0), 100.0)
    col.paragraph(PARAGRAPHS[0])
    top = col.y + 10
    entries = ["Introduction", "Old versions", "Describing argument types", "Optional arguments",
               "Testing special values"]
    lines = []
    for k, text in enumerate(entries):
        lines += [line(text, 88.0, top + k * PITCH), line(str(2 * k + 1), 530.0, top + k * PITCH)]
    region = Region(kind=RegionKind.FIGURE, bbox=BBox(x0=80.0, y0=top - 4, x1=545.0, y1=top + 5 * PITCH), score=0.9)
    blocks = layout_page(page_of([*col.lines, *lines]).model_copy(update={"regions": [region]}), {})
    assert BlockKind.FIGURE not in {b.kind for b in blocks}
    assert blocks[-1].kind is BlockKind.LIST
    assert blocks[-1].text.split("\n") == [f"{t} {2 * k + 1}" for k, t in enumerate(entries)]


def test_a_figure_keeps_its_scattered_labels_row_by_row():
    col = Column((72.0, 540.0), 100.0)
    col.paragraph(PARAGRAPHS[0])
    top = col.y + 20
    ticks = [line(t, 110.0, top + 30 * k) for k, t in enumerate(["150", "100", "50", "0"])]
    months = [line(m, 150.0 + 50 * k, top + 100 + 0.4 * (k % 2)) for k, m in enumerate(["Jan", "Feb", "Mar", "Apr"])]
    legend = [line("Winter routes", 420.0, top + 10), line("Summer routes", 420.0, top + 40)]
    region = Region(kind=RegionKind.FIGURE, bbox=BBox(x0=100.0, y0=top - 5, x1=520.0, y1=top + 115), score=0.9)
    page = page_of([*col.lines, *ticks, *months, *legend]).model_copy(update={"regions": [region]})
    blocks = layout_page(page, {})
    (figure,) = [b for b in blocks if b.kind is BlockKind.FIGURE]
    assert figure.text.split("\n") == ["150", "Winter routes", "100", "Summer routes", "50", "0", "Jan", "Feb", "Mar",
                                       "Apr"]
    assert [b.kind for b in blocks] == [BlockKind.PARAGRAPH, BlockKind.FIGURE]
