"""read_online_html, download_paper, read_pdf_text, export_citations and link_references through
the SDK's in-memory Client: schemas and annotations, coded bad-argument errors that never start
the browser, the fixed operation budgets, every export format on stored papers, saving under
exports/ (FILE_EXISTS, no traversal, OUTPUT_TOO_LARGE) and local-only linking. The reader and the
downloader are fakes injected through Services; the store, the jobs and the cite code are real."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from cnki_mcp.cite import EXTENSIONS, FORMATS, export
from cnki_mcp.clock import SystemClock
from cnki_mcp.files import archive, safe_file_name
from cnki_mcp.models import Author, DetailPage, GridRow, NativeId
from cnki_mcp.parse._html import parse_html
from cnki_mcp.parse.detail import parse_detail
from cnki_mcp.parse.reader import parse_reader
from cnki_mcp.reading_service import ReadResult, page_body
from cnki_mcp.server.app import build_server
from cnki_mcp.services import Services
from cnki_mcp.settings import Settings
from cnki_mcp.sim.corpus import Corpus
from cnki_mcp.sim.pages.files import pdf_bytes
from cnki_mcp.site.downloading import DownloadResult
from tests.conftest import read_real
from tests.contract.server_fakes import FakeBackend, FakePipeline

FEATURE_TOOLS = {"read_online_html", "download_paper", "read_pdf_text", "export_citations", "link_references"}
READ_ONLY = {"read_online_html", "read_pdf_text", "link_references"}
LOCAL_ONLY = {"read_pdf_text"}
WHEN = datetime(2026, 1, 1, tzinfo=UTC)
HEADINGS = ["一、引言", "二、违约金的功能", "三、结论"]
PARA = "违约金调整应当以实际损失为基础，兼顾合同履行情况与当事人过错。" * 3


def reader_page() -> Any:
    body = "".join(f"<h2>{t}</h2><p>{t}：{PARA}</p>" for t in HEADINGS)
    toc = "".join(f'<span class="tit">{t}</span>' for t in HEADINGS)
    html = (
        '<html><head><meta name="citation_title" content="违约金调整"></head><body>'
        f'<div class="catalogboxs">{toc}</div><div id="paperRead">{body}</div></body></html>'
    )
    return parse_reader(html, "https://kns.cnki.net/reader/xml?invoice=SECRET&nonce=N")


class FakeReading:
    """ReadingService stand-in: pages one parsed reader body, records its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def read(
        self, record_ref: str, *, section: Any = None, offset: int = 0, max_characters: int = 20_000, op: Any = None
    ) -> ReadResult:
        self.calls.append((record_ref, op.kind.value if op is not None else None))
        return page_body(reader_page(), record_ref, observed_at=WHEN, source="reader", section=section,
                         offset=offset, max_characters=max_characters)  # fmt: skip


