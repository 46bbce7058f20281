"""Reading a parse's outputs back the way a user would."""

from __future__ import annotations

from longdoc.model import Document
from longdoc.pipeline import ParseResult


def load_doc(result: ParseResult) -> Document:
    return Document.model_validate_json(result.outputs["json"].read_text(encoding="utf-8"))


def txt(result: ParseResult) -> str:
    return result.outputs["txt"].read_text(encoding="utf-8")


def flat(text: str) -> str:
    """Whitespace-insensitive form (form feeds and newlines become spaces)."""
    return " ".join(text.replace("\f", " ").split())


def nospace(text: str) -> str:
    return "".join(text.split())


def in_order(text: str, phrases: list[str]) -> list[str]:
    """The phrases of ``phrases`` not found in ``text`` after the end of
    the one found before them (all found in order: ``[]``)."""
    missing, at = [], 0
    for phrase in phrases:
        found = text.find(phrase, at)
        if found < 0:
            missing.append(phrase)
        else:
            at = found + len(phrase)
    return missing
