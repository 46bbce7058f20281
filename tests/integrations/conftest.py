"""The real ``ocrmypdf`` command with longdoc's plugin, and ``pdftotext`` to
read what it wrote back, as a user would."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

PLUGIN = "longdoc.integrations.ocrmypdf"
#: the command the virtual environment installed (the test extra pins OCRmyPDF)
OCRMYPDF = Path(sys.executable).parent / "ocrmypdf"


@pytest.fixture
def ocrmypdf() -> Callable[..., subprocess.CompletedProcess[str]]:
    """``ocrmypdf --plugin longdoc.integrations.ocrmypdf ARGS…``, run as a
    subprocess with the virtual environment's programs first on PATH."""
    if importlib.util.find_spec("ocrmypdf") is None or not OCRMYPDF.exists():
        pytest.skip("OCRmyPDF is not installed (pip install 'longdoc[ocrmypdf]'; the test extra has it)")
    env = {**os.environ, "PATH": f"{OCRMYPDF.parent}{os.pathsep}{os.environ.get('PATH', '')}"}

    def run(*args: str | Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(OCRMYPDF), "--plugin", PLUGIN, *map(str, args)], capture_output=True,
                              text=True, env=env, timeout=timeout)
    return run


def pdftotext(path: Path, *args: str) -> str:
    """What poppler's ``pdftotext`` reads from ``path`` (skips without it)."""
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext is not installed (Debian poppler-utils; scripts/system-deps.sh installs it)")
    return subprocess.run(["pdftotext", *args, str(path), "-"], capture_output=True, text=True, check=True).stdout


WORD = re.compile(r"\w+")


def word_recall(read: str, truth: str) -> float:
    """Share of the truth's words (case-folded, with repeats) found in what was read, in any order."""
    want, got = Counter(WORD.findall(truth.lower())), Counter(WORD.findall(read.lower()))
    return sum(min(n, got[w]) for w, n in want.items()) / max(1, sum(want.values()))
