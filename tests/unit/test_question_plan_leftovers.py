"""Planning leftovers (DESIGN.md §Modules, `query/segment.py`, `query/quantity.py`): age ranges and
percentages as quantities, a bound before a quantity, 中国 as one of two things compared, 目标 as the
head of the word before it, 技术溢出, a two-word product name before Han text, every aspect kept
under the term cap, a dosage form ending a medicine's name, 新型, 引起, 国内, a discipline before a tier."""

from __future__ import annotations

import pytest

from cnki_mcp.query.segment import question_concepts
from tests.planning import CUT
from tests.planning import planned_groups as _groups
from tests.planning import planned_terms as _terms


@pytest.mark.parametrize(
    ("question", "topic"),
    [
        ("3-6岁儿童语言发展", ["3-6岁儿童", "儿童"]),
        ("3～6岁儿童语言发展", ["3~6岁儿童", "儿童"]),
        ("3至6岁儿童语言发展", ["3至6岁儿童", "儿童"]),
        ("3到6个月婴儿辅食添加", ["3到6个月婴儿", "婴儿"]),
        ("超过60岁老年人的用药安全", ["超过60岁老年人", "老年人"]),
        ("不满18周岁未成年人犯罪", ["不满18周岁未成年人", "未成年人"]),
        ("60岁老年人的用药安全", ["60岁老年人", "老年人"]),
    ],
)
def test_a_range_or_bounded_quantity_narrows_the_name_after_it(question: str, topic: list[str]) -> None:
    assert _groups(question)[0] == topic


@pytest.mark.parametrize(
    "question",
    [
        "超过5%的股权质押",
        "百分之五的股权质押比例",
        "GDP增长率下降5%对就业的影响",
        "资产负债率超过70%的企业财务风险",
        "城镇化率超过60%后的城市更新",
    ],
)
def test_a_percentage_naming_nothing_is_no_term(question: str) -> None:
    terms = _terms(question)
    assert not any(t.isdigit() or "%" in t or "百分之" in t or "超过" in t for t in terms), _groups(question)


@pytest.mark.parametrize(
    ("question", "term"),
    [("5%葡萄糖溶液对大鼠血糖的影响", "5%葡萄糖溶液"), ("可再生能源占比30%情景下的电力系统规划", "可再生能源占比30%情景")],
)
def test_a_percentage_written_against_a_name_stays_in_it(question: str, term: str) -> None:
    assert term in _groups(question)[0], _groups(question)


@pytest.mark.parametrize(
    ("question", "other", "subject"),
    [
        ("中国与印度经济发展比较", "印度", "经济"),
        ("中国与印度的经济发展比较", "印度", "经济"),
        ("中国与东盟贸易", "东盟", "贸易"),
        ("中国与日本老龄化政策比较", "日本", "老龄化政策"),
        ("中国与日本的老龄化政策对比", "日本", "老龄化政策"),
        ("中国与俄罗斯能源合作", "俄罗斯", "能源合作"),
        ("中国和欧盟碳排放交易机制比较", "欧盟", "碳排放交易机制"),
    ],
)
def test_china_compared_with_another_country_keeps_both_as_required_groups(
    question: str, other: str, subject: str
) -> None:
    # the other country is a group of its own (required), never one OR alternative among the aspects,
    # where 中国 AND 政策 would match any paper on Chinese policy
    groups = _groups(question)
    assert groups[:2] == [["中国"], [other]] and subject in groups[2] and len(groups) == 3, groups


def test_china_compared_among_three_concepts_widens_no_aspects() -> None:
    assert "中国" not in _terms("美国和中国的贸易摩擦")


@pytest.mark.parametrize(
    ("question", "term", "junk"),
    [
        ("教学目标达成度评价", "教学目标", "目标达成度"),
        ("外资企业技术溢出效应", "技术溢出", "溢出效应"),
        ("企业目标管理", "目标管理", "企业目标"),
        ("基于网络药理学的六味地黄丸治疗骨质疏松的作用机制研究", "六味地黄丸", "丸治疗"),
        ("中医药防治新型冠状病毒肺炎的研究进展", "新型冠状病毒", "中医药防治新型"),
    ],
)
def test_a_name_is_cut_where_its_words_belong(question: str, term: str, junk: str) -> None:
    terms = _terms(question)
    assert term in terms and junk not in terms, _groups(question)


