"""A paper first published online (网络首发) and later printed in an issue keeps its online day as
发表时间 on its list row (CJFQ rows `2026-04-12 09:47`, saved page kns8s-grid/kaffu_waam_p1.html):
online in December, printed in a January issue, the row's year is the one before. The citation year
is the issue's, which CNKI's batch export (%D) gives as a detail page's `.top-tip` does."""

from __future__ import annotations

from typing import Any

from corpus_backend import CorpusBackend

from cnki_mcp.cite import export, from_paper
from cnki_mcp.clock import FakeClock
from cnki_mcp.jobs import JobManager, MemorySink, OperationContext, OperationKind
from cnki_mcp.models import ExportRecord
from cnki_mcp.operations import DEFAULT_BUDGETS
from cnki_mcp.pipeline.verify import VerifyInput, VerifyResult, verify_references
from cnki_mcp.sim.corpus import Corpus
from cnki_mcp.store import Store
from tests.paper_samples import sample_detail, sample_row

PRINTED = {
    "id": "t9x001", "db": "CJFD", "filename": "FXPL202601007", "type": "期刊",
    "title": "数据跨境流动规则的时间维度研究", "authors": [{"name": "冯时", "institution": "武汉大学法学院"}],
    "source": "法学评论", "year": 2026, "date": "2025-12-18 10:31", "volume": "44", "issue": "1",
    "pages": "88-99", "abstract": "本文研究数据跨境流动规则的时间维度。", "keywords": ["数据跨境流动"],
}  # fmt: skip
CITED = "[1] 冯时. 数据跨境流动规则的时间维度研究[J]. 法学评论, 2026, 44(1): 88-99."


async def _verify(clock: FakeClock, store: Store, site: CorpusBackend, text: str) -> VerifyResult:
    jobs = JobManager(clock, MemorySink())
    out: list[VerifyResult] = []

    async def runner(ctx: OperationContext) -> VerifyResult:
        out.append(await verify_references(VerifyInput(text=text), store, site, ctx))
        return out[-1]

    job = jobs.start(OperationKind.VERIFY, runner, DEFAULT_BUDGETS[OperationKind.VERIFY])
    await clock.run_until_complete(job.finish())
    return out[0]


async def test_a_paper_listed_with_its_online_day_of_the_year_before_is_cited_with_its_issue_year(
    clock: FakeClock, store: Store
) -> None:
    corpus = Corpus.load()
    corpus.add_record(PRINTED)
    result = await _verify(clock, store, CorpusBackend(corpus), CITED)
    [entry] = result.entries
    # the row said 2025 (its online day): the correct entry was a year mismatch 'corrected' to 2025
    assert (entry.verdict, entry.fields) == ("verified", [])
    assert entry.corrected is not None and "法学评论, 2026, 44(1): 88-99" in entry.corrected
    assert entry.record is not None
    paper = store.get(entry.record.record_ref)
    assert paper is not None and paper.year == 2026 and paper.date == "2025-12-18 10:31"
    text = export([from_paper(paper.public_dict())], "gbt7714").text
    assert "法学评论, 2026, 44(1): 88-99" in text


def _exported(**kw: Any) -> ExportRecord:
    base: dict[str, Any] = {"ref_type": "Journal Article", "title": "深度学习在医学影像中的应用", "year": 2024,
                            "volume": "47", "issue": "3"}  # fmt: skip
    return ExportRecord.model_validate({**base, **kw})


def test_the_export_never_moves_a_detail_pages_year_nor_an_online_first_papers(
    store: Store, clock: FakeClock
) -> None:
    # listed online first (CAPJ, no issue yet): its year is its online year, whatever the export says
    capj = sample_row().native.model_copy(update={"dbname": "CAPJ"})
    [online] = store.upsert_from_grid(
        [sample_row(date="2023-12-20 10:31", year=2023, native=capj)], clock.now()
    )
    store.fill_from_export(online.record_ref, _exported(year=2024), clock.now())
    assert store.get(online.record_ref).year == 2023  # type: ignore[union-attr]
    # a detail page's year is the issue's already
    [row_paper] = store.upsert_from_grid(
        [sample_row(title="另一篇论文", date="2023-12-20 10:31", year=2023,
                    native=sample_row().native.model_copy(update={"dbname": "CJFD2024", "filename": "JSJX202401009"}))],
        clock.now(),
    )  # fmt: skip
    detail = sample_detail(title="另一篇论文", year=2023, native=row_paper.native.model_copy())
    confirmed = store.upsert_from_detail(detail, None, clock.now())
    store.fill_from_export(confirmed.record_ref, _exported(title="另一篇论文", year=2024), clock.now())
    assert store.get(confirmed.record_ref).year == 2023  # type: ignore[union-attr]
    # a thesis's export year is its degree year, no issue: left alone
    [thesis] = store.upsert_from_grid(
        [sample_row(title="学位论文一篇", doc_type="硕士", date="2023-06-01", year=2023,
                    native=sample_row().native.model_copy(update={"dbname": "CMFD202401", "filename": "1023000001.nh"}))],
        clock.now(),
    )  # fmt: skip
    store.fill_from_export(
        thesis.record_ref, _exported(ref_type="Thesis", year=2024, volume=None, issue=None), clock.now()
    )
    assert store.get(thesis.record_ref).year == 2023  # type: ignore[union-attr]


async def test_the_issue_year_survives_the_row_listed_again_by_a_later_search(
    clock: FakeClock, store: Store
) -> None:
    corpus = Corpus.load()
    corpus.add_record(PRINTED)
    site = CorpusBackend(corpus)
    first = await _verify(clock, store, site, CITED)
    assert first.entries[0].record is not None
    ref = first.entries[0].record.record_ref
    paper = store.get(ref)
    assert paper is not None and paper.year == 2026
    # a later search lists the same CJFQ row again, 发表时间 its online day of the year before;
    # nothing asks for the export again (volume, issue and pages are filled, read_in_full holds)
    row = sample_row(title=paper.title, authors=["冯时"], source="法学评论", year=2025,
                     date="2025-12-18 10:31", native=paper.native)  # fmt: skip
    store.upsert_from_grid([row], clock.now())
    again = store.get(ref)
    assert again is not None and again.year == 2026
    assert "issue_year_read" not in again.public_dict()
    assert "法学评论, 2026, 44(1): 88-99" in export([from_paper(again.public_dict())], "gbt7714").text
    second = await _verify(clock, store, site, CITED)
    assert (second.entries[0].verdict, second.entries[0].fields) == ("verified", [])
