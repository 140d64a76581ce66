"""The request policies' pure rules (pipeline/policy.py): local channel hits and the boundary
enrichment's choice of the next candidates."""

from __future__ import annotations

from dataclasses import replace

from cnki_mcp.pipeline.policy import (
    DEFAULT_POLICY,
    REFERENCE_POLICY,
    Bounds,
    Enrichment,
    JournalTiming,
    LocalChannel,
    Reading,
    RefState,
    SubsetChannels,
    early_journals,
    feedback_words_certain,
    next_enrichment,
    upper_bound,
    with_local_hits,
)
from cnki_mcp.rank import (
    Candidate,
    Evidence,
    Hit,
    Ranked,
    ReferenceRanker,
    RelevanceRescueRanker,
    SourceQuality,
    feedback_keywords,
    query_tokens,
    reach_floor,
    score_formula,
    selection_floor,
)
from cnki_mcp.sim.query import Field as SimField
from cnki_mcp.sim.query import Operator as SimOperator
from cnki_mcp.sim.query import match_term

GROUPS = [["自动驾驶"], ["产品责任", "侵权责任"]]


def cand(ref: str, title: str, q1: int, **kw: object) -> Candidate:
    return Candidate(ref=ref, title=title, doc_type="期刊", year=2024, cited=3, hits=(Hit("q1", q1),), **kw)  # type: ignore[arg-type]


def test_local_title_channel_hits_follow_the_subject_order() -> None:
    cands = [
        cand("b", "自动驾驶汽车的产品责任", 2),
        cand("a", "自动驾驶的侵权责任认定", 1),
        cand("c", "人工智能与法律", 3),
    ]
    out = {c.ref: c for c in with_local_hits(cands, GROUPS, [LocalChannel("q2", "title", 1.0)], set(), order_by="q1")}
    assert [h for h in out["a"].hits if h.channel == "q2"] == [Hit("q2", 1, 1.0)]
    assert [h for h in out["b"].hits if h.channel == "q2"] == [Hit("q2", 2, 1.0)]
    assert all(h.channel != "q2" for h in out["c"].hits)  # not every concept in its title


def test_local_keyword_and_phrase_channels_test_only_papers_with_a_detail_page() -> None:
    kw = ("自动驾驶", "产品责任", "算法")
    cands = [
        cand("a", "研究一", 1, keywords=kw, abstract="讨论算法透明"),
        cand("b", "研究二", 2, keywords=kw, abstract="讨论算法透明"),
    ]
    channels = [LocalChannel("q3", "keywords", 1.0), LocalChannel("feedback1", "subject", 0.8, "算法透明")]
    out = {c.ref: c for c in with_local_hits(cands, GROUPS, channels, {"b"}, order_by="q1")}
    assert {h.channel for h in out["a"].hits} == {"q1"}  # no detail page: keywords unknown
    assert [(h.channel, h.position) for h in out["b"].hits] == [("q1", 2), ("q3", 1), ("feedback1", 1)]


def test_local_channels_read_a_spaced_chinese_term_as_cnki_does() -> None:
    # the channels are answered locally in place of CNKI: a term "违约金 酌减" must hit the papers
    # CNKI's title / keyword search lists for it (each word contained; keywords one at a time)
    groups = [["违约金 酌减"]]
    title = "约定违约金中酌减规则的体系化构造"
    assert match_term([title], SimField.TI, SimOperator.FUZZY, "违约金 酌减")
    assert match_term(["违约金酌减", "意思自治"], SimField.KY, SimOperator.FUZZY, "违约金 酌减")
    assert not match_term(["违约金", "司法酌减"], SimField.KY, SimOperator.FUZZY, "违约金 酌减")
    cands = [
        cand("a", title, 1, keywords=("违约金酌减", "意思自治")),
        cand("b", "违约金的惩罚性功能", 2, keywords=("违约金", "司法酌减")),
    ]
    channels = [LocalChannel("q2", "title", 1.0), LocalChannel("q3", "keywords", 1.0)]
    out = {c.ref: c for c in with_local_hits(cands, groups, channels, {"a", "b"}, order_by="q1")}
    assert [(h.channel, h.position) for h in out["a"].hits] == [("q1", 1), ("q2", 1), ("q3", 1)]
    assert [h.channel for h in out["b"].hits] == ["q1"]