@pytest.mark.parametrize(
    ("question", "word"),
    [
        ("中医药防治新型冠状病毒肺炎的研究进展", "新型"),
        ("盾构隧道施工引起的地表沉降预测", "引起"),
        ("基于CiteSpace的国内智慧图书馆研究热点分析", "国内"),
    ],
)
def test_a_modifier_or_verb_is_no_alternative_of_its_own(question: str, word: str) -> None:
    assert word not in _terms(question), _groups(question)


@pytest.mark.parametrize(
    ("question", "first"),
    [
        ("Spring Boot微服务架构设计", ["Spring Boot"]),
        ("Apache Kafka消息队列", ["Apache Kafka"]),
        ("COVID-19 mRNA疫苗", ["COVID-19"]),
        ("LSTM Transformer模型", ["LSTM"]),
    ],
)
def test_a_capitalised_two_word_name_against_han_text_is_one_keyword(question: str, first: list[str]) -> None:
    assert _groups(question)[0] == first


@pytest.mark.parametrize(
    ("question", "name"),
    [
        ("基于Orem自理理论的护理干预对脑卒中患者康复的影响", "脑卒中患者康复"),
        ("中性粒细胞与淋巴细胞比值对脓毒症患者的预后价值", "预后价值"),
        ("请帮我找一些关于PD-1抑制剂联合化疗治疗晚期胃癌的临床研究，最好是近三年的核心期刊", "胃癌"),
    ],
)
def test_every_aspect_keeps_its_name_under_the_term_cap(question: str, name: str) -> None:
    assert name in _groups(question)[-1], _groups(question)


def test_a_discipline_before_a_tier_asked_for_is_part_of_the_wish() -> None:
    terms = _terms("我想了解刑事诉讼中认罪认罚从宽制度的实施效果，主要看法学核心期刊")
    assert not any("看法学" in t or "期刊" in t for t in terms), terms


@pytest.mark.parametrize(
    ("question", "bound"),
    [
        ("不低于3年的随访研究", "不低于"),
        ("随访不少于6个月的患者", "不少"),
        ("不超过5公斤的婴儿", "不超过"),
        ("收入低于贫困线的家庭", "低于"),
        ("高于平均水平的企业", "高于"),
        ("PM2.5浓度超过75微克的天数", "超过"),
        ("体重低于2500克的新生儿", "低于"),
        ("不满一周岁婴儿疫苗接种", "不满"),
    ],
)
def test_a_bound_word_is_never_an_alternative_or_a_group(question: str, bound: str) -> None:
    groups = _groups(question)
    assert not any(t.startswith(bound) and not any(c.isdigit() for c in t) for g in groups for t in g[1:]), groups
    assert all(g[0] != bound for g in groups), groups


@pytest.mark.parametrize(
    ("question", "topic"),
    [
        ("不满一周岁婴儿疫苗接种", ["不满一周岁婴儿", "婴儿"]),
        ("体重低于2500克的新生儿", ["体重低于2500克", "体重"]),
    ],
)
def test_a_han_numeral_or_unit_quantity_is_no_alternative(question: str, topic: list[str]) -> None:
    assert _groups(question)[0] == topic


@pytest.mark.parametrize(
    ("question", "formula"),
    [
        ("补中益气汤治疗脾虚", "补中益气汤"),
        ("参苓白术散治疗溃疡性结肠炎", "参苓白术散"),
        ("桂枝茯苓丸治疗子宫肌瘤", "桂枝茯苓丸"),
        ("藿香正气散的药理作用", "藿香正气散"),
        ("黄连上清丸的质量标准", "黄连上清丸"),
    ],
)
def test_a_formula_cut_before_its_dosage_form_is_one_term(question: str, formula: str) -> None:
    groups = _groups(question)
    pieces = {formula[:1], formula[:2], formula[2:], formula[1:]}
    assert formula in _terms(question) and not pieces & set(_terms(question)), groups


@pytest.mark.parametrize(
    ("question", "term"),
    [
        ("分散式风电并网研究", "分散式"),
        ("扩散模型图像生成", "扩散"),
        ("牡丹江市旅游发展", "牡丹江市"),
        ("石膏板隔墙施工", "石膏板"),
        ("大学生丹麦留学意愿", "丹麦"),
        ("服用逍遥散治疗抑郁症", "逍遥散"),
        ("观赏牡丹品种", "牡丹"),
    ],
)
def test_a_word_ending_like_a_dosage_form_is_no_formula(question: str, term: str) -> None:
    words = question_concepts(question, CUT)  # the words, before a run is written together as a phrase
    assert term in words, words
