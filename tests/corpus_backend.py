"""`CorpusBackend`: a SiteBackend answered in-process from the bundled simulator corpus, with no
browser and no HTTP. Grid requests are evaluated by the SIMULATOR's own QueryJson evaluator and
rendered by its page renderers; the production parsers read the HTML. So a search through it
exercises the real compiler -> simulator -> parser round trip (used by `scripts/bench.py quality`
and a component test).

Locators carry the corpus record id (`v=<id>`), so results map back to graded labels."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from typing import Literal
from urllib.parse import parse_qs, quote, unquote, urlsplit

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import DocumentNotFound
from cnki_mcp.models import DetailPage, ExportRecord, GridPage, HeaderIdentity, JournalPage
from cnki_mcp.parse.citations import CitationListPage, parse_citation_list, parse_citation_metrics
from cnki_mcp.parse.detail import parse_detail
from cnki_mcp.parse.export import parse_export
from cnki_mcp.parse.grid import parse_grid, parse_grid_head
from cnki_mcp.parse.journal import parse_journal
from cnki_mcp.sim import citation_api as simcite
from cnki_mcp.sim import grid as simgrid
from cnki_mcp.sim.corpus import Corpus
from cnki_mcp.sim.export import render_show_export
from cnki_mcp.sim.links import Visitor
from cnki_mcp.sim.pages.detail import render_detail
from cnki_mcp.sim.pages.journal import render_journal
from cnki_mcp.sim.query import Sort, highlight_terms, parse_query_json, search
from cnki_mcp.site.backend import SORT_FIELDS, FollowOnce, GridFollow, GridRequest, SiteOp
from cnki_mcp.site.grid_template import GridTemplate, rewrite_query_json

KNS = "https://kns.cnki.net"
NAVI = "https://navi.cnki.net"


class CorpusLinks:
    """Stable links: the detail `v` is the record id, the journal `p` its name."""

    def detail(self, record_id: str) -> str:
        return f"{KNS}/kcms2/article/abstract?v={record_id}"

    def journal(self, journal_name: str) -> str:
        return f"{NAVI}/knavi/detail?p={quote(journal_name)}"

    def author(self, name: str, institution: str | None = None) -> str:
        return f"{KNS}/kcms2/author/detail?v={quote(name)}&u={quote(institution or '')}"

    def reader(self, record_id: str) -> str:
        return f"{KNS}/reader?v={record_id}"

    def reader_entry(self, record_id: str) -> str:
        return f"{KNS}/bar/htmlread.html?lang=CHS&cacheID={record_id}"

    def download(self, record_id: str, fmt: Literal["pdf", "caj"]) -> str:
        return f"{KNS}/download?v={record_id}&type={fmt}"

    def login(self, return_url: str) -> str:
        return f"{KNS}/login/?ReturnURL={quote(return_url, safe='')}"

    def verify(self, return_url: str) -> str:
        return f"{KNS}/verify/home?returnUrl={quote(return_url, safe='')}"

    def kns(self, path: str) -> str:
        return KNS + (path if path.startswith("/") else "/" + path)

    def www(self, path: str) -> str:
        return "https://www.cnki.net" + (path if path.startswith("/") else "/" + path)


_TEMPLATE = GridTemplate(
    url=f"{KNS}/kns8s/brief/grid",
    fields=(),
    query_json={
        "QNode": {"QGroup": [{"Key": "Subject", "Title": "", "Logic": 0, "Items": [], "ChildItems": []}]}
    },
)


def record_id_of(locator: str | None) -> str | None:
    if not locator:
        return None
    values = parse_qs(urlsplit(locator).query).get("v")
    return values[0] if values else None


class CorpusBackend:
    def __init__(self, corpus: Corpus | None = None) -> None:
        self.corpus = corpus or Corpus.load()
        self.links = CorpusLinks()
        self.visitor = Visitor()
        self.requests: Counter[str] = Counter()
        self.citation_calls: list[tuple[str, str, str, int]] = []

    async def grid(
        self, request: GridRequest, op: SiteOp | None = None, follow: GridFollow | None = None
    ) -> GridPage:
        if op is not None:
            op.charge()
        self.requests["grid"] += 1
        q = parse_query_json(rewrite_query_json(_TEMPLATE, request))
        hits = search(self.corpus, q, Sort(SORT_FIELDS[request.sort]))
        size = request.page_size
        rows = hits[(request.page - 1) * size : request.page * size]
        page = simgrid.GridPage(rows, len(hits), request.page, size, f"cursor{request.page}!!")
        html = simgrid.render_grid(page, self.links, terms=highlight_terms(q))
        await FollowOnce(follow).offer(parse_grid_head(html))  # as CnkiSite, before the rows
        return parse_grid(html, _TEMPLATE.url)

    async def detail(self, locator: str, op: SiteOp | None = None) -> DetailPage:
        if op is not None:
            op.charge()
        self.requests["detail"] += 1
        record = self.corpus.by_id.get(record_id_of(locator) or "")
        if record is None:
            raise DocumentNotFound(locator="hidden")
        return parse_detail(render_detail(record, self.corpus, self.links, self.visitor), locator)

    async def journal(
        self, url: str, expected_source: str | None = None, op: SiteOp | None = None
    ) -> JournalPage:
        if op is not None:
            op.charge()
        self.requests["journal"] += 1
        name = unquote(parse_qs(urlsplit(url).query).get("p", [""])[0])
        # A paper published under a former title links to the journal's one navi page (which
        # lists the 曾用刊名), as on CNKI; the corpus indexes journals by current name only.
        journal = self.corpus.journal_by_name.get(name) or next(
            (j for j in self.corpus.journals if name in j.former_titles), None
        )
        if journal is None:
            raise DocumentNotFound(source=name)
        html = render_journal(journal, self.corpus, self.links, self.visitor)
        return parse_journal(html, url, expected_source)

    async def identity(self, op: SiteOp | None = None) -> HeaderIdentity:
        return HeaderIdentity(ready=True)

    async def export_records(self, export_ids: list[str], op: SiteOp | None = None) -> list[ExportRecord]:
        """The simulator's ShowExport answer for these rows (its renderer, our parser)."""
        if op is not None:
            op.charge()
        self.requests["export"] += 1
        by_native = {r.native_filename.upper(): r for r in self.corpus.records}
        found = [
            by_native[parts[1].upper()]
            for parts in (e.split("!") for e in export_ids[:20])
            if len(parts) >= 2 and parts[1].upper() in by_native
        ]
        return parse_export(render_show_export(found))

    async def citation_list(
        self, detail_url: str, kind: str, type_code: str, start: int, op: SiteOp | None = None
    ) -> CitationListPage:
        """The simulator's citation-API answer (its lists, our parser); one request per call."""
        if op is not None:
            op.charge()
        self.requests["citation_list"] += 1
        self.citation_calls.append((record_id_of(detail_url) or "", kind, type_code, start))
        record = self.corpus.by_id.get(record_id_of(detail_url) or "")
        if record is None:
            body = {"code": 1, "message": "参数错误", "data": None}
        else:
            data = simcite.list_page(self.corpus, record, self.links, kind, type_code, start, simcite.PAGE_SIZE)
            body = {"code": 0, "message": "", "data": data}
        return parse_citation_list(json.dumps(body, ensure_ascii=False), type_code, detail_url)

    async def citation_metrics(self, detail_url: str, op: SiteOp | None = None) -> dict[str, int]:
        if op is not None:
            op.charge()
        self.requests["citation_metrics"] += 1
        record = self.corpus.by_id.get(record_id_of(detail_url) or "")
        body = (
            {"code": 0, "message": "", "data": simcite.metrics(self.corpus, record)}
            if record is not None
            else {"code": 1, "message": "参数错误", "data": None}
        )
        return parse_citation_metrics(json.dumps(body, ensure_ascii=False))

    async def close(self) -> None:
        return None


