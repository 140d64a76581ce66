"""The expression tree: fields and codes, parsing plain JSON, and every coded error with its path."""

from __future__ import annotations

from typing import Any

import pytest

from cnki_mcp.errors import CnkiError
from cnki_mcp.query.compiler import compile_expression
from cnki_mcp.query.expr import (
    FIELD_CODES,
    FIELD_LABELS,
    Field,
    Leaf,
    Match,
    Node,
    Op,
    expression_json_schema,
    leaves,
    parse_expression,
    quote_value,
    to_json,
)
from cnki_mcp.sim.corpus import Corpus
from cnki_mcp.sim.query import parse_query_json, search


def _leaf(value: str = "违约金", field: str = "title", **kw: Any) -> dict[str, Any]:
    return {"field": field, "value": value, **kw}


def _and(*items: Any) -> dict[str, Any]:
    return {"op": "and", "items": list(items)}


def _not(*items: Any) -> dict[str, Any]:
    return {"op": "not", "items": list(items)}


def _error(obj: Any) -> CnkiError:
    with pytest.raises(CnkiError) as info:
        parse_expression(obj)
    return info.value


def test_fields_have_the_sixteen_cnki_codes_and_labels() -> None:
    assert len(Field) == 16
    assert {f.value: f.code for f in Field} == {
        "subject": "SU",
        "title": "TI",
        "keywords": "KY",
        "abstract": "AB",
        "authors": "AU",
        "first_author": "FI",
        "corresponding_author": "RP",
        "institutions": "AF",
        "source": "LY",
        "doi": "DOI",
        "funds": "FU",
        "fulltext": "FT",
        "references": "RF",
        "classification": "CLC",
        "subtitle": "ST",
        "title_keywords_abstract": "TKA",
    }
    assert Field.SUBJECT.label == "主题" and Field.TITLE_KEYWORDS_ABSTRACT.label == "篇关摘"
    assert set(FIELD_CODES) == set(FIELD_LABELS) == set(Field)


def test_parse_builds_typed_tree_with_phrase_default_and_stripped_value() -> None:
    tree = parse_expression(_and(_leaf(" 违约金 "), _not(_leaf("定金", "keywords", match="exact"))))
    assert isinstance(tree, Node) and tree.op == Op.AND
    first, negated = tree.items
    assert first == Leaf(field=Field.TITLE, value="违约金", match=Match.PHRASE)
    assert isinstance(negated, Node) and negated.op == Op.NOT
    assert negated.items[0] == Leaf(field=Field.KEYWORDS, value="定金", match=Match.EXACT)


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ('"违约金"', "违约金"),
        ("'smart contract'", "smart contract"),
        ("“违约金”", "违约金"),
        ("‘违约金’", "违约金"),
        (' " 违约金 " ', "违约金"),
        ('"a" "b"', '"a" "b"'),  # quotes around parts, not the whole value: kept
        ("违约金：从“有没有”到“好不好”", "违约金：从“有没有”到“好不好”"),
    ],
)
def test_parse_drops_quotes_enclosing_the_whole_value(written: str, meant: str) -> None:
    assert parse_expression(_leaf(written)) == Leaf(field=Field.TITLE, value=meant, match=Match.PHRASE)


def test_compiled_quoted_value_finds_what_the_unquoted_value_finds_on_the_simulator() -> None:
    corpus = Corpus.load()

    def hits(value: str) -> list[str]:
        compiled = compile_expression(_leaf(value))
        return [r.id for r in search(corpus, parse_query_json({"QNode": {"QGroup": compiled.subjects}}))]

    assert hits("违约金")  # the bundled corpus has titles with it
    assert hits('"违约金"') == hits("“违约金”") == hits("违约金")


def test_parse_accepts_field_codes_and_case_insensitive_names() -> None:
    tree = parse_expression({"op": "OR", "items": [_leaf("a", "TI"), _leaf("b", "Authors", match="EXACT")]})
    assert [(x.field, x.match) for x in leaves(tree)] == [
        (Field.TITLE, Match.PHRASE),
        (Field.AUTHORS, Match.EXACT),
    ]


def test_parse_round_trips_through_json_and_accepts_built_trees() -> None:
    obj = _and(_leaf("a"), {"op": "or", "items": [_leaf("b", "doi"), _not(_leaf("c", "source"))]})
    tree = parse_expression(obj)
    assert parse_expression(to_json(tree)) == tree
    assert parse_expression(tree) == tree


