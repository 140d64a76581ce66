"""Checks on tool arguments that the tools' pydantic models let through (DESIGN.md "Tool input").

Pydantic's lax mode reads a JSON boolean as an integer (`limit: true` is 1, `section: false` is
0); a client sending `true` for a number made a mistake that must not turn into a different
request. `reject_booleans_for_numbers` walks a tool's input JSON schema next to the arguments and
refuses a boolean wherever the schema accepts a number but not a boolean, for every tool and
every nested option, so a new integer parameter is covered without further work.

`reject_unknown_arguments` refuses an argument name the tool does not have: the SDK's argument
model drops it without a word, so a misspelled `year_form` ran a whole search without its year
limit and `search_results(ofset=50)` returned the first page again (nested objects, the search
options and an expression's nodes, already refuse unknown keys).

`trim_ids` takes the space off around ids (`ID_ARGUMENTS`), for every tool in one place.

`control_characters` finds characters that have no place in text sent to CNKI (NUL and the
other C0/C1 controls; tab, newline and carriage return are ordinary whitespace)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from cnki_mcp.errors import InvalidInput
from cnki_mcp.identity import CONTROL

_MAX_DEPTH = 32


# Arguments naming a paper, search, operation or watch by an id some tool answered with.
ID_ARGUMENTS = frozenset(
    {"record_ref", "record_refs", "search_id", "operation_id", "watch_id", "paper", "seeds", "source", "target"}
)


def trim_ids(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments with the space around each id taken off (a list's items too): an id copied
    with a space or newline around it (`" op_… "`) named nothing, and the client was told there
    was no such search or paper. Every tool's ids go through here (`CnkiServer.call_tool`)."""

    def trim(value: Any) -> Any:
        if isinstance(value, str):
            return value.strip()
        if isinstance(value, list):
            return [v.strip() if isinstance(v, str) else v for v in value]
        return value

    return {k: trim(v) if k in ID_ARGUMENTS else v for k, v in arguments.items()}


def control_characters(text: str) -> bool:
    """Whether `text` holds a control character other than tab, newline or carriage return."""
    return CONTROL.search(text) is not None


def _types(schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int) -> set[str]:
    if depth > _MAX_DEPTH:
        return set()
    schema = deref_schema(schema, defs)
    out: set[str] = set()
    kind = schema.get("type")
    if isinstance(kind, str):
        out.add(kind)
    elif isinstance(kind, list):
        out.update(k for k in kind if isinstance(k, str))
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key) or ():
            if isinstance(sub, Mapping):
                out |= _types(sub, defs, depth + 1)
    return out


