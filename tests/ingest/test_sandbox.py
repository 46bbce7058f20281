"""The sandboxed source answers as the in-process one does, with the same
typed errors, and never names the file's path."""

from __future__ import annotations

import numpy as np
import pytest

from longdoc.config import LimitSettings
from longdoc.errors import CorruptFile, EncryptedPdf, LongdocError, TooManyPages, UnsupportedType
from longdoc.ingest.open import open_document
from longdoc.ingest.sandbox import open_sandboxed
from tests.ingest.asserts import assert_user_error
from tests.ingest.files import encrypted_pdf, text_pdf, truncated

LIMITS = LimitSettings()


@pytest.fixture
def two_pages(tmp_path):
    return text_pdf(tmp_path / "two.pdf", [
        {"size": (300, 400), "texts": [(30, 50, "Top line here", 20)]},
        {"size": (500, 200), "texts": [(40, 100, "Second page", 12)]},
    ])


def test_answers_as_the_in_process_source(two_pages) -> None:
    with open_document(two_pages, LIMITS) as here, open_sandboxed(two_pages, LIMITS) as there:
        assert (there.name, there.media_type, there.sha256, there.page_count) == (
            here.name, here.media_type, here.sha256, here.page_count)
        for page in (1, 2):
            assert there.page_size(page) == here.page_size(page)
            assert there.text_layer(page) == here.text_layer(page)
            a, b = here.render(page, 100), there.render(page, 100)
            assert (a.dpi, a.downscaled) == (b.dpi, b.downscaled)
            assert np.array_equal(np.asarray(a.image), np.asarray(b.image))


@pytest.mark.parametrize(("make", "error", "code"), [
    (lambda d: encrypted_pdf(d / "upload", user_password="pw"), EncryptedPdf, "encrypted_pdf"),
    (lambda d: truncated(text_pdf(d / "upload", [{"texts": [(30, 50, "x", 12)]}]), 0.3), CorruptFile, "corrupt_file"),
    (lambda d: (d / "upload").write_bytes(b"<html><body>hi</body></html>") and d / "upload", UnsupportedType,
     "unsupported_type"),
])
def test_errors_come_back_typed_and_name_the_document_not_its_path(tmp_path, make, error, code) -> None:
    folder = tmp_path / "private-work-folder"
    folder.mkdir()
    path = make(folder)
    with pytest.raises(LongdocError) as caught:
        open_sandboxed(path, LIMITS, name="Quarterly report.pdf")
    assert_user_error(caught.value, error, code)
    assert "private-work-folder" not in str(caught.value) and str(tmp_path) not in str(caught.value)
    assert caught.value.hint == error.hint


def test_limits_checked_in_the_sandbox_keep_their_context(two_pages) -> None:
    with pytest.raises(TooManyPages) as caught:
        open_sandboxed(two_pages, LimitSettings(max_pages=1), name="two.pdf")
    assert caught.value.context == {"page_count": 2, "max_pages": 1}


def test_caller_mistakes_are_value_errors_not_page_failures(two_pages) -> None:
    source = open_sandboxed(two_pages, LIMITS)
    with source:
        with pytest.raises(ValueError):
            source.page_size(3)
        assert source.page_size(2) == (500, 200)
    with pytest.raises(ValueError):
        source.render(1, 100)


def test_a_temporary_folder_too_long_for_the_helpers_socket_is_a_config_error_at_start(tmp_path) -> None:
    """Under a TMPDIR longer than a Unix socket's path allows, no sandbox can
    start: the CLI says so at once (exit code 9, invalid_config), not as an
    internal error on every document."""
    import os
    import subprocess
    import sys

    deep = tmp_path / ("t" * max(1, 110 - len(str(tmp_path))))
    deep.mkdir()
    sample = text_pdf(tmp_path / "doc.pdf", [{"size": (300, 300), "texts": [(40, 60, "One page.", 12)]}])
    run = subprocess.run([sys.executable, "-m", "longdoc.cli", "parse", str(sample), "-o", str(tmp_path / "out"),
                          "--ocr", "off", "--no-regions"],
                         capture_output=True, text=True, env={**os.environ, "TMPDIR": str(deep)}, timeout=120)
    assert run.returncode == 9, run.stderr
    assert "invalid_config" in run.stderr and "TMPDIR" in run.stderr
    run = subprocess.run([sys.executable, "-m", "longdoc.cli", "parse", str(sample), "-o", str(tmp_path / "out"),
                          "--ocr", "off", "--no-regions"],
                         capture_output=True, text=True, env={**os.environ, "TMPDIR": "/tmp"}, timeout=120)
    assert run.returncode == 0, run.stderr  # a short one works
