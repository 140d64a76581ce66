"""The reference ranker's formulas and thresholds (site-rules.md §3.5, §3.6) on hand-computed examples."""

from __future__ import annotations

import math

import pytest

from cnki_mcp.pipeline.policy import LocalChannel
from cnki_mcp.rank import (
    EXCLUDED_IRRELEVANT,
    EXCLUDED_THRESHOLD,
    MIN_SELECTED,
    RESCUE_RELEVANCE,
    Candidate,
    Evidence,
    Hit,
    MinimumSelectionRanker,
    Ranked,
    ReferenceRanker,
    RelevanceRescueRanker,
    SourceQuality,
    annual_citation_score,
    concept_coverage,
    dice,
    enhancement_size,
    exclusions,
    feedback_keywords,
    impact_score,
    is_eligible,
    passes_clauses,
    quality_formula,
    relevance_formula,
    resource_type_score,
    rrf_score,
    score_formula,
    selection_floor,
    source_tier,
    tier_score,
    tokens,
)

GROUPS = [["自动驾驶"], ["产品责任"]]


def test_tokens_are_latin_runs_with_joiners_and_han_bigrams() -> None:
    assert tokens("Wi-Fi 7 与 IEEE 802.11be") == {"wi-fi", "7", "ieee", "802.11be"}
    assert tokens("自动驾驶") == {"自动", "动驾", "驾驶"}
    assert tokens("车 路") == set()  # isolated Han characters give nothing
    assert tokens("C++ a_b/c") == {"c", "a_b/c"}  # a joiner must be followed by a run
    assert tokens("数据end.") == {"数据", "end"}


def test_dice_is_twice_overlap_over_sizes() -> None:
    assert dice(frozenset({"a", "b"}), frozenset({"b", "c", "d"})) == pytest.approx(2 * 1 / 5)
    assert dice(frozenset(), frozenset({"a"})) == 0.0


def test_concept_coverage_counts_groups_with_an_alias_substring() -> None:
    groups = [["自动驾驶", "无人驾驶"], ["产品责任"], ["Wi-Fi  7"]]
    assert concept_coverage(groups, "无人驾驶的风险", ["WI-FI 7"], "") == pytest.approx(2 / 3)
    assert concept_coverage([], "x", [], "") == 0.0


def test_concept_coverage_reads_a_term_with_spaces_as_its_words() -> None:
    # CNKI finds 违约金 and 酌减 anywhere for the term "违约金 酌减"; Chinese text has no spaces,
    # so the term as a contiguous substring would never cover the papers it found
    groups = [["违约金 酌减"], ["GDPR 合规"]]
    assert concept_coverage(groups, "约定违约金中酌减规则的体系化构造", ["GDPR合规"], "") == 1.0
    assert concept_coverage([["违约金 酌减"]], "违约金的惩罚性功能", [], "") == 0.0
    # the same for Latin words, as CNKI's search reads them
    title = "Federated learning and privacy protection: evidence from China"
    assert concept_coverage([["privacy protection in China"]], title, [], "") == 1.0
    assert concept_coverage([["privacy protection in Japan"]], title, [], "") == 0.0
    assert concept_coverage([["   "]], "x", [], "") == 0.0


def test_a_latin_alias_is_a_whole_word_not_part_of_a_longer_one() -> None:
    # "AI" inside "maintain", RAG inside "storage", 585条 inside 第1585条: the paper does not name the
    # concept, and CNKI's search, which reads English and numbers as words, would not find it there
    groups = [["人工智能", "AI"], ["检索增强生成", "RAG"]]
    assert concept_coverage(groups, "Data governance", [], "We maintain the storage layer") == 0.0
    assert concept_coverage(groups, "AI与RAG的结合", [], "") == 1.0
    assert concept_coverage(groups, "Hallucination in LLMs", ["AI", "RAG-based QA"], "") == 1.0
    assert concept_coverage([["LLM"]], "Hallucination in LLMs", [], "") == 1.0  # a plural is the word
    assert concept_coverage([["《民法典》第585条"], ["585条"]], "《民法典》第1585条释义", [], "") == 0.0
    assert concept_coverage([["585条"]], "第585条违约金酌减规则的适用", [], "") == 1.0
    assert concept_coverage([["GPT-4"]], "GPT-4o的能力评测", [], "") == 0.0
    # the local title and keyword channels judge the same way (answers CNKI's own search would give)
    local = LocalChannel("q2", "title", 1.0)
    assert not local.matches(Candidate("a", title="面向 domain 的迁移"), [["AI"]])
    assert local.matches(Candidate("b", title="面向AI的迁移"), [["AI"]])


