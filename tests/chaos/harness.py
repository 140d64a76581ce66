"""The chaos suite's fake-backend harness: the production research pipeline, job manager, limiter,
human gate and SQLite store on a fake clock, over `ChaosSite`, a SiteBackend that answers like
`tests/pipeline_fakes.SimSite` but draws a fault for every request from a seeded schedule:
429/5xx bursts, slow answers and answers that never come, verification and login pages on any page
type, truncated and script-rendered pages, empty grids, a browser crash, and a process kill at a
random request followed by a restart and `continue`.

Every run checks the invariants of docs/reliability.md and returns what failed, so a failing seed
can be printed and replayed (`CNKI_CHAOS_SEED=<n>`)."""

from __future__ import annotations

import asyncio
import os
import random
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import (
    ParserUnsupported,
    RateLimited,
    SiteTemporarilyEmpty,
    SiteUnavailable,
    VerificationSkipped,
)
from cnki_mcp.identity import title_key
from cnki_mcp.jobs import WATCHDOG_GRACE_SECONDS, JobManager, OperationContext, StoreSink
from cnki_mcp.operations import OperationKind, OperationRecord, OperationStatus
from cnki_mcp.pipeline.models import SearchInput, SearchOptions
from cnki_mcp.pipeline.research import ResearchPipeline
from cnki_mcp.query.plan import plan_explicit
from cnki_mcp.site.backend import SiteOp
from cnki_mcp.site.human import HumanGate, PageKind, PageState
from cnki_mcp.site.limiter import Limiter
from cnki_mcp.store import Store
from cnki_mcp.store.db import DB_NAME
from tests.component.jobs_support import Killable
from tests.pipeline_fakes import SimSite

PLAN = plan_explicit([["自动驾驶"], ["产品责任"]])
# The budget invariant: active time never passes timeout_seconds by more than this (the watchdog's
# grace plus one request's latency).
SLACK_SECONDS = WATCHDOG_GRACE_SECONDS + 1.0
RETRY_WAITS = (2.0, 4.0)  # site/cnki.py's waits between 429/5xx answers
PERSON_GIVES_UP = 20 * 60.0  # the human gate's timeout

FAULTS = (
    "429",
    "5xx",
    "slow",  # the loader's 30 s timeout ends it (SITE_UNAVAILABLE)
    "hang",  # a browser await that never returns: only the watchdog ends it
    "verification",
    "login",
    "truncated",
    "script_rendered",
    "empty_grid",
    "browser_crash",
)


def seeds_from_env(default: int, var: str = "CNKI_CHAOS_SEEDS") -> list[int]:
    """`CNKI_CHAOS_SEED=n` replays one seed; `CNKI_CHAOS_SEEDS=N` runs seeds 0..N-1."""
    one = os.environ.get("CNKI_CHAOS_SEED")
    if one:
        return [int(one)]
    return list(range(int(os.environ.get(var, default))))


class Killed(BaseException):
    """The process was SIGKILLed: nothing after this point happens in it."""


@dataclass
class Plan:
    """One seeded run: the fault mix, the budget and where the process is killed."""

    seed: int
    rates: dict[str, float]
    timeout_seconds: float
    max_requests: int
    on_verification: str
    kill_at: int | None
    person_seconds: float

    @classmethod
    def draw(cls, seed: int) -> Plan:
        rng = random.Random(seed * 7919 + 17)
        chosen = rng.sample(FAULTS, rng.randint(1, 4))
        rates = {f: rng.choice((0.01, 0.03, 0.08)) for f in chosen}
        if "hang" in rates:
            rates["hang"] = min(rates["hang"], 0.02)
        return cls(
            seed=seed,
            rates=rates,
            timeout_seconds=float(rng.choice((20, 45, 90, 300, 900))),
            max_requests=rng.choice((40, 120, 600)),
            on_verification=rng.choice(("wait", "skip")),
            kill_at=rng.randint(1, 120) if rng.random() < 0.35 else None,
            person_seconds=rng.choice((3.0, 30.0, PERSON_GIVES_UP + 10)),
        )


