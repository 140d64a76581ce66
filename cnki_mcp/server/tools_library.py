"""search_library: full-text search over the local store (no CNKI request, no operation)."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field

from cnki_mcp.errors import SearchNotFound
from cnki_mcp.pipeline.library import LibraryInput, LibraryPage, search_library
from cnki_mcp.pipeline.models import Scope
from cnki_mcp.server.deps import services_of
from cnki_mcp.server.errors import CnkiServer
from cnki_mcp.server.unfinished import or_unfinished

LIBRARY_DESCRIPTION = """检索本地已保存的全部文献（本地，不访问知网）：题名、关键词、作者、机构、来源、摘要，以及用 read_online_html 读过的全文和已下载 PDF 的文字。
多个词用空格（或逗号、顿号）分隔，须全部出现（中文按子串匹配）；词前加 - 排除含该词的文献（如 违约金 -约定）；不支持 OR。按 BM25 相关度排序，返回命中片段。可按年份、文献类型、来源级别、search_id（配合 scope，同 search_results）过滤；翻页同 search_results。"""


def register(server: CnkiServer) -> None:
    @server.tool(
        name="search_library",
        title="本地文献检索",
        description=LIBRARY_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True),
    )
    async def search_library_tool(
        ctx: Context[Any, Any],
        query: Annotated[str, Field(min_length=1, max_length=200)],
        year_from: Annotated[int | None, Field(ge=0, le=2200)] = None,
        year_to: Annotated[int | None, Field(ge=0, le=2200)] = None,
        document_types: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=20)]],
            Field(max_length=10, description="文献类型，如 期刊、硕士、博士（也接受 博士论文、学位论文、会议论文 与 journal、master、phd 等英文名）"),
        ] = [],  # noqa: B006
        source_tiers: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=20)]],
            Field(max_length=10, description="来源级别，如 CSSCI、北大核心、核心（任一核心库）；需已读期刊信息"),
        ] = [],  # noqa: B006
        search_id: Annotated[str | None, Field(max_length=64)] = None,
        scope: Scope = "selected",
        offset: Annotated[int, Field(ge=0)] = 0,
        limit: Annotated[int, Field(ge=1, le=100)] = 20,
    ) -> LibraryPage:
        inp = LibraryInput(
            query=query,
            year_from=year_from,
            year_to=year_to,
            document_types=list(document_types),
            source_tiers=list(source_tiers),
            search_id=search_id,
            scope=scope,
            offset=offset,
            limit=limit,
        )
        services = services_of(ctx)
        try:
            # off the event loop: reading downloaded PDFs takes up to seconds each, and every other
            # call (and a running search's pages) waited for it
            return await asyncio.to_thread(
                search_library, services.store, inp, services.settings.data_dir, services.clock
            )
        except SearchNotFound as exc:
            raise or_unfinished(services.jobs, search_id, exc) from None
