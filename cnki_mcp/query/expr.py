"""The structured-search expression tree: CNKI fields, leaves, operator nodes, and the coded parser.

A leaf is `{field, value, match}`; an operator node is `{op: and|or|not, items: [...]}`.
`parse_expression` turns plain JSON (what an MCP client sends) into the typed tree and raises the
coded errors of the tool contract for every malformed input, with the JSON path of the offending
node in `details["path"]` (`$`, `$.items[1]`, `$.items[1].items[0]`, ...).

The pydantic models double as the tool's input schema (`expression_json_schema()`); their limits
are stated in descriptions rather than enforced as schema constraints so that malformed input
reaches `parse_expression` and gets a coded error instead of a generic validation failure.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Discriminator, Tag, TypeAdapter
from pydantic import Field as PydField

from cnki_mcp.errors import (
    InvalidCondition,
    InvalidExpression,
    InvalidMatch,
    InvalidNot,
    InvalidOperator,
    QueryTooComplex,
    QueryUnsupported,
)
from cnki_mcp.identity import CONTROL, visible
from cnki_mcp.rank import KNOWN_TIERS, TIER_ALIASES

MAX_DEPTH = 8
MAX_NODES = 96
MIN_OPERANDS = 2
MAX_OPERANDS = 12
MAX_VALUE_CHARS = 120  # CNKI's per-row limit; applies to the value as sent (after quoting)

TOO_COMPLEX_MESSAGE = "表达式最多 96 节点、8 层"
SUBJECT_EXACT_MESSAGE = "主题不支持严格精确匹配；可选择篇名或关键词"


class Field(StrEnum):
    """A CNKI search field (the names of the tool contract)."""

    SUBJECT = "subject"
    TITLE = "title"
    KEYWORDS = "keywords"
    ABSTRACT = "abstract"
    AUTHORS = "authors"
    FIRST_AUTHOR = "first_author"
    CORRESPONDING_AUTHOR = "corresponding_author"
    INSTITUTIONS = "institutions"
    SOURCE = "source"
    DOI = "doi"
    FUNDS = "funds"
    FULLTEXT = "fulltext"
    REFERENCES = "references"
    CLASSIFICATION = "classification"
    SUBTITLE = "subtitle"
    TITLE_KEYWORDS_ABSTRACT = "title_keywords_abstract"

    @property
    def code(self) -> str:
        """CNKI's field code as it appears in QueryJson (`SU`, `TI`, ...)."""
        return FIELD_CODES[self]

    @property
    def label(self) -> str:
        """CNKI's Chinese label on the advanced-search form (主题, 篇名, ...)."""
        return FIELD_LABELS[self]


FIELD_CODES: dict[Field, str] = {
    Field.SUBJECT: "SU",
    Field.TITLE: "TI",
    Field.KEYWORDS: "KY",
    Field.ABSTRACT: "AB",
    Field.AUTHORS: "AU",
    Field.FIRST_AUTHOR: "FI",
    Field.CORRESPONDING_AUTHOR: "RP",
    Field.INSTITUTIONS: "AF",
    Field.SOURCE: "LY",
    Field.DOI: "DOI",
    Field.FUNDS: "FU",
    Field.FULLTEXT: "FT",
    Field.REFERENCES: "RF",
    Field.CLASSIFICATION: "CLC",
    Field.SUBTITLE: "ST",
    Field.TITLE_KEYWORDS_ABSTRACT: "TKA",
}

FIELD_LABELS: dict[Field, str] = {
    Field.SUBJECT: "主题",
    Field.TITLE: "篇名",
    Field.KEYWORDS: "关键词",
    Field.ABSTRACT: "摘要",
    Field.AUTHORS: "作者",
    Field.FIRST_AUTHOR: "第一作者",
    Field.CORRESPONDING_AUTHOR: "通讯作者",
    Field.INSTITUTIONS: "作者单位",
    Field.SOURCE: "文献来源",
    Field.DOI: "DOI",
    Field.FUNDS: "基金",
    Field.FULLTEXT: "全文",
    Field.REFERENCES: "参考文献",
    Field.CLASSIFICATION: "分类号",
    Field.SUBTITLE: "小标题",
    Field.TITLE_KEYWORDS_ABSTRACT: "篇关摘",
}

_FIELD_BY_CODE: dict[str, Field] = {code: f for f, code in FIELD_CODES.items()}