def test_the_upper_bound_covers_the_score_enrichment_gives() -> None:
    ranker = ReferenceRanker()
    grid = cand("a", "自动驾驶的法律问题", 5)
    full = replace(
        grid,
        abstract="自动驾驶汽车致害时的产品责任与侵权责任",
        keywords=("自动驾驶", "产品责任"),
        quality=SourceQuality(("CSSCI",), 3.0, None),
    )
    query = query_tokens(GROUPS)
    before = ranker.evaluate(grid, query, GROUPS, 2026)
    after = ranker.evaluate(full, query, GROUPS, 2026)
    assert after.score > before.score  # enrichment only adds
    bounds = Bounds(
        abstract=after.evidence.abstract_match,
        keywords=after.evidence.keyword_match,
        tier=after.evidence.source_tier,
        impact=after.evidence.impact,
    )
    relevance, score = upper_bound(before, RefState(detailed=False, journal_open=True), bounds)
    assert relevance >= after.evidence.relevance - 1e-9
    assert score >= after.score - 1e-9
    # a paper already read and its journal known has no room left
    _, settled = upper_bound(after, RefState(detailed=True, journal_open=False), bounds)
    assert abs(settled - after.score) < 1e-9


def _ranked(n: int) -> list[Ranked]:
    ranker = ReferenceRanker()
    cands = [cand(f"r{i:02d}", "自动驾驶产品责任" if i < 5 else "自动驾驶", i + 1) for i in range(n)]
    return ranker.rank(cands, GROUPS, 2026)


DETAIL_POLICY = DEFAULT_POLICY.without("reading")


def test_the_first_batch_of_detail_pages_is_the_unread_top_ten() -> None:
    ranked = _ranked(30)
    states = {r.ref: RefState(detailed=False, journal_open=False) for r in ranked}
    first = next_enrichment(ranked, states, set(), DETAIL_POLICY, selected=0, floor=0.0)
    assert first == [r.ref for r in ranked[:10]]
    # what was attempted is never proposed again, even when it is still unread
    again = next_enrichment(ranked, states, set(first), DETAIL_POLICY, selected=0, floor=0.0)
    assert not set(again) & set(first)


def test_the_first_export_batch_is_the_unread_top_ten_topped_up_to_one_request() -> None:
    ranked = _ranked(30)
    states = {r.ref: RefState(detailed=False, journal_open=False) for r in ranked}
    first = next_enrichment(ranked, states, set(), DEFAULT_POLICY, selected=0, floor=0.0)
    assert DEFAULT_POLICY.reading == Reading.EXPORT and DEFAULT_POLICY.batch == 20
    assert first[:10] == [r.ref for r in ranked[:10]]
    assert 10 < len(first) <= 20 and len(set(first)) == len(first)
    again = next_enrichment(ranked, states, set(first), DEFAULT_POLICY, selected=0, floor=0.0)
    assert not set(again) & set(first)


def test_an_exported_top_paper_is_proposed_again_for_its_journal_until_the_journal_is_tried() -> None:
    ranked = _ranked(12)
    read = {r.ref: RefState(detailed=True, journal_open=False) for r in ranked}
    top = ranked[0].ref
    read[top] = RefState(detailed=True, journal_open=True)
    attempted = {r.ref for r in ranked}
    assert next_enrichment(ranked, read, attempted, DEFAULT_POLICY, selected=12, floor=0.0) == [top]
    tried = next_enrichment(
        ranked, read, attempted, DEFAULT_POLICY, selected=12, floor=0.0, journals_tried={top}
    )
    assert tried == []
    # under detail pages, an attempted paper is never proposed again, journal or not
    assert next_enrichment(ranked, read, attempted, DETAIL_POLICY, selected=12, floor=0.0) == []


