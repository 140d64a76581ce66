"""Hypothesis strategies from JSON Schema (the subset the tools publish: type, enum, const,
properties, required, additionalProperties, items, prefixItems, bounds, lengths, pattern, anyOf/oneOf, $ref).

`valid(schema)` draws values the schema accepts; `invalid_object(schema)` draws objects it
rejects, each one mutation away from a valid one (a required key dropped, a wrong type, a bound
crossed, an unknown key where none is allowed). Lengths and sizes are capped so that drawing
stays cheap; the caps never go below a schema's own minimum."""

from __future__ import annotations

from typing import Any

import jsonschema
from hypothesis import assume
from hypothesis import strategies as st

Schema = dict[str, Any]
MAX_TEXT = 24
MAX_ITEMS = 4
TEXT = st.text(st.sampled_from("ab 1_-《》违约金竞业限制知网\u3000"), max_size=MAX_TEXT)
JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), TEXT)
ANY_JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=6,
)


def _resolve(schema: Schema, root: Schema) -> Schema:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        target = (root.get("$defs") or root.get("definitions") or {})[name]
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def valid(schema: Schema, root: Schema | None = None) -> st.SearchStrategy[Any]:
    root = root if root is not None else schema
    schema = _resolve(schema, root)
    if not schema:
        return ANY_JSON
    for key in ("anyOf", "oneOf"):
        if key in schema:
            rest = {k: v for k, v in schema.items() if k != key}
            return st.one_of([valid({**rest, **branch}, root) for branch in schema[key]])
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([valid({**schema, "type": k}, root) for k in kind])
    if kind is None:
        kind = "object" if "properties" in schema else None
    if kind is None:
        return ANY_JSON
    return _TYPED[kind](schema, root)


def _string(schema: Schema, root: Schema) -> st.SearchStrategy[str]:
    low = schema.get("minLength", 0)
    high = max(low, min(schema.get("maxLength", MAX_TEXT), MAX_TEXT))
    if "pattern" in schema:
        return st.from_regex(schema["pattern"], fullmatch=True).filter(lambda s: low <= len(s) <= high)
    return st.text(st.sampled_from("ab 1_-《》违约金竞业限制知网\u3000"), min_size=low, max_size=high)


def _integer(schema: Schema, root: Schema) -> st.SearchStrategy[int]:
    low = schema.get("minimum", -10)
    high = schema.get("maximum", max(low, 0) + 1000)
    return st.integers(int(low), int(high))


def _number(schema: Schema, root: Schema) -> st.SearchStrategy[float]:
    low = schema.get("minimum", -10.0)
    high = schema.get("maximum", max(low, 0) + 1000.0)
    return st.one_of(
        st.integers(int(-(-low // 1)), int(high // 1)) if high - low >= 1 else st.nothing(),
        st.floats(low, high, allow_nan=False, allow_infinity=False),
    )


def _array(schema: Schema, root: Schema) -> st.SearchStrategy[list[Any]]:
    low = schema.get("minItems", 0)
    high = max(low, min(schema.get("maxItems", MAX_ITEMS), MAX_ITEMS))
    items = schema.get("items")
    prefix: list[Schema] = schema.get("prefixItems", [])
    if prefix:  # a tuple: one value per position (pydantic's tuple[...] fields)
        if items is False or len(prefix) >= high:
            return st.tuples(*(valid(sub, root) for sub in prefix[:high])).map(list)
        rest = valid(items, root) if isinstance(items, dict) else ANY_JSON
        return st.tuples(
            st.tuples(*(valid(sub, root) for sub in prefix)), st.lists(rest, max_size=high - len(prefix))
        ).map(lambda pair: [*pair[0], *pair[1]])
    inner = valid(items, root) if isinstance(items, dict) else ANY_JSON
    return st.lists(inner, min_size=low, max_size=high)


def _object(schema: Schema, root: Schema) -> st.SearchStrategy[dict[str, Any]]:
    props: dict[str, Schema] = schema.get("properties", {})
    if not props:
        extra = schema.get("additionalProperties")
        inner = valid(extra, root) if isinstance(extra, dict) and extra else ANY_JSON
        return st.dictionaries(TEXT, inner, max_size=3)
    required = set(schema.get("required", []))
    fixed = {name: valid(sub, root) for name, sub in props.items() if name in required}
    optional = {name: valid(sub, root) for name, sub in props.items() if name not in required}
    return st.fixed_dictionaries(fixed, optional=optional)


_TYPED: dict[str, Any] = {
    "string": _string,
    "integer": _integer,
    "number": _number,
    "boolean": lambda s, r: st.booleans(),
    "null": lambda s, r: st.none(),
    "array": _array,
    "object": _object,
}


@st.composite
def invalid_object(draw: st.DrawFn, schema: Schema) -> dict[str, Any]:
    """An object `schema` rejects, one mutation away from a valid object."""
    value = dict(draw(valid(schema)))
    props: dict[str, Schema] = schema.get("properties", {})
    required = list(schema.get("required", []))
    mutations = ["wrong_type", "bound"]
    if required:
        mutations.append("drop_required")
    if schema.get("additionalProperties") is False or props:
        mutations.append("unknown_key")
    mutation = draw(st.sampled_from(mutations))
    if mutation == "drop_required":
        value.pop(draw(st.sampled_from(required)), None)
    elif mutation == "unknown_key":
        value[draw(st.sampled_from(["zzz_unknown", "__proto__", "Query"]))] = draw(JSON_SCALARS)
    elif props:
        name = draw(st.sampled_from(sorted(props)))
        sub = _resolve(props[name], schema)
        if mutation == "wrong_type":
            value[name] = draw(st.one_of(st.just({"x": [1]}), st.just([None, 3]), st.just("不是数字"), st.just(-1)))
        else:
            value[name] = _out_of_bounds(sub)
    validator = jsonschema.Draft202012Validator(schema)
    assume(not validator.is_valid(value))
    return value


def _out_of_bounds(schema: Schema) -> Any:
    if "maximum" in schema:
        return schema["maximum"] + 1
    if "minimum" in schema:
        return schema["minimum"] - 1
    if "maxLength" in schema:
        return "长" * (schema["maxLength"] + 1)
    if "minLength" in schema:
        return ""
    if "maxItems" in schema:
        return [None] * (schema["maxItems"] + 1)
    if "enum" in schema:
        return "no-such-value"
    return {"unexpected": True}
