"""Planner: every page has exactly one owner group, in order, for any N, C, O."""

import pytest
from hypothesis import given, strategies as st

from longdoc.plan import plan_groups


@st.composite
def n_c_o(draw):
    c = draw(st.integers(min_value=1, max_value=64))
    o = draw(st.integers(min_value=0, max_value=c - 1))
    n = draw(st.integers(min_value=0, max_value=3000))
    return n, c, o


@given(n_c_o())
def test_every_page_owned_exactly_once_in_order(args):
    n, c, o = args
    groups = plan_groups(n, c, o)
    owned = [i for g in groups for i in g.owned]
    assert owned == list(range(n))


@given(n_c_o())
def test_groups_respect_size_stride_and_overlap(args):
    n, c, o = args
    groups = plan_groups(n, c, o)
    for g in groups:
        assert 1 <= g.num_pages <= c
        assert g.start == g.index * (c - o)
        assert g.start <= g.owned_start < g.end <= n
    for prev, nxt in zip(groups, groups[1:]):
        # consecutive groups share exactly O pages, and the shared pages are
        # the next group's context (owned by the previous group)
        shared = set(range(prev.start, prev.end)) & set(range(nxt.start, nxt.end))
        assert len(shared) == o
        assert list(nxt.context) == sorted(shared)
        assert prev.num_pages == c  # only the last group may be short


def test_example_from_docstring():
    groups = plan_groups(10, 4, 1)
    assert [(g.start, g.end, list(g.owned)) for g in groups] == [
        (0, 4, [0, 1, 2, 3]),
        (3, 7, [4, 5, 6]),
        (6, 10, [7, 8, 9]),
    ]


def test_no_pages_no_groups():
    assert plan_groups(0, 32, 2) == []


@pytest.mark.parametrize("c,o", [(0, 0), (4, 4), (4, -1), (2, 5)])
def test_invalid_knobs_rejected(c, o):
    with pytest.raises(ValueError):
        plan_groups(10, c, o)