def test_enrichment_stops_when_no_unread_candidate_can_reach_the_watched_depth() -> None:
    ranked = _ranked(30)
    states = {r.ref: RefState(detailed=True, journal_open=False) for r in ranked}
    assert next_enrichment(ranked, states, set(), DEFAULT_POLICY, selected=20, floor=0.0) == []
    # one unread candidate with a zero upper bound room cannot move anything either
    states[ranked[-1].ref] = RefState(detailed=False, journal_open=False)
    tight = next_enrichment(
        ranked, states, set(), replace(DEFAULT_POLICY, watch_depth=5), selected=20, floor=10.0
    )
    assert tight == []


def test_policies_are_named_and_the_ablations_set_one_rule_back() -> None:
    assert REFERENCE_POLICY.enrichment == Enrichment.POOL
    assert DEFAULT_POLICY.subset_channels == SubsetChannels.LOCAL
    ablated = DEFAULT_POLICY.without("subset_channels")
    assert ablated.subset_channels == SubsetChannels.REQUEST and ablated.enrichment == DEFAULT_POLICY.enrichment


def test_an_export_step_proposes_one_batch_of_abstracts_and_one_of_journal_pages() -> None:
    ranked = _ranked(60)
    states = {
        r.ref: RefState(detailed=i % 2 == 0, journal_open=True) for i, r in enumerate(ranked)
    }  # every other paper read, every journal unknown
    step = next_enrichment(ranked, states, set(), DEFAULT_POLICY, selected=0, floor=0.0)
    unread = [ref for ref in step if not states[ref].detailed]
    journals = [ref for ref in step if states[ref].detailed]
    assert 0 < len(unread) <= DEFAULT_POLICY.batch and 0 < len(journals) <= DEFAULT_POLICY.batch
    assert len(step) > DEFAULT_POLICY.batch  # a journal never takes an abstract's place
    top = [r.ref for r in ranked[: DEFAULT_POLICY.readable_top]]
    assert set(top) <= set(step)  # the readable top first, of both kinds


def test_the_readable_tops_journals_go_beside_its_abstracts_and_nothing_else_does() -> None:
    ranked = _ranked(40)
    states = {r.ref: RefState(detailed=False, journal_open=True) for r in ranked}
    top = [r.ref for r in ranked[: DEFAULT_POLICY.readable_top]]
    states[top[1]] = RefState(detailed=False, journal_open=False)  # its journal is cached
    states[top[2]] = RefState(detailed=True, journal_open=True)  # read: its journal is the batch's own
    step = next_enrichment(ranked, states, set(), DEFAULT_POLICY, selected=0, floor=0.0)
    early = early_journals(ranked, states, step, set(), DEFAULT_POLICY, journals_tried={top[3]})
    assert DEFAULT_POLICY.journal_timing == JournalTiming.TOP_WITH_ABSTRACT
    assert early == [ref for ref in top if ref not in (top[1], top[2], top[3])]
    assert set(step) - set(top) and not (set(step) - set(top)) & set(early)  # the boundary's wait
    # attempted abstracts are not read again, so their journal is not the export's
    assert early_journals(ranked, states, step, set(top), DEFAULT_POLICY) == []
    after = DEFAULT_POLICY.without("journal_timing")
    assert after.journal_timing == JournalTiming.AFTER_ABSTRACT
    assert early_journals(ranked, states, step, set(), after) == []
    assert early_journals(ranked, states, step, set(), DETAIL_POLICY) == []  # a detail step reads both anyway


# --- FeedbackWhen.CERTAIN: the settled ranking's feedback words known early ------------------


def _read(ref: str, q1: int, title: str, keywords: tuple[str, ...]) -> Candidate:
    abstract = "本文讨论自动驾驶汽车致害时的产品责任与侵权责任分配。"
    return cand(ref, title, q1, abstract=abstract, keywords=keywords)


