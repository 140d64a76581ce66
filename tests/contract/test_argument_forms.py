"""Arguments in the forms real clients and models send, for every tool (DESIGN.md "Tool input",
`tool_coerce.py`): `null` or "" for an optional argument, an enum value in another case or
width, one string for a list, booleans written as words, a number for a string. Each is read
as the schema means it before the tool runs; an ambiguous form is INVALID_ARGUMENT naming the
field and what was received.

The tools themselves do not run: `MCPServer.call_tool` (what `CnkiServer.call_tool` hands the
checked arguments to) is replaced by a recorder, and the recorded arguments are validated by
the tool's own argument model, so the test reads what the tool would have been given. The
cases come from the published schemas, so a new argument is covered without a new case."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent

from cnki_mcp.server.app import TOOL_NAMES, build_server
from cnki_mcp.server.errors import CnkiServer
from tests.contract.server_fakes import Harness

REF = "rec_" + "0" * 24
# the required arguments of each tool, valid in form
BASE: dict[str, dict[str, Any]] = {
    "search": {"query": "违约金"},
    "structured_search": {"expression": {"field": "title", "value": "违约金"}},
    "search_results": {"search_id": "s"},
    "search_library": {"query": "违约金"},
    "export_search_log": {"search_id": "s"},
    "watch_search": {"search_id": "s"},
    "get_references": {"paper": REF},
    "get_citing": {"paper": REF},
    "citation_graph": {"seeds": [REF]},
    "find_citation_path": {"source": REF, "target": "rec_" + "1" * 24},
    "link_references": {"text": "见《某题名》。"},
    "operation_control": {"action": "show", "operation_id": "op_" + "0" * 24},
}


class Recorder:
    """Stands in for the SDK's tool call: keeps each tool's arguments as the tool would get them."""

    def __init__(self) -> None:
        self.server: CnkiServer | None = None
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, server: MCPServer[Any], name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        self.calls.append((name, dict(arguments)))
        return CallToolResult(content=[TextContent(type="text", text="{}")], structured_content={}, is_error=False)

    def parsed(self, name: str) -> Any:
        """The last call's arguments as the tool's argument model reads them."""
        assert self.server is not None
        tool = self.server._tool_manager.get_tool(name)
        assert tool is not None
        called, arguments = self.calls[-1]
        assert called == name
        return tool.fn_metadata.arg_model.model_validate(tool.fn_metadata.pre_parse_json(arguments))


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorder]:
    rec = Recorder()
    monkeypatch.setattr(MCPServer, "call_tool", lambda self, *a, **k: rec(self, *a, **k))
    yield rec


@asynccontextmanager
async def serving(
    tmp_path: Path, recorder: Recorder | None = None
) -> AsyncIterator[tuple[Client, dict[str, dict[str, Any]]]]:
    """A client of a server on fakes (its tools replaced by `recorder`, if given), and each
    tool's published input schema."""
    h = Harness(tmp_path / "data", inline_wait=5.0)
    server = build_server(h.open)
    if recorder is not None:
        recorder.server = server
    async with Client(server) as c:
        schemas = {t.name: t.input_schema for t in (await c.list_tools()).tools}
        yield c, schemas
    assert h.backend.calls in ([], ["close"])


def _resolve(prop: dict[str, Any], defs: dict[str, Any]) -> list[dict[str, Any]]:
    if "$ref" in prop:
        return _resolve(defs[prop["$ref"].split("/")[-1]], defs)
    if "anyOf" in prop:
        return [alt for branch in prop["anyOf"] for alt in _resolve(branch, defs)]
    return [prop]


