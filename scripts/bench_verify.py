"""verify_references on the labelled reference set (tests/verify_samples.py) against the bundled
corpus: verdict accuracy per class and CNKI requests per entry (docs/benchmarks.md §References).

    .venv/bin/python scripts/bench_verify.py

Runs in-process through `CorpusBackend` (the simulator's own query evaluator and renderers, the
production parsers and pipeline); the same set goes through the MCP client and real Chromium in
tests/e2e/test_verify_e2e.py."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from corpus_backend import CorpusBackend  # noqa: E402
from verify_samples import build  # noqa: E402

from cnki_mcp.clock import FakeClock  # noqa: E402
from cnki_mcp.jobs import JobManager, MemorySink, OperationContext, OperationKind  # noqa: E402
from cnki_mcp.operations import DEFAULT_BUDGETS  # noqa: E402
from cnki_mcp.pipeline.verify import VerifyInput, VerifyResult, verify_references  # noqa: E402
from cnki_mcp.store import Store  # noqa: E402


async def main() -> int:
    samples = build()
    clock = FakeClock()
    site = CorpusBackend()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(Path(tmp) / "data", clock)
        jobs = JobManager(clock, MemorySink())
        out: list[VerifyResult] = []

        async def runner(ctx: OperationContext) -> VerifyResult:
            out.append(await verify_references(VerifyInput(references=[s.text for s in samples]), store, site, ctx))
            return out[-1]

        job = jobs.start(OperationKind.VERIFY, runner, DEFAULT_BUDGETS[OperationKind.VERIFY])
        await clock.run_until_complete(job.finish())
        store.close()
    result = out[0]
    print("| class | entries | correct | accuracy |")
    print("|---|---:|---:|---:|")
    total = good = 0
    for cls in ("verified", "mismatch", "not_found", "ambiguous", "unparsable"):
        pairs = [(s, e) for s, e in zip(samples, result.entries, strict=True) if s.verdict == cls]
        ok = sum(
            1 for s, e in pairs if e.verdict == s.verdict and (cls != "mismatch" or tuple(e.fields) == s.fields)
        )
        total += len(pairs)
        good += ok
        print(f"| {cls} | {len(pairs)} | {ok} | {ok / len(pairs):.3f} |")
    print(f"| **all** | {total} | {good} | {good / total:.3f} |")
    fabricated_verified = sum(
        1 for s, e in zip(samples, result.entries, strict=True) if s.verdict == "not_found" and e.verdict == "verified"
    )
    print(f"\nfabricated entries verified: {fabricated_verified}")
    req = dict(site.requests)
    print(f"requests: {sum(req.values())} ({req}), per entry {sum(req.values()) / total:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