def test_a_formula_written_with_script_digits_or_full_width_letters_is_the_term_typed() -> None:
    # CO₂ in a paper's text is the CO2 a researcher types; ＡＩ is AI (NFKC), for coverage and the dice tokens
    assert concept_coverage([["CO2", "二氧化碳"]], "CO₂排放的驱动因素", [], "") == 1.0
    assert concept_coverage([["AI"]], "ＡＩ与法律", [], "") == 1.0
    assert tokens("CO₂排放") == tokens("CO2排放") == frozenset({"co2", "排放"})


def test_rrf_uses_first_hit_per_channel_and_weight_zero_counts_as_one() -> None:
    hits = [Hit("q1", 1, 1.0), Hit("q1", 5, 1.0), Hit("feedback1", 10, 0.8), Hit("q3", 40, 0.0)]
    total, channels = rrf_score(hits)
    assert total == pytest.approx(1 / 61 + 0.8 / 70 + 1 / 100)
    assert channels == 3


def test_relevance_is_the_weighted_evidence_sum_over_1_12() -> None:
    # title .75, abstract .5, keywords .4, rrf .06 (capped at 1 after x20), 2 channels, coverage 1
    value = relevance_formula(0.75, 0.5, 0.4, 0.06, 2, 1.0)
    assert value == pytest.approx(
        (0.32 * 0.75 + 0.28 * 0.5 + 0.12 * 0.4 + 0.20 * 1 + 0.08 * 2 / 3 + 0.12) / 1.12
    )
    assert relevance_formula(0, 0, 0, 0.01, 5, 0) == pytest.approx((0.20 * 0.2 + 0.08) / 1.12)


@pytest.mark.parametrize(
    ("tier", "score"),
    [
        ("CSSCI", 0.96),
        # an extended list is not its source list: a CSSCI扩展版-only journal scored as a CSSCI one
        ("CSSCI扩展版", 0.90),
        ("CSCD扩展版", 0.90),
        ("CSCD扩展库", 0.90),
        ("CSSCI来源集刊", 0.96),
        ("SCI", 1.0),
        ("SSCI", 1.0),
        ("SCI-E", 1.0),
        ("A&HCI", 1.0),
        ("北大核心", 0.94),
        ("CSCD", 0.94),
        ("EI", 0.90),
        ("AMI核心", 0.88),
        # the AMI grades above 核心 count at least as 核心 does (the reference scored them 0)
        ("AMI顶级", 0.88),
        ("AMI权威", 0.88),
        ("AMI外文刊权威", 0.88),
        ("AMI集刊核心", 0.88),
        ("AMI扩展", 0.0),
        ("AMI入库", 0.0),
        ("EI来源期刊", 0.0),
        ("WJCI", 0.0),
    ],
)
def test_each_source_tier_has_its_fixed_score(tier: str, score: float) -> None:
    assert tier_score(tier) == score


def test_source_tier_is_the_best_tier() -> None:
    assert source_tier(["AMI顶级", "北大核心", "CSSCI"]) == 0.96
    assert source_tier([]) == 0.0


def test_impact_prefers_composite_factor() -> None:
    assert impact_score(2.0, 9.0) == pytest.approx(1 - math.exp(-1))
    assert impact_score(None, 4.0) == pytest.approx(1 - math.exp(-2))
    assert impact_score(-3.0, None) == 0.0
    assert impact_score(None, None) == 0.0


def test_annual_citations_need_a_known_count_and_a_past_year() -> None:
    assert annual_citation_score(30, 2021, 2026) == pytest.approx(1 - math.exp(-30 / 6 / 3))
    assert annual_citation_score(3, 2026, 2026) == pytest.approx(1 - math.exp(-1))  # age at least 1
    assert annual_citation_score(None, 2021, 2026) is None
    assert annual_citation_score(5, 2027, 2026) is None
    assert annual_citation_score(5, None, 2026) is None


