"""Exports are views of the model, streamed, and never half-written."""


import pytest

from longdoc.errors import OutputError
from longdoc.export import open_exports
from longdoc.model import (
    BBox,
    Block,
    BlockKind,
    Document,
    DocumentStatus,
    ErrorInfo,
    Line,
    Page,
    PageStatus,
)


def _block(page, i, kind, text, level=None):
    box = BBox(x0=72, y0=100 + 20 * i, x1=500, y1=112 + 20 * i)
    return Block(id=f"p{page}-b{i}", kind=kind, bbox=box, order=i, text=text,
                 lines=[Line(text=text, bbox=box, confidence=0.9, page=page)],
                 source_pages=[page], level=level)


def _pages():
    p1 = Page(number=1, width=612, height=792, blocks=[
        _block(1, 0, BlockKind.HEADER, "Running Header"),
        _block(1, 1, BlockKind.TITLE, "The Title"),
        _block(1, 2, BlockKind.HEADING, "Intro", level=1),
        _block(1, 3, BlockKind.PARAGRAPH, "First paragraph."),
        _block(1, 4, BlockKind.LIST, "• apples\n• pears"),
        _block(1, 5, BlockKind.SIDENOTE, "A note."),
        _block(1, 6, BlockKind.PAGE_NUMBER, "1"),
    ])
    p2 = Page(number=2, width=612, height=792, status=PageStatus.FAILED,
              error=ErrorInfo(code="engine_failed", message="worker died", page=2))
    p3 = Page(number=3, width=612, height=792, blocks=[_block(3, 0, BlockKind.PARAGRAPH, "Last words.")])
    return [p1, p2, p3]


def test_all_formats_round_trip(tmp_path):
    ex = open_exports(tmp_path, "doc", ("md", "json", "txt"), {"schema": "longdoc.document/1",
        "longdoc_version": "x", "source": {"name": "d.pdf", "sha256": "0", "media_type": "application/pdf",
        "page_count": 3, "selected_pages": [1, 2, 3]}, "options": {}})
    for p in _pages():
        ex.write_page(p)
    errors = [ErrorInfo(code="engine_failed", message="worker died", page=2)]
    paths = ex.close(DocumentStatus.PARTIAL, errors, {"total": 1.0})
    doc = Document.model_validate_json(paths["json"].read_text())
    assert [p.number for p in doc.pages] == [1, 2, 3]
    assert doc.status is DocumentStatus.PARTIAL
    assert doc.pages[1].error.code == "engine_failed"
    assert {b.kind for b in doc.pages[0].blocks} >= {BlockKind.HEADER, BlockKind.PAGE_NUMBER}

    md = paths["md"].read_text()
    assert "# The Title" in md and "## Intro" in md
    assert "- apples\n- pears" in md
    assert "> A note." in md
    assert "Running Header" not in md  # furniture stays out of the main text
    assert "page 2 failed: engine_failed" in md

    txt = paths["txt"].read_text()
    assert txt.index("First paragraph.") < txt.index("Last words.")
    assert "Running Header" not in txt and "\f" in txt
    assert not list(tmp_path.glob("*.partial"))


def test_abort_leaves_no_output_under_final_name(tmp_path):
    ex = open_exports(tmp_path, "doc", ("md", "txt"), {})
    ex.write_page(_pages()[0])
    ex.abort()
    assert list(tmp_path.iterdir()) == []


def test_unwritable_folder_is_a_typed_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputError) as info:
        open_exports(blocker / "sub", "doc", ("md",), {})
    assert info.value.code == "output_unwritable"


def test_tables_are_pipe_tables_or_html_when_cells_span():
    from longdoc.export.markdown import table_markdown
    from longdoc.model import TableCell as C

    plain = [C(row=0, col=0, text="Name"), C(row=0, col=1, text="a|b"), C(row=1, col=0, text="x"),
             C(row=1, col=1, text="1")]
    assert table_markdown(plain) == "| Name | a\\|b |\n| --- | --- |\n| x | 1 |"
    spanning = [C(row=0, col=0, col_span=2, text="Score"), C(row=1, col=0, text="<1"), C(row=1, col=1, text="2")]
    assert table_markdown(spanning) == ('<table>\n<tr><th colspan="2">Score</th></tr>\n'
                                        "<tr><td>&lt;1</td><td>2</td></tr>\n</table>")


def test_a_figures_labels_are_visible_text_in_markdown_and_plain_text(tmp_path):
    page = Page(number=1, width=612, height=792, blocks=[
        _block(1, 0, BlockKind.PARAGRAPH, "Deliveries rose."),
        _block(1, 1, BlockKind.FIGURE, "150\nWinter routes\nJan Feb Mar"),
        _block(1, 2, BlockKind.CAPTION, "Figure 2. Parcels per month."),
    ])
    ex = open_exports(tmp_path, "doc", ("md", "json", "txt"), {"schema": "longdoc.document/1",
        "longdoc_version": "x", "source": {"name": "d.pdf", "sha256": "0", "media_type": "application/pdf",
        "page_count": 1, "selected_pages": [1]}, "options": {}})
    ex.write_page(page)
    paths = ex.close(DocumentStatus.SUCCEEDED, [], {})
    md = paths["md"].read_text()
    assert "<!-- figure -->\n150\nWinter routes\nJan Feb Mar\n\n*Figure 2." in md  # marker, then one label a line
    assert "<!-- figure:" not in md
    assert "150\nWinter routes\nJan Feb Mar" in paths["txt"].read_text()
    (figure,) = [b for b in Document.model_validate_json(paths["json"].read_text()).pages[0].blocks
                 if b.kind is BlockKind.FIGURE]
    assert figure.text == "150\nWinter routes\nJan Feb Mar"
