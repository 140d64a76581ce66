"""The offline demo: the bundled simulator, `cnki-mcp serve` as a real stdio subprocess and an
MCP client that runs a research search with live progress, prints the selected papers and the
channel coverage, and exports the top results in GB/T 7714.

Lives in `server/` because it speaks MCP (the only package allowed to import `mcp`)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, TextIO

from mcp import ClientSession, StdioServerParameters, stdio_client

from cnki_mcp.server.progress import SEPARATOR, stage_of
from cnki_mcp.sim.server import SimServer

DEFAULT_QUESTION = "自动驾驶汽车产品责任的归责原则"

# Latency per path so the demo looks like the real site (CNKI answers in 0.3-0.8 s), with a
# shorter request interval than the production default so the demo finishes in about a minute.
DEMO_SCENARIO: dict[str, Any] = {
    "seed": 2026,
    "latency": [
        {"path": "/kns8s/brief/grid", "ms": 300, "jitter": 0.3},
        {"path": "/kcms2/article/abstract", "ms": 150, "jitter": 0.3},
        {"path": "/knavi/", "ms": 150, "jitter": 0.3},
    ],
}
DEMO_INTERVAL_MS = 120


class _Printer:
    """Progress display: updated in place on a terminal; otherwise one line per stage and per
    quarter of a stage's progress, so a log stays readable."""

    STAGES: ClassVar[dict[str, str]] = {
        "starting": "准备",
        "retrieval": "检索（主题/篇名/关键词三通道）",
        "enrichment": "读取摘要（批量导出）与期刊页",
        "feedback": "按共同关键词补充检索",
        "feedback_enrichment": "补充文献的摘要与期刊",
    }

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.tty = out.isatty()
        self.t0 = time.monotonic()
        self.key: tuple[str, int] | None = None
        self.shown = False

    def progress(self, stage: str, fraction: float | None, note: str = "", requests: int | None = None) -> None:
        """`fraction`: of the whole operation so far (the notification's progress / total); `note`:
        the stage's own words and counts (server/progress.py `progress_message`)."""
        label = self.STAGES.get(stage, stage)
        text = f" · {note}" if note else ""
        req = f" · 已发请求 {requests}" if requests is not None else ""
        line = f"  [{time.monotonic() - self.t0:5.1f}s] {label}{text}{req}"
        if self.tty:
            self.out.write("\r\x1b[2K" + line)
            self.shown = True
        else:
            quarter = int(4 * min(fraction, 1.0)) if fraction is not None else 0
            key = (stage, quarter)
            if key == self.key:
                return
            self.key = key
            self.out.write(line + "\n")
        self.out.flush()

    def done(self) -> None:
        if self.tty and self.shown:
            self.out.write("\n")
            self.out.flush()

    def say(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()


def _env(data_dir: Path, origin: str) -> dict[str, str]:
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "PYTHONPATH", "CNKI_BROWSER_PATH", "TMPDIR")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        CNKI_DATA_DIR=str(data_dir),
        CNKI_SITE_ORIGIN=origin,
        CNKI_HEADLESS="1",
        CNKI_REQUEST_INTERVAL_MS=str(DEMO_INTERVAL_MS),
        CNKI_INLINE_WAIT_SECONDS="2",
        CNKI_LOG_LEVEL="WARNING",
    )
    return env


def _structured(result: Any) -> dict[str, Any]:
    data = result.structured_content
    if data is None:
        text = "".join(getattr(c, "text", "") for c in result.content)
        data = json.loads(text) if text.strip().startswith("{") else {"message": text}
    if result.is_error and "operation_id" not in data:  # a failed operation is a record to show
        raise DemoError(f"{data.get('code', 'ERROR')}: {data.get('message', '')}")
    return dict(data)


class DemoError(Exception):
    pass


def _show(printer: _Printer, op: dict[str, Any]) -> None:
    prog = op.get("progress") or {}
    total = prog.get("total")
    printer.progress(
        str(op.get("stage") or op.get("status")),
        (prog.get("done") or 0) / total if total else None,
        str(op.get("message") or ""),
        op.get("requests"),
    )


async def _search(session: ClientSession, question: str, printer: _Printer) -> dict[str, Any]:
    stage = {"name": "starting"}

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        # the stage each notification names (server/progress.py): a stage shorter than one poll shows too
        named = stage_of(message)
        if named in _Printer.STAGES:
            stage["name"] = named
        parts = (message or "").split(SEPARATOR)
        note = parts[2] if len(parts) > 2 and named == stage["name"] else ""
        printer.progress(stage["name"], progress / total if total else None, note)

    args: dict[str, Any] = {
        "query": question,
        "limit": 10,
        "options": {"candidate_target": 150, "max_pages": 3},
    }
    # Like most desktop clients: only the question, no sampling, no concept_groups; the server
    # plans it (segmented question, docs/benchmarks.md "Planning a raw question").
    printer.say("概念规划：客户端只传问题（未声明 sampling，未给 concept_groups），由服务器分词规划")
    printer.say("检索进度:")
    op = _structured(await session.call_tool("search", args, progress_callback=on_progress))
    _show(printer, op)
    while op.get("status") in ("running", "awaiting_user"):
        stage["name"] = str(op.get("stage") or stage["name"])
        op = _structured(
            await session.call_tool(
                "operation_status",
                {"operation_id": op["operation_id"], "wait_seconds": 1},
                progress_callback=on_progress,
            )
        )
        _show(printer, op)
        if op.get("status") == "awaiting_user":
            printer.say(f"\n  需要人工处理：{op.get('message')}")
    printer.done()
    plan = (op.get("result") or {}).get("plan") or {}
    if plan.get("concepts"):
        printer.say(
            f"服务器规划（{plan.get('method')}）："
            + " AND ".join("(" + " | ".join(g) + ")" for g in plan["concepts"])
        )
    return op


