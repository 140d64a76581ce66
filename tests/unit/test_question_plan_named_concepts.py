"""Planning questions whose concept is named with a context or study word: 中国 written against a
concept word (中国方案), a study head whose concept word is an alternative (情景分析 | 情景), 比较 and
改进 in a name (比较优势, 持续改进), 技术/目标 after a name (区块链技术), two tiers asked for at the end
and temperatures with a sign or range: DESIGN.md §Modules, `query/segment.py`."""

from __future__ import annotations

import pytest

from cnki_mcp.query.plan import plan_question
from tests.planning import CUT
from tests.planning import planned_groups as _groups
from tests.planning import planned_terms as _terms


@pytest.mark.parametrize(
    ("question", "group"),
    [
        ("全球治理中的中国方案", ["中国方案", "方案"]),
        ("中国道路的世界意义", ["中国道路", "道路"]),
        ("构建中国自主知识体系", ["中国自主", "自主"]),
        ("中国制造2025背景下的职业教育", ["中国制造", "制造"]),
        ("讲好中国故事的国际传播策略", ["讲好中国故事", "讲好", "故事"]),
        ("中国法制史研究方法", ["中国法制史", "法制史"]),
        ("中国近代民族资本主义的发展", ["中国近代", "近代"]),
    ],
)
def test_china_written_against_a_concept_word_stays_in_its_name(question: str, group: list[str]) -> None:
    assert group in _groups(question)
    assert "中国" not in _terms(question)


@pytest.mark.parametrize(
    ("question", "name", "bare"),
    [
        ("碳达峰路径的情景分析", "情景分析", "情景"),
        ("城市热岛效应的时空分析", "时空分析", "时空"),
        ("成本分析与控制研究", "成本分析", "成本"),
        ("血清CEA对结直肠癌的诊断价值", "诊断价值", "诊断"),
        ("关于非小细胞肺癌EGFR-TKI耐药机制的研究进展", "耐药机制", "耐药"),
    ],
)
def test_a_name_headed_by_a_study_word_has_its_concept_word_as_alternative(question: str, name: str, bare: str) -> None:
    group = next(g for g in _groups(question) if name in g)
    assert group.index(bare) == group.index(name) + 1, group


@pytest.mark.parametrize(
    ("question", "name"),
    [
        ("比较优势理论与国际分工", "比较优势"),
        ("比较教育学的学科发展", "比较教育学"),
        ("比较政治学的研究范式", "比较政治学"),
        ("持续改进在医院质量管理中的应用", "持续改进"),
        ("质量改进小组活动在护理中的应用", "质量改进"),
        ("医疗质量持续改进", "持续改进"),
    ],
)
def test_compare_or_improve_in_a_name_stays_in_it(question: str, name: str) -> None:
    assert name in _terms(question), _groups(question)


@pytest.mark.parametrize(
    ("question", "junk"),
    [
        ("比较中美两国高等教育", "比较中美两国"),
        ("中美高等教育比较研究", "比较"),
        ("区块链技术农产品溯源系统设计", "技术农产品"),
        ("人工智能技术赋能高校思政教育", "技术赋能"),
        ("碳中和目标约束下的电力系统规划", "目标约束"),
    ],
)
def test_a_study_word_outside_a_name_joins_no_word(question: str, junk: str) -> None:
    assert not any(junk in t for t in _terms(question)), _groups(question)


def test_a_technology_of_a_name_leaves_the_next_concept_whole() -> None:
    assert "农产品" in _terms("区块链技术农产品溯源系统设计")


@pytest.mark.parametrize(
    ("question", "term"),
    [
        ("25~35℃温度范围内的种子萌发", "25~35℃"),
        ("-20℃低温环境下混凝土抗压强度", "-20℃"),
        ("零下20℃条件下锂电池性能", "零下20℃"),
    ],
)
def test_a_temperature_keeps_its_sign_and_range(question: str, term: str) -> None:
    assert _groups(question)[0] == [term]


def test_above_after_a_quantity_is_no_concept() -> None:
    assert not any("以上" in t for t in _terms("100℃以上高温对钢材性能的影响"))


@pytest.mark.parametrize(
    "question", ["乡村振兴战略下农村电商发展，最好是CSSCI或北大核心的", "数字乡村建设，要CSSCI或CSCD的"]
)
def test_two_tiers_asked_for_at_the_end_are_wishes(question: str) -> None:
    plan = plan_question(question, now_year=2026, cut=CUT)
    assert not any(w in t for g in plan.groups for t in g for w in ("CSSCI", "CSCD", "北大")), plan.groups
    assert any("source_tiers=" in w for w in plan.warnings)