@pytest.mark.parametrize(
    ("doc_type", "score"),
    [
        ("博士", 0.72),
        ("硕士", 0.46),
        ("本科", 0.10),
        ("期刊", 0.55),
        ("外文期刊", 0.55),
        ("会议", 0.52),
        ("报纸", 0.14),
        ("专利", 0.0),
        (None, 0.0),
    ],
)
def test_each_document_type_has_its_resource_type_score(doc_type: str | None, score: float) -> None:
    assert resource_type_score(doc_type) == score


def test_quality_score_and_eligibility_formulas() -> None:
    assert quality_formula(0.96, 0.5, 0.25, 0.55) == pytest.approx(
        0.45 * 0.96 + 0.25 * 0.5 + 0.2 * 0.25 + 0.1 * 0.55
    )
    assert score_formula(0.6, 0.5) == pytest.approx(0.6 * (0.35 + 0.325) + 0.1)
    assert is_eligible(0.25, 0.5)
    assert not is_eligible(0.2499, 1.0)
    assert not is_eligible(0.9, 0.49)


def test_reference_ranker_on_a_hand_computed_paper() -> None:
    paper = Candidate(
        ref="rec_a",
        title="自动驾驶产品责任研究",
        abstract="",
        keywords=(),
        doc_type="期刊",
        year=2024,
        cited=9,
        hits=(Hit("q1", 1, 1.0),),
        quality=SourceQuality(("CSSCI",), 2.0, None),
    )
    [ranked] = ReferenceRanker().rank([paper], GROUPS, 2026)
    e = ranked.evidence
    # Q = {自动 动驾 驾驶 产品 品责 责任}; title bigrams add 驶产 任研 研究: 2*6/(6+9)
    assert e.title_match == pytest.approx(12 / 15)
    assert e.abstract_match == 0 and e.keyword_match == 0
    assert e.rrf == pytest.approx(1 / 61) and e.concept_coverage == 1.0
    relevance = (0.32 * 0.8 + 0.20 * min(20 / 61, 1) + 0.08 / 3 + 0.12) / 1.12
    assert e.relevance == pytest.approx(relevance)
    annual = 1 - math.exp(-9 / 3 / 3)
    quality = 0.45 * 0.96 + 0.25 * (1 - math.exp(-1)) + 0.2 * annual + 0.1 * 0.55
    assert e.quality == pytest.approx(quality)
    assert ranked.score == pytest.approx(relevance * (0.35 + 0.65 * quality) + 0.2 * quality)
    assert ranked.eligible and e.quality_evidence_present
    assert set(ranked.to_dict()) == {"record", "score", "relevance_eligible", "evidence"}
    assert list(e.to_dict()) == [
        "relevance",
        "quality",
        "title_match",
        "abstract_match",
        "keyword_match",
        "rrf",
        "concept_coverage",
        "source_tier",
        "impact",
        "annual_citations",
        "resource_type",
        "quality_evidence_present",
    ]


def test_journal_quality_counts_only_when_given_but_citations_and_type_always() -> None:
    bare = Candidate(ref="rec_b", title="自动驾驶产品责任", doc_type="博士")
    [r] = ReferenceRanker().rank([bare], GROUPS, 2026)
    assert r.evidence.source_tier == 0 and r.evidence.impact == 0
    assert r.evidence.quality == pytest.approx(0.1 * 0.72)
    assert not r.evidence.quality_evidence_present
    cited = Candidate(ref="rec_c", title="自动驾驶产品责任", cited=0, year=2020)
    [c] = ReferenceRanker().rank([cited], GROUPS, 2026)
    assert c.evidence.quality_evidence_present and c.evidence.annual_citations == 0


def test_sort_order_eligible_first_then_score_then_ref() -> None:
    relevant = Candidate(ref="rec_z", title="自动驾驶产品责任")
    twin = Candidate(ref="rec_y", title="自动驾驶产品责任")
    off_topic = Candidate(
        ref="rec_a",
        title="交通事故研究",
        hits=(Hit("q1", 1), Hit("q2", 1), Hit("q3", 1)),
        quality=SourceQuality(("SCI",), 30.0, None),
    )
    ranked = ReferenceRanker().rank([off_topic, relevant, twin], GROUPS, 2026)
    assert [r.ref for r in ranked] == ["rec_y", "rec_z", "rec_a"]
    assert not ranked[2].eligible and ranked[2].score > ranked[0].score