def _print_results(summary: dict[str, Any], printer: _Printer) -> None:
    printer.say(
        f"\n候选 {summary.get('candidate_count')} 篇，合格 {summary.get('eligible_count')} 篇，"
        f"入选 {summary.get('selected_count')} 篇，已读摘要 {summary.get('enhanced_count')} 篇"
    )
    printer.say("\n入选论文（相关性 × 来源质量排序）:")
    for i, item in enumerate(summary.get("results") or [], 1):
        authors = "、".join((item.get("authors") or [])[:3]) or "—"
        tiers = " ".join(item.get("tiers") or []) or "—"
        score = item.get("score")
        printer.say(
            f"{i:>2}. {item['title']}\n    {authors} · {item.get('source') or '—'} · {item.get('year') or '—'}"
            f" · {item.get('doc_type') or '—'} · 收录 {tiers} · 得分 {score:.3f}"
            if score is not None
            else f"{i:>2}. {item['title']}"
        )
    printer.say("\n检索通道覆盖:")
    for cov in summary.get("coverage") or []:
        printer.say(coverage_line(cov))


def coverage_line(cov: dict[str, Any]) -> str:
    """One channel of the search's `coverage`, as the demo prints it. A channel answered locally
    (`stopped: "local"`, DESIGN.md "Request policies") was never sent: the subject channel listed
    every result, so it says so instead of "not exhausted" with no total."""
    head = f"  {cov['channel']:<10} {cov.get('reason') or cov.get('field', ''):<36} "
    if cov.get("stopped") == "local":
        return head + "未请求：主题通道已列出全部结果，按已有结果本地计算"
    state = "失败" if cov.get("failed") else ("已穷尽" if cov.get("exhausted") else "未穷尽")
    total = cov.get("total")
    return (
        head
        + f"页 {cov.get('pages', 0)} · 行 {cov.get('rows', 0)} · 总数 {'—' if total is None else total} · {state}"
    )


async def _export(
    session: ClientSession, summary: dict[str, Any], printer: _Printer, tools: set[str]
) -> None:
    refs = [r["record_ref"] for r in (summary.get("results") or [])[:5]]
    if not refs or "export_citations" not in tools:
        return
    data = _structured(
        await session.call_tool("export_citations", {"record_refs": refs, "format": "gbt7714"})
    )
    out = data.get("result", data)
    text = out.get("text") if isinstance(out, dict) else None
    if text:
        printer.say("\nGB/T 7714-2015 参考文献（前 5 篇）:")
        printer.say(text.rstrip())


async def run_demo(
    question: str | None = None, out: TextIO | None = None, *, log: Callable[[str], None] | None = None
) -> int:
    """Run the whole demo; returns the process exit code."""
    printer = _Printer(out or sys.stdout)
    question = question or DEFAULT_QUESTION
    with SimServer(scenario=DEMO_SCENARIO) as sim, tempfile.TemporaryDirectory(prefix="cnki-demo-") as tmp:
        data_dir = Path(tmp) / "data"
        printer.say(f"知网模拟站：{sim.origin}（内置语料，离线）")
        printer.say(f"临时数据目录：{data_dir}")
        printer.say(f"研究问题：{question}\n")
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "cnki_mcp", "serve"], env=_env(data_dir, sim.origin), cwd=tmp
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            tools = {t.name for t in (await session.list_tools()).tools}
            printer.say(
                f"MCP 服务器 {init.server_info.name} {init.server_info.version}，工具 {len(tools)} 个"
            )
            op = await _search(session, question, printer)
            summary = op.get("result") or {}
            failures = op.get("errors") or []
            errors = "; ".join(f"{e.get('code')}: {e.get('message')}" for e in failures)
            # a search that found nothing because every request failed (no browser) ends failed, no result
            if op.get("status") not in ("completed", "partial") or not summary or (failures and not summary.get("results")):
                printer.say(f"检索未完成：{op.get('status')} {errors}")
                if any(e.get("code") == "BROWSER_UNAVAILABLE" for e in failures):
                    printer.say("浏览器无法启动：运行 cnki-mcp doctor 检查，或用 CNKI_BROWSER_PATH 指定 Chrome/Edge/Chromium")
                return 1
            if errors:
                printer.say(f"\n部分请求出错：{errors}")
            _print_results(summary, printer)
            advice = summary.get("advice")
            if advice:
                printer.say(f"\n规划建议（{advice.get('reason')}）：{advice.get('message')}")
                if advice.get("suggested_call"):
                    printer.say("建议调用：" + json.dumps(advice["suggested_call"], ensure_ascii=False))
            await _export(session, summary, printer, tools)
        grids = len(sim.requests_for("/kns8s/brief/grid", "POST"))
        details = len(sim.requests_for("/kcms2/article/abstract", "GET"))
        exports = len(sim.requests_for("/dm8/", "POST"))
        journals = len(sim.requests_for("/knavi/", "GET"))
        printer.say(
            f"\n模拟站收到请求：检索 {grids} 次，批量导出 {exports} 次，详情页 {details} 次，期刊页 {journals} 次"
            f"（请求间隔 {DEMO_INTERVAL_MS} ms，真实使用默认 500 ms）"
        )
    return 0
