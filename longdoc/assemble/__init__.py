"""Assemble: document-level passes over laid-out pages, streamed in order.

- :func:`stitch` — join what a page break cuts; mark lists and tables continued over it.
"""

from longdoc.assemble.stitch import continues, stitch, stitched_page

__all__ = ["continues", "stitch", "stitched_page"]
