"""A title CNKI lists under one work's online-first record (CAPJ, 网络首发) and its final record in
the issue (both kept, different file names: site-rules.md §3.10, `works.final_of`) names that
work: the title-taking tools take the final record instead of IDENTITY_AMBIGUOUS, and a reference to
it is judged against the final record, not called ambiguous. Other records of one title (a
conference version, another author's paper) still make the caller choose. Through the simulator's
corpus in process."""

from __future__ import annotations

from typing import Any

from cnki_mcp.clock import FakeClock
from cnki_mcp.jobs import JobManager, MemorySink, OperationContext, OperationKind
from cnki_mcp.operations import DEFAULT_BUDGETS
from cnki_mcp.pipeline.models import MetadataInput
from cnki_mcp.pipeline.research import ResearchPipeline
from cnki_mcp.pipeline.verify import VerifyInput, VerifyResult, verify_references
from cnki_mcp.sim.corpus import Corpus
from cnki_mcp.store import Store
from tests.corpus_backend import CorpusBackend
from tests.pipeline_fakes import run_metadata

TITLE = "个人信息删除权的实现路径研究"
FINAL = {
    "id": "t9y001", "db": "CJFD", "filename": "FXPL202602011", "type": "期刊", "title": TITLE,
    "authors": [{"name": "宋澄"}, {"name": "陆明"}], "source": "法学评论", "year": 2026, "date": "2026-03-15",
    "volume": "44", "issue": "2", "pages": "60-72", "abstract": "本文研究个人信息删除权。", "keywords": ["删除权"],
}  # fmt: skip
# online in January, in the March issue: one year, so the year does not tell the records apart
ONLINE = {**FINAL, "id": "t9y002", "filename": "FXPL20260110002", "online_first": True, "date": "2026-01-10",
          "volume": None, "issue": None, "pages": None}  # fmt: skip
CONFERENCE = {**FINAL, "id": "t9y003", "db": "CPFD", "type": "会议", "filename": "ZGFX202511001005",
              "source": "中国法学会网络与信息法学研究会年会论文集", "year": 2025, "date": "2025-11-20",
              "volume": None, "issue": None, "pages": "5-19"}  # fmt: skip


def _backend(*records: dict[str, Any]) -> CorpusBackend:
    corpus = Corpus.load()
    for record in records:
        corpus.add_record(record)
    return CorpusBackend(corpus)


async def test_a_title_listed_as_online_first_and_final_records_names_the_final_record(
    clock: FakeClock, store: Store
) -> None:
    pipe = ResearchPipeline(_backend(ONLINE, FINAL), store, clock, now_year=lambda: 2026)
    for _ in range(2):  # located on CNKI, then both records are stored and found locally
        record = await run_metadata(clock, pipe, MetadataInput(titles=[TITLE], fields=["volume", "issue", "pages"]))
        assert record.status == "completed", record.errors
        [paper] = record.result["records"]
        assert store.get(paper["record_ref"]).native.filename == "FXPL202602011"  # type: ignore[union-attr]
        assert (paper["volume"], paper["issue"], paper["pages"]) == ("44", "2", "60-72")


async def test_a_conference_version_of_the_title_still_makes_the_caller_choose(clock: FakeClock, store: Store) -> None:
    pipe = ResearchPipeline(_backend(ONLINE, FINAL, CONFERENCE), store, clock, now_year=lambda: 2026)
    record = await run_metadata(clock, pipe, MetadataInput(titles=[TITLE], fields=["year"]))
    [error] = record.errors
    assert error.code == "IDENTITY_AMBIGUOUS" and error.details["count"] == 3


async def _verify(clock: FakeClock, store: Store, backend: CorpusBackend, text: str) -> VerifyResult:
    out: list[VerifyResult] = []

    async def runner(ctx: OperationContext) -> VerifyResult:
        out.append(await verify_references(VerifyInput(text=text), store, backend, ctx))
        return out[-1]

    job = JobManager(clock, MemorySink()).start(OperationKind.VERIFY, runner, DEFAULT_BUDGETS[OperationKind.VERIFY])
    await clock.run_until_complete(job.finish())
    return out[0]


async def test_a_reference_to_a_work_with_online_first_and_final_records_is_judged_against_the_final(
    clock: FakeClock, store: Store
) -> None:
    text = f"[1] 宋澄, 陆明. {TITLE}[J]. 法学评论, 2026, 44(2): 60-72.\n[2] 宋澄, 陆明. {TITLE}[J]. 法学评论, 2026."
    result = await _verify(clock, store, _backend(ONLINE, FINAL), text)
    for entry in result.entries:
        assert entry.verdict == "verified", entry
        assert entry.record is not None
        assert store.get(entry.record.record_ref).native.filename == "FXPL202602011"  # type: ignore[union-attr]
    assert "法学评论, 2026, 44(2): 60-72" in (result.entries[0].corrected or "")


async def test_wrong_numbers_citing_such_a_work_are_a_mismatch_with_the_final_records_numbers(
    clock: FakeClock, store: Store
) -> None:
    # The grid rows carry no volume, issue or pages: the final record's come from the batch export,
    # which was asked only for an entry judged against one record, so the entry was judged against
    # a final record with none and its wrong numbers were 'verified' (and copied into `corrected`).
    wrong = f"[1] 宋澄, 陆明. {TITLE}[J]. 法学评论, 2026, 45(3): 99-120."
    [entry] = (await _verify(clock, store, _backend(ONLINE, FINAL), wrong)).entries
    assert entry.verdict == "mismatch", entry
    assert {(d.field, d.entry, d.record) for d in entry.differences} == {
        ("volume", "45", "44"), ("issue", "3", "2"), ("pages", "99-120", "60-72"),
    }  # fmt: skip
    assert "2026, 44(2): 60-72" in (entry.corrected or "")


async def test_an_entry_citing_the_online_first_record_as_such_is_judged_against_it(
    clock: FakeClock, store: Store
) -> None:
    # online in December 2025, in a 2026 issue: an entry citing the online version ([J/OL], its
    # online year, no numbers) was a 'mismatch' on the year against the final record once every
    # fit of the work went to the final record
    online = {**ONLINE, "filename": "FXPL20251218002", "year": 2025, "date": "2025-12-18"}
    text = f"[1] 宋澄, 陆明. {TITLE}[J/OL]. 法学评论, 2025."
    [entry] = (await _verify(clock, store, _backend(online, FINAL), text)).entries
    assert entry.verdict == "verified", entry
    assert entry.record is not None
    assert store.get(entry.record.record_ref).native.filename == "FXPL20251218002"  # type: ignore[union-attr]
