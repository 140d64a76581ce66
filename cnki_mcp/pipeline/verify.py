"""`verify_references`: check a pasted reference list against CNKI (docs/DESIGN.md §References).

Steps, cheapest first, each one only for the entries the previous left open:

1. parse every entry (`cite.refparse`); unreadable entries are `unparsable`, and a law, standard
   or classic cited by its name `not_a_paper` (`cite.refshapes`): neither costs anything;
2. local store: papers whose title key equals the entry's title, or whose DOI is the entry's;
3. exact titles on CNKI, 10 per grid request (4 batches at a time), rows stored on the way;
4. one search per entry still without a fitting record: the title's most distinctive segment
   (篇名, fuzzy) OR the first author together with the source, so that a garbled title by a real
   author in a real journal is still found, OR the entry's DOI (in the same request, so a DOI
   costs nothing more); the rows are compared with `cite.refmatch`;
5. for matches whose record lacks volume, issue or pages that the entry gives: CNKI's batch
   export (`/dm8/api/ShowExport`, 20 records per request) supplies them;
6. verdicts (`cite.refmatch.judge`), with a corrected GB/T 7714-2015 string for every match
   (the record's fields; where the record lacks a place, volume, issue, pages or DOI, the
   entry's own value is kept rather than dropped or written as unknown).

A fatal error (budget, cancel, site down) keeps what was judged so far (partial result)."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from cnki_mcp.cite import export as cite_export
from cnki_mcp.cite import from_paper
from cnki_mcp.cite.model import HAN
from cnki_mcp.cite.names import names_agree, without_origin
from cnki_mcp.cite.refmatch import (
    FieldDiff,
    FieldName,
    Judgement,
    RecordView,
    Verdict,
    judge,
    title_similarity,
)
from cnki_mcp.cite.refparse import ParsedReference, parse_references, title_spellings
from cnki_mcp.cite.refshapes import NOT_A_PAPER_REASON
from cnki_mcp.cite.sources import cite_source, stable_url
from cnki_mcp.errors import CnkiError, InputTooLarge, InvalidInput, TooManyReferences
from cnki_mcp.identity import Paper, doi_key, listed_online_first
from cnki_mcp.jobs import OperationContext
from cnki_mcp.links import reference_key, title_variants
from cnki_mcp.models import GridRow
from cnki_mcp.pipeline.enrich import fill_by_export, is_fatal, read_in_full, record_item_error
from cnki_mcp.pipeline.links import local_matches, lookup_batch, plan_batches, spelled
from cnki_mcp.query.compiler import compile_expression
from cnki_mcp.query.expr import parse_expression
from cnki_mcp.script import simplified
from cnki_mcp.site.backend import GridRequest, SiteBackend
from cnki_mcp.store import Store
from cnki_mcp.store.misses import MISSES_KEPT
from cnki_mcp.tasks import all_done
from cnki_mcp.works import final_of, same_work

MAX_REFERENCES = 200
MAX_TEXT_BYTES = 512 * 1024
WORKERS = 4
PAGE_SIZE = 50
_SEGMENT_SPLIT = re.compile(r"[:：—\-–,，、;；()（）《》“”\"'\s]+")


class VerifyOptions(BaseModel):
    on_verification: Literal["ask", "skip"] = Field("ask", description="ask：弹出窗口等待处理；skip：跳过")


class VerifyInput(BaseModel):
    text: str | None = Field(default=None, description="整段参考文献列表（编号、项目符号或每行一条）")
    references: list[str] | None = Field(default=None, description="或逐条给出（1–200 条）")
    options: VerifyOptions = Field(default_factory=VerifyOptions)
    fresh: bool = Field(False, description="true：24 小时内查过的 not_found 条目也重新到知网查找")

    @model_validator(mode="after")
    def _one_source(self) -> VerifyInput:
        if self.text is None and self.references is None:
            raise InvalidInput("需要 text（整段参考文献）或 references（逐条列表）之一")
        if self.text is not None and self.references is not None:
            raise InvalidInput("text 与 references 只能给一个")
        if self.text is not None and len(self.text.encode("utf-8", "surrogatepass")) > MAX_TEXT_BYTES:
            raise InputTooLarge("参考文献文本超过 512 KB", limit=MAX_TEXT_BYTES)
        if self.references is not None and not 1 <= len(self.references) <= MAX_REFERENCES:
            raise TooManyReferences(f"references 需要 1–{MAX_REFERENCES} 条", count=len(self.references))
        if self.references is not None:
            size = sum(len(r.encode("utf-8", "surrogatepass")) for r in self.references)
            if size > MAX_TEXT_BYTES:
                raise InputTooLarge("参考文献合计超过 512 KB：分几次核对", limit=MAX_TEXT_BYTES, bytes=size)
        return self


class VerifiedEntry(BaseModel):
    index: int = Field(description="条目序号（从 1 开始）")
    text: str = Field(description="原条目")
    verdict: Verdict
    fields: list[FieldName] = Field(default_factory=list, description="mismatch：不一致的字段")
    differences: list[FieldDiff] = Field(default_factory=list)
    record: RecordView | None = Field(default=None, description="匹配到的知网记录")
    corrected: str | None = Field(default=None, description="按知网记录改正的 GB/T 7714 条目")
    candidates: list[RecordView] = Field(default_factory=list, description="ambiguous：同样符合的记录")
    searches: list[str] = Field(default_factory=list, description="为该条目做过的查找")
    warnings: list[str] = Field(default_factory=list)
    reason: str | None = Field(default=None, description="unparsable、not_a_paper 的原因")


class VerifyResult(BaseModel):
    entries: list[VerifiedEntry]
    counts: dict[str, int] = Field(description="每种结论的条目数")
    requests: int = Field(description="本次访问知网的请求数")


def _view(paper: Paper) -> RecordView:
    return RecordView(
        record_ref=paper.record_ref,
        title=paper.title,
        authors=paper.author_names(),
        source=paper.source,
        year=paper.year,
        volume=paper.volume,
        issue=paper.issue,
        pages=paper.pages,
        doi=paper.doi,
        doc_type=paper.doc_type,
        url=paper.public_url,
        date=paper.date,
    )


def distinctive_segment(title: str) -> str:
    """The longest punctuation-free segment of a title (at most 30 characters)."""
    parts = [p for p in _SEGMENT_SPLIT.split(title) if p]
    best = max(parts, key=len) if parts else title
    return best[:30]


def _cnki_name(name: str) -> str:
    """A Han name as CNKI writes it, without the spaces a list spaces it with (`贾　楠`, padded to
    align two-character names in Word; `司马 相如`) and in simplified characters (`謝國思` is CNKI's
    谢国思: `script.simplified`); other names as written."""
    name = without_origin(name)  # `[美]波斯纳`: the country is not part of the name CNKI lists
    return simplified("".join(name.split())) if HAN.search(name) else name


def fallback_expression(entry: ParsedReference) -> Any:
    """篇名 fuzzy on the distinctive segment, OR first author AND source (when the entry has both),
    OR the DOI (when it has one; the DOI alone for a line holding only a DOI)."""
    items: list[dict[str, Any]] = []
    if entry.title:
        items.append({"field": "title", "match": "phrase", "value": distinctive_segment(simplified(entry.title))})
    if entry.title and entry.authors and entry.source:
        items.append({
            "op": "and",
            "items": [
                {"field": "first_author", "match": "exact", "value": _cnki_name(entry.authors[0])},
                {"field": "source", "match": "phrase", "value": simplified(entry.source)},
            ],
        })
    if entry.doi:
        items.append({"field": "doi", "match": "exact", "value": entry.doi})
    return parse_expression(items[0] if len(items) == 1 else {"op": "or", "items": items})


def spellings(title: str) -> list[str]:
    """An entry title's lookup spellings: as written and with full-width punctuation folded
    (`cite.refparse.title_spellings`), each with its variants (`links.title_variants`)."""
    return list(dict.fromkeys(v for s in title_spellings(title) for v in title_variants(s)))


class _Work:
    """Per-operation state: candidates per entry, export ids per record, searches made."""

    def __init__(self, parsed: list[ParsedReference]) -> None:
        self.parsed = parsed
        self.candidates: list[dict[str, RecordView]] = [{} for _ in parsed]
        self.searches: list[list[str]] = [[] for _ in parsed]
        self.failed: list[list[str]] = [[] for _ in parsed]  # searches whose request failed
        self.fallback_ran: set[int] = set()  # entries whose fallback search was made (or had none to make)
        self.export_ids: dict[str, str] = {}
        self.reused: dict[int, datetime] = {}  # entries answered by a recent not_found: when it was searched

    def add(self, i: int, view: RecordView) -> None:
        self.candidates[i].setdefault(view.record_ref, view)

    def judgement(self, i: int) -> Judgement:
        return judge(self.parsed[i], list(self.candidates[i].values()))


async def verify_references(
    inp: VerifyInput,
    store: Store,
    backend: SiteBackend,
    ctx: OperationContext,
    *,
    public_origins: tuple[str, ...] = (),
) -> VerifyResult:
    parsed = parse_references(inp.text, inp.references)
    if len(parsed) > MAX_REFERENCES:
        raise TooManyReferences(f"最多核对 {MAX_REFERENCES} 条参考文献", count=len(parsed))
    if not parsed:
        raise InvalidInput("没有读到参考文献条目")
    work = _Work(parsed)
    readable = [i for i, p in enumerate(parsed) if (p.title or p.doi) and not p.unparsable and not p.not_a_paper]
    for i in readable:
        local = local_matches(store, parsed[i].title, spellings) if parsed[i].title else []
        for paper in [*local, *(store.find_by_doi(parsed[i].doi) if parsed[i].doi else [])]:
            work.add(i, _view(paper))
        if work.candidates[i]:
            work.searches[i].append("本地记录")

    _reuse_misses(work, readable, store, fresh=inp.fresh)
    failure: BaseException | None = None
    try:
        await _exact_titles(work, [i for i in readable if parsed[i].title and _open(work, i)],
                            store, backend, ctx, public_origins)
        await _fallback(work, [i for i in readable if _open(work, i)],
                        store, backend, ctx, public_origins)
        await _export_details(work, readable, store, backend, ctx)
    except CnkiError as exc:
        if not is_fatal(exc):
            raise
        failure = exc
    except asyncio.CancelledError as halted:
        # a cancel or the time budget (the watchdog): the entries judged so far are the result,
        # as after a fatal error; nothing below awaits, so the cancellation goes on at once
        failure = halted

    _keep_misses(work, readable, store)
    result = _result(work, ctx.requests, store)
    if failure is not None:
        ctx.set_result(result)
        raise failure
    return result


MISS_REUSE = MISSES_KEPT  # 24 hours
REUSED_MISS = "{at} 已在知网查过，未找到；24 小时内不再查找（不花请求）：要重新查找用 fresh=true"


def _miss_key(entry: ParsedReference) -> str:
    """What an entry's searches ask (title, first author, source, DOI): entries alike ask alike."""
    title = reference_key(entry.title or "")
    return json.dumps([title, entry.authors[:1], simplified(entry.source or ""), entry.doi], ensure_ascii=False)


