"""Schema-driven fuzzing of every tool through the MCP client: arguments generated from the
input schemas in docs/tool-schema.json, valid ones and ones a single mutation away from valid.
Every call must come back as a result that validates against the tool's published output
schema (isError or not), or as a JSON-RPC error, and never as INTERNAL (a bug).

No browser: the server runs the real pipeline, jobs and store on a backend, reader and
downloader that fail at once (SITE_UNAVAILABLE), so a call that would visit CNKI ends quickly
as a coded partial or failed operation. One client session serves all examples (its event loop
runs in a thread; each example is one bounded round trip)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.shared.exceptions import MCPError

from cnki_mcp.errors import SiteUnavailable
from cnki_mcp.server.app import build_server
from cnki_mcp.services import Services
from cnki_mcp.settings import Settings
from tests.schema_strategies import invalid_object, valid

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs" / "tool-schema.json").read_text("utf-8"))
TOOLS = {t["name"]: t for t in SCHEMA["tools"]}
CALL_BOUND = 60.0  # seconds for one call (a bound on a hang, never a timing assertion)
INTERNAL_JSONRPC = -32603
FUZZ = settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


class Down:
    """Backend, reader and downloader in one: every CNKI-facing call fails at once."""

    def __init__(self, *_: Any) -> None:
        self.calls = 0

    def _fail(self, *_: Any, **__: Any) -> Any:
        self.calls += 1
        raise SiteUnavailable(reason="fuzz")

    async def grid(self, *a: Any, **k: Any) -> Any:
        return self._fail()

    async def detail(self, *a: Any, **k: Any) -> Any:
        return self._fail()

    async def journal(self, *a: Any, **k: Any) -> Any:
        return self._fail()

    async def identity(self, *a: Any, **k: Any) -> Any:
        return self._fail()

    async def read(self, *a: Any, **k: Any) -> Any:
        return self._fail()

    async def download(self, *a: Any, **k: Any) -> Any:
        return self._fail()

    async def close(self) -> None:
        return None


class Session:
    """An MCP client session on its own event loop thread; `call` is one bounded round trip."""

    def __init__(self, data_dir: Path) -> None:
        self.down = Down()
        settings_ = Settings(data_dir=data_dir, inline_wait_seconds=5.0, request_interval_ms=0)
        self.services: Services | None = None

        def open_services() -> Services:
            self.services = Services.open(
                settings_, backend=self.down,  # type: ignore[arg-type]
                reading_factory=lambda _s: self.down, downloader_factory=lambda _s: self.down,
            )  # fmt: skip
            return self.services

        self._server = build_server(open_services)
        self._loop = asyncio.new_event_loop()
        self._ready: Future[Client] = Future()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._main(),), daemon=True)

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        try:
            async with Client(self._server) as client:
                self._ready.set_result(client)
                await self._stop.wait()
        except BaseException as exc:  # surface a failed start to the waiting test
            if not self._ready.done():
                self._ready.set_exception(exc)
            raise

    def __enter__(self) -> Session:
        self._thread.start()
        self.client = self._ready.result(timeout=CALL_BOUND)
        return self

    def __exit__(self, *_: Any) -> None:
        assert self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=CALL_BOUND)

    def call(self, tool: str, args: dict[str, Any]) -> Any:
        async def one() -> Any:
            try:
                return await self.client.call_tool(tool, args)
            except MCPError as exc:
                return exc

        return asyncio.run_coroutine_threadsafe(one(), self._loop).result(timeout=CALL_BOUND)


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    with Session(tmp_path_factory.mktemp("fuzz") / "data") as s:
        yield s
    assert s.services is not None and s.services.host.started is False  # never a browser


def _check(tool: str, args: dict[str, Any], outcome: Any) -> None:
    if isinstance(outcome, MCPError):
        assert outcome.error.code != INTERNAL_JSONRPC, (tool, args, outcome.error)
        return
    data = outcome.structured_content
    assert isinstance(data, dict), (tool, args, outcome.content)
    jsonschema.validate(data, TOOLS[tool]["outputSchema"])
    assert data.get("code") != "INTERNAL", (tool, args, data)
    failed_record = data.get("status") == "failed" and {"operation_id", "kind"} <= set(data)
    assert not failed_record or outcome.is_error, (tool, args, data)  # a failed operation is an error
    if outcome.is_error:
        assert data["status"] == "failed", (tool, args, data)
        assert isinstance(data["code"], str) and data["errors"], (tool, args, data)


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_generated_arguments_get_a_valid_result_or_a_jsonrpc_error_never_internal(
    session: Session, tool: str
) -> None:
    schema = TOOLS[tool]["inputSchema"]

    @FUZZ
    @given(st.one_of(valid(schema), invalid_object(schema)))
    def one_call(args: dict[str, Any]) -> None:
        _check(tool, args, session.call(tool, args))

    one_call()


def test_an_unknown_tool_is_a_jsonrpc_error(session: Session) -> None:
    outcome = session.call("no_such_tool", {"x": 1})
    assert isinstance(outcome, MCPError) and outcome.error.code == -32602
