"""`SimSite`: a fake SiteBackend modelled on the reference's backend-level simulator (site-rules.md §10.2).

Channels: q1 (SU) lists papers 0–119, q2 (TI) 30–149, q3 (KY) 60–179; a feedback channel lists 20
papers from 1000 (its first keyword) or 2000 (any other); a structured search lists 179..0 (a
deliberately non-relevance order); exact-title lookups return the rows with those titles. Pages
carry a next-page cursor. Every call charges the operation, sleeps a latency on the fake clock and
is logged by a request key."""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import AccessDenied, CnkiError
from cnki_mcp.jobs import Job, JobManager, MemorySink, OperationContext, OperationKind, OperationRecord
from cnki_mcp.models import (
    Author,
    DetailPage,
    ExportRecord,
    GridHead,
    GridPage,
    GridRow,
    HeaderIdentity,
    IdentityBasis,
    JournalPage,
    JournalState,
    NativeId,
)
from cnki_mcp.pipeline.models import SearchInput
from cnki_mcp.pipeline.research import ResearchPipeline
from cnki_mcp.query.segment import JiebaSegmenter
from cnki_mcp.site.backend import FollowOnce, GridRequest, SiteOp
from cnki_mcp.store import Store

ABSTRACT = "自动驾驶产品责任的归责与风险分配"
KEYWORDS = ["自动驾驶", "产品责任", "风险分配", "算法责任"]
RANGES = {"q1": range(0, 120), "q2": range(30, 150), "q3": range(60, 180)}
AMBIGUOUS_TITLE = "同名论文"


def title_of(i: int) -> str:
    return f"自动驾驶产品责任研究 {i:03d}"


def source_of(i: int) -> str:
    return f"法学期刊{i % 15}"


def row_of(i: int, ordinal: int, *, export: bool = False) -> GridRow:
    return GridRow(
        export_id=f"CJFD!SIM{i:04d}!1" if export else None,
        # the real list links each source to its journal page; the older fake rows had no link
        source_url=f"https://navi.cnki.net/{source_of(i)}" if export else None,
        ordinal=ordinal,
        title=title_of(i),
        detail_url=f"https://kns.cnki.net/kcms2/article/abstract?v={i}",
        native=NativeId(dbname="CJFD", filename=f"SIM{i:04d}"),
        authors=[f"作者{i}"],
        source=source_of(i),
        year=2020 + i % 6,
        doc_type="期刊",
        cited=i % 7,
    )


def _values(subject: dict[str, Any]) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    for group in subject.get("ChildItems", []):
        for item in group.get("Items", []):
            out.append((item["Field"], item["Operator"], str(item["Value"]).strip("\"'")))
    return out


