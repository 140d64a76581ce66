"""`get_metadata`: bibliographic records for refs, exact titles or a saved search (contract
get_metadata; site-rules.md §3.8 detail reuse, §3.10 title location).

Local data first: a known ref or a unique local title match costs nothing. Remaining titles are
located on CNKI, 10 per grid request (4 batches at a time): 0 rows -> DOCUMENT_NOT_FOUND, more
than one paper -> IDENTITY_AMBIGUOUS. Then only what the requested `fields` need is read
(DESIGN.md "get_metadata reads what the fields need"): nothing for fields a list row gives;
CNKI's batch export (20 papers per request) for volume, issue, pages, DOI, abstract, keywords and
institutions; the detail page (unless a fresh one, < 30 days, is stored) for anything else or
when no field list is given; journal quality when asked. One failed item never fails the batch."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from cnki_mcp.clock import Clock
from cnki_mcp.errors import CnkiError, DocumentNotFound, InvalidInput, SearchNotFound
from cnki_mcp.identity import Paper, ambiguous, asked_title
from cnki_mcp.jobs import OperationContext
from cnki_mcp.models import GridPage, GridRow
from cnki_mcp.pipeline.enrich import Enricher, fill_by_export, is_fatal, record_item_error
from cnki_mcp.pipeline.links import (
    LOOKUP_WORKERS,
    local_matches,
    lookup_batch,
    lookup_reads_on,
    one_per_work,
    plan_batches,
    searchable,
    spelled,
)
from cnki_mcp.pipeline.models import MetadataInput, MetadataResult, Scope
from cnki_mcp.query.compiler import title_lookup_expression
from cnki_mcp.site.backend import SiteBackend
from cnki_mcp.store import Store
from cnki_mcp.store.searches import COMPLETED
from cnki_mcp.tasks import all_done

# Fields a stored list row always answers (the grid gives them; `quality` is the journal page's).
LIST_FIELDS: frozenset[str] = frozenset(
    {
        "record_ref",
        "title",
        "authors",
        "source",
        "year",
        "publication_date",
        "document_type",
        "dbcode",
        "dbname",
        "filename",
        "cited",
        "downloaded",
        "url",
        "source_url",
        "quality",
    }
)
# Fields CNKI's batch export gives for 20 list rows at a time (site-rules.md §9).
EXPORT_FIELDS: frozenset[str] = frozenset(
    {"volume", "issue", "pages", "doi", "abstract", "keywords", "institutions"}
)
# Fields only some kinds have, read from the detail page, in records only where set.
KIND_FIELDS: tuple[str, ...] = ("supervisor", "conference", "conference_place", "conference_date")
# Each author's institutions, shown beside `institutions` (with it when `fields` names it).
AUTHOR_INSTITUTIONS = "author_institutions"
_PAPER_FIELD = {"publication_date": "date", "document_type": "doc_type", "downloaded": "downloads"}


def _missing(paper: Paper, fields: set[str]) -> set[str]:
    """Requested fields the stored paper cannot answer yet (list fields are always answered)."""
    out: set[str] = set()
    for name in fields - LIST_FIELDS:
        value = getattr(paper, _PAPER_FIELD.get(name, name), None)
        if name not in EXPORT_FIELDS or not value:
            out.add(name)
    return out


def quality_view(enricher: Enricher, paper: Paper) -> dict[str, Any] | None:
    cached = enricher.journal_cached(paper)
    if cached is None:
        return None
    page = cached.page
    if page is None:
        return {"state": cached.state}
    return {
        "canonical_title": page.name,
        "identity_basis": page.identity_basis.value if page.identity_basis else None,
        "tiers": list(page.tiers),
        "tier_evidence": list(page.tiers),
        "composite_impact": page.composite_if,
        "aggregate_impact": page.aggregate_if,
        "metric_year": page.metric_year,
        "state": cached.state,
    }


def metadata_record(enricher: Enricher, paper: Paper, *, with_quality: bool = True) -> dict[str, Any]:
    """The contract's record fields (the locator is internal and never shown)."""
    record: dict[str, Any] = {
        "record_ref": paper.record_ref,
        "title": paper.title,
        "authors": paper.author_names(),
        "institutions": list(paper.institutions),
        "source": paper.source,
        "year": paper.year,
        "publication_date": paper.publication_date(),
        "volume": paper.volume,
        "issue": paper.issue,
        "pages": paper.pages,
        "document_type": paper.doc_type,
        "doi": paper.doi,
        "dbcode": paper.native.dbcode,
        "dbname": paper.native.dbname,
        "filename": paper.native.filename,
        "abstract": paper.abstract,
        "excerpt": paper.excerpt,
        "keywords": list(paper.keywords),
        "funds": list(paper.funds),
        "cited": paper.cited,
        "downloaded": paper.downloads,
        "url": paper.public_url,
        "source_url": paper.source_url,
        "detail_observed_at": paper.detail_observed_at.isoformat() if paper.detail_observed_at else None,
    }
    # a kind's own fields (a thesis's 导师, a conference paper's 会议名称/地点/时间), shown where the
    # record has them: the detail page gives them, and most records (journal papers) have none
    record.update({name: getattr(paper, name) for name in KIND_FIELDS if getattr(paper, name)})
    # Which author is at which institution: the detail page pairs them (its `<sup>1,2</sup>` marks,
    # DESIGN.md "Detail pages"); `institutions` alone cannot say it once a paper lists two.
    # One list per author, in the order of `authors`; absent when no pairing was read.
    paired = [list(a.institutions) for a in paper.authors]
    if any(paired):
        record[AUTHOR_INSTITUTIONS] = paired
    if with_quality:
        record["quality"] = quality_view(enricher, paper)
    return record


