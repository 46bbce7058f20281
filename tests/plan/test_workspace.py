import pytest

from longdoc.plan import BoundaryCache, Workspace


def test_admission_by_watermark():
    ws = Workspace(budget_bytes=1000, watermark=0.8)
    assert ws.limit_bytes == 800
    assert ws.try_reserve(500)
    assert not ws.try_reserve(400)  # 900 > 800
    assert ws.refused == 1
    assert ws.try_reserve(300)  # exactly 800
    ws.release(500)
    assert ws.in_use == 300
    assert ws.peak == 800


def test_always_admits_when_empty_so_work_progresses():
    ws = Workspace(budget_bytes=100, watermark=0.5)
    assert ws.try_reserve(10_000)
    assert not ws.try_reserve(1)


def test_release_more_than_reserved_raises():
    ws = Workspace(budget_bytes=100, watermark=1.0)
    ws.try_reserve(10)
    with pytest.raises(ValueError):
        ws.release(11)


def test_pages_in_flight_fits_under_watermark():
    ws = Workspace(budget_bytes=100 * 2**20, watermark=0.8)  # 80 MiB usable
    assert ws.pages_in_flight(20 * 2**20) == 4
    assert ws.pages_in_flight(20 * 2**20, held_bytes=40 * 2**20) == 2
    assert ws.pages_in_flight(200 * 2**20) == 1  # never zero
    assert ws.pages_in_flight(1, cap=6) == 6


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
