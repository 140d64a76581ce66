"""The schemas `tools/list` publishes, derived from the pydantic models the tools declare.

Input schemas keep every constraint (they are what clients generate arguments from) and lose
only what carries nothing: pydantic's generated `title`s and `default: null`, and the `$defs`
entry of a value set (an enum, no properties) that one place uses, written at that place instead
(an options object stays a `$ref`: clients and the guidance checks read it there). Nullable
arguments stay `anyOf [T, null]`: a `type` array is legal JSON Schema but clients that map tool
schemas onto a single-`type` dialect reject it (MCP Inspector's portability check warns).

Output schemas are an envelope every result of the tool satisfies, success or error
(DESIGN.md "Tool results"): the success model relaxed to its top-level property names and types
(no `required`, no `additionalProperties: false`, no descriptions, no empty `{}` schemas;
nullable fields as a `type` array, which output validators all read) plus the error fields
(`status`, `code`, `message`, `retryable`, `details`, `errors`). Relaxing only ever drops
constraints, so every success result that validated against the model still validates; the
error fields are typed to accept the coded error payload."""

from __future__ import annotations

import copy
import json
from typing import Any

JsonSchema = dict[str, Any]

# Keywords whose value is a map from property names to schemas (names are not keywords).
_NAME_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
# Keywords whose value is data, not a schema: copied as they are.
_DATA = ("default", "const", "enum", "examples")
_SCALARS = ("string", "integer", "number", "boolean", "null")

# The error payload's fields (server/errors.py `payload`), as the envelope types them.
ERROR_FIELDS: dict[str, JsonSchema] = {
    "status": {"type": "string"},
    "code": {"type": "string"},
    "message": {"type": "string"},
    "retryable": {"type": "boolean"},
    "details": {"type": "object"},
    "errors": {"type": "array", "items": {"type": "object"}},
}
OUTPUT_DEPTH = 1


# --- input ------------------------------------------------------------------------------


def compact_input(schema: JsonSchema) -> JsonSchema:
    """The same constraints, without generated titles and null defaults, with value sets used
    once written in place."""
    return _inline_single_use(_compact(copy.deepcopy(schema)))


def _compact(node: Any) -> Any:
    if isinstance(node, list):
        return [_compact(x) for x in node]
    if not isinstance(node, dict):
        return node
    out: JsonSchema = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "default" and value is None:
            continue
        if key in _DATA:
            out[key] = value
        elif key in _NAME_MAPS and isinstance(value, dict):
            out[key] = {name: _compact(sub) for name, sub in value.items()}
        else:
            out[key] = _compact(value)
    return out


def _refs(node: Any, uses: dict[str, list[set[str]]]) -> None:
    """Each `#/$defs/` name -> the other keywords beside each `$ref` to it."""
    if isinstance(node, list):
        for x in node:
            _refs(x, uses)
    elif isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            uses.setdefault(ref.removeprefix("#/$defs/"), []).append(set(node) - {"$ref"})
        for key, value in node.items():
            if key not in _DATA:
                _refs(value, uses)


