"""Generated test documents with exact ground truth.

Every generator writes one file into ``tmp_dir`` and returns a
:class:`GeneratedDoc` (path, page count, per-page and whole-document main
text, furniture strings per page, order checks). The text is laid out line by
line by :mod:`tests.docgen.layout`, so the ground truth is exact, not
re-extracted. Conventions of the plain text: :mod:`tests.docgen.truth`.

==================  =========================================================
english_report      single column, title, headings, list and hyphenated
                    paragraph over page breaks, running header, "Page n of N"
chinese_report      simplified Chinese, header, "第 n 页", paragraph over a break
two_column          full-width title, two columns, page numbers
side_note           one page, margin note beside paragraph 2 (order p1 p2 note p3)
long_textlayer      N pages fast (1,000 in seconds) for memory benchmarks
code_listing        one page: prose, an indented C listing in a monospace font,
                    prose with an inline monospace word (a ListingDoc); or
                    two pages, the listing over the page break
rasterize           image-only PDF of a document (same page sizes, no text layer)
sideways            the same, each page scanned turned by 90, 180 or 270 degrees
to_tiff / to_png    multi-page TIFF / single-page PNG
==================  =========================================================

Pages of the kinds real manuals hold (a contents page, an index, a figure
with labels, old books' running heads and folios) are in
:mod:`tests.docgen.manuals`; layouts for reading quality (tables, a figure
inside two columns, furniture) in :mod:`tests.docgen.layouts`; scanned code
tokens in :mod:`tests.docgen.codes`.

Fonts: DejaVu Sans, Serif and Sans Mono (fonts-dejavu-core) and WenQuanYi Micro Hei
(fonts-wqy-microhei, a .ttc that fpdf2 2.8 embeds directly).
"""

from tests.docgen.documents import chinese_report, english_report, long_textlayer, side_note, two_column
from tests.docgen.listing import ListingDoc, code_listing
from tests.docgen.raster import rasterize, sideways, to_png, to_tiff
from tests.docgen.truth import GeneratedDoc

__all__ = [
    "GeneratedDoc",
    "ListingDoc",
    "chinese_report",
    "code_listing",
    "english_report",
    "long_textlayer",
    "rasterize",
    "side_note",
    "sideways",
    "to_png",
    "to_tiff",
    "two_column",
]
