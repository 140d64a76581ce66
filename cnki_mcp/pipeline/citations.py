"""Reference and citing lists of one paper from the article page's citation JSON API
(`get_references`, `get_citing`; docs/citation-api.md, DESIGN.md "Citation graph").

Every list page is one request through the one limiter (the backend charges the operation), and
is kept in the store: the same page asked again (this call, a later call, a `continue`) costs
nothing. The six counts (`quotations/metrics`) come first: a list the counts say is empty costs
no list request at all. Lists are read from the paper's own detail link (its `v` token); no
detail page is visited for them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from cnki_mcp.cite.model import THESIS_KINDS, DocKind, doc_kind
from cnki_mcp.clock import Clock
from cnki_mcp.errors import DocumentNotFound, InvalidInput, LocatorExpired
from cnki_mcp.identity import (
    NODE_ID,
    NOT_A_TITLE,
    Paper,
    ambiguous,
    asked_title,
    detail_filename,
    detail_token,
    public_url,
    title_key,
)
from cnki_mcp.jobs import OperationContext
from cnki_mcp.keyed_lock import KeyedLocks
from cnki_mcp.parse.citations import (
    TYPE_CODES,
    CitationItem,
    CitationKind,
    CitationListPage,
    CitationType,
    codes_for,
)
from cnki_mcp.pipeline.links import local_matches
from cnki_mcp.query.compiler import compile_expression, title_lookup_expression
from cnki_mcp.site.backend import CitationBackend, GridRequest
from cnki_mcp.store import Store

MAX_LIMIT = 50
GRAPHS_LOOKED_AT = 20  # newest operations searched for the graph a node id came from
T = TypeVar("T")
# The farthest offset a call accepts. A paper may be cited thousands of times; a page of 10 costs
# one request (the stored ones none), so any entry is reachable by calling again.
MAX_OFFSET = 100_000


@dataclass
class PaperHandle:
    """A paper whose lists can be read: its key (file name), title and detail link."""

    key: str
    title: str
    detail_url: str | None
    record_ref: str | None = None
    item: CitationItem | None = None


def _not_stored(text: str) -> DocumentNotFound:
    return DocumentNotFound(
        "本地没有这篇文献：paper 可以是已保存文献的 record_ref、filename、url 或完整题名；"
        "record_ref 与 filename 来自 search_results、get_metadata 等工具的结果", paper=text,
    )  # fmt: skip


def resolve_paper(store: Store, paper: str) -> PaperHandle:
    """The paper a citation tool is given, in any form another tool showed it: a record_ref, a
    CNKI file name (a stored paper's, or one seen in a citation list), the detail `url` a tool
    showed, or the title (《》 around it or not) of a stored paper. DOCUMENT_NOT_FOUND whose
    `details.next_step` is a call that can be sent; IDENTITY_AMBIGUOUS for a title several
    stored papers carry."""
    text = paper.strip()
    if not text:
        raise InvalidInput("paper 不能为空", field="paper")
    stored = store.get(text) or store.find_by_filename(text)  # a record_ref, or a stored file name
    if stored is not None:
        return stored_handle(store, stored)
    node = store.citation_node(text.upper())
    if node is not None:
        return PaperHandle(node.key, node.title, node.detail_url, None, node)
    token = detail_token(text)
    if token:
        return _by_link(store, text, token)
    if name := detail_filename(text):  # a KCMS link names its paper by file name, as a citation list does
        named = store.find_by_filename(name)
        if named is not None:
            return stored_handle(store, named)
        node = store.citation_node(name.upper())
        if node is not None:
            return PaperHandle(node.key, node.title, node.detail_url, None, node)
        raise _not_stored(text)  # not a title: `get_metadata(titles=[file name])` found nothing
    if NODE_ID.fullmatch(text):
        raise _graph_node(store, text)
    if NOT_A_TITLE.fullmatch(text):
        # a record_ref, file name, link or DOI not stored here: a title search for it spends a
        # request that cannot find the paper
        raise _not_stored(text)
    title = asked_title(text)
    local = local_matches(store, title) if title else []
    if len(local) > 1:
        raise ambiguous(title, local)
    if local:
        return stored_handle(store, local[0])
    step = f"get_metadata(titles=[{title!r}])"
    raise DocumentNotFound(
        f"本地没有这篇文献（paper 可以是 record_ref、filename、url 或已保存文献的完整题名）：题名完整时用 {step} "
        "在知网按篇名定位并保存，再用相同参数调用本工具", paper=text, next_step=step,
    )  # fmt: skip


def _graph_node(store: Store, node_id: str) -> DocumentNotFound:
    """A citation_graph node id given as a paper. Ids number one result's nodes (`n1`, `n2`, ...
    in the order found), so every graph has its own `n21`: the id names no paper by itself. The
    error names the node of that id in the newest graph this server answered inline, for the
    client to check against the graph it read: its filename is what the tools take."""
    for op in store.list_operations(GRAPHS_LOOKED_AT):
        graph = (op.record.get("result") or {}).get("graph") if op.kind == "citations" else None
        node = next((n for n in (graph or {}).get("nodes") or [] if n.get("id") == node_id), None)
        if node is None:
            continue
        if not node.get("filename"):
            break  # a free-text reference: it has no lists to read
        return DocumentNotFound(
            f"{node_id} 是引文网络节点在一次结果里的编号，不是文献标识：改传节点的 filename（最近的引文网络 "
            f"{op.op_id} 中 {node_id} 为 {node['filename']}《{node.get('title') or ''}》）",
            paper=node_id, filename=node["filename"], title=node.get("title"), graph_operation_id=op.op_id,
        )  # fmt: skip
    return DocumentNotFound(
        f"{node_id} 是引文网络节点在一次结果里的编号，不是文献标识：改传该节点的 filename（没有 filename 的节点是"
        "未收录的参考文献，没有引文列表）", paper=node_id,
    )  # fmt: skip


def stored_handle(store: Store, stored: Paper) -> PaperHandle:
    filename = (stored.native.filename if stored.native else "") or ""
    key = filename.upper() or "R:" + stored.record_ref
    node = store.citation_node(key) if filename else None
    detail = stored.locator or (node.detail_url if node is not None else None)
    item = CitationItem(
        title=stored.title, authors=stored.author_names(), source=stored.source, year=stored.year,
        filename=filename or None, type=citation_type(stored.doc_type), detail_url=detail,
    )  # fmt: skip
    return PaperHandle(key, stored.title, detail, stored.record_ref, item)


def _by_link(store: Store, url: str, token: str) -> PaperHandle:
    """The one paper a detail link names: a stored paper, else a citation list's entry."""
    papers = store.find_by_detail_token(token)
    if len({p.record_ref for p in papers}) > 1:
        raise ambiguous(papers[0].title, papers)
    if papers:
        return stored_handle(store, papers[0])
    nodes = {n.key: n for n in store.citation_nodes_by_detail_token(token)} if not papers else {}
    if len(nodes) == 1:
        node = next(iter(nodes.values()))
        return PaperHandle(node.key, node.title, node.detail_url, None, node)
    raise DocumentNotFound(
        "这个链接不是本地保存过的文献的链接（链接会过期，本地只认工具给出过的链接）：改传 record_ref、"
        "filename 或完整题名；只有题名时可用 get_metadata 的 titles 按篇名取得 record_ref",
        paper=url,
    )  # fmt: skip


