"""Chaos suite, fast tier: many seeded runs of a research search through the production pipeline,
job manager, limiter, human gate and SQLite store on a fake clock, over a backend that injects a
seeded fault schedule (tests/chaos/harness.py). Every run checks the invariants of
docs/reliability.md; failing seeds are printed with the command that replays them.

`CNKI_CHAOS_SEEDS=N` runs N seeds (default 30); `CNKI_CHAOS_SEED=n` replays one;
`CNKI_CHAOS_REPORT=path` writes the figures as JSON."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from tests.chaos.harness import Outcome, run_seed, seeds_from_env

DEFAULT_SEEDS = 30


async def test_seeded_fault_schedules_keep_every_invariant(tmp_path: Path) -> None:
    outcomes: list[Outcome] = []
    faults: Counter[str] = Counter()
    for seed in seeds_from_env(DEFAULT_SEEDS):
        outcome = await run_seed(seed, tmp_path / f"seed{seed}")
        outcomes.append(outcome)
        faults.update(outcome.faults)
    failed = [o for o in outcomes if o.failures]
    figures = {
        "tier": "fake-backend",
        "runs": len(outcomes),
        "requests": sum(o.requests for o in outcomes),
        "faults_injected": sum(faults.values()),
        "faults_by_kind": dict(sorted(faults.items())),
        "kills_and_continues": sum(o.killed for o in outcomes),
        "watchdog_stops": sum(o.watchdog for o in outcomes),
        "statuses": dict(Counter(o.record.status.value if o.record else "none" for o in outcomes)),
        "invariant_checks": sum(o.checks for o in outcomes),
        "failures": len(failed),
        "failing_seeds": [o.seed for o in failed],
    }
    print("chaos fake-backend figures:", json.dumps(figures, ensure_ascii=False))
    report = os.environ.get("CNKI_CHAOS_REPORT")
    if report:
        Path(report).write_text(json.dumps(figures, ensure_ascii=False, indent=1), encoding="utf-8")
    assert not failed, "\n".join(
        f"seed {o.seed}: {o.failures} -- replay: CNKI_CHAOS_SEED={o.seed} pytest tests/chaos/test_chaos_fake.py"
        for o in failed
    )