@dataclass
class Ledger:
    """What CNKI saw and what the product was given, across process restarts."""

    sent: list[tuple[Any, ...]] = field(default_factory=list)
    answered: set[tuple[Any, ...]] = field(default_factory=set)
    repeats: list[tuple[Any, ...]] = field(default_factory=list)  # sent again after an answer
    grid_rows: list[str] = field(default_factory=list)  # titles of rows answered
    details: list[str] = field(default_factory=list)  # titles of details answered
    faults: Counter[str] = field(default_factory=Counter)
    answered_at: dict[tuple[Any, ...], float] = field(default_factory=dict)  # fake-clock time
    rows_of: dict[tuple[Any, ...], list[str]] = field(default_factory=dict)  # grid key -> titles
    killed_at: float | None = None

    def forgive_unlanded(self, stored_keys: set[str]) -> list[tuple[Any, ...]]:
        """Grid pages answered at the very instant of the kill whose rows never reached the store:
        the answer was still in the process (the next page goes out on an answer's head, before it
        lands), so it counts as in flight, which may be asked again (docs/reliability.md). Returns
        the keys forgiven; every other answered page must be stored."""
        forgiven = [
            key
            for key, rows in self.rows_of.items()
            if key in self.answered
            and self.answered_at.get(key) == self.killed_at
            and any(title_key(t) not in stored_keys for t in rows)
        ]
        for key in forgiven:
            self.answered.discard(key)
            del self.rows_of[key]
        self.grid_rows = [t for rows in self.rows_of.values() for t in rows]
        return forgiven


class _Person:
    """The page under a human step: clear after `seconds` on the fake clock."""

    def __init__(self, clock: FakeClock, seconds: float) -> None:
        self._clock = clock
        self._clear_at = clock.monotonic() + seconds

    async def inspect(self) -> PageState:
        return PageState(PageKind.CLEAR if self._clock.monotonic() >= self._clear_at else PageKind.CHALLENGE)

    async def show(self) -> None:
        return None

    async def minimise(self) -> None:
        return None


class ChaosSite(SimSite):
    """SimSite's answers behind a seeded fault schedule, the real limiter and the real human gate."""

    def __init__(
        self,
        clock: FakeClock,
        plan: Plan,
        ledger: Ledger,
        limiter: Limiter,
        gate: HumanGate,
        *,
        kill: Any = None,
        salt: int = 0,
    ) -> None:
        super().__init__(clock, latency=0.5)
        self.plan = plan
        self.ledger = ledger
        self.limiter = limiter
        self.gate = gate
        self._kill = kill
        self._rng = random.Random(plan.seed * 104729 + salt)
        self._dead = asyncio.Event()  # never set: a dead process never answers
        self.killed = False

    def _draw(self, kind: str) -> str | None:
        for fault, rate in self.plan.rates.items():
            if fault == "empty_grid" and kind != "grid":
                continue
            if fault == "script_rendered" and kind != "detail":
                continue
            if self._rng.random() < rate:
                return fault
        return None

    async def _send(self, op: SiteOp | None, key: tuple[Any, ...]) -> None:
        """One CNKI request: charged and spaced by the limiter, logged, answered after latency."""
        if self.killed:
            await self._dead.wait()
        if (
            self.plan.kill_at is not None
            and self._kill is not None
            and len(self.ledger.sent) + 1 >= self.plan.kill_at
        ):
            self.killed = True
            self.ledger.killed_at = self.clock.monotonic()
            self._kill()  # synchronous: the store is gone before anything else runs
            raise Killed()
        async with self.limiter.slot(budget=op):
            if self.killed:  # a dead process's queued request is never sent
                await self._dead.wait()
            if key in self.ledger.answered:
                self.ledger.repeats.append(key)
            self.ledger.sent.append(key)
            await self.clock.sleep(self.latency)
        if self.killed:
            await self._dead.wait()

    async def _call(self, op: SiteOp | None, key: tuple[Any, ...]) -> None:
        kind = str(key[0])
        slow_answers = 0
        while True:
            await self._send(op, key)
            fault = self._draw(kind)
            if fault is not None:
                self.ledger.faults[fault] += 1
            if fault in ("429", "5xx"):
                slow_answers += 1
                if slow_answers >= 3:
                    raise RateLimited() if fault == "429" else SiteUnavailable(status=503)
                self.limiter.slow()
                await self.clock.sleep(RETRY_WAITS[slow_answers - 1])
                continue
            if fault == "slow":
                await self.clock.sleep(30.0)
                raise SiteUnavailable(reason="Network.loadNetworkResource timed out")
            if fault == "hang":
                await self._dead.wait()
            if fault in ("verification", "login"):
                step = "challenge" if fault == "verification" else "login"
                if self.plan.on_verification == "skip":
                    raise VerificationSkipped(gate=step)
                epoch = self.gate.epoch
                await self.gate.handle(
                    step, _Person(self.clock, self.plan.person_seconds), op, "wait", epoch=epoch
                )
                continue  # the request again, now past the page
            if fault == "truncated":
                raise ParserUnsupported(reason="truncated page")
            if fault == "script_rendered":
                await self._send(op, ("render", *key))  # the rendered tab: its own request
            if fault == "empty_grid":
                self.limiter.slow()
                if slow_answers:
                    raise SiteTemporarilyEmpty()
                slow_answers += 1
                continue
            if fault == "browser_crash":
                raise SiteUnavailable(reason="browser crashed")
            self.ledger.answered.add(key)
            self.ledger.answered_at[key] = self.clock.monotonic()
            self.log.append(key)
            return

    async def grid(self, request: Any, op: SiteOp | None = None, follow: Any = None) -> Any:
        page = await super().grid(request, op)
        name, _ = self.channel(request)
        if name != "lookup":
            self.ledger.rows_of[("grid", name, request.page)] = [r.title for r in page.rows]
        self.ledger.grid_rows.extend(r.title for r in page.rows)
        return page

    async def detail(self, locator: str, op: SiteOp | None = None) -> Any:
        page = await super().detail(locator, op)
        self.ledger.details.append(page.title)
        return page