def _ranked(ref: str, score: float, *, eligible: bool = True, **evidence: float | bool) -> Ranked:
    return Ranked(ref, score, eligible, Evidence(**evidence))  # type: ignore[arg-type]


def test_selection_floor_is_55_percent_of_the_top_score_at_least_024() -> None:
    assert selection_floor([_ranked("a", 0.8)]) == pytest.approx(0.44)
    assert selection_floor([_ranked("a", 0.3)]) == 0.24
    assert selection_floor([]) == 0.24


@pytest.mark.parametrize(
    ("evidence", "kept"),
    [
        (
            {"relevance": 0.35, "concept_coverage": 1.0, "quality": 0.0, "quality_evidence_present": True},
            True,
        ),
        (
            {"relevance": 0.35, "concept_coverage": 0.5, "quality": 0.0, "quality_evidence_present": True},
            False,
        ),
        (
            {"relevance": 0.30, "concept_coverage": 0.5, "quality": 0.45, "quality_evidence_present": True},
            True,
        ),
        (
            {"relevance": 0.35, "concept_coverage": 0.5, "quality": 0.25, "quality_evidence_present": True},
            True,
        ),
        (
            {"relevance": 0.34, "concept_coverage": 0.5, "quality": 0.25, "quality_evidence_present": True},
            False,
        ),
        (
            {"relevance": 0.55, "concept_coverage": 0.5, "quality": 0.0, "quality_evidence_present": False},
            True,
        ),
        (
            {"relevance": 0.55, "concept_coverage": 0.5, "quality": 0.0, "quality_evidence_present": True},
            False,
        ),
        (
            {"relevance": 0.54, "concept_coverage": 0.5, "quality": 0.0, "quality_evidence_present": False},
            False,
        ),
    ],
)
def test_a_paper_is_kept_only_when_its_evidence_passes_the_selection_clauses(evidence: dict[str, float | bool], kept: bool) -> None:
    assert passes_clauses(Evidence(**evidence)) is kept  # type: ignore[arg-type]


def test_select_applies_eligibility_floor_clauses_and_limit() -> None:
    good = {"relevance": 0.6, "concept_coverage": 1.0, "quality": 0.5, "quality_evidence_present": True}
    ranked = [
        _ranked("a", 0.8, **good),
        _ranked("b", 0.45, **good),  # above the floor 0.44
        _ranked("c", 0.43, **good),  # below the floor
        _ranked("d", 0.9, eligible=False, **good),
    ]
    selected = ReferenceRanker().select(ranked)
    assert [r.ref for r in selected] == ["a", "b"]
    assert [r.ref for r in ReferenceRanker().select(ranked, limit=1)] == ["a"]
    assert exclusions(ranked, ["a", "b"]) == {"c": EXCLUDED_THRESHOLD, "d": EXCLUDED_IRRELEVANT}


@pytest.mark.parametrize(
    ("n", "size"),
    [
        (0, 0),
        (1, 1),
        (30, 30),
        (31, 31),
        (35, 35),
        (41, 40),
        (100, 40),
        (101, 60),
        (300, 60),
        (301, 80),
        (3000, 80),
    ],
)
def test_the_enhancement_size_is_the_count_capped_at_forty_then_sixty_above_100_and_eighty_above_300(n: int, size: int) -> None:
    assert enhancement_size(n) == size


def test_feedback_keywords_from_eligible_top_ten() -> None:
    ranked = [_ranked(f"r{i}", 1 - i / 100, eligible=i != 1) for i in range(12)]
    keywords = {f"r{i}": ["风险分配", "自动驾驶", "算法责任", "算法责任", "x"] for i in range(12)}
    keywords["r0"] = ["Deep  Learning", "风险分配"]
    keywords["r2"] = ["deep learning", "伦理"]
    keywords["r1"] = ["伦理"]  # ineligible: ignored
    keywords["r11"] = ["伦理"]  # beyond the top 10: ignored
    words = feedback_keywords(ranked, keywords, GROUPS)
    # 风险分配: r0 + r3..r9 = 8; 算法责任 (counted once per paper): r3..r9 = 7; deep learning 2; 伦理 1
    assert words == ["风险分配", "算法责任"]
    assert feedback_keywords(ranked[:3], keywords, GROUPS) == ["deep learning"]
    assert feedback_keywords(ranked, keywords, []) == []


