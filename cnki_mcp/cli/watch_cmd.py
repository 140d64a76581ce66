"""`cnki-mcp watch check [--all | WATCH_ID]`, `cnki-mcp watch list` and `cnki-mcp watch remove
WATCH_ID`: saved searches from a cron job (DESIGN.md "Saved searches"). `check` runs
`check_updates` as an operation on the data directory's store and prints a short digest.

Exit codes of `check`: 0 checked, nothing changed; 1 checked, something new or changed (the digest
says what); 3 stopped early (request budget or a site problem; the digest covers the watches
checked, the rest are named; `--json` carries the operation's `status` and coded `errors`); 130
interrupted (Ctrl-C; the digest of the watches checked before it is printed); 2 an error before
anything ran (`错误 CODE: 说明` on stderr, e.g. DATA_DIRECTORY_IN_USE while the MCP server holds the
data directory, DATA_DIRECTORY_MISSING when it does not exist (never created here), or an unknown
watch). `list` and `remove` exit 2 for the same errors.

When the browser runs headless (no display, or CNKI_HEADLESS=1) nobody can be shown a slider or
a login page, so such a page stops the check at once (VERIFICATION_SKIPPED, exit 3) instead of
waiting the human timeout (20 minutes) in silence; with a display the window is shown and the
check waits for the person, as the MCP tool does."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from cnki_mcp.operations import OperationErrorInfo
    from cnki_mcp.pipeline.watch import CheckReport, WatchInfo, WatchService
    from cnki_mcp.services import Services

EXIT_UNCHANGED = 0
EXIT_CHANGED = 1
EXIT_STOPPED = 3
EXIT_INTERRUPTED = 130  # Ctrl-C, as for every command (cli/main.py)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="watch_command", metavar="ACTION", required=True)
    check = sub.add_parser("check", help="重新运行订阅的检索并打印摘要 / rerun saved searches, print a digest")
    which = check.add_mutually_exclusive_group()
    which.add_argument(
        "watch_id", nargs="?", default=None, help="watch_id 或 search_id（默认全部）/ one watch (default: all)"
    )
    which.add_argument("--all", action="store_true", help="检查全部订阅 / check every watch")
    check.add_argument("--pages", type=int, default=1, choices=range(1, 6), metavar="1-5", help="每个检索式最多读几页 / pages read per query (default 1)")
    check.add_argument(
        "--max-requests", type=request_budget, default=30, help="请求数上限 / request budget (default 30)"
    )
    check.add_argument("--json", action="store_true", help="输出 JSON 报告 / print the JSON report")
    sub.add_parser("list", help="列出订阅 / list watches")
    remove = sub.add_parser("remove", help="取消订阅 / stop watching")
    remove.add_argument(
        "watch_id", help="要取消的订阅：watch_id 或它订阅的 search_id（见 watch list）/ the watch_id or its search_id"
    )


def request_budget(text: str) -> int:
    """argparse type for --max-requests: a whole number of at least 1. Checked as the arguments
    are read: `--max-requests 0` was refused only after the data directory was opened (created
    when missing; DATA_DIRECTORY_IN_USE instead while the server ran)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"不是整数：{text}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"至少为 1：{text}")
    return value


def run(args: argparse.Namespace) -> int:
    from cnki_mcp.services import Services
    from cnki_mcp.settings import load_settings

    settings = load_settings(os.environ)
    if not settings.data_dir.is_dir():
        # nothing to list, check or remove there; opening it would create it, so a typo in
        # CNKI_DATA_DIR left a stray data directory and "no watches" instead of naming the mistake
        from cnki_mcp.errors import DataDirectoryMissing

        raise DataDirectoryMissing(
            f"数据目录 {settings.data_dir} 不存在：没有订阅可列出、检查或取消（检查 CNKI_DATA_DIR）",
            path=str(settings.data_dir),
        )
    services = Services.open(settings, environ=dict(os.environ))  # DATA_DIRECTORY_IN_USE surfaces here
    async def main() -> int:  # one event loop: the browser is closed by the loop that started it
        try:
            if args.watch_command == "list":
                return _list(services)
            if args.watch_command == "remove":
                info = _remove(_service(services), args.watch_id)
                print(f"已取消订阅 {info.watch_id}（{info.question}）")
                return EXIT_UNCHANGED
            return await _check(services, args)
        finally:
            await services.close()

    if args.watch_command == "check":
        from cnki_mcp.cli.serve_cmd import run_like_ctrl_c

        # cron's `timeout`, a closed terminal: end as Ctrl-C does (the digest so far printed, the
        # check `interrupted`, the browser closed), also when started with SIGINT ignored (`&` in
        # a script); SIGTERM killed it on the spot, the check left `running` and the news of the
        # watches already checked never shown
        return run_like_ctrl_c(main)
    return asyncio.run(main())


def _service(services: Services) -> WatchService:
    from cnki_mcp.pipeline.watch import WatchService

    origin = services.settings.site_origin
    return WatchService(services.store, services.backend, services.clock, (origin,) if origin else ())


