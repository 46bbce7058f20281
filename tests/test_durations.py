"""Durations as people write them (``90d``, ``1d12h``): the one parser the
CLI, the admin API and the settings share."""

from __future__ import annotations

from datetime import timedelta

import pytest

from longdoc.config import load_settings
from longdoc.durations import MAX_DURATION, format_duration, parse_duration
from longdoc.errors import ConfigError, InvalidDuration


@pytest.mark.parametrize(("text", "expected"), [
    ("90d", timedelta(days=90)),
    ("12h", timedelta(hours=12)),
    ("30m", timedelta(minutes=30)),
    ("45s", timedelta(seconds=45)),
    ("1d12h", timedelta(days=1, hours=12)),
    ("2h30m15s", timedelta(hours=2, minutes=30, seconds=15)),
    (" 7d ", timedelta(days=7)),
    ("3650d", MAX_DURATION),
])
def test_durations_read_as_written(text, expected):
    assert parse_duration(text) == expected
    assert parse_duration(format_duration(expected)) == expected


@pytest.mark.parametrize("text", ["90", "-1d", "+1d", "1.5h", "2w", "1D", "30m1h", "1d1d", "d", "", " ",
                                  "1 d", "١d", "9" * 40 + "d", "7d;DROP"])
def test_anything_else_is_an_invalid_duration_naming_the_value(text):
    with pytest.raises(InvalidDuration) as caught:
        parse_duration(text, what="--expires-in")
    assert caught.value.code == "invalid_duration" and caught.value.http_status == 400
    assert caught.value.message.startswith("--expires-in: ")


def test_zero_only_where_allowed_and_never_past_ten_years():
    with pytest.raises(InvalidDuration, match="zero"):
        parse_duration("0d")
    assert parse_duration("0s", allow_zero=True) == timedelta(0)
    with pytest.raises(InvalidDuration, match="3650 days"):
        parse_duration("3650d1s", allow_zero=True)


def test_the_rotation_grace_setting_is_a_duration():
    assert load_settings(None).service.key_rotation_grace_delta == timedelta(days=7)
    assert load_settings(None, {"service": {"key_rotation_grace": "0s"}}).service.key_rotation_grace_delta == timedelta(0)
    with pytest.raises(ConfigError, match="service.key_rotation_grace"):
        load_settings(None, {"service": {"key_rotation_grace": "7"}})
