"""Tool arguments in the forms clients and models actually send, read as the schema means them
(DESIGN.md "Tool input"). One walk over the tool's input JSON schema next to the arguments, for
every tool and nested option, before pydantic validates them (`CnkiServer.call_tool`).

Only readings with one meaning are made; anything else is left for validation to refuse:
- `null` or an empty/blank string for an optional argument is the argument left out (its
  default): clients that fill every property of a schema send `"limit": null`, `"year_from": ""`.
- A string where a list is expected: a JSON-encoded list (`"[\"a\",\"b\"]"`) is that list; a list
  of ids or of fixed values (`record_refs`, `types`, `fields`, `document_types`, `source_tiers`)
  is split at commas, 、 and semicolons, ids (`record_refs`) at spaces too, and `seeds` when every
  part is a handle (a record_ref, file name, link, DOI or node id);
  any other list of strings (`titles`, `references`: a title may hold a comma) is the one item,
  unless it holds a line break (several titles or references, or one? not guessed). A flat list
  for `concept_groups` is not read (one concept's alternatives, or several concepts?). Blank and
  null items of a list of strings are dropped; so are an empty or null group of a list of lists
  (`concept_groups: [["a"], []]` is `[["a"]]`: a group with no term adds no concept; a group of
  blank terms likewise), and a list left with none is the argument left out.
- A fixed value (an enum) in another case, width or spacing, or with `-`/space for `_`
  (`"Selected"`, `" both "`, `"ｓｋｉｐ"`, `"date-desc"`) is that value; a few Chinese names too
  (`ENUM_NAMES`), each only where the argument has that value.
- A boolean written as 是/否, 真/假 (pydantic already reads true/false/yes/no/1/0 in any case).
- A whole number where only a string is accepted (the Inspector CLI sends `pages=3` as 3) is its
  decimal text; a full-width number for a number argument is read as ASCII (`"１０"`).
A JSON boolean is never read as a number (`tool_args.reject_booleans_for_numbers`)."""

from __future__ import annotations

import contextlib
import json
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from cnki_mcp.identity import NODE_ID, NOT_A_TITLE
from cnki_mcp.tool_args import deref_schema as _deref

_MAX_DEPTH = 32
_ABSENT = object()

# Lists whose items never hold a separator: one string of them separated is the list. Spaces
# separate only ids (`record_refs`): a type or tier name may hold one (`journal article`,
# `AMI 核心`, which split was `AMI` and `核心`, any core tier: a filter silently widened).
# `seeds` is one only when every part is a handle (`identity.NOT_A_TITLE`, a node id): a seed may
# be a title or a URL (one English title was cut into words, each refused with advice to look the
# first word up on CNKI), and `rec_…,rec_…` whole was looked up as a title.
SPLIT_LISTS = frozenset({"record_refs", "document_types", "source_tiers"})
_ID_LISTS = frozenset({"record_refs"})
_HANDLE_LISTS = frozenset({"seeds"})
_SEPARATORS = re.compile(r"[,，、;；]+")
_ID_SEPARATORS = re.compile(r"[,，、;；\s]+")

TRUE_WORDS = frozenset({"是", "真", "对", "开", "开启"})
FALSE_WORDS = frozenset({"否", "假", "错", "关", "关闭"})

# Chinese names of enum values, applied only where the argument's enum has the value.
ENUM_NAMES: dict[str, str] = {
    "精确": "precise", "精准": "precise", "平衡": "balanced", "均衡": "balanced", "宽泛": "broad", "宽松": "broad",
    "询问": "ask", "等待": "ask", "跳过": "skip", "参考文献": "references",
    "引证": "citing", "引证文献": "citing", "被引": "citing", "双向": "both", "两者": "both",
    "相关度": "relevance", "相关性": "relevance", "发表时间": "date_desc", "时间": "date_desc",
    "被引次数": "cited_desc", "下载次数": "downloaded_desc", "下载量": "downloaded_desc",
    "期刊": "journal", "学位论文": "thesis", "会议": "conference", "会议论文": "conference",
    "外文": "foreign", "图书": "book", "其他": "other", "取消": "cancel", "继续": "continue",
    "恢复": "resume", "查看": "show", "标记": "mark", "省略": "omit",
}  # fmt: skip


def _alternatives(schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int = 0) -> list[Mapping[str, Any]]:
    """The schema's concrete alternatives (anyOf/oneOf flattened, references followed)."""
    if depth > _MAX_DEPTH:
        return []
    schema = _deref(schema, defs)
    branches = [b for key in ("anyOf", "oneOf") for b in schema.get(key) or () if isinstance(b, Mapping)]
    if not branches:
        return [schema]
    return [alt for b in branches for alt in _alternatives(b, defs, depth + 1)]


def _kinds(alternatives: list[Mapping[str, Any]]) -> set[str]:
    kinds: set[str] = set()
    for alt in alternatives:
        kind = alt.get("type")
        if isinstance(kind, str):
            kinds.add(kind)
        elif isinstance(kind, list):
            kinds.update(k for k in kind if isinstance(k, str))
        elif "enum" in alt or "const" in alt:
            kinds.add("string")
        elif "properties" in alt:
            kinds.add("object")
    return kinds


def _enum(alternatives: list[Mapping[str, Any]]) -> list[str]:
    values: list[str] = []
    for alt in alternatives:
        found = alt.get("enum") or ([alt["const"]] if "const" in alt else [])
        values.extend(v for v in found if isinstance(v, str))
    return values


