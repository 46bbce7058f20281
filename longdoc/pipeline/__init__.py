"""The pipeline entry: :class:`Pipeline` parses documents into exports
with the engines of an :class:`EngineHost`."""

from longdoc.pipeline.host import EngineHost
from longdoc.pipeline.options import ParseOptions
from longdoc.pipeline.run import ParseResult, Pipeline

__all__ = ["EngineHost", "ParseOptions", "ParseResult", "Pipeline"]
