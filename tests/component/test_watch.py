"""Saved searches on a fake clock: a watch starts from a stored search (plan from its page log),
`check_updates` reads the plan newest first and reports new records (not older than the horizon),
online-first records now published and changed citation counts, stores each check so the next
diffs against it, and stops at the request budget with the rest listed as unchecked."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pipeline_fakes import SimSite, row_of, title_of

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import (
    DataDirectoryUnusable,
    InvalidInput,
    SearchNotFound,
    SiteTemporarilyEmpty,
    VerificationSkipped,
)
from cnki_mcp.jobs import BudgetSpec, JobManager, MemorySink, OperationContext, OperationKind
from cnki_mcp.models import GridPage, GridRow, NativeId
from cnki_mcp.pipeline.watch import CheckReport, WatchService, digest
from cnki_mcp.site.backend import GridRequest, SiteOp, SortOrder
from cnki_mcp.store import Store
from cnki_mcp.store.watches import KnownRecord
from tests.component.test_pipeline import make, run_search, search_input


class DatedSite:
    """Lists `rows` (newest first) for any query, `size` per page, with cursors; counts requests."""

    def __init__(self, rows: list[GridRow]) -> None:
        self.rows = rows
        self.requests: list[GridRequest] = []

    async def grid(self, request: GridRequest, op: SiteOp | None = None, follow: Any = None) -> GridPage:
        if op is not None:
            op.charge()
        self.requests.append(request)
        start = (request.page - 1) * request.page_size
        chunk = [r.model_copy(update={"ordinal": start + k + 1}) for k, r in enumerate(self.rows[start : start + request.page_size])]
        last = (len(self.rows) + request.page_size - 1) // request.page_size
        return GridPage(rows=chunk, total=len(self.rows), page=request.page, page_count=last, turnpage=f"c{request.page + 1}")


def dated(i: int, date: str, **changes: Any) -> GridRow:
    return row_of(i, 0).model_copy(update={"date": date, "year": int(date[:4]), **changes})


async def stored_search(clock: FakeClock, store: Store) -> str:
    """A finished search (no checkpoint kept: MemorySink) whose candidates are papers 0-19, 30-49, 60-79."""
    inp = search_input(freshness="live", max_pages=1, mode="precise", metadata="basic")
    record = await run_search(clock, make(clock, store, SimSite(clock)), inp)
    return str(record.result["search_id"])


async def check(clock: FakeClock, service: WatchService, watch_id: str, budget: int = 30, pages: int = 1) -> Any:
    jobs = JobManager(clock, MemorySink())

    async def runner(ctx: OperationContext) -> Any:
        return await service.check(watch_id, ctx, pages)

    job = jobs.start(OperationKind.WATCH, runner, BudgetSpec(max_requests=budget, timeout_seconds=600))
    [done] = await clock.run_until_complete(job.finish())
    return done


async def test_checks_report_new_published_and_cited_changes_against_the_previous_check(
    clock: FakeClock, store: Store
) -> None:
    search_id = await stored_search(clock, store)
    site = DatedSite([])
    service = WatchService(store, site, clock)  # type: ignore[arg-type]
    info = service.create(search_id)
    assert info.known == 60 and info.checks == 0
    assert service.create(search_id).watch_id == info.watch_id  # one watch per search
    online = NativeId(dbname="CAPJLAST", filename="SIM0005")
    site.rows = [
        dated(500, "2026-01-02"),  # published after the search (2026-01-01): new
        *[dated(i, "2025-12-01", cited=i % 7 + (3 if i == 3 else 0)) for i in range(0, 20) if i != 5],
        dated(5, "2025-11-30", native=online, online_first=True),
        dated(300, "2025-06-01"),  # unseen but older than the search: below what it read
    ]
    first = await check(clock, service, info.watch_id)
    assert first.status == "completed" and first.requests == 1
    [c1] = first.result["checks"]
    assert c1["first_check"] is True and c1["horizon"] == "2026-01-01"
    assert [n["title"] for n in c1["new"]] == ["自动驾驶产品责任研究 500"]
    assert c1["older_unseen"] == 1
    assert [(x["before"], x["after"]) for x in c1["cited_changed"]] == [("3", "6")]
    assert site.requests[0].sort == SortOrder.DATE_DESC and site.requests[0].page_size == 50

    await clock.advance(86_400)
    published = NativeId(dbname="CJFD2026", filename="SIM0005")
    site.rows = [dated(501, "2026-01-03"), *[r for r in site.rows if r.title != row_of(5, 0).title]]
    site.rows.insert(3, dated(5, "2025-11-30", native=published, online_first=False))
    second = await check(clock, service, info.watch_id)
    [c2] = second.result["checks"]
    assert c2["first_check"] is False
    assert [n["title"] for n in c2["new"]] == ["自动驾驶产品责任研究 501"]  # 500 is known now
    assert [(p["title"], p["after"]) for p in c2["published"]] == [("自动驾驶产品责任研究 005", "已出刊")]
    assert c2["cited_changed"] == [] and c2["older_unseen"] == 0
    assert store.watch_checks(info.watch_id, 5)[0]["checked_at"] == c2["checked_at"]
    # the stored checks (list_watches, `cnki-mcp watch list`) are the checks as reported, with
    # the requests each cost (they said 0)
    assert store.watch_checks(info.watch_id, 5) == [c2, c1] and [c2["requests"], c1["requests"]] == [1, 1]
    text = digest(service_report(second))
    assert "新增 1" in text and "自动驾驶产品责任研究 501" in text


async def test_a_new_record_says_its_kind(clock: FakeClock, store: Store) -> None:
    # a thesis's source is its university: without its kind a new doctoral thesis read like a paper
    search_id = await stored_search(clock, store)
    site = DatedSite([])
    service = WatchService(store, site, clock)  # type: ignore[arg-type]
    info = service.create(search_id)
    site.rows = [dated(500, "2026-01-02", doc_type="博士", source="北京大学"), dated(501, "2026-01-02")]
    [report] = (await check(clock, service, info.watch_id)).result["checks"]
    kinds = {n["title"][-3:]: (n["doc_type"], n["source"]) for n in report["new"]}
    assert kinds == {"500": ("博士", "北京大学"), "501": ("期刊", row_of(501, 0).source)}
    text = digest(CheckReport.model_validate({"checks": [report], "requests": 1, "unchecked": []}))
    assert "（北京大学 博士 2026-01-02）" in text


async def test_a_new_record_carries_its_authors_and_year(clock: FakeClock, store: Store) -> None:
    # a new entry gave title, date and source only: the authors and year a search result gives
    search_id = await stored_search(clock, store)
    site = DatedSite([])
    service = WatchService(store, site, clock)  # type: ignore[arg-type]
    info = service.create(search_id)
    site.rows = [dated(500, "2026-01-02")]
    [report] = (await check(clock, service, info.watch_id)).result["checks"]
    [new] = report["new"]
    assert (new["authors"], new["year"]) == (row_of(500, 0).authors, 2026)


def service_report(record: Any) -> Any:
    from cnki_mcp.pipeline.watch import CheckReport

    return CheckReport.model_validate(record.result)


async def test_paging_stops_at_a_page_with_nothing_unseen(clock: FakeClock, store: Store) -> None:
    search_id = await stored_search(clock, store)
    rows = [dated(600 + k, "2026-02-01") for k in range(50)] + [dated(i, "2025-12-01") for i in range(0, 20)]
    rows += [dated(i, "2025-11-01") for i in range(30, 50)] + [dated(i, "2025-10-01") for i in range(60, 80)]
    site = DatedSite(rows)
    service = WatchService(store, site, clock)  # type: ignore[arg-type]
    watch = service.create(search_id)
    done = await check(clock, service, watch.watch_id, pages=5)
    assert [r.page for r in site.requests] == [1, 2]  # page 2 held nothing unseen
    assert done.result["checks"][0]["new_count"] == 50


async def test_budget_stops_the_batch_and_lists_the_unchecked_watches(clock: FakeClock, store: Store) -> None:
    site = DatedSite([dated(500, "2026-01-02")])
    service = WatchService(store, site, clock)  # type: ignore[arg-type]
    first = service.create(await stored_search(clock, store))
    second = service.create(await stored_search(clock, store))
    done = await check(clock, service, "all", budget=1)
    assert done.status == "partial" and done.errors[0].code == "BUDGET_EXHAUSTED"
    assert [c["watch_id"] for c in done.result["checks"]] == [first.watch_id]
    assert done.result["unchecked"] == [second.watch_id]
    assert store.get_watch(second.watch_id).checks == 0  # type: ignore[union-attr]


async def test_unknown_search_and_watch_are_coded(clock: FakeClock, store: Store) -> None:
    service = WatchService(store, DatedSite([]), clock)  # type: ignore[arg-type]
    with pytest.raises(SearchNotFound):
        service.create("sch_missing")
    with pytest.raises(InvalidInput) as info:
        service.watches("wat_missing")
    assert info.value.code == "INVALID_ARGUMENT"
    assert info.value.details == {"field": "watch_id", "watch_id": "wat_missing"}


class StallingSite(DatedSite):
    """DatedSite whose request number `at` (1-based) fails with `error`, or, without an error,
    waits `stall` seconds on the clock before answering (a slow page a cancel can land on)."""

    def __init__(self, rows: list[GridRow], clock: FakeClock, at: int, error: Exception | None = None, stall: float = 0.0) -> None:
        super().__init__(rows)
        self.clock, self.at, self.error, self.stall = clock, at, error, stall

    async def grid(self, request: GridRequest, op: SiteOp | None = None, follow: Any = None) -> GridPage:
        if len(self.requests) + 1 == self.at:
            if self.error is not None:
                self.requests.append(request)
                raise self.error
            await self.clock.sleep(self.stall)
        return await super().grid(request, op, follow)


async def test_a_watch_failing_with_a_non_fatal_error_keeps_the_checks_done_and_goes_on(
    clock: FakeClock, store: Store
) -> None:
    """The first watch's check is stored (its new record is known from then on), so its report
    must reach the caller even though a later watch failed; the failed one is listed unchecked and
    the batch goes on to the next."""
    site = StallingSite([dated(500, "2026-01-02")], clock, at=2, error=SiteTemporarilyEmpty())
    service = WatchService(store, site, clock)  # type: ignore[arg-type]
    watches = [service.create(await stored_search(clock, store)) for _ in range(3)]
    done = await check(clock, service, "all")
    assert done.status == "partial"
    assert [(e.code, e.details.get("watch_id")) for e in done.errors] == [("SITE_TEMPORARILY_EMPTY", watches[1].watch_id)]
    checks = done.result["checks"]
    assert [c["watch_id"] for c in checks] == [watches[0].watch_id, watches[2].watch_id]
    assert [c["new_count"] for c in checks] == [1, 1]
    assert done.result["unchecked"] == [watches[1].watch_id]


async def test_a_batch_cancelled_midway_returns_the_checks_already_stored(clock: FakeClock, store: Store) -> None:
    site = StallingSite([dated(500, "2026-01-02")], clock, at=2, stall=60.0)
    service = WatchService(store, site, clock)  # type: ignore[arg-type]
    first = service.create(await stored_search(clock, store))
    second = service.create(await stored_search(clock, store))
    jobs = JobManager(clock, MemorySink())

    async def runner(ctx: OperationContext) -> Any:
        return await service.check("all", ctx, 1)

    job = jobs.start(OperationKind.WATCH, runner, BudgetSpec(max_requests=30, timeout_seconds=600))
    await clock.advance_settled(10.0)  # the first watch checked and stored, the second's page pending
    assert store.get_watch(first.watch_id).checks == 1  # type: ignore[union-attr]
    [done] = await clock.run_until_complete(jobs.cancel(job.operation_id))
    assert done.status == "cancelled"
    assert [(c["watch_id"], c["new_count"]) for c in done.result["checks"]] == [(first.watch_id, 1)]
    assert done.result["unchecked"] == [second.watch_id]


async def test_every_new_record_of_a_check_can_be_listed_in_batches(clock: FakeClock, store: Store) -> None:
    """A check that finds 50 new records lists 20 and says where the rest start; its stored
    report keeps all 50 (they are known from then on, so nothing else can list them again)."""
    search_id = await stored_search(clock, store)
    site = DatedSite([dated(600 + k, "2026-02-01") for k in range(50)] + [dated(i, "2025-12-01") for i in range(20)])
    service = WatchService(store, site, clock)  # type: ignore[arg-type]
    watch = service.create(search_id)
    done = await check(clock, service, watch.watch_id)
    [c1] = done.result["checks"]
    assert (c1["new_count"], len(c1["new"]), c1.get("next_offset")) == (50, 20, 20)
    from cnki_mcp.server.models import OperationView

    assert "offset=20" in (OperationView.of(done).next_step or "")
    titles = [n["title"] for n in c1["new"]]
    offset: int | None = 20
    while offset is not None:
        [entry] = service.listing(watch.watch_id, checks=1, offset=offset).watches
        [report] = entry.recent_checks
        assert report.listed_from == offset and report.new_count == 50
        titles += [n.title for n in report.new]
        offset = report.next_offset
    assert sorted(titles) == sorted(title_of(600 + k) for k in range(50))


async def test_new_records_beyond_the_page_limit_are_reported_by_the_next_check(clock: FakeClock, store: Store) -> None:
    """70 records appear after the search; a check reading one page reports 50 and says it is
    incomplete. The next check must read on past the page it now knows and report the other 20
    as new (not stop at a page with nothing unseen, not count them below the horizon)."""
    search_id = await stored_search(clock, store)
    fresh = [dated(600 + k, f"2026-01-{8 - k // 10:02d}") for k in range(70)]
    site = DatedSite(fresh + [dated(i, "2025-12-01") for i in (*range(20), *range(30, 50), *range(60, 80))])
    service = WatchService(store, site, clock)  # type: ignore[arg-type]
    watch = service.create(search_id)
    [c1] = (await check(clock, service, watch.watch_id, pages=1)).result["checks"]
    assert (c1["new_count"], c1["complete"]) == (50, False)
    assert "未读完" in digest(CheckReport.model_validate({"checks": [c1]}))
    [c2] = (await check(clock, service, watch.watch_id, pages=5)).result["checks"]
    assert (c2["new_count"], c2["older_unseen"], c2["complete"]) == (20, 0, True)
    assert {n["title"] for n in c2["new"]} == {title_of(600 + k) for k in range(50, 70)}
    site.requests.clear()
    [c3] = (await check(clock, service, watch.watch_id, pages=5)).result["checks"]
    assert (c3["new_count"], c3["complete"]) == (0, True)
    assert [r.page for r in site.requests] == [1]  # caught up: a page with nothing unseen ends it again


class ZeroSite(DatedSite):
    """DatedSite answering its first `zeros` requests with an empty page (a throttled client)."""

    def __init__(self, rows: list[GridRow], zeros: int) -> None:
        super().__init__(rows)
        self.zeros = zeros

    async def grid(self, request: GridRequest, op: SiteOp | None = None, follow: Any = None) -> GridPage:
        if self.zeros > 0:
            self.zeros -= 1
            if op is not None:
                op.charge()
            self.requests.append(request)
            return GridPage(rows=[], total=0, page=request.page, page_count=0, turnpage=None)
        return await super().grid(request, op, follow)


async def test_a_zero_the_watch_contradicts_is_asked_again_and_never_stored_as_nothing_new(
    clock: FakeClock, store: Store
) -> None:
    rows = [dated(500, "2026-01-02"), *[dated(i, "2025-12-01") for i in range(20)]]
    search_id = await stored_search(clock, store)
    service = WatchService(store, ZeroSite(rows, zeros=2), clock)  # type: ignore[arg-type]
    watch = service.create(search_id)
    blocked = await check(clock, service, watch.watch_id)
    assert blocked.status == "partial" and blocked.errors[0].code == "SITE_UNAVAILABLE"
    assert blocked.errors[0].details["reason"] == "soft_block"
    assert blocked.result["checks"] == [] and blocked.result["unchecked"] == [watch.watch_id]
    assert store.get_watch(watch.watch_id).checks == 0  # type: ignore[union-attr]

    site = ZeroSite(rows, zeros=1)  # empty once, then the rows again
    service = WatchService(store, site, clock)  # type: ignore[arg-type]
    [c] = (await check(clock, service, watch.watch_id)).result["checks"]
    assert [n["title"] for n in c["new"]] == [title_of(500)] and c["requests"] == 2


async def test_a_papers_first_citations_are_a_citation_change(clock: FakeClock, store: Store) -> None:
    """The list leaves the 被引 cell empty while a paper has no citations (cited None); when it
    later lists a count, that is a change from 0."""
    site = DatedSite([dated(500, "2026-01-02", cited=None)])
    service = WatchService(store, site, clock)  # type: ignore[arg-type]
    watch = service.create(await stored_search(clock, store))
    [c1] = (await check(clock, service, watch.watch_id)).result["checks"]
    assert c1["new_count"] == 1 and c1["cited_changed"] == []
    site.rows = [dated(500, "2026-01-02", cited=4)]
    [c2] = (await check(clock, service, watch.watch_id)).result["checks"]
    assert [(x["title"], x["before"], x["after"]) for x in c2["cited_changed"]] == [(title_of(500), "0", "4")]


async def test_all_checks_the_least_recently_checked_watches_first(clock: FakeClock, store: Store) -> None:
    """With more watches than one batch's budget reaches, each `all` run starts where the last
    one stopped instead of checking the same first watches again (cron with a fixed budget)."""
    site = DatedSite([dated(500, "2026-01-02")])
    service = WatchService(store, site, clock)  # type: ignore[arg-type]
    ids = [service.create(await stored_search(clock, store)).watch_id for _ in range(3)]
    order: list[str] = []
    for _ in range(4):
        await clock.advance(3600)
        done = await check(clock, service, "all", budget=1)
        order += [c["watch_id"] for c in done.result["checks"]]
    assert order == [ids[0], ids[1], ids[2], ids[0]]


async def test_a_skipped_verification_stops_the_batch(clock: FakeClock, store: Store) -> None:
    """A headless cron check skips verification pages; the site challenges every watch alike, so
    the batch stops at the first instead of asking CNKI once per watch while it challenges."""
    site = StallingSite([dated(500, "2026-01-02")], clock, at=1, error=VerificationSkipped())
    service = WatchService(store, site, clock)  # type: ignore[arg-type]
    ids = [service.create(await stored_search(clock, store)).watch_id for _ in range(2)]
    done = await check(clock, service, "all")
    assert done.errors[0].code == "VERIFICATION_SKIPPED" and len(site.requests) == 1
    assert done.result["checks"] == [] and done.result["unchecked"] == ids


async def test_a_full_disk_is_a_coded_error_and_nothing_half_written(clock: FakeClock, store: Store) -> None:
    """SQLite answers a full disk with "database or disk is full" (here through max_page_count):
    DATA_DIRECTORY_UNUSABLE with its reason, the transaction rolled back, the store usable again
    once there is room. It used to reach the client as INTERNAL (an OperationalError)."""
    search_id = await stored_search(clock, store)
    service = WatchService(store, DatedSite([]), clock)  # type: ignore[arg-type]
    pages = store._conn.execute("PRAGMA page_count").fetchone()[0]
    store._conn.execute(f"PRAGMA max_page_count = {pages}")
    many = [KnownRecord(f"rec_{i:06d}", cited=i) for i in range(5000)]
    with pytest.raises(DataDirectoryUnusable) as caught:
        store.create_watch("wat_full", search_id, "q", {"channels": []}, clock.now(), None, many)
    assert caught.value.details["reason"] == "disk_full"
    assert store.get_watch("wat_full") is None and store.known_records("wat_full") == {}
    store._conn.execute("PRAGMA max_page_count = 1073741823")
    assert service.create(search_id).known == 60


async def test_a_row_listed_with_a_year_alone_is_new_only_when_its_year_can_be(clock: FakeClock, store: Store) -> None:
    """Theses and books are sometimes listed with a year and no day: one from a year before the
    horizon (the search's date, 2026-01-01) lay below what was read, like any older record."""
    old_thesis = row_of(700, 0).model_copy(update={"date": "2024", "year": 2024})
    this_year = row_of(701, 0).model_copy(update={"date": "2026", "year": 2026})
    site = DatedSite([dated(500, "2026-01-02"), this_year, old_thesis])
    service = WatchService(store, site, clock)  # type: ignore[arg-type]
    watch = service.create(await stored_search(clock, store))
    [c] = (await check(clock, service, watch.watch_id)).result["checks"]
    assert {n["title"] for n in c["new"]} == {title_of(500), title_of(701)}
    assert c["older_unseen"] == 1


async def test_a_search_stored_by_an_older_release_is_refused_with_its_reason(clock: FakeClock, store: Store) -> None:
    """A search saved before search summaries existed (a data directory kept across upgrades) is in
    the store but has no plan to rerun: INVALID_ARGUMENT saying so, not SEARCH_NOT_FOUND."""
    store.save_search("sch_old", "违约金", {"limit": 10}, "fp", "completed", clock.now())
    service = WatchService(store, DatedSite([]), clock)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput) as caught:
        service.create("sch_old")
    assert caught.value.details["reason"] == "no_plan"


