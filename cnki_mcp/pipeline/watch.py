"""Saved searches (DESIGN.md "Saved searches"): `watch_search` keeps a stored search's plan and the
records it found; `check_updates` runs that plan again on CNKI, newest first, and reports what
changed since the previous check: new records, online-first records that now carry
volume/issue/pages, and changed citation counts. Each check is stored, so the next diffs against it.

A check reads, for every query of the plan's widest channel (the subject channel of a research
search covers its title and keyword siblings; a structured search's own expression), the first
`pages` pages sorted by publication date, stopping early at a page with nothing unseen or below
the horizon (a check cut short by `pages` says so, `complete: false`, and the next one reads on
past the records it reported). A record counts as new when the watch has not seen it and it is
not older than the `horizon`: the oldest publication date the previous check read (the search's
own date before the first check). An unseen record older than that lay below what the previous
check could read, so it is recorded and counted (`older_unseen`), not reported as new."""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from cnki_mcp.clock import Clock, local_year
from cnki_mcp.errors import CnkiError, InvalidInput, SearchNotFound, SiteUnavailable, VerificationSkipped
from cnki_mcp.identity import Paper, listed_online_first
from cnki_mcp.jobs import OperationContext
from cnki_mcp.models import GridPage, GridRow
from cnki_mcp.pipeline.enrich import is_fatal
from cnki_mcp.pipeline.metadata import PAGE_TOKENS, approx_tokens
from cnki_mcp.pipeline.models import SearchSummary
from cnki_mcp.pipeline.readout import LISTED_AUTHORS
from cnki_mcp.pipeline.soft_block import SOFT_BLOCK_PAUSE, ask_again
from cnki_mcp.pipeline.state import Channel, SearchState
from cnki_mcp.query.plan import question_years
from cnki_mcp.site.backend import GridRequest, SiteBackend, SortOrder
from cnki_mcp.store import Store
from cnki_mcp.store.watches import KnownRecord, StoredWatch
from cnki_mcp.stored import load

PAGE_SIZE = 50
LISTED = 20  # records listed per kind in a report (counts are always complete)
MESSAGE_TOKENS = 200  # kept for a listing's message and the separators between its parts
WIDEST = "subject"  # a subject (主题) search covers titles and keywords (docs/simulator.md "Fields")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WatchItem(_Model):
    record_ref: str
    title: str
    # a `new` entry's authors and year (when known), as a search result gives them
    authors: list[str] | None = None
    year: int | None = None
    date: str | None = None
    source: str | None = None
    doc_type: str | None = Field(None, description="文献类型（期刊、博士、硕士、会议、报纸…）")
    url: str | None = None
    before: str | None = Field(None, description="旧值（被引次数或卷期页）")
    after: str | None = Field(None, description="新值")


class WatchInfo(_Model):
    watch_id: str
    search_id: str
    question: str
    created_at: datetime
    last_check_at: datetime | None = None
    checks: int = 0
    known: int = Field(0, description="已见过的记录数")
    removed: bool = Field(False, description="true：订阅已取消（remove=true），之后不再检查")


class WatchCheck(_Model):
    watch_id: str
    search_id: str
    question: str
    checked_at: datetime
    first_check: bool = False
    horizon: str | None = Field(None, description="只有不早于此发表日期的新记录算作新增")
    requests: int = 0
    rows_read: int = 0
    new_count: int = 0
    published_count: int = 0
    cited_changed_count: int = 0
    older_unseen: int = 0
    complete: bool = Field(
        True,
        description="false：有检索式读到 pages 页上限时仍有未见过的记录，更早的新记录还没读到；下次检查接着读，届时它们仍算新增（可加大 pages）",
    )
    new: list[WatchItem] = Field(default_factory=list)
    published: list[WatchItem] = Field(default_factory=list, description="网络首发后已有卷期页")
    cited_changed: list[WatchItem] = Field(default_factory=list)
    listed_from: int = Field(0, description="new / published / cited_changed 从各自第几条起列出（每类最多 20 条）")
    next_offset: int | None = Field(
        None, description="还有未列出的记录：list_watches(watch_id=…, offset=next_offset) 列出下一批；null 表示已列全"
    )

    def listed(self, offset: int = 0) -> WatchCheck:
        """The check with each kind's records from `offset`, at most LISTED of them (the counts
        stay whole); `next_offset` tells where the next batch starts. The stored report keeps
        every record: a check's records are known from then on, so its report is the only
        place they can be listed again."""
        end = offset + LISTED
        more = max(len(self.new), len(self.published), len(self.cited_changed)) > end
        return self.model_copy(
            update={
                "new": self.new[offset:end],
                "published": self.published[offset:end],
                "cited_changed": self.cited_changed[offset:end],
                "listed_from": offset,
                "next_offset": end if more else None,
            }
        )


