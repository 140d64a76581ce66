"""`verify_references` over the labelled reference set (tests/verify_samples.py) against the
simulator's corpus (CorpusBackend: the simulator's own query evaluator and page renderers, the
production parsers): verdict accuracy per class, no fabricated reference ever verified, requests
per entry; plus the cost rules (local first, exact titles 10 per request, export batches)."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from corpus_backend import CorpusBackend
from verify_samples import Sample, build

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import CnkiError, ParserUnsupported
from cnki_mcp.jobs import JobManager, MemorySink, OperationContext, OperationKind, OperationRecord
from cnki_mcp.models import GridPage
from cnki_mcp.operations import DEFAULT_BUDGETS, BudgetSpec
from cnki_mcp.pipeline.verify import (
    ONLINE_FIRST_NUMBERS,
    UNFINISHED_SEARCH,
    VerifyInput,
    VerifyResult,
    verify_references,
)
from cnki_mcp.site.backend import GridFollow, GridRequest, SiteOp
from cnki_mcp.store import Store


async def run(clock: FakeClock, store: Store, site: CorpusBackend, inp: VerifyInput) -> tuple[OperationRecord, VerifyResult]:
    jobs = JobManager(clock, MemorySink())
    out: list[VerifyResult] = []

    async def runner(ctx: OperationContext) -> VerifyResult:
        result = await verify_references(inp, store, site, ctx)
        out.append(result)
        return result

    job = jobs.start(OperationKind.VERIFY, runner, DEFAULT_BUDGETS[OperationKind.VERIFY])
    [record] = await clock.run_until_complete(job.finish())
    return record, out[0]


def score(samples: list[Sample], result: VerifyResult) -> dict[str, tuple[int, int]]:
    per: dict[str, list[int]] = {}
    for sample, got in zip(samples, result.entries, strict=True):
        ok = got.verdict == sample.verdict and (sample.verdict != "mismatch" or tuple(got.fields) == sample.fields)
        per.setdefault(sample.verdict, []).append(int(ok))
    return {k: (sum(v), len(v)) for k, v in per.items()}


async def test_labelled_set_verdicts_are_right_and_cheap(clock: FakeClock, store: Store) -> None:
    samples = build()
    assert len(samples) >= 80
    site = CorpusBackend()
    record, result = await run(clock, store, site, VerifyInput(references=[s.text for s in samples]))
    assert record.status.value == "completed"
    assert len(result.entries) == len(samples)
    per = score(samples, result)
    correct = sum(c for c, _ in per.values())
    wrong = [
        (s.text, s.verdict, s.fields, e.verdict, e.fields)
        for s, e in zip(samples, result.entries, strict=True)
        if not (e.verdict == s.verdict and (s.verdict != "mismatch" or tuple(e.fields) == s.fields))
    ]
    assert correct / len(samples) >= 0.95, wrong
    fabricated = [e for s, e in zip(samples, result.entries, strict=True) if s.verdict == "not_found"]
    assert fabricated and all(e.verdict != "verified" for e in fabricated)
    requests = sum(site.requests.values())
    assert result.requests == requests
    assert requests / len(samples) <= 1.2, site.requests
    # every match carries a corrected GB/T string and the record
    for e in result.entries:
        if e.verdict in ("verified", "mismatch"):
            assert e.record is not None and e.corrected and "[" in e.corrected


async def test_a_pasted_numbered_list_is_split_and_judged_entry_by_entry(clock: FakeClock, store: Store) -> None:
    samples = [s for s in build() if s.verdict in ("verified", "not_found")][:20]
    text = "\n".join(f"[{i + 1}] {s.text.split('] ', 1)[-1]}" for i, s in enumerate(samples))
    _, result = await run(clock, store, CorpusBackend(), VerifyInput(text=text))
    assert [e.verdict for e in result.entries] == [s.verdict for s in samples]


async def test_a_second_run_is_answered_from_the_store_for_titles_it_knows(clock: FakeClock, store: Store) -> None:
    samples = [s for s in build() if s.verdict == "verified"][:10]
    text = "\n".join(s.text for s in samples)
    await run(clock, store, CorpusBackend(), VerifyInput(text=text))
    again = CorpusBackend()
    _, result = await run(clock, store, again, VerifyInput(text=text))
    assert again.requests["grid"] == 0
    assert again.requests["export"] == 0  # the first run's export answers were stored
    assert [e.verdict for e in result.entries] == ["verified"] * 10


async def test_exact_titles_take_one_grid_request_per_ten_entries(clock: FakeClock, store: Store) -> None:
    samples = [s for s in build() if s.verdict == "verified"][:23]
    site = CorpusBackend()
    await run(clock, store, site, VerifyInput(references=[s.text for s in samples]))
    assert site.requests["grid"] == 3
    assert site.requests["export"] <= 2


async def test_missing_volume_issue_pages_come_from_one_export_request(clock: FakeClock, store: Store) -> None:
    samples = [s for s in build() if s.verdict == "verified"][:12]
    site = CorpusBackend()
    _, result = await run(clock, store, site, VerifyInput(references=[s.text for s in samples]))
    assert site.requests["export"] == 1
    assert all(e.record is not None and e.record.pages for e in result.entries)


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({}, "INVALID_ARGUMENT"),
        ({"text": "a", "references": ["b"]}, "INVALID_ARGUMENT"),
        ({"references": []}, "TOO_MANY_REFERENCES"),
        ({"references": ["x"] * 201}, "TOO_MANY_REFERENCES"),
        ({"text": "x" * (512 * 1024 + 1)}, "INPUT_TOO_LARGE"),
        # the list is held to the text's 512 KB too: 200 entries of any length went through
        # (two of 600 KB were parsed and echoed back, 1.2 MB in the answer)
        ({"references": ["x" * 600_000]}, "INPUT_TOO_LARGE"),
        ({"references": ["违" * 1000] * 200}, "INPUT_TOO_LARGE"),
    ],
)
def test_bad_input_is_a_coded_error(kwargs: dict, code: str) -> None:
    with pytest.raises(CnkiError) as info:
        VerifyInput(**kwargs)
    assert info.value.code == code


def test_the_labelled_set_covers_every_class_and_kind_of_mismatch() -> None:
    samples = build()
    kinds = Counter(s.verdict for s in samples)
    assert set(kinds) == {"verified", "mismatch", "not_found", "ambiguous", "unparsable"}
    fields = {f for s in samples for f in s.fields}
    assert fields == {"year", "source", "volume", "issue", "pages", "authors", "title", "type"}


async def test_a_corrected_entry_is_the_export_of_the_stored_record_without_the_expiring_token(
    clock: FakeClock, store: Store
) -> None:
    # the corrected string is what export_citations writes for the record (`cite_source`): the
    # stored publication date (a newspaper's day, not just its year) and no kcms2 `v` token
    newspaper = "王刚英：《推动自动驾驶汽车高质量发展》，《人民法院报》2022年6月1日。"  # corpus r0061
    samples = build()
    inp = VerifyInput(references=[*(s.text for s in samples), newspaper])
    _, result = await run(clock, store, CorpusBackend(), inp)
    matched = [e for e in result.entries if e.record is not None and e.corrected]
    assert len(matched) >= 40
    assert [e.corrected for e in matched if "v=" in (e.corrected or "")] == []
    last = result.entries[-1]
    assert last.record is not None and last.record.doc_type == "报纸", last
    assert "人民法院报, 2022-06-01" in (last.corrected or ""), last.corrected  # the day, not "2022"


# Titles with their own full-width punctuation (corpus r0029: `：`; r0763: `——`, a title the
# corpus holds twice, told apart by the entry's authors and journal).
FULLWIDTH_TITLED = [
    "许涛, 侯超燕. 违约金：从“有没有”到“好不好”[N]. 人民法院报, 2023-02-17(2).",
    "任丽然, 邓勇磊, 尹涵佑, 等. 数字技术对企业创新的影响——基于断点回归的实证分析[J]. 中国工业经济, 2018, 28(4): 75-84.",
]


async def test_a_title_with_its_own_full_width_punctuation_is_found_by_the_exact_title_request(
    clock: FakeClock, store: Store
) -> None:
    site = CorpusBackend()
    _, result = await run(clock, store, site, VerifyInput(references=FULLWIDTH_TITLED))
    assert [e.verdict for e in result.entries] == ["verified", "verified"], result.entries
    assert [e.searches for e in result.entries] == [["篇名精确检索"], ["篇名精确检索"]]
    assert site.requests["grid"] == 1  # one exact-title batch, no fallback search


async def test_a_second_run_costs_nothing_once_the_export_filled_the_stored_papers(
    clock: FakeClock, store: Store
) -> None:
    await run(clock, store, CorpusBackend(), VerifyInput(references=FULLWIDTH_TITLED))
    again = CorpusBackend()
    _, result = await run(clock, store, again, VerifyInput(references=FULLWIDTH_TITLED))
    assert sum(again.requests.values()) == 0, again.requests
    assert [e.searches for e in result.entries] == [["本地记录"], ["本地记录"]]
    journal = result.entries[1]
    assert journal.verdict == "verified" and journal.warnings == [], journal
    assert journal.record is not None and (journal.record.volume, journal.record.issue, journal.record.pages) == (
        "28", "4", "75-84"
    )


async def test_an_online_first_paper_is_never_corrected_with_the_entrys_volume_issue_and_pages(
    clock: FakeClock, store: Store
) -> None:
    # corpus r0019: 网络首发 in 法学评论, no volume, issue or pages on CNKI yet
    invented = "范杰丽, 龚芳, 闫丹, 等. 约定违约金调整规则的法律规制研究[J]. 法学评论, 2026, 44(1): 1-20."
    _, result = await run(clock, store, CorpusBackend(), VerifyInput(references=[invented]))
    [entry] = result.entries
    assert entry.record is not None and entry.record.title == "约定违约金调整规则的法律规制研究"
    assert entry.corrected == "范杰丽, 龚芳, 闫丹, 等. 约定违约金调整规则的法律规制研究[J]. 法学评论, 2026."
    assert ONLINE_FIRST_NUMBERS in entry.warnings, entry.warnings


async def test_a_newspaper_article_cited_on_the_wrong_day_is_a_date_mismatch(clock: FakeClock, store: Store) -> None:
    # corpus r0029 appeared in 人民法院报 on 2023-02-17
    wrong_day = "许涛, 侯超燕. 违约金：从“有没有”到“好不好”[N]. 人民法院报, 2023-03-17(2)."
    _, result = await run(clock, store, CorpusBackend(), VerifyInput(references=[wrong_day]))
    [entry] = result.entries
    assert (entry.verdict, entry.fields) == ("mismatch", ["date"]), entry
    # the record carries CNKI's newspaper DOI (docs/simulator.md "CNKI DOIs beyond journals")
    assert entry.corrected == (
        "许涛, 侯超燕. 违约金：从“有没有”到“好不好”[N/OL]. 人民法院报, 2023-02-17(2). DOI:10.28514/n.cnki.ncnuu.2023.564538."
    )


async def test_a_corrected_entry_keeps_the_publisher_and_year_the_record_lacks(clock: FakeClock, store: Store) -> None:
    # corpus r0027 (proceedings: CNKI gives no place or publisher) and r0780 (a book listed without a year)
    refs = [
        "陶欣一. 违约金调整规则的反思与重构[C]//中国法学会民法学研究会年会论文集. 武汉: 中山大学出版社, 2016: 286-295.",
        "廖明丹. 数字文物保护概论[M]. 北京: 文物出版社, 2015.",
    ]
    _, result = await run(clock, store, CorpusBackend(), VerifyInput(references=refs))
    assert [e.verdict for e in result.entries] == ["verified", "verified"], result.entries
    assert [e.corrected for e in result.entries] == [
        "陶欣一. 违约金调整规则的反思与重构[C]//中国法学会民法学研究会年会论文集. 武汉: 中山大学出版社, 2016: 286-295.",
        "廖明丹. 数字文物保护概论[M]. 北京: 文物出版社, 2015.",
    ]


async def test_a_not_found_entry_whose_fallback_search_failed_says_it_cannot_be_judged(
    clock: FakeClock, store: Store
) -> None:
    class FallbackFails(CorpusBackend):
        async def grid(self, request: GridRequest, op: SiteOp | None = None, follow: GridFollow | None = None) -> GridPage:
            if self.requests["grid"]:  # the exact-title batch answers, the fallback search fails
                self.requests["grid"] += 1
                raise ParserUnsupported("页面结构无法识别")
            return await super().grid(request, op, follow)

    missing = "王小明. 一篇知网没有的论文之二[J]. 法学评论, 2026."
    record, result = await run(clock, store, FallbackFails(), VerifyInput(references=[missing]))
    assert [e.code for e in record.errors] == ["PARSER_UNSUPPORTED"]
    [entry] = result.entries
    assert entry.verdict == "not_found" and entry.searches == ["篇名精确检索"]
    assert entry.warnings  # the failed search is named: not_found is no evidence here


async def test_a_not_found_entry_whose_exact_title_search_failed_says_it_cannot_be_judged(
    clock: FakeClock, store: Store
) -> None:
    class ExactFails(CorpusBackend):
        async def grid(self, request: GridRequest, op: SiteOp | None = None, follow: GridFollow | None = None) -> GridPage:
            if not self.requests["grid"]:  # the exact-title batch fails, the fallback search answers
                self.requests["grid"] += 1
                raise ParserUnsupported("页面结构无法识别")
            return await super().grid(request, op, follow)

    missing = "王小明. 一篇知网没有的论文之三[J]. 法学评论, 2026."
    record, result = await run(clock, store, ExactFails(), VerifyInput(references=[missing]))
    assert [e.code for e in record.errors] == ["PARSER_UNSUPPORTED"]
    [entry] = result.entries
    assert entry.verdict == "not_found" and len(entry.searches) == 1 and entry.warnings


async def test_a_two_character_name_padded_with_a_full_width_space_still_finds_the_paper_by_author(
    clock: FakeClock, store: Store
) -> None:
    # Word lists pad two-character names to align them (贾　楠); CNKI writes 贾楠. The title here is
    # wrong, so only the first author + source search can find the paper (a title mismatch).
    entry = "[1] 贾　楠, 夏思萍, 白嘉嘉. 约定违约金酌减规则之法律规制研究[J]. 现代法学, 2014, 27(6): 75-99."
    _, result = await run(clock, store, CorpusBackend(), VerifyInput(text=entry))
    [got] = result.entries
    assert got.verdict == "mismatch" and got.fields == ["title"]
    assert got.record is not None and got.record.title == "约定违约金酌减规则的法律规制研究"


async def test_an_entry_with_more_title_spellings_than_a_request_holds_is_judged_with_the_rest(
    clock: FakeClock, store: Store
) -> None:
    # 〈〉, straight quotes, a lone dash and CO₂ give this title 12 lookup spellings, more than
    # one exact-title request holds: it is asked alone, and every entry still gets its verdict
    many = '[1] 王明. 论〈民法典〉中"CO₂"排放权的法律属性：以碳交易为例—兼论碳市场[J]. 法学研究, 2021, 43(2): 1-10.'
    samples = [s for s in build() if s.verdict == "verified"][:9]
    site = CorpusBackend()
    record, result = await run(clock, store, site, VerifyInput(references=[many, *(s.text for s in samples)]))
    assert record.status.value == "completed" and not record.errors
    assert [e.verdict for e in result.entries] == ["not_found"] + ["verified"] * 9
    assert "篇名精确检索" in result.entries[0].searches


async def test_an_entry_left_without_its_fallback_search_when_the_budget_ran_out_says_it_cannot_be_judged(
    clock: FakeClock, store: Store
) -> None:
    # a real paper cited with a mistyped title (corpus r0001): only the fallback search finds it.
    # With the budget spent on the exact-title request, it stayed not_found with no word of the
    # search it never had, which read as a fabricated reference
    garbled = "贾楠, 夏思萍, 白嘉嘉. 约定违约金酌减规则之法律规制研究[J]. 现代法学, 2014, 27(6): 75-99."
    jobs = JobManager(clock, MemorySink())
    budget = DEFAULT_BUDGETS[OperationKind.VERIFY].model_copy(update={"max_requests": 1})

    async def runner(ctx: OperationContext) -> VerifyResult:
        return await verify_references(VerifyInput(references=[garbled]), store, CorpusBackend(), ctx)

    [record] = await clock.run_until_complete(jobs.start(OperationKind.VERIFY, runner, budget).finish())
    assert record.status.value == "partial" and [e.code for e in record.errors] == ["BUDGET_EXHAUSTED"]
    [entry] = VerifyResult.model_validate(record.result).entries
    assert entry.verdict == "not_found" and entry.searches == ["篇名精确检索"]
    assert UNFINISHED_SEARCH in entry.warnings, entry.warnings


async def test_a_reference_listed_twice_costs_one_fallback_search(clock: FakeClock, store: Store) -> None:
    # an invented title and a real paper's mistyped one (corpus r0001), each listed twice (and once
    # more numbered): every copy asked its own fallback search, 5 requests where 2 say the same
    invented = "张明, 李华. 量子纠缠视角下民事诉讼证明责任的重新分配[J]. 现代法学, 2014, 27(6): 75-99."
    garbled = "贾楠, 夏思萍, 白嘉嘉. 约定违约金酌减规则之法律规制研究[J]. 现代法学, 2014, 27(6): 75-99."
    site = CorpusBackend()
    _, result = await run(clock, store, site, VerifyInput(references=[invented, garbled, invented, garbled, "[3] " + invented]))
    assert site.requests["grid"] == 3  # one exact-title batch, one fallback search per distinct entry
    assert [(e.verdict, e.fields) for e in result.entries] == [
        ("not_found", []), ("mismatch", ["title"]), ("not_found", []), ("mismatch", ["title"]), ("not_found", [])
    ]
    assert all(len(e.searches) == 2 for e in result.entries)  # each copy names the search that judged it


async def test_the_first_author_search_leaves_out_the_authors_country(clock: FakeClock, store: Store) -> None:
    # corpus r0001 with a mistyped title: only the first author + source search finds it, and
    # `[美]贾楠` asked CNKI for an author named `[美]贾楠`
    entry = "[美]贾楠, 夏思萍, 白嘉嘉. 约定违约金酌减规则之法律规制研究[J]. 现代法学, 2014, 27(6): 75-99."
    _, result = await run(clock, store, CorpusBackend(), VerifyInput(references=[entry]))
    [got] = result.entries
    assert (got.verdict, got.fields) == ("mismatch", ["title"]), got


@pytest.mark.parametrize("stop", ["cancel", "deadline"])
async def test_a_check_stopped_midway_keeps_the_entries_it_judged(clock: FakeClock, store: Store, stop: str) -> None:
    """A check cancelled (or stopped by its time budget) while a fallback search was in flight
    answered `result: null`: every entry already judged was lost. Now the entries judged so far are
    its result, and one whose searches never all ran says it cannot be judged."""
    never = asyncio.Event()

    class FallbackHangs(CorpusBackend):
        async def grid(self, request: GridRequest, op: SiteOp | None = None, follow: GridFollow | None = None) -> GridPage:
            if self.requests["grid"]:  # the exact-title batch answers, the fallback search never does
                await never.wait()
            return await super().grid(request, op, follow)

    known = next(s for s in build() if s.verdict == "verified")
    missing = "王小明. 一篇知网没有的论文之四[J]. 法学评论, 2026."
    jobs = JobManager(clock, MemorySink())
    inp = VerifyInput(references=[known.text, missing])
    site = FallbackHangs()
    job = jobs.start(
        OperationKind.VERIFY,
        lambda ctx: verify_references(inp, store, site, ctx),
        BudgetSpec(max_requests=300, timeout_seconds=60),
    )
    if stop == "cancel":
        await clock.advance_settled(10.0)
        [record] = await clock.run_until_complete(jobs.cancel(job.operation_id))
        assert record.status.value == "cancelled" and record.errors[0].details["result_kept"] is True
    else:
        [record] = await clock.run_until_complete(job.finish())
        assert record.status.value == "partial" and record.errors[0].code == "BUDGET_EXHAUSTED"
    result = VerifyResult.model_validate(record.result)
    assert [e.verdict for e in result.entries] == ["verified", "not_found"]
    assert UNFINISHED_SEARCH not in result.entries[0].warnings
    assert UNFINISHED_SEARCH in result.entries[1].warnings