def deref_schema(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    """`schema` with a `#/$defs/…` reference followed (itself otherwise)."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = defs.get(ref.removeprefix("#/$defs/"))
        if isinstance(target, Mapping):
            return target
    return schema


def _subschemas(schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int) -> list[Mapping[str, Any]]:
    """The schema and every alternative of it (anyOf/oneOf/allOf), dereferenced."""
    if depth > _MAX_DEPTH:
        return []
    schema = deref_schema(schema, defs)
    out = [schema]
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key) or ():
            if isinstance(sub, Mapping):
                out.extend(_subschemas(sub, defs, depth + 1))
    return out


def _walk(
    value: Any, schema: Mapping[str, Any], defs: Mapping[str, Any], path: str, found: list[str], depth: int
) -> None:
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, bool):
        kinds = _types(schema, defs, 0)
        if kinds & {"integer", "number"} and "boolean" not in kinds:
            found.append(path)
        return
    alternatives = _subschemas(schema, defs, 0)
    if isinstance(value, Mapping):
        for key, item in value.items():
            for alt in alternatives:
                props = alt.get("properties")
                if isinstance(props, Mapping) and isinstance(props.get(key), Mapping):
                    _walk(item, props[key], defs, f"{path}.{key}" if path else str(key), found, depth + 1)
                    break
    elif isinstance(value, list):
        for index, item in enumerate(value):
            for alt in alternatives:
                items = alt.get("items")
                if isinstance(items, Mapping):
                    _walk(item, items, defs, f"{path}.{index}", found, depth + 1)
                    break


def booleans_for_numbers(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[str]:
    """Paths (`limit`, `options.max_pages`) where `arguments` hold a boolean the schema would
    have to read as a number."""
    found: list[str] = []
    defs = schema.get("$defs") or {}
    _walk(arguments, schema, defs if isinstance(defs, Mapping) else {}, "", found, 0)
    return found


def reject_booleans_for_numbers(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
    """INVALID_ARGUMENT naming every field where a boolean was given for a number."""
    bad = booleans_for_numbers(schema, arguments)
    if bad:
        raise InvalidInput(
            f"参数无效：{', '.join(bad[:6])} 须为数字，不能是 true/false",
            errors=[{"field": p, "problem": "布尔值不能当作数字"} for p in bad],
        )


# Names other tools and APIs use for these tools' arguments (`question` for `query`,
# `max_results` for `limit`): named in `did_you_mean`, never taken as the argument.
SYNONYMS: dict[str, str] = {
    "question": "query", "q": "query", "keyword": "query", "keywords": "query", "search_query": "query",
    "search": "query", "term": "query", "terms": "query", "topic": "query", "prompt": "query",
    "max_results": "limit", "num_results": "limit", "max_items": "limit", "top_k": "limit", "topk": "limit",
    "count": "limit", "size": "limit", "page_size": "limit", "per_page": "limit", "n": "limit", "k": "limit",
    "start": "offset", "skip": "offset", "from": "offset", "cursor": "offset",
    "start_year": "year_from", "from_year": "year_from", "since": "year_from", "year_start": "year_from",
    "end_year": "year_to", "to_year": "year_to", "until": "year_to", "year_end": "year_to",
    "ids": "record_refs", "refs": "record_refs", "papers": "seeds", "id": "record_ref", "ref": "record_ref",
    "style": "format", "citation_style": "format", "timeout": "wait_seconds",
}  # fmt: skip


def _nested_names(schema: Mapping[str, Any]) -> dict[str, str]:
    """name -> `argument.name` for the properties of each object argument (the search options)."""
    defs = schema.get("$defs") or {}
    out: dict[str, str] = {}
    for arg, prop in (schema.get("properties") or {}).items():
        for sub in _subschemas(prop, defs if isinstance(defs, Mapping) else {}, 0):
            for name in sub.get("properties") or {}:
                out.setdefault(str(name).lower(), f"{arg}.{name}")
    return out


def unknown_arguments(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[str]:
    """The top-level argument names `schema` does not declare, in the order given."""
    declared = schema.get("properties")
    names = set(declared) if isinstance(declared, Mapping) else set()
    return [str(key) for key in arguments if key not in names]


def _closed_object(prop: Any, defs: Mapping[str, Any]) -> list[str] | None:
    """The property names of an object argument that admits no others (`options`), else None."""
    if not isinstance(prop, Mapping):
        return None
    for sub in _subschemas(prop, defs, 0):
        props = sub.get("properties")
        if isinstance(props, Mapping) and sub.get("additionalProperties") is False:
            return sorted(str(k) for k in props)
    return None


def _reject_unknown_options(tool: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
    """The same for the keys inside an object argument (`options: {"max_page": 3}`): pydantic
    said only "Extra inputs are not permitted", with no name meant."""
    defs = schema.get("$defs") or {}
    declared = schema.get("properties")
    top = sorted(declared) if isinstance(declared, Mapping) else []
    for arg, value in arguments.items():
        allowed = _closed_object(declared.get(arg) if isinstance(declared, Mapping) else None, defs)
        if allowed is None or not isinstance(value, Mapping):
            continue
        unknown = [str(k) for k in value if k not in allowed]
        if not unknown:
            continue
        meant: dict[str, str] = {}
        for name in unknown:
            key = name.strip().lower()
            if key in top:  # an argument given inside the options (`options.limit` for `limit`)
                meant[f"{arg}.{name}"] = key
            elif close := [m for k in (key, SYNONYMS.get(key, key)) for m in difflib.get_close_matches(k, allowed, 1, 0.6)]:
                meant[f"{arg}.{name}"] = f"{arg}.{close[0]}"
        hint = "；".join(f"{name} 应为 {right}？" for name, right in meant.items())
        raise InvalidInput(
            f"{tool} 的 {arg} 没有 {', '.join(unknown[:6])}" + (f"（{hint}）" if hint else "")
            + f"；可用：{', '.join(allowed)}",
            field=f"{arg}.{unknown[0]}",
            unknown=[f"{arg}.{name}" for name in unknown],
            allowed=allowed,
            **({"did_you_mean": meant} if meant else {}),
        )  # fmt: skip


def reject_unknown_arguments(tool: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
    """INVALID_ARGUMENT naming every argument the tool does not have (or key its options do not),
    the arguments it has and, for a near miss (`year_form`), the name that was probably meant."""
    unknown = unknown_arguments(schema, arguments)
    if not unknown:
        _reject_unknown_options(tool, schema, arguments)
        return
    declared = schema.get("properties")
    allowed = sorted(declared) if isinstance(declared, Mapping) else []
    nested = _nested_names(schema)
    meant: dict[str, str] = {}
    for name in unknown:
        key = name.strip().lower()
        if key in nested:  # an option given at the top level (`max_pages` for `options.max_pages`)
            meant[name] = nested[key]
        elif SYNONYMS.get(key) in allowed:
            meant[name] = SYNONYMS[key]
        elif close := difflib.get_close_matches(key, allowed, n=1, cutoff=0.6):
            meant[name] = close[0]
    hint = "；".join(f"{name} 应为 {right}？" for name, right in meant.items())
    raise InvalidInput(
        f"{tool} 没有参数 {', '.join(unknown[:6])}"
        + (f"（{hint}）" if hint else "")
        + f"；可用参数：{', '.join(allowed)}",
        field=unknown[0],
        unknown=unknown,
        allowed=allowed,
        **({"did_you_mean": meant} if meant else {}),
    )