def citation_type(doc_type: str | None) -> CitationType:
    """A stored paper's CNKI type label (read by `cite.model.doc_kind`) as the citation lists
    name types; a yearbook is `other`, as the lists type CYFDREF."""
    kind = doc_kind(doc_type)
    if kind is DocKind.JOURNAL:
        return CitationType.FOREIGN if (doc_type or "").strip() == "外文期刊" else CitationType.JOURNAL
    if kind in THESIS_KINDS:
        return CitationType.THESIS
    return {DocKind.CONFERENCE: CitationType.CONFERENCE, DocKind.BOOK: CitationType.BOOK}.get(kind, CitationType.OTHER)


def handle_of(item: CitationItem) -> PaperHandle:
    return PaperHandle(item.key, item.title, item.detail_url, None, item)


@dataclass
class Collected:
    """What one paper's list (one kind, some types) held, as far as it was read."""

    total: int
    totals_by_type: dict[str, int]
    items: list[CitationItem]
    complete: bool  # `items` holds every item up to `total`
    counts: dict[str, int] = field(default_factory=dict)  # the six counts (quotations/metrics)


@dataclass
class CitationReader:
    """Reads list pages store-first; counts the requests it made and the pages the store gave.

    `flights`: one request per list page (and per paper's counts) at a time among the readers
    sharing it. The server gives every operation its one map (`Services.citation_flights`), so
    operations that need the same page at once (two clients asking for one paper's references,
    two graphs sharing a node) wait for the one asking, then take its answer from the store; a
    reader of another server (another store, another event loop) never waits for them."""

    store: Store
    backend: CitationBackend
    clock: Clock
    flights: KeyedLocks = field(default_factory=KeyedLocks)
    pages_from_store: int = 0
    requests: int = 0
    dead: set[str] = field(default_factory=set)  # papers whose link the API refused in this run
    relocated: set[str] = field(default_factory=set)  # papers looked up by title in this run

    async def metrics(self, h: PaperHandle, ctx: OperationContext) -> dict[str, int]:
        async with self.flights.hold(f"metrics|{h.key}"):
            return await self._metrics(h, ctx)

    async def _metrics(self, h: PaperHandle, ctx: OperationContext) -> dict[str, int]:
        cached = self.store.citation_metrics(h.key, self.clock.now())
        if cached is not None:
            self.pages_from_store += 1
            return cached
        counts = await self._ask(h, ctx, lambda url: self.backend.citation_metrics(url, op=ctx))
        self.store.save_citation_metrics(h.key, counts, self.clock.now())
        ctx.store_requests()  # with the answer: a crash leaves the requests spent on record
        return counts

    async def _ask(self, h: PaperHandle, ctx: OperationContext, request: Callable[[str], Awaitable[T]]) -> T:
        """One API request with the paper's link; a link refused (or none at all) is looked up
        by title once, then asked again. `requests` counts the requests made, the refused one
        included, none for a paper that had no link to ask with."""
        try:
            url = self._url(h)
        except LocatorExpired:
            url = None
        if url is not None:
            try:
                answer = await request(url)
            except LocatorExpired:
                self.requests += 1  # the refused request was made (and charged) too
                if not await self._relocate(h, ctx):
                    raise
            else:
                self.requests += 1
                return answer
        elif not await self._relocate(h, ctx):
            raise LocatorExpired("这篇文献没有可用的详情页链接", paper=h.title)
        answer = await request(self._url(h))
        self.requests += 1
        return answer

    async def _relocate(self, h: PaperHandle, ctx: OperationContext) -> bool:
        """A dead detail link (the token expired): one exact-title grid request finds the paper's
        current link (no detail page); False when the title finds no single paper."""
        if h.key in self.relocated or not h.title:
            return False
        self.relocated.add(h.key)
        compiled = compile_expression(title_lookup_expression([h.title]))
        grid = await self.backend.grid(GridRequest(subject=compiled.subject, anchor=compiled.anchor), op=ctx)
        self.requests += 1
        rows = [r for r in grid.rows if title_key(r.title) == title_key(h.title) and r.detail_url]
        same = [r for r in rows if (r.native.filename or "").upper() == h.key]
        pick = same or rows
        if len({(r.native.filename or r.detail_url or "").upper() for r in pick}) != 1:
            return False
        h.detail_url = pick[0].detail_url
        if h.record_ref:
            self.store.upsert_from_grid(pick[:1], self.clock.now())  # the stored paper gets the new link
        if h.item is not None:
            h.item = h.item.model_copy(update={"detail_url": h.detail_url})
            if h.record_ref is None:  # a stored paper keeps its new link in the store (above)
                self.store.save_citation_node(h.item, self.clock.now())
        return True

    async def page(
        self, h: PaperHandle, kind: str, code: str, start: int, ctx: OperationContext, *, fresh: bool = False
    ) -> CitationListPage:
        """One list page: from the store unless `fresh` (the stored one is known to be stale)."""
        async with self.flights.hold(f"page|{h.key}|{kind}|{code}|{start}"):
            return await self._page(h, kind, code, start, ctx, fresh)

    async def _page(
        self, h: PaperHandle, kind: str, code: str, start: int, ctx: OperationContext, fresh: bool
    ) -> CitationListPage:
        cached = None if fresh else self.store.citation_page(h.key, kind, code, start, self.clock.now())
        if cached is not None:
            self.pages_from_store += 1
            return cached
        page = await self._ask(h, ctx, lambda url: self.backend.citation_list(url, kind, code, start, op=ctx))
        self.store.save_citation_page(h.key, kind, page, self.clock.now())
        ctx.store_requests()  # with the page: `continue` after a crash keeps to the budget
        return page

    def _latest_link(self, h: PaperHandle) -> None:
        """A list entry's link as last seen: the stored node is rewritten by every page naming
        the paper and by a title lookup that found its new link, while the entry may come from
        an older stored page (a `continue`, another walk) that still holds a dead one."""
        if h.record_ref is not None or h.item is None:
            return  # a stored paper's link is the paper's own (renewed on the paper by _relocate)
        node = self.store.citation_node(h.key)
        if node is not None and node.detail_url and node.detail_url != h.detail_url:
            h.detail_url = node.detail_url
            h.item = h.item.model_copy(update={"detail_url": node.detail_url})

    def _url(self, h: PaperHandle) -> str:
        if not h.detail_url or h.key in self.dead:
            raise LocatorExpired("这篇文献没有可用的详情页链接", paper=h.title)
        return h.detail_url

    async def collect(
        self, h: PaperHandle, kind: str, types: list[CitationType] | None, limit: int | None, ctx: OperationContext
    ) -> Collected:
        """The first `limit` items of the merged list (databases in the page's order); every
        item with `limit` None. `complete` says the items returned are the whole list."""
        self._latest_link(h)
        try:
            counts = await self.metrics(h, ctx)
        except LocatorExpired:
            self.dead.add(h.key)
            raise
        if counts.get(kind, 0) == 0:
            return Collected(0, {}, [], True, counts)
        by_code: dict[str, list[CitationItem]] = {}
        totals: dict[str, int] = {}
        for code in codes_for(types):
            first = await self.page(h, kind, code, 1, ctx)
            totals[code] = first.total
            by_code[code] = list(first.items)
        before = 0
        for code in by_code:
            items = by_code[code]
            fresh = False
            while len(items) < totals[code] and (limit is None or before + len(items) < limit):
                more = await self.page(h, kind, code, len(items) + 1, ctx, fresh=fresh)
                if more.total != totals[code] and not fresh:
                    # The list changed between two of its pages (one kept from an earlier read:
                    # a new citing paper shifts every entry by one). Pages of two states would
                    # repeat an entry and miss another: read it again from its first page.
                    fresh = True
                    first = await self.page(h, kind, code, 1, ctx, fresh=True)
                    totals[code], items[:] = first.total, list(first.items)
                    continue
                if not more.items:
                    break  # the site promised more than it gave: stop rather than loop
                items.extend(more.items)
            before += len(items)
        merged = [i for code in by_code for i in by_code[code]]
        by_type: dict[str, int] = {}
        for code, n in totals.items():
            if n:
                t = codes_type(code)
                by_type[t] = by_type.get(t, 0) + n
        total = sum(totals.values())
        items = merged if limit is None else merged[:limit]
        return Collected(total, by_type, items, len(items) >= total, counts)


