"""The one checkpoint (StoreCheckpoint): resumable groups, fingerprints,
damage, its layout, a real parse resumed from the object store, and the
CLI's folder checkpoint."""

from __future__ import annotations

import pytest

from longdoc.model import Page
from longdoc.pipeline import ParseOptions, Pipeline
from longdoc.pipeline.checkpoint import Checkpoint
from longdoc.storage import LocalStore, StoreCheckpoint, keys
from tests.conftest import make_settings
from tests.docgen import english_report
from tests.pipeline.fakes import NoEngineFake, StopAfterProgress

PREFIX = keys.checkpoint_prefix("acme", "0123456789abcdef0123456789abcdef")


def _page(n: int) -> Page:
    return Page(number=n, width=1, height=1)


@pytest.fixture
def store(tmp_path):
    return LocalStore(tmp_path / "store")


def test_group_is_resumable_only_when_marked_complete(store):
    ck = StoreCheckpoint(store, PREFIX)
    ck.begin("fp1")
    ck.save_group(0, [_page(1), _page(2)], complete=True)
    ck.save_group(1, [_page(3)], complete=False)
    again = StoreCheckpoint(store, PREFIX)
    again.begin("fp1")
    assert again.group_done(0) and not again.group_done(1)
    assert again.load_page(2).number == 2
    assert again.done_pages() == [1, 2, 3]


def test_other_fingerprint_discards_old_work(store):
    ck = StoreCheckpoint(store, PREFIX)
    ck.begin("fp1")
    ck.save_group(0, [_page(1)], complete=True)
    ck2 = StoreCheckpoint(store, PREFIX)
    ck2.begin("fp2")
    assert not ck2.group_done(0) and ck2.load_page(1) is None and ck2.done_pages() == []


def test_damaged_page_object_is_not_trusted(store):
    ck = StoreCheckpoint(store, PREFIX)
    ck.begin("fp")
    ck.save_group(0, [_page(1), _page(2)], complete=True)
    store.put_bytes(f"{PREFIX}/pages/000001.json", b"{trunc")
    store.put_bytes(f"{PREFIX}/pages/000002.json", _page(7).model_dump_json().encode())  # another page's result
    assert ck.load_page(1) is None and ck.load_page(2) is None


def test_damaged_manifest_starts_afresh(store):
    ck = StoreCheckpoint(store, PREFIX)
    ck.begin("fp")
    ck.save_group(0, [_page(1)], complete=True)
    store.put_bytes(f"{PREFIX}/manifest.json", b"not json")
    ck.begin("fp")
    assert not ck.group_done(0) and ck.done_pages() == []


def test_everything_lives_under_the_prefix_in_the_contract_layout(store):
    store.put_bytes("tenants/acme/jobs/0123456789abcdef0123456789abcdef/original", b"%PDF")
    ck = StoreCheckpoint(store, PREFIX)
    ck.begin("fp")
    ck.save_group(3, [_page(17)], complete=True)
    assert list(store.list(PREFIX)) == [
        f"{PREFIX}/groups/000003.done", f"{PREFIX}/manifest.json", f"{PREFIX}/pages/000017.json"]
    ck.begin("other")  # wiping the checkpoint leaves the job's other objects alone
    assert store.exists("tenants/acme/jobs/0123456789abcdef0123456789abcdef/original")


# -- a real parse ------------------------------------------------------------------


def test_parse_resumes_from_a_store_checkpoint(tmp_path, store):
    doc = english_report(tmp_path, pages=4)
    opts = ParseOptions(ocr="off", page_chunk_size=2, chunk_overlap=1, formats=("txt",))
    with Pipeline(make_settings(), engine_factory=NoEngineFake()) as pipeline:
        reference = pipeline.parse(doc.pdf_path, tmp_path / "ref", opts)
        checkpoint: Checkpoint = StoreCheckpoint(store, PREFIX)
        with pytest.raises(KeyboardInterrupt):
            pipeline.parse(doc.pdf_path, tmp_path / "out", opts, progress=StopAfterProgress(groups=1), checkpoint=checkpoint)
        saved = StoreCheckpoint(store, PREFIX).done_pages()
        assert saved and saved != [1, 2, 3, 4]
        result = pipeline.parse(doc.pdf_path, tmp_path / "out", opts, checkpoint=StoreCheckpoint(store, PREFIX))
    assert result.resumed_pages == len(saved)
    assert result.outputs["txt"].read_text(encoding="utf-8") == reference.outputs["txt"].read_text(encoding="utf-8")
    assert StoreCheckpoint(store, PREFIX).done_pages() == [1, 2, 3, 4]
    assert not (tmp_path / "out" / ".longdoc").exists()  # nothing checkpointed beside the outputs


def test_the_cli_keeps_the_same_checkpoint_in_a_folder_beside_its_outputs(tmp_path):
    from longdoc.storage.checkpoint import folder_checkpoint

    folder = tmp_path / "out" / ".longdoc" / "report"
    ck = folder_checkpoint(folder)
    ck.begin("fp")
    ck.save_group(0, [_page(1)], complete=True)
    assert (folder / "checkpoint" / "groups" / "000000.done").is_file()
    (folder / "checkpoint" / "manifest.json").write_bytes(b"{torn")  # damaged: start afresh, never fail the run
    again = folder_checkpoint(folder)
    again.begin("fp")
    assert not again.group_done(0) and again.load_page(1) is None
