"""The search log against `SimSite` on a fake clock: every page read is logged with its query
and counts, the PRISMA-style flow adds up (with a year filter, after budget exhaustion and
`continue`), and the three formats carry it (DESIGN.md "Search log")."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from pipeline_fakes import SimSite

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import SearchNotFound
from cnki_mcp.jobs import JobManager, MemorySink, OperationContext
from cnki_mcp.pipeline.searchlog import SearchLog, build_search_log
from cnki_mcp.pipeline.searchlog_format import format_log, render_subject
from cnki_mcp.query.compiler import compile_expression, concept_expression, year_filter
from cnki_mcp.query.expr import Field
from cnki_mcp.store import Store
from tests.component.test_pipeline import PLAN, make, run_search, search_input


def assert_flow_adds_up(log: SearchLog) -> None:
    f = log.prisma
    assert f.identified - f.outside_years - f.duplicates == f.screened
    assert f.screened - f.excluded == f.selected
    assert sum(f.excluded_by_reason.values()) == f.excluded
    assert min(f.identified, f.outside_years, f.duplicates, f.screened, f.excluded, f.selected) >= 0
    pages = [p for c in log.channels for p in c.pages if p.merged]
    assert f.identified == sum(p.rows for p in pages)


async def test_every_page_is_logged_and_the_flow_adds_up(clock: FakeClock, store: Store) -> None:
    site = SimSite(clock)
    record = await run_search(clock, make(clock, store, site), search_input(freshness="live"))
    log = build_search_log(store, record.result["search_id"], "min10_rescue55")
    assert_flow_adds_up(log)
    pages = [p for c in log.channels for p in c.pages]
    assert len(pages) == site.count("grid") == 17
    assert all(p.attempts == 1 and p.merged for p in pages)
    assert log.prisma.identified == 3 * 100 + 2 * 20
    assert log.prisma.screened == record.result["candidate_count"] == 200
    assert log.prisma.selected == record.result["selected_count"]
    assert log.prisma.outside_years == 0
    assert [c.id for c in log.channels] == ["q1", "q2", "q3", "feedback1", "feedback2"]
    q1 = log.channels[0]
    assert q1.queries == ["主题: 自动驾驶 AND 主题: 产品责任"]
    assert q1.pages[0].total == 120 and [p.page for p in q1.pages] == [1, 2, 3, 4, 5]
    assert log.plan_method == "explicit" and log.requests == record.requests
    assert log.abstracts_read == 100 and "0.55" in log.selection_rule
    assert_formats_carry(log)
    assert "leave 发表时间 empty" in format_log(log, "markdown")  # no year range: nothing to set
    assert log.year_filter is None and "ControlGroup" not in format_log(log, "markdown")


def assert_formats_carry(log: SearchLog) -> None:
    md = format_log(log, "markdown")
    assert "## Flow (PRISMA-style)" in md and f"- Selected: {log.prisma.selected}" in md
    assert "主题: 自动驾驶 AND 主题: 产品责任" in md
    rows = list(csv.DictReader(io.StringIO(format_log(log, "csv"))))
    assert sum(1 for r in rows if r["section"] == "page") == 17
    flow = {r["field"]: int(r["value"]) for r in rows if r["section"] == "flow"}
    assert flow["identified"] == log.prisma.identified and flow["selected"] == log.prisma.selected
    again = SearchLog.model_validate(json.loads(format_log(log, "json")))
    assert again == log


async def test_year_filter_is_counted_before_duplicates(clock: FakeClock, store: Store) -> None:
    site = SimSite(clock)
    inp = search_input(freshness="live", year_from=2022, year_to=2023, mode="precise")
    record = await run_search(clock, make(clock, store, site), inp)
    log = build_search_log(store, record.result["search_id"], "min10_rescue55")
    assert_flow_adds_up(log)
    assert log.prisma.outside_years > 0
    assert log.parameters["year_from"] == 2022
    md = format_log(log, "markdown")
    assert "set 发表时间 to 2022–2023" in md
    # the exact QueryJson section carries the 发表时间 filter every page was sent with
    assert log.year_filter == year_filter(2022, 2023)
    exact = md[md.index("## QueryJson (exact)") :]
    assert '"Value": "2022-01-01"' in exact and '"Value2": "2023-12-31"' in exact and '"Field": "PT"' in exact
    assert SearchLog.model_validate(json.loads(format_log(log, "json"))).year_filter == log.year_filter


async def test_budget_stop_and_continue_log_each_page_once(clock: FakeClock, store: Store) -> None:
    site = SimSite(clock)
    pipe = make(clock, store, site)
    jobs = JobManager(clock, MemorySink())
    inp = search_input(freshness="live", max_requests=50)
    stopped = await run_search(clock, pipe, inp, jobs)
    assert stopped.status == "partial"
    assert_flow_adds_up(build_search_log(store, stopped.operation_id, "min10_rescue55"))

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.research(inp, PLAN, ctx)

    job = jobs.continue_(stopped.operation_id, runner, additional_requests=450)
    [done] = await clock.run_until_complete(job.finish())
    log = build_search_log(store, done.operation_id, "min10_rescue55")
    assert_flow_adds_up(log)
    pages = [p for c in log.channels for p in c.pages]
    assert len(pages) == site.count("grid") and all(p.attempts == 1 for p in pages)
    assert log.unmerged_pages == 0


def test_unknown_search_is_search_not_found(store: Store) -> None:
    with pytest.raises(SearchNotFound):
        build_search_log(store, "sch_missing", "min10_rescue55")


def test_render_subject_reads_like_the_form() -> None:
    groups = [["自动驾驶", "无人驾驶"], ["产品责任"]]
    subject = compile_expression(concept_expression(groups, Field.TITLE)).subject
    assert render_subject(subject) == "篇名[模糊]: 自动驾驶 + 无人驾驶 AND 篇名[模糊]: 产品责任"
    either = {"op": "or", "items": [
        {"op": "and", "items": [{"field": "title", "value": "a"}, {"field": "authors", "value": "张三", "match": "exact"}]},
        {"field": "keywords", "value": "b"},
    ]}
    text = render_subject(compile_expression(either).subject)
    assert text == "(篇名[模糊]: a AND 作者[精确]: 张三) OR 关键词[模糊]: b"


async def test_a_soft_block_recheck_is_one_more_attempt_of_the_same_page(clock: FakeClock, store: Store) -> None:
    from tests.component.test_soft_block import BlockingSite, pipeline, search

    site = BlockingSite(clock, {("q1", 2): 1})
    record = await search(clock, pipeline(clock, store, site), JobManager(clock, MemorySink()))
    assert record.status == "completed"
    log = build_search_log(store, record.operation_id, "min10_rescue55")
    assert_flow_adds_up(log)
    q1 = {p.page: p for p in log.channels[0].pages}
    assert q1[2].attempts == 2 and q1[2].rows == 20 and q1[2].merged
    assert sum(p.attempts for c in log.channels for p in c.pages) == site.count("grid")


async def test_a_structured_search_logs_its_expression_and_keeps_cnki_order_as_the_rule(
    clock: FakeClock, store: Store
) -> None:
    from cnki_mcp.pipeline.models import StructuredSearchInput
    from tests.component.test_pipeline import run_op

    site = SimSite(clock)
    pipe = make(clock, store, site, page_size=50)
    inp = StructuredSearchInput(expression={"field": "authors", "value": "作者", "match": "exact"}, limit=20)

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.structured(inp, ctx)

    record = await run_op(clock, JobManager(clock, MemorySink()), runner, inp.budget())
    log = build_search_log(store, record.operation_id, "min10_rescue55")
    assert_flow_adds_up(log)
    assert log.kind == "structured_search" and log.plan_method == "structured"
    assert "CNKI's own order" in log.selection_rule
    assert [c.queries for c in log.channels] == [["作者[精确]: 作者"]]
    # named in the log and a watch list by its query as the log writes it, not by a hash
    assert log.question == "结构化检索：" + log.channels[0].queries[0] == "结构化检索：作者[精确]: 作者"
    assert (log.prisma.identified, log.prisma.screened, log.prisma.selected) == (50, 50, 50)


def test_a_channel_answered_locally_is_said_so_in_every_format() -> None:
    """Title/keyword channels answered from the subject channel's results (DESIGN.md "Request
    policies") were not sent to CNKI: the log must not read as if they had been."""
    from datetime import UTC, datetime

    from cnki_mcp.pipeline.searchlog_format import ChannelLog, PageEntry, PrismaFlow

    at = datetime(2026, 12, 3, tzinfo=UTC)
    log = SearchLog(
        search_id="s1", status="completed", kind="search", question="q", created_at=at, finished_at=at,
        plan_method="explicit", plan_method_note="",
        channels=[
            ChannelLog(id="q1", field="subject", queries=["主题: a"], pages_read=1, rows=3, exhausted=True,
                       pages=[PageEntry(page=1, at=at, rows=3, kept=3, total=3)]),
            ChannelLog(id="q2", field="title", queries=["篇名: a"], answered_locally=True),
        ],
        prisma=PrismaFlow(identified=3, outside_years=0, duplicates=0, screened=3, excluded=0, selected=3),
    )  # fmt: skip
    rows = list(csv.DictReader(io.StringIO(format_log(log, "csv"))))
    assert [(r["channel"], r["field"], r["query"]) for r in rows if r["section"] == "local"] == [
        ("q2", "title", "篇名: a")
    ]
    md = format_log(log, "markdown")
    q2 = md[md.index("### q2") :]
    assert "Not sent to CNKI" in q2 and "Pages read" not in q2.split("###")[1]
    assert SearchLog.model_validate(json.loads(format_log(log, "json"))).channels[1].answered_locally


