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

DESCRIPTION = """逐条核对参考文献是否真实存在于知网、各字段是否正确（访问知网）。
输入 text（整段粘贴：[1]、1.、（1）、项目符号或每行一条；GB/T 7714、APA 或“作者：《题名》，《刊名》2019年第3期”等写法均可）或 references（1–200 条）。
每条给出 verdict：verified（题名、第一作者、年份、来源等均与知网记录一致）、mismatch（论文存在但 fields 所列字段不一致）、not_found（知网上没有足够接近的记录；searches 说明做过哪些查找）、ambiguous（多条记录同样符合，见 candidates）、unparsable（读不出题名，见 reason）。
匹配到时给出知网记录与按其生成的 GB/T 7714-2015 条目 corrected。条目缺项只作提示（warnings），不算伪造证据。
请求数：每 10 条题名 1 次检索；未找到的条目各 1 次补充检索；需要卷期页码时每 20 条 1 次批量导出。"""


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
            list[str] | None, Field(description="逐条给出的参考文献（1–200 条）", min_length=1, max_length=200)
        ] = None,
        on_verification: Annotated[
            Literal["ask", "skip"], Field(description="ask：遇到验证弹出窗口等待处理；skip：跳过")
        ] = "ask",
    ) -> VerifyOperation:
        inp = VerifyInput(text=text, references=references, options=VerifyOptions(on_verification=on_verification))
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
