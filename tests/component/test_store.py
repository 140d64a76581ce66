"""The SQLite store: merge rules and identity resolution, TTL caches, searches, operations,
downloads, the directory lock across processes, a corrupt database, and durability."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import CnkiError, DatabaseUnusable, DataDirectoryInUse
from cnki_mcp.models import Author, DetailPage, GridRow, JournalPage, JournalState, NativeId
from cnki_mcp.store import MISMATCH, OPERATIONS_KEPT, PRESENT, SearchEvidence, Store, file_sha256
from tests.paper_samples import sample_detail, sample_row

REPO = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 1, 1, tzinfo=UTC)
URL = "https://kns.cnki.net/kcms2/article/abstract?v=TOKEN1"


def _row(**kw: object) -> GridRow:
    return sample_row(**{"detail_url": URL, **kw})


def _detail(**kw: object) -> DetailPage:
    return sample_detail(**kw)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(wall=T0)


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> Iterator[Store]:
    s = Store.open(tmp_path / "data", clock)
    yield s
    s.close()


def _child(script: str, data_dir: Path, **popen: object) -> subprocess.Popen[str]:
    code = textwrap.dedent(script)
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-c", code, str(data_dir)],
        cwd=REPO,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **popen,
    )


# --- papers: merge rules and identity --------------------------------------------


def test_list_row_after_detail_keeps_confirmed_fields_and_takes_fresh_counts(store: Store) -> None:
    [listed] = store.upsert_from_grid([_row()], T0)
    confirmed = store.upsert_from_detail(
        _detail(), URL, T0 + timedelta(hours=1), expected_ref=listed.record_ref
    )
    assert confirmed.record_ref == listed.record_ref
    later = _row(
        title="深度学习在医学影像中的应用 ", authors=["张三等"], source="计算机学报（网络版）",
        date="2025-01-01", year=2025, cited=42, downloads=0,
        detail_url="https://kns.cnki.net/kcms2/article/abstract?v=TOKEN2",
    )  # fmt: skip
    [again] = store.upsert_from_grid([later], T0 + timedelta(days=2))
    stored = store.get(listed.record_ref)
    assert stored is not None and again == stored
    assert stored.record_ref == listed.record_ref
    assert stored.author_names() == ["张三", "李四"]
    assert stored.authors[0].institutions == ["北京大学"]
    assert stored.source == "计算机学报"
    assert stored.date == "2024-03-15"
    assert stored.year == 2024
    assert stored.doi == "10.1234/jsjx.2024.001"
    assert (stored.cited, stored.downloads) == (42, 0)
    assert stored.locator == "https://kns.cnki.net/kcms2/article/abstract?v=TOKEN2"
    assert stored.detail_confirmed
    assert store.paper_count() == 1


def test_empty_values_never_overwrite_stored_ones(store: Store) -> None:
    [first] = store.upsert_from_grid([_row(abstract="列表摘要")], T0)
    store.upsert_from_grid(
        [_row(authors=[], source=None, date=None, year=None, cited=None, abstract=None)], T0
    )
    stored = store.get(first.record_ref)
    assert stored is not None
    assert stored.author_names() == ["张三", "李四"]
    assert (stored.source, stored.date, stored.year, stored.cited) == ("计算机学报", "2024-03-01", 2024, 3)
    assert stored.abstract == "列表摘要"


def test_grid_row_then_detail_without_expected_ref_joins_by_native_key(store: Store) -> None:
    [listed] = store.upsert_from_grid([_row()], T0)
    paper = store.upsert_from_detail(_detail(title="不同题名格式也按知网编号合并"), URL, T0)
    assert paper.record_ref == listed.record_ref
    assert paper.title == "不同题名格式也按知网编号合并"
    assert store.paper_count() == 1
    stored_detail = store.detail_page(listed.record_ref)
    assert stored_detail is not None and stored_detail.page.doi == "10.1234/jsjx.2024.001"


def test_online_first_row_and_its_detail_page_are_stored_as_one_record(store: Store) -> None:
    # The grid lists an online-first paper as CAPJ, its detail page says CJFQ / CJFDLAST2026.
    [listed] = store.upsert_from_grid([_row(native=NativeId(dbname="CAPJ", filename="SHIT202602024"))], T0)
    page = _detail(native=NativeId(dbcode="CJFQ", dbname="CJFDLAST2026", filename="SHIT202602024"))
    paper = store.upsert_from_detail(page, URL, T0, expected_ref=listed.record_ref)
    assert paper.record_ref == listed.record_ref
    again = store.upsert_from_detail(page, URL, T0)
    [relisted] = store.upsert_from_grid([_row(native=NativeId(dbname="CAPJ", filename="SHIT202602024"))], T0)
    assert again.record_ref == relisted.record_ref == listed.record_ref
    assert store.paper_count() == 1


def test_records_keyed_the_old_dbcode_way_keep_their_refs_after_the_upgrade(
    tmp_path: Path, clock: FakeClock
) -> None:
    data = tmp_path / "old"
    basis = json.dumps(["native", "CJFD:JSJX202403001"], ensure_ascii=False)
    old_ref = "rec_" + hashlib.sha256(basis.encode("utf-8")).hexdigest()[:24]
    capj = json.dumps(["native", "CAPJ:JSJX202403001"], ensure_ascii=False)
    capj_ref = "rec_" + hashlib.sha256(capj.encode("utf-8")).hexdigest()[:24]
    with Store.open(data, clock) as s:
        [a] = s.upsert_from_grid([_row(native=NativeId(dbcode="CJFD", filename="JSJX202403001"))], T0)
        conn = s._conn
        # Rewrite the row as schema version 1 stored it: DBCODE:FILENAME keys and refs, and the
        # online-first listing of the same paper as a second record.
        conn.execute(
            "UPDATE papers SET record_ref = ?, native_key = 'CJFD:JSJX202403001',"
            " data = json_set(data, '$.record_ref', ?)",
            (old_ref, old_ref),
        )
        conn.execute("DELETE FROM paper_keys")
        conn.execute("INSERT INTO paper_keys VALUES ('native:CJFD:JSJX202403001', ?)", (old_ref,))
        row = conn.execute("SELECT title_key, data, created_at, updated_at FROM papers").fetchone()
        other = json.loads(row[1])
        other["record_ref"], other["native"] = capj_ref, {"dbname": "CAPJ", "filename": "JSJX202403001"}
        conn.execute(
            "INSERT INTO papers VALUES (?, ?, 'CAPJ:JSJX202403001', '', ?, 0, ?, ?)",
            (capj_ref, row[0], json.dumps(other), row[2], row[3]),
        )
        conn.execute("INSERT INTO paper_keys VALUES ('native:CAPJ:JSJX202403001', ?)", (capj_ref,))
        conn.execute("PRAGMA user_version = 1")
        assert a.record_ref != old_ref
    with Store.open(data, clock) as s:
        paper = s.upsert_from_detail(_detail(), URL, T0)
        assert paper.record_ref == old_ref
        assert s.paper_count() == 1
        assert s.resolve_ref(capj_ref) == old_ref
        [listed] = s.upsert_from_grid([_row()], T0)
        assert listed.record_ref == old_ref


def test_same_title_never_joins_papers_and_lookup_reports_every_match(store: Store) -> None:
    a, b, c = store.upsert_from_grid(
        [
            _row(native=NativeId(), detail_url="https://kns.cnki.net/a"),
            _row(native=NativeId(), authors=["王五"], detail_url="https://kns.cnki.net/b"),
            _row(native=NativeId(), source=None, detail_url="https://kns.cnki.net/c"),
        ],
        T0,
    )
    assert len({a.record_ref, b.record_ref, c.record_ref}) == 3
    assert store.paper_count() == 3
    found = store.find_by_title_key(" 深度学习在医学影像中的应用")
    assert {p.record_ref for p in found} == {a.record_ref, b.record_ref, c.record_ref}
    assert store.find_by_title_key("深度学习") == []


def test_a_file_name_finds_its_one_paper_and_none_when_two_unmerged_papers_share_it(store: Store) -> None:
    [paper] = store.upsert_from_grid([_row()], T0)
    filename = paper.native.filename if paper.native else ""
    found = store.find_by_filename(f" {filename.lower()} ")  # case and spaces as a person types it
    assert found is not None and found.record_ref == paper.record_ref
    # the same file name in a thesis database: another paper, never joined, so the name is ambiguous
    thesis = _row(title="另一篇学位论文", authors=["王五"], doc_type="硕士",
                  native=NativeId(dbname="CMFD202401", filename=filename), detail_url="https://kns.cnki.net/t")  # fmt: skip
    [other] = store.upsert_from_grid([thesis], T0)
    assert other.record_ref != paper.record_ref
    assert store.find_by_filename(filename) is None and store.find_by_filename("") is None


def test_a_doi_in_any_case_or_resolver_form_finds_its_stored_paper(store: Store) -> None:
    paper = store.upsert_from_detail(_detail(), URL, T0)
    for spelling in ("10.1234/jsjx.2024.001", "10.1234/JSJX.2024.001", "https://doi.org/10.1234/jsjx.2024.001"):
        assert [p.record_ref for p in store.find_by_doi(spelling)] == [paper.record_ref]
    assert store.find_by_doi("10.9999/none") == [] and store.find_by_doi("") == []


def test_same_doi_with_other_title_formatting_is_one_paper(store: Store) -> None:
    first = store.upsert_from_detail(
        _detail(title="Deep Learning: A Survey", native=NativeId(), doi="10.1/ABC"), None, T0
    )
    second = store.upsert_from_detail(
        _detail(title="deep  learning : a survey", native=NativeId(), doi="doi:10.1/abc"), None, T0
    )
    assert second.record_ref == first.record_ref
    assert store.paper_count() == 1


def test_conflicting_native_keys_with_equal_bibliography_stay_apart(store: Store) -> None:
    a, b = store.upsert_from_grid(
        [_row(), _row(native=NativeId(dbname="CJFDLAST2024", filename="JSJX202403999"))], T0
    )
    assert a.record_ref != b.record_ref
    # A bibliography-only row matches both; it joins the older one and never fuses the two.
    [c] = store.upsert_from_grid([_row(native=NativeId(), cited=8)], T0)
    assert c.record_ref == a.record_ref
    assert store.paper_count() == 2


def test_detail_linking_two_records_merges_them_and_the_old_ref_still_resolves(store: Store) -> None:
    by_native = store.upsert_from_detail(_detail(doi=None, source=None), None, T0)
    by_doi = store.upsert_from_detail(_detail(native=NativeId(), source="软件学报", title="Other"), None, T0)
    assert by_native.record_ref != by_doi.record_ref
    both = store.upsert_from_detail(_detail(), None, T0 + timedelta(hours=1))
    assert both.record_ref == by_native.record_ref
    assert store.paper_count() == 1
    assert store.resolve_ref(by_doi.record_ref) == by_native.record_ref
    assert store.papers_by_refs([by_doi.record_ref])[by_doi.record_ref].record_ref == by_native.record_ref


def test_detail_that_fails_the_identity_check_is_never_merged(store: Store) -> None:
    [listed] = store.upsert_from_grid([_row()], T0)
    with pytest.raises(CnkiError) as err:
        store.upsert_from_detail(
            _detail(authors=[Author(name="王五")]), URL, T0, expected_ref=listed.record_ref
        )
    assert err.value.code == "IDENTITY_CONFLICT"
    stored = store.get(listed.record_ref)
    assert stored is not None and not stored.detail_confirmed
    assert store.detail_page(listed.record_ref) is None
    with pytest.raises(CnkiError) as missing:
        store.upsert_from_detail(_detail(), URL, T0, expected_ref="rec_000000000000000000000000")
    assert missing.value.code == "DOCUMENT_NOT_FOUND"


def test_weak_row_seen_twice_at_the_same_url_is_one_paper(store: Store) -> None:
    row = _row(native=NativeId(), source=None)
    [a] = store.upsert_from_grid([row], T0)
    [b] = store.upsert_from_grid([row.model_copy(update={"cited": 7})], T0)
    assert a.record_ref == b.record_ref and b.cited == 7
    assert store.paper_count() == 1


# --- journals ---------------------------------------------------------------------


async def test_journal_quality_ttl_is_seven_days_when_present_one_day_otherwise(
    store: Store, clock: FakeClock
) -> None:
    page = JournalPage(name="计算机学报", tiers=["北大核心"], composite_if=3.2, state=JournalState.PRESENT)
    store.save_journal("计算机学报", page, PRESENT, clock.now())
    store.save_journal("无名刊", None, "unknown", clock.now())
    await clock.advance(86_400 - 1)
    cached = store.journal_quality(" 计算机学报。", clock.now())
    assert cached is not None and cached.page == page and cached.state == PRESENT
    assert store.journal_quality("无名刊", clock.now()) is not None
    await clock.advance(1)
    assert store.journal_quality("无名刊", clock.now()) is None
    await clock.advance(6 * 86_400 - 1)
    assert store.journal_quality("计算机学报", clock.now()) is not None
    await clock.advance(1)
    assert store.journal_quality("计算机学报", clock.now()) is None


async def test_journal_identity_mismatch_is_remembered_for_one_hour(store: Store, clock: FakeClock) -> None:
    store.save_journal("某学报", JournalPage(name="另一学报"), MISMATCH, clock.now())
    await clock.advance(3_599)
    cached = store.journal_quality("某学报", clock.now())
    assert cached is not None and cached.state == MISMATCH
    await clock.advance(1)
    assert store.journal_quality("某学报", clock.now()) is None


def test_journal_cache_from_another_parser_version_is_a_miss(store: Store) -> None:
    store.save_journal("计算机学报", None, PRESENT, T0, parser_version=4)
    assert store.journal_quality("计算机学报", T0, parser_version=5) is None
    assert store.journal_quality("计算机学报", T0, parser_version=4) is not None


def test_journal_lookups_kept_in_memory_answer_as_the_database_does(store: Store) -> None:
    # a miss, then the lookup saved: the next read sees it (the memo never hides a write)
    assert store.journal_quality("计算机学报", T0) is None
    first = JournalPage(name="计算机学报", tiers=["北大核心"], composite_if=3.2, state=JournalState.PRESENT)
    store.save_journal("计算机学报", first, PRESENT, T0, parser_version=4)
    cached = store.journal_quality("计算机学报", T0, parser_version=4)
    assert cached is not None and cached.page == first
    # read again (now from memory), then replaced: the replacement is what is read
    assert store.journal_quality(" 计算机学报。", T0, parser_version=4) == cached
    second = first.model_copy(update={"tiers": ["CSSCI"], "composite_if": 4.1})
    store.save_journal("计算机学报", second, PRESENT, T0, parser_version=5)
    again = store.journal_quality("计算机学报", T0, parser_version=5)
    assert again is not None and again.page == second
    assert store.journal_quality("计算机学报", T0, parser_version=4) is None
    # repeated lookups, hits and misses alike, read the database once per source
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    try:
        for _ in range(3):
            store.journal_quality("计算机学报", T0, parser_version=5)
            store.journal_quality("无名刊", T0)
    finally:
        store._conn.set_trace_callback(None)
    reads = [s for s in statements if "FROM journals" in s]
    assert len(reads) == 1 and "无名刊" in reads[0]
    assert store.journal_quality("无名刊", T0) is None


# --- searches ---------------------------------------------------------------------


def test_search_evidence_round_trip_and_paging(store: Store) -> None:
    store.save_search("s1", "深度学习", {"mode": "research"}, "fp1", "running", T0)
    rows = [
        SearchEvidence(
            record_ref=f"rec_{i:024x}",
            rank=i,
            channels=("subject", "title") if i % 2 else ("keyword",),
            score=1.0 / (i + 1),
            evidence={"matched": ["深度学习"], "i": i},
            selected=i < 5,
            exclusion=None if i < 5 else "below_threshold",
        )
        for i in range(8)
    ]
    store.save_evidence("s1", list(reversed(rows)))
    page = store.search_results("s1", "selected", offset=2, limit=2)
    assert page.total == 5
    assert page.items == rows[2:4]
    excluded = store.search_results("s1", "excluded", 0, 10)
    assert excluded.total == 3 and [e.record_ref for e in excluded.items] == [r.record_ref for r in rows[5:]]
    assert excluded.items[0].exclusion == "below_threshold"
    assert store.search_results("s1", "all", 6, 10).items == rows[6:]
    record = store.get_search("s1")
    assert record is not None and record.params == {"mode": "research"} and record.status == "running"


def test_cached_search_needs_completed_and_younger_than_ten_minutes(store: Store) -> None:
    store.save_search("s1", "q", {}, "fp", "running", T0)
    assert store.cached_search("fp", T0 + timedelta(seconds=1)) is None
    store.save_search("s2", "q", {}, "fp", "partial", T0)
    assert store.cached_search("fp", T0 + timedelta(seconds=1)) is None
    done = T0 + timedelta(minutes=1)
    store.save_search("s1", "q", {}, "fp", "completed", T0, updated_at=done, summary={"selected": 3})
    hit = store.cached_search("fp", done + timedelta(seconds=599))
    assert hit is not None and hit.search_id == "s1" and hit.summary == {"selected": 3}
    assert hit.created_at == T0
    assert store.cached_search("fp", done + timedelta(seconds=600)) is None
    assert store.cached_search("other", done) is None


# --- operations -------------------------------------------------------------------


def test_operations_keep_the_newest_200_and_never_trim_unfinished(store: Store) -> None:
    store.save_operation("op_running", "search", "running", {"status": "running"}, {"page": 3}, T0, T0)
    for i in range(OPERATIONS_KEPT + 5):
        at = T0 + timedelta(seconds=i + 1)
        store.save_operation(f"op_{i:04d}", "metadata", "completed", {"i": i}, None, at, at)
    recent = store.list_operations(1000)
    assert len(recent) == OPERATIONS_KEPT + 1
    assert recent[0].op_id == f"op_{OPERATIONS_KEPT + 4:04d}"
    assert store.load_operation("op_0004") is None
    assert store.load_operation("op_0005") is not None
    running = store.load_operation("op_running")
    assert running is not None and running.checkpoint == {"page": 3}


def test_an_old_operation_continued_is_kept_when_it_ends_after_200_newer_ones(store: Store) -> None:
    # a search continued while other tools ran: once 200 operations newer than it existed, its
    # own final save trimmed it (kept by creation time), and operation_status said
    # OPERATION_NOT_FOUND for the run just finished
    store.save_operation("op_old", "search", "cancelled", {"status": "cancelled"}, {"page": 3}, T0, T0)
    for i in range(OPERATIONS_KEPT - 1):
        at = T0 + timedelta(seconds=i + 1)
        store.save_operation(f"op_{i:04d}", "metadata", "completed", {"i": i}, None, at, at)
    later = T0 + timedelta(hours=1)
    store.update_operation("op_old", "search", "running", {"status": "running"}, T0, later)
    for i in range(OPERATIONS_KEPT - 1, OPERATIONS_KEPT + 4):  # other tools' operations meanwhile
        at = later + timedelta(seconds=i)
        store.save_operation(f"op_{i:04d}", "metadata", "completed", {"i": i}, None, at, at)
    store.update_operation("op_old", "search", "completed", {"status": "completed"}, T0, later + timedelta(hours=1))
    old = store.load_operation("op_old")
    assert old is not None and old.status == "completed" and old.checkpoint == {"page": 3}
    assert len(store.list_operations(1000)) == OPERATIONS_KEPT
    assert store.load_operation("op_0004") is None  # the ones updated longest ago go instead
    assert store.load_operation("op_0005") is not None


def test_mark_unfinished_interrupted_rewrites_status_and_record(store: Store) -> None:
    store.save_operation("op_a", "search", "running", {"status": "running", "x": 1}, {"round": 2}, T0, T0)
    store.save_operation("op_b", "login", "awaiting_user", {"status": "awaiting_user"}, None, T0, T0)
    store.save_operation("op_c", "export", "completed", {"status": "completed"}, None, T0, T0)
    later = T0 + timedelta(minutes=5)
    changed = store.mark_unfinished_interrupted("服务已重启，可用 continue 继续", later)
    assert sorted(changed) == ["op_a", "op_b"]
    a = store.load_operation("op_a")
    assert a is not None and a.status == "interrupted" and a.updated_at == later
    assert a.record == {"status": "interrupted", "x": 1, "message": "服务已重启，可用 continue 继续",
                        "updated_at": later.isoformat(timespec="microseconds")}  # fmt: skip
    assert a.checkpoint == {"round": 2}
    c = store.load_operation("op_c")
    assert c is not None and c.status == "completed"
    assert store.mark_unfinished_interrupted("again", later) == []


# --- downloads --------------------------------------------------------------------


def test_download_sha256_round_trip(store: Store, tmp_path: Path) -> None:
    body = b"%PDF-1.7\n" + b"x" * 200 + b"\n%%EOF\n"
    path = tmp_path / "paper.pdf"
    path.write_bytes(body)
    digest = file_sha256(path)
    assert digest == hashlib.sha256(body).hexdigest()
    store.record_download("rec_1", "pdf", path, digest, len(body), T0)
    found = store.download_for("rec_1", "pdf")
    assert found is not None and (found.sha256, found.size, found.path) == (digest, len(body), path)
    assert found.intact()
    path.write_bytes(body + b"tampered")
    assert not found.intact()
    assert store.download_for("rec_1", "caj") is None
    with pytest.raises(CnkiError) as err:
        store.record_download("rec_1", "pdf", path, "not-a-hash", 1, T0)
    assert err.value.code == "INVALID_ARGUMENT"


def test_click_recorded_before_is_uncertain_until_its_outcome_arrives(store: Store, tmp_path: Path) -> None:
    first = store.record_click("rec_1", "pdf", "op_1", T0)
    assert store.uncertain_click("rec_1", "pdf") is not None
    store.click_outcome(first, "refused", T0, {"text": "余额不足"})
    assert store.uncertain_click("rec_1", "pdf") is None
    second = store.record_click("rec_1", "pdf", "op_2", T0 + timedelta(minutes=1))
    pending = store.uncertain_click("rec_1")
    assert pending is not None and pending.click_id == second and pending.op_id == "op_2"
    store.record_download("rec_1", "pdf", tmp_path / "f.pdf", "0" * 64, 100, T0 + timedelta(minutes=2))
    assert store.uncertain_click("rec_1", "pdf") is None
    outcomes = [c.outcome for c in store.clicks_for("rec_1")]
    assert outcomes == ["refused", "downloaded"]


def test_a_click_answered_by_an_invalid_file_stays_uncertain_until_a_later_click_downloads(
    store: Store, tmp_path: Path
) -> None:
    # CNKI handled the order and sent an HTML page under a PDF name (or a PDF without its end):
    # whether it charged is unknown, so the click is not replayed without retry (site-rules §2.7)
    first = store.record_click("rec_1", "pdf", "op_1", T0)
    store.click_outcome(first, "invalid_file", T0, {"reason": "no_pdf_signature"})
    pending = store.uncertain_click("rec_1", "pdf")
    assert pending is not None and pending.click_id == first and pending.outcome == "invalid_file"
    assert store.uncertain_click("rec_1", "caj") is None
    second = store.record_click("rec_1", "pdf", "op_2", T0 + timedelta(minutes=1))  # retry=true
    store.record_download("rec_1", "pdf", tmp_path / "f.pdf", "0" * 64, 100, T0 + timedelta(minutes=2))
    assert store.uncertain_click("rec_1", "pdf") is None and store.uncertain_click("rec_1") is None
    assert [(c.click_id, c.outcome) for c in store.clicks_for("rec_1")] == [
        (first, "invalid_file"), (second, "downloaded")
    ]


@pytest.mark.parametrize("unknown", [None, "invalid_file"])
@pytest.mark.parametrize("settled", ["site_error", "skipped", "refused", "not_clicked"])
def test_an_uncertain_click_no_longer_stops_calls_once_a_later_click_of_its_format_settled(
    store: Store, unknown: str | None, settled: str
) -> None:
    # A later click of the format is only made with retry=true: the caller took the first click's
    # risk. Once it settled without CNKI taking the order (whose message says "无需 retry"), the
    # next call without retry was still SIDE_EFFECT_UNCERTAIN for the first click (site-rules §2.7)
    first = store.record_click("rec_1", "pdf", "op_1", T0)
    if unknown is not None:
        store.click_outcome(first, unknown, T0, {"reason": "no_pdf_signature"})
    second = store.record_click("rec_1", "pdf", "op_2", T0 + timedelta(minutes=1))
    pending = store.uncertain_click("rec_1", "pdf")
    assert pending is not None and pending.click_id == second  # the retried click, still out
    store.click_outcome(second, settled, T0 + timedelta(minutes=2), {"status": 429})
    assert store.uncertain_click("rec_1", "pdf") is None and store.uncertain_click("rec_1") is None
    # its file may still come late: it stays among the clicks whose file is reconciled
    assert [c.click_id for c in store.open_clicks("rec_1", "pdf")] == [first]


def test_a_later_click_settled_on_another_format_or_itself_invalid_keeps_a_click_uncertain(store: Store) -> None:
    first = store.record_click("rec_1", "pdf", "op_1", T0)
    store.click_outcome(first, "invalid_file", T0, {})
    caj = store.record_click("rec_1", "caj", "op_2", T0 + timedelta(minutes=1))
    store.click_outcome(caj, "refused", T0, {"text": "余额不足"})
    pending = store.uncertain_click("rec_1", "pdf")
    assert pending is not None and pending.click_id == first  # a CAJ click took no PDF risk
    again = store.record_click("rec_1", "pdf", "op_3", T0 + timedelta(minutes=2))
    store.click_outcome(again, "invalid_file", T0, {})
    pending = store.uncertain_click("rec_1", "pdf")
    assert pending is not None and pending.click_id == again and pending.outcome == "invalid_file"
    assert [c.click_id for c in store.open_clicks("rec_1", "pdf")] == [again, first]


# --- lock, corruption, durability -------------------------------------------------

_TRY_OPEN = """
import sys
from pathlib import Path
from cnki_mcp.clock import SystemClock
from cnki_mcp.errors import CnkiError
from cnki_mcp.store import Store
try:
    s = Store.open(Path(sys.argv[1]), SystemClock(), lock_timeout=0.2)