class LaneSite(DatedSite):
    """DatedSite that lists nothing for the subjects in `empty` (one lane of a split channel)."""

    def __init__(self, rows: list[GridRow], empty: list[dict[str, Any]]) -> None:
        super().__init__(rows)
        self.empty = empty

    async def grid(self, request: GridRequest, op: SiteOp | None = None, follow: Any = None) -> GridPage:
        if request.subject in self.empty:
            if op is not None:
                op.charge()
            self.requests.append(request)
            return GridPage(rows=[], total=0, page=request.page, page_count=0, turnpage=None)
        return await super().grid(request, op, follow)


def split_watch(clock: FakeClock, store: Store) -> tuple[dict[str, Any], dict[str, Any]]:
    lanes = [{"Key": "Subject", "ChildItems": [], "Items": [{"Field": "SU", "Value": v}]} for v in ("甲", "乙")]
    channel = {"id": "q1", "field": "subject", "weight": 1.0, "reason": "", "subject": lanes[0], "anchor": "甲",
               "fingerprint": "", "subjects": lanes}  # fmt: skip
    store.create_watch("wat_split", "sch_split", "甲 OR 乙", {"channels": [channel]}, clock.now(), "2026-01-01",
                       [KnownRecord("rec_known")])  # fmt: skip
    return lanes[0], lanes[1]