class WatchEntry(WatchInfo):
    recent_checks: list[WatchCheck] = Field(
        default_factory=list, description="最近几次检查的结果（新的在前；含命令行 cnki-mcp watch check 做的检查）"
    )


class WatchList(_Model):
    watches: list[WatchEntry] = Field(default_factory=list)
    message: str | None = Field(
        None,
        description="列表到达大小上限时：其后的检查只给计数（记录列表为空，next_offset 指向未列出的记录）"
        "或不列出（recent_checks 变短），用 list_watches(watch_id=…) 逐个订阅列出",
    )


class CheckReport(_Model):
    checks: list[WatchCheck] = Field(default_factory=list)
    requests: int = 0
    unchecked: list[str] = Field(default_factory=list, description="未检查的 watch_id（预算用完、知网出错、取消或服务停止；之后单独检查它们）")


def new_watch_id() -> str:
    return "wat_" + secrets.token_hex(8)


def _online_first(paper: Paper, row: GridRow | None = None) -> bool:
    """CNKI lists an online-first paper under CAPJ (dbname `…LAST`) and marks the row 网络首发;
    a row is the current observation, the stored paper only speaks when there is none."""
    native = row.native if row is not None else paper.native
    return (row is not None and row.online_first) or listed_online_first(native)


def _known(paper: Paper, row: GridRow | None = None) -> KnownRecord:
    return KnownRecord(
        record_ref=paper.record_ref,
        cited=paper.cited if row is None or row.cited is None else row.cited,
        online_first=_online_first(paper, row),
        volume=paper.volume,
        issue=paper.issue,
        pages=paper.pages,
    )


def _vip(k: KnownRecord | Paper) -> str | None:
    parts = [p for p in (k.volume and f"{k.volume}卷", k.issue and f"{k.issue}期", k.pages and f"{k.pages}页") if p]
    return "".join(parts) or None


def _item(paper: Paper, row: GridRow | None, **extra: Any) -> WatchItem:
    return WatchItem(
        record_ref=paper.record_ref,
        title=paper.title,
        date=(row.date if row is not None else None) or paper.date,
        source=paper.source,
        # a thesis's source is its university, a newspaper's the paper: the kind says what it is
        doc_type=(row.doc_type if row is not None else None) or paper.doc_type,
        url=paper.public_url,
        **extra,
    )


def _new_item(paper: Paper, row: GridRow | None) -> WatchItem:
    """A `new` entry: also its authors (the first LISTED_AUTHORS, as search results) and year."""
    return _item(paper, row, authors=paper.author_names()[:LISTED_AUTHORS] or None, year=paper.year)


def _day(value: str | None) -> str | None:
    """The `YYYY-MM-DD` of a grid date (`2024-05-12`, `2024-05-12 10:31`), else None."""
    text = (value or "").strip()[:10]
    return text if len(text) == 10 and text[4] == "-" and text[7] == "-" else None


