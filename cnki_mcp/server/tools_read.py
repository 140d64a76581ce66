"""read_online_html, download_paper and read_pdf_text.

Arguments (and a record_ref or title already known locally) are checked before any operation
starts, so bad input never reaches the browser. read_online_html and download_paper run as
operations (fixed budgets read 60/900 and download 30/1800, site-rules.md §3.9) answering within the
inline wait; a title not known locally is located on CNKI inside the operation (one exact-title
grid request). read_pdf_text is local: it reads a file under `<data>/downloads`."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field

from cnki_mcp.errors import DocumentNotFound, InvalidFile, InvalidInput
from cnki_mcp.files import check_download_arguments
from cnki_mcp.identity import ambiguous, asked_title
from cnki_mcp.jobs import DEFAULT_BUDGETS, BudgetSpec, OperationKind
from cnki_mcp.links import reference_key
from cnki_mcp.pdf_text import PdfText, read_pdf_text
from cnki_mcp.pipeline.links import local_matches, locate_titles
from cnki_mcp.reading_service import DEFAULT_MAX_CHARACTERS, MAX_CHARACTERS, ReadResult
from cnki_mcp.server.deps import services_of
from cnki_mcp.server.errors import CnkiServer
from cnki_mcp.server.models import OperationView
from cnki_mcp.server.progress import start_operation, typed_view
from cnki_mcp.services import Services
from cnki_mcp.site.download_result import DEFAULT_WAIT_SECONDS, MAX_WAIT_SECONDS, DownloadResult
from cnki_mcp.store import Store

RecordRef = Annotated[
    str | None, Field(min_length=1, max_length=64, description="记录编号 rec_…")
]
Title = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=500,
        description="完整题名；本地没有时按篇名精确检索定位",
    ),
]
OnVerificationChoice = Annotated[
    Literal["ask", "skip"], Field(description="ask：弹出窗口等待人工验证；skip：遇到验证即放弃")
]


class ReadOperation(OperationView):
    result: ReadResult | None = Field(default=None, description="正文（完成时）；不含阅读页地址")


class DownloadOperation(OperationView):
    result: DownloadResult | None = Field(default=None, description="下载的文件（完成时）")


READ_DESCRIPTION = """读取论文 HTML 全文（访问知网，约 2–5 次请求；30 天内读过的完整正文从本地返回）。
record_ref 或完整 title 二选一。section 只取该章节；offset/max_characters 分页，next_offset 为 null 表示结束（试读或不完整的正文续读 offset>0 时也从本地返回，offset=0 重新读取）。
trial=true 为试读；complete_article=false 为不完整，null 为无法确认。无阅读入口（HTML_ENTRY_NOT_FOUND，details.available 为详情页的下载格式；30 分钟内再读同一篇不再请求）时改用 download_paper + read_pdf_text（只有 CAJ 时读不出文字）。"""

DOWNLOAD_DESCRIPTION = """下载 PDF 或 CAJ 到 data/downloads/（访问知网，点击一次下载；可能产生费用，只在明确需要文件时使用）。
record_ref 或完整 title 二选一；已有同名文件返回 FILE_EXISTS。下载过则直接返回（source=cache），新的 filename/subdirectory 时复制过去。
SIDE_EFFECT_UNCERTAIN：稍后用相同参数再调用会先检查文件是否已到，确认要再次点击才传 retry=true。skip 时遇到登录页为 skipped（details.gate=login，没有文件、不计费）：用 login 登录后用相同参数再调用即可。"""

PDF_DESCRIPTION = """读取已下载 PDF 的文字（本地，不访问知网）：path（data/downloads/ 下，或 download_paper 返回的 path）或 record_ref 二选一。
truncated=true 时以 pages=next_pages、offset=next_offset 继续。CAJ 无法提取文字（INVALID_FILE）。"""


def one_target(record_ref: str | None, title: str | None) -> str | None:
    """The title to look up (`identity.asked_title`: one pair of 《》 around it taken off), once
    exactly one of record_ref and title is given; INVALID_ARGUMENT for a blank title."""
    if (record_ref is None) == (title is None):
        raise InvalidInput("record_ref 与 title 必须二选一", field="record_ref")
    if title is None:
        return None
    asked = asked_title(title)
    if not asked:
        raise InvalidInput("title 为空（去掉首尾空白与外层《》后）", field="title")
    return asked


def known_ref(services: Services, record_ref: str | None, title: str | None) -> str | None:
    """The local ref of the target; None when the title must be located on CNKI.
    DOCUMENT_NOT_FOUND for an unknown record_ref, IDENTITY_AMBIGUOUS for a title with several
    local papers (both before any operation starts)."""
    store = services.store
    if record_ref is not None:
        ref = store.resolve_ref(record_ref)
        if store.get(ref) is None:
            raise DocumentNotFound.unknown_ref(record_ref)
        return ref
    assert title is not None
    local = local_matches(store, title)
    if len(local) > 1:
        raise ambiguous(title, local)
    return local[0].record_ref if local else None


async def locate_title(services: Services, title: str, op: Any) -> str:
    """The one paper CNKI lists under exactly `title` (one grid request; rows are stored)."""
    key = reference_key(title)
    op.set_stage("locate", "按篇名精确检索定位")
    origin = services.settings.site_origin
    found = await locate_titles(
        services.store, services.backend, {key: title}, op, public_origins=(origin,) if origin else ()
    )
    papers = found.get(key, [])
    if not papers:
        raise DocumentNotFound("知网上没有这个完整题名", title=title)
    if len(papers) > 1:
        raise ambiguous(title, papers)
    return papers[0].record_ref


def budget_of(kind: OperationKind, on_verification: str) -> BudgetSpec:
    spec = DEFAULT_BUDGETS[kind]
    return spec.model_copy(update={"on_verification": "skip" if on_verification == "skip" else "wait"})


def register(server: CnkiServer) -> None:
    @server.tool(
        name="read_online_html",
        title="读取 HTML 正文",
        description=READ_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True),
    )
    async def read_online_html(
        ctx: Context[Any, Any],
        record_ref: RecordRef = None,
        title: Title = None,
        section: Annotated[
            str | int | None, Field(description="章节名（取自 sections，忽略大小写和多余空格）或 0 起的序号")
        ] = None,
        offset: Annotated[int, Field(ge=0, description="起始字符位置（整篇或所选章节内）")] = 0,
        max_characters: Annotated[
            int, Field(ge=1, le=MAX_CHARACTERS, description="本次最多返回的字符数")
        ] = DEFAULT_MAX_CHARACTERS,
        on_verification: OnVerificationChoice = "ask",
    ) -> ReadOperation:
        if isinstance(section, str) and len(section) > 500:
            raise InvalidInput("章节名过长", field="section")
        title = one_target(record_ref, title)
        services = services_of(ctx)
        ref = known_ref(services, record_ref, title)
        reading = services.reading

        async def read(target: str, op: Any) -> Any:
            return await reading.read(
                target, section=section, offset=offset, max_characters=max_characters, op=op
            )

        record = await _paper_operation(
            ctx, services, OperationKind.READ, on_verification, ref, title, "read", "读取 HTML 正文", read
        )
        return typed_view(ReadOperation, OperationView.of(record))

    @server.tool(
        name="download_paper",
        title="下载论文",
        description=DOWNLOAD_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True),
    )
    async def download_paper(
        ctx: Context[Any, Any],
        record_ref: RecordRef = None,
        title: Title = None,
        format: Annotated[
            Literal["auto", "pdf", "caj"], Field(description="auto 优先 PDF，没有 PDF 入口时用 CAJ")
        ] = "auto",
        filename: Annotated[
            str | None, Field(min_length=1, max_length=240, description="文件名，扩展名须与格式一致")
        ] = None,
        subdirectory: Annotated[
            str | None, Field(min_length=1, max_length=500, description="data/downloads/ 下的相对子目录")
        ] = None,
        wait_seconds: Annotated[
            float,
            Field(ge=1, le=MAX_WAIT_SECONDS, description="点击后等待文件的秒数（人工验证时间不计入）"),
        ] = DEFAULT_WAIT_SECONDS,
        retry: bool = False,
        on_verification: OnVerificationChoice = "ask",
    ) -> DownloadOperation:
        title = one_target(record_ref, title)
        services = services_of(ctx)
        check_download_arguments(services.settings.data_dir, format, filename, subdirectory)
        ref = known_ref(services, record_ref, title)
        downloader = services.downloader

        async def download(target: str, op: Any) -> Any:
            return await downloader.download(
                target, format=format, filename=filename, subdirectory=subdirectory,
                wait_seconds=wait_seconds, retry=retry, op=op,
            )  # fmt: skip

        record = await _paper_operation(
            ctx, services, OperationKind.DOWNLOAD, on_verification, ref, title, "download", "下载文件", download
        )
        return typed_view(DownloadOperation, OperationView.of(record))

    @server.tool(
        name="read_pdf_text",
        title="读取 PDF 文字",
        description=PDF_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True),
    )
    async def read_pdf_text_tool(
        ctx: Context[Any, Any],
        path: Annotated[
            str | None,
            Field(min_length=1, max_length=2000),
        ] = None,
        record_ref: Annotated[
            str | None, Field(min_length=1, max_length=64, description="已下载 PDF 的文献记录编号")
        ] = None,
        pages: Annotated[
            str | None, Field(max_length=200, description='页码范围（从 1 起），如 "1-3"、"5"、"2-"、"1,4-5"；默认全部')
        ] = None,
        max_characters: Annotated[
            int, Field(ge=1, le=MAX_CHARACTERS, description="最多返回的字符数")
        ] = DEFAULT_MAX_CHARACTERS,
        offset: Annotated[
            int, Field(ge=0, le=10_000_000, description="从 pages 第一页的第几个字符起（续读时用 next_offset）")
        ] = 0,
    ) -> PdfText:
        if (path is None) == (record_ref is None):
            raise InvalidInput("path 与 record_ref 必须二选一", field="path")
        services = services_of(ctx)
        data_dir = services.settings.data_dir
        if record_ref is not None:
            store = services.store
            ref = store.resolve_ref(record_ref)
            if store.get(ref) is None:
                raise DocumentNotFound.unknown_ref(record_ref)
            stored = store.download_for(ref, "pdf")
            caj = store.download_for(ref, "caj") if stored is None else None
            if caj is not None:
                # The CAJ holds no text this tool reads (the description's INVALID_FILE). A CAJ-only
                # paper (a yearbook) has no PDF to download; one whose detail page also offers a
                # PDF (the caller chose format='caj') was not told of the download that reads
                pdf_offered = _pdf_offered(store, ref)
                if services.settings.read_only:
                    instead = "只读模式下可用 get_metadata 取得摘要"
                elif pdf_offered is None:
                    instead = (
                        "知网详情页有 PDF 下载入口时可用 download_paper(record_ref, format='pdf') 下载后再读，"
                        "有 HTML 阅读入口时可用 read_online_html 读取全文"
                    )
                elif pdf_offered:
                    instead = (
                        "知网详情页有 PDF 下载入口：可用 download_paper(record_ref, format='pdf') 下载后再读，"
                        "或用 read_online_html 读取全文"
                    )
                else:
                    instead = "知网有 HTML 阅读入口时可用 read_online_html 读取全文"
                raise InvalidFile(
                    f"该文献只下载了 CAJ 文件，CAJ 无法提取文字（可用 CAJViewer 打开）；{instead}",
                    path=str(caj.path),
                    format="caj",
                    pdf_offered=pdf_offered,
                )
            if stored is None:
                # read-only mode hides download_paper (server/readonly.py): nothing to call first
                raise InvalidInput(
                    "该文献没有已下载的 PDF（只读模式下不能下载；可用 get_metadata 取得摘要）"
                    if services.settings.read_only
                    else "该文献没有已下载的 PDF，请先调用 download_paper(format='pdf')",
                    field="record_ref",
                )
            if not stored.path.is_file():
                # deleted or moved away by the person: the paper has no PDF to read any more
                raise InvalidInput(
                    "该文献下载过的 PDF 已不在数据目录的 downloads/ 中（被删除或移走）"
                    + ("" if services.settings.read_only else "：用 download_paper(record_ref, format='pdf') 重新下载后再读"),
                    field="record_ref",
                    path=str(stored.path),
                    reason="file_missing",
                )
            path = str(stored.path)
        assert path is not None
        # read-only mode hides the HTML reader (server/readonly.py): no advice names it
        return await asyncio.to_thread(
            read_pdf_text, path, data_dir, pages, max_characters, offset, not services.settings.read_only
        )


def _pdf_offered(store: Store, ref: str) -> bool | None:
    """Whether the paper's detail page offers a PDF download: from the stored detail page's
    PDF下载 entry (when it shows the file entries at all: this paper's CAJ came from one), else
    False for a yearbook (CAJ only on CNKI), else None (not known)."""
    stored = store.detail_page(ref)
    if stored is not None and (stored.page.pdf_url or stored.page.caj_url):
        return stored.page.pdf_url is not None
    paper = store.get(ref)
    return False if paper is not None and paper.doc_type == "年鉴" else None


async def _paper_operation(
    ctx: Any,
    services: Any,
    kind: OperationKind,
    on_verification: Any,
    ref: str | None,
    title: str | None,
    stage: str,
    message: str,
    action: Callable[[str, Any], Awaitable[Any]],
) -> Any:
    """Run `action(record_ref, op)` as an operation of `kind` with its fixed budget; a paper known
    only by title is located first, inside the operation (its requests are charged there)."""

    async def runner(op: Any) -> Any:
        target = ref if ref is not None else await locate_title(services, title or "", op)
        op.set_stage(stage, message)
        return await action(target, op)

    budget = budget_of(kind, on_verification)
    return await start_operation(ctx, services.jobs, kind, runner, budget, stage=stage, message=message)