async def test_one_empty_lane_of_a_split_query_is_not_a_soft_block(clock: FakeClock, store: Store) -> None:
    """One query of a split channel covers only part of the watch: its page 1 may be empty (the
    engine's own rule). Only every query empty contradicts the records the watch knows."""
    first, second = split_watch(clock, store)
    site = LaneSite([dated(500, "2026-01-02")], empty=[second])
    service = WatchService(store, site, clock)  # type: ignore[arg-type]
    done = await check(clock, service, "wat_split")
    assert done.status == "completed" and len(site.requests) == 2
    assert [n["title"] for n in done.result["checks"][0]["new"]] == [title_of(500)]
    site = LaneSite([dated(501, "2026-01-03")], empty=[first, second])
    blocked = await check(clock, WatchService(store, site, clock), "wat_split")  # type: ignore[arg-type]
    assert blocked.errors[0].code == "SITE_UNAVAILABLE" and blocked.errors[0].details["reason"] == "soft_block"
    assert store.get_watch("wat_split").checks == 1  # type: ignore[union-attr]


async def test_a_report_stored_before_every_record_was_kept_lists_its_other_new_records(
    clock: FakeClock, store: Store
) -> None:
    """Until be5972e a check's stored report kept its first 20 new records (new_count counting
    all). Read by this release it said next_offset null (all listed) and no call showed the other
    ones, though the watch recorded every one as first seen at that check."""
    search_id = await stored_search(clock, store)
    new = [dated(600 + k, "2026-02-01") for k in range(26)]
    older = [dated(700 + k, "2001-05-01") for k in range(3)]  # unseen, below the horizon: not new
    site = DatedSite([*new, *[dated(i, "2025-12-01") for i in range(20)], *older])
    service = WatchService(store, site, clock)  # type: ignore[arg-type]
    watch = service.create(search_id)
    done = await check(clock, service, watch.watch_id, pages=2)
    [c1] = done.result["checks"]
    assert (c1["new_count"], c1["older_unseen"]) == (26, 3)
    [report] = store.watch_checks(watch.watch_id, 1)
    old_shape = {k: v for k, v in report.items() if k not in ("listed_from", "next_offset")}
    old_shape["new"] = report["new"][:20]
    with store._write() as conn:
        conn.execute("UPDATE watch_checks SET report = ? WHERE watch_id = ?", (json.dumps(old_shape), watch.watch_id))
    titles: list[str] = []
    offset: int | None = 0
    while offset is not None:
        [entry] = service.listing(watch.watch_id, checks=1, offset=offset).watches
        [listed] = entry.recent_checks
        titles += [n.title for n in listed.new]
        offset = listed.next_offset
    assert sorted(titles) == sorted(title_of(600 + k) for k in range(26))


