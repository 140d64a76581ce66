"""The compiler: exact QueryJson shapes, NOT pushing, DNF bounds and rules, fingerprints, builders."""

from __future__ import annotations

from typing import Any

import pytest

from cnki_mcp.errors import CnkiError
from cnki_mcp.query.compiler import (
    Lit,
    compile_expression,
    concept_expression,
    feedback_expression,
    title_lookup_expression,
    to_dnf,
)
from cnki_mcp.query.expr import Field, Leaf, Match, Node, Op, parse_expression, quote_value, to_json


def L(value: str, field: str = "title", match: str = "phrase") -> dict[str, Any]:
    return {"field": field, "value": value, "match": match}


def AND(*items: Any) -> dict[str, Any]:
    return {"op": "and", "items": list(items)}


def OR(*items: Any) -> dict[str, Any]:
    return {"op": "or", "items": list(items)}


def NOT(item: Any) -> dict[str, Any]:
    return {"op": "not", "items": [item]}


def _code(obj: Any) -> str:
    with pytest.raises(CnkiError) as info:
        compile_expression(obj)
    return info.value.code


def _dnf(obj: Any) -> list[list[str]]:
    """Branches as readable literals: `TI:a`, `!KY=b` (= for exact)."""
    out = []
    for b in to_dnf(parse_expression(obj)):
        out.append(
            [
                f"{'!' if x.negated else ''}{x.field.code}{'=' if x.match == Match.EXACT else ':'}{x.value}"
                for x in b.literals
            ]
        )
    return out


def test_single_leaf_compiles_to_the_exact_subject_group() -> None:
    compiled = compile_expression(L("违约金"))
    assert compiled.subject == {
        "Key": "Subject",
        "Title": "",
        "Logic": 0,
        "Items": [],
        "ChildItems": [
            {
                "Key": "mcp",
                "Title": "",
                "Logic": 0,
                "Items": [
                    {
                        "Key": "mcp",
                        "Title": "title",
                        "Logic": 0,
                        "Field": "TI",
                        "Operator": "FUZZY",
                        "Value": "违约金",
                        "Value2": "",
                        "options": {},
                    }
                ],
                "ChildItems": [],
            }
        ],
    }
    assert compiled.anchor == "违约金"
    assert compiled.branches == 1


def test_contract_example_puts_positive_items_first_and_not_as_logic_two() -> None:
    compiled = compile_expression(
        AND(L("违约金"), NOT(L("定金", "keywords", "exact")), L("王利明", "authors", "exact"))
    )
    (branch,) = compiled.subject["ChildItems"]
    assert [(i["Field"], i["Operator"], i["Logic"], i["Value"], i["Title"]) for i in branch["Items"]] == [
        ("TI", "FUZZY", 0, "违约金", "title"),
        ("AU", "DEFAULT", 0, "王利明", "authors"),
        ("KY", "DEFAULT", 2, "定金", "keywords"),
    ]


def test_or_becomes_one_group_per_branch_with_or_logic_after_the_first() -> None:
    compiled = compile_expression(OR(L("a"), L("b", "keywords"), AND(L("c", "subject"), L("d", "doi"))))
    groups = compiled.subject["ChildItems"]
    assert [g["Logic"] for g in groups] == [0, 1, 1]
    assert all(g["Key"] == "mcp" and g["Title"] == "" and g["ChildItems"] == [] for g in groups)
    assert [[(i["Field"], i["Operator"]) for i in g["Items"]] for g in groups] == [
        [("TI", "FUZZY")],
        [("KY", "FUZZY")],
        [("SU", "TOPRANK"), ("DOI", "FUZZY")],
    ]
    assert compiled.branches == 3


def test_values_are_quoted_in_items_but_anchor_is_raw() -> None:
    compiled = compile_expression(AND(L("C++"), L("x y", "keywords"), L('say "hi"', "abstract")))
    values = [i["Value"] for i in compiled.subject["ChildItems"][0]["Items"]]
    assert values == ['"C++"', '"x y"', "'say \"hi\"'"]
    assert compiled.anchor == "C++"


def test_subject_exact_is_rejected_naming_the_field_and_its_place() -> None:
    with pytest.raises(CnkiError) as info:
        compile_expression(AND(L("a"), L("b", "subject", "exact")))
    assert info.value.code == "INVALID_MATCH"
    assert info.value.details == {"path": "$.items[1]", "field": "subject"}


def test_not_is_pushed_to_leaves_with_de_morgan() -> None:
    assert _dnf(AND(L("a"), NOT(OR(L("b"), L("c"))))) == [["TI:a", "!TI:b", "!TI:c"]]
    assert _dnf(AND(L("a"), NOT(AND(L("b"), L("c"))))) == [["TI:a", "!TI:b"], ["TI:a", "!TI:c"]]
    assert _dnf(AND(L("a"), NOT(NOT(L("b"))))) == [["TI:a", "TI:b"]]
    assert _dnf(NOT(OR(NOT(L("a")), NOT(L("b"))))) == [["TI:a", "TI:b"]]


