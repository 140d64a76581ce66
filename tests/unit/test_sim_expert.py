"""专业检索 (expert search) expressions in the simulator: syntax, precedence, fields, refusals."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cnki_mcp.sim.corpus import Corpus, SimAuthor, SimRecord
from cnki_mcp.sim.expert import ExpertError, ExpertErrorKind, Join, Match, parse_expert
from cnki_mcp.sim.query import QueryError, QueryRefused, parse_query_json, search


def _rec(i: int, **kw: Any) -> SimRecord:
    base: dict[str, Any] = {"id": f"r{i:02d}", "title": f"记录{i}", "type": "期刊"}
    base.update(kw)
    return SimRecord(**base)


CORPUS = Corpus(
    records=[
        _rec(1, title="经济发展方式转变研究", keywords=("经济发展", "转变"), year=2019, cited=3,
             authors=(SimAuthor("陈明", "北京大学"),), source="管理世界"),
        _rec(2, title="可持续发展与泡沫经济", keywords=("可持续发展", "泡沫"), year=2021, cited=0,
             authors=(SimAuthor("王强", "清华大学"),), source="经济研究", abstract="发展模式的转变"),
        _rec(3, title="可持续发展模式转变", keywords=("可持续发展",), year=2023, cited=12,
             authors=(SimAuthor("王芳", "复旦大学"), SimAuthor("李雷", "复旦大学")), source="管理世界"),
        _rec(4, title="生态文明建设", keywords=("生态文明",), year=2022, cited=1,
             authors=(SimAuthor("张伟", "南京大学"),), source="中国软科学"),
    ],
    journals=[],
)  # fmt: skip


def _expert_json(expression: str, d0: str = "", d1: str = "") -> str:
    control: list[dict[str, Any]] = []
    if d0 or d1:
        control = [{"Key": ".tit-date-box", "Title": "发表时间", "Logic": 0, "ChildItems": [], "Items": [
            {"Key": ".tit-date-box", "Title": "发表时间", "Logic": 0, "Field": "PT", "Operator": 7,
             "Value": d0, "Value2": d1}]}]  # fmt: skip
    return json.dumps({
        "Platform": "", "Resource": "CROSSDB", "Classid": "WD0FTY92", "Products": "", "SearchType": 4,
        "QNode": {"QGroup": [
            {"Key": "Subject", "Title": "", "Logic": 0, "ChildItems": [], "Items": [
                {"Key": "Expert", "Title": "", "Logic": 0, "Field": "EXPERT", "Operator": 0,
                 "Value": expression, "Value2": "", "options": {}}]},
            {"Key": "ControlGroup", "Title": "", "Logic": 0, "Items": [], "ChildItems": control},
        ]},
    })  # fmt: skip


def _ids(expression: str, **kw: str) -> list[str]:
    return sorted(r.id for r in search(CORPUS, parse_query_json(_expert_json(expression, **kw))))


def test_in_field_operators_combine_left_to_right_as_in_the_help_example() -> None:
    # ((经济发展 OR 可持续发展) AND 转变) AND NOT 泡沫
    assert _ids("SU=('经济发展' + '可持续发展') * '转变' - '泡沫'") == ["r01", "r03"]


def test_clauses_join_with_and_or_not_in_any_case_and_parentheses_group_them() -> None:
    assert _ids("TI='可持续发展' and (AU % '陈' + '王')") == ["r02", "r03"]
    assert _ids("LY='管理世界' NOT AU='陈明'") == ["r03"]
    assert _ids("KY='生态文明' OR KY='泡沫'") == ["r02", "r04"]


def test_logical_operators_have_equal_precedence_left_to_right() -> None:
    # (KY=生态文明 OR KY=泡沫) AND YE>=2022, not KY=生态文明 OR (KY=泡沫 AND YE>=2022)
    assert _ids("KY='生态文明' OR KY='泡沫' AND YE >= 2022") == ["r04"]


def test_unquoted_values_in_parentheses_are_terms() -> None:
    assert _ids("SU=(转变) AND (LY=(管理世界) OR LY=(中国软科学))") == ["r01", "r03"]


def test_year_and_citation_comparisons_and_the_date_boxes() -> None:
    assert _ids("SU %= '发展' AND YE >= '2021' AND YE <= '2022'") == ["r02"]
    assert _ids("CF >= 3 AND SU %= '发展'") == ["r01", "r03"]
    assert _ids("SU %= '发展'", d0="2023-01-01", d1="2023-12-31") == ["r03"]


def test_field_codes_operators_and_aliases_parse() -> None:
    tree = parse_expert("JN='管理世界' AND CO='引言' AND CLC % 'F12'")
    assert isinstance(tree, Join)
    assert [c.code for c in tree.items] == ["JN", "CO", "CLC"]  # type: ignore[union-attr]
    assert [c.match for c in tree.items] == [Match.EXACT, Match.EXACT, Match.FUZZY]  # type: ignore[union-attr]
    assert _ids("JN='管理世界'") == ["r01", "r03"]


@pytest.mark.parametrize(
    "expression",
    [
        "SU='经济",  # unclosed quote
        "XX='经济'",  # unknown field code
        "SU '经济'",  # no match operator
        "SU='经济' AND",  # missing clause
        "(SU='经济'",  # unbalanced parenthesis
        "SU='经济' TI='发展'",  # two clauses without a logical operator
        "TI > 3",  # comparison on a text field
        "YE >= 'abc'",  # year not a number
        "",
    ],
)
def test_malformed_expressions_are_syntax_errors_and_the_grid_refuses_them(expression: str) -> None:
    if expression:
        with pytest.raises(ExpertError) as info:
            parse_expert(expression)
        assert info.value.kind == ExpertErrorKind.SYNTAX
        with pytest.raises(QueryError) as qinfo:
            parse_query_json(_expert_json(expression))
        assert not isinstance(qinfo.value, QueryRefused)
    else:
        with pytest.raises(QueryError):  # an empty expression is no condition at all
            parse_query_json(_expert_json(expression))


def test_year_between_is_refused_like_an_empty_result() -> None:
    with pytest.raises(QueryRefused):
        parse_query_json(_expert_json("SU %= '发展' AND YE BETWEEN ('2020', '2024')"))


def test_expert_and_advanced_form_agree_on_the_same_conditions() -> None:
    adv = json.dumps({"QNode": {"QGroup": [{"Key": "Subject", "Logic": 0, "Items": [], "ChildItems": [
        {"Key": "a", "Logic": 0, "Items": [{"Field": "SU", "Operator": "TOPRANK", "Value": "发展 + 生态文明"}]},
        {"Key": "b", "Logic": 0, "Items": [{"Field": "LY", "Operator": "DEFAULT", "Value": "管理世界"}]},
    ]}]}})  # fmt: skip
    want = sorted(r.id for r in search(CORPUS, parse_query_json(adv)))
    assert want == ["r01", "r03"]
    assert _ids("SU %= ('发展' + '生态文明') AND LY = '管理世界'") == want