async def _watched(
    tmp_path: Any, query: str, years: tuple[int | None, int | None]
) -> tuple[FakeClock, Store, Any]:
    """A store with a finished search of `query` run on 20 December 2026 (any time zone's 2026)
    with `years`, as its time phrase planned them, and a watch of it."""
    from datetime import UTC, datetime

    from cnki_mcp.pipeline.models import SearchInput, SearchOptions
    from tests.component.test_pipeline import PLAN

    clock = FakeClock(wall=datetime(2026, 12, 20, 12, 0, tzinfo=UTC))
    store = Store.open(tmp_path / "data", clock)
    pipe = make(clock, store, SimSite(clock))
    options = SearchOptions(freshness="live", max_pages=1, metadata="basic")
    inp = SearchInput(query=query, options=options, mode="precise")
    plan = PLAN.model_copy(update={"year_from": years[0], "year_to": years[1]})
    jobs = JobManager(clock, MemorySink())

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.research(inp, plan, ctx)

    [record] = await clock.run_until_complete(jobs.start(OperationKind.SEARCH, runner, inp.budget()).finish())
    site = DatedSite([dated(500, "2026-12-19")])
    service = WatchService(store, site, clock)  # type: ignore[arg-type]
    return clock, store, (service, site, service.create(str(record.result["search_id"])).watch_id)