def test_and_distributes_over_or() -> None:
    assert _dnf(AND(OR(L("a"), L("b")), OR(L("c"), L("d")))) == [
        ["TI:a", "TI:c"],
        ["TI:a", "TI:d"],
        ["TI:b", "TI:c"],
        ["TI:b", "TI:d"],
    ]


def test_identical_leaves_in_a_branch_are_sent_once() -> None:
    assert _dnf(AND(L("a"), L("a"), NOT(L("b")), NOT(L("b")))) == [["TI:a", "!TI:b"]]


def test_branch_holding_a_leaf_and_its_negation_is_dropped() -> None:
    assert _dnf(OR(AND(L("a"), NOT(L("a"))), L("b"))) == [["TI:b"]]


def test_same_value_on_other_field_or_match_is_not_a_contradiction() -> None:
    assert _dnf(AND(L("a"), NOT(L("a", "keywords")), NOT(L("a", "title", "exact")))) == [
        ["TI:a", "!KY:a", "!TI=a"]
    ]


def test_absorbed_branches_are_removed() -> None:
    # (a or b) and (a or c) = a or (b and c)
    assert _dnf(AND(OR(L("a"), L("b")), OR(L("a"), L("c")))) == [["TI:a"], ["TI:b", "TI:c"]]


def test_expression_that_can_match_nothing_is_an_invalid_expression() -> None:
    with pytest.raises(CnkiError) as info:
        compile_expression(AND(L("a"), NOT(L("a"))))
    assert info.value.code == "INVALID_EXPRESSION"
    assert info.value.details["reason"] == "contradiction"


@pytest.mark.parametrize(
    "obj",
    [
        NOT(L("a")),
        OR(L("a"), NOT(L("b"))),
        AND(NOT(L("a")), NOT(L("b"))),
        NOT(AND(L("a"), L("b"))),
        OR(AND(L("a"), L("b")), NOT(L("c"))),
    ],
)
def test_branch_without_positive_leaf_is_unbounded(obj: Any) -> None:
    assert _code(obj) == "UNBOUNDED_QUERY"


def test_negation_inside_a_bounded_branch_is_accepted() -> None:
    assert _dnf(AND(L("a"), OR(L("b"), NOT(L("c"))))) == [["TI:a", "TI:b"], ["TI:a", "!TI:c"]]


def test_thirty_two_branches_are_accepted_sixty_four_are_too_complex() -> None:
    # Each pair ORs two fields, so no pair folds into one row: the DNF is what must be sent.
    pairs = [OR(L(f"p{i}"), L(f"q{i}", "keywords")) for i in range(6)]
    assert compile_expression(AND(*pairs[:5])).branches == 32
    with pytest.raises(CnkiError) as info:
        compile_expression(AND(*pairs))
    assert info.value.code == "QUERY_TOO_COMPLEX"
    assert info.value.details == {"branches": 64, "max_branches": 32}


WIDE_FIELDS = [f.value for f in Field if f != Field.SUBJECT][:12]


def test_wide_products_fail_fast_with_too_complex() -> None:
    wide = [OR(*[L(f"v{g}-{i}", WIDE_FIELDS[i]) for i in range(12)]) for g in range(7)]  # 12**7 branches
    assert _code(AND(*wide)) == "QUERY_TOO_COMPLEX"


def test_dnf_simplification_can_bring_a_large_product_under_the_bound() -> None:
    # (a1|..|a6) & (a1|..|a6) has 36 raw products but simplifies to the 6 single-literal branches
    six = OR(*[L(f"a{i}") for i in range(6)])
    assert len(to_dnf(parse_expression(AND(six, six)))) == 6
    # The compiler folds the same-field OR into one row: a single branch.
    assert compile_expression(AND(six, six)).branches == 1


def test_fingerprint_is_equal_for_reordered_equivalent_trees() -> None:
    one = compile_expression(AND(L("a"), NOT(L("b", "keywords")), OR(L("c"), L("d", "authors", "exact"))))
    two = compile_expression(AND(OR(L("d", "authors", "exact"), L("c")), NOT(L("b", "keywords")), L("a")))
    three = compile_expression(
        OR(
            AND(L("a"), L("c"), NOT(L("b", "keywords"))),
            AND(NOT(L("b", "keywords")), L("d", "authors", "exact"), L("a")),
        )
    )
    assert one.fingerprint == two.fingerprint == three.fingerprint


@pytest.mark.parametrize(
    "other",
    [
        AND(L("a"), L("c")),
        AND(L("a"), L("b", match="exact")),
        AND(L("a"), L("b", "keywords")),
        AND(L("a"), NOT(L("b"))),
        OR(L("a"), L("b")),
        AND(L("a"), L("B")),
    ],
)
def test_fingerprint_differs_for_different_queries(other: Any) -> None:
    assert compile_expression(AND(L("a"), L("b"))).fingerprint != compile_expression(other).fingerprint