def codes_type(code: str) -> str:
    return TYPE_CODES.get(code, CitationType.OTHER).value


# --- the get_references / get_citing tools ---------------------------------------------------


class CitationListInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    paper: str = Field(min_length=1, max_length=200)
    types: list[CitationType] | None = None
    offset: int = Field(default=0, ge=0, le=MAX_OFFSET)
    limit: int = Field(default=20, ge=1, le=MAX_LIMIT)


class CitationEntry(BaseModel):
    """One listed paper as the tools show it (the detail link only in its shareable form)."""

    model_config = ConfigDict(extra="forbid")

    title: str
    authors: list[str] = Field(default_factory=list)
    source: str | None = None
    year: int | None = None
    type: CitationType
    filename: str | None = None
    # the stored paper with this file name: what get_metadata, export_citations, read_online_html
    # and download_paper take (they refuse the file name); None when only the list knows it
    record_ref: str | None = None
    cited: int | None = None
    url: str | None = None


class CitationListResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    paper: dict[str, Any]
    kind: Literal["references", "citations"]
    total: int
    by_type: dict[str, int] = Field(default_factory=dict)
    counts: dict[str, int] = Field(default_factory=dict)  # CNKI's six counts for the paper
    offset: int
    items: list[CitationEntry] = Field(default_factory=list)
    next_offset: int | None = None
    warnings: list[str] = Field(default_factory=list, description="知网给出的条目少于其总数时说明")
    requests: int = 0
    pages_from_store: int = 0