class FakeDownloader:
    """Downloader stand-in: archives the simulator's PDF of r0001 like the real one would."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.calls: list[dict[str, Any]] = []
        self.closed = False

    async def download(self, record_ref: str, **kwargs: Any) -> DownloadResult:
        self.calls.append({"record_ref": record_ref, **{k: v for k, v in kwargs.items() if k != "op"}})
        store, data_dir = self.services.store, self.services.settings.data_dir
        stored = store.download_for(record_ref, "pdf")
        if stored is not None:
            return DownloadResult(record_ref=record_ref, format="pdf", path=str(stored.path), bytes=stored.size,
                                  sha256=stored.sha256, source="cache", observed_at=stored.observed_at)  # fmt: skip
        src = data_dir / "incoming.pdf"
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_bytes(pdf_bytes(Corpus.load().by_id["r0001"]))
        paper = store.get(record_ref)
        assert paper is not None
        done = archive(src, data_dir, kwargs.get("subdirectory"), safe_file_name(paper.title, record_ref, "pdf"))
        store.record_download(record_ref, "pdf", done.path, done.sha256, done.bytes, WHEN)
        return DownloadResult(record_ref=record_ref, format="pdf", path=str(done.path), bytes=done.bytes,
                              sha256=done.sha256, source="download", observed_at=WHEN)  # fmt: skip

    async def close(self) -> None:
        self.closed = True


class Harness:
    def __init__(self, data_dir: Path) -> None:
        self.settings = Settings(data_dir=data_dir, inline_wait_seconds=5.0, request_interval_ms=0)
        self.backend = FakeBackend()
        self.reading = FakeReading()
        self.downloader: FakeDownloader | None = None
        self.services: Services | None = None

    def _downloader(self, services: Services) -> FakeDownloader:
        self.downloader = FakeDownloader(services)
        return self.downloader

    def open(self) -> Services:
        self.services = Services.open(
            self.settings, clock=SystemClock(), backend=self.backend,
            pipeline_factory=lambda _s: FakePipeline(),
            reading_factory=lambda _s: self.reading, downloader_factory=self._downloader,
        )  # fmt: skip
        return self.services

    def add_papers(self, rows: list[GridRow]) -> list[str]:
        assert self.services is not None
        return [p.record_ref for p in self.services.store.upsert_from_grid(rows, WHEN)]


def row(i: int, **extra: Any) -> GridRow:
    data: dict[str, Any] = {
        "title": f"违约金调整的基本标准研究{i}",
        "detail_url": f"https://kns.cnki.net/kcms2/article/abstract?v=V{i}&dbcode=CJFD&filename=WYJ{i:04d}",
        "native": NativeId(dbcode="CJFD", filename=f"WYJ{i:04d}"),
        "authors": ["王利明", f"作者{i}"],
        "source": "法学研究",
        "year": 2020 + i % 5,
        "doc_type": "期刊",
    }
    data.update(extra)
    return GridRow(**data)


def expected_record(ref: str, r: GridRow) -> dict[str, Any]:
    """What one stored row means as a citation, written out independently of the tool: its
    kcms2 link carries an expiring `v` token, so the citation has no URL."""
    return {"record_ref": ref, "title": r.title, "authors": r.authors, "source": r.source, "year": r.year,
            "doc_type": r.doc_type, "url": None}  # fmt: skip


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path / "data")


def _error(result: Any) -> dict[str, Any]:
    assert result.is_error, result
    data = result.structured_content
    assert data is not None and data["status"] == "failed", result.content
    assert data["errors"][0]["code"] == data["code"]
    return data


def _ok(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    data = result.structured_content
    assert data is not None
    return data


# --- schema and annotations ------------------------------------------------------------


async def test_feature_tools_are_listed_with_annotations_costs_and_contract_limits(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) >= FEATURE_TOOLS
    for name in FEATURE_TOOLS:
        tool = tools[name]
        assert tool.annotations is not None and tool.output_schema is not None, name
        assert bool(tool.annotations.read_only_hint) == (name in READ_ONLY), name
        assert bool(tool.annotations.open_world_hint) == (name not in LOCAL_ONLY), name
        assert tool.description is not None
        assert ("本地" in tool.description) or ("访问知网" in tool.description), name
    read = tools["read_online_html"].input_schema["properties"]
    assert read["max_characters"]["default"] == 20_000 and read["max_characters"]["maximum"] == 200_000
    download = tools["download_paper"].input_schema["properties"]
    assert download["wait_seconds"]["maximum"] == 900 and download["wait_seconds"]["default"] == 120
    assert set(download["format"]["enum"]) == {"auto", "pdf", "caj"}
    export_props = tools["export_citations"].input_schema["properties"]
    assert export_props["format"]["default"] == "gbt7714"
    assert export_props["titles"]["maxItems"] == 100
    assert tools["link_references"].input_schema["required"] == ["text"]
    # the published output schema is the relaxed envelope; the reader URL stays out of the model itself
    assert "url" not in json.dumps(tools["read_online_html"].output_schema)
    assert "url" not in ReadResult.model_json_schema()["properties"]


# --- bad arguments ---------------------------------------------------------------------

BAD_ARGUMENTS: list[tuple[str, dict[str, Any], str]] = [
    ("read_online_html", {}, "INVALID_ARGUMENT"),
    ("read_online_html", {"record_ref": "rec_x", "title": "题名"}, "INVALID_ARGUMENT"),
    ("read_online_html", {"record_ref": "rec_x", "max_characters": 0}, "INVALID_ARGUMENT"),
    ("read_online_html", {"record_ref": "rec_x", "max_characters": 200_001}, "INVALID_ARGUMENT"),
    ("read_online_html", {"record_ref": "rec_x", "offset": -1}, "INVALID_ARGUMENT"),
    ("read_online_html", {"record_ref": "rec_000000000000000000000000"}, "DOCUMENT_NOT_FOUND"),
    ("download_paper", {}, "INVALID_ARGUMENT"),
    ("download_paper", {"record_ref": "rec_x", "format": "doc"}, "INVALID_ARGUMENT"),
    ("download_paper", {"record_ref": "rec_x", "wait_seconds": 0}, "INVALID_ARGUMENT"),
    ("download_paper", {"record_ref": "rec_x", "wait_seconds": 901}, "INVALID_ARGUMENT"),
    ("download_paper", {"record_ref": "rec_x", "filename": "../x.pdf"}, "INVALID_ARGUMENT"),
    ("download_paper", {"record_ref": "rec_x", "format": "pdf", "filename": "x.caj"}, "INVALID_ARGUMENT"),
    ("download_paper", {"record_ref": "rec_x", "subdirectory": "../../etc"}, "INVALID_ARGUMENT"),
    ("download_paper", {"record_ref": "rec_x", "subdirectory": "/tmp"}, "INVALID_ARGUMENT"),
    ("download_paper", {"record_ref": "rec_000000000000000000000000"}, "DOCUMENT_NOT_FOUND"),
    ("read_pdf_text", {}, "INVALID_ARGUMENT"),
    ("read_pdf_text", {"path": "a.pdf", "record_ref": "rec_x"}, "INVALID_ARGUMENT"),
    ("read_pdf_text", {"path": "../../../etc/passwd"}, "INVALID_ARGUMENT"),
    ("read_pdf_text", {"path": "missing.pdf"}, "INVALID_ARGUMENT"),
    ("read_pdf_text", {"path": "a.pdf", "max_characters": 0}, "INVALID_ARGUMENT"),
    ("read_pdf_text", {"record_ref": "rec_000000000000000000000000"}, "DOCUMENT_NOT_FOUND"),
    ("export_citations", {}, "INVALID_ARGUMENT"),
    ("export_citations", {"record_refs": ["rec_x"], "format": "docx"}, "FORMAT_UNAVAILABLE"),
    ("export_citations", {"record_refs": ["rec_x"], "format": "custom"}, "INVALID_TEMPLATE"),
    ("export_citations", {"record_refs": ["rec_x"], "format": "custom", "template": "{x.__class__}"}, "INVALID_TEMPLATE"),
    ("export_citations", {"record_refs": ["rec_x"], "missing_fields": "hide"}, "INVALID_ARGUMENT"),
    ("export_citations", {"titles": ["t"] * 101}, "INVALID_ARGUMENT"),
    ("export_citations", {"titles": ["   "]}, "INVALID_ARGUMENT"),
    ("export_citations", {"titles": ["《》"]}, "INVALID_ARGUMENT"),
    ("export_citations", {"search_id": "op_000000000000000000000000"}, "SEARCH_NOT_FOUND"),
    ("link_references", {}, "INVALID_ARGUMENT"),
    ("link_references", {"text": "《甲》" * 200_000}, "INPUT_TOO_LARGE"),
    ("link_references", {"text": "".join(f"《题名{i}》" for i in range(101))}, "TOO_MANY_REFERENCES"),
]


async def test_bad_arguments_of_feature_tools_are_coded_errors_and_start_no_browser(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        for name, args, code in BAD_ARGUMENTS:
            data = _error(await client.call_tool(name, args))
            assert data["code"] == code, (name, args, data)
        assert {name for name, _, _ in BAD_ARGUMENTS} == FEATURE_TOOLS
        services = h.services
        assert services is not None
        assert services.host.started is False
        assert h.backend.calls == [] and h.reading.calls == [] and h.downloader is None
        assert services.jobs.status(None) is None
    assert not (h.settings.data_dir / "downloads").exists()


async def test_title_matching_several_stored_papers_is_identity_ambiguous_before_any_operation(
    h: Harness,
) -> None:
    async with Client(build_server(h.open)) as client:
        h.add_papers([row(1), row(2, title=row(1).title, native=NativeId(dbcode="CJFD", filename="OTHER"))])
        for tool in ("read_online_html", "download_paper"):
            data = _error(await client.call_tool(tool, {"title": row(1).title}))
            assert data["code"] == "IDENTITY_AMBIGUOUS"
        assert h.reading.calls == [] and h.backend.calls == []


async def test_an_ambiguous_title_names_each_candidates_record_ref_source_and_year(h: Harness) -> None:
    twin = row(2, title=row(1).title, source="中国法学", native=NativeId(dbcode="CJFD", filename="OTHER"))
    async with Client(build_server(h.open)) as client:
        refs = h.add_papers([row(1), twin])
        for tool in ("read_online_html", "download_paper"):
            data = _error(await client.call_tool(tool, {"title": row(1).title}))
            assert data["code"] == "IDENTITY_AMBIGUOUS" and data["details"]["count"] == 2
            shown = {c["record_ref"]: c for c in data["details"]["candidates"]}
            assert set(shown) == set(refs)
            for ref, r in zip(refs, (row(1), twin), strict=True):
                assert (shown[ref]["title"], shown[ref]["source"], shown[ref]["year"]) == (r.title, r.source, r.year)
                assert shown[ref]["authors"] == r.authors
            assert "record_ref" in data["message"]
            # the advice is followed: the same tool by one candidate's record_ref is not ambiguous
        data = _ok(await client.call_tool("read_online_html", {"record_ref": refs[1]}))
        assert data["status"] == "completed"


# --- reading and downloading -----------------------------------------------------------


async def test_read_online_html_is_a_read_operation_with_its_fixed_budget_and_no_reader_url(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        (ref,) = h.add_papers([row(1)])
        result = await client.call_tool("read_online_html", {"record_ref": ref, "section": "二、违约金的功能"})
        data = _ok(result)
        import jsonschema

        jsonschema.validate(data, tools["read_online_html"].output_schema)
        assert data["kind"] == "read" and data["status"] == "completed"
        assert data["budget"]["max_requests"] == 60 and data["budget"]["timeout_seconds"] == 900
        body = data["result"]
        assert body["record_ref"] == ref and body["section"]["title"] == "二、违约金的功能"
        assert [s["title"] for s in body["sections"]] == HEADINGS
        assert "三、结论" not in body["text"] and body["complete_article"] is None
        assert "invoice" not in json.dumps(data, ensure_ascii=False) and "SECRET" not in result.content[0].text

        by_title = _ok(await client.call_tool("read_online_html", {"title": row(1).title, "max_characters": 10}))
        assert by_title["result"]["record_ref"] == ref and len(by_title["result"]["text"]) == 10
        assert by_title["result"]["next_offset"] == 10
        skip = _ok(await client.call_tool("read_online_html", {"record_ref": ref, "on_verification": "skip"}))
        assert skip["budget"]["on_verification"] == "skip"
    assert [kind for _, kind in h.reading.calls] == ["read", "read", "read"]
    assert h.backend.calls == ["close"]


async def test_download_then_read_pdf_text_by_record_ref_and_by_path(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        (ref,) = h.add_papers([row(1)])
        first = _ok(await client.call_tool("download_paper", {"record_ref": ref, "subdirectory": "合同"}))
        assert first["kind"] == "download" and first["status"] == "completed"
        assert first["budget"]["max_requests"] == 30 and first["budget"]["timeout_seconds"] == 1800
        got = first["result"]
        path = Path(got["path"])
        assert path.parent == h.settings.data_dir / "downloads" / "合同" and len(got["sha256"]) == 64
        assert first["next_step"] and "read_pdf_text" in first["next_step"]
        again = _ok(await client.call_tool("download_paper", {"record_ref": ref}))
        assert again["result"]["source"] == "cache" and again["result"]["path"] == got["path"]

        text = _ok(await client.call_tool("read_pdf_text", {"record_ref": ref, "pages": "1"}))
        title = Corpus.load().by_id["r0001"].title
        assert text["pages_returned"] == [1] and title in text["text"].replace("\n", "")
        relative = str(path.relative_to(h.settings.data_dir / "downloads"))
        same = _ok(await client.call_tool("read_pdf_text", {"path": relative, "max_characters": 20}))
        assert len(same["text"]) <= 20 and same["truncated"] is True
        (other,) = h.add_papers([row(2)])
        data = _error(await client.call_tool("read_pdf_text", {"record_ref": other}))
        assert data["code"] == "INVALID_ARGUMENT" and data["details"]["field"] == "record_ref"
        # the person deleted the downloaded file: the record_ref, not a path the caller gave, is
        # what no longer has a PDF (it said "文件不存在" about a path, without the way back)
        path.unlink()
        gone = _error(await client.call_tool("read_pdf_text", {"record_ref": ref}))
        assert gone["code"] == "INVALID_ARGUMENT" and gone["details"]["field"] == "record_ref"
        assert gone["details"]["reason"] == "file_missing" and gone["details"]["path"] == str(path)
    assert h.downloader is not None and h.downloader.closed  # Services.close closed it
    assert [c["record_ref"] for c in h.downloader.calls] == [ref, ref]


async def test_read_pdf_text_of_a_paper_downloaded_as_caj_only_says_caj_holds_no_text(h: Harness) -> None:
    # a CAJ-only paper (a yearbook): it said INVALID_ARGUMENT "download_paper(format='pdf') first",
    # a download the paper's detail page has no entry for; the description says CAJ is INVALID_FILE
    async with Client(build_server(h.open)) as client:
        (ref,) = h.add_papers([row(1, doc_type="年鉴", source="中国法律年鉴")])
        caj = h.settings.data_dir / "downloads" / "yearbook.caj"
        caj.parent.mkdir(parents=True, exist_ok=True)
        caj.write_bytes(b"HN" + b"\0" * 64)
        assert h.services is not None
        h.services.store.record_download(ref, "caj", caj, "0" * 64, caj.stat().st_size, WHEN)
        data = _error(await client.call_tool("read_pdf_text", {"record_ref": ref}))
        assert data["code"] == "INVALID_FILE"
        assert data["details"]["format"] == "caj" and data["details"]["path"] == str(caj)
        assert data["details"]["pdf_offered"] is False  # not sent to download_paper(format='pdf')


@pytest.mark.parametrize(("entries", "offered"), [(("pdf", "caj"), True), (("caj",), False), ((), None)])
async def test_read_pdf_text_of_a_caj_says_whether_the_detail_page_offers_a_pdf(
    h: Harness, entries: tuple[str, ...], offered: bool | None
) -> None:
    # The caller chose format='caj' for a paper whose detail page has a PDF entry too: the answer
    # named read_online_html only, not the PDF download that this tool reads. What the stored
    # detail page offers decides; without one (or one showing no file entries) it is not known.
    urls = {f"{fmt}_url": f"https://bar.cnki.net/bar/download/order?id=X&type={fmt}" for fmt in entries}
    detail = DetailPage(title="违约金调整的基本标准研究", authors=[Author(name="王利明")], source="法学研究",
                        doc_type="期刊", year=2021, native=NativeId(dbcode="CJFD", filename="WYJ0001"), **urls)  # fmt: skip
    assert await _pdf_offered_beside_a_caj(h, detail, "https://kns.cnki.net/kcms2/article/abstract?v=V1") is offered


async def _pdf_offered_beside_a_caj(h: Harness, detail: DetailPage, url: str) -> Any:
    """read_pdf_text of a paper stored from `detail` and downloaded as CAJ: INVALID_FILE for the
    CAJ, and its `details.pdf_offered` (absent: None)."""
    async with Client(build_server(h.open)) as client:
        assert h.services is not None
        store = h.services.store
        ref = store.upsert_from_detail(detail, url, WHEN).record_ref
        caj = h.settings.data_dir / "downloads" / "paper.caj"
        caj.parent.mkdir(parents=True, exist_ok=True)
        caj.write_bytes(b"HN" + b"\0" * 64)
        store.record_download(ref, "caj", caj, "0" * 64, caj.stat().st_size, WHEN)
        data = _error(await client.call_tool("read_pdf_text", {"record_ref": ref}))
    assert data["code"] == "INVALID_FILE" and data["details"]["format"] == "caj", data
    return data["details"].get("pdf_offered")


REAL_KCMS2 = "detail-kcms2/pluginsx_detail_kcms2_2026.html.gz"
REAL_URL = "https://kns.cnki.net/kcms2/article/abstract?v=REAL"


def _without_pdf_entry(html: str) -> str:
    """The real page as a CAJ-only paper's shows it: its PDF下载 entry taken out."""
    tree = parse_html(html)
    for node in tree.css("li.btn-dlpdf"):
        node.decompose()
    return tree.html or ""


