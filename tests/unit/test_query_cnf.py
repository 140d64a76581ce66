"""Concept plans (CNF) compile natively: one row per concept with CNKI's in-field `+`, rows within
120 characters, oversized rows split; checked against the simulator's evaluator over a corpus.

The reference is set algebra: each leaf's record set is what the simulator returns for that leaf
alone, sent wholly quoted; the plan's expected set is the AND over groups of the OR of its terms.
The compiled side is the union, over every query the plan compiled to, of the records the
simulator matches for the QueryJson as sent."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from cnki_mcp.errors import CnkiError
from cnki_mcp.query.cnf import MAX_QUERIES, chunks, row_value
from cnki_mcp.query.compiler import CompiledQuery, compile_expression, concept_expression
from cnki_mcp.query.expr import Field, parse_expression
from cnki_mcp.sim.corpus import Corpus, SimRecord
from cnki_mcp.sim.query import BoolOp, Logic, Term, Unclear, matches, parse_query_json, parse_value

CODE = {Field.TITLE: "TI", Field.SUBJECT: "SU", Field.KEYWORDS: "KY"}


def _corpus(groups: list[list[str]], seed: int, size: int = 160) -> Corpus:
    """Records holding, for most groups, one or two of its terms (so the plan is hit and missed)."""
    rng = random.Random(seed)
    records = []
    for i in range(size):
        picked: list[str] = []
        for g in groups:
            if rng.random() < 0.92:
                picked.extend(rng.sample(g, min(len(g), rng.randint(1, 2))))
        records.append(
            SimRecord(id=f"c{i:03d}", title=" ｜ ".join(picked) or "空", type="期刊", keywords=tuple(picked))
        )
    return Corpus(records=records, journals=[])


def _leaf_set(corpus: Corpus, field: Field, term: str) -> frozenset[str]:
    op = "TOPRANK" if field == Field.SUBJECT else "FUZZY"
    quoted = f"'{term}'" if '"' in term else f'"{term}"'
    q = parse_query_json(
        {
            "QNode": {
                "QGroup": [
                    {
                        "Key": "Subject",
                        "Logic": 0,
                        "Items": [{"Field": CODE[field], "Operator": op, "Value": quoted, "Logic": 0}],
                        "ChildItems": [],
                    }
                ]
            }
        }
    )
    return frozenset(r.id for r in corpus.records if matches(q, r, corpus))


def _compiled_set(corpus: Corpus, compiled: CompiledQuery) -> frozenset[str]:
    out: set[str] = set()
    for subject in compiled.subjects:
        q = parse_query_json({"QNode": {"QGroup": [subject]}})
        out.update(r.id for r in corpus.records if matches(q, r, corpus))
    return frozenset(out)


def _items(node: dict[str, Any]) -> list[dict[str, Any]]:
    out = list(node.get("Items", []))
    for child in node.get("ChildItems", []):
        out.extend(_items(child))
    return out


def _or_terms(value: str) -> list[str]:
    def walk(e: Any) -> list[str]:
        if isinstance(e, Term):
            return [e.text]
        assert not isinstance(e, Unclear), f"CNKI would find {value!r} ambiguous"
        assert isinstance(e, BoolOp) and e.op == Logic.OR, value
        return walk(e.left) + walk(e.right)

    return walk(parse_value(value))


def check_plan(groups: list[list[str]], field: Field, seed: int = 7) -> CompiledQuery:
    compiled = compile_expression(concept_expression(groups, field))
    values = [item["Value"] for s in compiled.subjects for item in _items(s)]
    assert all(len(v) <= 120 for v in values), max(values, key=len)
    sent_terms = {t for v in values for t in _or_terms(v)}
    assert sent_terms == {t for g in groups for t in g}  # every term sent, each read as one literal
    corpus = _corpus(groups, seed)
    sets = {t: _leaf_set(corpus, field, t) for g in groups for t in g}
    expected = frozenset(r.id for r in corpus.records)
    for g in groups:
        expected &= frozenset().union(*(sets[t] for t in g))
    assert expected and expected != frozenset(r.id for r in corpus.records), "the plan must hit and miss"
    assert _compiled_set(corpus, compiled) == expected
    return compiled


PLAN_3X5 = [
    ["自动驾驶", "无人驾驶", "智能驾驶", "自主驾驶", "智能网联汽车"],
    ["产品责任", "侵权责任", "生产者责任", "严格责任", "责任分配"],
    ["算法", "人工智能", "机器学习", "深度学习", "决策系统"],
]


def test_three_concepts_of_five_synonyms_compile_to_three_rows_in_one_query() -> None:
    compiled = check_plan(PLAN_3X5, Field.SUBJECT)
    assert (compiled.queries, compiled.branches, compiled.split) == (1, 1, "none")
    (branch,) = compiled.subject["ChildItems"]
    assert [(i["Field"], i["Logic"], i["Value"]) for i in branch["Items"]] == [
        ("SU", 0, " + ".join(g)) for g in PLAN_3X5
    ]


@pytest.mark.parametrize("field", [Field.SUBJECT, Field.TITLE, Field.KEYWORDS])
def test_three_by_five_plan_compiles_on_every_research_field(field: Field) -> None:
    assert check_plan(PLAN_3X5, field).queries == 1


def test_terms_with_cnki_operator_characters_are_quoted_and_keep_the_plan() -> None:
    groups = [
        ["C++", "a * b", "x-y", "(括号)", "two words"],
        ['say "hi"', "it's", "1/2", "100%", "a=b"],
        ["+plus", "minus-", "*star*", "纯中文", "tab\tterm"],
    ]
    compiled = check_plan(groups, Field.TITLE, seed=11)
    (branch,) = compiled.subject["ChildItems"]
    assert branch["Items"][0]["Value"] == '"C++" + "a * b" + "x-y" + "(括号)" + "two words"'
    assert branch["Items"][1]["Value"] == '\'say "hi"\' + "it\'s" + "1/2" + "100%" + "a=b"'


def test_eight_groups_of_six_eighty_character_terms_run_as_one_query() -> None:
    groups = [[f"{g}{i}" + "术" * 78 for i in range(6)] for g in range(8)]
    compiled = check_plan(groups, Field.TITLE, seed=3)
    assert compiled.queries == 1 and compiled.split == "nested"


def test_eighty_character_terms_with_spaces_need_quotes_and_still_fit() -> None:
    groups = [[f"term {g} {i} " + "w" * 71 for i in range(6)] for g in range(8)]
    assert all(len(t) == 80 for g in groups for t in g)
    compiled = check_plan(groups, Field.SUBJECT, seed=5)
    assert compiled.queries == 1


def test_one_oversized_group_becomes_branches_of_one_query() -> None:
    groups = [[f"长概念{i}" + "甲" * 30 for i in range(8)], ["乙"], ["丙", "丁"]]
    compiled = check_plan(groups, Field.TITLE)
    assert (compiled.queries, compiled.split) == (1, "expanded")
    assert compiled.branches == len(chunks(groups[0])) == 3


def test_many_oversized_groups_split_into_the_fewest_queries() -> None:
    groups = [[f"{g}概念{i}" + "词" * 28 for i in range(12)] for g in range(3)]
    per_group = len(chunks(groups[0]))
    assert per_group == 4
    compiled = check_plan(groups, Field.KEYWORDS)
    assert compiled.split == "queries"
    assert compiled.branches == per_group**3 == 64
    assert compiled.queries == 2 <= MAX_QUERIES  # 64 branches, 32 per query
    assert all(len(s["ChildItems"]) <= 32 for s in compiled.subjects)


def test_chunks_are_the_fewest_that_fit() -> None:
    values = ["a" * 50, "b" * 50, "c" * 10, "d" * 100, "e"]
    assert [len(row_value(c)) for c in chunks(values)] == [116, 104]
    assert chunks(["x y"]) == [("x y",)]
    assert row_value(["x y", "z"]) == '"x y" + z'


def test_negated_or_becomes_not_rows_that_each_fit() -> None:
    long = [f"排除{i}" + "某" * 40 for i in range(5)]
    tree = {
        "op": "and",
        "items": [
            {"field": "title", "value": "核心"},
            {"op": "not", "items": [{"op": "or", "items": [{"field": "title", "value": v} for v in long]}]},
        ],
    }
    compiled = compile_expression(tree)
    (branch,) = compiled.subject["ChildItems"]
    assert [(i["Logic"], i["Value"]) for i in branch["Items"]] == [(0, "核心"), *((2, v) for v in long)]


def test_structured_cnf_tree_beyond_thirty_two_dnf_branches_now_runs() -> None:
    pairs = [
        {"op": "or", "items": [{"field": "title", "value": f"p{i}"}, {"field": "title", "value": f"q{i}"}]}
        for i in range(6)
    ]  # 2**6 = 64 DNF branches
    compiled = compile_expression({"op": "and", "items": pairs})
    assert (compiled.branches, compiled.queries) == (1, 1)
    exact = [
        {
            "op": "or",
            "items": [
                {"field": "keywords", "value": f"p{i}", "match": "exact"},
                {"field": "keywords", "value": f"q{i}", "match": "exact"},
            ],
        }
        for i in range(6)
    ]
    folded = compile_expression({"op": "and", "items": exact})  # exact ORs fold only when needed
    assert folded.branches == 1
    assert [i["Value"] for i in folded.subject["ChildItems"][0]["Items"]][:2] == ["p0 + q0", "p1 + q1"]


def test_exact_ors_within_the_limit_keep_their_branch_shape() -> None:
    tree = {"op": "or", "items": [{"field": "title", "value": t, "match": "exact"} for t in ("甲", "乙")]}
    assert compile_expression(tree).branches == 2


def test_shape_that_truly_needs_dnf_is_still_too_complex_over_the_limit() -> None:
    pairs = [
        {"op": "or", "items": [{"field": "title", "value": f"p{i}"}, {"field": "authors", "value": f"q{i}"}]}
        for i in range(6)
    ]
    with pytest.raises(CnkiError) as info:
        compile_expression({"op": "and", "items": pairs})
    assert info.value.code == "QUERY_TOO_COMPLEX"


def test_fingerprint_of_a_plan_that_compiled_before_is_unchanged() -> None:
    small = concept_expression([["a"], ["b", "c"]], Field.TITLE)
    compiled = compile_expression(small)
    reordered = compile_expression(
        parse_expression(
            {
                "op": "or",
                "items": [
                    {
                        "op": "and",
                        "items": [{"field": "title", "value": "a"}, {"field": "title", "value": "c"}],
                    },
                    {
                        "op": "and",
                        "items": [{"field": "title", "value": "b"}, {"field": "title", "value": "a"}],
                    },
                ],
            }
        )
    )
    assert compiled.fingerprint == reordered.fingerprint
    big = compile_expression(concept_expression(PLAN_3X5, Field.TITLE))
    assert big.fingerprint != compiled.fingerprint


# ---------------------------------------------------------------- property: trees with long rows

LONG = [f"长检索词{i:02d}" + "项" * 34 for i in range(14)]  # 40 characters: two per row at most
SHORT = {"keywords": ["C++", "x-y", "two words", "纯词"], "authors": ["王利明", "Smith-Jones"]}
POOL: list[tuple[str, str]] = [("title", t) for t in LONG] + [(f, v) for f, vs in SHORT.items() for v in vs]


def _pool_corpus() -> Corpus:
    from cnki_mcp.sim.corpus import SimAuthor

    rng = random.Random(99)
    records = []
    for i in range(120):
        title = " ｜ ".join(rng.sample(LONG, rng.randint(1, 6)))
        keywords = tuple(rng.sample(SHORT["keywords"], rng.randint(0, 2)))
        authors = tuple(SimAuthor(n) for n in rng.sample(SHORT["authors"], 1))
        records.append(
            SimRecord(id=f"p{i:03d}", title=title, type="期刊", keywords=keywords, authors=authors)
        )
    return Corpus(records=records, journals=[])


POOL_CORPUS = _pool_corpus()
POOL_CODES = {"title": "TI", "keywords": "KY", "authors": "AU"}


def _pool_set(field: str, value: str) -> frozenset[str]:
    item = {"Field": POOL_CODES[field], "Operator": "FUZZY", "Value": f'"{value}"', "Logic": 0}
    q = parse_query_json({"QNode": {"QGroup": [{"Key": "Subject", "Items": [item], "ChildItems": []}]}})
    return frozenset(r.id for r in POOL_CORPUS.records if matches(q, r, POOL_CORPUS))


POOL_SETS = {key: _pool_set(*key) for key in POOL}


def _tree_set(tree: dict[str, Any]) -> frozenset[str]:
    everything = frozenset(r.id for r in POOL_CORPUS.records)
    if "op" not in tree:
        return POOL_SETS[(tree["field"], tree["value"])]
    parts = [_tree_set(i) for i in tree["items"]]
    if tree["op"] == "and":
        return frozenset.intersection(*parts)
    if tree["op"] == "or":
        return frozenset.union(*parts)
    return everything - parts[0]


def _pool_trees() -> Any:
    from hypothesis import strategies as st

    leaves = st.sampled_from(POOL).map(lambda k: {"field": k[0], "value": k[1]})
    wide_or = st.lists(st.sampled_from(LONG), min_size=3, max_size=8, unique=True).map(
        lambda vs: {"op": "or", "items": [{"field": "title", "value": v} for v in vs]}
    )

    def extend(children: Any) -> Any:
        return st.one_of(
            st.lists(children, min_size=2, max_size=4).map(lambda xs: {"op": "and", "items": xs}),
            st.lists(children, min_size=2, max_size=3).map(lambda xs: {"op": "or", "items": xs}),
            children.map(lambda x: {"op": "not", "items": [x]}),
        )

    wide_or8 = st.permutations(LONG).map(
        lambda vs: {"op": "or", "items": [{"field": "title", "value": v} for v in vs[:8]]}
    )
    cnf = st.lists(wide_or8, min_size=3, max_size=4).map(lambda xs: {"op": "and", "items": xs})
    return st.recursive(st.one_of(leaves, wide_or, cnf), extend, max_leaves=5)


STRATEGIES: dict[str, int] = {}


def test_trees_with_rows_over_120_characters_keep_their_meaning() -> None:
    from hypothesis import HealthCheck, given, settings

    @settings(max_examples=150, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
    @given(_pool_trees())
    def check(tree: dict[str, Any]) -> None:
        try:
            compiled = compile_expression(tree)
        except CnkiError as exc:
            assert exc.code in {"UNBOUNDED_QUERY", "INVALID_EXPRESSION", "QUERY_TOO_COMPLEX"}, exc.code
            STRATEGIES[exc.code] = STRATEGIES.get(exc.code, 0) + 1
            return
        STRATEGIES[compiled.split] = STRATEGIES.get(compiled.split, 0) + 1
        values = [item["Value"] for s in compiled.subjects for item in _items(s)]
        assert all(len(v) <= 120 for v in values)
        got: set[str] = set()
        for subject in compiled.subjects:
            q = parse_query_json({"QNode": {"QGroup": [subject]}})
            got.update(r.id for r in POOL_CORPUS.records if matches(q, r, POOL_CORPUS))
        assert got == _tree_set(tree), json.dumps(tree, ensure_ascii=False)

    check()
    assert {"none", "expanded", "queries", "nested"} <= set(STRATEGIES), STRATEGIES


def test_nested_layout_keeps_a_not_row_when_no_positive_row_fits() -> None:
    # Every positive row is oversized (nested chunk groups); the NOT row must not be the level's
    # first element, whose Logic CNKI ignores (found by the property test above).
    wide = [
        {"op": "or", "items": [{"field": "title", "value": v} for v in LONG[k : k + 8]]} for k in range(4)
    ]
    tree = {"op": "and", "items": [*wide, {"op": "not", "items": [{"field": "title", "value": LONG[3]}]}]}
    compiled = compile_expression(tree)
    assert compiled.split == "nested"
    got: set[str] = set()
    for subject in compiled.subjects:
        q = parse_query_json({"QNode": {"QGroup": [subject]}})
        got.update(r.id for r in POOL_CORPUS.records if matches(q, r, POOL_CORPUS))
    assert got == _tree_set(tree) and got

