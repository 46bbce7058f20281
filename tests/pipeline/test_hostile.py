"""Hostile and broken documents through the whole pipeline: a page that
trips a sandbox limit or cannot be read fails alone, the others are
written, and none of it costs this process memory."""

from __future__ import annotations

import time

import psutil
import pytest

from longdoc.errors import ResourceLimit
from longdoc.ingest.sandbox import open_sandboxed
from longdoc.model import DocumentStatus, PageStatus
from longdoc.pipeline import ParseOptions, Pipeline
from tests.conftest import make_settings
from tests.ingest.files import (
    GOOD_PAGE_LINES,
    good_page,
    pdf_with_pages,
    slow_page,
    stream_bomb_page,
    text_pdf,
)
from tests.pipeline.fakes import NoEngineFake
from tests.pipeline.helpers import load_doc, txt

BOMB_MIB = 320          # inflates to 320 MiB …
SANDBOX_MB = 128        # … where the sandbox may add 128 MiB


def _settings(**limits):
    settings = make_settings()
    return settings.model_copy(update={"limits": settings.limits.model_copy(update=limits)})


@pytest.fixture(scope="module")
def bomb_pdf(tmp_path_factory):
    return pdf_with_pages(tmp_path_factory.mktemp("bomb") / "bomb.pdf",
                          [good_page(1), stream_bomb_page(BOMB_MIB), good_page(3)])


def test_a_compressed_stream_bomb_fails_its_page_alone_and_costs_this_process_nothing(tmp_path, bomb_pdf):
    assert bomb_pdf.stat().st_size < 1_000_000
    rss_before = psutil.Process().memory_info().rss
    with Pipeline(_settings(worker_memory_mb=SANDBOX_MB), engine_factory=NoEngineFake()) as pipeline:
        result = pipeline.parse(bomb_pdf, tmp_path / "out", ParseOptions(page_chunk_size=2, chunk_overlap=1))
    grown = psutil.Process().memory_info().rss - rss_before
    assert grown < 64 * 2**20, f"this process grew by {grown / 2**20:.0f} MiB"
    assert result.status is DocumentStatus.PARTIAL
    assert result.failed_pages == [2]
    pages = load_doc(result).pages
    assert pages[1].status is PageStatus.FAILED and pages[1].error.code == ResourceLimit.code
    assert "limits.worker_memory_mb" in pages[1].error.message
    text = txt(result)
    assert "Good page 1 " in text and "Good page 3 " in text
    assert text.count(GOOD_PAGE_LINES[-1]) == 2


def test_the_sandbox_child_is_gone_once_the_source_closes(bomb_pdf):
    source = open_sandboxed(bomb_pdf, _settings(worker_memory_mb=SANDBOX_MB).limits)
    with source:
        with pytest.raises(ResourceLimit):
            source.text_layer(2)
        assert len(source.text_layer(3)) > 3  # a fresh child reopened the document
        pid = source.child_pid()
        assert pid is not None and psutil.pid_exists(pid)
    deadline = time.monotonic() + 5  # it exits on its own, reaped in the background
    while psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the sandbox child outlived its source"
        time.sleep(0.02)


def test_a_page_that_takes_too_long_fails_alone(tmp_path):
    path = pdf_with_pages(tmp_path / "slow.pdf", [good_page(1), slow_page(1_500_000), good_page(3)])
    with Pipeline(_settings(worker_timeout_seconds=0.6), engine_factory=NoEngineFake()) as pipeline:
        result = pipeline.parse(path, tmp_path / "out", ParseOptions())
    assert result.status is DocumentStatus.PARTIAL and result.failed_pages == [2]
    error = load_doc(result).pages[1].error
    assert error.code == ResourceLimit.code and "limits.worker_timeout_seconds" in error.message
    assert "Good page 3 " in txt(result)


def test_a_page_tree_claiming_more_pages_than_it_holds_keeps_the_real_page(tmp_path):
    path = pdf_with_pages(tmp_path / "claims-two.pdf", [good_page(1)], count=2)
    with Pipeline(_settings(), engine_factory=NoEngineFake()) as pipeline:
        result = pipeline.parse(path, tmp_path / "out", ParseOptions())
    assert result.status is DocumentStatus.PARTIAL and result.failed_pages == [2]
    doc = load_doc(result)
    assert doc.pages[0].status is PageStatus.OK and doc.pages[1].status is PageStatus.FAILED
    assert doc.pages[1].error.code == "page_render_failed"
    assert [e.page for e in doc.errors] == [2]
    assert "Good page 1 " in txt(result)


def test_every_page_holding_one_repeated_line_keeps_its_text(tmp_path):
    line = "Monthly status line: all systems nominal"
    path = text_pdf(tmp_path / "status.pdf", [{"texts": [(72, 60, line, 12)]} for _ in range(60)])
    with Pipeline(_settings(), engine_factory=NoEngineFake()) as pipeline:
        result = pipeline.parse(path, tmp_path / "out", ParseOptions(ocr="off", page_chunk_size=8, chunk_overlap=2))
    assert txt(result).count(line) == 60
    assert result.outputs["md"].read_text(encoding="utf-8").count(line) == 60


def test_the_document_name_given_is_the_one_in_the_result(tmp_path):
    path = pdf_with_pages(tmp_path / "original", [good_page(1)])
    name = "é" * 120 + ".pdf"
    with Pipeline(_settings(), engine_factory=NoEngineFake()) as pipeline:
        result = pipeline.parse(path, tmp_path / "out", ParseOptions(), stem="result", name=name)
    assert load_doc(result).source.name == name


def test_a_giant_page_is_scaled_down_to_the_render_cap_and_says_so(tmp_path, ocr_pipeline):
    """Ten of these (3.5 KB each) once held the shared engine for 30 s."""
    cap = ocr_pipeline.settings.limits.max_render_pixels
    side = 14400.0  # the largest page PDF allows (200 inches)
    path = text_pdf(tmp_path / "giant.pdf", [
        {"size": (side, side), "texts": [(1500, 5000, "GIANT", 1800)]},
        {"texts": [(72, 100, "A normal page", 24)]},
    ])
    result = ocr_pipeline.parse(path, tmp_path / "out", ParseOptions(ocr="force", dpi=200))
    giant, normal = load_doc(result).pages
    assert giant.downscaled and giant.render_dpi < 200
    assert (side * giant.render_dpi / 72) ** 2 <= cap * 1.001
    assert "GIANT" in txt(result)
    assert not normal.downscaled and normal.render_dpi == 200
