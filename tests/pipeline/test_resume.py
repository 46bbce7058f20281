"""A checkpointed group is never redone; an interrupted run resumes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from longdoc.model import DocumentStatus
from longdoc.pipeline import ParseOptions, Pipeline
from tests.conftest import make_settings
from tests.docgen import long_textlayer, rasterize
from tests.pipeline.fakes import CountingFakeEngine, PageFailingFakeEngine, StopAfterProgress
from tests.pipeline.helpers import load_doc, txt

#: what is redone or resumed is the point here, not how well a page reads: pages of a few lines (each
#: starts "Record n."), read at 100 dpi without the region models (with full report pages this file
#: ran 56 s alone on 2 cores, 24 s with these)
OPTS = ParseOptions(ocr="force", dpi=100, page_chunk_size=2, chunk_overlap=1, regions=False)


@pytest.fixture(scope="module")
def scan(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("scan")
    return rasterize(long_textlayer(tmp, pages=4, brief=True), 150, tmp / "scan.pdf")


def _pipeline(ocr_pipeline, fake_cls=CountingFakeEngine, **kw):
    fake = fake_cls(ocr_pipeline.host.engine("rapidocr"), **kw)
    return Pipeline(make_settings(), engine_factory=lambda name: fake), fake


def test_interrupted_run_resumes_without_recognizing_done_pages(tmp_path, scan, ocr_pipeline):
    reference = ocr_pipeline.parse(scan.pdf_path, tmp_path / "ref", OPTS)

    pipeline, first = _pipeline(ocr_pipeline)
    with pytest.raises(KeyboardInterrupt):
        pipeline.parse(scan.pdf_path, tmp_path / "out", OPTS, progress=StopAfterProgress(groups=1))
    assert first.seen == [1, 2]  # group 0 owns pages 1-2
    assert not (tmp_path / "out" / "scan.txt").exists()  # no half result under the final name

    pipeline, second = _pipeline(ocr_pipeline)
    result = pipeline.parse(scan.pdf_path, tmp_path / "out", OPTS)
    assert second.seen == [3, 4]
    assert result.resumed_pages == 2
    assert txt(result) == txt(reference)
    assert [p.number for p in load_doc(result).pages] == [1, 2, 3, 4]


def test_rerun_after_success_redoes_nothing(tmp_path, scan, ocr_pipeline):
    pipeline, first = _pipeline(ocr_pipeline)
    pipeline.parse(scan.pdf_path, tmp_path / "out", OPTS)
    pipeline, again = _pipeline(ocr_pipeline)
    result = pipeline.parse(scan.pdf_path, tmp_path / "out", OPTS)
    assert again.seen == [] and result.resumed_pages == 4


def test_other_options_do_not_reuse_old_results(tmp_path, scan, ocr_pipeline):
    pipeline, _ = _pipeline(ocr_pipeline)
    pipeline.parse(scan.pdf_path, tmp_path / "out", OPTS)
    pipeline, again = _pipeline(ocr_pipeline)
    result = pipeline.parse(scan.pdf_path, tmp_path / "out", OPTS.model_copy(update={"dpi": 150}))
    assert again.seen == [1, 2, 3, 4] and result.resumed_pages == 0


def test_failed_page_makes_partial_and_is_retried_on_rerun(tmp_path, scan, ocr_pipeline):
    pipeline, failing = _pipeline(ocr_pipeline, PageFailingFakeEngine, fail={3})
    result = pipeline.parse(scan.pdf_path, tmp_path / "out", OPTS)
    assert result.status is DocumentStatus.PARTIAL and result.failed_pages == [3]
    parsed = load_doc(result)
    assert [p.number for p in parsed.pages] == [1, 2, 3, 4]
    assert parsed.pages[2].status.value == "failed" and parsed.errors[0].page == 3
    for n in (1, 2, 4):  # the other pages' text is still there
        assert parsed.pages[n - 1].blocks, f"page {n} lost because page 3 failed"

    pipeline, healthy = _pipeline(ocr_pipeline)
    result = pipeline.parse(scan.pdf_path, tmp_path / "out", OPTS)
    assert result.status is DocumentStatus.SUCCEEDED
    assert healthy.seen == [3]  # only the group holding the failed page is redone


def test_kill_9_mid_document_then_rerun_completes_every_page_once(tmp_path):
    doc = long_textlayer(tmp_path, pages=160)  # 53 groups: killed after 5
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "longdoc.cli", "parse", str(doc.pdf_path), "-o", str(out), "-q",
           "--chunk-size", "4", "--overlap", "1", "--format", "txt,json"]
    proc = subprocess.Popen(cmd)
    done = out / ".longdoc" / doc.pdf_path.stem / "checkpoint" / "groups"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(list(done.glob("*.done"))) < 5 and proc.poll() is None:
        time.sleep(0.01)
    assert proc.poll() is None, "finished before it could be killed; use a longer document"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (out / f"{doc.pdf_path.stem}.txt").exists()

    rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert "resumed" in rerun.stderr
    text = (out / f"{doc.pdf_path.stem}.txt").read_text()
    assert all(text.count(f"Record {n}.") == 1 for n in range(1, 161))
    positions = [text.find(f"Record {n}.") for n in range(1, 161)]
    assert positions == sorted(positions)
