"""Mistyped command lines: a usage message and exit code 2, never a
traceback, through the installed ``longdoc`` command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

LONGDOC = Path(sys.executable).with_name("longdoc")


@pytest.mark.parametrize("argv, says", [
    (["parse", "--no-such-option", "x.pdf"], "No such option: --no-such-option"),
    (["parse"], "Missing argument"),
    (["audit", "list", "--limit", "many"], "Invalid value for '--limit'"),
    (["keys", "create"], "Missing option '--tenant'"),
    (["no-such-command"], "No such command"),
])
def test_a_mistyped_command_line_gets_usage_and_exit_2(argv, says, tmp_path):
    done = subprocess.run([str(LONGDOC), *argv], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stderr
    assert says in done.stderr and "Usage: longdoc" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