@pytest.mark.parametrize(
    ("obj", "code", "path"),
    [
        ({"op": "and", "field": "title", "items": [_leaf(), _leaf()]}, "INVALID_EXPRESSION", "$"),
        (
            _and(_leaf(), {"op": "or", "value": "x", "items": [_leaf(), _leaf()]}),
            "INVALID_EXPRESSION",
            "$.items[1]",
        ),
        ({"op": "and", "items": [_leaf(), _leaf()], "extra": 1}, "INVALID_EXPRESSION", "$"),
        (_and(_leaf(), {**_leaf(), "weight": 2}), "INVALID_EXPRESSION", "$.items[1]"),
        (_and(_leaf(), "title=违约金"), "INVALID_EXPRESSION", "$.items[1]"),
        ({}, "INVALID_EXPRESSION", "$"),
        ({"op": "and", "items": "abc"}, "INVALID_EXPRESSION", "$"),
        (_and(_leaf(), _not()), "INVALID_NOT", "$.items[1]"),
        (_and(_leaf(), _not(_leaf(), _leaf("b"))), "INVALID_NOT", "$.items[1]"),
        ({"op": "or", "items": [_leaf()]}, "INVALID_OPERATOR", "$"),
        (
            _and(_leaf(), {"op": "and", "items": [_leaf(str(i)) for i in range(13)]}),
            "INVALID_OPERATOR",
            "$.items[1]",
        ),
        ({"op": "xor", "items": [_leaf(), _leaf()]}, "INVALID_OPERATOR", "$"),
        (_and(_leaf(), _leaf(field="journal")), "INVALID_CONDITION", "$.items[1]"),
        (_and(_leaf(), {"value": "x"}), "INVALID_CONDITION", "$.items[1]"),
        (_and(_leaf(), _leaf("   ")), "INVALID_CONDITION", "$.items[1]"),
        (_and(_leaf(), _leaf('""')), "INVALID_CONDITION", "$.items[1]"),
        (_and(_leaf(), _leaf(42)), "INVALID_CONDITION", "$.items[1]"),  # type: ignore[arg-type]
        (_and(_leaf(), _leaf("长" * 121)), "INVALID_CONDITION", "$.items[1]"),
        (_and(_leaf(), _leaf("a b" + "c" * 117)), "INVALID_CONDITION", "$.items[1]"),  # 122 once quoted
        (_and(_leaf(), _leaf(match="fuzzy")), "INVALID_MATCH", "$.items[1]"),
        (_and(_leaf(), _leaf(match=1)), "INVALID_MATCH", "$.items[1]"),
        (_not(_leaf(field="subject", match="exact")), "INVALID_MATCH", "$.items[0]"),
        (_and(_leaf(), _leaf('it\'s "x"')), "QUERY_UNSUPPORTED", "$.items[1]"),
    ],
)
def test_malformed_input_gets_its_code_and_path(obj: Any, code: str, path: str) -> None:
    err = _error(obj)
    assert err.code == code
    assert err.details["path"] == path


def test_unknown_field_names_the_fields_to_use() -> None:
    err = _error(_leaf(field="篇名"))
    assert err.code == "INVALID_CONDITION"
    assert err.details["allowed"] == [f.value for f in Field]


def test_exact_subject_is_invalid_match_naming_the_subject_field() -> None:
    err = _error(_leaf("x", "subject", match="exact"))
    assert err.code == "INVALID_MATCH"
    assert err.details == {"path": "$", "field": "subject"}


def test_value_of_120_characters_is_accepted_121_rejected() -> None:
    assert isinstance(parse_expression(_leaf("长" * 120)), Leaf)
    assert _error(_leaf("长" * 121)).code == "INVALID_CONDITION"


def _nested_not(depth: int) -> dict[str, Any]:
    obj: dict[str, Any] = _leaf()
    for _ in range(depth - 1):
        obj = _not(obj)
    return obj


def test_depth_eight_is_accepted_nine_is_too_complex_at_the_deepest_node() -> None:
    assert isinstance(parse_expression(_nested_not(8)), Node)
    err = _error(_nested_not(9))
    assert err.code == "QUERY_TOO_COMPLEX"
    assert err.details == {"path": "$" + ".items[0]" * 8, "limit": "depth", "max_depth": 8}


