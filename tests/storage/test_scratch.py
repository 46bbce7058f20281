"""The local copies of originals (OriginalCache): a copy a task is reading is
never removed to make room for newer ones, in this process or another."""

from __future__ import annotations

from pathlib import Path

from longdoc.storage.scratch import OriginalCache

DOC = b"%PDF-1.7 not really, but bytes of a known size"


def _job(n: int) -> str:
    return f"{n:032x}"


def _fetcher(calls: list[str], job_id: str):
    def fetch(dest: Path) -> None:
        calls.append(job_id)
        dest.write_bytes(DOC)
    return fetch


def test_a_copy_in_use_outlives_more_newer_copies_than_the_cache_keeps(tmp_path: Path) -> None:
    cache = OriginalCache(tmp_path, keep=2)
    calls: list[str] = []
    with cache.use(_job(0), len(DOC), _fetcher(calls, _job(0))) as first:
        for n in range(1, 6):  # five more jobs go through while the first one's task still reads its copy
            with cache.use(_job(n), len(DOC), _fetcher(calls, _job(n))) as path:
                assert path.read_bytes() == DOC
        assert first.read_bytes() == DOC
    # once the first task is done, its copy is the oldest and goes when room is made again
    with cache.use(_job(6), len(DOC), _fetcher(calls, _job(6))):
        pass
    assert not first.exists()
    assert len([p for p in tmp_path.iterdir()]) == 2


def test_a_copy_another_worker_reads_is_not_removed(tmp_path: Path) -> None:
    ours, theirs = OriginalCache(tmp_path, keep=1), OriginalCache(tmp_path, keep=1)
    with theirs.use(_job(0), len(DOC), _fetcher([], _job(0))) as path:
        for n in range(1, 4):
            with ours.use(_job(n), len(DOC), _fetcher([], _job(n))):
                pass
        assert path.read_bytes() == DOC


def test_a_kept_copy_is_not_fetched_again_and_a_forgotten_one_is(tmp_path: Path) -> None:
    cache = OriginalCache(tmp_path, keep=4)
    calls: list[str] = []
    for _ in range(3):
        with cache.use(_job(1), len(DOC), _fetcher(calls, _job(1))):
            pass
    assert calls == [_job(1)]
    cache.forget(_job(1))
    with cache.use(_job(1), len(DOC), _fetcher(calls, _job(1))) as path:
        assert path.read_bytes() == DOC
    assert calls == [_job(1), _job(1)]


def test_a_damaged_copy_of_the_wrong_size_is_fetched_again(tmp_path: Path) -> None:
    cache = OriginalCache(tmp_path)
    (tmp_path / _job(2)).write_bytes(DOC[:5])  # a copy cut short (a disk full, a killed writer)
    calls: list[str] = []
    with cache.use(_job(2), len(DOC), _fetcher(calls, _job(2))) as path:
        assert path.read_bytes() == DOC
    assert calls == [_job(2)]
