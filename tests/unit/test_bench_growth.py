"""The growth benchmark's lower bound (`scripts/bench_growth.py`), on hand-written request logs."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_growth.py"
LAT = {"grid": 0.7, "detail": 0.45, "journal": 0.6, "advsearch": 0.0, "export": 0.7, "home": 0.0}


@pytest.fixture(scope="module")
def growth() -> Any:  # scripts/ is not a package: load the module from its file
    spec = importlib.util.spec_from_file_location("bench_growth", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _grid(t: float, query: str) -> dict[str, Any]:
    return {"t": t, "path": "/kns8s/brief/grid", "method": "POST", "params": {"query": [{"value": query}]}}


def _get(t: float, path: str) -> dict[str, Any]:
    return {"t": t, "path": path, "method": "GET", "params": {}}


def test_bound_is_the_spacing_of_the_requests_when_they_are_many(growth: Any) -> None:
    log = [_get(0.0, "/kns8s/AdvSearch"), *(_grid(1 + i, "a") for i in range(3)),
           *(_get(5 + i, "/kcms2/article/abstract") for i in range(20)), _get(30, "/knavi/detail"),
           _get(31, "/static/app.js")]  # page assets are not CNKI requests
    b = growth.limiter_bound(log, 0.5, LAT)
    assert b["spacing"] == pytest.approx(24 * 0.5 + 0.6)  # 25 requests, the last a journal page
    assert b["chain"] == pytest.approx(0.5 + 3 * 0.7 + 0.45 + 0.6)  # AdvSearch's start, pages, tail
    assert b["bound"] == b["spacing"]


def test_bound_is_the_longest_page_chain_when_one_query_pages_alone(growth: Any) -> None:
    log = [*(_grid(i, "a") for i in range(40)), _grid(50, "b")]
    b = growth.limiter_bound(log, 0.2, LAT)
    assert b["chain"] == pytest.approx(40 * 0.7)  # each page waits for the previous page's cursor
    assert b["bound"] == b["chain"] > b["spacing"]


def test_the_enrichment_tail_of_a_search_reading_by_batch_export_is_one_export_and_one_journal(growth: Any) -> None:
    log = [*(_grid(i, "a") for i in range(3)), _post(4, "/dm8/api/ShowExport"), _post(5, "/dm8/API/ShowExport"),
           _get(6, "/knavi/detail")]
    b = growth.limiter_bound(log, 0.2, LAT)
    assert growth.kind_of(log[3]) == growth.kind_of(log[4]) == "export"
    assert b["chain"] == pytest.approx(3 * 0.7 + 0.7 + 0.6)


def test_the_home_page_a_fresh_profile_visits_first_is_a_request(growth: Any) -> None:
    log = [_get(0.0, "/"), _get(0.1, "/favicon.ico"), _get(0.3, "/kns8s/AdvSearch"), _grid(1, "a")]
    assert [growth.kind_of(e) for e in log] == ["home", "other", "advsearch", "grid"]
    assert growth.limiter_bound(log, 0.2, LAT)["spacing"] == pytest.approx(2 * 0.2 + 0.7)


def test_the_chain_starts_after_the_requests_that_opened_the_session(growth: Any) -> None:
    # a cold session: home page, AdvSearch and the capture click's grid start before the first page,
    # one interval apart at the least, whatever their latency
    log = [_get(0.0, "/"), _get(0.2, "/kns8s/AdvSearch"), _grid(0.5, "capture"),
           *(_grid(0.7 + i, "a") for i in range(30))]
    b = growth.limiter_bound(log, 0.2, LAT)
    assert b["chain"] == pytest.approx(3 * 0.2 + 30 * 0.7)
    assert b["chain_run"] == pytest.approx(3 * 0.2)  # the log carries no durations
    warm = growth.limiter_bound(log[3:], 0.2, LAT)  # a warm session: the chain's page is the first
    assert warm["chain"] == pytest.approx(30 * 0.7)


def test_the_run_bound_charges_the_latencies_the_pages_had(growth: Any) -> None:
    log = [{**_grid(i, "a"), "duration": d} for i, d in enumerate((0.5, 0.9, 0.8))]
    log += [{**_grid(5, "b"), "duration": 2.0}, {**_get(6, "/knavi/detail"), "duration": 0.3}]
    b = growth.limiter_bound(log, 0.2, LAT)
    assert b["chain"] == pytest.approx(3 * 0.7 + 0.6)  # nominal: pages x 0.7 + the journal tail
    assert b["chain_run"] == pytest.approx(0.5 + 0.9 + 0.8 + 0.6)  # the query with the most pages
    assert b["bound_strict_run"] == pytest.approx(max(4 * 0.2 + 0.3, 0.5 + 0.9 + 0.8))  # no tail
    assert b["spacing_run"] == pytest.approx(4 * 0.2 + 0.3)  # ends with the last request's duration
    assert b["bound_run"] == max(b["chain_run"], b["spacing_run"])


def _post(t: float, path: str) -> dict[str, Any]:
    return {"t": t, "path": path, "method": "POST", "params": {}}


def test_a_batch_export_counts_as_an_export_in_either_case_of_api(growth: Any) -> None:
    kinds = [growth.kind_of({"path": p, "method": "POST"}) for p in ("/dm8/api/ShowExport", "/dm8/API/ShowExport")]
    assert kinds == ["export", "export"]
    assert growth.kind_of({"path": "/dm8/other", "method": "POST"}) == "other"


def test_a_run_under_another_policy_builds_its_pipelines_with_that_policy(growth: Any) -> None:
    import argparse
    import sys

    from cnki_mcp.pipeline.policy import DEFAULT_POLICY, EnrichmentStart
    from cnki_mcp.pipeline.research import ResearchPipeline

    sys.path.insert(0, str(SCRIPT.parent))  # bench_policy, which names the ablations
    ap = argparse.ArgumentParser()
    growth.add_arguments(ap)
    args = ap.parse_args(["--policy", "default-enrichment_start"])
    argv = growth._child_argv(args, 300)
    assert argv[argv.index("--policy") + 1] == "default-enrichment_start"  # the child gets it
    saved = ResearchPipeline.__init__.__kwdefaults__
    try:
        growth.use_policy("default")
        assert ResearchPipeline.__init__.__kwdefaults__["policy"] is DEFAULT_POLICY
        growth.use_policy(args.policy)
        policy = ResearchPipeline.__init__.__kwdefaults__["policy"]
        assert policy.name == "default-enrichment_start"
        assert policy.enrichment_start == EnrichmentStart.AFTER_RETRIEVAL
    finally:
        ResearchPipeline.__init__.__kwdefaults__ = saved


def test_requests_that_fit_between_the_pages_cost_the_chain_nothing(growth: Any) -> None:
    # 200 ms apart, two requests fit in a 0.7 s gap between pages; 59 gaps hold 32 requests
    assert growth.shared_chain(60, 32, 0.2, 0.7) == pytest.approx(60 * 0.7)


def test_at_a_long_interval_each_request_beside_the_chain_stretches_it(growth: Any) -> None:
    # 500 ms apart: one request in a gap makes it 1.0 s (+0.3); the first one after the last page's
    # start goes free (0.5 s < its 0.7 s answer), the next ones cost 0.3 s each, like a gap's
    assert growth.shared_chain(60, 32, 0.5, 0.7) == pytest.approx(60 * 0.7 + 31 * 0.3)
    assert growth.shared_chain(2, 1, 0.5, 0.7) == pytest.approx(1.4)  # after the second page, not between
    # 3 requests, 2 pages: one after (free), one between (+0.3), one more after (+0.3): pages at
    # 0 and 1.0, the second answered at 1.7, the last request at 2.0
    assert growth.shared_chain(2, 3, 0.5, 0.7) == pytest.approx(2.0)


def test_pages_further_apart_than_their_latency_wait_for_the_interval(growth: Any) -> None:
    # 1 s between starts, 0.7 s answers: the second page starts at 1.0, the third at 2.0
    assert growth.shared_chain(2, 0, 1.0, 0.7) == pytest.approx(1.7)
    assert growth.shared_chain(3, 0, 1.0, 0.7) == pytest.approx(2.7)


def _exact(pages: int, others: int, interval: float, latency: float) -> float:
    """Every way of spreading the other requests over the gaps and the time after the last page."""
    from itertools import combinations_with_replacement

    best = float("inf")
    for slots in combinations_with_replacement(range(pages), others):  # slot pages - 1: after the last
        counts = [slots.count(i) for i in range(pages)]
        total = sum(max(latency, (counts[i] + 1) * interval) for i in range(pages - 1))
        best = min(best, total + max(latency, counts[pages - 1] * interval))
    return best


def test_the_greedy_placement_is_the_least_time_of_every_placement(growth: Any) -> None:
    for interval in (0.2, 0.5, 1.0):
        for pages in range(1, 5):
            for others in range(0, 7):
                assert growth.shared_chain(pages, others, interval, 0.7) == pytest.approx(
                    _exact(pages, others, interval, 0.7)
                ), (pages, others, interval)


def test_the_strict_bound_is_never_below_the_spacing_or_the_bare_chain(growth: Any) -> None:
    log = [*(_grid(i, "a") for i in range(20)), *(_get(30 + i, "/knavi/detail") for i in range(12))]
    for interval in (0.2, 0.5, 1.0):
        b = growth.limiter_bound(log, interval, LAT)
        assert b["bound_strict"] >= max(b["spacing"], 20 * 0.7) - 1e-9
    b = growth.limiter_bound(log, 0.5, LAT)
    assert b["bound"] == pytest.approx(31 * 0.5 + 0.6)  # the spacing (the chain with its tail: 14.6)
    assert b["bound_strict"] == pytest.approx(20 * 0.7 + 11 * 0.3)  # one read after the last page free


def test_the_strict_bound_charges_the_requests_before_the_chain_and_no_tail(growth: Any) -> None:
    log = [_get(0.0, "/"), _get(0.2, "/kns8s/AdvSearch"), _grid(0.5, "capture"),
           *(_grid(1 + i, "a") for i in range(30)), _post(40, "/dm8/api/ShowExport"), _get(41, "/knavi/detail")]
    b = growth.limiter_bound(log, 0.2, LAT)
    assert b["chain"] == pytest.approx(3 * 0.2 + 30 * 0.7 + 0.7 + 0.6)
    assert b["bound_strict"] == pytest.approx(3 * 0.2 + 30 * 0.7)  # the export and journal fit between pages


def test_reads_before_the_longest_chain_are_not_also_its_tail(growth: Any) -> None:
    # q1 one page, then an export and five journals, then a two-page query: achievable in 5.4 s at
    # 500 ms, so no bound may exceed it
    log = [_grid(0.0, "q1"), _post(0.7, "/dm8/api/ShowExport"), *(_get(1.2 + 0.5 * i, "/knavi/detail") for i in range(5)),
           _grid(4.0, "fb"), _grid(4.7, "fb")]
    b = growth.limiter_bound(log, 0.5, LAT)
    assert b["chain"] == pytest.approx(7 * 0.5 + 2 * 0.7)  # seven starts before it, no read after it
    assert max(b["bound"], b["bound_strict"]) <= 5.4


def test_an_empty_run_makes_a_table_row(growth: Any) -> None:
    run = {"target": 100, "status": "failed", "candidates": 0, "requests": 0, "counts": {}, "grid_queries": 0,
           "wall": 1.0, "server_rss_mb": 0.0, "browser_rss_mb": 0.0, "sim_cpu_s": 0.0, "sim_rss_mb": 0.0, "db_mb": 0.0,
           **growth.limiter_bound([], 0.2, LAT)}
    row = growth.growth_table({100: [run]}).splitlines()[-1]
    assert row.startswith("| 100 | failed |") and row.count("|") == 21


def test_the_timeline_lists_every_request_from_the_call_in_order(growth: Any, tmp_path: Path) -> None:
    log = [{**_grid(0, "a"), "wall": 100.9, "duration": 0.7}, {**_get(0, "/"), "wall": 100.1, "duration": 0.0},
           {**_get(0, "/knavi/detail"), "wall": 101.5, "duration": 0.6}]
    out = tmp_path / "runs" / "warm-100-1.txt"
    growth._timeline(log, 100.0, out)
    lines = [line.split(None, 3) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [(start, end, kind) for start, end, kind, _ in lines] == [
        ("0.10", "0.10", "home"), ("0.90", "1.60", "grid"), ("1.50", "2.10", "journal")]
    assert '"value": "a"' in lines[1][3] and lines[2][3] == '"/knavi/detail"'


def test_a_run_gets_the_question_form_the_idle_wait_and_an_absolute_timeline_directory(
    growth: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import argparse

    monkeypatch.chdir(tmp_path)  # the children run in the repository: a relative path must not land there
    ap = argparse.ArgumentParser()
    growth.add_arguments(ap)
    argv = growth._child_argv(ap.parse_args(["--raw", "--idle", "4", "--timeline", "tl"]), 300)
    assert "--raw" in argv and argv[argv.index("--idle") + 1] == "4.0"
    assert argv[argv.index("--timeline") + 1] == str(tmp_path / "tl")
    plain = growth._child_argv(ap.parse_args([]), 300)
    assert not {"--raw", "--idle", "--timeline"} & set(plain)


def policy_used(growth: Any, name: str) -> Any:
    """The policy a growth child builds its pipelines with under `--policy name` (the defaults
    restored after)."""
    import sys

    from cnki_mcp.pipeline.research import ResearchPipeline

    sys.path.insert(0, str(SCRIPT.parent))  # bench_policy, which names the ablations
    saved = ResearchPipeline.__init__.__kwdefaults__
    try:
        growth.use_policy(name)
        return ResearchPipeline.__init__.__kwdefaults__["policy"]
    finally:
        ResearchPipeline.__init__.__kwdefaults__ = saved


def test_a_numeric_policy_variant_is_the_default_with_that_setting(growth: Any) -> None:
    from cnki_mcp.pipeline.policy import DEFAULT_POLICY

    policy = policy_used(growth, "default+overlap_pages=30,closing_pages=4")
    assert (policy.overlap_pages, policy.closing_pages) == (30, 4)
    assert policy.name == "default+overlap_pages=30,closing_pages=4"
    assert policy.watch_depth == DEFAULT_POLICY.watch_depth  # every other setting the default's
    with pytest.raises(SystemExit):
        growth.use_policy("reference+batch=40")


def test_a_rule_that_acts_only_under_the_limiter_can_be_ablated_by_growth(growth: Any) -> None:
    from cnki_mcp.pipeline.policy import OverlapDepth

    policy = policy_used(growth, "default-overlap_depth")
    assert policy.overlap_depth == OverlapDepth.FIXED and policy.name == "default-overlap_depth"
    from bench_policy import ABLATIONS  # type: ignore[import-not-found]

    assert "overlap_depth" not in ABLATIONS  # the in-process policy bench has no limiter to pace it