def refs_in_scope(
    store: Store, search_id: str, scope: Scope, offset: int, limit: int
) -> tuple[int, list[str]]:
    """(total in scope, one page of refs in rank order) of a saved search."""
    if store.get_search(search_id) is None:
        raise SearchNotFound(search_id=search_id)
    page = store.search_results(search_id, "all" if scope == "candidates" else scope, offset, limit)
    return page.total, [e.record_ref for e in page.items]


# What a page of a search's scope may cost the model that reads it, in estimated tokens: clients
# cap a tool result (Claude Code at 25,000 tokens by default, others cut silently), and 100 rows of
# search_results view=records measured ~240,000 characters. A page reaching it ends early, and its
# next_offset says where (search_results; get_metadata given only a search_id).
PAGE_TOKENS = 20_000
_WIDE = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


def approx_tokens(item: Any) -> int:
    """An upper estimate of the tokens `item` costs as compact JSON: one per CJK character, one
    per three other characters (tokens, links and numbers tokenise worse than prose)."""
    text = json.dumps(item, ensure_ascii=False, default=str)
    wide = len(_WIDE.findall(text))
    return wide + (len(text) - wide + 2) // 3


def within_budget(items: list[dict[str, Any]], budget: int | None = None) -> int:
    """How many of `items`, from the first, fit `budget` estimated tokens (default PAGE_TOKENS,
    read when called; at least one)."""
    budget = PAGE_TOKENS if budget is None else budget
    spent = 0
    for n, item in enumerate(items):
        spent += approx_tokens(item)
        if n and spent > budget:
            return n
    return len(items)


def page_cut(stop: int, limit: int, unit: str) -> str:
    """The start of the message of a page a client's size ended before `limit` (at its `stop`th row)."""
    return f"本页在 {stop} {unit}处截止（limit={limit}；一页约 {PAGE_TOKENS} token 以内，客户端会截断更长的结果）："


def reranked_note(status: str, offset: int, next_offset: int | None) -> str | None:
    """What a page of a saved search that is not `completed` says when the scope spans pages: a
    `continue` ranks the candidates again and replaces their ranks (the abstracts read since change
    the scores), so offsets taken before it skip some papers and repeat others (DESIGN.md "Tool
    results"). None for a completed search (its ranking is final) or a scope on one page."""
    if status == COMPLETED or (offset == 0 and next_offset is None):
        return None
    return (
        f"检索未完成（{status}）：continue 之后会重新排序，之前的 offset 不再适用（会漏读或重读），"
        "continue 之后请从 offset=0 重读"
    )


def scope_next_offset(offset: int, count: int, total: int) -> int | None:
    """The offset of the page after `count` refs read from `offset` of a scope of `total` (None: the last)."""
    after = offset + count
    return after if count and after < total else None


def _inexpressible(title: str) -> InvalidInput | None:
    """The error of a title none of whose lookup spellings CNKI can be asked for (both quote
    kinds in every spelling, ...: `links.searchable` keeps none), with the title as its detail;
    None when one can, as link_references, read_online_html and download_paper ask it."""
    if searchable(title):
        return None
    try:
        title_lookup_expression([title])
    except InvalidInput as exc:
        return type(exc)(exc.message, title=title)
    return None