class Match(StrEnum):
    """How a leaf's value matches: `phrase` is CNKI's 模糊 (fuzzy), `exact` its 精确."""

    PHRASE = "phrase"
    EXACT = "exact"


class Op(StrEnum):
    AND = "and"
    OR = "or"
    NOT = "not"


class Leaf(BaseModel):
    """One search condition."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    field: Field = PydField(description="检索字段，例如 title（篇名）、authors（作者）、source（文献来源）")
    value: str = PydField(
        description="检索词，1–120 字；按字面检索：含空格或 + * ( ) / % = - 等符号时自动加引号，不必自己加（包住整个词的一对引号会去掉）；不能同时含单引号和双引号"
    )
    match: Match = PydField(
        default=Match.PHRASE,
        description="phrase：模糊（默认；中文作者名默认 exact）；exact：精确（subject 不支持）",
    )


class Node(BaseModel):
    """A boolean combination: and/or of 2–12 items, or not of exactly 1 item."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    op: Op = PydField(description="and：全部满足；or：任一满足；not：不满足（只能有 1 个子项）")
    items: list[Expr] = PydField(description="子条件：and/or 需要 2–12 个，not 需要恰好 1 个")


def _expr_tag(value: Any) -> str:
    if isinstance(value, Node) or (isinstance(value, dict) and "op" in value):
        return "node"
    return "leaf"


Expr = Annotated[
    Annotated[Leaf, Tag("leaf")] | Annotated[Node, Tag("node")],
    Discriminator(_expr_tag),
]
"""A leaf condition or an operator node."""

Node.model_rebuild()

_EXPR_ADAPTER: TypeAdapter[Leaf | Node] = TypeAdapter(Expr)


def expression_json_schema() -> dict[str, Any]:
    """JSON schema of the expression tree (for the structured_search tool input)."""
    return _EXPR_ADAPTER.json_schema()


# ---------------------------------------------------------------- quoting


_NEEDS_QUOTES = frozenset("+*()/%=-\"' \t")
_ENCLOSING_QUOTES = (('"', '"'), ("'", "'"), ("\u201c", "\u201d"), ("\u2018", "\u2019"))


def unquote(value: str) -> str:
    """A term as its writer meant it: stripped, and without one pair of quotes enclosing all of it
    (`"违约金"`, `'smart contract'`, `“违约金”`). People quote a term to say "this phrase"; sent
    as written, the quotes would be part of the term (quote_value wraps it once more) and match
    nothing. A value whose quotes enclose several parts (`"a" "b"`) is kept as it is."""
    text = value.strip()
    for opening, closing in _ENCLOSING_QUOTES:
        inner = text[1:-1]
        if len(text) >= 2 and text[0] == opening and text[-1] == closing and opening not in inner and closing not in inner:
            return inner.strip()
    return text


def quote_value(value: str) -> str:
    """A value as CNKI must receive it so its in-value operators do not apply.

    A value containing any of `+ * ( ) / % = -`, whitespace, `"` or `'` is wrapped in `"…"`,
    or in `'…'` when it contains `"`. Both quote kinds cannot be expressed: QUERY_UNSUPPORTED.
    """
    if not any(ch in _NEEDS_QUOTES or ch.isspace() for ch in value):
        return value
    has_double = '"' in value
    if has_double and "'" in value:
        raise QueryUnsupported("检索词同时含单引号和双引号，知网无法表达", value=value)
    return f"'{value}'" if has_double else f'"{value}"'


# ---------------------------------------------------------------- person names

PERSON_FIELDS = frozenset((Field.AUTHORS, Field.FIRST_AUTHOR, Field.CORRESPONDING_AUTHOR))
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_HAN_NAME = re.compile(f"[{_HAN}]+(?:·[{_HAN}]+)*")
# The dots people type inside a transcribed name (阿卜杜拉•买买提, 阿卜杜拉・买买提, 阿卜杜拉.买买提);
# CNKI lists the name with U+00B7 (阿卜杜拉·买买提), so any other dot matches nothing.
_NAME_DOT = re.compile(f"(?<=[{_HAN}])\\s*[·・•‧∙⋅．.･]\\s*(?=[{_HAN}])")