def _key(text: str) -> str:
    return re.sub(r"[\s\-]+", "_", unicodedata.normalize("NFKC", text).strip().casefold())


def enum_value(value: str, allowed: list[str]) -> str:
    """The one enum value `value` names (case, width, spacing, `-`/space for `_`, a Chinese
    name); `value` itself when it names none or several."""
    if value in allowed:
        return value
    key = _key(value)
    named = ENUM_NAMES.get(key)
    matches = [v for v in allowed if _key(v) == key or v == named]
    return matches[0] if len(matches) == 1 else value


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _coerce(
    value: Any, schema: Mapping[str, Any], defs: Mapping[str, Any], name: str, optional: bool, depth: int,
    *, item: bool = False,
) -> Any:
    if depth > _MAX_DEPTH:
        return value
    alternatives = _alternatives(schema, defs)
    kinds = _kinds(alternatives)
    if not kinds:  # any value (an expression tree): the tool reads it
        return value
    if value is None:
        return _ABSENT if optional and "null" not in kinds else value
    if optional and isinstance(value, str) and not value.strip():
        return _ABSENT
    if isinstance(value, str) and "string" not in kinds:
        text = value.strip()
        if text[:1] in ("[", "{") and kinds & {"array", "object"}:
            with contextlib.suppress(ValueError, RecursionError):
                value = json.loads(text)
        if isinstance(value, str) and "array" in kinds and not item and _string_items(alternatives, defs):
            handles = [p for p in _ID_SEPARATORS.split(text) if p] if name in _HANDLE_LISTS else []
            if len(handles) > 1 and all(NOT_A_TITLE.fullmatch(p) or NODE_ID.fullmatch(p) for p in handles):
                value = handles
            elif name in SPLIT_LISTS or _item_enum(alternatives, defs):
                separators = _ID_SEPARATORS if name in _ID_LISTS else _SEPARATORS
                value = [p.strip() for p in separators.split(text) if p.strip()]
            elif "\n" not in text:  # lines may be several titles or references: not guessed
                value = [text]
        elif isinstance(value, str) and "boolean" in kinds:
            word = unicodedata.normalize("NFKC", text)
            value = True if word in TRUE_WORDS else False if word in FALSE_WORDS else word
        elif isinstance(value, str) and kinds & {"integer", "number"}:
            value = unicodedata.normalize("NFKC", text)
    if isinstance(value, str):
        allowed = _enum(alternatives)
        return enum_value(value, allowed) if allowed else value
    if isinstance(value, int | float) and not isinstance(value, bool):
        whole = value.is_integer() if isinstance(value, float) else True
        if "string" in kinds and not kinds & {"integer", "number"} and whole and abs(value) < 10**15:
            return str(int(value))  # bounded: a huge JSON integer stays for validation to refuse
        return value
    if isinstance(value, list):
        return _coerce_list(value, alternatives, defs, name, depth)
    if isinstance(value, dict):
        for alt in alternatives:
            if isinstance(alt.get("properties"), Mapping):
                return coerce_object(value, alt, defs, depth + 1)
    return value


def _item_schemas(alternatives: list[Mapping[str, Any]], defs: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [alt["items"] for alt in alternatives if isinstance(alt.get("items"), Mapping)]


def _string_items(alternatives: list[Mapping[str, Any]], defs: Mapping[str, Any]) -> bool:
    """A list of strings (not of lists: a flat list for `concept_groups` may mean one concept's
    alternatives or several concepts)."""
    items = _item_schemas(alternatives, defs)
    return bool(items) and _kinds(_alternatives(items[0], defs)) <= {"string"}


def _item_enum(alternatives: list[Mapping[str, Any]], defs: Mapping[str, Any]) -> bool:
    return any(_enum(_alternatives(items, defs)) for items in _item_schemas(alternatives, defs))


def _coerce_list(
    value: list[Any], alternatives: list[Mapping[str, Any]], defs: Mapping[str, Any], name: str, depth: int
) -> list[Any]:
    items = _item_schemas(alternatives, defs)
    if not items:
        return value
    if _string_items(alternatives, defs):
        value = [v for v in value if not _blank(v)]
    out = [_coerce(v, items[0], defs, name, False, depth + 1, item=True) for v in value]
    if _kinds(_alternatives(items[0], defs)) == {"array"}:  # a list of lists (concept_groups)
        out = [v for v in out if v is not None and v != []]  # an empty group adds no concept
    return [v for v in out if v is not _ABSENT]


def coerce_object(
    arguments: Mapping[str, Any], schema: Mapping[str, Any], defs: Mapping[str, Any] | None = None, depth: int = 0
) -> dict[str, Any]:
    """`arguments` read as `schema` means them (the module docstring); names the schema does not
    declare are kept as they are, for the unknown-name check to refuse."""
    if defs is None:
        found = schema.get("$defs")
        defs = found if isinstance(found, Mapping) else {}
    props = schema.get("properties")
    props = props if isinstance(props, Mapping) else {}
    required = set(schema.get("required") or ())
    out: dict[str, Any] = {}
    for key, value in arguments.items():
        prop = props.get(key)
        if not isinstance(prop, Mapping):
            out[key] = value
            continue
        coerced = _coerce(value, prop, defs, str(key), key not in required, depth)
        if coerced is not _ABSENT:
            out[key] = coerced
    return out