def _certain(cands: list[Candidate], unread: set[str] = frozenset()) -> tuple[bool, list[str]]:  # type: ignore[assignment]
    ranked = ReferenceRanker().rank(cands, GROUPS, 2026)
    states = {c.ref: RefState(detailed=c.ref not in unread, journal_open=False, journal_known=True) for c in cands}
    keywords = {c.ref: c.keywords for c in cands}
    return feedback_words_certain(ranked, states, keywords), feedback_keywords(ranked, keywords, GROUPS)


def _top_ten() -> list[Candidate]:
    words = ("算法责任", "风险分配")
    return [_read(f"t{i:02d}", i + 1, f"自动驾驶汽车产品责任研究{i}", (*words, f"词{i}")) for i in range(10)]


def test_feedback_words_are_certain_once_the_top_is_read_and_nothing_else_can_enter_it() -> None:
    weak = [cand(f"w{i}", f"城市交通规划{i}", 20 + i) for i in range(5)]  # unread, off-topic titles
    certain, words = _certain([*_top_ten(), *weak], unread={c.ref for c in weak})
    assert certain and words == ["算法责任", "风险分配"]


def test_feedback_words_are_not_certain_while_a_top_paper_is_unread() -> None:
    top = _top_ten()
    certain, _ = _certain(top, unread={top[3].ref})
    assert not certain


def test_feedback_words_are_not_certain_while_an_unread_paper_could_still_enter_the_top() -> None:
    # an unread paper whose title matches every concept: its abstract could lift it into the top
    rival = cand("r", "自动驾驶汽车产品责任与侵权责任", 30)
    certain, _ = _certain([*_top_ten(), rival], unread={"r"})
    assert not certain
    certain, _ = _certain([*_top_ten(), replace(rival, title="城市交通规划")], unread={"r"})
    assert certain


def test_feedback_words_are_not_certain_while_a_word_of_the_top_is_written_two_ways() -> None:
    top = _top_ten()
    top[9] = replace(top[9], keywords=("算法责任", "风险分配 ", "词9"))  # one word, another form
    certain, _ = _certain(top)
    assert not certain


def _evidenced(ref: str, relevance: float, quality: float, coverage: float, **kw: float) -> Ranked:
    e = Evidence(relevance=relevance, quality=quality, concept_coverage=coverage, quality_evidence_present=True, **kw)  # type: ignore[arg-type]
    return Ranked(ref, score_formula(relevance, quality), True, e)


def test_a_paper_selected_above_a_rescued_one_under_the_floor_is_still_read() -> None:
    # review 7b #10: with 10 selected, a candidate under the floor and under relevance 0.55 was
    # never proposed, yet the rescue selects every clause-passing paper ranked above a rescued one:
    # x (quality 0.46 passes clause 2) was selected with its abstract unread
    ranked = [_evidenced("top", 0.9, 0.9, 1.0, title_match=0.9, abstract_match=0.1, keyword_match=0.1)]
    ranked += [
        _evidenced(f"s{i}", 0.8, 0.6 - i / 1000, 1.0, title_match=0.8, abstract_match=0.1, keyword_match=0.1)
        for i in range(10)
    ]
    ranked += [_evidenced("x", 0.31, 0.46, 0.5, title_match=0.5, rrf=0.001, channels=1)]
    ranked += [_evidenced("r", 0.6, 0.0, 1.0, title_match=0.6, abstract_match=0.1, keyword_match=0.1)]  # rescued
    states = {r.ref: RefState(detailed=r.ref != "x", journal_open=False, journal_known=True) for r in ranked}
    selected = RelevanceRescueRanker().select(ranked)
    assert "x" in {r.ref for r in selected} and ranked[-2].score < selection_floor(ranked)
    floor = reach_floor(ranked, selected)
    assert floor == ranked[-1].score
    assert next_enrichment(ranked, states, set(), DETAIL_POLICY, selected=len(selected), floor=floor) == ["x"]
    # without a rescue under the floor, the floor is the selection floor
    assert reach_floor(ranked[:-2], RelevanceRescueRanker().select(ranked[:-2])) == selection_floor(ranked)
