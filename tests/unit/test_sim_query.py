"""Query semantics of the simulator: truth tables over Logic codes, fields, operators, quoting."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from cnki_mcp.sim.corpus import Corpus, SimAuthor, SimJournal, SimRecord, SimSection
from cnki_mcp.sim.query import (
    Logic,
    QueryError,
    Sort,
    parse_query_json,
    parse_value,
    positive_terms,
    search,
)


def _rec(i: int, **kw: Any) -> SimRecord:
    base: dict[str, Any] = {"id": f"r{i:02d}", "title": f"记录{i}", "type": "期刊"}
    base.update(kw)
    return SimRecord(**base)


CORPUS = Corpus(
    records=[
        _rec(
            1,
            title="自动驾驶产品责任研究",
            keywords=("自动驾驶", "产品责任"),
            abstract="讨论算法责任与风险分配。",
            authors=(SimAuthor("王利明", "中国人民大学法学院"), SimAuthor("李四", "清华大学")),
            source="法学研究",
            year=2021,
            date="2021-03-01",
            cited=50,
            downloads=12000,
            classification="D923.8",
            doi="10.1000/ABC.1",
            funds=("国家社会科学基金(20BFX001)",),
            fulltext=(SimSection("一、问题的提出", 1, "自动驾驶汽车的侵权责任"),),
            references=("r03",),
        ),
        _rec(
            2,
            title="C++ 程序设计教学改革",
            keywords=("C++", "教学改革"),
            abstract="面向 C++ 课程的教学研究。",
            authors=(SimAuthor("张三", "北京大学"),),
            source="计算机教育",
            year=2019,
            date="2019-06-01",
            cited=5,
            downloads=300,
            classification="TP312",
        ),
        _rec(
            3,
            title="carbon-neutral pathways for cities",
            title_en="carbon-neutral pathways for cities",
            keywords=("carbon-neutral", "城市"),
            abstract="Carbon neutral transition in Chinese cities.",
            authors=(SimAuthor("Li Wei", "Tsinghua University"),),
            source="环境科学",
            year=2023,
            date="2023-01-15",
            cited=12,
            downloads=800,
            classification="X321",
        ),
        _rec(
            4,
            title="碳中和背景下的产品责任",
            keywords=("碳中和", "产品责任"),
            abstract="碳达峰与碳中和目标下的企业责任。",
            authors=(SimAuthor("李四", "清华大学"), SimAuthor("王利明")),
            source="旧刊名学报",
            year=2022,
            date="2022-09-10",
            cited=50,
            downloads=50,
            classification="D922",
            extra={"corresponding_author": "王利明"},
        ),
        _rec(5, title="无关的文献", keywords=("其他",), year=2015, cited=0, downloads=1),
    ],
    journals=[SimJournal(name="旧刊名学报", former_titles=("老学报",))],
)
ALL = {r.id for r in CORPUS.records}


def item(field: str, value: str, op: str = "FUZZY", logic: int = 0) -> dict[str, Any]:
    return {
        "Key": "k",
        "Title": "",
        "Logic": logic,
        "Field": field,
        "Operator": op,
        "Value": value,
        "Value2": "",
    }


def group(
    items: list[dict[str, Any]], children: list[dict[str, Any]] | None = None, logic: int = 0
) -> dict[str, Any]:
    return {"Key": "g", "Title": "", "Logic": logic, "Items": items, "ChildItems": children or []}


def qj(subject: dict[str, Any], control: list[dict[str, Any]] | None = None) -> str:
    subject = dict(subject, Key="Subject")
    ctrl = {"Key": "ControlGroup", "Title": "", "Logic": 0, "Items": [], "ChildItems": control or []}
    return json.dumps({"QNode": {"QGroup": [subject, ctrl]}}, ensure_ascii=False)


def ids(query_json: str, sort: Sort = Sort.FFD) -> set[str]:
    return {r.id for r in search(CORPUS, parse_query_json(query_json), sort)}


def single(field: str, value: str, op: str = "FUZZY") -> set[str]:
    return ids(qj(group([item(field, value, op)])))


# Three base conditions with different, overlapping hit sets.
A = ("KY", "产品责任")  # r01 r04
B = ("AU", "李四")  # r01 r04 (李四)
C = ("TI", "研究")  # r01
D = ("SU", "碳中和")  # r04


def _combine(sets: list[set[str]], logics: list[int]) -> set[str]:
    acc = sets[0]
    for s, lg in zip(sets[1:], logics[1:], strict=True):
        acc = acc & s if lg == 0 else acc | s if lg == 1 else acc - s
    return acc


@pytest.mark.parametrize("logics", list(itertools.product((0, 1, 2), repeat=2)))
def test_items_combine_left_to_right_like_set_algebra(logics: tuple[int, int]) -> None:
    conds = [A, C, D]
    full = [0, *logics]
    got = ids(qj(group([item(f, v, logic=lg) for (f, v), lg in zip(conds, full, strict=True)])))
    expected = _combine([single(f, v) for f, v in conds], full)
    assert got == expected


@pytest.mark.parametrize("first_logic", [0, 1, 2])
def test_first_elements_logic_is_ignored(first_logic: int) -> None:
    assert ids(qj(group([item(*A, logic=first_logic)]))) == single(*A)


@pytest.mark.parametrize("outer,inner", list(itertools.product((0, 1, 2), repeat=2)))
def test_nested_groups_evaluate_as_units(outer: int, inner: int) -> None:
    # D <outer> (A <inner> C): the child group is evaluated first, then joined to the items.
    child = group([item(*A), item(*C, logic=inner)], logic=outer)
    got = ids(qj(group([item(*D)], [child])))
    inner_set = _combine([single(*A), single(*C)], [0, inner])
    assert got == _combine([single(*D), inner_set], [0, outer])


def test_items_come_before_child_groups_regardless_of_json_order() -> None:
    # Elements are [Items..., ChildItems...]: here [D, (B) with Logic 2] -> D AND NOT B.
    got = ids(qj(group([item(*D)], [group([item(*B)], logic=2)])))
    assert got == single(*D) - single(*B)


def test_dnf_branches_like_the_production_compiler_sends() -> None:
    # (A AND NOT C) OR (D): branch groups, second with Logic 1.
    b1 = group([item(*A), item(*C, logic=2)], logic=0)
    b2 = group([item(*D)], logic=1)
    got = ids(qj(group([], [b1, b2])))
    assert got == (single(*A) - single(*C)) | single(*D)


def test_logic_names_are_accepted_as_well_as_codes() -> None:
    with_names = ids(qj(group([item(*A), item(*C, logic="NOT")])))  # type: ignore[arg-type]
    assert with_names == single(*A) - single(*C)
    assert Logic(2) is Logic.NOT


@pytest.mark.parametrize(
    "field,value,op,expected",
    [
        ("SU", "自动驾驶", "TOPRANK", {"r01"}),
        ("SU", "D923", "TOPRANK", {"r01"}),  # subject covers classification
        ("TKA", "风险分配", "FUZZY", {"r01"}),
        ("TI", "产品责任", "FUZZY", {"r01", "r04"}),
        ("KY", "产品", "FUZZY", {"r01", "r04"}),
        ("KY", "产品", "DEFAULT", set()),  # exact keyword equality
        ("KY", "产品责任", "DEFAULT", {"r01", "r04"}),
        ("AB", "风险分配", "DEFAULT", {"r01"}),
        ("AU", "王利明", "DEFAULT", {"r01", "r04"}),
        ("AU", "王利", "DEFAULT", set()),
        ("FI", "王利明", "DEFAULT", {"r01"}),
        ("RP", "王利明", "DEFAULT", {"r01", "r04"}),  # r04 names its corresponding author
        ("AF", "清华大学", "FUZZY", {"r01", "r04"}),
        ("LY", "法学研究", "DEFAULT", {"r01"}),
        ("LY", "老学报", "DEFAULT", {"r04"}),  # a journal's former title
        ("DOI", "10.1000/abc.1", "DEFAULT", {"r01"}),
        ("FU", "社会科学基金", "FUZZY", {"r01"}),
        ("FT", "侵权责任", "FUZZY", {"r01"}),
        ("RF", "carbon", "FUZZY", {"r01"}),  # r01 references r03
        ("CLC", "D92", "DEFAULT", {"r01", "r04"}),
        ("CLC", "923", "FUZZY", set()),  # prefix only
        ("ST", "问题的提出", "FUZZY", {"r01"}),
    ],
)
def test_each_field_searches_its_own_text(field: str, value: str, op: str, expected: set[str]) -> None:
    assert single(field, value, op) == expected


def test_fuzzy_needs_every_term_but_exact_needs_the_phrase() -> None:
    assert single("TI", "pathways carbon", "FUZZY") == {"r03"}
    assert single("TI", "pathways carbon", "DEFAULT") == set()
    assert single("TI", "CARBON-NEUTRAL PATHWAYS", "DEFAULT") == set()  # unquoted: '-' is NOT
    assert single("TI", '"CARBON-NEUTRAL PATHWAYS"', "DEFAULT") == {"r03"}


def test_unquoted_cnki_operators_change_the_result() -> None:
    assert single("KY", '"C++"', "DEFAULT") == {"r02"}
    # Unquoted C++ holds unspaced operator characters: ambiguous, matches nothing.
    assert single("KY", "C++", "DEFAULT") == set()
    quoted = single("KY", "'carbon-neutral'", "DEFAULT")
    unquoted = single("KY", "carbon-neutral", "FUZZY")  # ambiguous: never kinder than carbon AND NOT neutral
    assert quoted == {"r03"}
    assert unquoted == set()


def test_in_value_and_or_not_with_parentheses() -> None:
    assert single("SU", "自动驾驶 + 碳中和", "TOPRANK") == {"r01", "r04"}
    assert single("SU", "产品责任 * 碳中和", "TOPRANK") == {"r04"}
    assert single("SU", "产品责任 - 碳中和", "TOPRANK") == {"r01"}
    assert single("SU", "(自动驾驶 + 碳中和) * 风险", "TOPRANK") == {"r01"}
    assert single("SU", '("自动驾驶" + "碳中和") * ("产品责任")', "TOPRANK") == {"r01", "r04"}


def test_value_parser_precedence_and_polarity() -> None:
    expr = parse_value("a + b * c - d")
    assert positive_terms(expr) == ["a", "b", "c"]


def test_help_examples_of_in_field_operators() -> None:
    # CNKI's advanced-search help: "神经网络 * 自然语言", "(锻造 + 自由锻) * 裂纹",
    # "'digital library' * 'information service'", "'2+3' * 人才培养" (docs/simulator.md).
    assert single("TI", "自动驾驶 * 产品责任", "FUZZY") == {"r01"}
    assert single("SU", "(自动驾驶 + 碳中和) * 风险", "TOPRANK") == {"r01"}
    assert single("TI", "'carbon-neutral' * 'pathways for'", "FUZZY") == {"r03"}
    assert single("KY", "'C++' * 教学改革", "DEFAULT") == {"r02"}


@pytest.mark.parametrize(
    "value",
    [
        "自动驾驶+碳中和",  # operators need a space on both sides
        "自动驾驶 +碳中和",
        "自动驾驶+ 碳中和",
        '"自动驾驶"+"碳中和"',
    ],
)
def test_unspaced_operator_is_not_an_operator_and_the_word_is_ambiguous(value: str) -> None:
    assert single("SU", value, "TOPRANK") == set()
    assert single("SU", "自动驾驶 + 碳中和", "TOPRANK") == {"r01", "r04"}


@pytest.mark.parametrize(
    "value",
    [
        "自动驾驶 + 碳中和 * 产品责任",  # mixed operators: precedence must be given by parentheses
        "产品责任 - 碳中和 * 风险",
        "carbon neutral + 产品责任",  # unquoted term with a space in a combination
        "10.1000/abc.1 + 产品责任",  # unquoted '/' in a combination
        '"自动驾驶 + 碳中和',  # unbalanced quote
        "(自动驾驶 + 碳中和",  # unbalanced parenthesis
        "自动驾驶 + 碳中和)",
        '"自动驾驶" "碳中和"',  # two operands, no operator
        "自动驾驶 + ",  # missing operand
        "+ 自动驾驶",
        "自动驾驶 + + 碳中和",
    ],
)
def test_ambiguous_values_match_nothing(value: str) -> None:
    assert single("SU", value, "TOPRANK") == set()


def test_parentheses_fix_precedence_and_need_no_spaces() -> None:
    assert single("SU", "(自动驾驶 + 碳中和) * 产品责任", "TOPRANK") == {"r01", "r04"}
    assert single("SU", "自动驾驶 + (碳中和 * 产品责任)", "TOPRANK") == {"r01", "r04"}
    assert single("SU", "(产品责任 - 碳中和) * 风险", "TOPRANK") == {"r01"}
    assert single("SU", "产品责任 - (碳中和 * 风险)", "TOPRANK") == {"r01", "r04"}


def test_single_unquoted_term_keeps_spaces_and_slashes() -> None:
    assert single("TI", "pathways carbon", "FUZZY") == {"r03"}
    assert single("DOI", "10.1000/abc.1", "DEFAULT") == {"r01"}


def test_quoted_terms_inside_a_combination_are_literal() -> None:
    assert single("KY", '"C++" + "carbon-neutral"', "DEFAULT") == {"r02", "r03"}
    assert single("TI", "'pathways for' + \"C++\"", "FUZZY") == {"r02", "r03"}
    assert single("KY", '"C++" + 城市', "DEFAULT") == {"r02", "r03"}


def test_year_range_from_control_group() -> None:
    years = {
        "Key": ".tit-date-box",
        "Title": "发表时间",
        "Logic": 0,
        "Items": [
            {
                "Key": ".tit-date-box",
                "Title": "发表时间",
                "Logic": 0,
                "Field": "PT",
                "Operator": 7,
                "Value": "2020-01-01",
                "Value2": "2022-12-31",
                "options": {},
            }
        ],
        "ChildItems": [],
    }
    # r02 (C++, 2019) matches the value and is removed by the year range alone.
    q = qj(group([item("SU", '产品责任 + "C++" + carbon', "TOPRANK")]), [years])
    assert ids(q) == {"r01", "r04"}
    parsed = parse_query_json(q)
    assert (parsed.year_from, parsed.year_to) == (2020, 2022)
    only_from = json.loads(q)
    only_from["QNode"]["QGroup"][1]["ChildItems"][0]["Items"][0]["Value2"] = ""
    assert ids(json.dumps(only_from)) == {"r01", "r03", "r04"}


@pytest.mark.parametrize("date", ["2021", "2021-06", "2021-06-15"])
def test_a_record_dated_by_its_year_or_month_is_inside_a_range_starting_that_year(date: str) -> None:
    # before: `2021` < `2021-01-01` as text, so a thesis listed by its year fell out of 2021–2021
    record = _rec(99, title="产品责任研究", date=date, year=2021)
    corpus = Corpus(records=[record], journals=[])
    years = {"Key": ".tit-date-box", "Title": "发表时间", "Logic": 0, "Items": [
        {"Key": ".tit-date-box", "Title": "发表时间", "Logic": 0, "Field": "PT", "Operator": 7,
         "Value": "2021-01-01", "Value2": "2021-12-31", "options": {}}], "ChildItems": []}  # fmt: skip
    q = parse_query_json(qj(group([item("TI", "产品责任", "FUZZY")]), [years]))
    assert [r.id for r in search(corpus, q)] == [record.id]


def test_sorts_order_by_relevance_date_cited_downloads_with_id_ties() -> None:
    q = parse_query_json(qj(group([item("SU", '产品责任 + 碳中和 + "C++"', "TOPRANK")])))
    order = lambda s: [r.id for r in search(CORPUS, q, s)]  # noqa: E731
    assert order(Sort.PT) == ["r04", "r01", "r02"]
    assert order(Sort.CF) == ["r01", "r04", "r02"]  # tie 50/50 broken by id
    assert order(Sort.DFR) == ["r01", "r02", "r04"]
    assert order(Sort.FFD)[0] in {"r01", "r04"}  # title+keyword hits beat abstract-only
    # Relevance by hand: r04 title 碳中和+产品责任 6+6, keywords 3+3, abstract 碳中和 1 = 19;
    # r02 C++ in title 6, keywords 3, abstract 1 = 10; r01 产品责任 in title 6, keywords 3 = 9.
    assert order(Sort.FFD) == ["r04", "r02", "r01"]


@pytest.mark.parametrize(
    "bad",
    [
        "not json",
        "[]",
        json.dumps({"QNode": {}}),
        json.dumps({"QNode": {"QGroup": [group([item("XX", "a")])]}}),
        json.dumps({"QNode": {"QGroup": [group([item("TI", "a", op="LIKE")])]}}),
        json.dumps({"QNode": {"QGroup": [group([item("TI", "")])]}}),  # no condition at all
        json.dumps({"QNode": {"QGroup": [group([item("TI", "a" * 121)])]}}),
    ],
)
def test_malformed_query_json_is_rejected(bad: str) -> None:
    with pytest.raises(QueryError):
        parse_query_json(bad)


def test_blank_rows_do_not_constrain() -> None:
    assert ids(qj(group([item("AU", ""), item(*A, logic=2), item("LY", "", logic=1)]))) == single(*A)


def test_fingerprint_ignores_everything_but_the_conditions() -> None:
    a = parse_query_json(qj(group([item(*A)])))
    b = parse_query_json(json.dumps({"Resource": "CROSSDB", **json.loads(qj(group([item(*A)])))}))
    c = parse_query_json(qj(group([item(*C)])))
    assert a.fingerprint() == b.fingerprint() != c.fingerprint()
    assert ids(qj(group([item(*A)]))) <= ALL


def test_a_repeated_query_is_answered_without_evaluating_the_records_again(monkeypatch: pytest.MonkeyPatch) -> None:
    import cnki_mcp.sim.query as simq

    corpus = Corpus(records=list(CORPUS.records), journals=list(CORPUS.journals))
    expected = single(*A)  # on the module's corpus, before counting: cached there or not, by test order
    seen: list[str] = []
    real = simq.matches

    def counting(q: Any, r: SimRecord, c: Corpus | None = None) -> bool:
        seen.append(r.id)
        return real(q, r, c)

    monkeypatch.setattr(simq, "matches", counting)
    first = search(corpus, parse_query_json(qj(group([item(*A)]))), Sort.FFD)
    assert len(seen) == len(corpus.records) and first
    first.clear()  # a caller's copy: the kept answer is not touched
    again = search(corpus, parse_query_json(qj(group([item(*A)]))), Sort.FFD)
    assert len(seen) == len(corpus.records)
    assert {r.id for r in again} == expected
    search(corpus, parse_query_json(qj(group([item(*A)]))), Sort.PT)  # another order: evaluated once more
    assert len(seen) == 2 * len(corpus.records)
    search(Corpus(records=list(CORPUS.records), journals=[]), parse_query_json(qj(group([item(*A)]))), Sort.FFD)
    assert len(seen) == 3 * len(corpus.records)  # another corpus keeps its own answers


def test_a_record_swapped_at_runtime_is_seen_by_a_repeated_query() -> None:
    """Adding and removing records (SimServer.add_record, tests of saved searches) drops the
    evaluator's kept answers, even when the corpus ends up the same size."""
    corpus = Corpus(records=list(CORPUS.records), journals=list(CORPUS.journals))
    query = parse_query_json(qj(group([item("TI", "运行时新增")])))
    assert search(corpus, query, Sort.FFD) == []
    corpus.add_record({"id": "rt1", "title": "运行时新增记录甲", "type": "期刊"})
    assert [r.id for r in search(corpus, query, Sort.FFD)] == ["rt1"]
    corpus.remove_record("rt1")
    corpus.add_record({"id": "rt2", "title": "运行时新增记录乙", "type": "期刊"})
    assert [r.id for r in search(corpus, query, Sort.FFD)] == ["rt2"]