def _wide(leaf_count: int) -> dict[str, Any]:
    """An OR of ANDs with `leaf_count` leaves in total, 8 per AND."""
    groups = [
        _and(*[_leaf(f"w{g}-{i}") for i in range(min(8, leaf_count - 8 * g))])
        for g in range((leaf_count + 7) // 8)
    ]
    return {"op": "or", "items": groups}


def test_ninety_six_nodes_are_accepted_ninety_seven_are_too_complex() -> None:
    # 11 ANDs of 8 leaves + root = 100 nodes; build exactly 96: root + 11 groups + 84 leaves
    accepted = {
        "op": "or",
        "items": [_and(*[_leaf(f"v{g}-{i}") for i in range(8 if g < 10 else 4)]) for g in range(11)],
    }
    assert len(leaves(parse_expression(accepted))) == 84
    rejected = _wide(88)  # root + 11 groups + 88 leaves = 100 nodes
    err = _error(rejected)
    assert err.code == "QUERY_TOO_COMPLEX"
    assert err.details["limit"] == "nodes"
    assert err.details["path"].startswith("$.items[10]")


def test_json_schema_describes_leaf_and_node() -> None:
    schema = expression_json_schema()
    defs = schema["$defs"]
    assert set(defs["Leaf"]["required"]) == {"field", "value"}
    assert defs["Field"]["enum"] == [f.value for f in Field]
    assert defs["Match"]["enum"] == ["phrase", "exact"]
    assert all(p.get("description") for p in defs["Leaf"]["properties"].values())
    assert all(p.get("description") for p in defs["Node"]["properties"].values())


@pytest.mark.parametrize(
    ("raw", "sent"),
    [
        ("违约金", "违约金"),
        ("Wi-Fi", '"Wi-Fi"'),
        ("C++", '"C++"'),
        ("a*b", '"a*b"'),
        ("f(x)", '"f(x)"'),
        ("TCP/IP", '"TCP/IP"'),
        ("50%", '"50%"'),
        ("a=b", '"a=b"'),
        ("x y", '"x y"'),
        ("x\ty", '"x\ty"'),
        ("x\u3000y", '"x\u3000y"'),  # full-width space: whitespace too
        ("it's", '"it\'s"'),
        ('say "hi"', "'say \"hi\"'"),
        ("10.1000/ABC.1", '"10.1000/ABC.1"'),
        ("802.11be", "802.11be"),
    ],
)
def test_a_value_is_quoted_the_way_cnki_reads_it(raw: str, sent: str) -> None:
    assert quote_value(raw) == sent


def test_quote_value_with_both_quote_kinds_is_unsupported() -> None:
    with pytest.raises(CnkiError) as info:
        quote_value('it\'s "x"')
    assert info.value.code == "QUERY_UNSUPPORTED"


def test_a_source_in_title_marks_finds_what_the_bare_name_finds_on_the_simulator() -> None:
    corpus = Corpus.load()

    def hits(value: str) -> list[str]:
        compiled = compile_expression({"field": "source", "value": value})
        return [r.id for r in search(corpus, parse_query_json({"QNode": {"QGroup": compiled.subjects}}))]

    assert parse_expression({"field": "source", "value": "《法学研究》"}) == Leaf(
        field=Field.SOURCE, value="法学研究", match=Match.PHRASE
    )
    assert hits("法学研究")  # the bundled corpus has this journal
    assert hits("《法学研究》") == hits("法学研究")
    # a title may carry 《》 (《民法典》第585条…): only a source loses them
    assert parse_expression(_leaf("《民法典》")).value == "《民法典》"


@pytest.mark.parametrize(
    "category",
    # the lists' other names (rank.TIER_ALIASES) and the tags a journal page shows (rank.KNOWN_TIERS):
    # before, C刊 … AMI顶级 were sent as journal names and the search found nothing, without a word
    ["CSSCI", "北大核心", "核心期刊", "ei", "《SSCI》", "C刊", "南大核心期刊", "CSSCI期刊", "北大核心期刊",
     "CSCD核心库", "CSSCI来源集刊", "AMI顶级", "SCI期刊"],
)  # fmt: skip
def test_a_source_category_is_refused_at_its_path(category: str) -> None:
    expr = {"op": "and", "items": [_leaf("违约金"), {"field": "source", "value": category}]}
    with pytest.raises(CnkiError) as info:
        parse_expression(expr)
    assert info.value.code == "INVALID_CONDITION"
    assert info.value.details["path"] == "$.items[1]"
    assert info.value.details["reason"] == "source_category"


@pytest.mark.parametrize("invisible", ["\u200b", "\u00ad", "\ufeff", "\u2060"])
def test_a_value_copied_with_an_invisible_character_is_sent_without_it(invisible: str) -> None:
    leaf = parse_expression({"field": "title", "value": f"约定违约金{invisible}酌减", "match": "phrase"})
    assert isinstance(leaf, Leaf) and leaf.value == "约定违约金酌减"
    with pytest.raises(CnkiError) as info:
        parse_expression({"field": "title", "value": invisible})
    assert info.value.code == "INVALID_CONDITION"


@pytest.mark.parametrize("field", ["authors", "first_author", "corresponding_author", "AU"])
def test_a_han_author_name_without_a_match_is_searched_exact(field: str) -> None:
    # CNKI's form searches a person 精确; 模糊 张伟 lists 张伟华 too (docs/simulator.md, one-box)
    assert parse_expression(_leaf("张伟", field)).match == Match.EXACT
    assert parse_expression(_leaf("张伟", field, match="phrase")).match == Match.PHRASE
    assert parse_expression(_leaf("Smith J", field)).match == Match.PHRASE  # written many ways
    assert parse_expression(_leaf("张伟 王磊", field)).match == Match.PHRASE  # no one name
    assert parse_expression(_leaf("张伟", "title")).match == Match.PHRASE


@pytest.mark.parametrize(
    ("typed", "sent"),
    [
        ("阿卜杜拉•买买提", "阿卜杜拉·买买提"),
        ("阿卜杜拉・买买提", "阿卜杜拉·买买提"),
        ("阿卜杜拉 . 买买提", "阿卜杜拉·买买提"),
        ("贾\u3000楠", "贾楠"),
        ("欧阳 修", "欧阳修"),
        ("阿卜杜拉 买买提", "阿卜杜拉 买买提"),
        ("Smith J.", "Smith J."),
    ],
)
def test_an_author_name_is_sent_as_cnki_lists_it(typed: str, sent: str) -> None:
    assert parse_expression(_leaf(typed, "authors")).value == sent
