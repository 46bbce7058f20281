"""Assemble: document-level passes over laid-out pages, streamed in order.

- :func:`stitch` — merge paragraphs and lists continued over page breaks.
"""

from longdoc.assemble.stitch import continues, stitch

__all__ = ["continues", "stitch"]