async def _locate(
    store: Store,
    backend: SiteBackend,
    clock: Clock,
    enricher: Enricher,
    titles: list[str],
    ctx: OperationContext,
) -> dict[str, str]:
    """Exact-title lookup, at most 10 distinct phrases per grid request (`links.plan_batches`: a title is
    asked as written and folded, `links.title_variants`); title -> ref for unique matches. A title
    the page did not carry is asked again as `links.lookup_reads_on` says (alone, reading on)."""
    found: dict[str, str] = {}
    batches, _ = plan_batches({t: t for t in titles})
    gate = asyncio.Semaphore(LOOKUP_WORKERS)

    async def page_of(
        batch: list[tuple[str, list[str]]], page: int = 1, cursor: str | None = None
    ) -> GridPage | None:
        async with gate:
            return await lookup_batch(backend, batch, ctx, "locate", page=page, cursor=cursor)

    def rows_for(grid: GridPage, spellings: list[str]) -> list[GridRow]:
        match = spelled(spellings)
        return [row for row in grid.rows if match(row.title)]

    def settle(title: str, rows: list[GridRow]) -> None:
        papers = store.upsert_from_grid(rows, clock.now(), public_origins=enricher.public_origins)
        distinct = one_per_work(list({p.record_ref: p for p in papers}.values()))
        refs = [p.record_ref for p in distinct]
        if not refs:
            record_item_error(
                ctx, DocumentNotFound("按完整题名精确检索，知网没有结果", title=title), None, "locate", title=title
            )
        elif len(refs) > 1:
            ambiguous_item(ctx, title, distinct)
        else:
            found[title] = refs[0]

    async def alone(entry: tuple[str, list[str]]) -> None:
        title, spellings = entry
        rows: list[GridRow] = []
        cursor: str | None = None
        page = 0
        while True:
            page += 1
            grid = await page_of([entry], page, cursor)
            if grid is None:
                return
            rows = rows_for(grid, spellings)
            if rows or not lookup_reads_on(grid, 1, page):
                break
            cursor = grid.turnpage
        settle(title, rows)

    async def one(batch: list[tuple[str, list[str]]]) -> None:
        if len(batch) == 1:
            await alone(batch[0])
            return
        grid = await page_of(batch)
        if grid is None:
            return
        crowded = lookup_reads_on(grid, len(batch), 1)
        again: list[tuple[str, list[str]]] = []
        for entry in batch:
            rows = rows_for(grid, entry[1])
            if not rows and crowded:
                again.append(entry)
            else:
                settle(entry[0], rows)
        await all_done(alone(e) for e in again)

    await all_done(one(b) for b in batches)
    return found


def ambiguous_item(ctx: OperationContext, title: str, papers: list[Paper]) -> None:
    """A title several papers carry, as an item error whose details name the candidates (as the
    single-paper tools' IDENTITY_AMBIGUOUS does), so the caller can ask again by record_ref."""
    error = ambiguous(title, papers)
    record_item_error(ctx, error, None, "locate", title=title, count=len(papers),
                      candidates=error.details["candidates"])  # fmt: skip


async def _read(
    store: Store,
    backend: SiteBackend,
    enricher: Enricher,
    clock: Clock,
    inp: MetadataInput,
    targets: list[str],
    ctx: OperationContext,
) -> None:
    """Read what the requested fields need: detail pages, batch exports, journal pages."""
    if inp.fields is None or inp.refresh:
        await enricher.run(targets, ctx, stage="metadata", quality=inp.wants_quality, refresh=inp.refresh)
        return
    wanted = set(inp.fields)
    papers = store.papers_by_refs(targets)
    details: list[str] = []
    exports: dict[str, str] = {}  # export id -> ref
    for ref in targets:
        paper = papers.get(ref)
        if paper is None or enricher.detail_fresh(ref):
            continue
        missing = _missing(paper, wanted)
        if not missing or (missing <= EXPORT_FIELDS and enricher.abstract_read(paper)):
            continue  # a detail page or export read within 30 days: what it lacks, CNKI lacks
        if missing <= EXPORT_FIELDS and paper.export_id:
            exports[paper.export_id] = ref
        else:
            details.append(ref)
    if exports:
        ctx.set_stage("metadata_export", f"批量导出 {len(exports)} 篇的卷期页码、摘要与关键词")
        details += await fill_by_export(store, backend, clock, exports, ctx)
    if details:
        await enricher.run(details, ctx, stage="metadata", quality=inp.wants_quality)
    if inp.wants_quality:
        rest = [t for t in targets if t not in set(details)]
        await enricher.run(rest, ctx, stage="metadata", quality=True, detail=False, label="读取期刊")