def test_feedback_keywords_skip_the_words_of_a_spaced_alias() -> None:
    # "违约金 酌减" already requires 违约金 and 酌减: a feedback channel adding 违约金 narrows nothing
    ranked = [_ranked(f"r{i}", 1 - i / 100) for i in range(4)]
    keywords = {f"r{i}": ["违约金", "酌减", "司法酌减"] for i in range(4)}
    assert feedback_keywords(ranked, keywords, [["违约金 酌减"]]) == ["司法酌减"]


# --- measured variants (docs/benchmarks.md, Ranking quality) ----------------------------------

_GOOD = {"relevance": 0.6, "concept_coverage": 1.0, "quality": 0.5, "quality_evidence_present": True}
_LOW_QUALITY = {"relevance": 0.40, "concept_coverage": 1.0, "quality": 0.1, "quality_evidence_present": True}
_NO_CLAUSE = {"relevance": 0.30, "concept_coverage": 0.5, "quality": 0.1, "quality_evidence_present": True}


def _floor_case() -> list[Ranked]:
    # top 0.8 -> floor max(0.24, 0.44) = 0.44: only "a" clears it.
    return [
        _ranked("a", 0.8, **_GOOD),
        _ranked("b", 0.30, **_LOW_QUALITY),  # below the floor, passes clause 1 (0.40 ≥ 0.35, coverage 1)
        _ranked("c", 0.25, **_NO_CLAUSE),  # below the floor, passes no clause
        _ranked("d", 0.20, **_LOW_QUALITY),
        _ranked("e", 0.90, eligible=False, **_GOOD),
    ]


def test_the_two_ranker_variants_keep_ten_and_rescue_from_relevance_0_55() -> None:
    assert MIN_SELECTED == 10 and RESCUE_RELEVANCE == 0.55
    assert MinimumSelectionRanker().min_selected == 10
    assert RelevanceRescueRanker().rescue_relevance == 0.55
    assert MinimumSelectionRanker.name == "min10" and RelevanceRescueRanker.name == "min10_rescue55"


def test_minimum_selection_tops_up_below_the_floor_with_clause_passing_eligible_papers() -> None:
    ranked = _floor_case()
    assert [r.ref for r in ReferenceRanker().select(ranked)] == ["a"]
    # c passes no clause and e is not eligible: never taken, whatever the minimum.
    assert [r.ref for r in MinimumSelectionRanker(3).select(ranked)] == ["a", "b", "d"]
    assert [r.ref for r in MinimumSelectionRanker(10).select(ranked)] == ["a", "b", "d"]
    assert [r.ref for r in MinimumSelectionRanker(2).select(ranked)] == ["a", "b"]
    assert [r.ref for r in MinimumSelectionRanker(1).select(ranked)] == ["a"]
    assert [r.ref for r in MinimumSelectionRanker(3).select(ranked, limit=2)] == ["a", "b"]
    assert MinimumSelectionRanker().select([]) == []


def test_minimum_selection_keeps_every_reference_pick_when_there_are_enough() -> None:
    ranked = [_ranked(f"r{i}", 0.8 - i * 0.01, **_GOOD) for i in range(12)] + [
        _ranked("low", 0.30, **_LOW_QUALITY)
    ]
    reference = [r.ref for r in ReferenceRanker().select(ranked)]
    assert len(reference) == 12
    assert [r.ref for r in MinimumSelectionRanker().select(ranked)] == reference


