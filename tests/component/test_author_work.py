"""What a researcher does with authors, in process against the simulator's corpus (its evaluator
and pages, the production compiler and parsers): one person's papers by name, co-authors who share
a name, and which author is at which institution."""

from __future__ import annotations

from typing import Any

from corpus_backend import CorpusBackend

from cnki_mcp.clock import FakeClock
from cnki_mcp.jobs import JobManager, MemorySink, OperationContext, OperationKind
from cnki_mcp.pipeline.models import MetadataInput, StructuredSearchInput
from cnki_mcp.pipeline.research import ResearchPipeline
from cnki_mcp.sim.corpus import Corpus
from cnki_mcp.store import Store
from tests.pipeline_fakes import run_metadata

KEYWORD = "作者探针"
RECORDS: list[dict[str, Any]] = [
    {"id": "au1", "title": "作者探针研究之一", "authors": [
        {"name": "张伟", "institution": "清华大学计算机科学与技术系"},
        {"name": "王磊", "institution": "北京大学信息科学技术学院"},
    ]},
    {"id": "au2", "title": "作者探针研究之二", "authors": [
        {"name": "王磊", "institution": "清华大学"}, {"name": "张伟", "institution": "浙江大学"},
    ]},
    {"id": "au3", "title": "作者探针研究之三", "authors": [{"name": "张伟华", "institution": "复旦大学"}]},
    {"id": "au4", "title": "作者探针研究之四", "authors": [
        {"name": "阿卜杜拉·买买提", "institution": "新疆大学"}, {"name": "李娜", "institution": "新疆大学"},
    ]},
    {"id": "au5", "title": "作者探针研究之五", "authors": [
        {"name": "王伟", "institution": "中国科学院自动化研究所"}, {"name": "李强", "institution": "南开大学"},
        {"name": "王伟", "institution": "中国科学院大学人工智能学院"},
    ]},
]  # fmt: skip


def _corpus() -> Corpus:
    corpus = Corpus.load()
    for i, record in enumerate(RECORDS):
        corpus.add_record({
            "db": "CJFD", "type": "期刊", "filename": f"ZZTZ2024{i:02d}0001", "source": "计算机学报", "year": 2024,
            "keywords": [KEYWORD], **record,
        })  # fmt: skip
    return corpus


async def _search(clock: FakeClock, pipe: ResearchPipeline, expression: dict[str, Any]) -> dict[str, Any]:
    inp = StructuredSearchInput(expression=expression, limit=20)

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.structured(inp, ctx)

    job = JobManager(clock, MemorySink()).start(OperationKind.SEARCH, runner, inp.budget())
    [record] = await clock.run_until_complete(job.finish())
    assert record.status == "completed" and record.result is not None, record.errors
    return dict(record.result)


def _found(result: dict[str, Any]) -> list[tuple[str, list[str]]]:
    return sorted((r["title"], r["authors"]) for r in result["results"])


async def test_an_author_named_without_a_match_finds_that_name_not_longer_names_holding_it(
    clock: FakeClock, store: Store
) -> None:
    # 模糊 张伟 also lists 张伟华's paper (and the corpus's 张伟文): other people, shown as hits
    pipe = ResearchPipeline(CorpusBackend(_corpus()), store, clock, now_year=lambda: 2026)
    found = await _search(clock, pipe, {"field": "authors", "value": "张伟"})
    assert _found(found) == [("作者探针研究之一", ["张伟", "王磊"]), ("作者探针研究之二", ["王磊", "张伟"])]
    first = await _search(clock, pipe, {"field": "first_author", "value": "张伟"})
    assert _found(first) == [("作者探针研究之一", ["张伟", "王磊"])]
    fuzzy = await _search(clock, pipe, {"field": "authors", "value": "张伟", "match": "phrase"})
    assert ("作者探针研究之三", ["张伟华"]) in _found(fuzzy)  # asked for by name, 模糊 still lists them


async def test_a_transcribed_name_typed_with_another_dot_finds_the_name_cnki_lists(
    clock: FakeClock, store: Store
) -> None:
    pipe = ResearchPipeline(CorpusBackend(_corpus()), store, clock, now_year=lambda: 2026)
    for typed in ("阿卜杜拉•买买提", "阿卜杜拉・买买提", "阿卜杜拉.买买提", "阿卜杜拉·买买提"):
        found = await _search(clock, pipe, {"field": "authors", "value": typed})
        assert _found(found) == [("作者探针研究之四", ["阿卜杜拉·买买提", "李娜"])], typed


async def test_co_authors_sharing_a_name_are_both_listed(clock: FakeClock, store: Store) -> None:
    pipe = ResearchPipeline(CorpusBackend(_corpus()), store, clock, now_year=lambda: 2026)
    found = await _search(clock, pipe, {"field": "keywords", "value": KEYWORD, "match": "exact"})
    assert ("作者探针研究之五", ["王伟", "李强", "王伟"]) in _found(found)


async def test_get_metadata_says_which_author_is_at_which_institution(clock: FakeClock, store: Store) -> None:
    # 张伟 AND 清华大学 lists 作者探针研究之二, whose 张伟 is at 浙江大学 (his co-author is at 清华):
    # the flat institution list cannot tell, the pairing from the detail page can
    pipe = ResearchPipeline(CorpusBackend(_corpus()), store, clock, now_year=lambda: 2026)
    found = await _search(clock, pipe, {"op": "and", "items": [
        {"field": "authors", "value": "张伟"}, {"field": "institutions", "value": "清华大学"},
    ]})  # fmt: skip
    refs = {r["title"]: r["record_ref"] for r in found["results"]}
    record = await run_metadata(clock, pipe, MetadataInput(record_refs=[refs["作者探针研究之二"]]))
    [paper] = record.result["records"]
    assert paper["authors"] == ["王磊", "张伟"]
    assert paper["author_institutions"] == [["清华大学"], ["浙江大学"]]
    only = await run_metadata(
        clock, pipe, MetadataInput(record_refs=[refs["作者探针研究之二"]], fields=["institutions"], local_only=True)
    )
    [paper] = only.result["records"]
    assert paper["author_institutions"] == [["清华大学"], ["浙江大学"]]
