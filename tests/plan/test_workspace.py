import pytest

from longdoc.plan import BoundaryCache, Workspace


def test_admission_by_watermark():
    ws = Workspace(budget=1000, watermark=0.8)
    assert ws.limit == 800
    assert ws.try_reserve(500)
    assert not ws.try_reserve(400)  # 900 > 800
    assert ws.refused == 1
    assert ws.try_reserve(300)  # exactly 800
    ws.release(500)
    assert ws.in_use == 300
    assert ws.peak == 800


def test_always_admits_when_empty_so_work_progresses():
    ws = Workspace(budget=100, watermark=0.5)
    assert ws.try_reserve(10_000)
    assert not ws.try_reserve(1)


def test_release_more_than_reserved_raises():
    ws = Workspace(budget=100, watermark=1.0)
    ws.try_reserve(10)
    with pytest.raises(ValueError):
        ws.release(11)


def test_held_results_count_and_are_never_refused():
    ws = Workspace(budget=100, watermark=1.0, unit="tokens")
    assert ws.try_reserve(60)
    ws.hold(50)  # over the limit: held anyway
    assert ws.in_use == 110 and ws.peak == 110
    assert not ws.try_reserve(1)
    ws.release(50)
    ws.release(60)
    assert ws.try_reserve(100)


class _Item:
    def __init__(self, n):
        self.n = n

    def approx_bytes(self):
        return self.n


def test_boundary_cache_releases_pages_not_kept():
    cache = BoundaryCache()
    for i in range(5):
        cache.put(i, _Item(10))
    cache.keep_only([3, 4])
    assert cache.indexes() == [3, 4]
    assert 2 not in cache and cache.get(4).n == 10
    assert cache.approx_bytes() == 20