except CnkiError as exc:
    print(exc.code)
else:
    print("OPENED", s.paper_count())
    s.close()
"""


def test_second_process_gets_data_directory_in_use_and_the_first_keeps_working(
    tmp_path: Path, clock: FakeClock
) -> None:
    data = tmp_path / "data"
    first = Store.open(data, clock)
    try:
        out, err = _child(_TRY_OPEN, data).communicate(timeout=60)
        assert out.strip() == "DATA_DIRECTORY_IN_USE", err
        [paper] = first.upsert_from_grid([_row()], T0)
        assert first.get(paper.record_ref) is not None
    finally:
        first.close()
    out, err = _child(_TRY_OPEN, data).communicate(timeout=60)
    assert out.strip() == "OPENED 1", err
    reopened = Store.open(data, clock)
    assert reopened.get(paper.record_ref) is not None
    reopened.close()


def test_second_open_in_the_same_process_is_refused_too(tmp_path: Path, clock: FakeClock) -> None:
    with Store.open(tmp_path, clock), pytest.raises(DataDirectoryInUse) as err:
        Store.open(tmp_path, clock, lock_timeout=0.05)
    assert err.value.code == "DATA_DIRECTORY_IN_USE"


def test_garbage_database_is_moved_aside_and_a_fresh_one_started(tmp_path: Path, clock: FakeClock) -> None:
    garbage = b"this is not an sqlite database\x00" * 200
    (tmp_path / "cnki.sqlite3").write_bytes(garbage)
    (tmp_path / "cnki.sqlite3-wal").write_bytes(b"stale wal")
    with Store.open(tmp_path, clock) as store:
        assert store.notices and "cnki.sqlite3.corrupt-20260101T000000Z" in store.notices[0]
        [paper] = store.upsert_from_grid([_row()], T0)
        assert store.get(paper.record_ref) is not None
    moved = tmp_path / "cnki.sqlite3.corrupt-20260101T000000Z"
    assert moved.read_bytes() == garbage
    assert (tmp_path / "cnki.sqlite3.corrupt-20260101T000000Z-wal").read_bytes() == b"stale wal"
    with Store.open(tmp_path, clock) as again:
        assert again.notices == [] and again.paper_count() == 1


def test_a_database_set_aside_is_said_in_the_log(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """The log is what a client shows of the server: a database set aside at start is a warning
    there naming where it went (it was only in diagnostics' store_notices, and the person saw an
    empty library and DOCUMENT_NOT_FOUND for their papers)."""
    (tmp_path / "cnki.sqlite3").write_bytes(b"SQLite format 3\x00" + b"\x07" * 8000)
    with caplog.at_level(logging.WARNING, logger="cnki_mcp.store"), Store.open(tmp_path, clock):
        pass
    [moved] = [p for p in tmp_path.glob("cnki.sqlite3.corrupt-*") if not p.name.endswith(("-wal", "-shm"))]
    assert [r.levelno for r in caplog.records if str(moved) in r.getMessage()] == [logging.WARNING]


def test_damaged_pages_fail_the_integrity_check_and_are_set_aside(tmp_path: Path, clock: FakeClock) -> None:
    with Store.open(tmp_path, clock) as store:
        store.upsert_from_grid(
            [
                _row(native=NativeId(dbname="CJFD2024", filename=f"F{i}"), abstract="摘要" * 200)
                for i in range(200)
            ],
            T0,
        )
    db = tmp_path / "cnki.sqlite3"
    raw = bytearray(db.read_bytes())
    assert len(raw) > 16 * 4096
    raw[8 * 4096 : 12 * 4096] = b"\xff" * (4 * 4096)
    db.write_bytes(bytes(raw))
    with Store.open(tmp_path, clock) as store:
        assert store.notices and store.paper_count() == 0
    assert [
        p.read_bytes()
        for p in tmp_path.glob("cnki.sqlite3.corrupt-*")
        if not p.name.endswith(("-wal", "-shm"))
    ] == [bytes(raw)]


@pytest.mark.parametrize("damage", ["deleted", "replaced", "directory_moved"])
def test_a_write_after_the_database_file_went_away_is_data_directory_unusable(
    tmp_path: Path, clock: FakeClock, damage: str
) -> None:
    """The database deleted (or the data directory moved, or another file put in its place) under
    a running server: SQLite went on writing into the unlinked file, every tool said completed,
    and all of it was gone at exit. A write now says the file is gone; nothing is taken as saved."""
    data = tmp_path / "data"
    with Store.open(data, clock) as store:
        [paper] = store.upsert_from_grid([_row()], T0)
        db = data / "cnki.sqlite3"
        if damage == "deleted":
            for side in ("", "-wal", "-shm"):
                (data / f"cnki.sqlite3{side}").unlink()
        elif damage == "replaced":
            db.rename(data / "elsewhere.sqlite3")
            db.write_bytes(b"")
        else:
            data.rename(tmp_path / "moved")
        with pytest.raises(CnkiError) as info:
            store.upsert_from_grid([_row(title="运行中被删除之后")], T0)
        assert info.value.code == "DATA_DIRECTORY_UNUSABLE"
        assert info.value.details["reason"] == "database_replaced"
        assert store.get(paper.record_ref) is not None  # reads still answer from the open file


def test_database_from_a_newer_schema_is_refused_and_left_in_place(tmp_path: Path, clock: FakeClock) -> None:
    """A newer release wrote it (the person ran it once, e.g. through uvx): its data is healthy,
    so it is never set aside as corrupt; the start stops with DATABASE_UNUSABLE (upgrade)."""
    with Store.open(tmp_path, clock):
        pass
    conn = sqlite3.connect(tmp_path / "cnki.sqlite3")
    conn.execute("PRAGMA user_version = 99")
    conn.commit()
    conn.close()
    before = (tmp_path / "cnki.sqlite3").read_bytes()
    with pytest.raises(DatabaseUnusable) as info:
        Store.open(tmp_path, clock)
    assert info.value.code == "DATABASE_UNUSABLE" and info.value.details["schema_version"] == 99
    assert list(tmp_path.glob("cnki.sqlite3.corrupt-*")) == []
    assert (tmp_path / "cnki.sqlite3").read_bytes() == before
    with pytest.raises(DatabaseUnusable) as again:  # the lock was released: the next start says the same
        Store.open(tmp_path, clock)
    assert again.value.details == info.value.details  # not reason "locked"


def test_a_database_on_a_file_system_refusing_wal_is_left_in_place(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite keeps the journal mode it had when WAL is refused (no shared memory or locks, as on
    some network mounts; here the `unix-none` VFS, which has neither). The healthy database was
    taken for a damaged one: renamed cnki.sqlite3.corrupt-* and an empty library started."""
    from cnki_mcp.store import db

    with Store.open(tmp_path, clock) as s:
        [kept] = s.upsert_from_grid([_row()], T0)
    conn = sqlite3.connect(tmp_path / "cnki.sqlite3", isolation_level=None)
    conn.execute("PRAGMA journal_mode=DELETE")  # as a copy made by another tool may be
    conn.close()
    before = (tmp_path / "cnki.sqlite3").read_bytes()

    def no_shared_memory(path: Path) -> sqlite3.Connection:
        return sqlite3.connect(f"file:{path}?vfs=unix-none", uri=True, isolation_level=None,
                               check_same_thread=False)  # fmt: skip

    with monkeypatch.context() as patch:
        patch.setattr(db, "_connect", no_shared_memory)
        with pytest.raises(DatabaseUnusable) as info:
            Store.open(tmp_path, clock)
    assert info.value.code == "DATABASE_UNUSABLE" and info.value.details["reason"] == "wal_unsupported"
    assert list(tmp_path.glob("cnki.sqlite3.corrupt-*")) == []
    assert (tmp_path / "cnki.sqlite3").read_bytes() == before
    with Store.open(tmp_path, clock) as s:  # on a local disk again: the library is there
        assert not s.notices and s.get(kept.record_ref) is not None