@dataclass
class Outcome:
    seed: int
    record: OperationRecord | None
    failures: list[str]
    checks: int
    requests: int
    killed: bool
    faults: Counter[str]
    watchdog: bool  # the watchdog ended the operation (or a run of it)


class _Process:
    """One server process: its store, job manager, limiter, gate, pipeline and site."""

    def __init__(
        self, data_dir: Path, clock: FakeClock, plan: Plan, ledger: Ledger, salt: int, *, killable: bool
    ) -> None:
        self.store = Store.open(data_dir, clock)
        self.sink = Killable(StoreSink(self.store))  # after a kill nothing reaches the disk
        self.jobs = JobManager(clock, self.sink, heartbeat_interval=0)
        self.limiter = Limiter(clock, 0.3, 6)
        self.gate = HumanGate(clock, self.limiter, poll_interval=1.0, timeout=PERSON_GIVES_UP)
        self.jobs.human = self.gate
        self.site = ChaosSite(
            clock, plan, ledger, self.limiter, self.gate, kill=self.kill if killable else None, salt=salt
        )
        self.pipe = ResearchPipeline(
            self.site, self.store, clock, workers=8, now_year=lambda: 2026, page_size=20
        )
        self.dead = False

    def kill(self) -> None:
        self.dead = True
        self.sink.dead = True
        self.store.close()

    def runner(self, inp: SearchInput) -> Any:
        async def run(ctx: OperationContext) -> Any:
            return await self.pipe.research(inp, PLAN, ctx)

        return run


async def _finish(clock: FakeClock, proc: _Process, job: Any, bound: float) -> OperationRecord | None:
    """Run until the operation ends or the process is killed (None)."""

    async def until_end_or_kill() -> OperationRecord | None:
        while not job.finished and not proc.dead:
            await clock.sleep(0.25)
        # a killed process's record is whatever reached the disk, not what its memory held
        return None if proc.dead else await job.finish()

    [record] = await clock.run_until_complete(until_end_or_kill(), max_seconds=bound)
    return record


