"""A year-old library (docs/benchmarks.md "A year-old library"): a data directory filled through
the production Store APIs, then every tool that reads it called through the SDK's in-memory client
on the real Services (no browser, no CNKI request), each call's CPU time, answer size and peak
memory printed.

What the directory holds for `--records N` (seeded): N papers written as 50-row grid pages and
their abstracts, keywords and institutions as detail pages bring them (`bench_library`'s
generator; 1 % with a 20,000-character full text); 500 searches of 200-400 candidates with their
page logs (the store keeps the newest 300) and one search whose candidates are all N papers; 100
watches on kept searches, each knowing 300 records, with 12 checks of 30 new records; 330
operations (completed, failed, partial, interrupted, awaiting_user; every fifth a search with a
150-entry checkpoint log); 3,000 downloads (small files that are not PDFs: unreadable, as a
damaged download is).

  python scripts/bench.py biglib --records 20000 --work /tmp/biglib

`--work DIR` keeps the directory: a second run skips the filling. Figures depend on the machine
and its load; CPU time is the process's own."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import random
import secrets
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

BIG_SEARCH = "op_" + "b" * 24
T0 = datetime(2025, 12, 1, tzinfo=UTC)

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("diagnostics", {}),
    ("operation_status", {}),
    ("list_watches", {"checks": 0}),
    ("list_watches", {}),
    ("list_watches", {"checks": 10}),
    ("search_library", {"query": "违约"}),  # the first call reads pending downloads
    ("search_library", {"query": "违约"}),
    ("search_library", {"query": "法", "limit": 100}),
    ("search_results", {"search_id": BIG_SEARCH, "scope": "candidates", "view": "titles", "limit": 100, "offset": 19900}),
    ("search_results", {"search_id": BIG_SEARCH, "scope": "eligible", "view": "titles", "limit": 100, "offset": 5000}),
    ("search_results", {"search_id": BIG_SEARCH, "scope": "candidates", "view": "records", "limit": 100, "offset": 5000}),
    ("export_search_log", {"search_id": BIG_SEARCH}),
    ("export_citations", {"search_id": BIG_SEARCH, "scope": "candidates", "limit": 3000, "format": "bibtex", "filename": "p1"}),
    ("export_citations", {"search_id": BIG_SEARCH, "scope": "candidates", "limit": 3000, "offset": 3000, "format": "bibtex", "filename": "p2"}),
    ("export_citations", {"search_id": BIG_SEARCH, "scope": "candidates", "limit": 40, "offset": 6000, "format": "bibtex"}),
    ("export_citations", {"search_id": BIG_SEARCH, "scope": "candidates", "limit": 3000, "format": "ris", "filename": "p3"}),
    ("export_citations", {"search_id": BIG_SEARCH, "scope": "candidates", "limit": 3000, "format": "csv", "filename": "p4"}),
]


def fill(data: Path, n: int) -> None:
    from bench_library import Generator, enrich_store, fill_store  # type: ignore[import-not-found]

    from cnki_mcp.clock import FakeClock
    from cnki_mcp.jobs import BudgetSpec
    from cnki_mcp.operations import (
        OperationErrorInfo,
        OperationKind,
        OperationRecord,
        OperationStatus,
        StoreSink,
    )
    from cnki_mcp.pipeline.models import CoverageEntry, PlanView, SearchSummary
    from cnki_mcp.store import SearchEvidence, Store
    from cnki_mcp.store.watches import KnownRecord

    rng = random.Random(5)
    recs = Generator().records(n)
    subject = {"Key": "Subject", "Title": "", "Logic": 0, "Items": [], "ChildItems": []}
    with Store.open(data, FakeClock(wall=T0)) as store:
        fill_store(store, recs)
        enrich_store(store, recs)
        refs = [r[0] for r in store._conn.execute("SELECT record_ref FROM papers ORDER BY rowid")]

        def search(sid: str, at: datetime, cand: list[str], selected: int) -> None:
            store.save_evidence(sid, [
                SearchEvidence(r, rank=k + 1, channels=("q1",), score=1.0 / (k + 1), evidence={"eligible": k < 3 * selected},
                               selected=k < selected, exclusion=None if k < selected else "ranking_or_quality_threshold")
                for k, r in enumerate(cand)
            ])  # fmt: skip
            summary = SearchSummary(search_id=sid, status="completed", candidate_count=len(cand), selected_count=selected,
                                    coverage=[CoverageEntry(channel="q1", field="subject", pages=8, rows=len(cand))],
                                    plan=PlanView(method="explicit", concepts=[["违约金"]]))  # fmt: skip
            store.save_search(sid, "违约金", {"query": "违约金", "limit": 50}, sid, "completed", at,
                              summary=summary.model_dump(mode="json"))  # fmt: skip

        for i in range(500):
            sid, at = "op_" + secrets.token_hex(12), T0 + timedelta(hours=i)
            for p in range(rng.randint(4, 8)):
                store.log_search_page(sid, "q1", 0, p + 1, {"subject": subject}, observed_at=at, rows=50, kept=50, total=2000, merged=True)
            search(sid, at, rng.sample(refs, rng.randint(200, 400)), 50)
        search(BIG_SEARCH, T0 + timedelta(days=400), refs, 3000)
        kept = [r[0] for r in store._conn.execute("SELECT search_id FROM searches ORDER BY created_at")]
        for w in range(100):
            wid, at = "wat_" + secrets.token_hex(8), T0 + timedelta(days=30, hours=w)
            store.create_watch(wid, kept[w], f"违约金 {w}", {}, at, "2025-01-01",
                               [KnownRecord(r, cited=rng.randint(0, 50)) for r in rng.sample(refs, 300)])  # fmt: skip
            for c in range(12):
                new = rng.sample(refs, 30)
                items = [{"record_ref": r, "title": "违约金酌减规则研究" * 2, "authors": ["王明", "李华"], "source": "法学研究",
                          "date": "2025-06-01", "year": 2025} for r in new]  # fmt: skip
                day = at + timedelta(days=c + 1)
                report = {"watch_id": wid, "search_id": kept[w], "question": f"违约金 {w}", "checked_at": day.isoformat(),
                          "horizon": "2025-01-01", "requests": 2, "rows_read": 100, "new_count": 30, "new": items}  # fmt: skip
                store.save_watch_check(wid, "chk_" + secrets.token_hex(8), day, "2025-01-01", [KnownRecord(r) for r in new], report)
        sink = StoreSink(store)
        kinds = [OperationKind.SEARCH, OperationKind.DOWNLOAD, OperationKind.METADATA, OperationKind.READ, OperationKind.CITATIONS]
        statuses = [OperationStatus.COMPLETED] * 6 + [
            OperationStatus.FAILED, OperationStatus.PARTIAL, OperationStatus.INTERRUPTED, OperationStatus.AWAITING_USER
        ]  # fmt: skip
        for i in range(330):
            kind, status, at = kinds[i % 5], statuses[i % 10], T0 + timedelta(days=60, minutes=7 * i)
            failed = status in (OperationStatus.FAILED, OperationStatus.PARTIAL)
            record = OperationRecord(
                operation_id="op_" + secrets.token_hex(12), kind=kind, status=status, created_at=at,
                updated_at=at + timedelta(minutes=3), budget=BudgetSpec(max_requests=300, timeout_seconds=600),
                checkpoint={"rows": []} if kind is OperationKind.SEARCH else None,
                errors=[OperationErrorInfo(code="SITE_UNAVAILABLE", message="知网暂时不可用", retryable=True)] if failed else [],
            )  # fmt: skip
            sink.save(record)
            if kind is OperationKind.SEARCH:
                for _ in range(150):
                    sink.append_checkpoint(record.operation_id, {"rows": [{"ref": rng.choice(refs), "abstract": "比较法" * 80}]})
        (data / "downloads").mkdir(mode=0o700, exist_ok=True)
        for i, ref in enumerate(rng.sample(refs, min(3000, n))):
            body = b"%PDF-1.4\n" + secrets.token_bytes(200) + b"\n%%EOF\n"
            path = data / "downloads" / f"paper_{i:05d}.pdf"
            path.write_bytes(body)
            store.record_download(ref, "pdf", path, hashlib.sha256(body).hexdigest(), len(body), T0 + timedelta(days=90))


def _peak_mb() -> tuple[int, int]:
    values = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(("VmHWM", "VmRSS")):
                values[line.split(":")[0]] = int(line.split()[1]) // 1024
    return values.get("VmRSS", 0), values.get("VmHWM", 0)


def _reset_peak() -> None:
    with contextlib.suppress(OSError):  # not Linux: the peak is the process's
        Path("/proc/self/clear_refs").write_text("5")


async def call_all(data: Path) -> None:
    from mcp import Client

    from cnki_mcp.pipeline import library
    from cnki_mcp.server.app import build_server
    from cnki_mcp.services import Services
    from cnki_mcp.settings import load_settings

    settings = load_settings({**os.environ, "CNKI_DATA_DIR": str(data), "CNKI_HEADLESS": "1"})
    start = time.process_time()
    async with Client(build_server(lambda: Services.open(settings))) as client:
        print(f"open + handshake: {(time.process_time() - start) * 1000:.0f} ms CPU, RSS {_peak_mb()[0]} MB")
        print("| call | CPU ms | characters | peak RSS MB | outcome |\n|---|---:|---:|---:|---|")
        for name, args in CALLS:
            _reset_peak()
            cpu = time.process_time()
            result = await client.call_tool(name, args)
            spent = (time.process_time() - cpu) * 1000
            text = "".join(getattr(c, "text", "") for c in result.content)
            data_ = result.structured_content or {}
            outcome = data_.get("code") or data_.get("status") or ("next_offset=" + str(data_.get("next_offset")))
            if "pdfs_pending" in data_:
                outcome += f", pdfs_pending={data_['pdfs_pending']}"
            shown = json.dumps(args, ensure_ascii=False).replace("|", "/")
            print(f"| `{name}` {shown} | {spent:.0f} | {len(text):,} | {_peak_mb()[1]} | {outcome} |", flush=True)
            readers = [t for t in getattr(library, "_READERS", {}).values() if t.is_alive()]
            if readers:  # the pending downloads' reader: waited for, so the next calls' CPU is their own
                wall, cpu = time.perf_counter(), time.process_time()
                for reader in readers:
                    reader.join()
                print(f"| (the downloads' reader thread, waited for) | {(time.process_time() - cpu) * 1000:.0f} |"
                      f" wall {time.perf_counter() - wall:.1f} s | | |", flush=True)  # fmt: skip


def bench_biglib(args: argparse.Namespace) -> int:
    sys.path.insert(0, str(Path(__file__).parent))
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="biglib-"))
    data = work / f"library-{args.records}"
    if not (data / "cnki.sqlite3").exists():
        start = time.perf_counter()
        fill(data, args.records)
        size = sum(p.stat().st_size for p in data.glob("cnki.sqlite3*")) / 1e6
        print(f"filled {args.records:,} papers in {time.perf_counter() - start:.0f} s: {size:.0f} MB")
    else:
        print(f"kept from an earlier run: {data} (downloads its calls read are read)")
    for leftover in (data / "exports").glob("p*"):
        leftover.unlink()
    asyncio.run(call_all(data))
    return 0


def add_biglib_parser(sub: Any) -> None:
    p = sub.add_parser("biglib", help="every tool that reads a year-old library: CPU, answer size, memory")
    p.add_argument("--records", type=int, default=20_000)
    p.add_argument("--work", default=None, metavar="DIR", help="keep the data directory here (reused by a later run)")
    p.set_defaults(func=bench_biglib)
