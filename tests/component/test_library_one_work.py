"""search_library lists a work once: CNKI keeps a work's online-first record and its final record
in the issue, and the store keeps both (DESIGN.md §Library search, "One work, one result")."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.models import NativeId
from cnki_mcp.store import Store
from tests.library_helpers import find, row

T0 = datetime(2026, 1, 1, tzinfo=UTC)
TITLE = "违约金酌减的裁判规则"
ONLINE_FIRST = NativeId(dbname="CAPJLAST", filename="FXPL20250618001")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(wall=T0)


def one_work_in_two_records(store: Store, online_title: str = TITLE, final_title: str = TITLE) -> tuple[str, str]:
    """(online-first ref, final ref) of one work; the online-first record holds the body read
    with read_online_html, so it ranks above the final record."""
    online = row(online_title, "FXPL20250618001", native=ONLINE_FIRST, year=2025, date="2025-12-18")
    final = row(final_title, "FXPL202601005", native=NativeId(dbname="CJFDLAST2026", filename="FXPL202601005"),
                year=2026)  # fmt: skip
    first, last = store.upsert_from_grid([online, final], T0)
    assert store.save_fulltext(first.record_ref, "html", "正文：违约金酌减，法官应当考虑实际损失。" * 30, T0)
    return first.record_ref, last.record_ref


def test_a_works_online_first_and_final_records_are_listed_once_by_the_final_record(
    store: Store, clock: FakeClock
) -> None:
    # CNKI keeps both records (different file names); the library listed the work twice
    online = row("违约金酌减的裁判规则", "FXPL20250618001", native=NativeId(dbname="CAPJLAST", filename="FXPL20250618001"),
                 year=2025, date="2025-12-18")  # fmt: skip
    final = row("违约金酌减的裁判规则", "FXPL202601005", native=NativeId(dbname="CJFDLAST2026", filename="FXPL202601005"),
                year=2026)  # fmt: skip
    other = row("违约金酌减的裁判规则", "FXYJ202602003", authors=["李华"], year=2026)  # another work, same title
    store.upsert_from_grid([online, final, other], T0)
    refs = {p.native.filename: p.record_ref for p in store.find_by_title_key("违约金酌减的裁判规则") if p.native}
    page = find(store, "违约金酌减", clock)
    assert sorted(r.record_ref for r in page.results) == sorted([refs["FXPL202601005"], refs["FXYJ202602003"]])
    # the final record outside the years asked for: the online-first record is the work's record there
    page = find(store, "违约金酌减", clock, year_to=2025)
    assert [r.record_ref for r in page.results] == [refs["FXPL20250618001"]]


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_paging_lists_each_work_once_and_no_page_is_empty_while_works_remain(
    store: Store, clock: FakeClock, limit: int
) -> None:
    # the page left out the online-first record after paging: offset 0, limit 1 came back
    # `results: []` with next_offset 1, and a client stopping there missed the work
    online, final = one_work_in_two_records(store)
    others = store.upsert_from_grid(
        [row(f"违约金酌减规则的反思之{i}", f"FXYJ20260200{i}", authors=[f"作者{i}"], year=2026) for i in range(3)], T0
    )
    listed: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = find(store, "违约金酌减", clock, offset=offset, limit=limit)
        assert len(page.results) == limit or page.next_offset is None
        assert page.results, offset  # never an empty page while a work is left
        listed += [r.record_ref for r in page.results]
        offset = page.next_offset
    assert sorted(listed) == sorted([final, *(p.record_ref for p in others)])
    assert online not in listed


def test_the_listed_final_record_carries_the_text_stored_under_its_online_first_record(
    store: Store, clock: FakeClock
) -> None:
    # the body was read under the online-first record: the work's result said `fulltext: []`
    # and matched only its title, as if nothing had been read
    _, final = one_work_in_two_records(store)
    page = find(store, "违约金酌减", clock)
    assert page.total == 2 and page.message is not None  # why one work is listed for two records
    (result,) = page.results
    assert result.record_ref == final
    assert result.fulltext == ["html"]
    assert result.matched_fields == ["title", "fulltext_html"]
    assert "法官应当考虑实际损失" in result.snippet


def test_a_works_two_records_spelling_its_title_differently_are_listed_once(store: Store, clock: FakeClock) -> None:
    # CO_2 / CO₂: the stored title keys differ, works.work_title_key tells one work
    _, final = one_work_in_two_records(store, "碳达峰目标下CO_2排放的违约金酌减研究", "碳达峰目标下CO₂排放的违约金酌减研究")
    assert [r.record_ref for r in find(store, "违约金酌减", clock).results] == [final]