def _open(work: _Work, i: int) -> bool:
    return i not in work.reused and work.judgement(i).verdict == "not_found"


def _reuse_misses(work: _Work, readable: list[int], store: Store, *, fresh: bool) -> None:
    """Entries still not found locally whose same searches found nothing on CNKI within
    MISS_REUSE (kept in the store, across restarts: `Store.lookup_miss`) are not searched again unless `fresh`:
    requests are the scarce resource, and a rerun of a list mostly repeats its misses."""
    now = store.clock.now()
    for i in readable:
        miss = None if fresh or work.candidates[i] else store.lookup_miss("reference", _miss_key(work.parsed[i]), now)
        # what its searches asked, as this release keeps it; anything else is searched again
        if miss is not None and isinstance(miss[1], list) and all(isinstance(s, str) for s in miss[1]):
            work.reused[i] = miss[0]
            work.searches[i] = list(miss[1])
            work.fallback_ran.add(i)


def _keep_misses(work: _Work, readable: list[int], store: Store) -> None:
    """Remember the entries every search of this run answered with nothing (none failed)."""
    misses: dict[str, list[str]] = {}
    for i in readable:
        if i in work.reused or work.failed[i] or i not in work.fallback_ran or not work.searches[i]:
            continue
        if work.judgement(i).verdict == "not_found":
            misses[_miss_key(work.parsed[i])] = list(work.searches[i])
    store.keep_misses("reference", misses, store.clock.now())


