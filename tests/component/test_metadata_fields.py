"""`get_metadata` reads only what the requested fields need (DESIGN.md "get_metadata reads what
the fields need"), counted in requests against the simulator's corpus in process: list fields cost
nothing beyond locating the paper, volume/issue/pages/DOI/abstract/keywords come from CNKI's batch
export 20 papers per request, anything else from the detail page."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import replace
from typing import Any

from cnki_mcp.clock import FakeClock
from cnki_mcp.identity import Paper
from cnki_mcp.jobs import JobManager, MemorySink, OperationContext, OperationKind
from cnki_mcp.parse.reader import parse_reader
from cnki_mcp.pipeline.models import MetadataInput
from cnki_mcp.pipeline.research import ResearchPipeline
from cnki_mcp.reading_service import ReaderCapture, ReadingService
from cnki_mcp.sim.corpus import Corpus
from cnki_mcp.store import Store
from tests.corpus_backend import CorpusBackend, containing_corpus
from tests.pipeline_fakes import run_metadata


async def test_metadata_reads_only_what_the_requested_fields_need(clock: FakeClock, store: Store) -> None:
    backend = CorpusBackend()
    pipe = ResearchPipeline(backend, store, clock, now_year=lambda: 2026)
    titles: dict[str, Any] = {}
    once = Counter(r.title for r in backend.corpus.records)
    for r in backend.corpus.records:  # journal articles with a volume, one per title
        if r.volume and r.issue and r.type == "期刊" and not r.online_first and once[r.title] == 1:
            titles[r.title] = r
        if len(titles) == 25:
            break

    listed = await run_metadata(
        clock, pipe, MetadataInput(titles=list(titles), fields=["authors", "year", "source", "cited"])
    )
    assert listed.status == "completed", listed.errors
    assert len(listed.result["records"]) == 25
    assert backend.requests == Counter({"grid": 3})  # located 10 titles per request, nothing more

    backend.requests.clear()
    refs = [r["record_ref"] for r in listed.result["records"]]
    numbers = await run_metadata(
        clock, pipe, MetadataInput(record_refs=refs, fields=["volume", "issue", "pages"])
    )
    assert backend.requests == Counter({"export": 2})  # 25 papers: two batch exports, no detail page
    by_title = {r["title"]: r for r in numbers.result["records"]}
    assert all(
        by_title[t]["volume"] == rec.volume and by_title[t]["issue"] == rec.issue for t, rec in titles.items()
    )

    backend.requests.clear()
    await run_metadata(clock, pipe, MetadataInput(record_refs=refs, fields=["volume", "abstract"]))
    assert backend.requests == Counter()  # the export answered them already

    backend.requests.clear()
    funds = await run_metadata(clock, pipe, MetadataInput(record_refs=refs[:3], fields=["funds"]))
    assert backend.requests == Counter({"detail": 3})  # only the detail page has funds
    assert [r["record_ref"] for r in funds.result["records"]] == refs[:3]
    assert all(store.detail_page(ref) is not None for ref in refs[:3])

    backend.requests.clear()
    await run_metadata(clock, pipe, MetadataInput(record_refs=refs[:3]))
    assert backend.requests == Counter()  # every field: the fresh details answer


class DetailReader:
    """read_online_html's reader over the corpus: its capture carries the paper's detail page, as
    the reader's visit opens it before clicking HTML阅读 (one detail request)."""

    def __init__(self, backend: CorpusBackend) -> None:
        self.backend = backend

    async def read(self, paper: Paper, op: Any = None) -> ReaderCapture:
        assert paper.locator is not None
        detail = await self.backend.detail(paper.locator)
        body = parse_reader(
            '<html><head><meta name="citation_title" content="t"></head><body><div class="catalogboxs">'
            '<span class="tit">一、引言</span></div><div id="paperRead"><h2>一、引言</h2><p>' + '正文段落，包含足够多的文字。' * 40 + '</p></div></body></html>',
            "https://kns.cnki.net/reader/xml?invoice=S&nonce=T",
        )
        return ReaderCapture(page=body, detail=detail, detail_url=paper.locator)