def _inline_single_use(schema: JsonSchema) -> JsonSchema:
    defs = schema.get("$defs")
    if not isinstance(defs, dict):
        return schema
    uses: dict[str, list[set[str]]] = {}
    _refs(schema, uses)
    inline = {
        name: target
        for name, target in defs.items()
        if isinstance(target, dict) and len(uses.get(name, ())) == 1
        and "properties" not in target and "$ref" not in json.dumps(target)
        and not set(target) & uses[name][0]  # the use's own keywords would be overwritten
    }  # fmt: skip

    def place(node: Any) -> Any:
        if isinstance(node, list):
            return [place(x) for x in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        name = ref.removeprefix("#/$defs/") if isinstance(ref, str) else None
        if name in inline:
            return {**inline[name], **{k: v for k, v in node.items() if k != "$ref"}}
        return {k: (v if k in _DATA else place(v)) for k, v in node.items()}

    kept = {name: place(target) for name, target in defs.items() if name not in inline}
    return {
        key: kept if key == "$defs" else place(value)
        for key, value in schema.items()
        if key != "$defs" or kept
    }


# --- output -----------------------------------------------------------------------------


# Bookkeeping fields of an operation view that a client reads but never needs a schema for: they
# stay in every result (unlisted properties are allowed) and out of tools/list, where each of the
# operation tools would otherwise repeat them (docs/benchmarks.md, tools/list size). `stage` is the
# running step's label, read for progress as `progress` is; no call takes it.
OPERATION_BOOKKEEPING = frozenset(
    {"created_at", "updated_at", "active_seconds", "budget", "errors", "progress", "requests", "stage"}
)


def output_envelope(schema: JsonSchema | None) -> JsonSchema:
    """The tool's published output schema: relaxed success shape plus the error fields."""
    defs = (schema or {}).get("$defs", {})
    relaxed = _relax(schema or {}, defs, OUTPUT_DEPTH) if schema else {"type": "object"}
    props: dict[str, JsonSchema] = dict(relaxed.get("properties", {}))
    if "operation_id" in props:
        props = {k: v for k, v in props.items() if k not in OPERATION_BOOKKEEPING}
    for name, field in ERROR_FIELDS.items():
        props[name] = _merge(props[name], field) if name in props else field
    return {"type": "object", "properties": props}


def _resolve(node: JsonSchema, defs: dict[str, Any]) -> JsonSchema:
    seen = 0
    while "$ref" in node and seen < 20:
        ref = node["$ref"]
        name = ref.rsplit("/", 1)[-1]
        target = defs.get(name)
        if not isinstance(target, dict):
            return {}
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        seen += 1
    return node


def _types_of(node: JsonSchema, defs: dict[str, Any]) -> set[str] | None:
    """The JSON types a schema admits; None when it admits anything."""
    node = _resolve(node, defs)
    for key in ("anyOf", "oneOf"):
        if key in node:
            found: set[str] = set()
            for branch in node[key]:
                kinds = _types_of(branch, defs)
                if kinds is None:
                    return None
                found |= kinds
            return found
    if "allOf" in node and len(node["allOf"]) == 1:
        return _types_of(node["allOf"][0], defs)
    kind = node.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return set(kind)
    if "const" in node or "enum" in node:
        values = [node["const"]] if "const" in node else list(node["enum"])
        return {_json_type(v) for v in values}
    if "properties" in node:
        return {"object"}
    return None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _relax(node: JsonSchema, defs: dict[str, Any], depth: int) -> JsonSchema:
    """A schema accepting at least everything `node` accepts; {} when that is anything."""
    node = _resolve(node, defs)
    kinds = _types_of(node, defs)
    if kinds is None:
        return {}
    if "integer" in kinds and "number" in kinds:
        kinds.discard("integer")
    out: JsonSchema = {"type": sorted(kinds)[0] if len(kinds) == 1 else sorted(kinds)}
    if kinds <= set(_SCALARS):
        enum = _enum_of(node, defs)
        if enum is not None:
            out["enum"] = enum
        return out
    if "object" in kinds and depth > 0:
        props: dict[str, JsonSchema] = {}
        for branch in _branches(node, defs):
            for name, sub in branch.get("properties", {}).items():
                relaxed = _relax(sub, defs, depth - 1)
                if relaxed:  # an Any field is left out: absent properties are always allowed
                    props[name] = _merge(props[name], relaxed) if name in props else relaxed
        if props:
            out["properties"] = props
    if "array" in kinds:
        items = [b.get("items") for b in _branches(node, defs) if isinstance(b.get("items"), dict)]
        if len(items) == 1:
            relaxed = _relax(items[0], defs, depth - 1 if depth > 0 else 0)
            if relaxed:
                out["items"] = relaxed
    return out


def _branches(node: JsonSchema, defs: dict[str, Any]) -> list[JsonSchema]:
    for key in ("anyOf", "oneOf"):
        if key in node:
            found: list[JsonSchema] = []
            for branch in node[key]:
                found.extend(_branches(_resolve(branch, defs), defs))
            return found
    if "allOf" in node and len(node["allOf"]) == 1:
        return _branches(_resolve(node["allOf"][0], defs), defs)
    return [node]


def _enum_of(node: JsonSchema, defs: dict[str, Any]) -> list[Any] | None:
    values: list[Any] = []
    for branch in _branches(node, defs):
        if "const" in branch:
            values.append(branch["const"])
        elif "enum" in branch:
            values.extend(branch["enum"])
        elif branch.get("type") == "null":
            values.append(None)
        else:
            return None
    return list(dict.fromkeys(values)) if values else None


def _merge(a: JsonSchema, b: JsonSchema) -> JsonSchema:
    """A schema accepting what either accepts, kept shallow: the union of the types, and the
    nested shape only when both sides agree on it."""
    if a == b:
        return a
    kinds = set(_as_list(a.get("type"))) | set(_as_list(b.get("type")))
    if not kinds or not a.get("type") or not b.get("type"):
        return {}
    out: JsonSchema = {"type": sorted(kinds)[0] if len(kinds) == 1 else sorted(kinds)}
    if a.get("items") == b.get("items") and "items" in a:
        out["items"] = a["items"]
    elif "items" in a and "items" in b and _is_objects(a["items"]) and _is_objects(b["items"]):
        out["items"] = {"type": "object"}
    return out


def _is_objects(node: Any) -> bool:
    return isinstance(node, dict) and node.get("type") == "object"


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)
