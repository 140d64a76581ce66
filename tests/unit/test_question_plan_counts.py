"""A sample's count and a quantity naming nothing (DESIGN.md §Modules, `query/quantity.py`): 120例患者,
200名大学生, 3所高校 say how many were studied, and 3年的随访, 10岁以下的儿童 put a quantity where no
concept follows it; neither is a concept a search can require (a required group [120] or [3年] kept
only the papers whose subject fields carry that number)."""

from __future__ import annotations

import pytest

from tests.planning import planned_groups as _groups


@pytest.mark.parametrize(
    ("question", "groups"),
    [
        ("120例患者的临床分析", [["患者"], ["临床分析", "临床"]]),
        ("200名大学生心理健康调查", [["大学生"], ["心理健康调查", "心理健康", "调查"]]),
        ("3所高校", [["高校"]]),
        ("20只大鼠", [["大鼠"]]),
        ("超过100家上市公司的实证研究", [["上市公司"]]),
        ("3年的随访研究", [["随访"]]),
        ("10岁以下的儿童", [["儿童"]]),
    ],
)
def test_a_count_or_a_quantity_naming_nothing_is_no_group(question: str, groups: list[list[str]]) -> None:
    assert _groups(question) == groups


def test_a_count_before_a_long_name_leaves_the_name_its_alternatives() -> None:
    assert _groups("100例急性心肌梗死患者的护理") == [["急性心肌梗死患者", "急性", "心肌梗死", "患者"], ["护理"]]


@pytest.mark.parametrize(
    ("question", "first"),
    [
        # a quantity right before its name still narrows it (`test_question_plan_leftovers.py`)
        ("60岁以上老年人抑郁", ["60岁以上老年人", "老年人"]),
        ("6个月以下婴儿喂养", ["6个月以下婴儿", "婴儿"]),
        # a number that is part of a name is no count
        ("985高校学生就业", ["985高校学生"]),
        ("2型糖尿病患者的健康教育", ["2型糖尿病患者", "2型糖尿病", "患者"]),
        ("5G网络切片技术", ["5G"]),
        # an ordinal is one term (第7次), never a count with a lone 第 left as the topic
        ("第5名选手的得分", ["第5名"]),
        ("第2例患者的护理", ["第2例"]),
        # 位 after a number is mostly a width that is part of the name
        ("32位处理器", ["32位处理器"]),
        ("64位操作系统设计", ["64位操作系统"]),
        # words that begin with a count's measure word
        ("名人效应", ["名人效应"]),
        ("家庭教育", ["家庭教育"]),
    ],
)
def test_a_number_in_a_name_or_a_measure_word_in_a_word_is_kept(question: str, first: list[str]) -> None:
    assert _groups(question)[0] == first