async def fetch_metadata(
    store: Store,
    backend: SiteBackend,
    enricher: Enricher,
    clock: Clock,
    inp: MetadataInput,
    ctx: OperationContext,
) -> MetadataResult:
    targets: list[str] = []
    for ref in inp.record_refs:
        paper = store.get(ref)
        if paper is None:
            record_item_error(ctx, DocumentNotFound.unknown_ref(ref), None, "locate", record_ref=ref)
        else:
            targets.append(paper.record_ref)
    scope_total: int | None = None
    scope_next: int | None = None
    scope_refs: list[str] = []
    scope_status = COMPLETED
    ranking: int | None = None
    if inp.search_id:
        scope_total, scope_refs = refs_in_scope(store, inp.search_id, inp.scope, inp.offset, inp.limit)
        scope_next = scope_next_offset(inp.offset, len(scope_refs), scope_total)
        # read with the refs (no await between): the page's ranking, not one a continue makes meanwhile
        if (searched := store.get_search(inp.search_id)) is not None:
            scope_status, ranking = searched.status, searched.ranking
        targets.extend(store.resolve_ref(r) for r in scope_refs)

    pending: list[str] = []
    for title in dict.fromkeys(map(asked_title, inp.titles)):
        local = local_matches(store, title)
        if len(local) == 1:
            targets.append(local[0].record_ref)
        elif len(local) > 1:
            ambiguous_item(ctx, title, local)
        elif inp.local_only:
            record_item_error(
                ctx, DocumentNotFound("本地没有这个题名", title=title), None, "locate", title=title
            )
        elif (unsayable := _inexpressible(title)) is not None:
            # one title CNKI cannot be asked for is that title's error, not the batch's
            ctx.add_item_error(unsayable, stage="locate", title=title)
        else:
            pending.append(title)

    targets = list(dict.fromkeys(targets))
    failure: BaseException | None = None
    try:
        if pending:
            ctx.set_stage("locate", f"按题名定位 {len(pending)} 篇")
            located = await _locate(store, backend, clock, enricher, pending, ctx)
            targets = list(dict.fromkeys([*targets, *(located[t] for t in pending if t in located)]))
        if not inp.local_only:
            await _read(store, backend, enricher, clock, inp, targets, ctx)
    except CnkiError as exc:
        if not is_fatal(exc):
            raise
        failure = exc
    except asyncio.CancelledError as halted:
        # a cancel or the time budget (the watchdog): the records as stored so far are the
        # result, as after a fatal error; nothing below awaits, so the cancellation goes on at once
        failure = halted

    papers = store.papers_by_refs(targets)
    records = []
    for ref in targets:
        paper = papers.get(ref)
        if paper is None:
            continue
        record = metadata_record(enricher, paper, with_quality=inp.wants_quality)
        if inp.fields:
            keep = {"record_ref", "title", *inp.fields}
            if "institutions" in keep:
                keep.add(AUTHOR_INSTITUTIONS)
            record = {k: v for k, v in record.items() if k in keep}
        records.append(record)
    warnings: list[str] = []
    if inp.search_id and not inp.record_refs and not inp.titles and scope_total is not None:
        # a page of the scope alone ends at the size a client reads; the rest is stored (free)
        fit = within_budget(records)
        if fit < len(records):
            dropped = records[fit]["record_ref"]  # the page goes on from the scope entry it was read for
            stop = next(i for i, ref in enumerate(scope_refs) if store.resolve_ref(ref) == dropped)
            records = records[:fit]
            scope_next = inp.offset + stop
            warnings.append(page_cut(stop, inp.limit, "篇") + f"用相同参数、offset={scope_next} 续读（已读的详情不再请求）")
        if (note := reranked_note(scope_status, inp.offset, scope_next)) is not None:
            warnings.append(note)
    result = MetadataResult(
        records=records,
        errors=[e.model_dump(mode="json") for e in ctx.item_errors],
        requests=ctx.requests,
        total=scope_total,
        next_offset=scope_next,
        ranking=ranking,
        warnings=warnings,
    )
    if failure is not None:
        ctx.set_result(result)
        raise failure
    return result
