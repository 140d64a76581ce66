"""Planning questions where a study word is part of a concept's name (企业价值, 静态分析, 目标检测,
技术进步, Meta分析), where context words widened a concept's alternatives (中国, 时期, 最好) and where
a date, temperature, article number or wish was read as a concept: DESIGN.md §Modules, `query/segment.py`."""

from __future__ import annotations

import pytest

from cnki_mcp.query.plan import plan_question
from tests.planning import CUT
from tests.planning import planned_groups as _groups
from tests.planning import planned_terms as _terms


@pytest.mark.parametrize(
    ("question", "concept"),
    [
        ("YOLOv5目标检测算法改进", "目标检测"),
        ("C++程序静态分析", "静态分析"),
        ("GIS空间分析", "空间分析"),
        ("数字化转型对企业价值的影响", "企业价值"),
        ("技术进步对经济增长的贡献率测算", "技术进步"),
        ("OFDI逆向技术溢出", "技术溢出"),
        ("关于水稻耐盐碱品种选育的分子机制研究", "分子机制"),
        ("关于二甲双胍对2型糖尿病患者认知功能影响的Meta分析有哪些", "Meta分析"),
    ],
)
def test_a_study_word_naming_part_of_a_concept_stays_in_it(question: str, concept: str) -> None:
    assert concept in _terms(question), _groups(question)


@pytest.mark.parametrize(
    ("question", "lost"),
    [
        ("数字化转型对企业价值的影响", "企业"),
        ("GIS空间分析", "空间"),
        ("关于水稻耐盐碱品种选育的分子机制研究", "分子"),
        ("技术进步对经济增长的贡献率测算", "进步"),
    ],
)
def test_the_concept_without_its_head_is_no_alternative(question: str, lost: str) -> None:
    assert lost not in _terms(question), _groups(question)


@pytest.mark.parametrize(
    ("question", "dropped"),
    [
        ("老年髋部骨折术后谵妄的危险因素分析", "危险"),  # 危险/因素: the study word the segmenter cut
        ("人民币汇率波动对出口贸易的影响实证分析", "实证"),
        ("请帮我找关于《红楼梦》英译本比较研究的文献", "比较"),
        ("关于数据跨境流动法律规制的比较研究，最好有欧盟GDPR相关的", "最好"),
        ("帮我找几篇关于机器学习预测急性肾损伤的论文", "几篇"),
        ("“十四五”时期数字经济发展规划", "时期"),
    ],
)
def test_a_study_or_request_word_is_no_concept(question: str, dropped: str) -> None:
    assert not any(dropped in t for t in _terms(question)), _groups(question)


@pytest.mark.parametrize(
    ("question", "groups"),
    [
        ("中国OFDI的逆向技术溢出效应研究", [["OFDI"], ["逆向技术溢出", "逆向", "技术溢出"]]),
        ("一带一路倡议对中国OFDI的影响", [["一带一路倡议", "一带", "一路", "倡议"], ["OFDI"]]),
    ],
)
def test_china_beside_another_concept_widens_no_group(question: str, groups: list[list[str]]) -> None:
    assert _groups(question) == groups


@pytest.mark.parametrize(
    ("question", "concept", "lost"),
    [
        ("2021年违约金调整的司法实践", "违约金调整", "2021年违约金"),
        ("2020年新冠疫情对旅游业的冲击", "新冠疫情", "2020年新冠"),
    ],
)
def test_a_year_written_against_the_topic_is_not_glued_to_it(question: str, concept: str, lost: str) -> None:
    terms = _terms(question)
    assert concept in terms and lost not in terms, terms
    assert not any(t.startswith("20") for t in terms)


def test_a_year_standing_apart_still_stays_in_the_topic() -> None:
    assert _groups("2021年的违约金调整")[0] == ["2021年"]
    assert "2021年度报告" in _terms("2021年度报告披露质量")


@pytest.mark.parametrize("question", ["25 ℃下的溶解度", "25℃下药物溶解度研究"])
def test_a_temperature_is_one_term(question: str) -> None:
    groups = _groups(question)
    assert groups[0] == ["25℃"]
    assert "C" not in _terms(question)


def test_an_article_number_after_a_law_is_its_own_term() -> None:
    groups = _groups("请找一下关于民法典第1186条公平责任适用问题的研究")
    assert groups[0] == ["民法典"]
    assert "第1186条" in groups[1]


def test_a_preposition_after_an_unknown_word_is_not_part_of_it() -> None:
    terms = _terms("关于二甲双胍对2型糖尿病患者认知功能影响的Meta分析有哪些")
    assert "二甲双胍" in terms and not any(t.endswith("对") for t in terms), terms


def test_qingwen_is_a_request_word() -> None:
    assert _groups("请问有哪些关于肠道菌群与抑郁症关系的研究？")[0][0] == "肠道菌群"


def test_a_long_run_keeps_its_last_word_among_the_alternatives() -> None:
    group = _groups("请帮我找一些关于PD-1抑制剂联合化疗治疗晚期胃癌的临床研究")[1]
    assert group[0] == "抑制剂联合化疗治疗晚期胃癌"
    assert "胃癌" in group and len(group) <= 6


@pytest.mark.parametrize(
    "question",
    ["关于数字普惠金融对农村居民消费的影响研究，最好是CSSCI的", "帮我找几篇关于机器学习预测急性肾损伤的论文，要SCI的"],
)
def test_a_tier_asked_for_at_the_end_is_a_wish(question: str) -> None:
    plan = plan_question(question, now_year=2026, cut=CUT)
    assert not any("SCI" in t for g in plan.groups for t in g), plan.groups
    assert any("source_tiers=" in w for w in plan.warnings)
