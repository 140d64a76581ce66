"""Tool inputs that pydantic's defaults let through: a boolean for any integer/number parameter of
any tool, an unbounded search_id, control characters in text sent to CNKI, bidi and other format
characters in file names. Each is a coded INVALID_* error before any work starts."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from cnki_mcp.errors import DocumentNotFound
from cnki_mcp.identity import Paper
from cnki_mcp.models import GridRow, NativeId
from cnki_mcp.pipeline.citations import resolve_paper
from cnki_mcp.server.app import build_server
from cnki_mcp.services import Services
from cnki_mcp.settings import Settings
from cnki_mcp.tool_args import booleans_for_numbers
from tests.contract.server_fakes import Harness

# A detail link as CNKI's result lists give it (`v=` token, its own query keys after it).
LINK = "https://kns.cnki.net/kcms2/article/abstract?v=" + "Ab3_" * 40 + "&uniplatform=NZKPT&language=CHS"


@pytest.fixture
async def stored(tmp_path: Path) -> AsyncIterator[tuple[Services, Paper]]:
    """Services on a fresh data directory holding one paper (file name FXYJ202101001, detail
    link LINK); closed after the test."""
    services = Services.open(Settings(data_dir=tmp_path / "data"))
    row = GridRow(title="违约金酌减的裁判规则", authors=["王某"], source="法学研究", year=2021, doc_type="期刊",
                  native=NativeId(dbname="CJFDLAST2021", filename="FXYJ202101001"), detail_url=LINK)  # fmt: skip
    [paper] = services.store.upsert_from_grid([row], services.clock.now())
    yield services, paper
    await services.close()

# valid arguments of each tool that has integer/number parameters: only the boolean is wrong
BASE: dict[str, dict[str, Any]] = {
    "search": {"query": "违约金"},
    "structured_search": {"expression": {"field": "title", "value": "违约金"}},
    "search_results": {"search_id": "s"},
    "search_library": {"query": "违约金"},
    "get_metadata": {"search_id": "s"},
    "read_online_html": {"record_ref": "rec_x"},
    "download_paper": {"record_ref": "rec_x"},
    "read_pdf_text": {"path": "a.pdf"},
    "export_citations": {"search_id": "s"},
    "get_references": {"paper": "rec_x"},
    "get_citing": {"paper": "rec_x"},
    "citation_graph": {"seeds": ["rec_x"]},
    "find_citation_path": {"source": "rec_x", "target": "rec_y"},
    "operation_status": {},
    "operation_control": {"action": "continue", "operation_id": "op_" + "0" * 24},
    "list_watches": {},
    "check_updates": {"watch_id": "all"},
}


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path / "data", inline_wait=5.0)


def _error(result: Any) -> dict[str, Any]:
    assert result.is_error, result
    data = result.structured_content
    assert data is not None, result.content
    return data


def _numeric_paths(schema: dict[str, Any], defs: dict[str, Any], prefix: str = "") -> list[str]:
    out: list[str] = []
    for name, prop in (schema.get("properties") or {}).items():
        alternatives = [prop, *prop.get("anyOf", [])]
        for alt in alternatives:
            if "$ref" in alt:
                target = defs[alt["$ref"].split("/")[-1]]
                out.extend(_numeric_paths(target, defs, f"{prefix}{name}."))
            elif alt.get("type") in ("integer", "number"):
                out.append(prefix + name)
                break
    return out


def _nest(path: str, value: Any) -> dict[str, Any]:
    head, _, rest = path.partition(".")
    return {head: _nest(rest, value) if rest else value}


async def test_a_boolean_for_any_integer_or_number_input_of_any_tool_is_refused(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        checked: dict[str, list[str]] = {}
        for name, tool in tools.items():
            schema = tool.input_schema
            paths = _numeric_paths(schema, schema.get("$defs", {}))
            for path in paths:
                for flag in (True, False):
                    args = {**BASE[name], **_nest(path, flag)}
                    if "." in path:  # nested option: keep the other options' defaults
                        args = {**BASE[name], path.split(".")[0]: _nest(path, flag)[path.split(".")[0]]}
                    data = _error(await client.call_tool(name, args))
                    assert data["code"] == "INVALID_ARGUMENT", (name, path, data)
                    assert path in [e["field"] for e in data["details"]["errors"]], (name, path, data)
                checked.setdefault(name, []).extend(paths)
        assert h.backend.calls == [] and h.pipeline.plans == []
    assert set(checked) == set(BASE)  # every tool with numbers was exercised
    assert {"limit", "options.max_pages", "year_from"} <= set(checked["search"])
    assert "section" in checked["read_online_html"] and "wait_seconds" in checked["download_paper"]


def test_booleans_are_found_in_nested_options_and_unions_but_not_for_boolean_fields() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "flag": {"type": "boolean"},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
            "opts": {"anyOf": [{"$ref": "#/$defs/Opts"}, {"type": "null"}]},
            "many": {"type": "array", "items": {"type": "number"}},
        },
        "$defs": {"Opts": {"type": "object", "properties": {"m": {"type": "number"}}}},
    }
    args = {"n": True, "flag": True, "either": False, "opts": {"m": True}, "many": [1, True]}
    assert booleans_for_numbers(schema, args) == ["n", "either", "opts.m", "many.1"]
    assert booleans_for_numbers(schema, {"n": 1, "flag": False, "either": 0, "opts": {"m": 2.5}}) == []


async def test_an_overlong_search_id_is_refused_and_never_echoed(h: Harness) -> None:
    huge = "s" * 1_000_000
    async with Client(build_server(h.open)) as client:
        for name in ("get_metadata", "search_results", "export_citations"):
            result = await client.call_tool(name, {"search_id": huge})
            data = _error(result)
            assert data["code"] == "INVALID_ARGUMENT", (name, data)
            assert len(json.dumps(data)) < 10_000, name
        assert h.backend.calls == []


async def test_control_characters_in_text_sent_to_cnki_are_refused_before_any_work(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        for args in ({"query": "违约金\x00调整"}, {"query": "违约金", "concept_groups": [["违约\x1b金"]]}):
            data = _error(await client.call_tool("search", args))
            assert data["code"] == "INVALID_ARGUMENT", data
        data = _error(
            await client.call_tool("structured_search", {"expression": {"field": "title", "value": "a\x00b"}})
        )
        assert data["code"] == "INVALID_CONDITION"
        data = _error(await client.call_tool("get_metadata", {"titles": ["题名\x00"]}))
        assert data["code"] == "INVALID_ARGUMENT"
        assert h.pipeline.plans == []
        ok = await client.call_tool("search", {"query": "违约金\t调整\n研究"})  # whitespace is fine
        assert not ok.is_error
        assert len(h.pipeline.plans) == 1
        assert h.backend.calls == []


@pytest.mark.parametrize("char", ["\u202e", "\u202d", "\u2066", "\u200b", "\u200f", "\ufeff", "\u2028"])
async def test_bidi_and_format_characters_in_file_names_are_refused(h: Harness, char: str) -> None:
    name = f"report{char}fdp.pdf"
    async with Client(build_server(h.open)) as client:
        for tool, args in (
            ("download_paper", {"record_ref": "rec_x", "filename": name}),
            ("download_paper", {"record_ref": "rec_x", "format": "pdf", "subdirectory": f"a{char}b"}),
            ("export_citations", {"search_id": "s", "filename": f"refs{char}.bib"}),
        ):
            data = _error(await client.call_tool(tool, args))
            assert data["code"] == "INVALID_ARGUMENT", (tool, data)
        assert h.backend.calls == []


async def test_a_detail_link_given_as_a_record_ref_names_the_argument_and_the_stored_papers_ref(stored: tuple[Services, Paper]) -> None:
    services, paper = stored
    link = LINK
    async with Client(build_server(lambda: services)) as client:
        # the link a tool showed (its own query keys dropped or not), in record_refs
        shown = link.split("&")[0]
        refused = await client.call_tool("get_metadata", {"record_refs": [shown], "local_only": True})
        twice = await client.call_tool("get_metadata", {"record_refs": [shown, shown], "local_only": True})
        unknown = await client.call_tool("download_paper", {"record_ref": shown.replace("Ab3_", "Zz9_", 1)})
    error = json.loads(refused.content[0].text)
    assert refused.is_error and error["code"] == "INVALID_ARGUMENT" and error["details"]["field"] == "record_refs"
    assert error["details"]["next_step"] == f"get_metadata(record_refs=['{paper.record_ref}'], local_only=True)"
    # the same stored paper's link given twice is still a stored paper's link
    both = json.loads(twice.content[0].text)["details"]["next_step"]
    assert both == f"get_metadata(record_refs=['{paper.record_ref}', '{paper.record_ref}'], local_only=True)"
    other = json.loads(unknown.content[0].text)
    assert unknown.is_error and other["code"] == "INVALID_ARGUMENT" and other["details"]["field"] == "record_ref"
    assert "next_step" not in other["details"]


async def test_a_kcms_link_naming_a_stored_paper_by_its_file_name_is_that_paper(stored: tuple[Services, Paper]) -> None:
    # an older detail link names the paper by FileName (any key and value case), not by a `v` token
    services, paper = stored
    link = "http://kns.cnki.net/kcms/detail/detail.aspx?dbcode=CJFD&DbName=CJFDLAST2021&FileName=fxyj202101001&v="
    async with Client(build_server(lambda: services)) as client:
        refused = await client.call_tool("get_metadata", {"record_refs": [link], "local_only": True})
        assert resolve_paper(services.store, link).record_ref == paper.record_ref  # get_references, citation_graph
    error = json.loads(refused.content[0].text)
    assert error["code"] == "INVALID_ARGUMENT" and error["details"]["record_refs"] == [paper.record_ref]
    assert error["details"]["next_step"] == f"get_metadata(record_refs=['{paper.record_ref}'], local_only=True)"


def test_a_kcms_link_naming_a_paper_not_stored_is_not_sent_as_a_title(stored: tuple[Services, Paper]) -> None:
    # a thesis file name is all digits: it fell through to the title path, whose next_step asked
    # CNKI for the file name as a title (a request that cannot find the paper)
    services, _ = stored
    link = "https://kns.cnki.net/kcms/detail/detail.aspx?dbcode=CMFD&dbname=CMFD201902&filename=1019012345.nh"
    with pytest.raises(DocumentNotFound) as refused:
        resolve_paper(services.store, link)
    assert refused.value.details["paper"] == link and "next_step" not in refused.value.details


async def test_a_detail_link_given_as_a_title_is_refused_with_the_call_that_names_its_paper(stored: tuple[Services, Paper]) -> None:
    # get_metadata(titles=[link]) sent the link to CNKI as a title search: a request spent, and
    # DOCUMENT_NOT_FOUND for a paper the store held
    services, paper = stored
    link = LINK
    shown = link.split("&")[0]
    async with Client(build_server(lambda: services)) as client:
        meta = await client.call_tool("get_metadata", {"titles": [shown, "另一篇"], "local_only": True})
        read = await client.call_tool("read_online_html", {"title": shown})
        unknown = await client.call_tool("download_paper", {"title": shown.replace("Ab3_", "Zz9_", 1)})
        error = json.loads(meta.content[0].text)
        assert meta.is_error and error["code"] == "INVALID_ARGUMENT" and error["details"]["field"] == "titles"
        step = f"get_metadata(local_only=True, record_refs=['{paper.record_ref}'], titles=['另一篇'])"
        assert error["details"]["next_step"] == step
        followed = await client.call_tool(
            "get_metadata", {"local_only": True, "record_refs": [paper.record_ref], "titles": ["另一篇"]}
        )
        assert not followed.is_error
    one = json.loads(read.content[0].text)
    assert read.is_error and one["code"] == "INVALID_ARGUMENT" and one["details"]["field"] == "title"
    assert one["details"]["next_step"] == f"read_online_html(record_ref='{paper.record_ref}')"
    other = json.loads(unknown.content[0].text)
    assert unknown.is_error and other["code"] == "INVALID_ARGUMENT" and "next_step" not in other["details"]


async def test_a_record_ref_or_a_stored_file_name_given_as_a_title_names_its_paper(stored: tuple[Services, Paper]) -> None:
    # a graph node's filename or a record_ref put in titles: DOCUMENT_NOT_FOUND (and, without
    # local_only, a title search spent) for a paper the store held
    services, paper = stored
    async with Client(build_server(lambda: services)) as client:
        by_ref = await client.call_tool("get_metadata", {"titles": [paper.record_ref], "local_only": True})
        by_name = await client.call_tool("download_paper", {"title": "FXYJ202101001"})
        # the same shape that is no stored paper's file name may be a title: it is looked up
        shaped = await client.call_tool("get_metadata", {"titles": ["ISO9001"], "local_only": True})
    ref = json.loads(by_ref.content[0].text)
    assert by_ref.is_error and ref["code"] == "INVALID_ARGUMENT"
    assert ref["details"]["next_step"] == f"get_metadata(local_only=True, record_refs=['{paper.record_ref}'])"
    name = json.loads(by_name.content[0].text)
    assert by_name.is_error and name["code"] == "INVALID_ARGUMENT"
    assert name["details"]["next_step"] == f"download_paper(record_ref='{paper.record_ref}')"
    assert not shaped.is_error


async def test_a_stored_papers_file_name_given_as_a_record_ref_names_its_record_ref(stored: tuple[Services, Paper]) -> None:
    # a citation list entry or graph node known as a stored paper by its file name: the tools said
    # "本地没有这个 record_ref" (DOCUMENT_NOT_FOUND) for a paper the store held
    services, paper = stored
    async with Client(build_server(lambda: services)) as client:
        meta = await client.call_tool("get_metadata", {"record_refs": ["fxyj202101001"], "local_only": True})
        other = await client.call_tool("export_citations", {"record_refs": ["ABCD20200101"]})
    error = json.loads(meta.content[0].text)
    assert meta.is_error and error["code"] == "INVALID_ARGUMENT" and error["details"]["field"] == "record_refs"
    assert error["details"]["next_step"] == f"get_metadata(record_refs=['{paper.record_ref}'], local_only=True)"
    # a file name no stored paper has is left to the tool, which says the paper is not stored
    assert json.loads(other.content[0].text)["code"] == "DOCUMENT_NOT_FOUND"


async def test_an_id_with_space_around_it_names_what_it_names_without_the_space(stored: tuple[Services, Paper]) -> None:
    services, paper = stored
    async with Client(build_server(lambda: services)) as client:
        meta = await client.call_tool("get_metadata", {"record_refs": [f" {paper.record_ref}\n"], "local_only": True})
        assert meta.structured_content["status"] == "completed", meta.structured_content
        op = meta.structured_content["operation_id"]
        status = await client.call_tool("operation_status", {"operation_id": f"\t{op} "})
        pdf = await client.call_tool("read_pdf_text", {"record_ref": f" {paper.record_ref} "})
    assert not status.is_error and status.structured_content["operation_id"] == op
    # the paper is found: what it lacks is a downloaded PDF (not DOCUMENT_NOT_FOUND)
    assert pdf.is_error and json.loads(pdf.content[0].text)["code"] == "INVALID_ARGUMENT"


async def test_an_operation_id_of_another_kind_as_a_search_id_is_told_to_operation_status(tmp_path: Path) -> None:
    services = Services.open(Settings(data_dir=tmp_path / "data"))
    async with Client(build_server(lambda: services)) as client:
        meta = await client.call_tool("get_metadata", {"titles": ["某篇文献"], "local_only": True})
        op = meta.structured_content["operation_id"]
        readers: tuple[tuple[str, dict[str, Any]], ...] = (
            ("search_results", {}), ("get_metadata", {}), ("search_library", {"query": "违约金"}),
            ("export_search_log", {}), ("watch_search", {}),
        )  # fmt: skip
        answers = [await client.call_tool(name, {"search_id": f" {op} ", **extra}) for name, extra in readers]
    for answer in answers:
        error = json.loads(answer.content[0].text)
        assert answer.is_error and error["code"] == "SEARCH_NOT_FOUND", error
        assert error["details"]["operation_kind"] == "metadata"
        assert error["details"]["next_step"] == f"operation_status(operation_id='{op}')"
