"""Concept planning: explicit validation, lexical splitting and aliases, sampling prompt and replies."""

from __future__ import annotations

from typing import Any

import pytest

from cnki_mcp.errors import CnkiError
from cnki_mcp.query.plan import (
    LEXICAL_WARNING,
    SAMPLING_MAX_TOKENS,
    PlanMethod,
    parse_sampling_reply,
    plan_explicit,
    plan_lexical,
    plan_structured,
    sampling_request,
    version_aliases,
)


def _groups(question: str) -> list[list[str]]:
    return plan_lexical(question).groups


# ---------------------------------------------------------------- lexical


@pytest.mark.parametrize(
    ("question", "groups"),
    [
        ("请帮我检索自动驾驶、产品责任", [["自动驾驶"], ["产品责任"]]),
        ("C++ 内存模型", [["C++"], ["内存模型"]]),
        ("Wi-Fi 8 and 漫游", [["Wi-Fi 8", "WiFi8", "Wi-Fi8"], ["漫游"]]),
        ("WiFi 8月上市", [["WiFi"], ["8月上市"]]),
        ("WiFi8月上市", [["WiFi8月上市"]]),
        ("IEEE 802.11be 吞吐", [["IEEE 802.11be", "802.11be", "IEEE P802.11be"], ["吞吐"]]),
        ("研究一下关于竞业限制违约金。", [["竞业限制违约金"]]),
        ("有关 deep learning model compression 方法？", [["deep learning model compression"], ["方法"]]),
        ("竞业限制；违约金,,劳动合同", [["竞业限制"], ["违约金"], ["劳动合同"]]),
        ("区块链 AND 供应链金融", [["区块链"], ["供应链金融"]]),
        ("检索：初中物理 分层作业", [["初中物理"], ["分层作业"]]),
        ("自动驾驶、自动驾驶", [["自动驾驶"]]),
    ],
)
def test_lexical_plan_splits_on_explicit_separators_only(question: str, groups: list[list[str]]) -> None:
    assert _groups(question) == groups


def test_lexical_plan_is_method_lexical_with_the_warning() -> None:
    plan = plan_lexical("自动驾驶、产品责任")
    assert plan.method == PlanMethod.LEXICAL
    assert (
        plan.warnings
        == ["词项规划只按显式分隔符切分；可提供 concept_groups 保留专业同义词。"]
        == [LEXICAL_WARNING]
    )


def test_lexical_plan_never_segments_chinese_and_loses_no_word() -> None:
    question = "新能源汽车 电池回收 政策 and Li-ion battery recycling"
    flat = [g[0] for g in _groups(question)]
    assert flat == ["新能源汽车", "电池回收", "政策", "Li-ion battery recycling"]


def test_request_words_are_stripped_only_at_the_start_of_the_question() -> None:
    assert _groups("请检索有关部门、检索系统") == [["部门"], ["检索系统"]]


def test_and_inside_a_word_is_not_a_separator() -> None:
    assert _groups("sandbox android") == [["sandbox android"]]


@pytest.mark.parametrize(
    ("concept", "aliases"),
    [
        ("Wi-Fi 7", ["Wi-Fi 7", "WiFi7", "Wi-Fi7"]),
        ("wifi 6", ["wifi 6", "Wi-Fi 6", "WiFi6", "Wi-Fi6"]),
        ("WIFI7 roaming", ["WIFI7 roaming", "Wi-Fi 7 roaming", "Wi-Fi7 roaming"]),
        ("WiFi 8月", ["WiFi 8月"]),
        ("WiFi 6年", ["WiFi 6年"]),
        ("802.11ax", ["802.11ax", "IEEE 802.11ax", "IEEE P802.11ax"]),
        ("IEEE P802.11BE draft", ["IEEE P802.11BE draft", "802.11be draft", "IEEE 802.11be draft"]),
        ("TCP/IP", ["TCP/IP"]),
    ],
)
def test_a_wifi_or_802_11_version_is_searched_with_its_written_variants(concept: str, aliases: list[str]) -> None:
    assert version_aliases(concept) == aliases


