from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from longdoc.errors import InvalidPageRange
from longdoc.ingest.pages import parse_page_range, selection_of_size
from tests.ingest.asserts import assert_user_error


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (None, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
        ("1-3,5", [1, 2, 3, 5]),
        (" 2 - 4 , 9 ", [2, 3, 4, 9]),
        ("8-", [8, 9, 10]),
        ("-3", [1, 2, 3]),
        ("5,1,5,2-3,3", [1, 2, 3, 5]),
        ("10", [10]),
        ("1-10", list(range(1, 11))),
    ],
)
def test_examples(spec: str | None, expected: list[int]) -> None:
    assert parse_page_range(spec, 10) == expected


@pytest.mark.parametrize(
    ("spec", "mentions"),
    [
        ("11", "11"),
        ("0", "0"),
        ("5-12", "12"),
        ("11-", "11"),
        ("7-3", "backwards"),
        ("a-b", "'a-b'"),
        ("1,,2", "empty item"),
        ("1-2-3", "'1-2-3'"),
        ("-", "'-'"),
        ("", "empty"),
        ("   ", "empty"),
        ("1.5", "'1.5'"),
        ("٣", "'٣'"),  # an Arabic-Indic digit is not accepted as a page number
        ("99999999999999999999999", "99999999999999999999999"),
    ],
)
def test_bad_specs_name_the_problem_and_the_page_count(spec: str, mentions: str) -> None:
    with pytest.raises(InvalidPageRange) as info:
        parse_page_range(spec, 10)
    assert_user_error(info.value, InvalidPageRange, "invalid_page_range")
    assert mentions in info.value.message
    assert "10 pages" in info.value.message


def test_a_document_without_pages_has_nothing_to_select() -> None:
    with pytest.raises(InvalidPageRange):
        parse_page_range(None, 0)


def _as_spec(pages: list[int], page_count: int, spaces: str) -> str:
    """Write sorted pages compactly, with open ends where they apply."""
    items = []
    start = prev = pages[0]
    for page in pages[1:] + [None]:
        if page is not None and page == prev + 1:
            prev = page
            continue
        if start == prev:
            items.append(str(start))
        elif start == 1:
            items.append(f"-{prev}")
        elif prev == page_count:
            items.append(f"{start}{spaces}-")
        else:
            items.append(f"{start}{spaces}-{spaces}{prev}")
        if page is not None:
            start = prev = page
    return f"{spaces},".join(items)


@st.composite
def selections(draw):
    page_count = draw(st.integers(min_value=1, max_value=400))
    pages = draw(st.sets(st.integers(min_value=1, max_value=page_count), min_size=1))
    spaces = draw(st.sampled_from(["", " ", "  ", "\t"]))
    return page_count, sorted(pages), spaces


@given(selections())
def test_written_selection_parses_back(case) -> None:
    page_count, pages, spaces = case
    assert parse_page_range(_as_spec(pages, page_count, spaces), page_count) == pages


@given(
    st.integers(min_value=1, max_value=200),
    st.lists(st.tuples(st.integers(1, 250), st.integers(1, 250)), min_size=1, max_size=6),
)
def test_ranges_select_their_union_or_are_refused(page_count, ranges) -> None:
    spec = ",".join(f"{a}-{b}" for a, b in ranges)
    valid = all(1 <= a <= b <= page_count for a, b in ranges)
    if valid:
        expected = sorted({p for a, b in ranges for p in range(a, b + 1)})
        assert parse_page_range(spec, page_count) == expected
    else:
        with pytest.raises(InvalidPageRange):
            parse_page_range(spec, page_count)


@given(st.text(alphabet=st.sampled_from("0123456789-, \t"), max_size=20), st.integers(1, 50))
def test_any_text_parses_to_valid_pages_or_is_refused(spec, page_count) -> None:
    try:
        pages = parse_page_range(spec, page_count)
    except InvalidPageRange as exc:
        assert str(page_count) in exc.message
        return
    assert pages == sorted(set(pages))
    assert pages and all(1 <= p <= page_count for p in pages)


@given(st.text(alphabet=st.sampled_from("0123456789-, \t"), max_size=20), st.integers(1, 500))
def test_a_selection_is_found_again_from_its_size(spec, page_count) -> None:
    """What a job keeps (its spec and how many pages it selected) gives
    back the pages it selected, whatever the document's page count was."""
    try:
        pages = parse_page_range(spec, page_count)
    except InvalidPageRange:
        return
    assert selection_of_size(spec, len(pages)) == pages


def test_no_selection_is_every_page() -> None:
    assert selection_of_size(None, 4) == [1, 2, 3, 4]