@pytest.mark.parametrize(("page", "offered"), [(lambda html: html, True), (_without_pdf_entry, False)])
async def test_whether_a_pdf_is_offered_is_read_from_a_real_detail_page_as_parsed(
    h: Harness, page: Any, offered: bool
) -> None:
    # the saved kcms2 page of 2026, parsed as the site backend parses it and stored: its PDF下载 and
    # CAJ下载 entries say whether read_pdf_text sends the caller of a CAJ to download_paper(format='pdf')
    detail = parse_detail(page(read_real(REAL_KCMS2)), REAL_URL)
    assert (detail.pdf_url is not None, detail.caj_url is not None) == (offered, True)
    assert await _pdf_offered_beside_a_caj(h, detail, REAL_URL) is offered


# --- export ----------------------------------------------------------------------------


async def test_every_format_exports_stored_papers_and_gbt7714_matches_the_cite_package(h: Harness) -> None:
    rows = [row(1), row(2, doc_type="博士", source="中国人民大学")]
    async with Client(build_server(h.open)) as client:
        refs = h.add_papers(rows)
        for fmt in FORMATS:
            args: dict[str, Any] = {"record_refs": refs, "format": fmt}
            if fmt == "custom":
                args["template"] = "{authors}: {title} ({year})"
            data = _ok(await client.call_tool("export_citations", args))
            view = data["result"]
            assert data["status"] == "completed" and data["operation_id"] is None, fmt
            assert view["format"] == fmt and view["count"] == 2 and view["text"], fmt
            # a journal article from a list row has no 卷(期) or pages yet: reported, with the
            # call that reads them (markdown and json need only the title)
            located = {} if fmt in ("markdown", "json") else {refs[0]: ["issue", "pages"]}
            assert view["missing_fields"] == located and view["path"] is None, fmt
            assert ("get_metadata" in (data["next_step"] or "")) == bool(located), fmt
        gbt = _ok(await client.call_tool("export_citations", {"record_refs": [*refs, refs[0], "rec_gone"]}))
    expected = export([expected_record(ref, r) for ref, r in zip(refs, rows, strict=True)], "gbt7714")
    assert gbt["result"]["text"] == expected.text
    assert gbt["result"]["text"].startswith("[1] 王利明, 作者1. 违约金调整的基本标准研究1[J]. 法学研究, 2021.")
    assert "[D]" in gbt["result"]["text"].split("\n\n")[1]
    assert "v=" not in gbt["result"]["text"]
    assert gbt["result"]["not_found"] == ["rec_gone"] and gbt["result"]["count"] == 2
    assert h.backend.calls == ["close"]


