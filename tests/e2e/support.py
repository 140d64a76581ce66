"""Shared pieces of the end-to-end tests: `cnki-mcp serve` as a stdio subprocess driven by the SDK's
ClientSession (one task owns the session, tests call it from theirs), bounded polling of
operations, and keys of the simulator's request log (what "the same request" means)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import Client, ClientSession, StdioServerParameters, stdio_client

from cnki_mcp.services import Services
from cnki_mcp.sim.reqlog import LogEntry
from cnki_mcp.sim.server import SimServer
from tests.child_env import child_env
from tests.site_stack import GRID_PATH, is_page_form, wait_for_tab

GRID = GRID_PATH
DETAIL = "/kcms2/article/abstract"
JOURNAL = "/knavi/detail"
ADV_SEARCH = "/kns8s/AdvSearch"
EXPORT = "/dm8/"  # the batch export, /dm8/api/ShowExport (either case of `api`)
BOUND = 180.0  # seconds: a test that would hang fails instead; never a timing assertion
ACTIVE = {"running", "awaiting_user"}

# a two-page live search (the budget and crash-recovery tests run it)
SEARCH: dict[str, Any] = {
    "query": "违约金过高时法院如何酌减",
    "concept_groups": [["违约金", "约定违约金"], ["酌减", "调整"]],
    "year_to": 2025,
    "limit": 10,
    "options": {"max_pages": 2, "candidate_target": 60, "freshness": "live"},
}


def serve_env(data_dir: Path, origin: str, browser: str, **extra: str) -> dict[str, str]:
    env = child_env()
    env.update(
        CNKI_DATA_DIR=str(data_dir),
        CNKI_SITE_ORIGIN=origin,
        CNKI_HEADLESS="1",
        CNKI_REQUEST_INTERVAL_MS="30",
        CNKI_BROWSER_PATH=browser,
        CNKI_LOG_LEVEL="WARNING",
    )
    env.update(extra)
    return env


class StdioServer:
    """`python -m cnki_mcp serve` over stdio. `start()` returns once initialized; `stop()` closes
    stdin (the server shuts down cleanly) or, after a SIGKILL, just drops the dead pipes."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self._params = StdioServerParameters(
            command=sys.executable, args=["-m", "cnki_mcp", "serve"], env=env, cwd=str(cwd)
        )
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._session: ClientSession | None = None
        self.pid: int | None = None

    async def _main(self) -> None:
        async with stdio_client(self._params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            self._session = session
            self._ready.set()
            await self._stop.wait()

    async def start(self) -> StdioServer:
        self._task = asyncio.create_task(self._main())
        async with asyncio.timeout(60):
            waiter = asyncio.create_task(self._ready.wait())
            done, _ = await asyncio.wait({waiter, self._task}, return_when=asyncio.FIRST_COMPLETED)
            if self._task in done:
                waiter.cancel()
                self._task.result()  # raises the start failure
        self.pid = int((await self.call("diagnostics", {}))["process_id"])
        return self

    @property
    def session(self) -> ClientSession:
        assert self._session is not None
        return self._session

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                async with asyncio.timeout(60):
                    await self._task

    async def raw(self, tool: str, args: dict[str, Any]) -> Any:
        async with asyncio.timeout(BOUND):
            return await self.session.call_tool(tool, args)

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """A successful tool result's structured content (fails the test on isError)."""
        result = await self.raw(tool, args)
        assert not result.is_error, (tool, result.structured_content or result.content)
        data = result.structured_content
        assert isinstance(data, dict), result.content
        return data

    async def finish(self, record: dict[str, Any]) -> dict[str, Any]:
        """Long-poll an operation until it leaves running/awaiting_user (bounded)."""
        return await wait_op(self.call, record)


async def wait_op(
    call: Callable[[str, dict[str, Any]], Any],
    record: dict[str, Any],
    *,
    until: Callable[[dict[str, Any]], bool] = lambda r: r["status"] not in ACTIVE,
) -> dict[str, Any]:
    async with asyncio.timeout(BOUND):
        while not until(record):
            record = await call(
                "operation_status", {"operation_id": record["operation_id"], "wait_seconds": 20}
            )
    return record


def request_key(entry: LogEntry) -> tuple[Any, ...] | None:
    """What makes two simulator requests the same CNKI request: grid pages by query, years,
    sort and page; details by record id; journals by the journal served; batch exports by the
    records answered. Other paths: None (not compared)."""
    p = entry.params
    if entry.path.startswith(GRID):
        query = json.dumps(p.get("query"), ensure_ascii=False, sort_keys=True)
        years = json.dumps(p.get("years"), sort_keys=True)
        return ("grid", query, years, p.get("sortField"), p.get("sortType"), p.get("pageNum"))
    if entry.path.startswith(DETAIL):
        return ("detail", p.get("id"))
    if entry.path.startswith(JOURNAL):
        return ("journal", p.get("journal") or p.get("p"))  # opaque `p` differs per token grant
    if entry.path.startswith(EXPORT) and entry.path.lower().endswith("/showexport"):
        return ("export", tuple(sorted(p.get("ids") or ())), p.get("count"))
    return None


def keyed(entries: Iterable[LogEntry]) -> Counter[tuple[Any, ...]]:
    return Counter(k for k in (request_key(e) for e in entries) if k is not None)


def repeated(counts: Counter[tuple[Any, ...]]) -> dict[tuple[Any, ...], int]:
    return {k: n for k, n in counts.items() if n > 1}


def without_captures(entries: list[LogEntry]) -> list[LogEntry]:
    """The log minus template captures: the grid POST the AdvSearch page itself sends when the
    product clicks its search button, which the simulator marks `page_form` (docs/simulator.md
    "Request log"). A new browser session captures again by design (site-rules.md §1.2); that click
    is not a repeated data request. The mark, not the position: the click's POST and the first
    replayed page travel on different connections and arrive in either order (seen in CI)."""
    return [e for e in entries if not is_page_form(e)]


@dataclass
class InProcess:
    """The production server in this process, its MCP client and the simulator it talks to."""

    client: Client
    services: Services
    sim: SimServer

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        async with asyncio.timeout(BOUND):
            result = await self.client.call_tool(tool, args)
        assert not result.is_error, (tool, result.structured_content or result.content)
        data = result.structured_content
        assert isinstance(data, dict)
        return data

    async def tab(self, fragment: str) -> Any:
        """The browser tab whose URL holds `fragment` (waits for it, bounded)."""
        return await wait_for_tab(self.services.host, fragment, BOUND)
