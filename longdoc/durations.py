"""Durations written the way people write them: ``90d``, ``12h``, ``30m``,
``45s``, or combined from the largest unit down (``1d12h``, ``2h30m``).

The one parser of such strings: the CLI's ``--expires-in`` and ``--grace``,
the admin API's ``expires_in`` and ``grace`` and the settings that hold a
duration (``service.key_rotation_grace``) all read them here. This module
imports nothing of longdoc but its errors.
"""

from __future__ import annotations

import re
from datetime import timedelta

from longdoc.errors import InvalidDuration

UNIT_SECONDS = {"d": 86_400, "h": 3_600, "m": 60, "s": 1}
#: the longest duration accepted (about ten years)
MAX_DURATION = timedelta(days=3_650)
_MAX_CHARS = 32
_PATTERN = re.compile(r"(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?")


def parse_duration(text: str, *, what: str | None = None, allow_zero: bool = False) -> timedelta:
    """``text`` as a :class:`~datetime.timedelta`: whole numbers each followed
    by a unit (``d``, ``h``, ``m``, ``s``), units in that order, each at most
    once, surrounding blanks ignored. ``what`` names the value at the start of
    an error's message (``"--expires-in"``). Zero (``0d``) is refused unless
    ``allow_zero``; more than :data:`MAX_DURATION` always is.

    Raises :class:`~longdoc.errors.InvalidDuration` for anything else: a bare
    number (``90``), a sign (``-1d``), a fraction (``1.5h``), an unknown unit
    (``2w``), units out of order (``30m1h``), an empty string."""
    cleaned = text.strip() if isinstance(text, str) else ""
    shown = repr(text[:_MAX_CHARS] + "…" if isinstance(text, str) and len(text) > _MAX_CHARS else text)
    said = f"{what}: {shown}" if what else shown
    match = _PATTERN.fullmatch(cleaned) if 0 < len(cleaned) <= _MAX_CHARS else None
    if match is None or not any(match.groups()):
        raise InvalidDuration(f"{said} is not a duration.", value=str(text)[:_MAX_CHARS])
    seconds = sum(int(n) * UNIT_SECONDS[u] for n, u in zip(match.groups(), UNIT_SECONDS, strict=True) if n)
    if seconds == 0 and not allow_zero:
        raise InvalidDuration(f"{said} is zero; it must be longer than that.", value=cleaned)
    if seconds > MAX_DURATION.total_seconds():
        raise InvalidDuration(f"{said} is longer than {MAX_DURATION.days} days.", value=cleaned)
    return timedelta(seconds=seconds)


def format_duration(delta: timedelta) -> str:
    """``delta`` (whole seconds, not negative) in the form :func:`parse_duration`
    reads: ``7d``, ``1d12h``, ``0s``."""
    seconds = int(delta.total_seconds())
    assert seconds >= 0, f"a negative duration has no written form: {delta}"
    parts = []
    for unit, size in UNIT_SECONDS.items():
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"
