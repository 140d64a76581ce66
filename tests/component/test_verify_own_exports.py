"""`verify_references` on the product's own reference lists: corpus records rendered by
`cnki_mcp.cite` in each formatted style (GB/T 7714, APA, MLA, Chicago, Vancouver) and pasted
back, under a `参考文献` heading, all come back `verified` against the record they were rendered
from (journal, 《》 title, thesis, conference, newspaper; Chinese, Western and pinyin names);
plus the corrected entry keeping what the record lacks, and a DOI finding a stored record."""

from __future__ import annotations

from typing import Any

import pytest
from corpus_backend import CorpusBackend

from cnki_mcp.cite import export
from cnki_mcp.clock import FakeClock
from cnki_mcp.jobs import JobManager, MemorySink, OperationContext, OperationKind
from cnki_mcp.operations import DEFAULT_BUDGETS
from cnki_mcp.pipeline.verify import VerifyInput, VerifyResult, verify_references
from cnki_mcp.query.compiler import compile_expression
from cnki_mcp.query.expr import parse_expression
from cnki_mcp.sim.corpus import Corpus, SimRecord
from cnki_mcp.site.backend import GridRequest
from cnki_mcp.store import Store

# journal (3 authors; DOI; 5 authors with a bracketed journal name), 《》 in a title, doctoral and
# master's theses, conference paper, newspaper, Western names, pinyin names, both mixed
IDS = ("r0001", "r0009", "r0753", "r0776", "r0021", "r0025", "r0027", "r0061", "r0739", "r0735", "r0737")


async def run(clock: FakeClock, store: Store, site: CorpusBackend, inp: VerifyInput) -> VerifyResult:
    jobs = JobManager(clock, MemorySink())
    out: list[VerifyResult] = []

    async def runner(ctx: OperationContext) -> VerifyResult:
        out.append(await verify_references(inp, store, site, ctx))
        return out[-1]

    job = jobs.start(OperationKind.VERIFY, runner, DEFAULT_BUDGETS[OperationKind.VERIFY])
    await clock.run_until_complete(job.finish())
    return out[0]


def _cited(r: SimRecord) -> dict[str, Any]:
    return {
        "record_ref": r.id, "title": r.title, "authors": [a.name for a in r.authors], "doc_type": r.type,
        "source": r.source, "year": r.year, "date": r.date, "volume": r.volume, "issue": r.issue,
        "pages": r.pages, "doi": r.doi,
    }


@pytest.mark.parametrize("style", ["gbt7714", "apa", "mla", "chicago", "vancouver", "markdown"])
async def test_the_products_own_export_in_each_style_is_verified(clock: FakeClock, store: Store, style: str) -> None:
    corpus = Corpus.load()
    records = [corpus.by_id[i] for i in IDS]
    text = "参考文献\n\n" + export([_cited(r) for r in records], style).text
    result = await run(clock, store, CorpusBackend(corpus), VerifyInput(text=text))
    got = [(e.verdict, e.record.title if e.record else None, e.fields) for e in result.entries]
    assert got == [("verified", r.title, []) for r in records]
    assert result.counts == {"verified": len(records)}


async def test_the_corrected_entry_keeps_the_place_and_numbers_the_record_lacks(clock: FakeClock, store: Store) -> None:
    # a book (CNKI's record has no place) and a list-only foreign article (no volume, issue,
    # pages or DOI before the export): the user's 北京 and 34(5): 2909-2918 stay in `corrected`
    book = "余晓明. 违约金导论[M]. 北京: 法律出版社, 2012."
    article = ("TANAKA Y, SMITH J, JOHNSON E. Modelling model compression of deep learning with graph-based "
               "methods[J]. IEEE Transactions on Neural Networks and Learning Systems, 2024, 34(5): 2909-2918.")
    result = await run(clock, store, CorpusBackend(), VerifyInput(references=[book, article]))
    first, second = result.entries
    assert first.verdict == "verified" and first.corrected is not None
    assert "北京: 法律出版社, 2012" in first.corrected and "出版地不详" not in first.corrected
    assert second.verdict == "verified" and second.corrected is not None
    assert "34(5): 2909-2918" in second.corrected, second.corrected


async def test_a_doi_finds_the_stored_record_whatever_the_title_says(clock: FakeClock, store: Store) -> None:
    # r0009 stored earlier with its DOI (a list row, then CNKI's export); an entry with a wrong
    # title but that DOI is matched locally, without a request, and reported as a title mismatch
    earlier = CorpusBackend()
    compiled = compile_expression(parse_expression({"field": "title", "match": "exact", "value": "违约金酌减规则的法律规制研究"}))
    page = await earlier.grid(GridRequest(subject=compiled.subject, anchor=compiled.anchor))
    [row] = [r for r in page.rows if r.title == "违约金酌减规则的法律规制研究"]
    [paper] = store.upsert_from_grid([row], clock.now())
    [exported] = await earlier.export_records([row.export_id or ""])
    store.fill_from_export(paper.record_ref, exported, clock.now())
    wrong = "向玉天, 罗诗俊. 量子纠缠视角下证明责任的重新分配[J]. 法学研究, 2019, 24(4): 34-49. DOI:10.3969/j.cnki.laws.2019.04.001."
    site = CorpusBackend()
    result = await run(clock, store, site, VerifyInput(references=[wrong]))
    [entry] = result.entries
    assert (entry.verdict, entry.fields) == ("mismatch", ["title"])
    assert entry.record is not None and entry.record.title == "违约金酌减规则的法律规制研究"
    assert sum(site.requests.values()) == 0


async def test_an_entrys_doi_rides_in_its_one_fallback_search(clock: FakeClock, store: Store) -> None:
    # an invented title under r0009's DOI: one exact-title request, then one fallback request
    # that also asks for the DOI (no extra request); grid rows carry no DOI, so with nothing
    # stored about that DOI the invented title is still not found
    fake = "向玉天. 量子纠缠视角下证明责任的重新分配[J]. 法学研究, 2019. DOI:10.3969/j.cnki.laws.2019.04.001."
    site = CorpusBackend()
    result = await run(clock, store, site, VerifyInput(references=[fake]))
    [entry] = result.entries
    assert entry.verdict == "not_found"
    assert site.requests["grid"] == 2
    assert entry.searches[-1].endswith("或 DOI“10.3969/j.cnki.laws.2019.04.001”")
