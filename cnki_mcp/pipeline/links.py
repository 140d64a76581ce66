"""`link_references`, the lookup half (site-rules.md §8, §3.10; contract link_references).

Local data first: each distinct title is looked up in the store by title key (as written, and
with 〈〉 read as 《》). Only when `lookup_missing` is true are the titles with no local match
located on CNKI: one OR-of-exact-titles grid request per batch of at most 10 distinct phrases
(4 batches at a time; a batch counts the distinct phrases it sends, and a title's spellings are
bounded to one request's worth, `searchable`). Every returned row is stored; rows are grouped by title key: no paper ->
unresolved, several distinct papers -> ambiguous, one -> linked (public URL) or
matched_without_link. A failed batch leaves its titles unresolved (item error recorded);
a fatal error (budget, cancel, site down, ...) keeps the result so far and is raised.

This batched lookup is its own small function rather than `pipeline.metadata._locate`: that
one records DOCUMENT_NOT_FOUND / IDENTITY_AMBIGUOUS item errors per title and keeps only unique
matches, while links needs every candidate to report `ambiguous` with its refs."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from cnki_mcp.cite.refshapes import not_a_paper
from cnki_mcp.errors import CnkiError, InvalidInput
from cnki_mcp.identity import Paper, doi_url
from cnki_mcp.jobs import OperationContext
from cnki_mcp.links import (
    Candidate,
    LinkInput,
    LinkReference,
    LinkResult,
    apply_links,
    expiring_link_warning,
    reference_key,
    resolve,
    scan_references,
    title_variants,
)
from cnki_mcp.models import GridPage
from cnki_mcp.pipeline.enrich import is_fatal, record_item_error
from cnki_mcp.query.compiler import MAX_TITLES, compile_expression, lookup_phrase, title_lookup_expression
from cnki_mcp.site.backend import GridRequest, SiteBackend
from cnki_mcp.store import Store
from cnki_mcp.store.misses import MISSES_KEPT
from cnki_mcp.tasks import all_done
from cnki_mcp.works import final_of

LOOKUP_WORKERS = 4
LOOKUP_PAGE_SIZE = 50
ALONE_PAGES = 3  # pages of 50 a title asked alone reads for its own row (`lookup_reads_on`)


def lookup_reads_on(page: GridPage, titles: int, page_no: int) -> bool:
    """Whether an exact-title lookup of `titles` titles asks again for those its page `page_no`
    did not carry: CNKI lists every title CONTAINING the phrase (site-rules.md §3.10), so when
    CNKI lists rows beyond a shared page its missing titles are asked alone, and a title asked
    alone reads on, up to ALONE_PAGES pages, before it counts as not found."""
    return bool(page.rows) and not page.exhausted and (titles > 1 or page_no < ALONE_PAGES)


def spelled(spellings: Iterable[str]) -> Callable[[str], bool]:
    """Whether a row's title is one of `spellings`' (by `reference_key`: CNKI's `CO2…` row for an
    asked `CO₂…`, 〈〉 read as 《》): the rows a lookup takes as a title's."""
    want = {reference_key(s) for s in spellings}
    return lambda title: reference_key(title) in want


def _candidate(paper: Paper) -> Candidate:
    """The DOI link when the paper has a DOI (it lasts), else its CNKI detail link (it expires)."""
    lasting = doi_url(paper.doi)
    if lasting is not None:
        return Candidate(record_ref=paper.record_ref, url=lasting, kind="doi")
    return Candidate(record_ref=paper.record_ref, url=paper.public_url, kind="cnki" if paper.public_url else None)


def _candidates(papers: list[Paper]) -> list[Candidate]:
    return [_candidate(p) for p in papers]


def one_per_work(papers: list[Paper]) -> list[Paper]:
    """`papers` (the records under one title), or the final record alone where they are one work's
    online-first and final records (`works.final_of`): CNKI keeps both, and the title names the work."""
    final = final_of(papers) if len(papers) > 1 else None
    return [final] if final is not None else papers


def local_matches(store: Store, title: str, spell: Callable[[str], list[str]] = title_variants) -> list[Paper]:
    """Stored papers whose title key equals any spelling of `title` (distinct, store order), one
    record per online-first work (`one_per_work`)."""
    found: dict[str, Paper] = {}
    for spelling in spell(title):
        for paper in store.find_by_title_key(spelling):
            found.setdefault(paper.record_ref, paper)
    return one_per_work(list(found.values()))


def phrases_of(spellings: list[str]) -> set[str]:
    """The distinct phrases CNKI is sent for these spellings (`lookup_phrase`: a title over the
    120-character box is asked by its head, so spellings differing after it are one leaf)."""
    return {lookup_phrase(s.strip()) for s in spellings}


