"""`verify_references` and `link_references` on reference shapes that are not a citation style
(docs/DESIGN.md §References): a 《title》 broken by a line break, a line holding only a DOI, and a
law, standard or classic cited by its name, which costs no CNKI request; requests are counted."""

from __future__ import annotations

from typing import Any

import pytest
from corpus_backend import CorpusBackend

from cnki_mcp.clock import FakeClock
from cnki_mcp.jobs import JobManager, MemorySink, OperationContext, OperationKind
from cnki_mcp.links import LinkInput, LinkResult
from cnki_mcp.operations import DEFAULT_BUDGETS
from cnki_mcp.pipeline.links import link_references
from cnki_mcp.pipeline.verify import VerifyInput, VerifyResult, verify_references
from cnki_mcp.store import Store

TITLE = "违约金酌减规则的法律规制研究"  # corpus r0009, DOI 10.3969/j.cnki.laws.2019.04.001
DOI = "10.3969/j.cnki.laws.2019.04.001"


async def run(clock: FakeClock, store: Store, site: CorpusBackend, inp: Any) -> Any:
    jobs = JobManager(clock, MemorySink())
    out: list[VerifyResult | LinkResult] = []
    links = isinstance(inp, LinkInput)

    async def runner(ctx: OperationContext) -> Any:
        out.append(await (link_references if links else verify_references)(inp, store, site, ctx))
        return out[-1]

    kind = OperationKind.LINKS if links else OperationKind.VERIFY
    job = jobs.start(kind, runner, DEFAULT_BUDGETS[kind])
    await clock.run_until_complete(job.finish())
    return out[0]


async def test_a_title_broken_by_a_line_break_is_linked(clock: FakeClock, store: Store) -> None:
    site = CorpusBackend()
    text = f"见《{TITLE[:6]}\n{TITLE[6:]}》一文。"
    result = await run(clock, store, site, LinkInput(text=text, lookup_missing=True))
    assert [(r.title, r.status) for r in result.references] == [(TITLE, "linked")]
    assert result.text.startswith(f"见[《{TITLE[:6]}\n{TITLE[6:]}》](https://")
    assert site.requests["grid"] == 1


@pytest.mark.parametrize(
    "text",
    [
        f"向玉天、罗诗俊：《{TITLE[:6]}\n{TITLE[6:]}》，《法学研究》2019年第4期\n李四：《语料库中不存在的题名》，《法学》2020年第1期",
        f"《{TITLE[:6]}\n{TITLE[6:]}》",
    ],
)
async def test_a_title_broken_by_a_line_break_is_one_entry_and_verified(clock: FakeClock, store: Store, text: str) -> None:
    result = await run(clock, store, CorpusBackend(), VerifyInput(text=text))
    assert result.entries[0].verdict == "verified"
    assert result.entries[0].record is not None and result.entries[0].record.title == TITLE
    assert len(result.entries) == text.count("《") - text.count("《法")


@pytest.mark.parametrize("line", [f"https://doi.org/{DOI}", f"doi:{DOI}", f"DOI：{DOI.upper()}.", DOI])
async def test_a_line_holding_only_a_doi_is_looked_up_by_it(clock: FakeClock, store: Store, line: str) -> None:
    site = CorpusBackend()
    result = await run(clock, store, site, VerifyInput(text=f"[1] {line}"))
    [entry] = result.entries
    assert entry.verdict == "verified", entry
    assert entry.record is not None and entry.record.title == TITLE and entry.corrected
    assert (site.requests["grid"], site.requests["export"]) == (1, 1)


async def test_an_unknown_doi_alone_is_not_found_after_one_request(clock: FakeClock, store: Store) -> None:
    site = CorpusBackend()
    result = await run(clock, store, site, VerifyInput(references=["https://doi.org/10.9999/nowhere.2020.001"]))
    [entry] = result.entries
    assert entry.verdict == "not_found" and entry.searches == ["DOI“10.9999/nowhere.2020.001”"]
    assert sum(site.requests.values()) == 1


NOT_PAPERS = [
    "《民法典》",
    "《中华人民共和国著作权法》",
    "《论语·学而》",
    "全国人民代表大会. 中华人民共和国民法典[Z]. 2020.",
    "国家标准化管理委员会. 信息与文献 参考文献著录规则: GB/T 7714—2015[S]. 北京: 中国标准出版社, 2015.",
    "《信息与文献 参考文献著录规则》（GB/T 7714—2015）",
    "《最高人民法院关于适用〈中华人民共和国民法典〉合同编通则若干问题的解释》",
]


async def test_laws_standards_and_classics_cost_no_request_and_say_what_they_are(clock: FakeClock, store: Store) -> None:
    site = CorpusBackend()
    result = await run(clock, store, site, VerifyInput(references=[*NOT_PAPERS, f"《{TITLE}》"]))
    assert [e.verdict for e in result.entries] == ["not_a_paper"] * len(NOT_PAPERS) + ["verified"]
    assert all(e.reason and not e.searches for e in result.entries[:-1])
    assert site.requests["grid"] == 1  # the paper's exact title only


async def test_link_references_does_not_look_up_laws_or_classics(clock: FakeClock, store: Store) -> None:
    site = CorpusBackend()
    text = f"依据《民法典》第585条与《中华人民共和国著作权法》，参见《论语》和《{TITLE}》。"
    result = await run(clock, store, site, LinkInput(text=text, lookup_missing=True))
    assert [r.status for r in result.references] == ["not_a_paper", "not_a_paper", "not_a_paper", "linked"]
    assert site.requests["grid"] == 1


INVENTED = "向玉天. 量子纠缠视角下证明责任的重新分配[J]. 法学研究, 2019, 24(4): 34-49."


async def test_a_rerun_within_a_day_reuses_its_not_found_entries_unless_asked_fresh(clock: FakeClock, store: Store) -> None:
    first = CorpusBackend()
    result = await run(clock, store, first, VerifyInput(references=[INVENTED, f"《{TITLE}》"]))
    assert [e.verdict for e in result.entries] == ["not_found", "verified"]
    assert first.requests["grid"] == 2  # both exact titles in one request, then the invented one's fallback

    again = CorpusBackend()
    reused = await run(clock, store, again, VerifyInput(references=[INVENTED, f"《{TITLE}》"]))
    assert [e.verdict for e in reused.entries] == ["not_found", "verified"]
    assert sum(again.requests.values()) == 0 and reused.requests == 0
    assert reused.entries[0].searches == result.entries[0].searches and reused.entries[0].warnings

    fresh = CorpusBackend()
    await run(clock, store, fresh, VerifyInput(references=[INVENTED], fresh=True))
    assert fresh.requests["grid"] == 2

    await clock.advance(25 * 3600)
    later = CorpusBackend()
    await run(clock, store, later, VerifyInput(references=[INVENTED]))
    assert later.requests["grid"] == 2


async def test_a_not_found_whose_search_failed_is_searched_again(clock: FakeClock, store: Store) -> None:
    class Failing(CorpusBackend):
        async def grid(self, request: Any, op: Any = None, follow: Any = None) -> Any:
            if self.requests["grid"] >= 1:
                self.requests["grid"] += 1
                from cnki_mcp.errors import ParserUnsupported

                raise ParserUnsupported("grid")
            return await super().grid(request, op, follow)

    await run(clock, store, Failing(), VerifyInput(references=[INVENTED]))
    again = CorpusBackend()
    await run(clock, store, again, VerifyInput(references=[INVENTED]))
    assert again.requests["grid"] == 2
