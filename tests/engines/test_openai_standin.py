"""The openai engine end to end, through the pipeline, against the stand-in
model server (a real HTTP server speaking the OpenAI API, answering in the
model's format from RapidOCR; named as a stand-in: no GPU model runs here).

A 24-page document in groups of 8 with 2 pages of overlap reads as the CPU
engine reads it, every page once; each fault the server injects is
recovered and recorded on the pages it touched."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from evaluation.metrics import cer
from longdoc.config import load_settings
from longdoc.errors import EngineUnavailable, JobCancelled
from longdoc.model import DocumentStatus, PageFlag
from longdoc.pipeline import ParseOptions, Pipeline
from tests.conftest import free_port
from tests.ingest.files import text_pdf
from tests.pipeline.helpers import load_doc

PAGES = 24
SENTENCES = ["The harbour opens at dawn.", "Ferries leave every hour.", "The market sells fresh fish.",
             "Repairs start in spring.", "The library closes at six."]


@pytest.fixture
def standin(standin_server):
    """The session's stand-in model server, without faults after the test."""
    yield standin_server
    httpx.post(f"{standin_server}/standin/faults", json=[], timeout=5)


@pytest.fixture(scope="module")
def doc(tmp_path_factory) -> Path:
    pages = [{"size": (400, 300), "texts": [(24, 60, f"Record {n}.", 22), (24, 120, SENTENCES[n % 5], 18),
                                            (24, 170, f"Entry number {n * 7} of the ledger.", 18)]}
             for n in range(1, PAGES + 1)]
    return text_pdf(tmp_path_factory.mktemp("doc") / "ledger.pdf", pages)


def _settings(url: str, **openai):
    return load_settings(overrides={"inference": {
        "engine": "openai", "workers": 2, "openai": {"base_url": f"{url}/v1", "max_concurrency": 3, "retries": 1,
                                                      "timeout_seconds": 30, **openai}}})


def _parse(url, doc, tmp_path, pages=None, chunk=4, overlap=1, **openai):
    options = ParseOptions(ocr="force", dpi=150, engine="openai", pages=pages, page_chunk_size=chunk,
                           chunk_overlap=overlap)
    with Pipeline(_settings(url, **openai)) as pipeline:
        result = pipeline.parse(doc, tmp_path / "out", options)
        assert pipeline.host.admission("openai").workspace.in_use == 0
    return result, load_doc(result)


def _faults(url, *rules):
    assert httpx.post(f"{url}/standin/faults", json=list(rules), timeout=5).status_code == 200


def _stats(url):
    return httpx.get(f"{url}/standin/stats", timeout=5).json()


def _every_record_once(parsed, numbers):
    text = "\n".join(b.text for p in parsed.pages for b in p.blocks)
    for n in numbers:
        assert text.count(f"Record {n}.") == 1, f"Record {n}. appears {text.count(f'Record {n}.')} times"


def test_twenty_four_pages_in_groups_of_eight_read_as_the_cpu_engine_does(standin, doc, tmp_path):
    before = _stats(standin)["requests"]
    result, parsed = _parse(standin, doc, tmp_path, chunk=8, overlap=2)
    assert result.status is DocumentStatus.SUCCEEDED
    assert [p.number for p in parsed.pages] == list(range(1, PAGES + 1))
    _every_record_once(parsed, range(1, PAGES + 1))
    assert all(p.engine == "openai" and p.produced_by == "group" and not p.recovery for p in parsed.pages)
    stats = _stats(standin)
    # groups own 8, 6, 6, 4 pages; each after the first is sent with its 2 context pages
    assert sorted(stats["pages_per_request"][before:]) == [6, 8, 8, 8]
    assert stats["max_in_flight"] <= 3

    # the CPU engine reads the first pages, the pages on both sides of a seam between groups (8 | 9) and the last ones
    with Pipeline(load_settings(overrides={"inference": {"workers": 2}})) as cpu:
        options = ParseOptions(ocr="force", dpi=150, pages="1-2,8-9,23-24", page_chunk_size=8, chunk_overlap=2)
        reference = load_doc(cpu.parse(doc, tmp_path / "cpu", options))
    ours_by_number = {p.number: p for p in parsed.pages}
    assert [p.number for p in reference.pages] == [1, 2, 8, 9, 23, 24]
    for theirs in reference.pages:
        ours = ours_by_number[theirs.number]
        a = " ".join(b.text for b in ours.blocks)
        b = " ".join(b.text for b in theirs.blocks)
        assert cer(" ".join(a.split()), " ".join(b.split())) <= 0.05, (ours.number, a, b)