def _arguments(schema: dict[str, Any]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """(path, alternatives) of each top-level argument and of each field of an object argument."""
    defs = schema.get("$defs", {})
    for name, prop in schema.get("properties", {}).items():
        alternatives = _resolve(prop, defs)
        yield name, alternatives
        for alt in alternatives:
            for sub, sub_prop in (alt.get("properties") or {}).items():
                yield f"{name}.{sub}", _resolve(sub_prop, defs)


def _call(name: str, path: str, value: Any) -> dict[str, Any]:
    head, _, rest = path.partition(".")
    args = dict(BASE.get(name, {}))
    args[head] = {rest: value} if rest else value
    return args


def _value(model: Any, path: str) -> Any:
    for part in path.split("."):
        model = getattr(model, part)
    return model


def _is_optional(schema: dict[str, Any], path: str) -> bool:
    return "." in path or path not in schema.get("required", [])


async def test_null_or_blank_for_an_optional_argument_of_any_tool_is_that_argument_left_out(
    tmp_path: Path, recorder: Recorder
) -> None:
    # clients that fill every property send `"limit": null`, `"year_from": ""`: it was
    # INVALID_ARGUMENT ("Input should be a valid integer") for every argument with a default
    async with serving(tmp_path, recorder) as (c, schemas):
        checked: list[str] = []
        for name, schema in schemas.items():
            for path, _alternatives in _arguments(schema):
                head, _, rest = path.partition(".")
                if not _is_optional(schema, path) or head in BASE.get(name, {}):
                    continue
                await c.call_tool(name, {**BASE.get(name, {}), **({head: {}} if rest else {})})
                default = _value(recorder.parsed(name), path)  # the argument left out
                for blank in (None, "", "  "):
                    result = await c.call_tool(name, _call(name, path, blank))
                    assert not result.is_error, (name, path, blank, result.structured_content)
                    assert _value(recorder.parsed(name), path) == default, (name, path, blank)
                checked.append(f"{name}.{path}")
        assert {"search.limit", "search.options.max_pages", "get_metadata.local_only", "list_watches.watch_id"} <= set(
            checked
        )
        assert {n for n in TOOL_NAMES if any(c.startswith(f"{n}.") for c in checked)} >= set(TOOL_NAMES) - {
            "diagnostics", "export_search_log", "watch_search", "operation_control", "find_citation_path",
        }  # fmt: skip


def _enums(alternatives: list[dict[str, Any]]) -> list[str]:
    return [v for alt in alternatives for v in alt.get("enum", []) if isinstance(v, str)]


async def test_an_enum_value_in_another_case_width_or_spacing_is_that_value_for_every_tool(
    tmp_path: Path, recorder: Recorder
) -> None:
    # `"Selected"`, `" both "`, `"ＳＫＩＰ"`, `"date-desc"` were INVALID_ARGUMENT
    async with serving(tmp_path, recorder) as (c, schemas):
        checked = 0
        for name, schema in schemas.items():
            for path, alternatives in _arguments(schema):
                for value in _enums(alternatives):
                    full_width = "".join(chr(ord(ch) + 0xFEE0) if "!" <= ch <= "~" else ch for ch in value.upper())
                    for sent in (f" {value.title()} ", full_width, value.replace("_", "-").upper()):
                        result = await c.call_tool(name, _call(name, path, sent))
                        assert not result.is_error, (name, path, sent, result.structured_content)
                        assert _value(recorder.parsed(name), path) == value, (name, path, sent)
                        checked += 1
        assert checked > 100
        for name, path, sent, value in (
            ("search", "mode", "精确", "precise"),
            ("citation_graph", "direction", "双向", "both"),
            ("search", "options.on_verification", "跳过", "skip"),
        ):
            await c.call_tool(name, _call(name, path, sent))
            assert _value(recorder.parsed(name), path) == value


def _string_lists(schema: dict[str, Any]) -> Iterator[tuple[str, list[str]]]:
    """Top-level arguments that are lists of strings, with the item enum if any."""
    for path, alternatives in _arguments(schema):
        for alt in alternatives:
            items = alt.get("items")
            if "." not in path and alt.get("type") == "array" and isinstance(items, dict):
                item_alts = _resolve(items, schema.get("$defs", {}))
                if all(a.get("type") == "string" for a in item_alts):
                    yield path, _enums(item_alts)


async def test_one_string_for_a_list_of_strings_is_that_list_for_every_tool(
    tmp_path: Path, recorder: Recorder
) -> None:
    # `titles: "某题名"`, `seeds: "rec_…"`, `types: "journal"` were "Input should be a valid list"
    async with serving(tmp_path, recorder) as (c, schemas):
        checked: list[str] = []
        for name, schema in schemas.items():
            for path, enum in _string_lists(schema):
                ids = path in ("record_refs", "seeds")
                one, two = (enum[0], enum[1]) if enum else (REF, "rec_" + "2" * 24) if ids else ("甲篇", "乙篇")
                for sent, expected in (
                    (one, [one]),
                    (json.dumps([one, two]), [one, two]),
                    ([one, "", None, " "], [one]),
                ):
                    result = await c.call_tool(name, _call(name, path, sent))
                    assert not result.is_error, (name, path, sent, result.structured_content)
                    assert list(_value(recorder.parsed(name), path)) == expected, (name, path, sent)
                if enum or path in ("record_refs", "document_types", "source_tiers"):
                    # values that never hold a separator: one string of several is the list
                    await c.call_tool(name, _call(name, path, f"{one}, {two}、{one}"))
                    assert list(_value(recorder.parsed(name), path)) == [one, two, one], (name, path)
                checked.append(f"{name}.{path}")
        assert {"get_metadata.titles", "citation_graph.seeds", "get_citing.types", "verify_references.references"} <= set(
            checked
        )
        # a title holds commas: one string is one title
        await c.call_tool("get_metadata", {"titles": "违约金、定金与损害赔偿"})
        assert recorder.parsed("get_metadata").titles == ["违约金、定金与损害赔偿"]
        # a seed may be a title or a URL: it was cut at spaces and commas into seeds of one word
        for seed in ("Deep learning for legal judgment prediction", "https://kns.cnki.net/x?v=abc,def&y=1"):
            await c.call_tool("citation_graph", {"seeds": seed})
            assert list(recorder.parsed("citation_graph").seeds) == [seed]
        # handles only: the list (whole, `rec_…,rec_…` was looked up as one title)
        await c.call_tool("citation_graph", {"seeds": f"{REF}, FXYJ201906001 n3"})
        assert list(recorder.parsed("citation_graph").seeds) == [REF, "FXYJ201906001", "n3"]


WORDS = (("false", False), ("False", False), ("0", False), ("否", False), ("true", True), ("是", True), (" TRUE ", True))


async def test_a_boolean_written_as_a_word_is_read_as_meant_for_every_tool(tmp_path: Path, recorder: Recorder) -> None:
    # "false" is never true; 是/否 were "unable to interpret input", " TRUE " too
    async with serving(tmp_path, recorder) as (c, schemas):
        checked = 0
        for name, schema in schemas.items():
            for path, alternatives in _arguments(schema):
                if [a.get("type") for a in alternatives] != ["boolean"]:
                    continue
                for word, meant in WORDS:
                    result = await c.call_tool(name, _call(name, path, word))
                    assert not result.is_error, (name, path, word, result.structured_content)
                    assert _value(recorder.parsed(name), path) is meant, (name, path, word)
                checked += 1
        assert checked >= 8


async def test_a_whole_number_for_a_text_argument_is_its_text(
    tmp_path: Path, recorder: Recorder
) -> None:
    # the Inspector CLI sends `--tool-arg pages=3` as the number 3: "Input should be a valid string"
    async with serving(tmp_path, recorder) as (c, _):
        await c.call_tool("read_pdf_text", {"record_ref": REF, "pages": 3})
        assert recorder.parsed("read_pdf_text").pages == "3"
        await c.call_tool("search_library", {"query": 2020})
        assert recorder.parsed("search_library").query == "2020"
        await c.call_tool("search", {"query": "违约金", "limit": "１０", "year_from": " 2020 "})
        assert (recorder.parsed("search").limit, recorder.parsed("search").year_from) == (10, 2020)
        await c.call_tool("read_online_html", {"record_ref": REF, "section": 2})  # a name or an index: kept
        assert recorder.parsed("read_online_html").section == 2


REFUSED: tuple[tuple[str, dict[str, Any], str], ...] = (
    ("get_metadata", {"titles": "题名一\n题名二"}, "titles"),  # several titles, or one?
    ("search", {"query": "违约金", "concept_groups": ["违约金", "酌减"]}, "concept_groups.0"),  # AND or OR?
    ("search", {"query": "违约金", "year_from": "2020年"}, "year_from"),
    ("search", {"query": "违约金", "limit": 3.5}, "limit"),
    ("search", {"query": "违约金", "options": {"max_pages": 10000}}, "options.max_pages"),
    ("search", {"query": "违约金", "mode": "exact"}, "mode"),
    ("get_metadata", {"search_id": "s", "local_only": "maybe"}, "local_only"),
    ("search", {"query": None}, "query"),
)


async def test_an_ambiguous_or_wrong_form_is_refused_naming_the_field_and_what_was_received(tmp_path: Path) -> None:
    # the tools run here (no recorder): pydantic refuses before any work starts
    async with serving(tmp_path) as (c, _):
        for name, args, field in REFUSED:
            result = await c.call_tool(name, args)
            data = result.structured_content
            assert result.is_error and data is not None and data["code"] == "INVALID_ARGUMENT", (args, data)
            problem = data["details"]["errors"][0]
            assert problem["field"] == field and "received" in problem, data
            assert field in data["message"] and problem["received"] in data["message"]


async def test_a_synonym_or_an_option_given_at_the_top_level_names_the_argument_meant(
    tmp_path: Path, recorder: Recorder
) -> None:
    # `question`, `max_results` were refused naming nothing meant; `max_pages` (an option) too
    async with serving(tmp_path, recorder) as (c, _):
        for name, args, meant in (
            ("search", {"question": "违约金"}, {"question": "query"}),
            ("search", {"query": "违约金", "max_results": 10}, {"max_results": "limit"}),
            ("search", {"query": "违约金", "max_pages": 3}, {"max_pages": "options.max_pages"}),
            ("search_library", {"query": "违约金", "start_year": 2020}, {"start_year": "year_from"}),
            ("get_metadata", {"ids": [REF]}, {"ids": "record_refs"}),
        ):
            result = await c.call_tool(name, args)
            data = result.structured_content
            assert result.is_error and data is not None and data["code"] == "INVALID_ARGUMENT", data
            assert data["details"]["did_you_mean"] == meant
        assert recorder.calls == []


async def test_a_misspelt_option_names_the_option_meant(tmp_path: Path, recorder: Recorder) -> None:
    # `options: {"max_page": 3}` said only "Extra inputs are not permitted (收到 3)"
    async with serving(tmp_path, recorder) as (c, _):
        for name, args, meant in (
            ("search", {"query": "违约金", "options": {"max_page": 3}}, {"options.max_page": "options.max_pages"}),
            ("structured_search", {"expression": {"field": "title", "value": "违约金"}, "options": {"timeout": 60}},
             {"options.timeout": "options.timeout_seconds"}),
            ("search", {"query": "违约金", "options": {"limit": 5}}, {"options.limit": "limit"}),
        ):  # fmt: skip
            result = await c.call_tool(name, args)
            data = result.structured_content
            assert result.is_error and data is not None and data["code"] == "INVALID_ARGUMENT", data
            assert data["details"]["did_you_mean"] == meant, data
            assert data["details"]["field"] == next(iter(meant))
        assert recorder.calls == []


async def test_an_empty_concept_group_is_dropped_not_refused(tmp_path: Path, recorder: Recorder) -> None:
    # `concept_groups: [["违约金"], []]` was INVALID_PLAN ("每个概念组需要 1–6 个词"): a group with
    # no term adds no concept, so it is left out; a group of blank terms likewise
    async with serving(tmp_path, recorder) as (c, _):
        for groups, meant in (
            ([["违约金"], []], [["违约金"]]),
            ([["违约金", "酌减"], ["", " "], None], [["违约金", "酌减"]]),
            ([[]], []),  # none left: the groups left out (the server plans them)
        ):
            result = await c.call_tool("search", {"query": "违约金", "concept_groups": groups})
            assert not result.is_error, result.structured_content
            assert recorder.parsed("search").concept_groups == meant