async def test_local_title_and_alias_export_without_an_operation(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        refs = h.add_papers([row(1)])
        data = _ok(await client.call_tool("export_citations", {"titles": [row(1).title], "format": "csl-json"}))
        assert data["result"]["format"] == "csl_json" and json.loads(data["result"]["text"])[0]["id"] == refs[0]
        assert data["operation_id"] is None
    assert h.backend.calls == ["close"]


async def test_unknown_record_refs_are_coded_errors_not_a_silent_empty_export(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        refs = h.add_papers([row(1)])
        none = _error(await client.call_tool("export_citations", {"record_refs": ["rec_gone"], "filename": "x"}))
        assert none["code"] == "DOCUMENT_NOT_FOUND"
        some = _ok(await client.call_tool("export_citations", {"record_refs": [refs[0], "rec_gone"]}))
        assert some["status"] == "partial" and some["result"]["count"] == 1
        assert [(e["code"], e["details"]["record_ref"]) for e in some["errors"]] == [("DOCUMENT_NOT_FOUND", "rec_gone")]
    assert not (h.settings.data_dir / "exports" / "x.txt").exists()


async def test_a_title_quoted_in_book_title_marks_exports_the_stored_paper(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        refs = h.add_papers([row(1)])
        data = _ok(await client.call_tool("export_citations", {"titles": [f"《{row(1).title}》"], "format": "GB/T 7714-2015"}))
        assert data["operation_id"] is None and data["errors"] == []
        assert data["result"]["count"] == 1 and data["result"]["format"] == "gbt7714"
        assert json.loads(
            _ok(await client.call_tool("export_citations", {"titles": [f"《{row(1).title}》"], "format": "json"}))["result"]["text"]
        )[0]["record_ref"] == refs[0]
    assert h.backend.calls == ["close"]


async def test_export_saves_atomically_under_exports_never_overwrites_and_refuses_paths(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        refs = h.add_papers([row(1), row(2)])
        saved = _ok(await client.call_tool("export_citations", {"record_refs": refs, "format": "bibtex",
                                                                "filename": "引用"}))  # fmt: skip
        path = Path(saved["result"]["path"])
        assert path == h.settings.data_dir / "exports" / f"引用.{EXTENSIONS['bibtex']}"
        assert path.read_text(encoding="utf-8") == saved["result"]["text"]
        exports = h.settings.data_dir / "exports"
        assert sorted(p.name for p in exports.iterdir()) == [path.name]  # no temporary left behind

        again = _error(await client.call_tool("export_citations", {"record_refs": refs, "format": "bibtex",
                                                                   "filename": "引用.bib"}))  # fmt: skip
        assert again["code"] == "FILE_EXISTS"
        assert path.read_text(encoding="utf-8") == saved["result"]["text"]

        for bad in ("../escape.txt", "/tmp/escape.txt", "..", "a/b.txt", "..\\escape.txt", ".hidden", "CON.txt"):
            data = _error(await client.call_tool("export_citations", {"record_refs": refs, "filename": bad}))
            assert data["code"] == "INVALID_ARGUMENT", bad
            assert data["details"]["field"] == "filename", bad
        assert sorted(p.name for p in exports.iterdir()) == [path.name]
        assert not (h.settings.data_dir / "escape.txt").exists()


async def test_a_text_of_hundreds_of_kib_needs_a_filename_and_is_then_only_saved(h: Harness) -> None:
    abstract = "违约金" * 1_200  # ~10.8 KB of UTF-8 per record in the json format
    async with Client(build_server(h.open)) as client:
        refs = h.add_papers([row(i, abstract=abstract) for i in range(60)])
        too_big = _error(await client.call_tool("export_citations", {"record_refs": refs, "format": "json"}))
        assert too_big["code"] == "OUTPUT_TOO_LARGE"
        assert not (h.settings.data_dir / "exports").exists()
        saved = _ok(await client.call_tool("export_citations", {"record_refs": refs, "format": "json",
                                                                "filename": "all.json"}))  # fmt: skip
        view = saved["result"]
        assert view["text"] is None and view["text_omitted"] is True and view["bytes"] > 512 * 1024
        content = Path(view["path"]).read_bytes()
        assert len(content) == view["bytes"] and len(json.loads(content)) == 60
        small = _ok(await client.call_tool("export_citations", {"record_refs": refs[:2], "format": "json"}))
        assert small["result"]["text"] and small["result"]["text_omitted"] is False


async def test_an_oversized_export_advises_paging_only_where_offset_and_limit_apply(h: Harness) -> None:
    # record_refs ignore offset/limit: told to page with them, an agent met the same error again
    from cnki_mcp.store.searches import SearchEvidence

    abstract = "违约金" * 1_200
    async with Client(build_server(h.open)) as client:
        refs = h.add_papers([row(i, abstract=abstract) for i in range(60)])
        assert h.services is not None
        store = h.services.store
        store.save_evidence("sch_big", [SearchEvidence(r, rank=i, selected=True) for i, r in enumerate(refs, 1)])
        store.save_search("sch_big", "违约金", {}, "fp", "completed", datetime(2026, 1, 1, tzinfo=UTC))
        by_refs = _error(await client.call_tool("export_citations", {"record_refs": refs, "format": "json"}))
        by_search = _error(await client.call_tool("export_citations", {"search_id": "sch_big", "format": "json"}))
        both = _error(
            await client.call_tool("export_citations", {"search_id": "sch_big", "record_refs": refs[:1], "format": "json"})
        )
    assert by_refs["code"] == by_search["code"] == both["code"] == "OUTPUT_TOO_LARGE"
    assert "offset" not in by_refs["message"] and "record_refs" in by_refs["message"]
    assert "offset" in by_search["message"] and "record_refs" not in by_search["message"]
    assert "offset" in both["message"] and "record_refs" in both["message"]


async def test_a_text_over_64_kib_is_only_saved_to_a_file_and_without_one_is_refused(h: Harness) -> None:
    # 30 records of ~2,000 characters: far under the old 512 KB, over what a client's model reads
    # at once (64 KB of UTF-8 is at most ~22,000 tokens)
    abstract = "违约金" * 200
    async with Client(build_server(h.open)) as client:
        refs = h.add_papers([row(i, abstract=abstract) for i in range(30)])
        saved = _ok(await client.call_tool("export_citations", {"record_refs": refs, "format": "json",
                                                                "filename": "long.json"}))  # fmt: skip
        view = saved["result"]
        assert view["text"] is None and view["text_omitted"] is True and 64 * 1024 < view["bytes"] < 512 * 1024
        content = Path(view["path"]).read_bytes()
        assert len(content) == view["bytes"] and len(json.loads(content)) == 30
        refused = _error(await client.call_tool("export_citations", {"record_refs": refs, "format": "json"}))
        assert refused["code"] == "OUTPUT_TOO_LARGE" and refused["details"]["bytes"] == view["bytes"]
        half = _ok(await client.call_tool("export_citations", {"record_refs": refs[:10], "format": "json"}))
        assert len(json.loads(half["result"]["text"])) == 10 and half["result"]["text_omitted"] is False


# --- link_references -------------------------------------------------------------------


async def test_link_references_without_lookup_is_local_and_links_only_known_titles(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        (ref,) = h.add_papers([row(1)])
        text = f"见《{row(1).title}》与《没有的论文》，`《{row(1).title}》` 不变。"
        data = _ok(await client.call_tool("link_references", {"text": text}))
        result = data["result"]
        assert data["status"] == "completed" and data["operation_id"] is None
        assert result["requests"] == 0
        statuses = {r["title"]: (r["status"], r["record_refs"]) for r in result["references"]}
        assert statuses[row(1).title] == ("linked", [ref])
        assert statuses["没有的论文"] == ("unresolved", [])
        assert f"[《{row(1).title}》]({row(1).detail_url})" in result["text"]
        assert f"`《{row(1).title}》`" in result["text"] and "《没有的论文》" in result["text"]
        assert "lookup_missing" in (data["next_step"] or "")
        assert h.services is not None and h.services.jobs.status(None) is None
    assert h.backend.calls == ["close"]


async def test_read_and_download_take_a_title_quoted_in_book_title_marks_as_the_stored_paper(h: Harness) -> None:
    async with Client(build_server(h.open)) as client:
        (ref,) = h.add_papers([row(1)])
        read = _ok(await client.call_tool("read_online_html", {"title": f"《{row(1).title}》", "max_characters": 10}))
        assert read["result"]["record_ref"] == ref
        got = _ok(await client.call_tool("download_paper", {"title": f" 《{row(1).title}》 "}))
        assert got["status"] == "completed"
        for tool in ("read_online_html", "download_paper"):
            blank = _error(await client.call_tool(tool, {"title": "《 》"}))
            assert blank["code"] == "INVALID_ARGUMENT" and blank["details"]["field"] == "title"
    assert h.downloader is not None and [c["record_ref"] for c in h.downloader.calls] == [ref]
    assert h.backend.calls == ["close"]  # nothing was looked up on CNKI