def _full_disk_after_open(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every connection the store opens from now on gets a disk with no room beyond the pages the
    database has (SQLite answers a write that needs one more "database or disk is full")."""
    from cnki_mcp.store import db

    real = db._connect

    def full(path: Path) -> sqlite3.Connection:
        conn = real(path)
        pages = max(1, conn.execute("PRAGMA page_count").fetchone()[0])
        conn.execute(f"PRAGMA max_page_count = {pages}")
        return conn

    monkeypatch.setattr(db, "_connect", full)


def test_a_full_disk_during_the_upgrade_leaves_the_database_in_place(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database one schema version old on a disk with no room for the upgrade's writes: the
    start stops with DATA_DIRECTORY_UNUSABLE (disk_full) and the database stays where it is. The
    failed migration was read as a damaged database, which was renamed cnki.sqlite3.corrupt-*;
    once the disk had room the next start opened an empty library."""
    from cnki_mcp.errors import DataDirectoryUnusable
    from cnki_mcp.store.db import SCHEMA_VERSION

    with Store.open(tmp_path, clock) as s:
        [kept] = s.upsert_from_grid([_row()], T0)
    conn = sqlite3.connect(tmp_path / "cnki.sqlite3", isolation_level=None)
    conn.execute("DROP TABLE lookup_misses")  # what the newest migration creates
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    conn.execute("VACUUM")  # no free page left for the table to come
    conn.close()
    with monkeypatch.context() as patch:
        _full_disk_after_open(patch)
        with pytest.raises(DataDirectoryUnusable) as info:
            Store.open(tmp_path, clock)
    assert info.value.code == "DATA_DIRECTORY_UNUSABLE" and info.value.details["reason"] == "disk_full"
    assert list(tmp_path.glob("cnki.sqlite3.corrupt-*")) == []
    with Store.open(tmp_path, clock) as s:  # room again: the upgrade runs, the library is there
        assert not s.notices and s.get(kept.record_ref) is not None


def test_a_new_database_on_a_full_disk_is_data_directory_unusable(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No room for a new database's tables: a coded error, not an empty file set aside as
    corrupt and then a raw sqlite3 error."""
    from cnki_mcp.errors import DataDirectoryUnusable

    _full_disk_after_open(monkeypatch)
    with pytest.raises(DataDirectoryUnusable) as info:
        Store.open(tmp_path, clock)
    assert info.value.details["reason"] == "disk_full"
    assert list(tmp_path.glob("cnki.sqlite3.corrupt-*")) == []


_WRITE_THEN_WAIT = """
import sys
from datetime import UTC, datetime
from pathlib import Path
from cnki_mcp.clock import SystemClock
from cnki_mcp.models import GridRow, NativeId
from cnki_mcp.store import Store
s = Store.open(Path(sys.argv[1]), SystemClock())
[p] = s.upsert_from_grid(
    [GridRow(title="崩溃前写入", authors=["甲"], source="乙刊", year=2024,
             native=NativeId(dbcode="CJFD", filename="CRASH1"), cited=1)],
    datetime(2026, 1, 1, tzinfo=UTC),
)
s.save_operation("op_x", "search", "running", {"status": "running"}, {"page": 1},
                 datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 1, tzinfo=UTC))
print(p.record_ref, flush=True)
sys.stdin.read()  # block until killed
"""


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL")
def test_observation_survives_sigkill_right_after_the_upsert(tmp_path: Path, clock: FakeClock) -> None:
    data = tmp_path / "data"
    child = _child(_WRITE_THEN_WAIT, data, stdin=subprocess.PIPE)
    assert child.stdout is not None
    ref = child.stdout.readline().strip()
    assert ref.startswith("rec_"), child.stderr.read() if child.stderr else ""
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    with Store.open(data, clock) as store:
        paper = store.get(ref)
        assert paper is not None and paper.title == "崩溃前写入"
        assert store.mark_unfinished_interrupted("进程已退出", T0) == ["op_x"]


def test_a_start_whose_shared_memory_file_cannot_grow_says_the_disk_is_full(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A start on a full disk with no -shm file left (the last server closed cleanly): SQLite
    cannot grow the new -shm and says only "disk I/O error" (SQLITE_IOERR_SHMSIZE). It was
    io_error, whose advice is to check the disk, where freeing space is the fix."""
    from cnki_mcp.errors import DataDirectoryUnusable
    from cnki_mcp.store import db

    with Store.open(tmp_path, clock):
        pass

    class NoRoomForShm:
        def __init__(self, conn: sqlite3.Connection) -> None:
            self.conn = conn

        def execute(self, *args: object) -> sqlite3.Cursor:
            exc = sqlite3.OperationalError("disk I/O error")
            exc.sqlite_errorname = "SQLITE_IOERR_SHMSIZE"  # type: ignore[attr-defined]
            raise exc

        def close(self) -> None:
            self.conn.close()

    real = db._connect
    monkeypatch.setattr(db, "_connect", lambda path: NoRoomForShm(real(path)))
    with pytest.raises(DataDirectoryUnusable) as info:
        Store.open(tmp_path, clock)
    assert info.value.details["reason"] == "disk_full"
    assert list(tmp_path.glob("cnki.sqlite3.corrupt-*")) == []


def test_the_store_keeps_its_statement_journals_and_sorts_out_of_the_temp_directory(
    tmp_path: Path, clock: FakeClock
) -> None:
    """A full TMPDIR (/tmp) while the data directory's disk had room: a new database's tables
    and an upgrade's migration (one transaction, whose statement journals SQLite writes as temp
    files) failed SQLITE_FULL, said as DATA_DIRECTORY_UNUSABLE disk_full of the data directory,
    where freeing space there changed nothing. (Seen with TMPDIR on a full 150 MB tmpfs; a test
    cannot fill a file system without privileges, so it checks the setting that keeps them in
    memory: temp_store 2 = MEMORY.)"""
    with Store.open(tmp_path, clock) as s, s._read() as conn:
        assert conn.execute("PRAGMA temp_store").fetchone()[0] == 2
