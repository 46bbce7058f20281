"""Fixtures shared by the pipeline, CLI and evaluation tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

#: torch's and BLAS's own thread pools on one thread, in this process and every process a test starts: the
#: suite runs more xdist workers than cores, and a second thread spinning for a busy core only slows the rest
#: (tests/engines/native with 2 workers on 2 cores: 34.9 s -> 29.3 s; bench/gpu_check.py beside three busy
#: processes: 62 s -> 46 s). The OCR runtimes' threads are set by longdoc's settings, not by this.
os.environ.setdefault("OMP_NUM_THREADS", "1")  # before numpy (OpenBLAS reads it when loaded) and torch

from longdoc.config import Settings, load_settings  # noqa: E402
from longdoc.pipeline import Pipeline  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]  # the checkout (tests.standin runs from it)
DEV_CORPUS = ROOT.parent / "shared" / "eval" / "dev"


def make_settings(**inference) -> Settings:
    base = {"workers": 2, "page_chunk_size": 2, "chunk_overlap": 1}
    base.update(inference)
    return load_settings(overrides={"inference": base})


@pytest.fixture(scope="session")
def ocr_pipeline():
    """One pipeline (and one RapidOCR worker pool) for the whole session;
    tests pass their own ParseOptions."""
    with Pipeline(make_settings()) as pipeline:
        yield pipeline


@pytest.fixture(scope="session")
def dev_corpus() -> Path:
    if not (DEV_CORPUS / "MANIFEST.tsv").is_file():
        pytest.skip(f"evaluation corpus not found at {DEV_CORPUS}")
    return DEV_CORPUS


#: where the test servers listen: below the kernel's ephemeral ports (32768-60999 here), which outgoing
#: connections take. A port picked by binding port 0 lies in that range, and a connection to PostgreSQL
#: or Redis could take it before the server listened on it ("Address already in use", seen under load)
PORTS = range(10000, 32000)
_next_port: list[int] = []


def free_port() -> int:
    """A port nothing listens on, from this xdist worker's own slice of
    :data:`PORTS` (two workers never pick the same), tried by binding it."""
    if not _next_port:
        count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        index = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
        size = len(PORTS) // max(count, 1)
        _next_port[:] = [PORTS.start + index * size, PORTS.start + (index + 1) * size]
    start, stop = _next_port
    for port in range(start, stop):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _next_port[0] = port + 1
        return port
    raise RuntimeError(f"no free port left in {start}-{stop}")


@pytest.fixture(scope="session")
def standin_server(tmp_path_factory):
    """The stand-in model server (``python -m tests.standin.model_server``:
    an OpenAI-compatible API answering from RapidOCR; no model) in its own
    process; yields its URL (``…/v1`` is the API)."""
    port = free_port()
    with open(tmp_path_factory.mktemp("standin") / "standin.log", "wb") as log:  # the server has its own copy
        proc = subprocess.Popen([sys.executable, "-m", "tests.standin.model_server", "--port", str(port)], cwd=ROOT,
                                stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, "the stand-in model server exited"
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "the stand-in model server did not start"
        time.sleep(0.2)
    yield url
    proc.terminate()
    proc.wait(10)


# --- order ------------------------------------------------------------------------

#: The slowest test files, longest first. `make test` runs the suite on every
#: core with pytest-xdist, a file per worker at a time (``--dist loadfile
#: --no-loadscope-reorder``: files are handed out in this collection order);
#: started first, they do not leave one worker running alone at the end.
#: Everything else keeps its order.
SLOW_FILES = (   # seconds each took in a full run (3 workers on 2 cores), 2026-12-06 (test_restarts: 12-07)
    "tests/runner/test_fleet.py",                  # 189
    "tests/runner/test_fleet_plans.py",            # 134 (12-08, AMD EPYC)
    "tests/service/test_restarts.py",              # 112
    "tests/engines/test_openai_standin.py",        # 81
    "tests/engines/test_backends.py",              # 70
    "tests/service/test_console.py",               # 64
    "tests/service/test_durability.py",            # 59
    "tests/service/test_job_flow.py",              # 57
    "tests/pipeline/test_manuals.py",              # 52
    "tests/export/test_searchable_pdf.py",         # 49
    "tests/integrations/test_ocrmypdf.py",         # 47
    "tests/pipeline/test_reading_quality.py",      # 47
    "tests/engines/test_symbol_runs.py",           # 44
    "tests/service/test_hardening.py",             # 43
    "tests/pipeline/test_scans.py",                # 43
    "tests/engines/native/test_native_engine.py",  # 43
    "tests/service/test_hung_engine.py",           # 43
    "tests/engines/test_rapidocr_engine.py",       # 42
    "tests/eval/test_devset.py",                   # 41
    "tests/pipeline/test_row_reading.py",          # ~40 estimated (25 alone, 12-07)
    "tests/pipeline/test_one_reading.py",          # ~40 estimated (37 alone beside a benchmark, 12-07)
    "tests/pipeline/test_resume.py",               # 37
    "tests/bench/test_gpu_check.py",               # 35
    "tests/service/test_native_engine.py",         # 32
    "tests/service/test_delete_leaves_nothing.py", # 30
    "tests/runner/test_inprocess.py",              # 29
    "tests/service/test_openapi_fuzz.py",          # 28
    "tests/engines/test_openai_faults.py",         # 28
    "tests/service/test_tls.py",                   # 28
    "tests/service/test_limits.py",                # 24
    "tests/service/test_slow_clients.py",          # 22
    "tests/engines/test_cascade.py",               # 21
    "tests/layout/test_word_order.py",             # 20
    "tests/api/test_audit.py",                     # 20
    "tests/export/test_review.py",                 # 20
    "tests/service/test_keys.py",                  # 19
)


# --- tiers --------------------------------------------------------------------------------

#: test files (or tests) that read pages with a real OCR or region model (RapidOCR,
#: Tesseract, the layout model), in process or in a server they start:
#: `make test` runs them, `make test-fast` (``pytest --fast``) does not.
#: Everything else needs no model; in the fast tier a test that loads one
#: anyway fails, naming this list.
MODEL_FILES = (
    "tests/client/", "tests/runner/test_fleet.py", "tests/runner/test_fleet_plans.py", "tests/runner/test_inprocess.py",
    "tests/service/test_console.py", "tests/service/test_durability.py", "tests/service/test_exports_api.py",
    "tests/service/test_hardening.py", "tests/service/test_job_flow.py", "tests/service/test_limits.py",
    "tests/service/test_native_engine.py", "tests/service/test_openai_engine.py",
    "tests/service/test_openapi_fuzz.py", "tests/service/test_ops.py", "tests/service/test_restarts.py",
    "tests/engines/test_backends.py", "tests/engines/test_cascade.py", "tests/engines/test_codes.py",
    "tests/engines/test_openai_standin.py", "tests/engines/test_rapidocr_engine.py",
    "tests/engines/test_symbol_runs.py", "tests/engines/test_tesseract_engine.py",
    "tests/eval/test_devset.py", "tests/eval/test_layout_docs.py",
    "tests/export/test_code_blocks.py", "tests/export/test_review.py", "tests/export/test_searchable_pdf.py",
    "tests/integrations/test_ocrmypdf.py",
    "tests/layout/test_real_ocr.py",
    "tests/pipeline/test_code_scans.py", "tests/pipeline/test_continued.py", "tests/pipeline/test_grid_tables.py",
    "tests/pipeline/test_hostile.py",
    "tests/pipeline/test_manuals.py", "tests/pipeline/test_one_reading.py", "tests/pipeline/test_reading_quality.py",
    "tests/pipeline/test_resume.py",
    "tests/pipeline/test_row_reading.py",
    "tests/pipeline/test_scans.py", "tests/pipeline/test_textlayer.py",
    "tests/storage/test_checkpoint.py", "tests/test_cli.py",
    # a test of its own: the CLI it runs reads the pages the model left with the rapidocr fallback
    "tests/engines/native/test_native_engine.py::test_pages_the_model_did_not_finish_are_read_by_the_fallback_engine",
)


def pytest_addoption(parser):
    parser.addoption("--fast", action="store_true",
                     help="the fast tier: only the tests that need no OCR or region model (MODEL_FILES are left out)")


def _needs_models(nodeid: str) -> bool:
    """Whether the test ``nodeid`` is listed in :data:`MODEL_FILES` (by its
    folder, its file or itself)."""
    path = nodeid.split("::", 1)[0]
    return any(path == f or nodeid == f or nodeid.startswith(f + "[") or (f.endswith("/") and path.startswith(f))
               for f in MODEL_FILES)


@pytest.fixture(autouse=True)
def _no_models_in_the_fast_tier(request, monkeypatch):
    """In the fast tier, loading an OCR or region model is a failure (the
    test belongs in MODEL_FILES)."""
    if not request.config.getoption("--fast"):
        return

    def refuse(*args, **kwargs):
        pytest.fail(f"{request.node.nodeid} loads an OCR model: list its file in MODEL_FILES (tests/conftest.py)")

    from longdoc.engines.rapidocr.engine import RapidOcrEngine
    from longdoc.engines.tesseract import TesseractEngine
    from longdoc.regions.detector import RegionDetector

    for cls, method in ((RapidOcrEngine, "load"), (TesseractEngine, "load"), (RegionDetector, "analyze")):
        monkeypatch.setattr(cls, method, refuse)


def pytest_collection_modifyitems(config, items):
    if config.getoption("--fast"):
        kept = [item for item in items if not _needs_models(item.nodeid)]
        config.hook.pytest_deselected(items=[item for item in items if _needs_models(item.nodeid)])
        items[:] = kept
    rank = {path: i for i, path in enumerate(SLOW_FILES)}

    def key(indexed):
        index, item = indexed
        path = item.nodeid.split("::", 1)[0]
        return (rank.get(path, len(SLOW_FILES)), index)

    items[:] = [item for _, item in sorted(enumerate(items), key=key)]
