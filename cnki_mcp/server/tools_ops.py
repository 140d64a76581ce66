"""operation_status (long-poll) and operation_control (cancel, continue, resume, show, recover).
Both are local: they never make a CNKI request themselves."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field

from cnki_mcp.errors import ContinueUnavailable, InvalidInput
from cnki_mcp.jobs import CONTINUABLE, JobManager, OperationKind, OperationStatus
from cnki_mcp.server.deps import services_of
from cnki_mcp.server.errors import CnkiServer
from cnki_mcp.server.models import OperationControlView, OperationView, unchecked_step
from cnki_mcp.server.progress import run_job, wait_with_progress

OperationId = Annotated[str, Field(pattern=r"^op_[0-9a-f]{24}$", description="任务编号 op_…")]

STATUS_DESCRIPTION = """查询任务进度和结果（本地，不访问知网）。不填 operation_id 时返回当前运行的任务，没有时返回 {"status": "idle"}（有被服务重启中断、可继续的检索时 next_step 给出继续的调用）。
wait_seconds：最多等待秒数，完成或需要人工操作时提前返回。
status：running、awaiting_user（按 message 在浏览器窗口操作）、completed、partial（见 errors，可 continue）、failed、skipped、cancelled、interrupted（服务重启，检索可 continue）。"""

CONTROL_DESCRIPTION = """控制任务（本地，不访问知网）。action：cancel 取消（最多等 5 秒，返回最终状态；检索保留取消前找到的结果，可用 search_results 读取）；
continue 继续中断、取消、失败或预算用完的检索（可加 additional_requests / additional_seconds，已取得的数据不重复请求）；
resume 告知人工操作已完成（机构远程访问登录时需要；不填 operation_id 时为当前等待人工操作的任务）；show 把等待人工操作的窗口切到前台；recover 关闭浏览器，下次请求时重启（BROWSER_UNAVAILABLE 时用）。"""


# The arguments each action takes besides `action` (recover concerns no operation: an id given
# with it is ignored). A budget argument given to another action than continue is refused: it
# was silently dropped, so a client that "resumed with more budget" believed it had.
ACCEPTS: dict[str, tuple[str, ...]] = {
    "cancel": ("operation_id",),
    "continue": ("operation_id", "additional_requests", "additional_seconds"),
    "resume": ("operation_id",),
    "show": ("operation_id",),
    "recover": (),
}


def refuse_unused_budget(action: str, additional_requests: int | None, additional_seconds: float | None) -> None:
    """INVALID_ARGUMENT naming the budget arguments `action` does not use and what it takes."""
    given = [name for name, value in (("additional_requests", additional_requests),
                                      ("additional_seconds", additional_seconds)) if value is not None]  # fmt: skip
    unused = [name for name in given if name not in ACCEPTS[action]]
    if unused:
        takes = "、".join(ACCEPTS[action]) or "无其他参数"
        raise InvalidInput(
            f"{action} 不接受 {'、'.join(unused)}（只有 continue 加预算）；{action} 接受：{takes}",
            field=unused[0], action=action, accepts={a: list(args) for a, args in ACCEPTS.items()},
        )  # fmt: skip


# What a continue did, by the status the operation has when the call returns (a `failed` one is
# an error result: server/errors.py).
CONTINUED: dict[str, str] = {
    "running": "已从检查点继续，任务仍在运行（用 operation_status 等待）",
    "awaiting_user": "已从检查点继续，正在等待人工操作（见 operation.message）",
    "completed": "已从检查点继续并完成",
    "partial": "已从检查点继续，仍为部分完成（原因见 operation.errors）",
    "failed": "继续后任务失败（见 errors）",
}


def interrupted_hint(jobs: JobManager) -> str | None:
    """When nothing runs: the newest operation a restart interrupted that `continue` can carry on
    (a continuable kind with its checkpoint), so a client that lost the id still finds it."""
    for record in jobs.recent(20):
        if record.status is not OperationStatus.INTERRUPTED or record.kind not in CONTINUABLE:
            continue
        full = jobs.status(record.operation_id)
        if full is not None and full.checkpoint is not None:
            op = record.operation_id
            return f"没有正在运行的任务；被中断的 {record.kind.value} 任务可继续：operation_control(action='continue', operation_id='{op}')"
    return None


def register(server: CnkiServer) -> None:
    @server.tool(
        name="operation_status",
        title="查询任务",
        description=STATUS_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True),
    )
    async def operation_status(
        ctx: Context[Any, Any],
        operation_id: OperationId | None = None,
        wait_seconds: Annotated[float, Field(ge=0, le=55)] = 0,
    ) -> OperationView:
        services = services_of(ctx)
        jobs = services.jobs
        if operation_id is None:
            current = jobs.status(None)
            if current is None:
                return OperationView.of(None, next_step=interrupted_hint(jobs))
            operation_id = current.operation_id
        if wait_seconds > 0:
            record = await wait_with_progress(ctx, jobs, operation_id, wait_seconds)
        else:
            record = jobs.status(operation_id)
        return OperationView.of(record)

    @server.tool(
        name="operation_control",
        title="控制任务",
        description=CONTROL_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False),
    )
    async def operation_control(
        ctx: Context[Any, Any],
        action: Literal["cancel", "continue", "resume", "show", "recover"],
        operation_id: OperationId | None = None,
        additional_requests: Annotated[int | None, Field(ge=1, le=5000)] = None,
        additional_seconds: Annotated[float | None, Field(ge=1, le=7200)] = None,
    ) -> OperationControlView:
        refuse_unused_budget(action, additional_requests, additional_seconds)
        services = services_of(ctx)
        jobs = services.jobs
        if action == "resume" and operation_id is None:
            # the guide, login's description and the skill write resume without an id: it concerns
            # the one human step the gate holds, as show does (VERIFICATION_NOT_FOUND when none)
            operation_id = jobs.waiting_step_owner()
        if action in ("cancel", "continue") and operation_id is None:
            raise InvalidInput(f"{action} 需要 operation_id", field="operation_id")
        if action == "cancel":
            assert operation_id is not None
            before = jobs.status(operation_id)
            record = await jobs.cancel(operation_id)
            if before is None or not before.status.active:  # it had ended: nothing to cancel
                message = f"操作已结束（{record.status.value}），无需取消"
            elif record.status.active:
                message = "已请求取消，操作仍在停止"
            else:
                message = "已取消" if record.status is OperationStatus.CANCELLED else f"操作已结束（{record.status.value}）"
            return OperationControlView(
                action=action, message=message, operation=OperationView.of(record)
            )
        if action == "continue":
            assert operation_id is not None
            _refuse_watch_continue(jobs, operation_id)
            runner = _continue_runner(services, jobs, operation_id)
            job = jobs.continue_(
                operation_id,
                runner,
                additional_requests=additional_requests,
                additional_seconds=additional_seconds,
            )
            record = await run_job(ctx, jobs, job)
            message = CONTINUED.get(record.status.value, f"已从检查点继续，任务{record.status.value}")
            return OperationControlView(action=action, message=message, operation=OperationView.of(record))
        if action == "resume":
            assert operation_id is not None
            record = await jobs.resume(operation_id)
            return OperationControlView(
                action=action, message="已通知任务继续", operation=OperationView.of(record)
            )
        if action == "show":
            shown = await jobs.show()
            record = jobs.status(operation_id) if operation_id else None
            # headless there is no window (it said one had been raised): the step's message says
            # how to go on instead
            message = "已把等待处理的窗口切到前台" if shown else NO_WINDOW + (services.gate.active_message or "")
            return OperationControlView(
                action=action, message=message, operation=OperationView.of(record) if record else None
            )
        # recover
        await services.host.recover()
        return OperationControlView(action=action, message="浏览器将在下一次请求时重新启动")


NO_WINDOW = "浏览器以无界面模式运行，没有可以切到前台的窗口。"


def _refuse_watch_continue(jobs: JobManager, operation_id: str) -> None:
    """A batch of watch checks has no checkpoint: each check is stored as it ends. Checking again
    is the way on; `all` takes the least recently checked watches first, so the unchecked ones of
    this batch come first (pipeline/watch.py `WatchService.watches`)."""
    record = jobs.status(operation_id)
    if record is None or record.kind is not OperationKind.WATCH:
        return
    result = record.result if isinstance(record.result, dict) else {}
    raise ContinueUnavailable(
        "订阅检查不能从检查点继续：已完成的检查都已保存；重新调用 check_updates 检查其余订阅",
        operation_id=operation_id,
        kind=record.kind.value,
        unchecked=[str(w) for w in result.get("unchecked") or []],
        next_step=unchecked_step(result) or "check_updates(watch_id='all')",
    )


def _continue_runner(services: Any, jobs: Any = None, operation_id: str | None = None) -> Any:
    """The runner that continues an operation from its checkpoint (`ctx.resume_from`): a
    citation walk's own runner for its checkpoint, else the search pipeline's."""
    record = jobs.status(operation_id) if jobs is not None and operation_id else None
    if record is not None and isinstance(record.checkpoint, dict) and "tool" in record.checkpoint:
        from cnki_mcp.server.tools_citations import continue_runner

        return continue_runner(services, record.checkpoint)
    pipeline = services.pipeline
    resume = getattr(pipeline, "continue_search", None)
    if resume is None:
        raise ContinueUnavailable("当前检索流程不支持从检查点继续")
    return resume
