"""verify_references end to end: `cnki-mcp serve` over stdio (the SDK's ClientSession) with real
headless Chromium against the simulator, on the whole labelled reference set
(tests/verify_samples.py): verdict accuracy, no fabricated reference verified, requests per
entry counted in the simulator's own request log, and the batch export actually used."""

from __future__ import annotations

import pytest

from cnki_mcp.sim.server import SimServer
from tests.e2e.support import GRID, StdioServer
from tests.verify_samples import build

pytestmark = [pytest.mark.browser, pytest.mark.slow]

EXPORT = "/dm8/api/ShowExport"


async def test_labelled_references_are_judged_through_the_mcp_client(served: StdioServer, sim: SimServer) -> None:
    samples = build()
    before = len(sim.requests)
    record = await served.finish(await served.call("verify_references", {"references": [s.text for s in samples]}))
    assert record["status"] == "completed", record
    entries = record["result"]["entries"]
    assert len(entries) == len(samples)
    right = [
        e["verdict"] == s.verdict and (s.verdict != "mismatch" or tuple(e["fields"]) == s.fields)
        for s, e in zip(samples, entries, strict=True)
    ]
    assert sum(right) / len(samples) >= 0.95
    assert not [e for s, e in zip(samples, entries, strict=True) if s.verdict == "not_found" and e["verdict"] == "verified"]
    log = sim.requests[before:]
    data_requests = [e for e in log if e.path.startswith(GRID) or e.path.startswith(EXPORT)]
    assert any(e.path.startswith(EXPORT) for e in log)
    # requests per entry, counted by the simulator (the one template-capturing grid POST included)
    assert len(data_requests) / len(samples) <= 1.2
    matched = [e for e in entries if e["verdict"] in ("verified", "mismatch")]
    assert matched and all(e["corrected"] and e["record"]["record_ref"] for e in matched)


async def test_bad_verify_arguments_are_coded_errors(served: StdioServer) -> None:
    both = await served.raw("verify_references", {"text": "a", "references": ["b"]})
    assert both.is_error and both.structured_content["code"] == "INVALID_ARGUMENT"
    too_many = await served.raw("verify_references", {"references": ["x"] * 201})
    assert too_many.is_error and too_many.structured_content["code"] == "INVALID_ARGUMENT", too_many
    assert [e["field"] for e in too_many.structured_content["details"]["errors"]] == ["references"]
