"""Planning questions with a bounded quantity (60岁以上老年人, 二级以上医院: the quantity narrows the
concept after it and is no concept of its own) and with 技术 after a name the segmenter cut in two
(机器学习技术预测: 技术 is the name's head, 预测 stays whole): DESIGN.md §Modules, `query/segment.py`."""

from __future__ import annotations

import pytest

from tests.planning import planned_groups as _groups
from tests.planning import planned_terms as _terms


@pytest.mark.parametrize(
    ("question", "topic", "rest"),
    [
        ("60岁以上老年人抑郁状况调查", ["60岁以上老年人", "老年人"], "抑郁"),
        ("80岁以上高龄老人的营养状况", ["80岁以上高龄老人", "高龄", "老人"], "营养状况"),
        ("二级以上医院护士职业倦怠", ["二级以上医院", "医院"], "职业倦怠"),
        ("年龄60岁以上糖尿病患者的血糖控制", ["年龄60岁以上糖尿病患者", "年龄", "糖尿病", "患者"], "血糖控制"),
        ("60岁及以上老年人高血压", ["60岁及以上老年人", "老年人"], "高血压"),
        ("6个月以下婴儿母乳喂养", ["6个月以下婴儿", "婴儿"], "母乳喂养"),
    ],
)
def test_a_bounded_quantity_stays_in_the_name_it_narrows(question: str, topic: list[str], rest: str) -> None:
    groups = _groups(question)
    assert groups[0] == topic
    assert len(groups) == 2 and rest in groups[1], groups


@pytest.mark.parametrize("question", ["65岁以上老年人跌倒风险", "三级以上甲等医院", "10岁以下儿童近视"])
def test_a_quantity_is_never_a_required_group_of_its_own(question: str) -> None:
    groups = _groups(question)
    assert all(any(not t[0].isdigit() and t[:2] != "三级" for t in g) for g in groups), groups


def test_a_bound_after_a_temperature_is_still_no_term() -> None:
    assert not any("以上" in t for t in _terms("100℃以上高温对钢材性能的影响"))


@pytest.mark.parametrize(
    ("question", "name", "verb", "junk"),
    [
        ("机器学习技术预测股票价格", "机器学习", "预测", "技术预测"),
        ("深度学习技术识别农作物病害", "深度学习", "识别", "技术识别"),
    ],
)
def test_technology_after_a_name_cut_in_two_leaves_the_next_word_whole(
    question: str, name: str, verb: str, junk: str
) -> None:
    groups = _groups(question)
    assert name in groups[0], groups
    assert verb in _terms(question) and not any(junk in t for t in _terms(question)), groups


@pytest.mark.parametrize(
    ("question", "term"),
    [("制造业企业技术进步", "技术进步"), ("逆向技术溢出", "技术溢出"), ("深度学习目标跟踪", "目标跟踪")],
)
def test_a_modifier_ending_the_words_still_names_the_next_word(question: str, term: str) -> None:
    assert term in _terms(question), _groups(question)
