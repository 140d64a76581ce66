"""list_watches over a year of watches: the listing stays within a search_results page's size
(PAGE_TOKENS) whatever the number of watches and checks, says which checks it gave as counts only
and where their records start, and counts each watch's known records without loading them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.pipeline.metadata import PAGE_TOKENS, approx_tokens
from cnki_mcp.pipeline.watch import WatchService
from cnki_mcp.store import Store
from cnki_mcp.store.watches import KnownRecord

T0 = datetime(2026, 1, 1, tzinfo=UTC)
WATCHES = 12
CHECKS = 3


def fill(store: Store) -> None:
    """WATCHES watches, each with 200 known records and CHECKS checks of 30 new records."""
    for w in range(WATCHES):
        wid = f"wat_{w:016x}"
        store.create_watch(wid, f"op_{w:024x}", f"违约金 {w}", {}, T0, "2025-01-01",
                           [KnownRecord(f"rec_{w}_{k}") for k in range(200)])  # fmt: skip
        for c in range(CHECKS):
            at = T0 + timedelta(days=c + 1)
            new = [{"record_ref": f"rec_{w}_{c}_{k}", "title": "违约金酌减规则的比较法研究" * 3, "authors": ["王明", "李华"],
                    "source": "法学研究", "date": "2026-01-01", "year": 2026} for k in range(30)]  # fmt: skip
            report = {"watch_id": wid, "search_id": f"op_{w:024x}", "question": f"违约金 {w}", "checked_at": at.isoformat(),
                      "horizon": "2025-01-01", "new_count": 30, "new": new}  # fmt: skip
            store.save_watch_check(wid, f"chk_{w}_{c}", at, "2025-01-01", [], report)


@pytest.fixture
def service(tmp_path: Path) -> Iterator[WatchService]:
    with Store.open(tmp_path / "data", FakeClock(wall=T0)) as store:
        fill(store)
        yield WatchService(store, None, FakeClock(wall=T0))  # type: ignore[arg-type]


@pytest.mark.parametrize("checks", [1, CHECKS])
def test_listing_every_watch_stays_within_a_page_and_says_where_the_rest_start(service: WatchService, checks: int) -> None:
    listing = service.listing("all", checks=checks)
    assert approx_tokens(listing.model_dump(mode="json")) <= PAGE_TOKENS
    assert len(listing.watches) == WATCHES and all(len(e.recent_checks) == checks for e in listing.watches)
    reports = [r for e in listing.watches for r in e.recent_checks]
    listed = [r for r in reports if r.new]
    counted = [r for r in reports if not r.new]
    assert listed and counted and listing.message is not None
    assert all(r.new_count == 30 and r.next_offset == 0 for r in counted)
    # each watch alone lists what the whole listing gave as a count
    [entry] = service.listing(counted[-1].watch_id, checks=1).watches
    assert len(entry.recent_checks[0].new) == 20


def test_reports_past_the_size_even_as_counts_are_left_out_and_every_watch_listed(
    service: WatchService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("cnki_mcp.pipeline.watch.PAGE_TOKENS", 3000)
    listing = service.listing("all", checks=CHECKS)
    assert approx_tokens(listing.model_dump(mode="json")) <= 3000
    assert len(listing.watches) == WATCHES and listing.message is not None
    assert listing.watches[0].recent_checks and not listing.watches[-1].recent_checks


def test_a_small_listing_is_whole_and_says_nothing(service: WatchService) -> None:
    [entry] = service.listing("wat_0000000000000000", checks=1).watches
    assert len(entry.recent_checks[0].new) == 20 and entry.recent_checks[0].next_offset == 20
    assert service.listing("wat_0000000000000000", checks=1).message is None


def test_known_records_are_counted_not_loaded(service: WatchService, monkeypatch: pytest.MonkeyPatch) -> None:
    def loaded(*args: object, **kwargs: object) -> None:
        raise AssertionError("every known record loaded to count them")

    monkeypatch.setattr(service.store, "known_records", loaded)
    listing = service.listing("all", checks=0)
    assert [e.known for e in listing.watches] == [200] * WATCHES