@pytest.mark.parametrize(("rule", "expect"), [
    # every request of several pages is cut short: halves, then single pages
    ({"kind": "truncate", "min_pages": 2}, {1: ("single", "group: truncated"), 5: ("single", "group: truncated")}),
    # a request holding page 3 loops: its group splits; page 3's half splits again
    ({"kind": "repeat", "when_text": "Record 3.", "min_pages": 2},
     {1: ("split", "group: repetition"), 3: ("single", "split: repetition"), 8: ("group", None)}),
    # answers of three or more pages lose a page
    ({"kind": "page_count", "min_pages": 3}, {1: ("split", "group: page_count"), 8: ("group", None)}),
    # page 5 always comes back empty: the CPU engine reads it
    ({"kind": "empty", "when_text": "Record 5."}, {5: ("fallback:rapidocr", "single: empty"), 6: ("single", "split: empty"), 1: ("group", None)}),
    # page 6 always gets a 500 (after its retry): the CPU engine reads it
    ({"kind": "error", "when_text": "Record 6.", "status": 500},
     {6: ("fallback:rapidocr", "single: http_500"), 1: ("group", None)}),
    # one 500, one dropped connection: retried, recorded
    ({"kind": "error", "when_text": "Record 1.", "times": 1},
     {1: ("group", "group: retried 1x after a transient failure"), 8: ("group", None)}),
    ({"kind": "drop", "when_text": "Record 1.", "times": 1},
     {1: ("group", "group: retried 1x after a transient failure"), 8: ("group", None)}),
    # an answer past timeout_seconds (2 s), silent or trickling: not asked again, split at once
    ({"kind": "slow", "when_text": "Record 1.", "seconds": 4, "times": 1},
     {1: ("split", "group: timeout"), 8: ("group", None)}),
    ({"kind": "trickle", "when_text": "Record 1.", "seconds": 6, "times": 1},
     {1: ("split", "group: timeout"), 8: ("group", None)}),
    # a 429 with Retry-After: 1 is waited out; a server busy for ever on page 6 (503) sends
    # it, after the group's busy_wait_seconds (1.5 s), down the ladder to the CPU engine
    ({"kind": "error", "status": 429, "retry_after": "1", "when_text": "Record 1.", "times": 1},
     {1: ("group", "group: waited 1."), 8: ("group", None)}),
    ({"kind": "error", "status": 503, "retry_after": "1", "when_text": "Record 6."},
     {6: ("fallback:rapidocr", "single: busy"), 1: ("group", None)}),
])
def test_each_fault_is_recovered_and_recorded_on_its_pages(standin, doc, tmp_path, rule, expect):
    _faults(standin, rule)
    timeout = 2 if rule["kind"] in ("slow", "trickle") else 30
    result, parsed = _parse(standin, doc, tmp_path, pages="1-8", timeout_seconds=timeout, busy_wait_seconds=1.5)
    assert result.status is DocumentStatus.SUCCEEDED, [p.error for p in parsed.pages if p.error]
    assert [p.number for p in parsed.pages] == list(range(1, 9))
    assert parsed.review_pages == [p.number for p in parsed.pages if p.needs_review()]
    _every_record_once(parsed, range(1, 9))
    assert _stats(standin)["faults_fired"], "the fault never fired"
    pages = {p.number: p for p in parsed.pages}
    for number, (path, note) in expect.items():
        assert pages[number].produced_by == path, (number, pages[number].produced_by, pages[number].recovery)
        assert (PageFlag.FALLBACK in pages[number].flags) is path.startswith("fallback:"), pages[number].flags
        if note is None:
            assert pages[number].recovery == []
        else:
            assert any(r.startswith(note) for r in pages[number].recovery), (number, pages[number].recovery)


