"""longdoc: long documents in, structured text in reading order out."""

__version__ = "0.1.0"