def test_a_channel_no_page_answered_reads_unknown_total_in_markdown() -> None:
    """A search stopped before a channel's first page (budget): its total is unknown, not "None"."""
    from datetime import UTC, datetime

    from cnki_mcp.pipeline.searchlog_format import ChannelLog, PrismaFlow

    at = datetime(2026, 12, 3, tzinfo=UTC)
    log = SearchLog(
        search_id="s1", status="partial", kind="search", question="q", created_at=at, finished_at=at,
        plan_method="explicit", plan_method_note="",
        channels=[ChannelLog(id="q1", field="subject", queries=["主题: a"])],
        prisma=PrismaFlow(identified=0, outside_years=0, duplicates=0, screened=0, excluded=0, selected=0),
    )  # fmt: skip
    md = format_log(log, "markdown")
    assert "CNKI reported total unknown (no page answered), not exhausted" in md
    assert "reported total None" not in md


def test_markdown_shows_the_question_terms_and_queries_as_written() -> None:
    """The log is the methods section's record: a question's `*调整*` became emphasis and `<x>` raw
    HTML, a term's asterisks vanished from Concepts, and a query holding a backtick closed its
    one-backtick code span there, so the query 'as sent' read wrong."""
    from datetime import UTC, datetime

    from cnki_mcp.pipeline.searchlog_format import ChannelLog, PrismaFlow

    at = datetime(2026, 12, 3, tzinfo=UTC)
    query = "主题: 违约*金* + `调整` + <调整>"
    log = SearchLog(
        search_id="s1", status="completed", kind="search", question="违约金 *调整* <x> 研究_方法", created_at=at,
        finished_at=at, plan_method="explicit", plan_method_note="", concepts=[["违约*金*", "a_b"], ["`调整`"]],
        channels=[ChannelLog(id="q1", field="subject", queries=[query, "`x`"])],
        prisma=PrismaFlow(identified=0, outside_years=0, duplicates=0, screened=0, excluded=0, selected=0),
    )  # fmt: skip
    md = format_log(log, "markdown")
    assert r"- Question: 违约金 \*调整\* \<x\> 研究\_方法" in md
    assert r"- Concepts: (违约\*金\* OR a\_b) AND (\`调整\`)" in md
    assert f"- Query 1: ``{query}``" in md
    assert "- Query 2: `` `x` ``" in md