@pytest.mark.parametrize(
    "question",
    [
        "a、b、c、d、e、f、g、h、i",  # 9 concepts
        "长" * 81,  # one unsegmented concept over 80 characters
        "请帮我检索一下？",  # nothing left
        "",
    ],
)
def test_lexical_plan_outside_limits_is_invalid_plan(question: str) -> None:
    with pytest.raises(CnkiError) as info:
        plan_lexical(question)
    assert info.value.code == "INVALID_PLAN"
    assert "concept_groups" in info.value.message


def test_lexical_plan_accepts_eight_concepts_and_eighty_characters() -> None:
    assert len(_groups("a、b、c、d、e、f、g、h")) == 8
    assert _groups("长" * 80) == [["长" * 80]]


# ---------------------------------------------------------------- explicit


def test_explicit_plan_keeps_groups_and_removes_normalised_duplicates() -> None:
    plan = plan_explicit(
        [["初中物理"], ["分层作业", " 作业分层 ", "分层作业"], ["Wi-Fi 7", "wi-fi  7", "ＷＩ-ＦＩ 7"]]
    )
    assert plan.method == PlanMethod.EXPLICIT
    assert plan.groups == [["初中物理"], ["分层作业", "作业分层"], ["Wi-Fi 7"]]
    assert plan.warnings == []


def test_explicit_plan_drops_quotes_enclosing_a_whole_term() -> None:
    # sent as written the quotes would be part of the term, which then matches nothing
    plan = plan_explicit([['"违约金"', "“约定违约金”", "违约金"], ["'smart contract'", '"a" "b"']])
    assert plan.groups == [["违约金", "约定违约金"], ["smart contract", '"a" "b"']]
    with pytest.raises(CnkiError) as info:
        plan_explicit([['""']])
    assert info.value.code == "INVALID_PLAN"


def test_a_concept_term_cnki_cannot_express_is_refused_when_planning_with_its_place() -> None:
    # before: the search operation started and then failed with details naming an expression path
    with pytest.raises(CnkiError) as info:
        plan_explicit([["违约金"], ["酌减", 'he said "it\'s"']])
    assert info.value.code == "QUERY_UNSUPPORTED"
    assert (info.value.details["group"], info.value.details["term"]) == (1, 1)


def test_a_concept_term_written_with_or_is_its_alternatives() -> None:
    # sent as written, '机器学习 OR 深度学习' was one literal phrase that matched nothing
    plan = plan_explicit([["机器学习 OR 深度学习", "AI"], ['"违约金" OR “违约赔偿金”']])
    assert plan.groups == [["机器学习", "深度学习", "AI"], ["违约金", "违约赔偿金"]]
    assert plan_explicit([["Oregon OR"]]).groups == [["Oregon"]]
    with pytest.raises(CnkiError) as info:
        plan_explicit([["a OR b OR c", "d", "e", "f", "g"]])  # seven alternatives in one group
    assert info.value.code == "INVALID_PLAN"


@pytest.mark.parametrize("term", ["机器学习 AND 金融", "金融风险 NOT 股票"])
def test_and_or_not_inside_a_concept_term_is_refused_with_its_place(term: str) -> None:
    with pytest.raises(CnkiError) as info:
        plan_explicit([["违约金"], ["酌减", term]])
    assert info.value.code == "INVALID_PLAN"
    assert (info.value.details["group"], info.value.details["term"]) == (1, 1)
    assert info.value.details["reason"] == "operator_in_term"


def test_explicit_plan_drops_a_group_repeating_an_earlier_one() -> None:
    assert plan_explicit([["a", "b"], ["B", "A"], ["c"]]).groups == [["a", "b"], ["c"]]