def searchable(title: str, spell: Callable[[str], list[str]] = title_variants) -> list[str]:
    """The spellings CNKI can be asked for, in `spell`'s order (a value it cannot express is
    dropped), bounded to what one request carries: once MAX_TITLES distinct phrases are kept, a
    spelling with a new phrase is dropped (the spellings first in `spell`'s order, the title as
    written first, are kept). A spelling whose phrase is already kept costs nothing and stays,
    so a row carrying it still counts as the title's."""
    out: list[str] = []
    phrases: set[str] = set()
    for spelling in spell(title):
        try:
            title_lookup_expression([spelling])
        except InvalidInput:
            continue
        phrase = lookup_phrase(spelling.strip())
        if phrase not in phrases and len(phrases) >= MAX_TITLES:
            continue
        phrases.add(phrase)
        out.append(spelling)
    return out


def plan_batches(
    titles: dict[str, str], spell: Callable[[str], list[str]] = title_variants
) -> tuple[list[list[tuple[str, list[str]]]], list[str]]:
    """Pack (key, spellings) into batches sending at most MAX_TITLES distinct phrases, in order
    (`spell` gives a title's spellings; `searchable` bounds one title's to a request's worth, so
    every batch holds at least one title). Returns (batches, keys that cannot be searched at all)."""
    batches: list[list[tuple[str, list[str]]]] = []
    current: list[tuple[str, list[str]]] = []
    sent: set[str] = set()  # the distinct phrases `current` sends
    unsearchable: list[str] = []
    for key, title in titles.items():
        spellings = searchable(title, spell)
        if not spellings:
            unsearchable.append(key)
            continue
        phrases = phrases_of(spellings)
        if current and len(sent | phrases) > MAX_TITLES:
            batches.append(current)
            current, sent = [], set()
        current.append((key, spellings))
        sent |= phrases
    if current:
        batches.append(current)
    return batches, unsearchable


async def lookup_batch(
    backend: SiteBackend,
    batch: list[tuple[str, list[str]]],
    ctx: OperationContext,
    stage: str,
    *,
    page: int = 1,
    cursor: str | None = None,
) -> GridPage | None:
    """One OR-of-exact-titles grid request for a planned batch (its `page`, with the previous
    page's `cursor`). A failure that is not fatal is recorded once per title (item errors of
    `stage`) and gives None; a fatal one is raised. A batch CNKI cannot be asked for (no title,
    more phrases than one request holds) is such a failure of its titles, never the operation's."""
    spellings = [s for _, group in batch for s in group]
    try:
        compiled = compile_expression(title_lookup_expression(spellings))
        request = GridRequest(
            subject=compiled.subject, anchor=compiled.anchor, page_size=LOOKUP_PAGE_SIZE, page=page, cursor=cursor
        )
        return await backend.grid(request, op=ctx)
    except CnkiError as exc:
        if is_fatal(exc):
            raise
        for _key, group in batch:
            record_item_error(ctx, exc, None, stage, title=group[0])
        return None


async def locate_titles(
    store: Store,
    backend: SiteBackend,
    titles: dict[str, str],
    ctx: OperationContext,
    *,
    public_origins: tuple[str, ...] = (),
) -> dict[str, list[Paper]]:
    """reference key -> papers CNKI lists under that exact title (stored on the way; one record per
    online-first work, `one_per_work`)."""
    found: dict[str, list[Paper]] = {}
    batches, _ = plan_batches(titles)
    gate = asyncio.Semaphore(LOOKUP_WORKERS)
    done = 0

    async def one(batch: list[tuple[str, list[str]]], page_no: int = 1, cursor: str | None = None) -> None:
        nonlocal done
        async with gate:
            page = await lookup_batch(backend, batch, ctx, "links_lookup", page=page_no, cursor=cursor)
        if page is None:
            return
        papers = store.upsert_from_grid(page.rows, store.clock.now(), public_origins=public_origins)
        rows_of: dict[str, dict[str, Paper]] = {}
        for key, group in batch:
            match = spelled(group)
            rows_of[key] = {p.record_ref: p for row, p in zip(page.rows, papers, strict=True) if match(row.title)}
        more = lookup_reads_on(page, len(batch), page_no)
        again = [(key, group) for key, group in batch if more and not rows_of[key]]
        for key, _ in batch:
            if not any(key == k for k, _ in again):
                found[key] = one_per_work(list(rows_of[key].values()))
        done += len(batch) - len(again)
        ctx.progress(done, len(titles), "titles")
        if len(batch) == 1 and again:
            await one(batch, page_no + 1, page.turnpage)
            return
        await all_done(one([entry]) for entry in again)

    await all_done(one(b) for b in batches)
    return found