async def run_seed(seed: int, root: Path) -> Outcome:
    """One seeded run with every invariant checked; failures are returned, not raised."""
    plan = Plan.draw(seed)
    ledger = Ledger()
    clock = FakeClock()
    data_dir = root / "data"
    sandbox = root / "cwd"
    sandbox.mkdir(parents=True)
    failures: list[str] = []
    checks = 0
    inp = SearchInput(
        query="自动驾驶 产品责任",
        options=SearchOptions(
            freshness="live",
            max_requests=plan.max_requests,
            timeout_seconds=int(plan.timeout_seconds),
            on_verification="skip" if plan.on_verification == "skip" else "ask",
        ),
    )
    # the person's time is not active time: a run may take that much fake time on top
    bound = plan.timeout_seconds * 3 + PERSON_GIVES_UP * 4 + 3600
    old_cwd = Path.cwd()
    os.chdir(sandbox)
    record: OperationRecord | None = None
    killed = False
    try:
        proc = _Process(data_dir, clock, plan, ledger, salt=0, killable=True)
        job = proc.jobs.start(OperationKind.SEARCH, proc.runner(inp), inp.budget())
        op_id = job.operation_id
        try:
            record = await _finish(clock, proc, job, bound)
        except RuntimeError as exc:  # stuck on something other than the clock, or past the bound
            failures.append(f"operation never ended: {exc}")
            record = None
        if record is None and proc.dead:
            killed = True
            await _bury(clock, proc)
            # restart: a new process on the same data directory, then `continue`
            proc = _Process(data_dir, clock, plan, ledger, salt=1, killable=False)
            ledger.forgive_unlanded(_stored_title_keys(proc.store))
            checks += 1
            failures.extend(_observed_kept(proc.store, ledger))
            proc.jobs.recover_interrupted()
            stored = proc.jobs.status(op_id)
            checks += 1
            if stored is None or stored.status is not OperationStatus.INTERRUPTED:
                failures.append(
                    f"after the kill the operation reads {stored and stored.status}, not interrupted"
                )
            if stored is not None and stored.status is OperationStatus.INTERRUPTED:
                try:
                    job = proc.jobs.continue_(
                        op_id,
                        proc.runner(inp),
                        additional_requests=300,
                        additional_seconds=plan.timeout_seconds,
                    )
                except Exception as exc:  # CONTINUE_UNAVAILABLE before the first checkpoint is fine
                    if getattr(exc, "code", "") != "CONTINUE_UNAVAILABLE":
                        failures.append(f"continue failed: {exc!r}")
                    job = None
                if job is not None:
                    try:
                        record = await _finish(clock, proc, job, bound)
                    except RuntimeError as exc:
                        failures.append(f"continued operation never ended: {exc}")
        if record is not None:
            checks += 1
            if record.status.active:
                failures.append(f"operation still {record.status}")
            checks += 1
            limit = record.budget.timeout_seconds + SLACK_SECONDS
            if record.active_seconds > limit:
                failures.append(
                    f"active_seconds {record.active_seconds} > timeout {record.budget.timeout_seconds} + slack"
                )
            checks += 1
            if record.status is OperationStatus.COMPLETED and record.errors:
                failures.append("completed with errors")
            checks += 1
            crashed = [e for e in record.errors if e.code == "INTERNAL"]
            if crashed:  # a bug in the product, never an outcome of the site's faults
                failures.append(f"ended with an internal error: {crashed[0].message}")
        checks += 1
        if ledger.repeats:
            failures.append(
                f"requests sent again after their answer was observed: {sorted(set(ledger.repeats))[:5]}"
            )
        checks += 1
        failures.extend(_observed_kept(proc.store, ledger))
        await proc.jobs.shutdown()
        proc.store.close()
        checks += 1
        failures.extend(_integrity(data_dir))
        checks += 1
        failures.extend(_outside(root, data_dir, sandbox))
    finally:
        os.chdir(old_cwd)
    watchdog = record is not None and any(
        e.code == "BUDGET_EXHAUSTED" and e.details.get("stage") is not None for e in record.errors
    )
    return Outcome(seed, record, failures, checks, len(ledger.sent), killed, ledger.faults, watchdog)


async def _bury(clock: FakeClock, proc: _Process) -> None:
    """The dead process's tasks are dropped (a SIGKILL runs no cleanup that reaches the disk)."""
    await proc.jobs.shutdown()
    for _ in range(50):
        await asyncio.sleep(0)


def _stored_title_keys(store: Store) -> set[str]:
    conn = sqlite3.connect(store.path)
    try:
        return {row[0] for row in conn.execute("SELECT title_key FROM papers")}
    finally:
        conn.close()


def _observed_kept(store: Store, ledger: Ledger) -> list[str]:
    """Every grid row and detail page the product was given is in the store."""
    conn = sqlite3.connect(store.path)
    try:
        keys = {row[0] for row in conn.execute("SELECT title_key FROM papers")}
        confirmed = {
            row[0]
            for row in conn.execute(
                "SELECT p.title_key FROM papers p JOIN details d ON d.record_ref = p.record_ref"
            )
        }
    finally:
        conn.close()
    lost_rows = [t for t in dict.fromkeys(ledger.grid_rows) if title_key(t) not in keys]
    lost_details = [t for t in dict.fromkeys(ledger.details) if title_key(t) not in confirmed]
    out = []
    if lost_rows:
        out.append(f"{len(lost_rows)} observed grid rows missing from the store, e.g. {lost_rows[:2]}")
    if lost_details:
        out.append(f"{len(lost_details)} observed details missing from the store, e.g. {lost_details[:2]}")
    return out


def _integrity(data_dir: Path) -> list[str]:
    conn = sqlite3.connect(data_dir / DB_NAME)
    try:
        result = [row[0] for row in conn.execute("PRAGMA integrity_check")]
    finally:
        conn.close()
    return [] if result == ["ok"] else [f"integrity_check: {result[:3]}"]


def _outside(root: Path, data_dir: Path, sandbox: Path) -> list[str]:
    stray = [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and data_dir not in p.parents]
    return [f"files written outside the data directory: {stray[:5]}"] if stray else []