def _store_rows(
    work: _Work, rows: list[GridRow], store: Store, public_origins: tuple[str, ...]
) -> list[tuple[GridRow, RecordView]]:
    papers = store.upsert_from_grid(rows, store.clock.now(), public_origins=public_origins)
    out = []
    for row, paper in zip(rows, papers, strict=True):
        if row.export_id:
            work.export_ids[paper.record_ref] = row.export_id
        out.append((row, _view(paper)))
    return out


async def _exact_titles(
    work: _Work, open_: list[int], store: Store, backend: SiteBackend, ctx: OperationContext,
    public_origins: tuple[str, ...],
) -> None:
    if not open_:
        return
    titles = {str(i): work.parsed[i].title or "" for i in open_}
    batches, _unsearchable = plan_batches(titles, spellings)
    ctx.set_stage("verify_titles", f"按篇名精确查找 {len(open_)} 条")
    gate = asyncio.Semaphore(WORKERS)

    async def one(batch: list[tuple[str, list[str]]]) -> None:
        async with gate:
            page = await lookup_batch(backend, batch, ctx, "verify_titles")
        if page is None:  # the failure is the operation's item error; the entries say it too
            for key, _group in batch:
                work.failed[int(key)].append("篇名精确检索")
            return
        stored = _store_rows(work, page.rows, store, public_origins)
        for key, _group in batch:
            i = int(key)
            work.searches[i].append("篇名精确检索")
            match = spelled(spellings(work.parsed[i].title or ""))
            for row, view in stored:
                if match(row.title):
                    work.add(i, view)

    await all_done(one(b) for b in batches)