MISS_REUSE = MISSES_KEPT  # 24 hours
RECENT_MISS_WARNING = (
    "{n} 个题名 24 小时内已到知网查过、没有找到，本次未再查找（不花请求）；确认知网已收录时用 "
    "get_metadata(titles=[…]) 查找，找到后再运行本工具即可链接"
)


def _recent_misses(store: Store, missing: dict[str, str], matches: dict[str, list[Paper]]) -> set[str]:
    """Keys of `missing` CNKI listed nothing for within MISS_REUSE (kept in the store, across restarts): not asked
    again, since a rerun of a draft repeats its misses and a title asked alone reads up to
    ALONE_PAGES pages before it counts as not found (DESIGN.md §References)."""
    now = store.clock.now()
    return {
        key
        for key in missing
        if not matches.get(key) and store.lookup_miss("link", key, now) is not None
    }


def _keep_misses(store: Store, located: dict[str, list[Paper]]) -> None:
    """Remember the titles whose lookup ended with no row (a failed batch leaves its titles out
    of `located`, so they are asked again next time)."""
    found = [key for key, papers in located.items() if papers]
    store.keep_misses("link", {key: None for key, papers in located.items() if not papers}, store.clock.now(), found=found)


# Text with no 《title》 (an English paragraph citing "Title" in quotes) came back unchanged, saying nothing.
NO_TITLES_WARNING = (
    "文本中没有《题名》：link_references 只链接书名号内的题名；引号中或英文写法的题名请写成《…》，或用 "
    "get_metadata(titles=[…]) 查找。No 《title》 in the text: only titles inside 《》 are linked."
)


async def link_references(
    inp: LinkInput,
    store: Store,
    backend: SiteBackend,
    ctx: OperationContext,
    *,
    public_origins: tuple[str, ...] = (),
) -> LinkResult:
    """Link the 《titles》 of `inp.text` (INPUT_TOO_LARGE, TOO_MANY_REFERENCES before any work)."""
    spans, titles = scan_references(inp.text)
    matches: dict[str, list[Paper]] = {key: local_matches(store, title) for key, (title, _) in titles.items()}
    # a law, standard or classic by its name is never a paper CNKI lists: not asked (`resolve`)
    missing = {key: titles[key][0] for key, papers in matches.items() if not papers and not not_a_paper(titles[key][0])}
    if inp.lookup_missing:
        # a link this tool wrote carries an expiring token, stored when it was written: matched
        # locally it came back with that same token, so the advised rerun renewed nothing; with
        # lookup_missing its title asks CNKI again (the rows bring the token's successor)
        missing.update({span.key: titles[span.key][0] for span in spans if span.label is not None and span.key in titles})

    recent = _recent_misses(store, missing, matches)
    for key in recent:
        del missing[key]

    failure: BaseException | None = None
    if inp.lookup_missing and missing:
        ctx.set_stage("links_lookup", f"到知网查找 {len(missing)} 个题名")
        try:
            located = await locate_titles(store, backend, missing, ctx, public_origins=public_origins)
            matches.update(located)
            _keep_misses(store, located)
        except CnkiError as exc:
            if not is_fatal(exc):
                raise
            failure = exc
        except asyncio.CancelledError as halted:
            # a cancel or the time budget: the titles the lookups answered before it are stored,
            # so they link as local matches; nothing here awaits
            failure = halted
            matches.update({key: local_matches(store, title) for key, title in missing.items()})

    references: dict[str, LinkReference] = {
        key: resolve(title, _candidates(matches.get(key, [])), count)
        for key, (title, count) in titles.items()
    }
    urls = {key: ref.url for key, ref in references.items() if ref.status == "linked" and ref.url}
    result = LinkResult(
        text=apply_links(inp.text, spans, urls),
        references=list(references.values()),
        requests=ctx.requests,
        warnings=expiring_link_warning(list(references.values()))
        + ([] if titles else [NO_TITLES_WARNING])
        + ([RECENT_MISS_WARNING.format(n=len(recent))] if recent and inp.lookup_missing else []),
    )
    if failure is not None:
        ctx.set_result(result)
        raise failure
    return result


__all__ = [
    "LOOKUP_PAGE_SIZE",
    "LOOKUP_WORKERS",
    "link_references",
    "local_matches",
    "locate_titles",
    "lookup_batch",
    "plan_batches",
    "searchable",
    "spelled",
]