class RecordingCorpus(CorpusBackend):
    """The corpus backend remembering each request it is sent, in order: `sent` (kind, key: a grid
    page's subject and page, an export's ids sorted, a journal's URL) and `started` (its time on
    `clock`, 0 without one). With `latency` (kind -> seconds) each answers that long after, on the
    fake `clock`. A request the budget refuses is neither remembered nor answered, as on the site."""

    def __init__(self, corpus: Corpus, clock: FakeClock | None = None, latency: dict[str, float] | None = None) -> None:
        super().__init__(corpus)
        self.clock = clock
        self.latency = latency or {}
        self.sent: list[tuple[str, str]] = []
        self.started: list[float] = []

    async def _send(self, kind: str, key: str, op: SiteOp | None) -> None:
        if op is not None:
            op.charge()
        self.sent.append((kind, key))
        self.started.append(self.clock.monotonic() if self.clock else 0.0)
        if self.clock is not None and self.latency.get(kind):
            await self.clock.sleep(self.latency[kind])

    async def grid(self, request: GridRequest, op: SiteOp | None = None, follow: GridFollow | None = None) -> GridPage:
        await self._send("grid", f"{request.subject}|{request.page}", op)
        return await super().grid(request, None, follow)

    async def export_records(self, export_ids: list[str], op: SiteOp | None = None) -> list[ExportRecord]:
        await self._send("export", ",".join(sorted(export_ids)), op)
        return await super().export_records(export_ids, None)

    async def journal(self, url: str, expected_source: str | None = None, op: SiteOp | None = None) -> JournalPage:
        await self._send("journal", url, op)
        return await super().journal(url, expected_source, None)


def containing_corpus(titles: list[str], decoys: int) -> Corpus:
    """A corpus where CNKI's exact title search (every title CONTAINING the phrase) ranks, for each
    of `titles`, `decoys` longer titles (the phrase also in their keywords and abstract) above the
    paper titled just that (ids `s0`, `s1`, ...)."""
    bundled = Corpus.load()
    model = bundled.by_id["r0001"]
    longer = [
        replace(model, id=f"d{n}{i:03d}", filename=f"DECOY{n}{i:03d}", title=f"论{t}与{t}之辨（{i}）",
                keywords=(t,), abstract=t * 3)
        for n, t in enumerate(titles) for i in range(decoys)
    ]  # fmt: skip
    own = [
        replace(model, id=f"s{n}", filename=f"SHORT{n}", title=t, keywords=(), abstract=None)
        for n, t in enumerate(titles)
    ]
    return Corpus(records=[*longer, *own], journals=bundled.journals)
