"""Issue 3 acceptance, end to end over stdio: a research search is running (simulator latency keeps
it busy for seconds) when `cnki-mcp serve` is SIGKILLed during its enrichment (the batch export
answered, journal pages in flight). A new server on the same data directory reports the operation
`interrupted`; `operation_control continue` runs it to `completed`.

What may be repeated across the two runs: only a request whose answer the first server never
stored — it was in flight (sent, answer not yet written to the store) at the kill, so no checkpoint
or cache could know it: a journal page whose journal has no row in the `journals` table, a detail
page without a row in `details`, or a batch export none of whose papers was filled, as the kill
left the database; at most CNKI_MAX_INFLIGHT of them. Nothing else (grid pages, stored details,
stored journals, exports that filled their papers) may be asked twice. The template capture
(AdvSearch and its own grid click) happens once per browser session by design and is not a data
request."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from cnki_mcp.sim.server import SimServer
from tests.e2e.support import (
    BOUND,
    JOURNAL,
    SEARCH,
    StdioServer,
    keyed,
    repeated,
    request_key,
    serve_env,
    wait_op,
    without_captures,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MAX_INFLIGHT = 3
SCENARIO: dict[str, Any] = {
    "latency": [
        {"path": "/kns8s/brief/grid", "ms": 150},
        {"path": "/kcms2/article/abstract", "ms": 400},
        {"path": "/dm8/", "ms": 400},
        {"path": "/knavi/", "ms": 1500},
    ]
}


class Snapshot:
    """What the database holds: paper refs, {ref with a stored detail: its CNKI filename}, the CNKI
    filenames of papers a batch export filled, and the names of the journals stored."""

    def __init__(self, db: Path) -> None:
        conn = sqlite3.connect(str(db), timeout=5.0)
        try:
            self.refs = {r for (r,) in conn.execute("SELECT record_ref FROM papers")}
            self.details: dict[str, str] = {}
            for ref, data in conn.execute(
                "SELECT d.record_ref, p.data FROM details d JOIN papers p ON p.record_ref = d.record_ref"
            ):
                self.details[ref] = str((json.loads(data).get("native") or {}).get("filename") or "")
            self.exported: set[str] = set()
            for (data,) in conn.execute("SELECT data FROM papers"):
                paper = json.loads(data)
                if paper.get("export_observed_at"):
                    self.exported.add(str((paper.get("native") or {}).get("filename") or ""))
            self.journals = {
                str(json.loads(data).get("name") or "")
                for (data,) in conn.execute("SELECT data FROM journals WHERE data IS NOT NULL")
            }
        finally:
            conn.close()


async def test_killed_server_leaves_an_interrupted_search_that_continues_without_repeats(
    tmp_path: Path, browser_executable: str
) -> None:
    data_dir = tmp_path / "data"
    with SimServer(scenario=SCENARIO).start() as sim:
        env = serve_env(
            data_dir,
            sim.origin,
            browser_executable,
            CNKI_INLINE_WAIT_SECONDS="0",
            CNKI_MAX_INFLIGHT=str(MAX_INFLIGHT),
        )
        first = await StdioServer(env, tmp_path).start()
        try:
            started = await first.call("search", SEARCH)
            op_id = started["operation_id"]
            assert started["status"] == "running"

            def enriching(r: dict[str, Any]) -> bool:
                assert r["status"] in ("running", "awaiting_user"), r  # must not finish first
                if r["stage"] != "enrichment" or not sim.requests_for(JOURNAL):
                    return False
                # killed once a journal page was stored, not merely answered: the simulator logs an
                # answer as it sends it, before the server has written what it read
                return bool(Snapshot(data_dir / "cnki.sqlite3").journals)

            async def poll(r: dict[str, Any]) -> dict[str, Any]:
                async with asyncio.timeout(BOUND):
                    while not enriching(r):
                        r = await first.call("operation_status", {"operation_id": op_id, "wait_seconds": 0.2})
                return r

            before = await poll(started)
            assert before["requests"] > 0
            assert first.pid is not None
            os.kill(first.pid, signal.SIGKILL)
        finally:
            await first.stop()
        # the continuation's requests by arrival time: requests in flight at the kill arrived
        # before it, though the simulator logs them when it answers, after it
        resumed_at = time.time()
        at_kill = Snapshot(data_dir / "cnki.sqlite3")
        refs_at_kill = at_kill.refs
        assert refs_at_kill and at_kill.exported and at_kill.journals  # what was answered was stored

        second = await StdioServer(env, tmp_path).start()
        try:
            status = await second.call("operation_status", {"operation_id": op_id})
            assert status["status"] == "interrupted"
            diag = await second.call("diagnostics", {})
            assert op_id in diag["interrupted_at_start"]
            cont = await second.call("operation_control", {"action": "continue", "operation_id": op_id})
            done = await wait_op(second.call, cont["operation"])
            assert done["status"] == "completed", done["errors"]
            assert done["requests"] > before["requests"]
            refs = sorted(refs_at_kill)
            local: list[dict[str, Any]] = []
            for i in range(0, len(refs), 100):
                args = {"record_refs": refs[i : i + 100], "local_only": True}
                got = await wait_op(second.call, await second.call("get_metadata", args))
                assert got["status"] == "completed", got["errors"]
                local.extend(got["result"]["records"])
            assert len(local) == len(refs)
        finally:
            await second.stop()
        run2 = [e for e in sim.requests if e.wall >= resumed_at]
        everything = keyed(without_captures(sim.requests))

    after = Snapshot(data_dir / "cnki.sqlite3")
    assert refs_at_kill <= after.refs  # no paper observed before the kill was lost
    assert set(at_kill.details) <= set(after.details)  # nor any stored detail
    assert at_kill.exported <= after.exported and at_kill.journals <= after.journals

    ids_of = {r.native_filename: r.id for r in sim.corpus.records}
    detailed_ids = {ids_of.get(f) for f in at_kill.details.values()}
    exported_ids = {ids_of.get(f) for f in at_kill.exported}
    twice = repeated(everything)
    for key in twice:
        assert key[0] in ("detail", "journal", "export"), f"repeated request {key}"
        if key[0] == "detail":
            assert key[1] not in detailed_ids, f"detail {key[1]} was stored before the kill, yet asked again"
        elif key[0] == "journal":
            assert key[1] not in at_kill.journals, f"journal {key[1]} was stored before the kill, yet asked again"
        else:
            assert not set(key[1]) & exported_ids, f"export {key} had filled its papers before the kill"
    assert len(twice) <= MAX_INFLIGHT
    assert all(n == 2 for n in twice.values())
    assert {request_key(e) for e in run2} - {None}  # the continuation did ask CNKI for the rest


RETRIEVAL_SCENARIO: dict[str, Any] = {"latency": [{"path": "/kns8s/brief/grid", "ms": 900}]}
# about 300 of the bundled corpus's papers match: the subject channel pages for seconds
LONG_SEARCH: dict[str, Any] = {
    "query": "模型",
    "concept_groups": [["模型"]],
    "options": {"max_pages": 6, "candidate_target": 300, "freshness": "live"},
}


async def test_a_server_killed_during_retrieval_leaves_a_search_that_continues_from_its_pages(
    tmp_path: Path, browser_executable: str
) -> None:
    """Killed after its first grid pages were stored, before retrieval ended (the checkpoint then
    is the first one plus page events): `continue` completes and asks no stored page again."""
    data_dir = tmp_path / "data"
    with SimServer(scenario=RETRIEVAL_SCENARIO).start() as sim:
        env = serve_env(
            data_dir, sim.origin, browser_executable, CNKI_INLINE_WAIT_SECONDS="0",
            CNKI_MAX_INFLIGHT=str(MAX_INFLIGHT),
        )
        first = await StdioServer(env, tmp_path).start()
        try:
            started = await first.call("search", LONG_SEARCH)
            op_id = started["operation_id"]

            async def poll(r: dict[str, Any]) -> dict[str, Any]:
                async with asyncio.timeout(BOUND):
                    while not (r["stage"] == "retrieval" and Snapshot(data_dir / "cnki.sqlite3").refs):
                        assert r["status"] in ("running", "awaiting_user"), r  # must not finish first
                        r = await first.call("operation_status", {"operation_id": op_id, "wait_seconds": 0.2})
                return r

            before = await poll(started)
            assert first.pid is not None
            os.kill(first.pid, signal.SIGKILL)
        finally:
            await first.stop()
        refs_at_kill = Snapshot(data_dir / "cnki.sqlite3").refs

        second = await StdioServer(env, tmp_path).start()
        try:
            status = await second.call("operation_status", {"operation_id": op_id})
            assert status["status"] == "interrupted" and "continue" in (status["next_step"] or "")
            cont = await second.call("operation_control", {"action": "continue", "operation_id": op_id})
            done = await wait_op(second.call, cont["operation"])
            assert done["status"] == "completed", done["errors"]
            assert done["requests"] > before["requests"]
        finally:
            await second.stop()
        everything = keyed(without_captures(sim.requests))

    assert refs_at_kill <= Snapshot(data_dir / "cnki.sqlite3").refs
    twice = repeated(everything)
    assert len(twice) <= MAX_INFLIGHT and all(n == 2 for n in twice.values()), twice


async def test_a_client_that_closes_during_a_search_leaves_it_interrupted_and_continuable(
    tmp_path: Path, browser_executable: str
) -> None:
    """The client closes stdin (the person quits the assistant): the server exits cleanly, and the
    search it was running is `interrupted` with the continue advice, not `cancelled`."""
    data_dir = tmp_path / "data"
    with SimServer(scenario=RETRIEVAL_SCENARIO).start() as sim:
        env = serve_env(data_dir, sim.origin, browser_executable, CNKI_INLINE_WAIT_SECONDS="0")
        first = await StdioServer(env, tmp_path).start()
        try:
            started = await first.call("search", LONG_SEARCH)
            op_id = started["operation_id"]
            async with asyncio.timeout(BOUND):
                while not Snapshot(data_dir / "cnki.sqlite3").refs:
                    r = await first.call("operation_status", {"operation_id": op_id, "wait_seconds": 0.2})
                    assert r["status"] in ("running", "awaiting_user"), r
        finally:
            await first.stop()  # stdin closed: a clean exit, not a kill

        second = await StdioServer(env, tmp_path).start()
        try:
            idle = await second.call("operation_status", {})
            assert idle["status"] == "idle" and op_id in (idle["next_step"] or "")
            status = await second.call("operation_status", {"operation_id": op_id})
            assert status["status"] == "interrupted", status
            cont = await second.call("operation_control", {"action": "continue", "operation_id": op_id})
            done = await wait_op(second.call, cont["operation"])
            assert done["status"] == "completed", done["errors"]
        finally:
            await second.stop()
        twice = repeated(keyed(without_captures(sim.requests)))
    assert len(twice) <= MAX_INFLIGHT, twice
