"""verify_references: check a reference list against CNKI (an operation; docs/DESIGN.md §References)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field

from cnki_mcp.jobs import OperationKind
from cnki_mcp.pipeline.verify import VerifyInput, VerifyOptions, VerifyResult, verify_references
from cnki_mcp.server.deps import services_of
from cnki_mcp.server.errors import CnkiServer
from cnki_mcp.server.models import OperationView
from cnki_mcp.server.progress import start_operation, typed_view
from cnki_mcp.server.tools_read import budget_of

DESCRIPTION = """逐条核对参考文献是否在知网存在、字段是否正确（访问知网，约 0.3 次请求/条）。text 整段粘贴（GB/T 7714、APA、MLA、Chicago、Vancouver、《题名》、DOI）或 references。
verdict：verified、mismatch（见 fields）、not_found、ambiguous（见 candidates）、unparsable、not_a_paper（法规、标准、古籍，不查；见 reason）。匹配时给出 record 与改正的 GB/T 7714 条目 corrected。缺项只进 warnings，不算伪造证据。"""


class VerifyOperation(OperationView):
    result: VerifyResult | None = Field(default=None, description="逐条核对结果（完成或部分完成时）")


def register(server: CnkiServer) -> None:
    @server.tool(
        name="verify_references",
        title="核对参考文献",
        description=DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True),
    )
    async def verify_references_tool(
        ctx: Context[Any, Any],
        text: Annotated[str | None, Field(description="整段参考文献列表（最大 512 KB）")] = None,
        references: Annotated[
            list[str] | None, Field(description="逐条参考文献（合计 ≤512 KB）", min_length=1, max_length=200)
        ] = None,
        on_verification: Annotated[
            Literal["ask", "skip"], Field(description="ask：遇到验证弹出窗口等待处理；skip：跳过")
        ] = "ask",
        fresh: Annotated[bool, Field(description="true：不复用近期 not_found")] = False,
    ) -> VerifyOperation:
        inp = VerifyInput(
            text=text, references=references, options=VerifyOptions(on_verification=on_verification), fresh=fresh
        )
        services = services_of(ctx)
        origin = services.settings.site_origin
        origins = (origin,) if origin else ()

        async def runner(op: Any) -> Any:
            return await verify_references(inp, services.store, services.backend, op, public_origins=origins)

        record = await start_operation(
            ctx,
            services.jobs,
            OperationKind.VERIFY,
            runner,
            budget_of(OperationKind.VERIFY, on_verification),
            stage="verify",
            message="核对参考文献",
        )
        return typed_view(VerifyOperation, OperationView.of(record))