async def test_a_detail_page_the_reader_opened_is_not_read_again_for_metadata(clock: FakeClock, store: Store) -> None:
    # read_online_html stored the page it opened without the parser version, so get_metadata
    # took it for a stale one and read it again a minute later (docs/benchmarks.md "Requests
    # across an agent session")
    backend = CorpusBackend()
    pipe = ResearchPipeline(backend, store, clock, now_year=lambda: 2026)
    title = next(r.title for r in backend.corpus.records if r.type == "期刊" and r.funds)
    listed = await run_metadata(clock, pipe, MetadataInput(titles=[title], fields=["authors"]))
    [ref] = [r["record_ref"] for r in listed.result["records"]]
    await ReadingService(store, DetailReader(backend), clock).read(ref)
    backend.requests.clear()
    funds = await run_metadata(clock, pipe, MetadataInput(record_refs=[ref], fields=["funds"]))
    assert funds.result["records"][0]["funds"]
    assert backend.requests == Counter()  # the reader's page, read seconds ago, answers


class SlowDetails(CorpusBackend):
    """Detail pages answered one fake second after they are asked for (two operations overlap)."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.clock = clock

    async def detail(self, locator: str, op: Any = None) -> Any:
        await self.clock.sleep(1)
        return await super().detail(locator, op)


async def test_two_clients_asking_for_the_same_details_at_once_read_each_page_once(
    clock: FakeClock, store: Store
) -> None:
    backend = SlowDetails(clock)
    pipe = ResearchPipeline(backend, store, clock, now_year=lambda: 2026)
    titles = [r.title for r in backend.corpus.records if r.type == "期刊"][:3]
    listed = await run_metadata(clock, pipe, MetadataInput(titles=titles, fields=["authors"]))
    refs = [r["record_ref"] for r in listed.result["records"]]
    backend.requests.clear()

    async def runner(ctx: OperationContext) -> Any:
        return await pipe.metadata(MetadataInput(record_refs=refs, fields=["funds"]), ctx)

    jobs = JobManager(clock, MemorySink())
    first = jobs.start(OperationKind.METADATA, runner)
    second = jobs.start(OperationKind.METADATA, runner)
    one, two = await clock.run_until_complete(first.finish(), second.finish())
    assert one.status == two.status == "completed"
    assert backend.requests["detail"] == len(refs) == 3  # not twice each
    assert one.result["records"] == two.result["records"]


async def test_an_export_that_found_no_doi_is_not_asked_again_within_thirty_days(
    clock: FakeClock, store: Store
) -> None:
    # journal papers and theses without a DOI (theses have no volume, issue or pages): the export answers once
    backend = CorpusBackend()
    pipe = ResearchPipeline(backend, store, clock, now_year=lambda: 2026)
    once = Counter(r.title for r in backend.corpus.records)
    picked = [r for r in backend.corpus.records if once[r.title] == 1 and r.type == "期刊" and not r.doi][:3]
    picked += [r for r in backend.corpus.records if once[r.title] == 1 and r.type in ("硕士", "博士") and not r.doi][:3]
    listed = await run_metadata(clock, pipe, MetadataInput(titles=[r.title for r in picked], fields=["title"]))
    refs = [r["record_ref"] for r in listed.result["records"]]
    assert len(refs) == 6
    wanted = MetadataInput(record_refs=refs, fields=["volume", "issue", "pages", "doi"])

    backend.requests.clear()
    first = await run_metadata(clock, pipe, wanted)
    assert backend.requests == Counter({"export": 1})
    assert {r["doi"] for r in first.result["records"]} == {None}

    backend.requests.clear()
    again = await run_metadata(clock, pipe, wanted)
    assert backend.requests == Counter()  # the export said CNKI has none
    assert again.result["records"] == first.result["records"]

    await clock.advance(31 * 24 * 3600)
    backend.requests.clear()
    await run_metadata(clock, pipe, wanted)
    assert backend.requests == Counter({"export": 1})  # 30 days on: asked again


async def test_a_title_asked_for_inside_book_title_marks_is_located_without_them(
    clock: FakeClock, store: Store
) -> None:
    backend = CorpusBackend()
    pipe = ResearchPipeline(backend, store, clock, now_year=lambda: 2026)
    # corpus r0001; r0005's own title starts with 《民法典》, which stays
    asked = ["《约定违约金酌减规则的法律规制研究》", " 《《民法典》实施背景下违约赔偿金酌减规则研究》", "《民法典》实施背景下违约赔偿金酌减规则研究"]
    record = await run_metadata(clock, pipe, MetadataInput(titles=asked, fields=["title"]))
    assert record.status == "completed", record.errors
    assert [r["title"] for r in record.result["records"]] == [
        "约定违约金酌减规则的法律规制研究", "《民法典》实施背景下违约赔偿金酌减规则研究"
    ]
    assert backend.requests == Counter({"grid": 1})


async def test_a_short_title_crowded_out_of_a_shared_lookup_page_is_asked_alone(
    clock: FakeClock, store: Store
) -> None:
    # for each of two titles, 30 longer titles containing it rank above the paper titled just that,
    # so the page of 50 rows the two titles share holds neither paper; each alone lists 31 rows
    titles = ["违约金的性质", "定金罚则"]
    backend = CorpusBackend(containing_corpus(titles, 30))
    pipe = ResearchPipeline(backend, store, clock, now_year=lambda: 2026)
    record = await run_metadata(clock, pipe, MetadataInput(titles=titles, fields=["title"]))
    assert record.status == "completed", record.errors
    assert sorted(r["title"] for r in record.result["records"]) == sorted(titles)
    assert backend.requests == Counter({"grid": 3})  # the shared page, then each title alone


async def test_a_title_asked_alone_reads_on_to_the_page_that_holds_its_own_row(clock: FakeClock, store: Store) -> None:
    # 60 longer titles containing 违约金的性质 rank above the paper titled just that: its row is on page 2
    backend = CorpusBackend(containing_corpus(["违约金的性质"], 60))
    pipe = ResearchPipeline(backend, store, clock, now_year=lambda: 2026)
    record = await run_metadata(clock, pipe, MetadataInput(titles=["违约金的性质"], fields=["title"]))
    assert record.status == "completed", record.errors
    assert [r["title"] for r in record.result["records"]] == ["违约金的性质"]
    assert backend.requests == Counter({"grid": 2})

    missing = await run_metadata(clock, pipe, MetadataInput(titles=["违约金的性"], fields=["title"]))
    assert [e.code for e in missing.errors] == ["DOCUMENT_NOT_FOUND"]
    assert backend.requests == Counter({"grid": 4})  # a title no row carries: both pages, no more


async def test_a_title_with_formula_markup_on_its_detail_page_is_read_and_kept(clock: FakeClock, store: Store) -> None:
    # the kcms2 h1 prints formulas as markup (docs/corpus.md `title_html`); the grid row gives the text
    bundled = Corpus.load()
    title = "外施Ca2+、ABA及H3PO4对盐碱胁迫的缓解效应"
    paper = replace(bundled.by_id["r0001"], id="f0", filename="FORMULA0", title=title,
                    extra={"title_html": "外施Ca<sup>2+</sup>、ABA及H<sub>3</sub>PO<sub>4</sub>对盐碱胁迫的缓解效应"})
    backend = CorpusBackend(Corpus(records=[paper], journals=bundled.journals))
    pipe = ResearchPipeline(backend, store, clock, now_year=lambda: 2026)
    record = await run_metadata(clock, pipe, MetadataInput(titles=[title], fields=["title", "funds"]))
    assert record.status == "completed", record.errors
    assert [(r["title"], r["funds"]) for r in record.result["records"]] == [(title, list(paper.funds))]
    assert backend.requests == Counter({"grid": 1, "detail": 1})


async def test_a_thesis_gives_its_supervisor_and_a_conference_paper_its_meeting(clock: FakeClock, store: Store) -> None:
    # the detail page's 导师 was read and dropped, and 会议名称/地点/时间 were stored but never shown
    backend = CorpusBackend()
    pipe = ResearchPipeline(backend, store, clock, now_year=lambda: 2026)
    once = Counter(r.title for r in backend.corpus.records)
    unique = [r for r in backend.corpus.records if once[r.title] == 1]
    thesis = next(r for r in unique if r.type == "博士" and r.supervisor)
    meeting = next(r for r in unique if r.type == "会议" and r.conference and r.place)
    article = next(r for r in unique if r.type == "期刊")
    got = await run_metadata(clock, pipe, MetadataInput(titles=[thesis.title, meeting.title, article.title]))
    assert got.status == "completed", got.errors
    by_title = {r["title"]: r for r in got.result["records"]}
    assert by_title[thesis.title]["supervisor"] == thesis.supervisor
    shown = by_title[meeting.title]
    assert (shown["conference"], shown["conference_place"], shown["conference_date"]) == (
        meeting.conference, meeting.place, meeting.date,
    )  # fmt: skip
    assert not {"supervisor", "conference", "conference_place", "conference_date"} & set(by_title[article.title])

    backend.requests.clear()
    ref = by_title[thesis.title]["record_ref"]
    asked = await run_metadata(clock, pipe, MetadataInput(record_refs=[ref], fields=["supervisor"]))
    assert backend.requests == Counter()  # the fresh detail page answers
    assert asked.result["records"] == [{"record_ref": ref, "title": thesis.title, "supervisor": thesis.supervisor}]


async def test_a_newspaper_article_s_text_is_its_excerpt_whichever_page_gave_it(clock: FakeClock, store: Store) -> None:
    # the batch export's %X of a newspaper was stored as its abstract; its detail page calls the
    # same text 正文快照 (excerpt, not an abstract), so once read it had both
    backend = CorpusBackend()
    pipe = ResearchPipeline(backend, store, clock, now_year=lambda: 2026)
    once = Counter(r.title for r in backend.corpus.records)
    article = next(r for r in backend.corpus.records if r.type == "报纸" and r.abstract and once[r.title] == 1)
    listed = await run_metadata(clock, pipe, MetadataInput(titles=[article.title], fields=["title"]))
    [ref] = [r["record_ref"] for r in listed.result["records"]]
    backend.requests.clear()
    exported = await run_metadata(clock, pipe, MetadataInput(record_refs=[ref], fields=["abstract", "document_type"]))
    assert backend.requests == Counter({"export": 1})
    paper = store.get(ref)
    assert paper is not None and paper.abstract is None and paper.excerpt
    assert exported.result["records"][0]["abstract"] is None
    await run_metadata(clock, pipe, MetadataInput(record_refs=[ref], fields=["funds"]))  # the detail page
    paper = store.get(ref)
    assert paper is not None and paper.detail_confirmed and paper.abstract is None and paper.excerpt


async def test_a_metadata_read_cancelled_midway_answers_the_records_read_so_far(
    clock: FakeClock, store: Store
) -> None:
    """A get_metadata cancelled while one detail page was still on its way answered `result:
    null`, the details already read not shown (they were stored). Now its result lists the
    records as stored, and its CANCELLED error says a result was kept."""
    backend = CorpusBackend()
    pipe = ResearchPipeline(backend, store, clock, now_year=lambda: 2026)
    titles = [r.title for r in backend.corpus.records if r.type == "期刊"][:3]
    listed = await run_metadata(clock, pipe, MetadataInput(titles=titles, fields=["authors"]))
    refs = [r["record_ref"] for r in listed.result["records"]]
    never = asyncio.Event()
    hanging = store.get(refs[-1])
    assert hanging is not None

    class LastDetailHangs(CorpusBackend):
        async def detail(self, locator: str, op: Any = None) -> Any:
            if locator == hanging.locator:
                await never.wait()
            return await super().detail(locator, op)

    pipe = ResearchPipeline(LastDetailHangs(), store, clock, now_year=lambda: 2026)
    jobs = JobManager(clock, MemorySink())
    job = jobs.start(
        OperationKind.METADATA, lambda ctx: pipe.metadata(MetadataInput(record_refs=refs, fields=["funds"]), ctx)
    )
    await clock.advance_settled(5.0)
    [record] = await clock.run_until_complete(jobs.cancel(job.operation_id))
    assert record.status.value == "cancelled", record.errors
    assert [e.code for e in record.errors][:1] == ["CANCELLED"] and record.errors[0].details["result_kept"]
    assert [r["record_ref"] for r in record.result["records"]] == refs