async def _fallback(
    work: _Work, open_: list[int], store: Store, backend: SiteBackend, ctx: OperationContext,
    public_origins: tuple[str, ...],
) -> None:
    if not open_:
        return
    ctx.set_stage("verify_fallback", f"对 {len(open_)} 条做篇名模糊/作者+来源检索")
    # entries asking the same request (a reference listed twice) share one: rows are judged per entry
    asking: dict[str, tuple[GridRequest, list[int]]] = {}
    for i in open_:
        try:
            compiled = compile_expression(fallback_expression(work.parsed[i]))
        except InvalidInput:
            work.fallback_ran.add(i)
            continue
        request = GridRequest(subject=compiled.subject, anchor=compiled.anchor, page_size=PAGE_SIZE)
        asking.setdefault(request.model_dump_json(), (request, []))[1].append(i)
    gate = asyncio.Semaphore(WORKERS)
    done = 0

    async def one(request: GridRequest, entries: list[int]) -> None:
        nonlocal done
        async with gate:
            try:
                page = await backend.grid(request, op=ctx)
            except CnkiError as exc:
                if is_fatal(exc):
                    raise
                record_item_error(ctx, exc, None, "verify_fallback", title=work.parsed[entries[0]].title)
                for i in entries:
                    work.failed[i].append(f"{_fallback_label(work.parsed[i])}（{exc.code}）")
                return
        stored = _store_rows(work, page.rows, store, public_origins)
        for i in entries:
            entry = work.parsed[i]
            work.searches[i].append(_fallback_label(entry))
            work.fallback_ran.add(i)
            for _row, view in stored:
                if (
                    not entry.title  # a DOI-only search: its rows are that DOI's (judged once exported)
                    or title_similarity(entry.title or "", view.title) >= 50
                    or (entry.authors and view.authors and names_agree(entry.authors[0], view.authors[0]))
                    or (entry.doi and view.doi and doi_key(entry.doi) == doi_key(view.doi))
                ):
                    work.add(i, view)
        done += len(entries)
        ctx.progress(done, len(open_), "entries")

    await all_done(one(request, entries) for request, entries in asking.values())