def test_explicit_plan_at_the_limits_is_accepted() -> None:
    groups = [[f"g{g}t{t}" + "x" * 74 for t in range(6)] for g in range(8)]
    assert plan_explicit(groups).groups == groups


@pytest.mark.parametrize(
    "groups",
    [
        [],
        [[f"g{i}"] for i in range(9)],
        [["a"], []],
        [[f"t{i}" for i in range(7)]],
        [["a", "x" * 81]],
        [["a", "  "]],
        [["a", 3]],
        ["ab"],
        "ab",
    ],
)
def test_explicit_plan_outside_limits_is_invalid_plan(groups: Any) -> None:
    with pytest.raises(CnkiError) as info:
        plan_explicit(groups)
    assert info.value.code == "INVALID_PLAN"


def test_structured_plan_has_no_groups() -> None:
    assert plan_structured().method == PlanMethod.STRUCTURED
    assert plan_structured().groups == []


# ---------------------------------------------------------------- sampling


def test_sampling_request_frames_the_question_as_data() -> None:
    system, user, max_tokens = sampling_request("  初中物理分层作业的研究进展  ")
    assert max_tokens == SAMPLING_MAX_TOKENS == 1200
    assert (
        "初中物理分层作业的研究进展" in user
        and "初中物理分层作业的研究进展" not in system.split("Example")[0]
    )
    lowered = system.lower()
    for needle in ("data", "json", "8", "6", "80", "version", "boilerplate", "add no topic"):
        assert needle in lowered


@pytest.mark.parametrize(
    ("reply", "groups"),
    [
        ('[["初中物理"], ["分层作业", "作业分层"]]', [["初中物理"], ["分层作业", "作业分层"]]),
        ('```json\n[["a", "A"], ["b"]]\n```', [["a"], ["b"]]),
        ('```\n[["a"]]\n```', [["a"]]),
        ('概念如下：[["a"], ["b"]]。', [["a"], ["b"]]),
    ],
)
def test_sampling_reply_is_parsed_into_a_sampling_plan(reply: str, groups: list[list[str]]) -> None:
    plan = parse_sampling_reply(reply)
    assert plan is not None
    assert plan.method == PlanMethod.SAMPLING
    assert plan.groups == groups


@pytest.mark.parametrize(
    ("reply", "groups"),
    [
        ('[["近五年"], ["数字经济"], ["就业"]]', [["数字经济"], ["就业"]]),
        ('[["数字经济", "近五年数字经济"], ["就业"], ["2020年以来"]]', [["数字经济"], ["就业"]]),
        ('[["近年来的数字经济"], ["就业"]]', [["数字经济"], ["就业"]]),
        ('[["2008年金融危机"], ["货币政策"]]', [["2008年金融危机"], ["货币政策"]]),  # a bare year is the topic
        ('[["2030年前碳达峰"]]', [["2030年前碳达峰"]]),  # a target year, not a window
        # a term naming a policy by its years keeps no empty brackets, a phrase inside a term
        # leaves no gap, and a group left repeating an earlier one goes as validation drops it
        ('[["规划纲要（2010—2020年）"], ["就业"]]', [["规划纲要"], ["就业"]]),
        ('[["“十三五”规划（2016-2020年）"], ["就业"]]', [["“十三五”规划"], ["就业"]]),
        ('[["数字经济近五年发展"], ["就业"]]', [["数字经济发展"], ["就业"]]),
        ('[["近五年数字经济"], ["数字经济"], ["就业"]]', [["数字经济"], ["就业"]]),
    ],
)
def test_a_sampled_plan_never_searches_a_time_phrase_as_a_concept(reply: str, groups: list[list[str]]) -> None:
    """The question's time phrases set the years; a client model that also kept 近五年 as a concept
    made it a term every paper's text had to hold (0 candidates)."""
    from cnki_mcp.pipeline.models import SearchInput
    from cnki_mcp.pipeline.research import plan_search
    from cnki_mcp.query.segment import default_segmenter

    plan = plan_search(SearchInput(query="近五年数字经济对就业的影响"), reply, now_year=2026, cut=default_segmenter())
    assert (plan.method, plan.groups, plan.year_from) == (PlanMethod.SAMPLING, groups, 2021)
    assert "time phrases" in sampling_request("近五年数字经济")[0]


