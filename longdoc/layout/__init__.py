"""Layout: one recognized page → blocks in reading order.

- :func:`find_furniture` — running headers, footers and page numbers,
  compared with neighbouring pages;
- :func:`layout_page` — paragraphs, headings, lists, title, side notes and
  code listings (lines in a fixed-pitch font), ordered column by column
  (XY-cut);
- :func:`join_lines` / :func:`join_pair` — joining text across line breaks
  (de-hyphenation, CJK), shared with the cross-page stitcher.

Pure functions over :mod:`longdoc.model` (a recognized page is a
:class:`~longdoc.model.Page` whose ``lines`` are not laid out yet): no
engine, no I/O.
"""

from longdoc.layout.furniture import find_furniture
from longdoc.layout.page import layout_page
from longdoc.layout.text import join_lines, join_pair, split_list_marker

__all__ = ["find_furniture", "join_lines", "join_pair", "layout_page", "split_list_marker"]