def _remove(service: WatchService, name: str) -> WatchInfo:
    """`watch remove` takes the watch_id or the search_id it watches, as `watch check` does (both
    are in `watch list`); the search_id was "没有这个订阅" here though `check` took it."""
    from cnki_mcp.errors import InvalidInput

    if name == "all":  # `watches("all")` is every watch; remove takes one
        raise InvalidInput("watch remove 一次取消一个订阅：给出 watch_id（见 cnki-mcp watch list）", field="watch_id")
    [watch] = service.watches(name)  # INVALID_ARGUMENT when neither names a watch
    return service.remove(watch_id=watch.watch_id)


NO_WATCHES = "{}：数据目录里没有订阅的检索；在 AI 客户端中对一次检索调用 watch_search 订阅它"


def _list(services: Services) -> int:
    service = _service(services)
    watches = services.store.list_watches()
    if not watches:  # stderr: the listing on stdout stays empty for scripts
        print(NO_WATCHES.format(services.settings.data_dir), file=sys.stderr)
    for watch in watches:
        info = service.info(watch)
        last = info.last_check_at.isoformat(timespec="seconds") if info.last_check_at else "-"
        print(f"{info.watch_id}\t{info.search_id}\tchecks={info.checks}\tlast={last}\t{info.question}")
    return EXIT_UNCHANGED


async def _check(services: Services, args: argparse.Namespace) -> int:
    from cnki_mcp.jobs import BudgetSpec, OperationKind

    service = _service(services)
    target = args.watch_id or "all"
    if not service.watches(target):  # INVALID_ARGUMENT for an unknown id, before anything starts
        print(NO_WATCHES.format(services.settings.data_dir), file=sys.stderr)  # cron: say why nothing ran

    async def runner(op: Any) -> Any:
        return await service.check(target, op, args.pages)

    headless = _headless(services)
    job = services.jobs.start(
        OperationKind.WATCH,
        runner,
        BudgetSpec(
            max_requests=args.max_requests, timeout_seconds=600, on_verification="skip" if headless else "wait"
        ),
        stage="watch",
        message="检查订阅更新",
    )
    interrupted = False
    try:
        record = await job.finish()
    except asyncio.CancelledError:
        # Ctrl-C (asyncio.run cancels this task): the watches checked so far have their records
        # stored as known, so a later check never reports them again. Their digest is printed
        # here, or a person who pressed Ctrl-C after one watch of several never saw its news.
        interrupted = True
        await services.jobs.shutdown()  # the check ends `interrupted`, its result so far kept
        record = await job.finish()
    from cnki_mcp.pipeline.watch import CheckReport, digest

    report = CheckReport.model_validate(record.result) if record.result else CheckReport()
    try:
        if args.json:
            print(json.dumps(json_report(record.status.value, record.errors, report), ensure_ascii=False, indent=1))
        else:
            stopped_by = "中断" if interrupted else record.errors[0].code if record.errors else None
            print(digest(report, stopped_by if report.unchecked else None))
        sys.stdout.flush()
    except BrokenPipeError:  # `watch check | head`: the exit code still says what the check found
        from cnki_mcp.cli.main import stdout_gone

        stdout_gone()
    for error in record.errors:
        print(f"错误 {error.code}: {error.message}", file=sys.stderr)
        hint = HINTS.get(error.code)
        if hint:
            print(f"提示：{hint}", file=sys.stderr)
    if interrupted:
        print("已中断 / interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return exit_code(record.status.value, report)


def json_report(status: str, errors: Sequence[OperationErrorInfo], report: CheckReport) -> dict[str, Any]:
    """`--json`: the check report with how the operation ended (`status`: completed, partial,
    failed, ...) and its coded `errors`; a script saw exit 3 and `unchecked` but not why."""
    return {
        "status": status,
        "errors": [error.model_dump(mode="json") for error in errors],
        **report.model_dump(mode="json"),
    }


# Next steps for a person reading cron mail (the errors' own messages speak to MCP clients).
HINTS: dict[str, str] = {
    "VERIFICATION_SKIPPED": "知网要求人工验证或登录，而本次检查没有可显示的浏览器窗口（无界面）；"
    "请在 AI 客户端中调用 check_updates，或在有图形显示的环境中运行 cnki-mcp watch check",
    "BUDGET_EXHAUSTED": "用更大的 --max-requests 重新运行 cnki-mcp watch check",
}


def _headless(services: Services) -> bool:
    from cnki_mcp.site.locate import decide_headless

    settings = services.settings
    return decide_headless(settings.headless, platform=sys.platform, display=settings.display)


def exit_code(status: str, report: CheckReport) -> int:
    """0 nothing changed, 1 something new or changed, 3 stopped early (see the module docstring)."""
    if status != "completed":
        return EXIT_STOPPED
    changed = any(c.new_count or c.published_count or c.cited_changed_count for c in report.checks)
    return EXIT_CHANGED if changed else EXIT_UNCHANGED
