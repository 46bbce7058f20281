"""A born-digital page with a code listing: prose in DejaVu Sans, code in DejaVu Sans Mono.

One A4 page, laid out line by line (so the truth is exact)::

    Drawing paths                                  heading, 14 pt bold
    The function below draws a path …              paragraph, 11 pt, wrapped
        static int draw_path(fz_context *ctx, …)   the listing, 9 pt mono,
        {                                          18 pt in from the text,
            int i, x0 = 0;                         a blank line inside,
                                                   nested indentation, a
            for (i = 0; i < n; i++) {              comment line that looks
                x0 = fz_lineto(ctx, …); /* … */    like a list item, a gap of
                …                                  six spaces before a comment
    The call to \\foo moves the pen …               paragraph with an inline
                                                   monospace word
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.docgen.layout import A4, Canvas, Style, wrap_words

PROSE = Style("sans", 11, 15.5)
HEADING = Style("sansbold", 14, 20)
CODE = Style("mono", 9, 11.5)
LEFT, TOP = 72.0, 90.0
WIDTH = A4[0] - 2 * LEFT
CODE_INDENT = 18.0
#: extra space above and below the listing (TeX's \topsep is about this)
LISTING_GAP = 8.0

HEADING_TEXT = "Drawing paths"
BEFORE = ("The function below draws a path on the page. It walks the points one by one and moves the pen "
          "to each of them in turn, giving up as soon as a point cannot be reached.")
LISTING = """\
static int draw_path(fz_context *ctx, const point *pts, int n)
{
    int i, x0 = 0;

    /*
     * - each point is drawn once
     */
    for (i = 0; i < n; i++) {
        x0 = fz_lineto(ctx, pts[i].x, pts[i].y); /* next point */
        if (x0 < 0)
            return -1;      /* give up */
    }
    return x0;
}"""
INLINE_WORD = "\\foo"
AFTER_HEAD, AFTER_TAIL = "The call to", ("moves the pen to a point and returns where it ended; the other calls of the "
                                         "manual take the same arguments in the same order.")


@dataclass(frozen=True)
class ListingDoc:
    """The file and what a parser should find in it: the heading, the
    paragraph before the listing, the listing (exact lines and
    indentation), the paragraph after it (with the inline word)."""

    pdf_path: Path
    heading: str
    before: str
    listing: str
    after: str


#: where a page's body ends, and its page number's line box
BOTTOM, FOLIO = A4[1] - 90.0, A4[1] - 60.0


def code_listing(tmp_dir: str | Path, *, break_after: int | None = None) -> ListingDoc:
    """Write ``code_listing.pdf`` into ``tmp_dir`` (see the module docstring).
    With ``break_after`` = k the document has two pages, each with its page
    number at the foot: the listing's first k rows end page 1 (prose fills
    the page above them) and its other rows start page 2, the paragraph
    after them below."""
    canvas = Canvas(A4, ("sans", "sansbold", "mono"))
    pdf = canvas.pdf
    pdf.add_page()
    y = TOP
    y = _lines(canvas, [HEADING_TEXT], HEADING, LEFT, y) + 6
    before = BEFORE
    rows = LISTING.split("\n")
    if break_after is not None:
        room = BOTTOM - break_after * CODE.leading - LISTING_GAP
        while y + len(wrap_words(canvas, (before + " " + BEFORE).split(), PROSE, WIDTH)) * PROSE.leading <= room:
            before = before + " " + BEFORE
    y = _lines(canvas, [" ".join(ws) for ws in wrap_words(canvas, before.split(), PROSE, WIDTH)], PROSE, LEFT, y)
    y += LISTING_GAP
    pitch = canvas.width(" ", CODE)
    for i, row in enumerate(rows):
        if i == break_after:
            _draw(canvas, "1", PROSE, A4[0] / 2, FOLIO)
            pdf.add_page()
            y = TOP
        if row.strip():
            indent = len(row) - len(row.lstrip(" "))
            _draw(canvas, row.strip(), CODE, LEFT + CODE_INDENT + indent * pitch, y)
        y += CODE.leading
    if break_after is not None:
        _draw(canvas, "2", PROSE, A4[0] / 2, FOLIO)
    y += LISTING_GAP
    rest = wrap_words(canvas, AFTER_TAIL.split(), PROSE, WIDTH,
                      first_indent=canvas.width(f"{AFTER_HEAD} {INLINE_WORD} ", PROSE))
    x = _draw(canvas, AFTER_HEAD + " ", PROSE, LEFT, y)
    x = _draw(canvas, INLINE_WORD, Style("mono", PROSE.size, PROSE.leading), x, y)
    _draw(canvas, " " + " ".join(rest[0]), PROSE, x, y)
    _lines(canvas, [" ".join(ws) for ws in rest[1:]], PROSE, LEFT, y + PROSE.leading)
    out = Path(tmp_dir) / "code_listing.pdf"
    out.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(out))
    after = " ".join([AFTER_HEAD, INLINE_WORD, AFTER_TAIL])
    return ListingDoc(out, HEADING_TEXT, before, LISTING, after)


def _lines(canvas: Canvas, rows: list[str], style: Style, x: float, y: float) -> float:
    """Draw ``rows`` one under the other from the line box at ``y``; the y after them."""
    for row in rows:
        _draw(canvas, row, style, x, y)
        y += style.leading
    return y


def _draw(canvas: Canvas, text: str, style: Style, x: float, y: float) -> float:
    """Draw ``text`` in the line box whose top is ``y``; the x after it."""
    canvas.pdf.set_font(style.font, size=style.size)
    canvas.pdf.text(x, y + style.ascent_offset, text)
    return x + canvas.width(text, style)