class WatchService:
    def __init__(
        self,
        store: Store,
        backend: SiteBackend,
        clock: Clock,
        public_origins: tuple[str, ...] = (),
        soft_block_pause: float = SOFT_BLOCK_PAUSE,
    ) -> None:
        self.store = store
        self.soft_block_pause = soft_block_pause
        self.backend = backend
        self.clock = clock
        self.public_origins = public_origins

    # --- watch_search -------------------------------------------------------------------

    def _channels(self, search_id: str, summary: SearchSummary) -> list[Channel]:
        """The search's channels with their QueryJson: from its checkpoint while the operation is
        stored, else from the page log (store/searchlog.py)."""
        op = self.store.load_operation(search_id)
        if op is not None and op.checkpoint:
            try:
                return SearchState.from_json(op.checkpoint).channels
            except (KeyError, TypeError, ValueError):
                pass
        fields = {c.channel: c.field for c in summary.coverage}
        subjects: dict[str, dict[int, dict[str, Any]]] = {}
        for page in self.store.search_log_pages(search_id):
            if not page.channel.startswith("feedback"):
                subjects.setdefault(page.channel, {}).setdefault(page.lane, page.query.get("subject") or {})
        out: list[Channel] = []
        for cid, lanes in subjects.items():
            ordered = [lanes[k] for k in sorted(lanes)]
            out.append(
                Channel(
                    id=cid, field=fields.get(cid, ""), weight=1.0, reason="", subject=ordered[0],
                    anchor=_anchor(ordered[0]), fingerprint="", subjects=ordered if len(ordered) > 1 else [],
                )
            )
        return out

    def create(self, search_id: str) -> WatchInfo:
        """A watch of a stored search (no request): its plan and every record it found."""
        record = self.store.get_search(search_id)
        if record is None:
            raise SearchNotFound(search_id=search_id)
        if record.summary is None:  # stored by a release before search summaries
            raise InvalidInput(
                "这个检索由旧版本保存，没有可重新运行的检索式：用相同的问题重新检索后再订阅",
                field="search_id",
                search_id=search_id,
                reason="no_plan",
            )
        existing = self.store.watch_for_search(search_id)
        if existing is not None:
            return self.info(existing)
        summary = load(SearchSummary, record.summary)
        channels = self._channels(search_id, summary)
        if not channels:
            raise InvalidInput("该检索没有可重新运行的检索式（检查点与检索日志都已不在）", search_id=search_id)
        widest = [c for c in channels if c.field == WIDEST] or [c for c in channels if not c.id.startswith("feedback")]
        params = record.params
        plan = {
            "channels": [c.to_dict() for c in widest],
            "year_from": params.get("year_from") or None,
            "year_to": params.get("year_to") or None,
            "method": summary.plan.method,
            "concepts": summary.plan.concepts,
            "planned_year": local_year(record.created_at),  # the year 今年 / 近五年 meant (`_years`)
        }
        refs = [e.record_ref for e in self.store.search_results(search_id, "all", 0, 1_000_000).items]
        papers = self.store.papers_by_refs(refs)
        now = self.clock.now()
        watch_id = new_watch_id()
        self.store.create_watch(
            watch_id, search_id, record.query, plan, now, record.created_at.date().isoformat(),
            [_known(papers[r]) if r in papers else KnownRecord(r) for r in refs],
        )
        stored = self.store.get_watch(watch_id)
        assert stored is not None
        return self.info(stored)

    def remove(self, *, search_id: str | None = None, watch_id: str | None = None) -> WatchInfo:
        """Stop watching (no request): the watch of `search_id`, or `watch_id`, goes with the
        records it has seen and its reports; the search itself stays. INVALID_ARGUMENT when
        there is no such watch."""
        watch = self.store.get_watch(watch_id) if watch_id else self.store.watch_for_search(search_id or "")
        if watch is None:
            raise InvalidInput("没有这个订阅", field="watch_id" if watch_id else "search_id", watch_id=watch_id, search_id=search_id)
        info = self.info(watch).model_copy(update={"removed": True})
        self.store.delete_watch(watch.watch_id)
        return info

    def listing(self, watch_id: str = "all", checks: int = 1, offset: int = 0) -> WatchList:
        """Every watch (or the one) with its newest stored check reports (no request): a check
        made by cron leaves its records known, so its report is the only place its news remain.
        Each report lists at most LISTED records of a kind, from `offset`; once the listing
        reaches PAGE_TOKENS (as a search_results page does), the later reports give their counts
        only, with `next_offset` at the records they left out, and past that are left out; every
        watch is listed (100 watches with 10 checks each listed 4.8 MB)."""
        watches = self.store.list_watches() if watch_id == "all" else self.watches(watch_id)
        known = self.store.known_counts([w.watch_id for w in watches])
        fields = set(WatchCheck.model_fields)
        infos = [self.info(watch, known.get(watch.watch_id, 0)) for watch in watches]
        listed: list[list[tuple[WatchCheck, WatchCheck]]] = []  # per watch: (listed, counts only)
        for watch in watches:
            reports = self.store.watch_checks(watch.watch_id, checks) if checks > 0 else []
            pairs = []
            for r in reports:
                whole = self._whole(load(WatchCheck, {k: v for k, v in r.items() if k in fields})).listed(offset)
                bare = whole.model_copy(update={"new": [], "published": [], "cited_changed": [], "next_offset": offset})
                pairs.append((whole, bare if whole.new or whole.published or whole.cited_changed else whole))
            listed.append(pairs)
        # every watch is listed; its reports, in order, first as counts only while they fit, then
        # with their records while those fit
        spent = MESSAGE_TOKENS + sum(approx_tokens(WatchEntry(**i.model_dump()).model_dump(mode="json")) for i in infos)
        shown: set[int] = set()
        for pairs in listed:
            for _, bare in pairs:
                cost = approx_tokens(bare.model_dump(mode="json"))
                if spent + cost <= PAGE_TOKENS:
                    spent += cost
                    shown.add(id(bare))
        entries: list[WatchEntry] = []
        cut = left_out = 0
        for info, pairs in zip(infos, listed, strict=True):
            recent: list[WatchCheck] = []
            for whole, bare in pairs:
                if id(bare) not in shown:
                    left_out += 1
                    continue
                extra = approx_tokens(whole.model_dump(mode="json")) - approx_tokens(bare.model_dump(mode="json"))
                if whole is bare or spent + extra <= PAGE_TOKENS:
                    spent += extra
                    recent.append(whole)
                else:
                    cut += 1
                    recent.append(bare)
            entries.append(WatchEntry(**info.model_dump(), recent_checks=recent))
        message = (
            f"列表已到大小上限（约 {PAGE_TOKENS} token）：{cut} 次检查只给计数、{left_out} 次检查未列出；"
            "用 list_watches(watch_id=…, checks=…, offset=next_offset) 逐个订阅列出"
            if cut or left_out
            else None
        )
        return WatchList(watches=entries, message=message)

    def _whole(self, check: WatchCheck) -> WatchCheck:
        """A report as stored by a release before every record was kept (the first LISTED new
        records, `new_count` counting all): its other new records are those the watch first saw
        at that check and not older than its horizon. Listed as they were, the report said
        `next_offset: null` (all listed) while the count said more, and no call showed the rest."""
        missing = check.new_count - len(check.new)
        if missing <= 0:
            return check
        listed = {item.record_ref for item in check.new}
        found: list[WatchItem] = []
        for ref in self.store.first_seen(check.watch_id, check.checked_at):
            paper = self.store.get(ref)
            if ref in listed or paper is None or paper.record_ref in listed:
                continue
            if _dated_not_older(paper.date, paper.year, check.horizon):
                found.append(_new_item(paper, None))
                listed.add(paper.record_ref)
        found.sort(key=lambda item: item.date or "", reverse=True)  # a check lists the newest first
        return check.model_copy(update={"new": [*check.new, *found[:missing]]})

    def info(self, watch: StoredWatch, known: int | None = None) -> WatchInfo:
        return WatchInfo(
            watch_id=watch.watch_id,
            search_id=watch.search_id,
            question=watch.question,
            created_at=watch.created_at,
            last_check_at=watch.last_check_at,
            checks=watch.checks,
            known=self.store.known_counts([watch.watch_id]).get(watch.watch_id, 0) if known is None else known,
        )

    def watches(self, watch_id: str) -> list[StoredWatch]:
        """`all` (the least recently checked first, never checked before any: a batch the budget
        stops early leaves the rest for the next one, which starts with them), or the one watch,
        by its watch_id or the search_id it watches (INVALID_ARGUMENT naming it when unknown)."""
        if watch_id == "all":
            return sorted(
                self.store.list_watches(),
                key=lambda w: (w.last_check_at is not None, w.last_check_at or w.created_at, w.created_at, w.watch_id),
            )
        # the search_id a watch was made from names it too: a client holding the search's id (the
        # one every search tool answered with) met "没有这个 watch_id" for the watch it had made
        watch = self.store.get_watch(watch_id) or self.store.watch_for_search(watch_id)
        if watch is None:
            raise InvalidInput(
                "没有这个 watch_id：watch_id 由 watch_search(search_id=…) 返回，list_watches 列出全部订阅",
                field="watch_id", watch_id=watch_id,
            )  # fmt: skip
        return [watch]

    # --- check_updates ------------------------------------------------------------------

    async def check(self, watch_id: str, ctx: OperationContext, pages: int = 1) -> CheckReport:
        """Check each watch in turn. The report so far is the operation's result after every
        watch (`ctx.set_result`), so a batch that ends early (a fatal error, a cancel, the
        watchdog, the server stopping) still returns the checks already stored, the rest listed as
        unchecked: a stored check's new records are known from then on and no later check
        reports them again. A non-fatal error fails that watch only (an item error; it stays
        unchecked) and the batch goes on."""
        todo = self.watches(watch_id)
        report = CheckReport()
        failed: list[str] = []

        def keep(remaining: list[StoredWatch]) -> None:
            report.unchecked = failed + [w.watch_id for w in remaining]
            report.requests = ctx.requests
            ctx.set_result(report)

        keep(todo)
        for n, watch in enumerate(todo):
            ctx.set_stage("watch", f"检查第 {n + 1}/{len(todo)} 个订阅：{watch.question[:40]}")
            ctx.progress(n, len(todo), "watches")
            try:
                check = await self._check_one(watch, ctx, pages)
            except CnkiError as exc:
                if is_fatal(exc) or isinstance(exc, VerificationSkipped):  # a person is needed where nobody can be asked, or the site stopped us
                    keep(todo[n:])
                    raise
                ctx.add_item_error(exc, watch_id=watch.watch_id)
                failed.append(watch.watch_id)
                keep(todo[n + 1 :])
                continue
            report.checks.append(check.listed())
            keep(todo[n + 1 :])
        ctx.progress(len(todo), len(todo), "watches")
        return report

    def _years(self, watch: StoredWatch) -> tuple[int | None, int | None]:
        """The years a check searches. Years the question's relative phrases gave (今年, 近五年,
        去年) count from the year of the check, as the question meant them: a watch of a 今年 search
        made in December kept year_to at that year, so from 1 January its checks could list
        nothing new again, without a word. Years the caller gave, or absolute phrases
        (2019—2023年), stay as searched."""
        plan = watch.plan
        searched = (plan.get("year_from"), plan.get("year_to"))
        if plan.get("method") == "structured" or searched == (None, None):
            return searched
        planned = int(plan.get("planned_year") or local_year(watch.created_at))
        # read as the plan read them (`question_years`: NFKC, mainland characters), or a 近兩年 /
        # 近５年 watch took its window for the caller's own years and never moved it
        if question_years(watch.question, planned) != searched:
            return searched  # not the question's phrase: the caller's own years
        return question_years(watch.question, local_year(self.clock.now()))

    def _behind(self, watch: StoredWatch) -> bool:
        """The previous check stopped at its page limit with unseen records still coming: the
        records below what it read are not known yet, so a page with nothing unseen does not mean
        that nothing unseen lies below it."""
        last = self.store.watch_checks(watch.watch_id, 1)
        return bool(last) and last[0].get("complete") is False

    async def _page(self, request: GridRequest, ctx: OperationContext, watch: StoredWatch, contradicted: bool) -> GridPage:
        """One grid page. A zero the watch itself contradicts (page 1 of a watch of one query whose
        records it knows, or a page after one that promised more) is what a throttled client is
        answered (DESIGN.md "Soft blocks"): asked once more after a pause, still empty it stops
        the batch with SITE_UNAVAILABLE, never stored as a check that found nothing."""
        grid = await self.backend.grid(request, op=ctx)
        if grid.rows or not contradicted:
            return grid
        again = await ask_again(self.backend, self.clock, ctx, request, self.soft_block_pause, "watch")
        if again.rows:
            return again
        raise SiteUnavailable(
            "知网对已知有结果的订阅检索连续返回空结果（疑似限流软封），该订阅未检查；稍后再检查",
            reason="soft_block",
            watch_id=watch.watch_id,
            page=request.page,
        )

    async def _check_one(self, watch: StoredWatch, ctx: OperationContext, pages: int) -> WatchCheck:
        """Each query is read newest first until it is exhausted, reaches below the horizon
        (everything there was read before or is older_unseen), or meets a page with nothing
        unseen (unless the previous check was cut short: then the unseen records lie below the
        known ones). A query still finding unseen records at the page limit leaves the check
        incomplete: the horizon stays, so what it could not read still counts as new later."""
        plan = watch.plan
        year_from, year_to = self._years(watch)
        started = ctx.requests
        seen: dict[str, tuple[Paper, GridRow]] = {}
        known = self.store.known_records(watch.watch_id)
        behind = self._behind(watch)
        oldest: list[str] = []
        exhausted_all = True
        complete = True
        rows_read = 0
        channels = [Channel.from_dict(data) for data in plan["channels"]]
        # A watch of one query whose records it knows cannot list none on page 1; one query of
        # several (a split channel's lane, one of several channels) covers only part of it and
        # may (the engine's rule, DESIGN.md "Soft blocks"): there only all of them empty is.
        queries = sum(c.queries for c in channels)
        single = queries == 1
        for channel in channels:
            for lane in range(channel.queries):
                cursor: str | None = None
                last_day: str | None = None
                exhausted = False
                done = False
                for page in range(1, pages + 1):
                    request = GridRequest(
                        subject=channel.subject_at(lane),
                        anchor=channel.anchor,
                        sort=SortOrder.DATE_DESC,
                        year_from=year_from,
                        year_to=year_to,
                        page=page,
                        page_size=PAGE_SIZE,
                        cursor=cursor,
                    )
                    grid = await self._page(request, ctx, watch, contradicted=page > 1 or (single and bool(known)))
                    rows_read += len(grid.rows)
                    papers = self.store.upsert_from_grid(grid.rows, self.clock.now(), public_origins=self.public_origins)
                    fresh = False
                    for row, paper in zip(grid.rows, papers, strict=True):
                        if paper.record_ref not in known and paper.record_ref not in seen:
                            fresh = True
                        seen.setdefault(paper.record_ref, (paper, row))
                        last_day = _day(row.date) or last_day
                    exhausted = grid.exhausted or not grid.rows
                    cursor = grid.turnpage
                    below = watch.horizon is not None and last_day is not None and last_day < watch.horizon
                    if exhausted or not cursor or below or not (fresh or behind):
                        done = True
                        break
                complete = complete and done
                if not exhausted:
                    exhausted_all = False
                    if last_day:
                        oldest.append(last_day)
        if queries > 1 and known and rows_read == 0:
            raise SiteUnavailable(
                "知网对已知有结果的订阅的每个检索式都返回空结果（疑似限流软封），该订阅未检查；稍后再检查",
                reason="soft_block",
                watch_id=watch.watch_id,
                page=1,
            )
        return self._diff(watch, known, seen, rows_read, min(oldest) if oldest else None, exhausted_all, complete,
                          ctx.requests - started)  # fmt: skip

    def _diff(
        self,
        watch: StoredWatch,
        known: dict[str, KnownRecord],
        seen: dict[str, tuple[Paper, GridRow]],
        rows_read: int,
        oldest_read: str | None,
        exhausted_all: bool,
        complete: bool,
        requests: int,
    ) -> WatchCheck:
        """The check as reported and stored (with the requests it cost: `list_watches` and
        `cnki-mcp watch list` show the stored one)."""
        horizon = watch.horizon
        new: list[WatchItem] = []
        published: list[WatchItem] = []
        cited: list[WatchItem] = []
        older = 0
        updates: list[KnownRecord] = []
        for ref, (stale, row) in seen.items():
            paper = self.store.get(ref) or stale  # the merged record, with what details confirmed
            now = _known(paper, row)
            updates.append(now)
            before = known.get(ref)
            if before is None:
                if _not_older(row, horizon):
                    new.append(_new_item(paper, row))
                else:
                    older += 1
                continue
            gained = _vip(now) is not None and _vip(now) != _vip(before)
            if before.online_first and (not now.online_first or gained):
                published.append(_item(paper, row, before=_vip(before), after=_vip(now) or "已出刊"))
            # CNKI leaves the 被引 cell empty at zero (parse_count: None): a paper's first
            # citations are a change from 0
            was = before.cited or 0
            if now.cited is not None and was != now.cited:
                cited.append(_item(paper, row, before=str(was), after=str(now.cited)))
        new.sort(key=lambda i: (i.date or "", i.record_ref), reverse=True)
        checked_at = self.clock.now()
        check = WatchCheck(
            watch_id=watch.watch_id,
            search_id=watch.search_id,
            question=watch.question,
            checked_at=checked_at,
            first_check=watch.checks == 0,
            horizon=horizon,
            requests=requests,
            rows_read=rows_read,
            new_count=len(new),
            published_count=len(published),
            cited_changed_count=len(cited),
            older_unseen=older,
            complete=complete,
            new=new,
            published=published,
            cited_changed=cited,
        )
        # The next check's horizon: the oldest date this one read down to; everything read when
        # every query was exhausted (no horizon needed: nothing lies below). A check cut short by
        # its page limit keeps the horizon: the unseen records it could not read still count as
        # new when a later check reaches them.
        next_horizon = (None if exhausted_all else (oldest_read or horizon)) if complete else horizon
        self.store.save_watch_check(
            watch.watch_id, "chk_" + secrets.token_hex(8), checked_at, next_horizon, updates,
            check.model_dump(mode="json"),
        )
        return check