@pytest.mark.parametrize(
    ("query", "reply"),
    [
        ("K最近邻算法在图像分类中的应用", '[["K最近邻", "KNN"], ["图像分类"]]'),
        ("最近邻插值与图像超分辨率", '[["最近邻插值"], ["图像超分辨率"]]'),
        ("迭代最近点算法用于点云配准", '[["迭代最近点", "ICP"], ["点云配准"]]'),
        ("最近公共祖先查询算法", '[["最近公共祖先", "LCA"], ["查询算法"]]'),
        ("最近发展区理论在教学中的应用", '[["最近发展区"], ["教学"]]'),
    ],
)
def test_nearest_in_a_technical_term_is_not_the_time_word(query: str, reply: str) -> None:
    """最近 is "nearest" in 最近邻 / 最近点 / 最近公共祖先 / 最近发展区: read as the vague time word
    "recently" it was cut out of every sampled term (K最近邻 -> `K 邻`) and the caller's own
    concept_groups were told to drop it."""
    from cnki_mcp.pipeline.models import SearchInput
    from cnki_mcp.pipeline.research import plan_search, time_terms_warning
    from cnki_mcp.query.segment import default_segmenter

    plan = plan_search(SearchInput(query=query), reply, now_year=2026, cut=default_segmenter())
    assert plan.groups == parse_sampling_reply(reply).groups  # type: ignore[union-attr]
    assert time_terms_warning(plan_explicit(plan.groups), 2026) is None
    recently = plan_search(SearchInput(query="最近区块链"), '[["最近的区块链"]]', now_year=2026, cut=default_segmenter())
    assert recently.groups == [["区块链"]]


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "自动驾驶、产品责任",
        '{"groups": [["a"]]}',
        '["a", "b"]',
        "[]",
        '[["a"], []]',
        '[["a", 1]]',
        '[["' + "x" * 81 + '"]]',
        str([[f"g{i}"] for i in range(9)]).replace("'", '"'),
        '```json\n[["a"]\n```',
    ],
)
def test_invalid_sampling_reply_gives_none(reply: str) -> None:
    assert parse_sampling_reply(reply) is None


def test_concept_terms_typed_in_full_width_or_with_subscripts_are_sent_as_cnki_indexes_them() -> None:
    # an IME in full-width mode gives ＣＯ２; a client copying the paper writes CO₂ (CNKI's text: CO2)
    plan = plan_explicit([["ＣＯ２捕集", "CO₂ capture"], ["约定\u200b违约金", "（一）"]])
    assert plan.groups == [["CO2捕集", "CO2 capture"], ["约定违约金", "（一）"]]


@pytest.mark.parametrize("query", ["近兩年數位經濟的就業效應", "近２年数字经济的就业效应"])
def test_a_sampled_plan_reads_the_years_as_the_segmented_plan_does(query: str) -> None:
    """The segmented plan read 近兩年 / 近２年 from the NFKC, mainland text; a sampled plan and a
    watch's check read the raw text and found no window (`question_years`)."""
    from cnki_mcp.pipeline.models import SearchInput
    from cnki_mcp.pipeline.research import plan_search
    from cnki_mcp.query.plan import plan_question
    from cnki_mcp.query.segment import default_segmenter

    cut = default_segmenter()
    sampled = plan_search(SearchInput(query=query), '[["数字经济"], ["就业"]]', now_year=2026, cut=cut)
    segmented = plan_question(query, now_year=2026, cut=cut)
    assert (sampled.year_from, sampled.year_to) == (segmented.year_from, segmented.year_to) == (2024, None)