def _fallback_label(entry: ParsedReference) -> str:
    if not entry.title:
        return f"DOI“{entry.doi}”"
    label = "篇名模糊检索（" + distinctive_segment(entry.title) + "）"
    if entry.authors and entry.source:
        label += f" 或 第一作者“{entry.authors[0]}”+来源“{entry.source}”"
    if entry.doi:
        label += f" 或 DOI“{entry.doi}”"
    return label


def _needs_export(entry: ParsedReference, view: RecordView) -> bool:
    return any(
        getattr(entry, name) is not None and getattr(view, name) is None
        for name in ("volume", "issue", "pages", "doi")
    )


async def _export_details(
    work: _Work, readable: list[int], store: Store, backend: SiteBackend, ctx: OperationContext
) -> None:
    """Volume, issue, pages and DOI an entry gives but its matched record lacks, from CNKI's batch
    export; what it answers is kept on the stored paper (`fill_by_export`), so a later run
    (or get_metadata, export_citations) does not ask again."""
    # judged as `_result` will judge it: an entry that fits a work's online-first and final records
    # is judged against the final one, whose volume, issue and pages must then be exported too
    matched = [(i, j.record.record_ref) for i in readable if (j := _one_work(work, i, store)).record is not None]
    # a line holding only a DOI: the rows its DOI search listed carry no DOI to fit by until exported
    matched += [(i, ref) for i in readable if not work.parsed[i].title for ref in work.candidates[i]]
    papers = store.papers_by_refs([ref for _, ref in matched])
    now = store.clock.now()
    wanted: dict[str, str] = {}
    for i, ref in matched:
        paper = papers.get(ref)
        view = work.candidates[i][ref]
        if paper is None or not _needs_export(work.parsed[i], view) or read_in_full(paper, now):
            continue
        export_id = work.export_ids.get(ref) or paper.export_id
        if export_id:
            wanted[export_id] = ref
    if not wanted:
        return
    ctx.set_stage("verify_export", f"批量导出 {len(wanted)} 条记录的卷期页码")

    def failed(error: CnkiError) -> None:
        record_item_error(ctx, error, None, "verify_export")

    await fill_by_export(store, backend, store.clock, wanted, ctx, on_error=failed)
    filled = store.papers_by_refs(wanted.values())
    for candidates in work.candidates:
        for ref, paper in filled.items():
            if ref in candidates:
                candidates[ref] = _view(paper)


def _corrected(view: RecordView, paper: Paper | None, entry: ParsedReference) -> str | None:
    """The matched record in GB/T 7714 as export_citations writes it (`cite_source`: the stored
    paper with its publication date, without CNKI's expiring detail token), with the volume,
    issue, pages and DOI this operation's export filled in. Never worse than the entry: what the
    record lacks (a book's place, a list-only record's volume, issue, pages, DOI) is taken from
    the entry rather than dropped or written as [出版地不详]."""
    data = cite_source(paper) if paper is not None else {**view.model_dump(), "url": stable_url(view.url)}
    for name in ("volume", "issue", "pages", "doi"):
        # an online-first paper has no volume, issue or pages yet: the entry's are not CNKI's
        theirs = None if data.get("online_first") and name != "doi" else getattr(entry, name)
        data[name] = data.get(name) or getattr(view, name) or theirs
    if entry.place and not from_paper(data).place:
        data["place"] = entry.place
    if entry.publisher and not data.get("publisher"):
        data["publisher"] = entry.publisher
    for name in ("year", "source"):  # a book CNKI lists without year or publisher: the entry's, not none
        if getattr(entry, name) and not data.get(name):
            data[name] = getattr(entry, name)
    try:
        text = cite_export([data], "gbt7714", missing="omit").text
    except CnkiError:
        return None
    return re.sub(r"^\[\d+\]\s*", "", text.strip()) or None


UNFINISHED_SEARCH = "查找未做完（预算用完或任务中止）：只做了篇名精确检索，没有做篇名模糊/作者+来源检索，不能据此判断不存在：用相同参数再调用 verify_references"
ONLINE_FIRST_NUMBERS = "知网记录为网络首发，尚无卷期页码：条目中的卷、期、页码无法核对，改正条目不含它们"


