"""Exports, each a view of the document model: Markdown, JSON and plain
text; a searchable PDF (the original with an invisible text layer); chunks
for retrieval (JSON Lines); a DoclingDocument.

Writers stream page by page (memory does not grow with page count) into a
temporary file renamed into place on ``close``, so a reader never sees a
half-written export under its final name.
"""

from longdoc.export.formats import DEFAULT_FORMATS, FILE_NAMES, FORMATS, LABELS, MEDIA_TYPES, ExportFormat
from longdoc.export.markdown import page_markdown
from longdoc.export.text import page_text
from longdoc.export.writers import ExportContext, ExportSet, open_exports

__all__ = ["DEFAULT_FORMATS", "FILE_NAMES", "FORMATS", "LABELS", "MEDIA_TYPES", "ExportContext", "ExportFormat",
           "ExportSet", "open_exports", "page_markdown", "page_text"]