def _not_older(row: GridRow, horizon: str | None) -> bool:
    """Whether a row's publication date is not older than the horizon. A row listed with a year
    alone (some theses, books, yearbooks) is older only when its year is."""
    return _dated_not_older(row.date, row.year, horizon)


def _dated_not_older(date: str | None, year: int | None, horizon: str | None) -> bool:
    if horizon is None:
        return True
    day = _day(date)
    if day is not None:
        return day >= horizon
    return year is None or str(year) >= horizon[:4]  # parse/grid.py reads it from the date


def _anchor(subject: dict[str, Any]) -> str:
    """The first row value of a Subject group (typed into the real form when capturing)."""
    for group in subject.get("ChildItems") or []:
        for item in group.get("Items") or []:
            if item.get("Value"):
                return str(item["Value"])
        found = _anchor(group)
        if found:
            return found
    return ""


def digest(report: CheckReport, stopped_by: str | None = None) -> str:
    """A short plain-text digest for `cnki-mcp watch check` (cron mail). `stopped_by`: the code
    of the error that stopped the batch early."""
    lines: list[str] = []
    for c in report.checks:
        head = f"[{c.watch_id}] {c.question}: 新增 {c.new_count}，出刊 {c.published_count}，被引变化 {c.cited_changed_count}"
        lines.append(head + ("（首次检查）" if c.first_check else "") + ("" if c.complete else "（未读完：更早的新记录下次接着读，可加大 --pages）"))
        for item in c.new:
            kind = item.doc_type if item.doc_type and item.doc_type != "期刊" else ""
            where = " ".join(part for part in (item.source, kind, item.date) if part)
            lines.append(f"  + {item.title}（{where}）{item.url or ''}".rstrip())
        for item in c.published:
            lines.append(f"  * 出刊 {item.title}：{item.after}")
        for item in c.cited_changed:
            lines.append(f"  ~ 被引 {item.title}：{item.before} -> {item.after}")
    if report.unchecked:
        if stopped_by:
            lines.append(f"提前停止（{stopped_by}），未检查：{', '.join(report.unchecked)}")
        else:  # a watch failed alone (its error is an item error) and the batch went on
            lines.append(f"未检查（出错）：{', '.join(report.unchecked)}")
    lines.append(f"请求数：{report.requests}")
    return "\n".join(lines)