def entry_of(item: CitationItem, origins: tuple[str, ...] = (), record_ref: str | None = None) -> CitationEntry:
    return CitationEntry(
        title=item.title,
        authors=item.authors[:10],
        source=item.source,
        year=item.year,
        type=item.type,
        filename=item.filename,
        record_ref=record_ref,
        cited=item.cited,
        url=public_url(item.detail_url, origins),
    )


async def citation_list(
    store: Store,
    backend: CitationBackend,
    clock: Clock,
    inp: CitationListInput,
    kind: Literal["references", "citations"],
    ctx: OperationContext,
    origins: tuple[str, ...] = (),
    flights: KeyedLocks | None = None,
) -> CitationListResult:
    h = resolve_paper(store, inp.paper)
    reader = CitationReader(store, backend, clock, KeyedLocks() if flights is None else flights)
    ctx.set_stage("citations", f"读取《{h.title[:40]}》的{'参考文献' if kind == 'references' else '引证文献'}")
    got = await reader.collect(h, CitationKind(kind).value, inp.types, inp.offset + inp.limit, ctx)
    window = got.items[inp.offset : inp.offset + inp.limit]
    end = inp.offset + len(window)
    # fewer items than asked for: every list was read to its end, and what CNKI gave is all there
    # is, even when its totals promised more (a later page answered empty): no further page exists
    exhausted = len(got.items) < inp.offset + inp.limit
    warnings = []
    if exhausted and len(got.items) < got.total:
        warnings.append(f"知网只给出了 {len(got.items)} 条，少于它报的总数 {got.total}：其余条目读不到")
    beyond = end > MAX_OFFSET and end < got.total
    if beyond:
        warnings.append(f"offset 最大 {MAX_OFFSET}：其后的 {got.total - end} 条无法分页读取")
    stored = store.refs_by_filenames(i.filename for i in window if i.filename)
    return CitationListResult(
        paper={"title": h.title, "filename": h.item.filename if h.item else h.key, "record_ref": h.record_ref},
        kind=kind,
        total=got.total,
        by_type=got.totals_by_type,
        counts=got.counts,
        offset=inp.offset,
        items=[entry_of(i, origins, stored.get("".join((i.filename or "").split()).upper())) for i in window],
        next_offset=end if end < got.total and not exhausted and not beyond else None,
        warnings=warnings,
        requests=reader.requests,
        pages_from_store=reader.pages_from_store,
    )

