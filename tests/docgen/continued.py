"""A numbered list continued over three pages, with exact truth per page.

``numbered_list`` writes ``numbered_list.pdf``: three A5 pages, a title, an
intro paragraph, a 15-item numbered list ("1. ...", hanging indent), a
closing paragraph; "Page n of 3" at the foot of every page. The intro's
length is chosen so that the first page break cuts an item mid-sentence
(its rest, starting lowercase, opens page 2) and the second falls between
two items. The table over three pages is
:func:`tests.docgen.layouts.table_across_pages` with ``pages=3``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from tests.docgen.documents import BODY, SMALL, TITLE, _finish, _header_footer, _Writer
from tests.docgen.layout import A5, Canvas, Flow, Frame, LineSpec, wrap_words
from tests.docgen.prose import LIST_ITEMS, EnglishProse
from tests.docgen.raster import rasterize
from tests.docgen.truth import GeneratedDoc

LIST_TITLE = "Checklist for the Site Visit"
_WHY = [
    "so that the team on site can plan the day without waiting for the office",
    "because the insurer asks for a written record of every step that was taken",
    "which keeps the handover to the night shift short and free of surprises",
    "and the results go to the regional manager before the end of the week",
    "since the auditors will compare the figures with those of the last visit",
]
_WHEN = ["by the site manager", "at the end of the shift", "once the visitors have left",
         "by two members of the team", "before the gates are locked"]


@dataclass(frozen=True)
class ListDoc:
    """``doc`` (file, per-page truth) plus the list: ``items`` as printed
    (their lines joined), ``pages[i]`` the 1-based pages item i's lines are
    on. :meth:`scan` is the image-only version with the same truth."""

    doc: GeneratedDoc
    items: list[str]
    pages: list[list[int]]

    @property
    def pdf_path(self) -> Path:
        return self.doc.pdf_path

    def items_on(self, page: int) -> list[int]:
        """Numbers (1-based) of the items that start on ``page``."""
        return [n for n, pages in enumerate(self.pages, start=1) if pages[0] == page]

    def scan(self, out_path: str | Path, dpi: int = 200) -> ListDoc:
        return ListDoc(rasterize(self.doc, dpi, out_path), self.items, self.pages)


def numbered_list(tmp_dir: str | Path, items: int = 15, *, seed: int = 0) -> ListDoc:
    """Three A5 pages with a numbered list of ``items`` over them (see the
    module docstring). Raises ``RuntimeError`` when no intro length gives
    those breaks."""
    rng = random.Random(seed)
    texts = [f"{n}. {item}, {why}; the checklist is signed off {rng.choice(_WHEN)}."
             for n, (item, why) in enumerate(zip(rng.sample(LIST_ITEMS, items), rng.choices(_WHY, k=items)), start=1)]
    for intro in range(1, 12):
        doc = _lay_out(Path(tmp_dir), texts, intro, seed)
        if doc is not None:
            return doc
    raise RuntimeError("no intro length puts the page breaks where numbered_list needs them")


def _lay_out(tmp_dir: Path, texts: list[str], intro: int, seed: int) -> ListDoc | None:
    canvas = Canvas(A5, ("sans", "sansbold"))
    frame = Frame(x=50, top=60, bottom=A5[1] - 60, width=A5[0] - 100)
    flow = Flow(lambda p: [frame])
    w = _Writer(canvas, flow, frame.width)
    prose = EnglishProse(seed + 7)
    w.heading(LIST_TITLE, TITLE, kind="title")
    w.paragraph(prose.sentences(intro))
    hang = max(canvas.width(t.split()[0] + " ", BODY) for t in texts)
    specs: list[LineSpec] = []
    for n, text in enumerate(texts):
        rows = wrap_words(canvas, text.split(), BODY, frame.width, rest_indent=hang)
        specs += [LineSpec(r, item=n, indent=0.0 if i == 0 else hang) for i, r in enumerate(rows)]
    listing = w.block("list", specs, BODY, 8.0)
    w.paragraph(prose.sentences(3))
    if 1 + max(ln.page for b in flow.blocks for ln in b.placed) != 3 or listing.placed[-1].page != 2:
        return None
    pages = [sorted({ln.page + 1 for ln in listing.placed if ln.spec.item == n}) for n in range(len(texts))]
    cut = [n for n, p in enumerate(pages) if len(p) > 1]
    first_rest = next((ln for ln in listing.placed if ln.page == 1), None)
    if [pages[n] for n in cut] != [[1, 2]] or first_rest is None or not first_rest.text[0].islower():
        return None
    furniture = _header_footer(canvas, 3, None, lambda n: f"Page {n} of 3", SMALL, 40, A5[1] - 30, 50)
    doc = _finish(canvas, flow, 3, furniture, tmp_dir / "numbered_list.pdf", [], "en")
    items = [" ".join(ln.text for ln in listing.placed if ln.spec.item == n) for n in range(len(texts))]
    return ListDoc(doc, items, pages)