def test_compile_accepts_trees_built_in_code() -> None:
    tree = Node(op=Op.AND, items=[Leaf(field=Field.TITLE, value="a"), Leaf(field=Field.DOI, value="10.1/x")])
    assert compile_expression(tree) == compile_expression(to_json(tree))


def test_lit_operator_follows_field_and_match() -> None:
    assert Lit(Field.SUBJECT, Match.PHRASE, "x").operator == "TOPRANK"
    assert Lit(Field.TITLE, Match.PHRASE, "x").operator == "FUZZY"
    assert Lit(Field.TITLE, Match.EXACT, "x").operator == "DEFAULT"


# ---------------------------------------------------------------- builders


def test_concept_expression_ands_groups_and_ors_synonyms() -> None:
    tree = concept_expression([["初中物理"], ["分层作业", "作业分层"]], Field.TITLE)
    assert to_json(tree) == AND(L("初中物理"), OR(L("分层作业"), L("作业分层")))


def test_concept_expression_single_group_is_its_or_and_single_term_its_leaf() -> None:
    assert to_json(concept_expression([["a", "b"]], Field.KEYWORDS)) == OR(
        L("a", "keywords"), L("b", "keywords")
    )
    assert to_json(concept_expression([["a"]], Field.SUBJECT)) == L("a", "subject")


def test_concept_expression_on_subject_compiles_to_toprank() -> None:
    compiled = compile_expression(concept_expression([["自动驾驶"], ["产品责任", "侵权责任"]], Field.SUBJECT))
    assert compiled.branches == 1  # one row per concept, synonyms joined by CNKI's in-field OR
    (branch,) = compiled.subject["ChildItems"]
    assert [(i["Operator"], i["Logic"], i["Value"]) for i in branch["Items"]] == [
        ("TOPRANK", 0, "自动驾驶"),
        ("TOPRANK", 0, "产品责任 + 侵权责任"),
    ]


def test_concept_expression_rejects_empty_groups() -> None:
    with pytest.raises(CnkiError) as info:
        concept_expression([["a"], []], Field.TITLE)
    assert info.value.code == "INVALID_PLAN"


def test_feedback_expression_adds_the_keyword_as_a_subject_phrase() -> None:
    tree = feedback_expression([["自动驾驶"], ["产品责任", "侵权责任"]], "算法")
    assert to_json(tree) == AND(
        L("自动驾驶", "subject"), OR(L("产品责任", "subject"), L("侵权责任", "subject")), L("算法", "subject")
    )
    assert to_json(feedback_expression([["a"]], "k")) == AND(L("a", "subject"), L("k", "subject"))


def test_title_lookup_is_an_or_of_exact_title_leaves() -> None:
    assert to_json(title_lookup_expression(["题名甲"])) == L("题名甲", "title", "exact")
    tree = title_lookup_expression(["甲", "乙", "甲"])
    assert to_json(tree) == OR(L("甲", "title", "exact"), L("乙", "title", "exact"))
    compiled = compile_expression(tree)
    assert [g["Items"][0]["Operator"] for g in compiled.subject["ChildItems"]] == ["DEFAULT", "DEFAULT"]


def test_a_title_over_cnkis_120_character_box_is_asked_for_by_its_head() -> None:
    latin = ("Effects of long-term nitrogen fertilization and straw return on soil organic carbon fractions, "
             "aggregate stability and microbial community composition in a wheat-maize rotation system")  # fmt: skip
    han = "基于多源异构数据融合的城市轨道交通客流短时预测研究" * 6
    for title in (latin, han):
        leaf = title_lookup_expression([title])
        assert isinstance(leaf, Leaf) and title.startswith(leaf.value) and len(quote_value(leaf.value)) <= 120
    assert to_json(title_lookup_expression([latin]))["value"].endswith(" and")  # cut between words
    assert to_json(title_lookup_expression([han]))["value"] == han[:118]


def test_title_lookup_takes_one_to_ten_titles() -> None:
    assert compile_expression(title_lookup_expression([f"题名{i}" for i in range(10)])).branches == 10
    for titles in ([], [f"题名{i}" for i in range(11)], ["  "]):
        with pytest.raises(CnkiError) as info:
            title_lookup_expression(titles)
        assert info.value.code == "INVALID_ARGUMENT"


def test_the_ten_title_limit_counts_the_distinct_phrases_sent() -> None:
    # two long titles sharing the head CNKI's 120-character box holds are one phrase: 11 titles that
    # send 10 phrases fit one request; 11 phrases do not
    head = "基于多源异构数据融合的城市轨道交通客流短时预测研究" * 6
    titles = [f"题名{i}" for i in range(9)] + [head + "：以北京为例", head + "：以上海为例"]
    assert compile_expression(title_lookup_expression(titles)).branches == 10
    with pytest.raises(CnkiError) as info:
        title_lookup_expression([*titles, "题名九"])
    assert info.value.code == "INVALID_ARGUMENT"