def _cites_numbers_online_first_lacks(entry: ParsedReference, paper: Paper) -> bool:
    """The entry gives a volume, issue or pages that the matched online-first paper lacks."""
    if not listed_online_first(paper.native):
        return False
    return any(getattr(entry, n) is not None and getattr(paper, n) is None for n in ("volume", "issue", "pages"))


def _one_work(work: _Work, i: int, store: Store) -> Judgement:
    """Entry `i` judged; an entry tied between records of one work that CNKI lists as its
    online-first and final records (both kept, `works.final_of`), or fitting the online-first
    one only by the volume, issue or pages it lacks, is judged against the final record alone: not
    called ambiguous, and not 'verified' against the online-first record, whose missing numbers
    agree with any (wrong) numbers the entry gives."""
    judged = work.judgement(i)
    entry = work.parsed[i]
    if judged.verdict == "ambiguous":
        asked = [c.record_ref for c in judged.candidates]
    elif judged.record is not None and any(
        getattr(entry, n) is not None and getattr(judged.record, n) is None for n in ("volume", "issue", "pages")
    ):
        # a fit by absence: the entry's numbers, which the (online-first) record lacks, are checked
        # against the final record; an entry citing the online-first record as such ([J/OL], its
        # online year, no numbers) stays judged against it
        asked = [judged.record.record_ref]
    else:
        return judged
    papers = store.papers_by_refs(list(work.candidates[i]))  # every record the entry's searches found
    chosen = [papers[ref] for ref in asked if ref in papers]
    kin = {p.record_ref: p for p in papers.values() if any(p.record_ref == c.record_ref or same_work(p, c) for c in chosen)}
    final = final_of(list(kin.values()))
    ref = next((asked for asked, p in papers.items() if final is not None and p.record_ref == final.record_ref), None)
    if ref is None or (judged.verdict != "ambiguous" and judged.record is not None and judged.record.record_ref == ref):
        return judged
    return judge(work.parsed[i], [work.candidates[i][ref]])


def _result(work: _Work, requests: int, store: Store) -> VerifyResult:
    """The entries as judged; a not-found entry whose fallback search never ran (the run ended
    early: a fatal error, a cancel, the budget) is said to be unjudged."""
    entries: list[VerifiedEntry] = []
    counts: dict[str, int] = {}
    judged = [_one_work(work, i, store) for i in range(len(work.parsed))]
    papers = store.papers_by_refs([j.record.record_ref for j in judged if j.record])
    for i, entry in enumerate(work.parsed):
        j = judged[i]
        if j.verdict == "not_found" and not work.searches[i]:
            j = j.model_copy(update={"warnings": [*j.warnings, "未能在知网查找（预算或错误），不能据此判断"]})
        elif j.verdict == "not_found" and work.failed[i]:
            failed = "；".join(work.failed[i])
            j = j.model_copy(update={"warnings": [*j.warnings, f"检索失败，不能据此判断不存在：{failed}"]})
        elif j.verdict == "not_found" and i not in work.fallback_ran and not entry.unparsable:
            # the operation stopped (budget, cancel) before this entry's fallback search
            j = j.model_copy(update={"warnings": [*j.warnings, UNFINISHED_SEARCH]})
        if i in work.reused:
            at = work.reused[i].astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
            j = j.model_copy(update={"warnings": [*j.warnings, REUSED_MISS.format(at=at)]})
        paper = papers.get(j.record.record_ref) if j.record else None
        if paper is not None and _cites_numbers_online_first_lacks(entry, paper):
            j = j.model_copy(update={"warnings": [*j.warnings, ONLINE_FIRST_NUMBERS]})
        counts[j.verdict] = counts.get(j.verdict, 0) + 1
        entries.append(
            VerifiedEntry(
                index=i + 1,
                text=entry.raw,
                verdict=j.verdict,
                fields=j.fields,
                differences=j.diffs,
                record=j.record,
                corrected=_corrected(j.record, papers.get(j.record.record_ref), entry) if j.record else None,
                candidates=list(j.candidates),
                searches=work.searches[i],
                warnings=j.warnings,
                reason=entry.unparsable or (NOT_A_PAPER_REASON[entry.not_a_paper] if entry.not_a_paper else None),
            )
        )
    return VerifyResult(entries=entries, counts=counts, requests=requests)