def person_name(value: str) -> tuple[str, bool]:
    """(the value of a person field as CNKI lists it, whether it is one whole Han name).

    A dot between Han characters becomes `·`. A Han name split by spaces where one part is a single
    character (`贾　楠`, padded to align names in Word; `欧阳 修`) is joined. Other spaced values
    (`张伟 王磊`, two people; `阿卜杜拉 买买提`, a dot typed as a space) are kept: they are no one
    name, and only their words, matched fuzzily, can find one."""
    text = _NAME_DOT.sub("·", value)
    parts = text.split()
    if len(parts) > 1 and not (all(_HAN_NAME.fullmatch(p) for p in parts) and min(map(len, parts)) == 1):
        return text, False
    joined = "".join(parts)
    return joined, bool(_HAN_NAME.fullmatch(joined))


# ---------------------------------------------------------------- parsing


_LEAF_KEYS = frozenset({"field", "value", "match"})
_NODE_KEYS = frozenset({"op", "items"})


class _Walk:
    def __init__(self) -> None:
        self.nodes = 0

    def visit(self, obj: Any, path: str, depth: int) -> Leaf | Node:
        if depth > MAX_DEPTH:
            raise QueryTooComplex(TOO_COMPLEX_MESSAGE, path=path, limit="depth", max_depth=MAX_DEPTH)
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise QueryTooComplex(TOO_COMPLEX_MESSAGE, path=path, limit="nodes", max_nodes=MAX_NODES)
        if isinstance(obj, Leaf | Node):
            obj = obj.model_dump(mode="json")
        if not isinstance(obj, dict):
            raise InvalidExpression("表达式节点必须是对象", path=path)
        if "op" in obj:
            return self._node(obj, path, depth)
        if "field" in obj or "value" in obj:
            return _leaf(obj, path)
        raise InvalidExpression(
            "表达式节点需要 op/items 或 field/value", path=path, keys=sorted(map(str, obj))
        )

    def _node(self, obj: dict[str, Any], path: str, depth: int) -> Node:
        mixed = sorted(k for k in obj if k in _LEAF_KEYS)
        if mixed:
            raise InvalidExpression("表达式节点不能同时是运算符和条件", path=path, keys=mixed)
        unknown = sorted(str(k) for k in obj if k not in _NODE_KEYS)
        if unknown:
            raise InvalidExpression("表达式节点含未知字段", path=path, keys=unknown)
        raw_op = obj["op"]
        try:
            op = Op(raw_op.strip().lower()) if isinstance(raw_op, str) else None
        except ValueError:
            op = None
        if op is None:
            raise InvalidOperator("op 只能是 and、or 或 not", path=path, op=raw_op)
        items = obj.get("items", [])
        if not isinstance(items, list):
            raise InvalidExpression("items 必须是数组", path=path)
        if op == Op.NOT and len(items) != 1:
            raise InvalidNot(path=path, count=len(items))
        if op != Op.NOT and not MIN_OPERANDS <= len(items) <= MAX_OPERANDS:
            raise InvalidOperator(path=path, count=len(items))
        children = [self.visit(item, f"{path}.items[{i}]", depth + 1) for i, item in enumerate(items)]
        return Node.model_construct(op=op, items=children)


def _leaf(obj: dict[str, Any], path: str) -> Leaf:
    unknown = sorted(str(k) for k in obj if k not in _LEAF_KEYS)
    if unknown:
        raise InvalidExpression("条件含未知字段", path=path, keys=unknown)
    raw_field = obj.get("field")
    fld = _field(raw_field)
    if fld is None:
        names = [f.value for f in Field]
        raise InvalidCondition(f"未知的检索字段；可用：{'、'.join(names)}", path=path, field=raw_field, allowed=names)
    raw_value = obj.get("value")
    if not isinstance(raw_value, str):
        raise InvalidCondition("检索词必须是字符串", path=path, field=fld.value)
    value = unquote(visible(raw_value))  # no CNKI text holds a soft hyphen or zero-width space
    if fld == Field.SOURCE:
        value = _source_name(value, path)
    whole_name = False
    if fld in PERSON_FIELDS:
        value, whole_name = person_name(value)
    if not value:
        raise InvalidCondition("检索词不能为空", path=path, field=fld.value)
    if CONTROL.search(value):  # a NUL or other control character is never sent to CNKI
        raise InvalidCondition("检索词含有控制字符（如 NUL）", path=path, field=fld.value)
    if len(value) > MAX_VALUE_CHARS:
        raise InvalidCondition("检索词最多 120 字", path=path, field=fld.value, length=len(value))
    raw_match = obj.get("match")
    if raw_match is None:
        # CNKI's own form and one-box search a person field 精确 (docs/simulator.md, one-box
        # match values): 模糊 张伟 also lists 张伟华's and 张伟文's papers, other people.
        match = Match.EXACT if whole_name else Match.PHRASE
    else:
        try:
            match = Match(raw_match.strip().lower()) if isinstance(raw_match, str) else None
        except ValueError:
            match = None
        if match is None:
            raise InvalidMatch(path=path, match=raw_match)
    if fld == Field.SUBJECT and match == Match.EXACT:
        raise InvalidMatch(SUBJECT_EXACT_MESSAGE, path=path, field=fld.value)
    try:
        sent = quote_value(value)
    except QueryUnsupported as exc:
        raise QueryUnsupported(exc.message, path=path, field=fld.value) from None
    if len(sent) > MAX_VALUE_CHARS:
        raise InvalidCondition("检索词加引号后超过 120 字", path=path, field=fld.value, length=len(sent))
    return Leaf.model_construct(field=fld, value=value, match=match)


