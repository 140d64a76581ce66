"""A work CNKI lists under several records (online-first and final, a reprint, a conference
version) is selected once by the research search (works.duplicate_works): through the
simulator's corpus, its evaluator and renderers and the production parsers (CorpusBackend)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from corpus_backend import CorpusBackend
from pipeline_fakes import start_research

from cnki_mcp.clock import FakeClock
from cnki_mcp.jobs import JobManager, MemorySink
from cnki_mcp.models import ExportRecord
from cnki_mcp.pipeline.models import ResultsInput, SearchInput, SearchOptions
from cnki_mcp.pipeline.research import ResearchPipeline
from cnki_mcp.sim.corpus import DEFAULT_CORPUS_DIR, Corpus
from cnki_mcp.site.backend import SiteOp
from cnki_mcp.store import Store

GROUPS = [["违约金", "约定违约金", "违约赔偿金"], ["酌减", "调整", "过分高于"]]


def _copies() -> list[dict[str, Any]]:
    """Three more records of bundled works: the final of the online-first r0019 (FXPL20260206005)
    in its issue, a 中国社会科学文摘 reprint of r0001 and a conference version of r0003."""
    bundled = {r["id"]: r for r in map(json.loads, (DEFAULT_CORPUS_DIR / "records.jsonl").open(encoding="utf-8"))}
    final = {k: v for k, v in bundled["r0019"].items() if k != "online_first"}
    final.update(id="r0901", filename="FXPL202602005", volume="44", issue="2", pages="101-118", date="2026-03-15")
    reprint = {k: v for k, v in bundled["r0001"].items() if k != "doi"}
    reprint.update(id="r0902", filename="ZSWZ201503012", source="中国社会科学文摘", year=2015, issue="3", pages="120-121")
    reprint.update(date="2015-03-20", cited=0)
    conference = {k: v for k, v in bundled["r0003"].items() if k not in ("volume", "issue")}
    conference.update(id="r0903", db="CPFD", type="会议", filename="ZGFH201507001111", year=2015, date="2015-07-10")
    conference.update(source="中国法学会民法学研究会年会论文集", conference="中国法学会民法学研究会年会", pages="11-25")
    return [final, reprint, conference]


# Two keywords only the online-first r0019 and its final record r0901 carry: one work's
WORK_KEYWORDS = ["违约金司法衡平", "损失填补原则"]


def _corpus(directory: Path, keywords: list[str] | None = None) -> Corpus:
    """The bundled corpus with `_copies`; with `keywords`, those are added to both records of
    r0019's work and every other record keeps only the keywords that are concept aliases (no
    feedback word from them)."""
    directory.mkdir()
    for name in ("journals.jsonl", "questions.jsonl"):
        (directory / name).write_bytes((DEFAULT_CORPUS_DIR / name).read_bytes())
    records = [json.loads(line) for line in (DEFAULT_CORPUS_DIR / "records.jsonl").open(encoding="utf-8")]
    records += _copies()
    for record in records:
        if keywords and record["id"] in ("r0019", "r0901"):
            record["keywords"] = [*record["keywords"], *keywords]
        elif keywords:
            record["keywords"] = [k for k in record["keywords"] if any(k in group for group in GROUPS)]
    lines = [json.dumps(r, ensure_ascii=False) for r in records]
    (directory / "records.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Corpus.load(directory)


class ExportLog(CorpusBackend):
    """Notes the filename of every record whose abstract is asked for (the batch export)."""

    def __init__(self, corpus: Corpus) -> None:
        super().__init__(corpus)
        self.exported: list[str] = []

    async def export_records(self, export_ids: list[str], op: SiteOp | None = None) -> list[ExportRecord]:
        self.exported += [e.split("!")[1] for e in export_ids]
        return await super().export_records(export_ids, op)


async def _search(
    clock: FakeClock, store: Store, corpus: Corpus, backend: CorpusBackend | None = None
) -> tuple[ResearchPipeline, dict[str, Any]]:
    pipe = ResearchPipeline(backend or CorpusBackend(corpus), store, clock, now_year=lambda: 2026)
    inp = SearchInput(query="违约金酌减", concept_groups=GROUPS, limit=100, options=SearchOptions(freshness="live"))
    job = start_research(JobManager(clock, MemorySink()), pipe, inp, pipe.plan(inp))
    [record] = await clock.run_until_complete(job.finish())
    assert record.result is not None, record.errors
    return pipe, dict(record.result)


async def test_one_work_in_several_records_is_selected_once(clock: FakeClock, store: Store, tmp_path: Path) -> None:
    pipe, result = await _search(clock, store, _corpus(tmp_path / "corpus"))
    page = pipe.results(ResultsInput(search_id=result["search_id"], scope="candidates", view="records", limit=100))
    rows = {row["record"]["filename"]: row for row in page.results}
    selected = [row["record"]["filename"] for row in page.results if row["selected"]]
    assert [r["record_ref"] for r in result["results"]] == [rows[f]["record"]["record_ref"] for f in selected]
    # the online-first record and the final one in its issue: the final is listed, whatever the order
    assert "FXPL202602005" in selected and "FXPL20260206005" not in selected
    final = rows["FXPL202602005"]["record"]["record_ref"]
    assert rows["FXPL20260206005"]["exclusion"] == "duplicate_work"
    assert rows["FXPL20260206005"]["duplicate_of"] == final
    # a reprint and a conference version point to the journal article they repeat
    for copy, original in (("ZSWZ201503012", "XDFX201406001"), ("ZGFH201507001111", "LAWS201610001")):
        assert rows[copy]["exclusion"] == "duplicate_work" and not rows[copy]["selected"]
        assert rows[copy]["duplicate_of"] == rows[original]["record"]["record_ref"]
    assert result["selection_exclusions"]["duplicate_work"] == 3
    assert sum(result["selection_exclusions"].values()) + result["selected_count"] == result["candidate_count"]
    assert "duplicate_of" not in rows["FXPL202602005"]  # the kept record names no other


async def test_the_first_ten_works_selected_are_read_though_copies_rank_among_them(
    clock: FakeClock, store: Store, tmp_path: Path
) -> None:
    # The enrichment steps counted a work's second record as selected, so they stopped reading at
    # the boundary one paper early; the answer, listing each work once, then selected that paper unread.
    pipe, result = await _search(clock, store, _corpus(tmp_path / "corpus"))
    page = pipe.results(ResultsInput(search_id=result["search_id"], scope="selected", view="records", limit=10))
    assert len(page.results) == min(10, result["selected_count"])
    assert all(row["record"]["abstract"] for row in page.results), [
        row["record"]["title"] for row in page.results if not row["record"]["abstract"]
    ]


async def test_the_search_log_says_one_record_per_work_was_selected(clock: FakeClock, store: Store, tmp_path: Path) -> None:
    from cnki_mcp.pipeline.searchlog import build_search_log

    _, result = await _search(clock, store, _corpus(tmp_path / "corpus"))
    log = build_search_log(store, result["search_id"], "min10_rescue55")
    assert log.prisma.excluded_by_reason["duplicate_work"] == 3
    assert "duplicate_work" in log.selection_rule  # a methods section built from the log says why


async def test_the_enrichment_reads_each_work_once_as_the_record_it_lists(
    clock: FakeClock, store: Store, tmp_path: Path
) -> None:
    # The steps decided on every record, so both records of each of the three works were read (six
    # abstracts for three works); deciding on the answer's one record per work must still read the
    # final record of r0019's work, the one the answer lists (an earlier attempt read the online-first
    # one only, and the answer then listed it)
    backend = ExportLog(_corpus(tmp_path / "corpus"))
    pipe, result = await _search(clock, store, backend.corpus, backend)
    assert len(backend.exported) == len(set(backend.exported))
    assert "FXPL202602005" in backend.exported  # the final record is read
    for copy in ("FXPL20260206005", "ZSWZ201503012", "ZGFH201507001111"):
        assert copy not in backend.exported, copy
    page = pipe.results(ResultsInput(search_id=result["search_id"], scope="selected", view="records", limit=100))
    final = next(row["record"] for row in page.results if row["record"]["filename"] == "FXPL202602005")
    assert final["abstract"] and final["issue"] == "2" and final["pages"] == "101-118"


async def test_a_works_keywords_count_once_in_the_feedback_words(clock: FakeClock, store: Store, tmp_path: Path) -> None:
    # feedback words are keywords shared by two papers of the top; both records of one work carry
    # the same keywords, so one work alone made them feedback channels (each with its own pages)
    _, result = await _search(clock, store, _corpus(tmp_path / "corpus", WORK_KEYWORDS))
    reasons = [c["reason"] for c in result["plan"]["channels"] if c["id"].startswith("feedback")]
    assert reasons == []  # no other two papers share a keyword here
