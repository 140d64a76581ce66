"""`pipeline.links.link_references` with a real Store: local matches first (no request when every
title is known), unknown titles located 10 per grid request, rows stored, statuses from the number
of distinct papers; one run through the simulator's own QueryJson evaluator (CorpusBackend)."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from corpus_backend import CorpusBackend

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import CnkiError, RateLimited, SiteTemporarilyEmpty
from cnki_mcp.identity import title_key
from cnki_mcp.jobs import JobManager, MemorySink, OperationContext, OperationKind, OperationRecord
from cnki_mcp.links import LinkInput, LinkResult
from cnki_mcp.models import DetailPage, GridPage, GridRow, HeaderIdentity, JournalPage, NativeId
from cnki_mcp.operations import DEFAULT_BUDGETS, BudgetSpec
from cnki_mcp.pipeline.links import ALONE_PAGES, RECENT_MISS_WARNING, link_references, lookup_batch
from cnki_mcp.query.compiler import MAX_TITLES
from cnki_mcp.site.backend import GridRequest, SiteOp
from cnki_mcp.store import Store

NOW = datetime(2026, 5, 1, tzinfo=UTC)


def abstract_url(n: str) -> str:
    return f"https://kns.cnki.net/kcms2/article/abstract?v={n}"


def row(title: str, n: str, *, url: str | None = None, author: str = "作者") -> GridRow:
    return GridRow(
        title=title,
        detail_url=url if url is not None else abstract_url(n),
        native=NativeId(dbname="CJFD2024", filename=f"F{n}"),
        authors=[author],
        source="法学研究",
        year=2024,
    )


def lookup_values(subject: dict[str, Any]) -> list[str]:
    return [
        str(item["Value"]).strip("\"'")
        for group in subject.get("ChildItems", [])
        for item in group.get("Items", [])
    ]


class FakeSite:
    """Exact-title lookups answered from `catalogue` (title -> rows); every request logged."""

    def __init__(
        self, catalogue: dict[str, list[GridRow]] | None = None, fail: CnkiError | None = None
    ) -> None:
        self.catalogue = catalogue or {}
        self.fail = fail
        self.requests: list[list[str]] = []
        self.page_sizes: Counter[int] = Counter()

    async def grid(self, request: GridRequest, op: SiteOp | None = None, follow: Any = None) -> GridPage:
        if op is not None:
            op.charge()
        titles = lookup_values(request.subject)
        self.requests.append(titles)
        self.page_sizes[request.page_size] += 1
        if self.fail is not None:
            raise self.fail
        rows = [r for t in titles for r in self.catalogue.get(t, [])]
        return GridPage(rows=rows, total=len(rows), page=1, page_count=1, zero_results=not rows)

    async def detail(self, locator: str, op: SiteOp | None = None) -> DetailPage:
        raise AssertionError("link_references never reads detail pages")

    async def journal(
        self, url: str, expected_source: str | None = None, op: SiteOp | None = None
    ) -> JournalPage:
        raise AssertionError("link_references never reads journal pages")

    async def identity(self, op: SiteOp | None = None) -> HeaderIdentity:
        return HeaderIdentity(ready=True)

    async def close(self) -> None:
        return None


async def run_links(
    clock: FakeClock,
    store: Store,
    site: Any,
    inp: LinkInput,
    budget: BudgetSpec | None = None,
) -> tuple[OperationRecord, LinkResult | None]:
    jobs = JobManager(clock, MemorySink())
    out: list[LinkResult] = []

    async def runner(ctx: OperationContext) -> LinkResult:
        result = await link_references(inp, store, site, ctx)
        out.append(result)
        return result

    job = jobs.start(OperationKind.LINKS, runner, budget or DEFAULT_BUDGETS[OperationKind.LINKS])
    [record] = await clock.run_until_complete(job.finish())
    return record, (out[0] if out else None)


def final_code(record: OperationRecord) -> str | None:
    return record.errors[0].code if record.final_error else None


def by_title(result: LinkResult) -> dict[str, Any]:
    return {r.title: r for r in result.references}


# --------------------------------------------------------------- local first


async def test_all_titles_known_locally_need_no_grid_request(clock: FakeClock, store: Store) -> None:
    store.upsert_from_grid([row("民法典中的违约金", "1"), row("数据合规：研究", "2", url="")], NOW)
    site = FakeSite()
    text = "见《民法典中的违约金》与《数据合规 ： 研究》，再见《民法典中的违约金》。"
    record, result = await run_links(clock, store, site, LinkInput(text=text, lookup_missing=True))
    assert result is not None and record.status.value == "completed"
    assert site.requests == []
    refs = by_title(result)
    assert refs["民法典中的违约金"].status == "linked"
    assert refs["民法典中的违约金"].occurrences == 2
    assert refs["数据合规 ： 研究"].status == "matched_without_link"
    assert result.text.count(f"[《民法典中的违约金》]({abstract_url('1')})") == 2
    assert "《数据合规 ： 研究》" in result.text and "[《数据" not in result.text
    assert result.requests == 0


async def test_a_paper_with_a_doi_is_linked_by_its_lasting_doi_link_and_the_rest_are_flagged(
    clock: FakeClock, store: Store
) -> None:
    [with_doi, _without] = store.upsert_from_grid([row("违约金的酌减", "1"), row("定金罚则研究", "2")], NOW)
    detail = DetailPage(title="违约金的酌减", authors=[], source="法学研究", year=2024, doi="10.3969/J.ISSN.1(2)")
    store.upsert_from_detail(detail, abstract_url("1"), NOW, with_doi.record_ref)
    text = "《违约金的酌减》与《定金罚则研究》"
    record, result = await run_links(clock, store, FakeSite(), LinkInput(text=text))
    assert result is not None and record.status.value == "completed"
    refs = by_title(result)
    assert refs["违约金的酌减"].link_kind == "doi"
    assert refs["违约金的酌减"].url == "https://doi.org/10.3969/J.ISSN.1(2)"
    assert "[《违约金的酌减》](https://doi.org/10.3969/J.ISSN.1%282%29)" in result.text
    assert refs["定金罚则研究"].link_kind == "cnki" and refs["定金罚则研究"].url == abstract_url("2")
    assert len(result.warnings) == 1 and result.warnings[0].startswith("1 ")


async def test_running_again_on_linked_text_renews_the_expiring_links_as_the_warning_advises(
    clock: FakeClock, store: Store
) -> None:
    store.upsert_from_grid([row("违约金的酌减", "1"), row("定金罚则研究", "2")], NOW)
    _, first = await run_links(clock, store, FakeSite(), LinkInput(text="见《违约金的酌减》与《定金罚则研究》。"))
    assert first is not None and "再运行 link_references" in first.warnings[0]
    # later: the first paper's token has a successor, the second paper got a DOI
    [paper, other] = store.upsert_from_grid([row("违约金的酌减", "1", url=abstract_url("1b")), row("定金罚则研究", "2")], NOW)
    detail = DetailPage(title="定金罚则研究", source="法学研究", year=2024, doi="10.1/dj")
    store.upsert_from_detail(detail, abstract_url("2"), NOW, other.record_ref)
    site = FakeSite()
    _, again = await run_links(clock, store, site, LinkInput(text=first.text))
    assert again is not None and site.requests == []
    assert again.text == f"见[《违约金的酌减》]({abstract_url('1b')})与[《定金罚则研究》](https://doi.org/10.1/dj)。"
    assert [r.record_refs for r in again.references] == [[paper.record_ref], [other.record_ref]]


async def test_running_again_with_lookup_missing_fetches_the_successor_of_a_token_it_wrote(
    clock: FakeClock, store: Store
) -> None:
    # the rerun matched the title locally, to the paper the first run had stored with the same
    # token: no request, the same link back, and the same advice to run it again
    first_site = FakeSite({"违约金的酌减": [row("违约金的酌减", "1", url=abstract_url("OLD"))]})
    _, first = await run_links(clock, store, first_site, LinkInput(text="见《违约金的酌减》与《定金罚则》。", lookup_missing=True))
    assert first is not None and abstract_url("OLD") in first.text
    site = FakeSite({"违约金的酌减": [row("违约金的酌减", "1", url=abstract_url("FRESH"))]})
    _, again = await run_links(clock, store, site, LinkInput(text=first.text, lookup_missing=True))
    assert again is not None
    assert again.text == f"见[《违约金的酌减》]({abstract_url('FRESH')})与《定金罚则》。"
    # 定金罚则, listed nothing for 24 h ago at most, is not asked again (RECENT_MISS_WARNING)
    assert sorted(t for request in site.requests for t in request) == ["违约金的酌减"]


async def test_links_that_all_last_carry_no_warning(clock: FakeClock, store: Store) -> None:
    [paper] = store.upsert_from_grid([row("违约金的酌减", "1")], NOW)
    detail = DetailPage(title="违约金的酌减", source="法学研究", year=2024, doi="doi:10.1/abc")
    store.upsert_from_detail(detail, abstract_url("1"), NOW, paper.record_ref)
    _, result = await run_links(clock, store, FakeSite(), LinkInput(text="《违约金的酌减》"))
    assert result is not None and result.warnings == []
    assert by_title(result)["违约金的酌减"].url == "https://doi.org/10.1/abc"


async def test_local_ambiguity_is_reported_and_not_looked_up(clock: FakeClock, store: Store) -> None:
    store.upsert_from_grid([row("同名论文", "1", author="甲"), row("同名论文", "2", author="乙")], NOW)
    site = FakeSite()
    _, result = await run_links(clock, store, site, LinkInput(text="《同名论文》", lookup_missing=True))
    assert result is not None
    [ref] = result.references
    assert ref.status == "ambiguous" and len(ref.record_refs) == 2
    assert result.text == "《同名论文》"
    assert site.requests == []


async def test_without_lookup_missing_unknown_titles_stay_unresolved_offline(
    clock: FakeClock, store: Store
) -> None:
    site = FakeSite({"未知题名": [row("未知题名", "9")]})
    _, result = await run_links(clock, store, site, LinkInput(text="《未知题名》"))
    assert result is not None
    assert [r.status for r in result.references] == ["unresolved"]
    assert site.requests == [] and store.paper_count() == 0


async def test_single_inner_marks_match_a_stored_title_with_double_marks(
    clock: FakeClock, store: Store
) -> None:
    store.upsert_from_grid([row("《民法典》实施背景下违约金研究", "7")], NOW)
    site = FakeSite()
    _, result = await run_links(clock, store, site, LinkInput(text="参见《〈民法典〉实施背景下违约金研究》"))
    assert result is not None
    assert result.text == f"参见[《〈民法典〉实施背景下违约金研究》]({abstract_url('7')})"


async def test_a_title_spelt_with_pdf_or_formula_characters_links_the_paper_stored_under_cnkis_spelling(
    clock: FakeClock, store: Store
) -> None:
    store.upsert_from_grid([row("CO2捕集与封存技术的经济性评价", "1"), row("约定违约金酌减规则研究", "2")], NOW)
    site = FakeSite()
    text = "见《CO₂捕集与封存技术的经济性评价》与《约定违约金酌减\u200b规则研究》。"
    _, result = await run_links(clock, store, site, LinkInput(text=text, lookup_missing=True))
    assert result is not None
    assert [r.status for r in result.references] == ["linked", "linked"]
    assert site.requests == []


# --------------------------------------------------------------- online lookup


async def test_a_title_spelt_with_invisible_full_width_or_entity_characters_is_found_on_cnki(
    clock: FakeClock, store: Store
) -> None:
    cnki = ["CO2捕集与封存技术的经济性评价", "约定违约金酌减规则的法律规制研究", "R&D投入对企业创新绩效的影响",
            "列夫·托尔斯泰晚期创作中的宗教思想"]  # fmt: skip
    site = FakeSite({t: [row(t, str(i))] for i, t in enumerate(cnki)})
    text = ("《ＣＯ２捕集与封存技术的经济性评价》《约定违约金酌减规则的法\u00ad律规制研究》"
            "《R&amp;D投入对企业创新绩效的影响》《列夫•托尔斯泰晚期创作中的宗教思想》")  # fmt: skip
    record, result = await run_links(clock, store, site, LinkInput(text=text, lookup_missing=True))
    assert result is not None and record.status.value == "completed"
    assert [r.status for r in result.references] == ["linked"] * 4
    assert len(site.requests) == 1
    assert not any("\u00ad" in t for t in site.requests[0])  # an invisible character is never sent




async def test_23_unknown_titles_take_exactly_3_grid_requests_and_rows_are_stored(
    clock: FakeClock, store: Store
) -> None:
    known = [f"已知题名{i}" for i in range(2)]
    store.upsert_from_grid([row(t, f"k{i}") for i, t in enumerate(known)], NOW)
    unknown = [f"未知题名{i:02d}" for i in range(23)]
    site = FakeSite({t: [row(t, f"u{i}")] for i, t in enumerate(unknown)})
    text = "\n".join(f"- 《{t}》" for t in [*known, *unknown, *unknown[:5]])
    record, result = await run_links(clock, store, site, LinkInput(text=text, lookup_missing=True))
    assert result is not None and record.status.value == "completed"
    assert [len(r) for r in site.requests] == [10, 10, 3]
    assert sorted(t for r in site.requests for t in r) == sorted(unknown)  # known ones never sent
    assert site.page_sizes == Counter({50: 3})
    assert record.requests == 3 and result.requests == 3
    assert store.paper_count() == 25
    assert {r.status for r in result.references} == {"linked"}
    assert len(result.references) == 25
    assert result.text.count("](https://kns.cnki.net/") == 30


async def test_lookup_groups_rows_by_title_key(clock: FakeClock, store: Store) -> None:
    site = FakeSite(
        {
            "同名论文": [row("同名论文", "a", author="甲"), row("同名论文", "b", author="乙")],
            "只有列表": [
                row("只有列表", "c", url="https://kns.cnki.net/kcms2/article/abstract?token=secret")
            ],
            "唯一论文": [row("唯 一 论 文", "d"), row("唯一论文 续篇", "e")],
        }
    )
    text = "《同名论文》《只有列表》《唯一论文》《查无此文》"
    _, result = await run_links(clock, store, site, LinkInput(text=text, lookup_missing=True))
    assert result is not None
    refs = by_title(result)
    assert refs["同名论文"].status == "ambiguous" and len(refs["同名论文"].record_refs) == 2
    assert refs["只有列表"].status == "matched_without_link" and refs["只有列表"].url is None
    assert refs["唯一论文"].status == "unresolved"  # '唯 一 论 文' is another title key
    assert refs["查无此文"].status == "unresolved"
    assert len(site.requests) == 1
    assert store.paper_count() == 5  # every row returned is stored
    assert store.find_by_title_key("唯一论文 续篇")
    assert result.text == text


async def test_a_failed_batch_leaves_its_titles_unresolved(clock: FakeClock, store: Store) -> None:
    site = FakeSite(fail=SiteTemporarilyEmpty("暂无数据"))
    record, result = await run_links(clock, store, site, LinkInput(text="《甲》《乙》", lookup_missing=True))
    assert result is not None and record.status.value == "partial"  # item errors, no final error
    assert [r.status for r in result.references] == ["unresolved", "unresolved"]
    assert final_code(record) is None
    assert {e.code for e in record.errors} == {"SITE_TEMPORARILY_EMPTY"}


async def test_a_title_cnki_lists_nothing_for_is_not_asked_again_within_24_hours(
    clock: FakeClock, store: Store
) -> None:
    site = FakeSite({"有的论文": [row("有的论文", "1")]})
    text = "《有的论文》与《没有的论文》"
    _, first = await run_links(clock, store, site, LinkInput(text=text, lookup_missing=True))
    assert first is not None and [r.status for r in first.references] == ["linked", "unresolved"]
    skipped = RECENT_MISS_WARNING.format(n=1)
    assert len(site.requests) == 1 and skipped not in first.warnings

    _, again = await run_links(clock, store, site, LinkInput(text=text, lookup_missing=True))
    assert again is not None and [r.status for r in again.references] == ["linked", "unresolved"]
    assert len(site.requests) == 1 and again.requests == 0
    assert skipped in again.warnings

    # a run that does not look up says nothing of skipped lookups
    _, offline = await run_links(clock, store, site, LinkInput(text=text))
    assert offline is not None and skipped not in offline.warnings

    await clock.advance(24 * 3600)
    _, later = await run_links(clock, store, site, LinkInput(text=text, lookup_missing=True))
    assert later is not None and site.requests[-1] == ["没有的论文"] and len(site.requests) == 2
    assert skipped not in later.warnings


async def test_a_title_whose_batch_failed_is_asked_again_on_the_next_run(clock: FakeClock, store: Store) -> None:
    site = FakeSite(fail=SiteTemporarilyEmpty("暂无数据"))
    await run_links(clock, store, site, LinkInput(text="《甲》", lookup_missing=True))
    site.fail = None
    _, result = await run_links(clock, store, site, LinkInput(text="《甲》", lookup_missing=True))
    assert result is not None and len(site.requests) == 2
    assert RECENT_MISS_WARNING.format(n=1) not in result.warnings


async def test_a_fatal_error_stops_the_operation_with_the_result_so_far(
    clock: FakeClock, store: Store
) -> None:
    store.upsert_from_grid([row("甲", "1")], NOW)
    site = FakeSite(fail=RateLimited("限流"))
    record, result = await run_links(clock, store, site, LinkInput(text="《甲》《乙》", lookup_missing=True))
    assert result is None
    assert final_code(record) == "RATE_LIMITED"
    assert record.result is not None and record.result["references"][0]["status"] == "linked"


async def test_budget_exhausted_mid_lookup_is_reported(clock: FakeClock, store: Store) -> None:
    titles = [f"题名{i:02d}" for i in range(25)]
    site = FakeSite({t: [row(t, str(i))] for i, t in enumerate(titles)})
    text = "".join(f"《{t}》" for t in titles)
    record, _ = await run_links(
        clock,
        store,
        site,
        LinkInput(text=text, lookup_missing=True),
        BudgetSpec(max_requests=2, timeout_seconds=60),
    )
    assert final_code(record) == "BUDGET_EXHAUSTED"
    assert len(site.requests) == 2


async def test_too_many_references_fails_before_any_request(clock: FakeClock, store: Store) -> None:
    site = FakeSite()
    text = "".join(f"《题名{i}》" for i in range(101))
    record, result = await run_links(clock, store, site, LinkInput(text=text, lookup_missing=True))
    assert result is None and final_code(record) == "TOO_MANY_REFERENCES"
    assert site.requests == []


# --------------------------------------------------------------- through the simulator's evaluator


async def test_lookup_through_the_simulator_query_evaluator(clock: FakeClock, store: Store) -> None:
    site = CorpusBackend()
    counts = Counter(title_key(r.title) for r in site.corpus.records)
    unique = next(
        r.title for r in site.corpus.records if counts[title_key(r.title)] == 1 and "《" not in r.title
    )
    dup = next(r.title for r in site.corpus.records if counts[title_key(r.title)] > 1)
    marked = next(
        r.title for r in site.corpus.records if r.title.startswith("《") and counts[title_key(r.title)] == 1
    )
    written = marked.replace("《", "〈").replace("》", "〉")
    text = f"一、《{unique}》\n二、《{dup}》\n三、《{written}》\n四、《语料库中不存在的题名》\n`《{unique}》`"
    record, result = await run_links(clock, store, site, LinkInput(text=text, lookup_missing=True))
    assert result is not None and record.status.value == "completed", record.errors
    assert site.requests["grid"] == 1
    refs = by_title(result)
    assert refs[unique].status == "linked"
    assert refs[dup].status == "ambiguous" and len(refs[dup].record_refs) == counts[title_key(dup)]
    assert refs[written].status == "linked"
    assert refs["语料库中不存在的题名"].status == "unresolved"
    assert f"一、[《{unique}》](https://kns.cnki.net/kcms2/article/abstract?v=" in result.text
    assert result.text.endswith(f"`《{unique}》`")

    # Everything found is now stored, and the title CNKI listed nothing for was asked within 24 h:
    # a second run asks CNKI for nothing (it asked the missing title again before, every rerun).
    _, again = await run_links(clock, store, site, LinkInput(text=text, lookup_missing=True))
    assert again is not None and site.requests["grid"] == 1
    assert [r.status for r in again.references] == [r.status for r in result.references]


LONG_TITLE = (
    "Effects of long-term nitrogen fertilization and straw return on soil organic carbon fractions, aggregate"
    " stability and microbial community composition in a wheat-maize rotation system of the North China Plain"
)


def long_title_record(title: str, n: int) -> dict[str, Any]:
    return {
        "id": f"long{n}", "db": "CJFD", "filename": f"TRXB2023050{n:02d}", "type": "期刊", "title": title,
        "authors": [{"name": "Wang Lei", "institution": "CAU"}], "source": "土壤学报", "year": 2023,
        "date": "2023-05-10", "volume": "60", "issue": "5", "pages": "41-50", "abstract": "A field study.",
        "keywords": ["nitrogen"], "cited": 1, "downloads": 5, "classification": "S153",
    }  # fmt: skip


async def test_a_title_with_latin_words_spaced_off_the_han_characters_is_linked(clock: FakeClock, store: Store) -> None:
    # corpus r0717 and r0769: CNKI writes `ChatGPT对…`, `面向C++程序…`; a draft spacing them (as many
    # writers and AI assistants do) left both unresolved
    site = CorpusBackend()
    text = "见《ChatGPT 对在线教育的影响与应对》与《面向 C++ 程序的深度学习缺陷检测方法》。"
    record, result = await run_links(clock, store, site, LinkInput(text=text, lookup_missing=True))
    assert result is not None and record.status.value == "completed", record.errors
    assert [r.status for r in result.references] == ["linked", "linked"]
    assert site.requests["grid"] == 1


async def test_a_title_longer_than_cnkis_120_character_box_is_found_by_its_head(
    clock: FakeClock, store: Store
) -> None:
    site = CorpusBackend()
    site.corpus.add_record(long_title_record(LONG_TITLE, 1))
    # a second paper whose title starts the same way is listed too, and told apart by the whole title
    site.corpus.add_record(long_title_record(LONG_TITLE.replace("North China Plain", "Loess Plateau"), 2))
    record, result = await run_links(clock, store, site, LinkInput(text=f"见《{LONG_TITLE}》。", lookup_missing=True))
    assert result is not None and record.status.value == "completed", record.errors
    [ref] = result.references
    assert ref.status == "linked" and site.requests["grid"] == 1
    [paper] = store.find_by_title_key(LONG_TITLE)
    assert ref.record_refs == [paper.record_ref]


class PagedContainingSite(FakeSite):
    """CNKI's exact title search lists every title containing the phrase, 50 rows a page: each
    title's catalogue lists longer titles containing it before the title itself."""

    def __init__(self, catalogue: dict[str, list[GridRow]]) -> None:
        super().__init__(catalogue)
        self.pages: list[int] = []

    async def grid(self, request: GridRequest, op: SiteOp | None = None, follow: Any = None) -> GridPage:
        whole = await super().grid(request, op, follow)
        self.pages.append(request.page)
        size = request.page_size
        rows = whole.rows[(request.page - 1) * size : request.page * size]
        count = -(-len(whole.rows) // size)
        return GridPage(rows=rows, total=len(whole.rows), page=request.page, page_count=count, turnpage=f"c{request.page}")


async def test_titles_crowded_out_of_their_shared_page_are_asked_alone(clock: FakeClock, store: Store) -> None:
    titles = ["违约金的性质", "定金罚则"]
    site = PagedContainingSite(
        {t: [*(row(f"论{t}之辨{i}", f"{n}d{i}") for i in range(30)), row(t, f"{n}own")] for n, t in enumerate(titles)}
    )
    text = "《违约金的性质》与《定金罚则》"
    record, result = await run_links(clock, store, site, LinkInput(text=text, lookup_missing=True))
    assert result is not None and record.status.value == "completed"
    assert {r.title: r.status for r in result.references} == {t: "linked" for t in titles}
    # the shared page held the first title's own row (its 31st), not the second's: that one alone
    assert site.requests == [titles, [titles[1]]]


async def test_a_title_asked_alone_reads_on_to_its_own_row_and_no_further(clock: FakeClock, store: Store) -> None:
    title = "违约金的性质"
    site = PagedContainingSite({title: [*(row(f"论{title}之辨{i}", f"d{i}") for i in range(60)), row(title, "own")]})
    record, result = await run_links(clock, store, site, LinkInput(text=f"《{title}》", lookup_missing=True))
    assert result is not None and record.status.value == "completed"
    assert by_title(result)[title].status == "linked"
    assert site.pages == [1, 2]

    absent = "违约金的性"  # only longer titles contain it: ALONE_PAGES pages read, then unresolved
    site = PagedContainingSite({absent: [row(f"论{absent}质之辨{i}", f"e{i}") for i in range(160)]})
    _, result = await run_links(clock, store, site, LinkInput(text=f"《{absent}》", lookup_missing=True))
    assert result is not None and by_title(result)[absent].status == "unresolved"
    assert site.pages == list(range(1, ALONE_PAGES + 1)) and ALONE_PAGES < 4  # though CNKI lists a 4th


async def test_a_batch_cnki_cannot_be_asked_for_is_its_titles_error_not_the_operations(
    clock: FakeClock, store: Store
) -> None:
    site = FakeSite()
    jobs = JobManager(clock, MemorySink())
    pages: list[GridPage | None] = []

    async def runner(ctx: OperationContext) -> None:
        over = [(str(i), [f"题名{i}"]) for i in range(MAX_TITLES + 1)]  # 11 phrases: no request holds them
        pages.append(await lookup_batch(site, over, ctx, "links_lookup"))
        pages.append(await lookup_batch(site, [], ctx, "links_lookup"))

    job = jobs.start(OperationKind.LINKS, runner, DEFAULT_BUDGETS[OperationKind.LINKS])
    [record] = await clock.run_until_complete(job.finish())
    assert pages == [None, None] and not site.requests
    assert final_code(record) is None
    assert [e.code for e in record.errors] == ["INVALID_ARGUMENT"] * (MAX_TITLES + 1)


async def test_a_lookup_cancelled_midway_links_the_titles_already_found(clock: FakeClock, store: Store) -> None:
    """link_references cancelled while one lookup request was still on its way answered `result:
    null`: the titles the answered requests had found (and stored) were not linked. Now the
    text comes back linked for them."""
    titles = [f"违约金酌减规则研究之{i:02d}" for i in range(MAX_TITLES + 2)]
    never = asyncio.Event()

    class SecondRequestHangs(FakeSite):
        async def grid(self, request: GridRequest, op: SiteOp | None = None, follow: Any = None) -> GridPage:
            if self.requests:
                self.requests.append(lookup_values(request.subject))
                await never.wait()
            return await super().grid(request, op, follow)

    site = SecondRequestHangs({t: [row(t, str(i))] for i, t in enumerate(titles)})
    jobs = JobManager(clock, MemorySink())
    inp = LinkInput(text="".join(f"见《{t}》。" for t in titles), lookup_missing=True)
    job = jobs.start(OperationKind.LINKS, lambda ctx: link_references(inp, store, site, ctx))
    await clock.advance_settled(5.0)
    [record] = await clock.run_until_complete(jobs.cancel(job.operation_id))
    assert record.status.value == "cancelled" and record.errors[0].details["result_kept"] is True
    result = LinkResult.model_validate(record.result)
    first = set(site.requests[0])
    linked = {r.title for r in result.references if r.status == "linked"}
    assert linked and linked == {t for t in titles if t in first}