# The source tiers people name (CSSCI, 北大核心, 南大核心, C刊 …): a source value naming one matches
# nothing (SOURCE_CATEGORIES), and a written question wishing for one is read as a filter wish
# (query/written.py). One holding another comes first (CSSCI, SSCI, SCI; 北大核心, 南大核心 before 核心).
TIER_WORDS = ("CSSCI", "SSCI", "SCI", "CSCD", "EI", "北大核心", "中文核心", "南大核心", "C刊", "核心")
# Source categories people type as a source: CNKI's 文献来源 (LY) holds journal and meeting names,
# so these match nothing there (the category is a separate 来源类别 filter this tool does not send).
# Every list a journal page tags and every name people call one by (`rank.KNOWN_TIERS`,
# `rank.TIER_ALIASES`: C刊, 南大核心期刊, CSCD核心库, AMI顶级 …), but the two-letter CA (a name
# someone may abbreviate a journal to).
SOURCE_CATEGORIES = frozenset(
    name.casefold()
    for name in (
        *TIER_WORDS, *(t for t in KNOWN_TIERS if t != "CA"), *TIER_ALIASES, "CSSCI扩展", "CSCD扩展",
        "AMI", "核心刊物",
    )
)


def _source_name(value: str, path: str) -> str:
    """A source value as CNKI's 文献来源 reads it: 《…》 around the whole name is dropped (journal
    names never carry it, as they never carry quotes); a source category is INVALID_CONDITION."""
    if len(value) >= 2 and value[0] == "《" and value[-1] == "》" and "《" not in value[1:-1] and "》" not in value[1:-1]:
        value = value[1:-1].strip()
    if value.casefold() in SOURCE_CATEGORIES:
        raise InvalidCondition(
            f"“{value}”是来源类别，不是文献来源（刊名）：按刊名检索会找不到任何文献。"
            "请去掉这个条件检索；要按来源级别筛选，用 get_metadata(quality=true) 读取结果的期刊等级后，"
            "用 search_library(search_id=…, source_tiers=[…]) 筛选",
            path=path,
            field=Field.SOURCE.value,
            value=value,
            reason="source_category",
        )
    return value


def _field(raw: Any) -> Field | None:
    if not isinstance(raw, str):
        return None
    name = raw.strip()
    try:
        return Field(name.lower())
    except ValueError:
        return _FIELD_BY_CODE.get(name.upper())


def parse_expression(obj: Any) -> Leaf | Node:
    """Plain JSON (or an already built tree) -> a validated expression tree.

    Raises INVALID_EXPRESSION, INVALID_NOT, INVALID_OPERATOR, INVALID_CONDITION, INVALID_MATCH,
    QUERY_TOO_COMPLEX or QUERY_UNSUPPORTED; `details["path"]` is the offending node's JSON path.
    Field names are case-insensitive and CNKI codes (`TI`, `AU`, ...) are accepted; values are
    stripped and lose one pair of quotes enclosing all of them (`unquote`); `match` defaults to
    phrase.
    """
    return _Walk().visit(obj, "$", 1)


def leaves(expr: Leaf | Node) -> list[Leaf]:
    """Every leaf of the tree, left to right."""
    if isinstance(expr, Leaf):
        return [expr]
    out: list[Leaf] = []
    for item in expr.items:
        out.extend(leaves(item))
    return out


def to_json(expr: Leaf | Node) -> dict[str, Any]:
    """The tree as plain JSON (the form `parse_expression` accepts)."""
    return expr.model_dump(mode="json")
