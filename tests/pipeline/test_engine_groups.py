"""The pipeline drives engines by page groups: sessions, context pages,
groups in flight, admission by watermark, cancel, and never a page lost or
emitted twice. Asserted on the engine's and the workspace's accounting,
never on time. The engine is the library's FakeEngine; documents, the
sandbox, layout, checkpoints and exports are real."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from longdoc.engines import FakeEngine, PageGroup
from longdoc.engines.fake import FakeSession
from longdoc.errors import JobCancelled
from longdoc.model import BBox, Block, BlockKind, DocumentStatus, Page, PageStatus
from longdoc.pipeline import ParseOptions, Pipeline
from longdoc.plan import DocumentPlan
from longdoc.progress import RecordingProgress
from tests.conftest import make_settings
from tests.ingest.files import text_pdf
from tests.pipeline.helpers import load_doc, txt


@pytest.fixture(scope="module")
def doc(tmp_path_factory):
    """20 small pages, each saying which page it is."""
    path = tmp_path_factory.mktemp("groups") / "twenty.pdf"
    return text_pdf(path, [{"size": (300, 200), "texts": [(20, 40, f"Page {n} says hello", 12)]} for n in range(1, 21)])


def _options(**kw) -> ParseOptions:
    return ParseOptions(**{"ocr": "force", "dpi": 72, "page_chunk_size": 4, "chunk_overlap": 1, **kw})


def _parse(engine, doc, tmp_path, settings=None, **kw):
    progress = RecordingProgress()
    with Pipeline(settings or make_settings(), engine_factory=lambda name: engine) as pipeline:
        result = pipeline.parse(doc, tmp_path / "out", _options(**kw), progress=progress)
        admission = pipeline.host.admission("rapidocr")
    return result, progress, admission


def test_every_page_once_in_order_and_progress_gets_the_pages(doc, tmp_path):
    engine = FakeEngine()
    result, progress, admission = _parse(engine, doc, tmp_path)
    pages = load_doc(result).pages
    assert [p.number for p in pages] == list(range(1, 21))
    assert [p.engine for p in pages] == ["fake"] * 20
    assert all(txt(result).count(f"Fake text of page {n}\n") + txt(result).count(f"Fake text of page {n}\f") == 1
               for n in range(1, 21))
    assert progress.numbers == list(range(1, 21))
    assert engine.sessions_opened == engine.sessions_closed == 1
    assert admission.workspace.in_use == 0 and admission.in_flight == 0


def test_context_pages_are_shown_but_only_owned_pages_come_back(doc, tmp_path):
    engine = FakeEngine(needs_context=True)
    result, _, _ = _parse(engine, doc, tmp_path)
    assert [(p.owned, p.context) for p in engine.plans[:3]] == [
        ((1, 2, 3, 4), ()), ((5, 6, 7), (4,)), ((8, 9, 10), (7,)),
    ]
    assert engine.pages_seen[:11] == [1, 2, 3, 4, 4, 5, 6, 7, 7, 8, 9]
    assert [p.number for p in load_doc(result).pages] == list(range(1, 21))


def test_a_page_engine_never_sees_context_pages(doc, tmp_path):
    engine = FakeEngine()
    _parse(engine, doc, tmp_path)
    assert engine.pages_seen == list(range(1, 21))
    assert all(p.context == () for p in engine.plans)


def test_independent_groups_of_one_document_run_side_by_side(doc, tmp_path):
    engine = FakeEngine(groups_in_flight=3, sequential_groups=False, seconds_per_page=0.05)
    result, progress, admission = _parse(engine, doc, tmp_path)
    assert engine.max_in_flight == 3
    assert progress.numbers == list(range(1, 21))  # layout and checkpoints still in page order
    assert [p.number for p in load_doc(result).pages] == list(range(1, 21))
    assert admission.workspace.in_use == 0


def test_groups_that_carry_state_run_one_after_another(doc, tmp_path):
    engine = FakeEngine(groups_in_flight=3, sequential_groups=True, seconds_per_page=0.02)
    _parse(engine, doc, tmp_path)
    assert engine.max_in_flight == 1


def test_admission_never_passes_the_watermark(doc, tmp_path):
    # budget 100 tokens, watermark 0.8: room for 80; groups of 4, 3, … 3 and 1 pages cost 40, 30, … 10:
    # never three groups of 30 at once (90), though the engine would take six
    engine = FakeEngine(groups_in_flight=6, sequential_groups=False, cost_unit="tokens", cost_per_page=10,
                        workspace_budget=100, seconds_per_page=0.05)
    settings = make_settings(kv_cache_watermark=0.8)
    result, _, admission = _parse(engine, doc, tmp_path, settings)
    assert admission.workspace.peak <= admission.workspace.limit == 80
    assert admission.workspace.peak >= 60 and engine.max_in_flight >= 2  # groups did run together
    assert admission.workspace.refused > 0  # and some had to wait for room
    assert result.status is DocumentStatus.SUCCEEDED


def test_model_blocks_are_kept_as_the_model_gave_them(doc, tmp_path):
    def blocks(image):
        box = BBox(x0=10, y0=10, x1=200, y1=30)
        return [
            Block(id="x", kind=BlockKind.HEADER, bbox=box, order=0, text="Running head", source_pages=[image.page]),
            Block(id="y", kind=BlockKind.TABLE, bbox=box, order=1, text="<table><tr><td>1</td></tr></table>",
                  source_pages=[image.page]),
            Block(id="z", kind=BlockKind.PARAGRAPH, bbox=box, order=2, text=f"Body of page {image.page}.",
                  source_pages=[image.page]),
        ]

    engine = FakeEngine(blocks, output="blocks")
    result, _, _ = _parse(engine, doc, tmp_path, pages="1-3")
    page = load_doc(result).pages[0]
    assert [(b.kind, b.order, b.id) for b in page.blocks] == [
        (BlockKind.HEADER, 0, "p1-b0"), (BlockKind.TABLE, 1, "p1-b1"), (BlockKind.PARAGRAPH, 2, "p1-b2")]
    md = result.outputs["md"].read_text(encoding="utf-8")
    assert "<table><tr><td>1</td></tr></table>" in md and "Running head" not in md


class _CancellingProgress(RecordingProgress):
    """Cancels the job (as DELETE /v1/jobs/{id} would) once a group is done."""

    def __init__(self, flag: list[bool]) -> None:
        super().__init__()
        self.flag = flag

    def advance(self, pages, *, resumed=False):
        super().advance(pages, resumed=resumed)
        self.flag.append(True)


def test_cancelling_frees_the_reservations_and_the_session(doc, tmp_path):
    engine = FakeEngine(groups_in_flight=4, sequential_groups=False, seconds_per_page=0.1)
    cancelled: list[bool] = []

    def control():
        if cancelled:
            raise JobCancelled("cancelled")

    with Pipeline(make_settings(), engine_factory=lambda name: engine) as pipeline:
        with pytest.raises(JobCancelled):
            pipeline.parse(doc, tmp_path / "out", _options(), progress=_CancellingProgress(cancelled),
                           control=control)
        admission = pipeline.host.admission("rapidocr")
        assert admission.workspace.in_use == 0 and admission.in_flight == 0 and admission.waiting == 0
    assert engine.sessions_cancelled == 1 and engine.sessions_closed == 1
    assert len(engine.pages_seen) < 20  # the groups behind were stopped, not run to the end


class _DroppingSession(FakeSession):
    """A broken engine (test fake) that returns nothing for page 6."""

    def recognize(self, group: PageGroup) -> Iterator[Page]:
        return (page for page in super().recognize(group) if page.number != 6)


class _DroppingEngine(FakeEngine):
    def open_session(self):
        return _DroppingSession(self)


def test_a_page_the_engine_did_not_return_fails_instead_of_vanishing(doc, tmp_path):
    result, _, _ = _parse(_DroppingEngine(), doc, tmp_path)
    pages = load_doc(result).pages
    assert [p.number for p in pages] == list(range(1, 21))
    assert pages[5].status is PageStatus.FAILED and pages[5].error.code == "engine_failed"
    assert result.status is DocumentStatus.PARTIAL and result.failed_pages == [6]


def test_an_engine_that_sizes_sessions_by_plan_is_handed_the_runs_plan_not_the_settings(doc, tmp_path):
    """The run's options (a job's, fixed when it was accepted) plan the groups
    (6 pages, 2 shared) and the session; the settings say 2 and 1. An
    engine that does not ask for the plan is opened as engines always were."""
    planned, unplanned = FakeEngine(session_plan=True, needs_context=True), FakeEngine(needs_context=True)
    _parse(planned, doc, tmp_path / "planned", page_chunk_size=6, chunk_overlap=2)
    _parse(unplanned, doc, tmp_path / "unplanned", page_chunk_size=6, chunk_overlap=2)
    assert planned.session_plans == [DocumentPlan(page_chunk_size=6, chunk_overlap=2, dpi=72)]
    assert [len(p.context) + len(p.owned) for p in planned.plans] == [6, 6, 6, 6, 4]
    assert unplanned.session_plans == [None]
