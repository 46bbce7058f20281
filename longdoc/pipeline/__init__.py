"""The pipeline entry: :class:`Pipeline` parses documents into exports."""

from longdoc.pipeline.options import ParseOptions
from longdoc.pipeline.run import ParseResult, Pipeline

__all__ = ["ParseOptions", "ParseResult", "Pipeline"]