def test_relevance_rescue_needs_eligibility_full_coverage_and_relevance_055() -> None:
    low_q = {"quality": 0.1, "quality_evidence_present": True}
    ranked = [
        _ranked("a", 0.8, **_GOOD),
        _ranked("b", 0.20, relevance=0.55, concept_coverage=1.0, **low_q),  # rescued
        _ranked("c", 0.19, relevance=0.549, concept_coverage=1.0, **low_q),  # just under 0.55
        _ranked("d", 0.18, relevance=0.60, concept_coverage=0.5, **low_q),  # one group missing
        _ranked("e", 0.90, eligible=False, relevance=0.9, concept_coverage=1.0, **low_q),
    ]
    assert [r.ref for r in RelevanceRescueRanker(min_selected=1).select(ranked)] == ["a", "b"]
    # the minimum size then tops up with c (clause 1); d passes no clause (coverage 0.5,
    # quality 0.1, evidence present), e is ineligible.
    assert [r.ref for r in RelevanceRescueRanker().select(ranked)] == ["a", "b", "c"]
    assert [r.ref for r in RelevanceRescueRanker(min_selected=1).select(ranked, limit=1)] == ["a"]
    assert [r.ref for r in RelevanceRescueRanker(1, rescue_relevance=0.5).select(ranked)] == [
        "a",
        "b",
        "c",
    ]


def test_a_rescued_paper_keeps_the_clause_passing_papers_ranked_above_it() -> None:
    # bundled q03: a 博士 thesis (0.286, relevance 0.48) was excluded as under the threshold while a
    # newspaper report ranked below it (0.201, relevance 0.55) was rescued and selected
    low_q = {"quality": 0.1, "quality_evidence_present": True}
    ranked = [
        _ranked("a", 0.8, **_GOOD),
        _ranked("thesis", 0.286, relevance=0.48, concept_coverage=1.0, **low_q),  # clause 1, under the floor
        _ranked("none", 0.25, **_NO_CLAUSE),  # passes no clause: still out
        _ranked("report", 0.201, relevance=0.55, concept_coverage=1.0, **low_q),  # rescued
        _ranked("after", 0.19, relevance=0.50, concept_coverage=1.0, **low_q),  # below every pick: out
    ]
    chosen = [r.ref for r in RelevanceRescueRanker(min_selected=1).select(ranked)]
    assert chosen == ["a", "thesis", "report"]
    assert exclusions(ranked, chosen) == {"none": EXCLUDED_THRESHOLD, "after": EXCLUDED_THRESHOLD}
    assert [r.ref for r in RelevanceRescueRanker(min_selected=1).select(ranked, limit=2)] == ["a", "thesis"]


def test_variants_score_and_order_exactly_like_the_reference() -> None:
    candidates = [
        Candidate(
            "rec_a", title="自动驾驶汽车的产品责任", abstract="自动驾驶 产品责任 归责", hits=(Hit("c1", 1),)
        ),
        Candidate("rec_b", title="产品责任", doc_type="期刊", year=2020, cited=30, hits=(Hit("c2", 3),)),
        Candidate("rec_c", title="天气", hits=(Hit("c1", 2),)),
    ]
    reference = ReferenceRanker().rank(candidates, GROUPS, 2026)
    assert MinimumSelectionRanker().rank(candidates, GROUPS, 2026) == reference
    assert RelevanceRescueRanker().rank(candidates, GROUPS, 2026) == reference


def test_the_research_pipeline_defaults_to_the_measured_variant() -> None:
    import inspect

    from cnki_mcp.pipeline import research

    assert "ranker or RelevanceRescueRanker()" in inspect.getsource(research.ResearchPipeline.__init__)


def test_a_work_stands_once_as_its_kept_record_at_the_place_of_its_best_record() -> None:
    from cnki_mcp.rank import work_keywords, works_ranking

    # online-first copy "a1" ranks first; its kept final record "a2" ranks third: the work is read
    # once, as a2, at a1's place; "b" keeps its own place after it
    ranked = [_ranked("a1", 0.9), _ranked("b", 0.8), _ranked("a2", 0.5), _ranked("c", 0.4)]
    assert [r.ref for r in works_ranking(ranked, {"a1": "a2"})] == ["a2", "b", "c"]
    assert [r.ref for r in works_ranking(ranked, {})] == ["a1", "b", "a2", "c"]
    # the work's keywords, whichever record was read, count once under its kept record
    words = work_keywords({"a1": ["违约金", "酌减"], "a2": ["违约金"], "b": ["定金"]}, {"a1": "a2"})
    assert words["a2"] == ["违约金", "酌减"] and words["b"] == ["定金"]