@pytest.mark.parametrize(
    ("query", "years", "in_january"),
    [
        ("今年自动驾驶 产品责任", (2026, 2026), (2027, 2027)),
        ("近五年自动驾驶 产品责任", (2021, None), (2022, None)),
        # read as the plan reads them (NFKC, mainland characters): the raw text gave no window, so
        # the planned one passed for the caller's own years and never moved
        ("近兩年自動駕駛 產品責任", (2024, None), (2025, None)),
        ("近５年自动驾驶 产品责任", (2021, None), (2022, None)),
        ("2019—2023年自动驾驶 产品责任", (2019, 2023), (2019, 2023)),  # an absolute range stays
        ("自动驾驶 产品责任", (2026, 2026), (2026, 2026)),  # the caller's own years stay
    ],
)
async def test_a_watch_counts_the_questions_relative_years_from_the_year_of_each_check(
    tmp_path: Any, query: str, years: tuple[int | None, int | None], in_january: tuple[int | None, int | None]
) -> None:
    """A watch of a 今年 search made in December kept year_to 2026: from 1 January every check asked
    CNKI for 2026 papers only and listed nothing new again, without a word."""
    clock, store, (service, site, watch_id) = await _watched(tmp_path, query, years)
    try:
        await check(clock, service, watch_id)
        assert (site.requests[-1].year_from, site.requests[-1].year_to) == years
        await clock.advance(21 * 86_400)  # 10 January 2027
        await check(clock, service, watch_id)
        assert (site.requests[-1].year_from, site.requests[-1].year_to) == in_january
    finally:
        store.close()
