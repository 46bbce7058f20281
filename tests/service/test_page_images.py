"""Page images for the viewer (in process: real sandbox children over a
real local store)."""

from __future__ import annotations

import io
import os
import time

import pytest
from PIL import Image

from longdoc.config import Settings
from longdoc.errors import JobNotFound, StorageError
from longdoc.jobs.models import Job
from longdoc.service import page_images
from longdoc.service.page_images import PageImages
from longdoc.storage import keys
from longdoc.storage.local import LocalStore
from tests.service.conftest import SAMPLE_PDF


def alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:   # a zombie is dead too
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture
def viewer(tmp_path):
    store = LocalStore(tmp_path / "store")
    images = PageImages(Settings(), store, tmp_path / "work")

    def job(n: int) -> Job:
        job_id = f"{n:032x}"
        store.put_file(keys.original_key("t", job_id), SAMPLE_PDF)
        return Job(id=job_id, tenant="t", filename="sample.pdf", size_bytes=SAMPLE_PDF.stat().st_size)

    yield images, job
    images.close()


def test_renders_the_page_at_the_asked_resolution_turned_like_the_result(viewer):
    images, job = viewer
    j = job(1)
    upright = Image.open(io.BytesIO(images.jpeg(j, 4, 72)))
    assert upright.format == "JPEG" and (upright.width, upright.height) == (596, 842)   # A4 at 72 dpi
    turned = Image.open(io.BytesIO(images.jpeg(j, 4, 72, rotation=90)))
    assert (turned.width, turned.height) == (842, 596)
    assert images.page_count(j) == 5


def test_keeps_the_last_documents_open_and_closes_the_rest(viewer, monkeypatch):
    images, job = viewer
    jobs = [job(n) for n in range(3)]
    pids = []
    for j in jobs:
        images.jpeg(j, 1, 36)
        pids.append(images._open[j.id].source.child_pid())
    time.sleep(0.5)
    assert [alive(p) for p in pids] == [False, True, True]      # at most KEEP_OPEN sandboxes
    images.jpeg(jobs[1], 2, 36)
    assert images._open[jobs[1].id].source.child_pid() == pids[1]  # the next page reuses the open document
    images.forget(jobs[1].id)
    time.sleep(0.5)
    assert not alive(pids[1])                                   # a deleted job's sandbox goes
    monkeypatch.setattr(page_images, "IDLE_CLOSE_S", 0.0)
    images.jpeg(jobs[0], 1, 36)                                 # the idle one is closed on the next request
    time.sleep(0.5)
    assert not alive(pids[2])


def test_a_deleted_jobs_copy_goes_and_a_request_opening_it_meanwhile_is_turned_away(viewer, tmp_path):
    images, job = viewer
    j = job(1)
    copies = tmp_path / "work" / "viewer-originals"
    images.jpeg(j, 1, 36)
    assert [p.name for p in copies.iterdir()] == [j.id]
    images.forget(j.id)
    assert list(copies.iterdir()) == []
    # a request that had found the job just before it was deleted opens it
    # now: it gets job_not_found, and the copy it made goes too
    with pytest.raises(JobNotFound):
        images.jpeg(j, 1, 36)
    assert list(copies.iterdir()) == [] and j.id not in images._open


def test_a_copy_cut_short_is_not_left_behind(viewer, tmp_path, monkeypatch):
    images, job = viewer
    j = job(2)

    def fails_half_way(store, job, dest):
        dest.write_bytes(SAMPLE_PDF.read_bytes()[:1000])
        raise StorageError("Cannot read object: connection reset.")

    monkeypatch.setattr(page_images, "fetch_original", fails_half_way)
    with pytest.raises(StorageError):
        images.jpeg(j, 1, 36)
    assert list((tmp_path / "work" / "viewer-originals").iterdir()) == []