def test_a_context_length_error_splits_the_group_and_later_groups_send_fewer_pages(standin, doc, tmp_path):
    _faults(standin, {"kind": "error", "status": 400, "min_pages": 3,
                      "message": "This model's maximum context length is 32768 tokens. However, you requested "
                                 "40211 tokens. Please reduce the length of the messages or completion."})
    before = _stats(standin)["requests"]
    result, parsed = _parse(standin, doc, tmp_path, pages="1-12", overlap=0, max_concurrency=1)
    assert result.status is DocumentStatus.SUCCEEDED
    _every_record_once(parsed, range(1, 13))
    # the first group's 4 pages are refused and split; from then on 2 pages a request
    assert _stats(standin)["pages_per_request"][before:] == [4, 2, 2, 2, 2, 2, 2]
    pages = {p.number: p for p in parsed.pages}
    assert pages[1].produced_by == "split"
    assert pages[1].recovery == ["group: context_length", "group: pages per request lowered to 2"]
    assert all(pages[n].produced_by == "group" and not pages[n].recovery for n in range(5, 13))


def test_a_server_refusing_the_api_key_fails_the_document_with_engine_unavailable(standin, doc, tmp_path):
    _faults(standin, {"kind": "error", "status": 401, "message": "Unauthorized"})
    options = ParseOptions(ocr="force", dpi=150, engine="openai", pages="1-8", page_chunk_size=4, chunk_overlap=1)
    with Pipeline(_settings(standin)) as pipeline:
        with pytest.raises(EngineUnavailable) as caught:
            pipeline.parse(doc, tmp_path / "out", options)
        assert pipeline.host.engine("openai").fallback._engine is None  # no page read by the CPU engine
    assert caught.value.code == "engine_unavailable" and "inference.openai.api_key" in caught.value.hint
    assert not (tmp_path / "out" / "ledger.md").exists()


@pytest.mark.parametrize("profile", ["deepseek-ocr-2", "paddleocr-vl", "generic"])
def test_one_page_profiles_read_each_page_once(standin, doc, tmp_path, profile):
    before = _stats(standin)["requests"]
    result, parsed = _parse(standin, doc, tmp_path, pages="1-4", profile=profile)
    assert result.status is DocumentStatus.SUCCEEDED
    _every_record_once(parsed, range(1, 5))
    assert all(p.produced_by == "page" and p.engine_version == f"standin-ocr/{profile}" for p in parsed.pages)
    assert _stats(standin)["pages_per_request"][before:] == [1, 1, 1, 1]


def test_a_server_that_is_down_fails_the_document_as_retryable(doc, tmp_path):
    with pytest.raises(EngineUnavailable) as caught:
        _parse(f"http://127.0.0.1:{free_port()}", doc, tmp_path, pages="1-2")
    assert caught.value.retryable


def test_cancelling_stops_the_requests_and_frees_the_reservations(standin, doc, tmp_path):
    _faults(standin, {"kind": "slow", "seconds": 3, "min_pages": 1})
    calls = {"n": 0}

    def control():
        calls["n"] += 1
        if calls["n"] > 2:
            raise JobCancelled("cancelled")

    settings = _settings(standin)
    with Pipeline(settings) as pipeline:
        with pytest.raises(JobCancelled):
            pipeline.parse(doc, tmp_path / "out", ParseOptions(ocr="force", dpi=150, engine="openai", pages="1-12",
                                                               page_chunk_size=4, chunk_overlap=1), control=control)
        admission = pipeline.host.admission("openai")
        assert (admission.workspace.in_use, admission.in_flight, admission.waiting) == (0, 0, 0)
        assert pipeline.host.engine("openai").requests_in_flight == 0
    assert not (tmp_path / "out" / "ledger.md").exists()  # no result under the final name
