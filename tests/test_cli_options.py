"""``longdoc parse``'s option flags are checked by ParseOptions, the one
source of the options: a value outside an option's choices or bounds is a
usage error naming the flag and what it allows, before anything is read."""

from __future__ import annotations

import pytest

from longdoc.errors import EXIT_USAGE
from tests.test_cli import run_cli


@pytest.mark.parametrize("flag, value, allowed", [
    ("--dpi", "10", "greater than or equal to 50"),
    ("--dpi", "601", "less than or equal to 600"),
    ("--chunk-size", "0", "greater than or equal to 1"),
    ("--ocr", "sometimes", "auto, force or off"),
    ("--furniture", "hide", "keep or drop"),
])
def test_a_flag_outside_its_options_bounds_is_a_usage_error(tmp_path, capsys, flag, value, allowed):
    missing = tmp_path / "not-read.pdf"  # never opened: the flag is refused first
    rc, _, err = run_cli(capsys, "parse", missing, "-o", tmp_path / "o", flag, value)
    assert rc == EXIT_USAGE, err
    assert f"error [invalid_option]: {flag}: " in err and allowed in err and f"not {value}" in err.replace("'", "")
    assert not (tmp_path / "o").exists()