class SimSite:
    def __init__(
        self,
        clock: FakeClock,
        *,
        latency: float = 0.5,
        failing_details: set[int] | None = None,
        feedback_first: str = "算法责任",
        exports: bool = False,
        missing_exports: set[int] | None = None,
    ) -> None:
        """`exports`: rows carry export ids and `export_records` answers them (20 per call),
        except the papers in `missing_exports`, which the export leaves out."""
        self.clock = clock
        self.latency = latency
        self.failing_details = failing_details or set()
        self.feedback_first = feedback_first
        self.exports = exports
        self.missing_exports = missing_exports or set()
        self.log: list[tuple[Any, ...]] = []
        self.page_sizes: Counter[int] = Counter()
        self.in_flight = 0
        self.peak = 0

    async def _call(self, op: SiteOp | None, key: tuple[Any, ...]) -> None:
        if op is not None:
            op.charge()
        self.log.append(key)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await self.clock.sleep(self.latency)
        finally:
            self.in_flight -= 1

    def count(self, kind: str) -> int:
        return sum(1 for k in self.log if k[0] == kind)

    def channel(self, request: GridRequest) -> tuple[str, list[int]]:
        values = _values(request.subject)
        fields = {f for f, _, _ in values}
        if values and all(f == "TI" and op == "DEFAULT" for f, op, _ in values):
            return "lookup", []
        extra = [v for f, _, v in values if f == "SU" and v not in ("自动驾驶", "产品责任")]
        if extra and fields == {"SU"}:
            start = 1000 if extra[0] == self.feedback_first else 2000
            return f"feedback:{extra[0]}", list(range(start, start + 20))
        if fields == {"SU"}:
            return "q1", list(RANGES["q1"])
        if fields == {"TI"}:
            return "q2", list(RANGES["q2"])
        if fields == {"KY"}:
            return "q3", list(RANGES["q3"])
        return "native", list(range(179, -1, -1))

    async def grid(self, request: GridRequest, op: SiteOp | None = None, follow: Any = None) -> GridPage:
        name, papers = self.channel(request)
        self.page_sizes[request.page_size] += 1
        if name == "lookup":
            titles = [v for _, _, v in _values(request.subject)]
            await self._call(op, ("grid", "lookup", tuple(titles)))
            return self._lookup(titles)
        await self._call(op, ("grid", name, request.page))
        size = request.page_size
        start = (request.page - 1) * size
        chunk = papers[start : start + size]
        rows = [row_of(i, start + k + 1, export=self.exports) for k, i in enumerate(chunk)]
        pages = max(1, math.ceil(len(papers) / size))
        # a cursor for the next page, as CNKI's pages carry (the fake does not check it)
        cursor = f"{name}-{request.page + 1}" if request.page < pages else None
        page = GridPage(rows=rows, total=len(papers), page=request.page, page_count=pages, turnpage=cursor)
        await FollowOnce(follow).offer(GridHead.of(page))  # the head, as CnkiSite gives it
        return page

    def _lookup(self, titles: list[str]) -> GridPage:
        rows: list[GridRow] = []
        for title in titles:
            if title == AMBIGUOUS_TITLE:
                for k in (1, 2):
                    rows.append(
                        GridRow(
                            title=AMBIGUOUS_TITLE,
                            detail_url=f"https://kns.cnki.net/kcms2/article/abstract?v=dup{k}",
                            native=NativeId(dbname="CJFD", filename=f"DUP{k}"),
                            authors=[f"同名作者{k}"],
                        )
                    )
                continue
            prefix = "自动驾驶产品责任研究 "
            if title.startswith(prefix) and title[len(prefix) :].isdigit():
                rows.append(row_of(int(title[len(prefix) :]), len(rows) + 1))
        return GridPage(rows=rows, total=len(rows), page=1, page_count=1, zero_results=not rows)

    async def detail(self, locator: str, op: SiteOp | None = None) -> DetailPage:
        v = parse_qs(urlsplit(locator).query)["v"][0]
        i = int(v)
        await self._call(op, ("detail", i))
        if i in self.failing_details:
            raise AccessDenied("没有权限", locator="hidden")
        return DetailPage(
            title=title_of(i),
            authors=[Author(name=f"作者{i}")],
            source=source_of(i),
            source_url=f"https://navi.cnki.net/{source_of(i)}",
            doc_type="期刊",
            year=2020 + i % 6,
            abstract=ABSTRACT,
            keywords=list(KEYWORDS),
            native=NativeId(dbname="CJFD", filename=f"SIM{i:04d}"),
        )

    async def export_records(self, export_ids: list[str], op: SiteOp | None = None) -> list[ExportRecord]:
        assert len(export_ids) <= 20
        await self._call(op, ("export", tuple(sorted(export_ids))))
        out: list[ExportRecord] = []
        for export_id in export_ids:
            i = int(export_id.split("!")[1].removeprefix("SIM"))
            if i in self.missing_exports:
                continue
            out.append(
                ExportRecord(
                    ref_type="Journal Article",
                    title=title_of(i),
                    authors=[f"作者{i}"],
                    source=source_of(i),
                    year=2020 + i % 6,
                    abstract=ABSTRACT,
                    keywords=list(KEYWORDS),
                )
            )
        return out

    async def journal(
        self, url: str, expected_source: str | None = None, op: SiteOp | None = None
    ) -> JournalPage:
        name = url.rsplit("/", 1)[-1]
        await self._call(op, ("journal", name))
        return JournalPage(
            name=name,
            tiers=["CSSCI"],
            composite_if=2.5,
            state=JournalState.PRESENT,
            identity_basis=IdentityBasis.CURRENT_TITLE,
        )

    async def identity(self, op: SiteOp | None = None) -> HeaderIdentity:
        return HeaderIdentity(ready=True)

    async def close(self) -> None:
        return None


def ranking(store: Store, record: OperationRecord) -> list[tuple[str, bool]]:
    """A completed search's every result in order: (record ref, selected)."""
    items = store.search_results(record.result["search_id"], "all", 0, 10_000).items
    return [(e.record_ref, e.selected) for e in items]


async def advance_until(clock: FakeClock, condition: Callable[[], bool]) -> None:
    """Move fake time on in 0.1 s steps until `condition()` holds (bounded)."""
    for _ in range(10_000):
        if condition():
            return
        await clock.advance_settled(0.1)
    raise AssertionError("condition never held")


def start_research(
    jobs: JobManager, pipe: ResearchPipeline, inp: SearchInput, plan: Any
) -> Job:
    """A research search of `inp` under `plan`, started as an operation of `jobs`."""

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.research(inp, plan, ctx)

    return jobs.start(OperationKind.SEARCH, runner, inp.budget())


def duplicates(log: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    counts = Counter(log)
    return [k for k, n in counts.items() if n > 1]


__all__ = ["AMBIGUOUS_TITLE", "CnkiError", "SimSite", "duplicates", "ranking", "title_of"]


class WatchedSegmenter(JiebaSegmenter):
    """jieba's segmenter, noting the threads its dictionary load was started from."""

    def __init__(self) -> None:
        super().__init__()
        self.warmed_in: list[str] = []
        self.warmed = threading.Event()

    def warm(self) -> None:
        self.warmed_in.append(threading.current_thread().name)
        super().warm()
        self.warmed.set()


async def run_metadata(clock: FakeClock, pipe: ResearchPipeline, inp: Any) -> OperationRecord:
    """A get_metadata operation (`inp`: MetadataInput) of `pipe`, run to its end on `clock`."""

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.metadata(inp, ctx)

    job = JobManager(clock, MemorySink()).start(OperationKind.METADATA, runner)
    [record] = await clock.run_until_complete(job.finish())
    return record
