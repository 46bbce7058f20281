from __future__ import annotations

from longdoc.errors import LongdocError


def assert_user_error(exc: BaseException, error_class: type[LongdocError], code: str) -> None:
    """The error a user sees: the right class and code, a message and a hint."""
    assert isinstance(exc, error_class), f"{type(exc).__name__}: {exc}"
    assert exc.code == code
    assert exc.message.strip()
    assert exc.hint.strip()
