"""CNKI requests across an agent session (docs/benchmarks.md "Requests across an agent session"):
the production server on the SDK's in-memory client, real headless Chromium, the simulator, and
its request log counted per tool call by kind. The session runs four times: at once, a minute
later, two minutes later in a new server process on the same data directory (what a restart
alone costs: memory caches gone, nothing in the store stale), and a day later in another new
process (the server's wall clock moved on; the store's freshness windows read it).
Run: PYTHONPATH=. .venv/bin/python scripts/bench_session.py [--browser /usr/bin/chromium]"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mcp import Client  # noqa: E402

from cnki_mcp.clock import SystemClock  # noqa: E402
from cnki_mcp.sim.reqlog import LogEntry  # noqa: E402
from cnki_mcp.sim.server import SimServer  # noqa: E402
from tests.site_stack import in_memory_server, is_page_form, sim_settings  # noqa: E402

QUESTION: dict[str, Any] = {
    "query": "违约金过高时法院如何酌减",
    "concept_groups": [["违约金", "约定违约金"], ["酌减", "调整"]],
    "limit": 10,
}
FIELDS = ["abstract", "keywords", "funds", "doi", "pages", "institutions"]


class ShiftedClock(SystemClock):
    """The system clock whose wall time can be moved on (a day later); spacing stays real."""

    def __init__(self) -> None:
        self.shift = timedelta(0)

    def now(self) -> datetime:
        return datetime.now(UTC) + self.shift


def kind(e: LogEntry) -> str:
    p = e.path
    if p.startswith("/kns8s/brief/grid"):
        return "grid(form)" if is_page_form(e) else "grid"
    if p.startswith("/kcms2/article/abstract"):
        return "detail"
    if p.startswith("/knavi/"):
        return "journal"
    if p.lower().startswith("/dm8/"):
        return "export"
    if p.startswith("/restapi/citation-api"):
        return "cite-api"
    if p.startswith("/restapi/"):
        return "restapi"
    if p.startswith("/kns8s/AdvSearch"):
        return "advsearch"
    if p.startswith(("/bar/download", "/docdown/")):
        return "download"
    if p.startswith(("/bar/htmlread", "/reader/")):
        return "reader"
    if p in ("/", "/kns8s/", "/favicon.ico"):
        return "home" if p != "/favicon.ico" else "icon"
    return p


class Session:
    def __init__(self, client: Client, sim: SimServer) -> None:
        self.client = client
        self.sim = sim
        self.rows: list[tuple[str, Counter[str], str]] = []

    async def raw(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        result = await asyncio.wait_for(self.client.call_tool(tool, args), 600)
        data = result.structured_content
        if result.is_error:
            return {"error": data or [c.text for c in result.content if hasattr(c, "text")]}
        assert isinstance(data, dict), result.content
        while data.get("status") in ("running", "awaiting_user") and "operation_id" in data:
            nxt = await self.client.call_tool(
                "operation_status", {"operation_id": data["operation_id"], "wait_seconds": 20}
            )
            data = nxt.structured_content  # type: ignore[assignment]
        return data

    async def step(self, label: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0.5)  # let a request the last call left in flight (a capture click) land
        before = len(self.sim.requests)
        data = await self.raw(tool, args)
        await asyncio.sleep(0.5)
        new = self.sim.requests[before:]
        kinds = Counter(kind(e) for e in new)
        for e in new:
            if kind(e) in ("grid", "detail", "export", "journal"):
                p = {
                    k: e.params.get(k)
                    for k in ("query", "id", "ids", "p", "journal", "pageNum")
                    if e.params.get(k)
                }
                print(f"  {label}: {kind(e)} {json.dumps(p, ensure_ascii=False)[:300]}", file=sys.stderr)
        note = ""
        if "error" in data:
            note = "error " + json.dumps(data["error"], ensure_ascii=False)[:160]
        elif data.get("status") not in (None, "completed"):
            note = f"status {data.get('status')} {json.dumps(data.get('errors'), ensure_ascii=False)[:160]}"
        self.rows.append((label, kinds, note))
        return data


def result_of(data: dict[str, Any]) -> dict[str, Any]:
    return data.get("result", data) if isinstance(data.get("result"), dict) else data


async def run_session(s: Session, ctx: dict[str, Any]) -> None:
    search = await s.step("search", "search", dict(QUESTION))
    sid = result_of(search).get("search_id") or search.get("search_id")
    ctx["search_id"] = sid
    compact = await s.step("search_results compact", "search_results", {"search_id": sid, "view": "compact"})
    records = result_of(compact).get("results") or []
    refs = [r["record_ref"] for r in records][:10]
    ctx.setdefault("refs", refs)
    refs = ctx["refs"]
    await s.step("get_metadata 10 refs, 6 fields", "get_metadata", {"record_refs": refs, "fields": FIELDS})
    await s.step("export_citations gbt7714", "export_citations", {"search_id": sid, "format": "gbt7714"})
    await s.step("export_citations bibtex", "export_citations", {"search_id": sid, "format": "bibtex"})
    paper = ctx["paper"]
    first = await s.step(
        "read_online_html", "read_online_html", {"record_ref": paper, "max_characters": 2000}
    )
    nxt = result_of(first).get("next_offset")
    if nxt:
        await s.step("read_online_html next offset", "read_online_html",
                     {"record_ref": paper, "offset": nxt, "max_characters": 2000})  # fmt: skip
    await s.step("get_references", "get_references", {"paper": paper})
    citing = await s.step("get_citing", "get_citing", {"paper": paper})
    ctx["citing_titles"] = [i["title"] for i in result_of(citing).get("items") or []][:2]
    await s.step("citation_graph depth 1", "citation_graph", {"seeds": [paper]})
    dl = await s.step("download_paper pdf", "download_paper", {"record_ref": paper, "format": "pdf"})
    ctx["download"] = json.dumps(result_of(dl), ensure_ascii=False)[:300]
    await s.step("read_pdf_text", "read_pdf_text", {"record_ref": paper, "max_characters": 2000})
    await s.step("verify_references 5 (3 listed)", "verify_references", {"references": ctx["references"]})
    await s.step(
        "get_metadata 3 listed titles, abstract",
        "get_metadata",
        {"titles": ctx["titles"], "fields": ["abstract"]},
    )
    await s.step(
        "get_metadata 10 refs, export fields",
        "get_metadata",
        {"record_refs": refs, "fields": ["abstract", "keywords", "doi", "pages"]},
    )
    await s.step("export_citations 3 titles", "export_citations", {"titles": ctx["titles"], "format": "ris"})
    await s.step(
        "get_metadata 10 refs, quality",
        "get_metadata",
        {"record_refs": refs, "fields": ["abstract"], "quality": True},
    )
    await s.step(
        "read_online_html by title", "read_online_html", {"title": ctx["paper_title"], "max_characters": 2000}
    )
    await s.step("get_references by title", "get_references", {"paper": ctx["paper_title"]})
    await s.step("link_references 4 titles", "link_references", {"text": ctx["draft"]})
    await s.step("get_citing journal only", "get_citing", {"paper": paper, "types": ["journal"]})
    cited = await s.step("get_references again", "get_references", {"paper": paper})
    items = result_of(cited).get("items") or []
    cited_refs = [i["record_ref"] for i in items if i.get("record_ref")][:3]
    if cited_refs:
        await s.step(
            "get_metadata 3 cited refs, abstract",
            "get_metadata",
            {"record_refs": cited_refs, "fields": ["abstract"]},
        )
    await s.step(
        "citation_graph depth 2, 20 nodes", "citation_graph", {"seeds": [paper], "depth": 2, "max_nodes": 20}
    )
    await s.step("verify_references 2 made up", "verify_references", {"references": ctx["made_up"]})
    await s.step("link_references lookup_missing", "link_references",
                 {"text": ctx["draft"] + "另见《" + ctx["other_title"] + "》。", "lookup_missing": True})  # fmt: skip
    await s.step("session_status", "session_status", {})
    await s.step(
        "get_metadata 2 citing titles, abstract",
        "get_metadata",
        {"titles": ctx["citing_titles"], "fields": ["abstract"]},
    )
    await s.step(
        "get_metadata title verify found",
        "get_metadata",
        {"titles": [ctx["verify_found"]], "fields": ["abstract"]},
    )
    await s.step("search limit 20", "search", {**QUESTION, "limit": 20})
    await s.step(
        "search groups reordered", "search", {**QUESTION, "concept_groups": QUESTION["concept_groups"][::-1]}
    )
    await s.step(
        "get_metadata search_id eligible",
        "get_metadata",
        {"search_id": sid, "scope": "eligible", "fields": ["abstract", "keywords"]},
    )
    await s.step("verify_references as one text", "verify_references", {"text": "\n".join(ctx["references"])})
    await s.step("download_paper caj", "download_paper", {"record_ref": paper, "format": "caj"})
    await s.step(
        "structured_search title 违约金 酌减",
        "structured_search",
        {
            "expression": {
                "op": "and",
                "items": [{"field": "title", "value": "违约金"}, {"field": "title", "value": "酌减"}],
            }
        },
    )
    await s.step(
        "find_citation_path paper -> cited",
        "find_citation_path",
        {"source": paper, "target": ctx["citing_titles"][0]},
    )
    await s.step(
        "get_metadata title link found",
        "get_metadata",
        {"titles": [ctx["other_title"]], "fields": ["abstract"]},
    )


def references_from(sim: SimServer, meta: list[dict[str, Any]]) -> tuple[list[str], str, str]:
    """5 references in GB/T 7714 form: 3 of the search's listed papers and 2 others of the corpus;
    a draft citing 4 of them by 《title》; the title of the first other paper."""
    listed = [m["title"] for m in meta[:3]]
    chosen = [r for r in sim.corpus.records if r.title in listed][:3]
    others = [r for r in sim.corpus.records if r.title not in listed and r.type == "期刊"][:2]
    refs = []
    for r in chosen + others:
        authors = ",".join(a.name for a in r.authors[:3])
        refs.append(f"{authors}.{r.title}[J].{r.source},{r.year}.")
    draft = "".join(f"正如《{r.title}》所述，" for r in (chosen + others)[:4]) + "此为草稿。"
    return refs, draft, others[0].title


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--browser", default="/usr/bin/chromium")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    clock = ShiftedClock()
    tables: dict[str, list[Any]] = {}
    with SimServer() as sim:
        data = Path(tempfile.mkdtemp()) / "data"
        settings = sim_settings(
            data, sim.origin, args.browser, request_interval_ms=30, inline_wait_seconds=0.0
        )
        async with in_memory_server(settings, clock) as (client, _services):
            s = Session(client, sim)
            ctx: dict[str, Any] = {}
            # the references and the draft are built from the first search's listing
            first = await s.raw("search", dict(QUESTION))
            sid = result_of(first).get("search_id")
            listing = await s.raw("search_results", {"search_id": sid, "view": "compact"})
            recs = result_of(listing).get("results") or []
            ctx["references"], ctx["draft"], ctx["verify_found"] = references_from(sim, recs)
            ctx["refs"] = [r["record_ref"] for r in recs][:10]
            bodies = {r.title for r in sim.corpus.records if r.fulltext}
            ctx["paper"], ctx["paper_title"] = next(
                (r["record_ref"], r["title"]) for r in recs if r["title"] in bodies
            )
            ctx["titles"] = [r["title"] for r in recs[:3]]
            ctx["made_up"] = ["王某.论违约金的量子纠缠属性[J].法学研究,2020(3):1-20.",
                              "李某.合同责任与火星殖民地的司法实践[J].中国法学,2021(1):5-9."]  # fmt: skip
            listed = {r["title"] for r in recs}
            ctx["other_title"] = next(
                r.title for r in sim.corpus.records[40:] if r.type == "期刊" and r.title not in listed
            )
            s.rows.clear()
            sim.reset()
            # the measured session starts from a fresh data directory in a second server
        data2 = Path(tempfile.mkdtemp()) / "data"
        settings = sim_settings(
            data2, sim.origin, args.browser, request_interval_ms=30, inline_wait_seconds=0.0
        )
        async with in_memory_server(settings, clock) as (client, _services):
            for label, shift in (("first", timedelta(0)), ("a minute later", timedelta(minutes=1))):
                clock.shift = shift
                s = Session(client, sim)
                await run_session(s, ctx)
                tables[label] = s.rows
        # a restart: a new server process on the same data directory (memory caches gone), then the
        # next day another one
        for label, shift in (
            ("restarted 2 minutes later", timedelta(minutes=2)),
            ("a day later (restarted)", timedelta(days=1, minutes=1)),
        ):
            clock.shift = shift
            async with in_memory_server(settings, clock) as (client, _services):
                s = Session(client, sim)
                await run_session(s, ctx)
                tables[label] = s.rows
    print("download:", ctx.get("download"))
    labels = [r[0] for r in tables["first"]]
    print("| call | " + " | ".join(tables) + " |")
    print("|---" * (len(tables) + 1) + "|")
    for i, lab in enumerate(labels):
        cells = []
        for t in tables.values():
            _, kinds, note = t[i]
            kinds.pop("icon", None)
            total = sum(kinds.values())
            detail = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
            cells.append(f"{total}" + (f" ({detail})" if detail else "") + (f" [{note}]" if note else ""))
        print(f"| {lab} | " + " | ".join(cells) + " |")
    totals = [sum(sum(k.values()) for _, k, _ in t) for t in tables.values()]
    print("| **session** | " + " | ".join(str(t) for t in totals) + " |")
    if args.json:
        args.json.write_text(json.dumps({k: [(a, dict(b), c) for a, b, c in v] for k, v in tables.items()},
                                        ensure_ascii=False, indent=1))  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
