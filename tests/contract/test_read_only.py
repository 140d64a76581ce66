"""Read-only mode through the SDK's in-memory client: the hidden tools are not listed and are
refused when called anyway (READ_ONLY_MODE), refused arguments likewise; diagnostics shows the
mode; no advice in a result names a hidden tool or a refused argument (a client following it
would meet READ_ONLY_MODE). Without the mode every tool stays listed (DESIGN.md "Read-only
mode")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from cnki_mcp.server.app import TOOL_NAMES, build_server
from cnki_mcp.server.readonly import HIDDEN_TOOLS, REFUSED_ARGUMENTS
from cnki_mcp.settings import load_settings
from tests.contract.server_fakes import Harness
from tests.contract.test_server_feature_tools import WHEN, row


def _harness(tmp_path: Path, read_only: bool) -> Harness:
    h = Harness(tmp_path / "data", inline_wait=5.0)
    h.settings = h.settings.with_(read_only=read_only)
    return h


def _code(result: Any) -> str:
    assert result.is_error, result
    return str(result.structured_content["code"])


def test_read_only_is_read_from_the_environment(tmp_path: Path) -> None:
    on = load_settings({"CNKI_DATA_DIR": str(tmp_path), "CNKI_READ_ONLY": "1"})
    off = load_settings({"CNKI_DATA_DIR": str(tmp_path)})
    assert on.read_only is True and off.read_only is False


async def test_read_only_hides_download_and_reader_tools(tmp_path: Path) -> None:
    h = _harness(tmp_path, read_only=True)
    async with Client(build_server(h.open)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        diag = await client.call_tool("diagnostics", {})
    assert {"download_paper", "read_online_html"} == HIDDEN_TOOLS
    assert names == set(TOOL_NAMES) - HIDDEN_TOOLS
    assert diag.structured_content["settings"]["read_only"] is True


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("download_paper", {"record_ref": "rec_0"}),
        ("read_online_html", {"record_ref": "rec_0"}),
        ("export_citations", {"record_refs": ["rec_0"], "format": "bibtex", "filename": "x"}),
    ],
)
async def test_read_only_refuses_hidden_tools_and_file_arguments(
    tmp_path: Path, tool: str, arguments: dict[str, Any]
) -> None:
    h = _harness(tmp_path, read_only=True)
    async with Client(build_server(h.open)) as client:
        result = await client.call_tool(tool, arguments)
    assert _code(result) == "READ_ONLY_MODE"
    assert [c for c in h.backend.calls if c != "close"] == []
    assert not (tmp_path / "data" / "exports").exists()


async def test_without_read_only_every_tool_is_listed(tmp_path: Path) -> None:
    h = _harness(tmp_path, read_only=False)
    async with Client(build_server(h.open)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        diag = await client.call_tool("diagnostics", {})
        download = await client.call_tool("download_paper", {"record_ref": "rec_0"})
    assert names == set(TOOL_NAMES)
    assert diag.structured_content["settings"]["read_only"] is False
    # not refused for read-only reasons (the fake store has no such paper)
    assert _code(download) != "READ_ONLY_MODE"


def refused_in(advice: str) -> list[str]:
    """The hidden tools and refused arguments (`tool`, `tool.argument`) a piece of advice names."""
    named = [tool for tool in sorted(HIDDEN_TOOLS) if tool in advice]
    named += [f"{tool}.{arg}" for tool, args in REFUSED_ARGUMENTS.items() for arg in args if arg in advice]
    return named


def test_refused_in_finds_what_read_only_mode_refuses() -> None:
    assert refused_in("用 filename 保存为文件") == ["export_citations.filename", "citation_graph.filename"]
    assert refused_in("请先调用 download_paper(format='pdf')") == ["download_paper"]
    assert refused_in("分批导出（search_id 配合 offset/limit）") == []


async def test_read_only_results_advise_nothing_read_only_mode_refuses(tmp_path: Path) -> None:
    """An export's next_step named `filename`, an oversized export's OUTPUT_TOO_LARGE asked for
    one (its only way out, refused), and read_pdf_text without a stored PDF sent the client to
    download_paper: each followed literally was READ_ONLY_MODE."""
    h = _harness(tmp_path, read_only=True)
    async with Client(build_server(h.open)) as client:
        assert h.services is not None
        big = "违约金" * 1_200  # ~10.8 KB of UTF-8 per record in the json format
        refs = [p.record_ref for p in h.services.store.upsert_from_grid([row(i, abstract=big) for i in range(60)], WHEN)]
        small = (await client.call_tool("export_citations", {"record_refs": refs[:2]})).structured_content
        too_big = await client.call_tool("export_citations", {"record_refs": refs, "format": "json"})
        no_pdf = await client.call_tool("read_pdf_text", {"record_ref": refs[0]})
    assert small["status"] == "completed" and small["result"]["text"]
    assert refused_in(small["next_step"] or "") == []
    assert _code(too_big) == "OUTPUT_TOO_LARGE" and too_big.structured_content["details"]["read_only"] is True
    assert refused_in(too_big.structured_content["message"]) == []
    assert _code(no_pdf) == "INVALID_ARGUMENT" and refused_in(no_pdf.structured_content["message"]) == []


async def test_read_only_a_pdf_without_text_does_not_advise_the_hidden_reader(tmp_path: Path) -> None:
    from pypdf import PdfWriter

    downloads = tmp_path / "data" / "downloads"
    downloads.mkdir(parents=True)
    writer = PdfWriter()
    writer.add_blank_page(595, 842)  # a scanned page: images only, no text
    writer.write(str(downloads / "scan.pdf"))
    for read_only, advised in ((True, []), (False, ["read_online_html"])):
        h = _harness(tmp_path, read_only=read_only)
        async with Client(build_server(h.open)) as client:
            scan = await client.call_tool("read_pdf_text", {"path": "scan.pdf"})
        assert _code(scan) == "INVALID_FILE" and scan.structured_content["details"]["reason"] == "no_text"
        assert refused_in(scan.structured_content["message"]) == advised, read_only


async def test_without_read_only_the_same_results_advise_filename_and_download(tmp_path: Path) -> None:
    h = _harness(tmp_path, read_only=False)
    async with Client(build_server(h.open)) as client:
        assert h.services is not None
        refs = [p.record_ref for p in h.services.store.upsert_from_grid([row(1, doc_type="博士")], WHEN)]  # no 卷期页 to ask for
        small = (await client.call_tool("export_citations", {"record_refs": refs})).structured_content
        no_pdf = await client.call_tool("read_pdf_text", {"record_ref": refs[0]})
    assert "export_citations.filename" in refused_in(small["next_step"])
    assert refused_in(no_pdf.structured_content["message"]) == ["download_paper"]


async def test_read_only_a_pdf_of_garbled_text_does_not_advise_the_hidden_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A font without a ToUnicode map gives glyph ids, not text: the warning's way out is the HTML
    reader, which read-only mode hides (its advice then names the abstract)."""
    from cnki_mcp.sim.corpus import Corpus
    from cnki_mcp.sim.pages import files

    monkeypatch.setattr(files, "_ucs2_hex", lambda text: "".join(f"{0x0A00 + (ord(c) * 7919) % 0x1F00:04X}" for c in text))
    raw = files.pdf_bytes(Corpus.load().by_id["r0021"]).replace(b" /ToUnicode ", b" /XToUnicod ")
    downloads = tmp_path / "data" / "downloads"
    downloads.mkdir(parents=True)
    (downloads / "glyphs.pdf").write_bytes(raw.replace(b"/Encoding /UniGB-UCS2-H", b"/Encoding /Identity-H  "))
    for read_only, advised in ((True, []), (False, ["read_online_html"])):
        h = _harness(tmp_path, read_only=read_only)
        async with Client(build_server(h.open)) as client:
            got = (await client.call_tool("read_pdf_text", {"path": "glyphs.pdf", "pages": "1"})).structured_content
        assert got["garbled_pages"] == [1], read_only
        assert [t for w in got["warnings"] for t in refused_in(w)] == advised, read_only