async def test_a_search_that_reused_known_abstracts_logs_none_read(clock: FakeClock, store: Store) -> None:
    """A search whose abstracts an earlier search had read was logged as having read them ("abstracts
    read: 4" for one request): the log counts this search's reads, the known ones beside them."""
    site = SimSite(clock)
    pipe = make(clock, store, site)
    earlier = await run_search(clock, pipe, search_input(freshness="live"))
    first = build_search_log(store, earlier.result["search_id"], "min10_rescue55")
    await clock.advance(3600)
    reads = [site.count(kind) for kind in ("detail", "export", "journal")]
    again = await run_search(clock, pipe, search_input(freshness="live"))
    log = build_search_log(store, again.result["search_id"], "min10_rescue55")
    assert [site.count(kind) for kind in ("detail", "export", "journal")] == reads  # nothing read again
    assert (first.abstracts_read > 0, first.journals_read > 0) == (True, True)
    assert (log.abstracts_read, log.journals_read) == (0, 0)
    assert first.abstracts_read == first.abstracts_known
    assert (log.abstracts_read, log.abstracts_known) == (0, first.abstracts_known)
    assert log.journals_read == 0 and log.journals_known == first.journals_known
    assert "abstracts read by this search (detail pages or batch export): 0 (" in format_log(log, "markdown")
