"""search_library over a real Store: the FTS index follows every store write (papers, merges,
full texts, downloaded PDFs), CJK substrings of any length, filters, bm25 order, snippets and
paging, bounded full texts, the rebuild on analyzer change and the migration of a store written
by the release before the index (tests/fixtures/store-schema2.sqlite3)."""

from __future__ import annotations

import shutil
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.errors import CnkiError
from cnki_mcp.identity import Paper
from cnki_mcp.models import Author, JournalPage, NativeId
from cnki_mcp.pipeline.library import LibraryPage, snippet
from cnki_mcp.rank import tier_matches
from cnki_mcp.sim.corpus import Corpus
from cnki_mcp.sim.pages.files import pdf_bytes
from cnki_mcp.store import SearchEvidence, Store, file_sha256
from cnki_mcp.store import library as library_index
from cnki_mcp.store.db import _V_LIBRARY_PREFIX, MIGRATIONS, SCHEMA_VERSION
from tests.library_helpers import find, row
from tests.paper_samples import sample_detail

T0 = datetime(2026, 1, 1, tzinfo=UTC)
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "store-schema2.sqlite3"
# written by the release with the first library index (schema 3): tests/fixtures/make_library_schema3.py
FIXTURE_V3 = Path(__file__).resolve().parents[1] / "fixtures" / "library-schema3.sqlite3"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(wall=T0)


def titles(page: LibraryPage) -> list[str]:
    return [r.title for r in page.results]


def code_of(fn: object, *args: object, **kw: object) -> str:
    with pytest.raises(CnkiError) as info:
        fn(*args, **kw)  # type: ignore[operator]
    return info.value.code


def test_grid_rows_are_found_by_cjk_substrings_of_one_two_and_more_characters(
    store: Store, clock: FakeClock
) -> None:
    store.upsert_from_grid(
        [row("违约金过高时的司法酌减规则研究", "A1"), row("深度学习在医学影像中的应用", "A2", authors=["张三"])], T0
    )
    assert titles(find(store, "违约金", clock)) == ["违约金过高时的司法酌减规则研究"]
    assert titles(find(store, "酌减", clock)) == ["违约金过高时的司法酌减规则研究"]
    assert titles(find(store, "用", clock)) == ["深度学习在医学影像中的应用"]  # last character of a title
    assert titles(find(store, "则", clock)) == ["违约金过高时的司法酌减规则研究"]
    assert titles(find(store, "影像 深度", clock)) == ["深度学习在医学影像中的应用"]  # every term, any order
    assert titles(find(store, "张三", clock)) == ["深度学习在医学影像中的应用"]
    assert find(store, "违约 影像", clock).total == 0
    assert find(store, "金额", clock).total == 0  # the characters, never in this order


def test_latin_and_mixed_terms_fold_case_and_width(store: Store, clock: FakeClock) -> None:
    store.upsert_from_grid([row("基于BERT模型的ＡＩ合同审查", "B1")], T0)
    for query in ("bert", "BERT模型", "ai合同", "bert模"):
        assert find(store, query, clock).total == 1, query
    assert find(store, "ber", clock).total == 0  # Latin text matches whole words


def test_invisible_characters_in_a_query_or_a_stored_text_are_not_part_of_a_word(
    store: Store, clock: FakeClock
) -> None:
    [paper] = store.upsert_from_grid([row("违约金过高时的司法酌减规则研究", "Z1")], T0)
    # a PDF's text: a soft hyphen where a line broke, a zero-width space between two words
    assert store.save_fulltext(paper.record_ref, "pdf", "情势\u00ad变更原则与multi\u00adlingual法律\u200b文本", T0)
    for query in ("违约\u200b金", "\ufeff酌减", "司法\u00ad酌减", "情势变更", "multilingual", "法律文本"):
        assert find(store, query, clock).total == 1, query


def test_detail_page_fields_enter_the_index_when_stored(store: Store, clock: FakeClock) -> None:
    [listed] = store.upsert_from_grid(
        [row("深度学习在医学影像中的应用", "JSJX202403001", source="计算机学报", authors=["张三"])], T0
    )
    assert find(store, "卷积网络", clock).total == 0
    detail = sample_detail(
        native=NativeId(dbcode="CJFD", filename="JSJX202403001"),
        abstract="提出一种卷积网络的分割方法",
        keywords=["图像分割"],
        institutions=["清华大学自动化系"],
    )
    store.upsert_from_detail(detail, "https://kns.cnki.net/x", T0, expected_ref=listed.record_ref)
    page = find(store, "卷积网络", clock)
    assert [r.record_ref for r in page.results] == [listed.record_ref]
    assert page.results[0].matched_fields == ["abstract"]
    assert page.results[0].snippet == "提出一种【卷积网络】的分割方法"
    assert find(store, "清华大学", clock).results[0].matched_fields == ["institutions"]
    assert find(store, "图像分割", clock).total == 1


def test_full_texts_are_indexed_and_an_incomplete_one_never_replaces_a_complete_one(
    store: Store, clock: FakeClock
) -> None:
    [paper] = store.upsert_from_grid([row("合同解除研究", "C1")], T0)
    assert store.save_fulltext(paper.record_ref, "html", "第一章 引言。情势变更原则的适用。", T0)
    hit = find(store, "情势变更", clock).results[0]
    assert hit.matched_fields == ["fulltext_html"] and hit.fulltext == ["html"]
    assert hit.snippet == "第一章 引言。【情势变更】原则的适用。"
    assert not store.save_fulltext(paper.record_ref, "html", "试读：不可抗力", T0, complete=False)
    assert find(store, "不可抗力", clock).total == 0 and find(store, "情势变更", clock).total == 1
    # a list row seen again later re-indexes the paper and keeps its full text
    store.upsert_from_grid([row("合同解除研究", "C1", cited=9)], T0 + timedelta(days=1))
    assert find(store, "情势变更", clock).total == 1


def test_full_texts_are_bounded_oldest_first(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(library_index, "TEXTS_KEPT", 2)
    monkeypatch.setattr(library_index, "MAX_TEXT_CHARS", 20)
    papers = store.upsert_from_grid([row(f"论文{i}", f"D{i}") for i in range(3)], T0)
    for i, p in enumerate(papers):
        store.save_fulltext(p.record_ref, "html", f"正文内容第{i}篇" + "长" * 30 + "尾巴", T0 + timedelta(minutes=i))
    assert find(store, "正文内容", clock).total == 2
    assert find(store, "第0篇", clock).total == 0  # the oldest left the store and the index
    assert find(store, "尾巴", clock).total == 0  # cut at MAX_TEXT_CHARS
    assert store.library_size() == (3, 2)


def test_merged_records_leave_one_index_entry_with_both_texts(store: Store, clock: FakeClock) -> None:
    [a] = store.upsert_from_grid([row("同一篇论文的题名", "", native=NativeId(), authors=["甲"], year=2020)], T0)
    store.save_fulltext(a.record_ref, "html", "只有第一条记录读过的全文", T0)
    detail = sample_detail(
        title="同一篇论文的题名", authors=[Author(name="甲")], source="法学研究", year=2020,
        native=NativeId(dbcode="CJFD", filename="E1"), doi=None, abstract="摘要",
    )  # fmt: skip
    merged = store.upsert_from_detail(detail, "https://kns.cnki.net/y", T0, expected_ref=a.record_ref)
    page = find(store, "题名", clock)
    assert page.total == 1 and page.results[0].record_ref == merged.record_ref
    assert find(store, "读过的全文", clock).total == 1
    with sqlite3.connect(store.path) as conn:
        docs = conn.execute("SELECT COUNT(*) FROM library_docs").fetchone()[0]
        papers = conn.execute("SELECT COUNT(*) FROM papers").fetchone()[0]
    assert docs == papers


def test_bm25_puts_a_title_hit_before_a_full_text_hit(store: Store, clock: FakeClock) -> None:
    body, title, *_ = store.upsert_from_grid(
        [row("物权法总论", "F1"), row("论违约金的酌减", "F2"), *(row(f"其他{i}", f"F{i + 3}") for i in range(4))], T0
    )
    store.save_fulltext(body.record_ref, "html", "……违约金……" * 3, T0)
    page = find(store, "违约金", clock)
    assert [r.record_ref for r in page.results] == [title.record_ref, body.record_ref]
    assert page.results[0].score > page.results[1].score


def test_filters_year_document_type_source_tier_and_search_id(store: Store, clock: FakeClock) -> None:
    papers = store.upsert_from_grid(
        [
            row("违约金研究一", "G1", year=2015, source="法学研究"),
            row("违约金研究二", "G2", year=2020, source="法学研究"),
            row("违约金研究三", "G3", year=2022, doc_type="硕士", source="某大学"),
        ],
        T0,
    )
    store.save_journal("法学研究", JournalPage(name="法学研究", tiers=["CSSCI", "北大核心"]), "present", T0)
    assert sorted(titles(find(store, "违约金", clock, year_from=2016))) == ["违约金研究三", "违约金研究二"]
    assert titles(find(store, "违约金", clock, year_from=2016, year_to=2021)) == ["违约金研究二"]
    assert titles(find(store, "违约金", clock, document_types=["硕士"])) == ["违约金研究三"]
    assert find(store, "违约金", clock, source_tiers=["cssci"]).total == 2
    assert find(store, "违约金", clock, source_tiers=["EI"]).total == 0
    # SCI is its own tier (SCI-E its variant), not a part of CSSCI or SSCI
    assert find(store, "违约金", clock, source_tiers=["SCI"]).total == 0
    assert find(store, "违约金", clock, source_tiers=["核心"]).total == 2
    store.save_search("sch_1", "q", {}, "fp", "completed", T0)
    store.save_evidence("sch_1", [SearchEvidence(papers[2].record_ref, rank=1, selected=True)])
    assert titles(find(store, "违约金", clock, search_id="sch_1")) == ["违约金研究三"]
    assert code_of(find, store, "违约金", clock, search_id="sch_none") == "SEARCH_NOT_FOUND"
    assert code_of(find, store, "违约金", clock, year_from=2022, year_to=2020) == "INVALID_ARGUMENT"
    assert code_of(find, store, "，。！", clock) == "INVALID_ARGUMENT"


def test_a_year_of_0_is_no_bound_as_search_reads_it(store: Store, clock: FakeClock) -> None:
    """search and structured_search take year_from/year_to 0 as unset (a client filling its defaults);
    search_library took year_to=0 as 'up to year 0' (nothing found, no word) and year_from=2016 with
    year_to=0 as INVALID_ARGUMENT."""
    store.upsert_from_grid([row("违约金研究一", "G1", year=2015), row("违约金研究二", "G2", year=2020)], T0)
    assert find(store, "违约金", clock, year_to=0).total == 2
    assert find(store, "违约金", clock, year_from=0).total == 2
    assert titles(find(store, "违约金", clock, year_from=2016, year_to=0)) == ["违约金研究二"]


def test_paging_walks_every_hit_once(store: Store, clock: FakeClock) -> None:
    store.upsert_from_grid([row(f"民法典第{i}编的解释", f"H{i}") for i in range(7)], T0)
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = find(store, "民法典", clock, offset=offset, limit=3)
        assert page.total == 7
        seen.extend(r.record_ref for r in page.results)
        offset = page.next_offset
    assert len(seen) == len(set(seen)) == 7


def test_downloaded_pdf_text_is_indexed_on_the_next_search(store: Store, clock: FakeClock) -> None:
    record = next(r for r in Corpus.load().records if r.fulltext)
    [paper] = store.upsert_from_grid([row(record.title, "P1")], T0)
    path = store.data_dir / "downloads" / "p1.pdf"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pdf_bytes(record))
    store.record_download(paper.record_ref, "pdf", path, file_sha256(path), path.stat().st_size, T0)
    words = next(s.text for s in record.fulltext if len(s.text) > 80)[30:60]  # spans wrapped PDF lines
    page = find(store, words, clock)
    assert [r.record_ref for r in page.results] == [paper.record_ref]
    assert "fulltext_pdf" in page.results[0].matched_fields and page.results[0].fulltext == ["pdf"]
    assert store.pdfs_to_index() == []  # read once, not on every search


def archive_pdf(store: Store, record_ref: str, name: str, content: bytes) -> Path:
    """`content` saved under downloads/ and recorded as the paper's PDF, as download_paper does."""
    path = store.data_dir / "downloads" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    store.record_download(record_ref, "pdf", path, file_sha256(path), path.stat().st_size, T0)
    return path


def archived_pdfs(store: Store, prefix: str, count: int) -> list[Paper]:
    """The first `count` corpus papers with a full text stored, each with its PDF downloaded as
    `<prefix><i>.pdf` (oldest first), none of them read yet."""
    records = [r for r in Corpus.load().records if r.fulltext][:count]
    papers = store.upsert_from_grid([row(r.title, f"{prefix.upper()}{i}") for i, r in enumerate(records)], T0)
    for i, (paper, record) in enumerate(zip(papers, records, strict=True)):
        archive_pdf(store, paper.record_ref, f"{prefix}{i}.pdf", pdf_bytes(record))
    return papers


def test_a_pdf_missing_when_the_index_looked_is_indexed_once_it_is_downloaded_again(
    store: Store, clock: FakeClock
) -> None:
    # The person deleted (or moved away) a downloaded PDF before the index read it; the paper's
    # same file downloaded again was never indexed: the missing file was remembered as an
    # unreadable one with that file's SHA-256.
    record = next(r for r in Corpus.load().records if r.fulltext)
    [paper] = store.upsert_from_grid([row(record.title, "P1")], T0)
    path = archive_pdf(store, paper.record_ref, "p1.pdf", pdf_bytes(record))
    content = path.read_bytes()
    path.unlink()
    words = next(s.text for s in record.fulltext if len(s.text) > 80)[30:60]
    assert find(store, words, clock).total == 0
    archive_pdf(store, paper.record_ref, "p1.pdf", content)  # download_paper fetches it again
    page = find(store, words, clock)
    assert [r.record_ref for r in page.results] == [paper.record_ref]
    assert page.results[0].fulltext == ["pdf"]


def test_pdf_texts_past_the_bound_are_not_read_again_at_every_search(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Past TEXTS_KEPT full texts the oldest PDF text left the store, which made its file pending
    # again: every search_library call read those PDFs again and pushed out as many others.
    monkeypatch.setattr(library_index, "TEXTS_KEPT", 2)
    archived_pdfs(store, "q", 3)
    find(store, "的", clock)
    assert store.library_size()[1] == 2  # the bound holds
    assert store.pdfs_to_index() == []  # and nothing is read again at the next search


def test_a_call_reads_a_bounded_number_of_pending_pdfs_and_a_reader_the_rest(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A year of downloads all pending (3,000 files) made one search_library call read every one
    # of them, seconds each, before answering. Past the bound a reader thread reads the rest.
    from cnki_mcp.pipeline import library as pipeline_library

    monkeypatch.setattr(pipeline_library, "PDFS_PER_CALL", 2)
    papers = archived_pdfs(store, "b", 5)
    (store.data_dir / "downloads" / "b4.pdf").unlink()  # gone: neither read nor waiting
    assert find(store, "的", clock).pdfs_pending == 2  # two read by the call, two left to a reader
    pipeline_library._READERS[store].join()
    assert find(store, "的", clock).pdfs_pending == 0
    assert [p.record_ref for p in store.pdfs_to_index()] == [papers[4].record_ref]


def test_a_call_while_the_store_s_pdfs_are_being_read_reads_none_and_each_file_is_read_once(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """search_library runs in worker threads: two calls at once both read the same oldest PDFs
    and each started a reader over the rest (every file read twice, review 11). While one call
    or the reader reads, another reads none and says what waits; oldest downloads first."""
    import threading

    from cnki_mcp.pipeline import library as pipeline_library

    monkeypatch.setattr(pipeline_library, "PDFS_PER_CALL", 2)
    archived_pdfs(store, "c", 4)
    real, read, reading, release = pipeline_library._pdf_text, [], threading.Event(), threading.Event()

    def held(path: str, data_dir: Path) -> str:
        read.append(Path(path).name)
        reading.set()
        release.wait(timeout=60)
        return real(path, data_dir)

    monkeypatch.setattr(pipeline_library, "_pdf_text", held)
    first = threading.Thread(target=find, args=(store, "的", clock))
    first.start()
    try:
        assert reading.wait(timeout=60)
        assert find(store, "的", clock).pdfs_pending == 4  # the first call holds them: none read here
    finally:
        release.set()
        first.join()
    pipeline_library._READERS[store].join()
    assert read == ["c0.pdf", "c1.pdf", "c2.pdf", "c3.pdf"]  # oldest first, each once
    assert find(store, "的", clock).pdfs_pending == 0


def test_snippet_marks_every_hit_in_the_window() -> None:
    assert snippet("甲乙丙违约金丁戊违约金", ["违约金"], context=2) == "…乙丙【违约金】丁戊…"
    assert snippet("违约金丁违约金", ["违约金"], context=4) == "【违约金】丁【违约金】"
    assert snippet("无关内容", ["违约金"]) is None


def test_snippet_of_a_long_text_is_the_window_around_its_first_hit() -> None:
    long = "甲" * 1000 + "违约金" + "乙" * 30 + "违约金" + "丙" * 1000
    assert snippet(long, ["违约金"]) == "…" + "甲" * 60 + "【违约金】" + "乙" * 30 + "【违约金】" + "丙" * 27 + "…"
    assert snippet("違" * 900 + "Ｂｅｒｔ模型" + "丁" * 900, ["bert"], context=3) == "…違違違【Ｂｅｒｔ】模型丁…"  # found folded
    assert snippet("违约金" + "丁" * 2000, ["违约金"], context=2) == "【违约金】丁丁…"
    assert snippet("戊" * 2000, ["违约金"]) is None


def test_a_searchs_papers_are_its_selected_results_unless_a_scope_asks_for_more(
    store: Store, clock: FakeClock
) -> None:
    """search_id narrows to what the search listed (scope selected, as search_results and
    export_citations): a candidate the search ranked out (off topic, below the floor) or left
    ineligible was found too, 34 papers for a search that listed 24."""
    papers = store.upsert_from_grid(
        [row("违约金研究一", "S1"), row("违约金研究二", "S2"), row("违约金研究三", "S3")], T0
    )
    store.save_search("sch_2", "q", {}, "fp", "completed", T0)
    store.save_evidence(
        "sch_2",
        [
            SearchEvidence(papers[0].record_ref, rank=1, selected=True, evidence={"eligible": True}),
            SearchEvidence(papers[1].record_ref, rank=2, evidence={"eligible": True}, exclusion="below_floor"),
            SearchEvidence(papers[2].record_ref, rank=3, evidence={"eligible": False}, exclusion="off_topic"),
        ],
    )
    assert titles(find(store, "违约金", clock, search_id="sch_2")) == ["违约金研究一"]
    assert sorted(titles(find(store, "违约金", clock, search_id="sch_2", scope="eligible"))) == [
        "违约金研究一",
        "违约金研究二",
    ]
    assert find(store, "违约金", clock, search_id="sch_2", scope="candidates").total == 3


def test_store_written_by_the_previous_release_is_migrated_and_indexed(tmp_path: Path, clock: FakeClock) -> None:
    data = tmp_path / "data"
    data.mkdir()
    shutil.copyfile(FIXTURE, data / "cnki.sqlite3")
    with sqlite3.connect(data / "cnki.sqlite3") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
        before = conn.execute("SELECT record_ref, data FROM papers ORDER BY record_ref").fetchall()
    with Store.open(data, clock) as store:
        assert store.notices == []  # migrated, not set aside
        page = find(store, "违约金", clock)
        assert titles(page) == ["违约金过高时的司法酌减规则研究"]
        assert "abstract" in page.results[0].matched_fields and "keywords" in page.results[0].matched_fields
        assert find(store, "违约金", clock, source_tiers=["CSSCI"], search_id="sch_0000000000000001").total == 1
        assert titles(find(store, "合同", clock, document_types=["硕士"])) == ["合同解除与损害赔偿"]
        assert store.library_size() == (3, 0)
    with sqlite3.connect(data / "cnki.sqlite3") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("SELECT record_ref, data FROM papers ORDER BY record_ref").fetchall() == before


def test_index_built_by_another_analyzer_is_rebuilt_at_open(tmp_path: Path, clock: FakeClock) -> None:
    with Store.open(tmp_path / "data", clock) as store:
        store.upsert_from_grid([row("违约金过高时的司法酌减规则研究", "R1")], T0)
    with sqlite3.connect(tmp_path / "data" / "cnki.sqlite3") as conn:
        conn.execute("DELETE FROM library_fts")
        conn.execute("UPDATE library_meta SET value = 'older' WHERE key = 'analyzer'")
    with Store.open(tmp_path / "data", clock) as store:
        assert find(store, "酌减", clock).total == 1


def test_title_and_keyword_hits_come_first_and_paging_crosses_the_tiers_once(store: Store, clock: FakeClock) -> None:
    in_title = store.upsert_from_grid([row(f"违约金问题{i}", f"T{i}") for i in range(3)], T0)
    in_text = store.upsert_from_grid([row(f"其他论文{i}", f"U{i}") for i in range(4)], T0)
    for p in in_text:
        store.save_fulltext(p.record_ref, "html", "正文提到违约金。" * 5, T0)
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = find(store, "违约金", clock, offset=offset, limit=2)
        seen.extend(r.record_ref for r in page.results)
        offset = page.next_offset
    assert set(seen[:3]) == {p.record_ref for p in in_title}
    assert sorted(seen[3:]) == sorted(p.record_ref for p in in_text)


def test_large_tiers_rank_the_newest_window_first_and_paging_still_sees_every_hit_once(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(library_index, "RANK_WINDOW", 3)
    papers = store.upsert_from_grid([row(f"违约金问题研究之{i}", f"W{i}") for i in range(8)], T0)
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = find(store, "违约金", clock, offset=offset, limit=2)
        assert page.total == 8
        seen.extend(r.record_ref for r in page.results)
        offset = page.next_offset
    assert sorted(seen) == sorted(p.record_ref for p in papers)
    assert set(seen[:3]) == {p.record_ref for p in papers[-3:]}  # the newest window comes first


def test_store_with_the_first_library_index_gets_the_prefix_index_and_keeps_its_texts(
    tmp_path: Path, clock: FakeClock
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    shutil.copyfile(FIXTURE_V3, data / "cnki.sqlite3")
    with sqlite3.connect(data / "cnki.sqlite3") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 3
        assert "prefix" not in conn.execute("SELECT sql FROM sqlite_master WHERE name = 'library_fts'").fetchone()[0]
        before = conn.execute("SELECT record_ref, data FROM papers ORDER BY record_ref").fetchall()
        texts = conn.execute("SELECT record_ref, kind, text FROM library_texts").fetchall()
    with Store.open(data, clock) as store:
        assert store.notices == []
        assert titles(find(store, "情势变更", clock)) == ["合同解除与损害赔偿"]  # the kept full text
        assert titles(find(store, "酌", clock)) == ["违约金过高时的司法酌减规则研究"]  # one character
        assert find(store, "违约金", clock, source_tiers=["CSSCI"], search_id="sch_0000000000000001").total == 1
        assert store.library_size() == (3, 1)
    with sqlite3.connect(data / "cnki.sqlite3") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= MIGRATIONS.index(
            _V_LIBRARY_PREFIX
        ) + 1
        assert "prefix = '1'" in conn.execute("SELECT sql FROM sqlite_master WHERE name = 'library_fts'").fetchone()[0]
        assert conn.execute("SELECT record_ref, data FROM papers ORDER BY record_ref").fetchall() == before
        assert conn.execute("SELECT record_ref, kind, text FROM library_texts").fetchall() == texts
        # the one-character query reads the prefix index: FTS5 answers it like a single term
        assert conn.execute("SELECT COUNT(*) FROM library_fts WHERE library_fts MATCH '酌*'").fetchone()[0] == 1


@pytest.mark.parametrize("window", [3, 2000])  # windows and tiers in segments / one ranking
def test_any_page_equals_the_same_rows_of_a_walk_through_windows_and_tiers(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    monkeypatch.setattr(library_index, "RANK_WINDOW", window)
    store.upsert_from_grid([row(f"违约金问题研究之{i}", f"V{i}") for i in range(7)], T0)
    in_text = store.upsert_from_grid([row(f"其他论文{i}", f"X{i}") for i in range(5)], T0)
    for p in in_text:
        store.save_fulltext(p.record_ref, "html", "正文提到违约金。" * 3, T0)
    walk = [r.record_ref for r in find(store, "违约金", clock, limit=100).results]
    assert len(walk) == len(set(walk)) == 12
    assert set(walk[7:]) == {p.record_ref for p in in_text}  # the title tier first
    for offset in range(14):
        for limit in (1, 2, 5):
            page = find(store, "违约金", clock, offset=offset, limit=limit)
            assert [r.record_ref for r in page.results] == walk[offset : offset + limit], (offset, limit)
            assert page.total == 12


@pytest.mark.parametrize(("window", "passes"), [(3, 3), (2000, 2)])
def test_a_first_page_counts_the_matches_once(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, window: int, passes: int
) -> None:
    monkeypatch.setattr(library_index, "RANK_WINDOW", window)
    store.upsert_from_grid([row(f"违约金问题研究之{i}", f"Y{i}") for i in range(8)], T0)
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    try:
        page = find(store, "违约金", clock, limit=2)
    finally:
        store._conn.set_trace_callback(None)
    assert page.total == 8 and len(page.results) == 2
    index_passes = [s for s in statements if "library_fts MATCH" in s]
    assert sum("COUNT(*)" in s for s in index_passes) == 1  # the total; no tier is counted
    # more matches than a window: the total, the window boundary, the ranked window;
    # fewer: the total and one ranking of both tiers
    assert len(index_passes) == passes


def test_a_common_term_counts_up_to_a_bound_and_paging_still_reaches_every_hit(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(library_index, "TOTAL_COUNTED", 3)
    papers = store.upsert_from_grid([row(f"违约金问题研究之{i}", f"Z{i}") for i in range(8)], T0)
    first = find(store, "违约金", clock, limit=2)
    # at least 4: the page reads one hit past its results (is a listed result next?), counted one past that
    assert (first.total, first.total_exact, first.next_offset) == (4, False, 2)
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = find(store, "违约金", clock, offset=offset, limit=2)
        seen.extend(r.record_ref for r in page.results)
        offset = page.next_offset
    assert sorted(seen) == sorted(p.record_ref for p in papers)
    last = find(store, "违约金", clock, offset=6, limit=2)  # counted past the page: exact
    assert (last.total, last.total_exact, last.next_offset) == (8, True, None)
    assert find(store, "问题研究之7", clock).total_exact


def test_the_library_size_follows_every_write_and_is_not_counted_again_without_one(
    store: Store, clock: FakeClock
) -> None:
    [paper] = store.upsert_from_grid([row("合同解除研究", "S1")], T0)
    assert store.library_size() == (1, 0)
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    try:
        assert store.library_size() == (1, 0)
    finally:
        store._conn.set_trace_callback(None)
    assert not [s for s in statements if "COUNT(*)" in s]
    store.save_fulltext(paper.record_ref, "html", "正文", T0)
    assert store.library_size() == (1, 1)
    store.upsert_from_grid([row("物权法总论", "S2")], T0)
    assert store.library_size() == (2, 1)
    with sqlite3.connect(store.path) as other:  # another connection's commit
        other.execute("DELETE FROM library_texts")
    assert store.library_size() == (2, 0)


@pytest.mark.parametrize("rank_window", [2000, 2])  # one ranking of every match / tiers and windows
def test_a_minus_or_not_before_a_term_excludes_the_papers_holding_it_in_any_field(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, rank_window: int
) -> None:
    monkeypatch.setattr(library_index, "RANK_WINDOW", rank_window)
    plain, agreed, agreed_in_text, other = store.upsert_from_grid(
        [
            row("违约金酌减规则研究", "X1"),
            row("约定违约金的调整", "X2"),
            row("违约金问题", "X3"),
            row("定金罚则研究", "X4"),
        ],
        T0,
    )
    store.save_fulltext(agreed_in_text.record_ref, "html", "合同当事人约定的违约金过高。", T0)
    for query in ("违约金 -约定", "违约金 NOT 约定", "违约金 －约定"):
        page = find(store, query, clock)
        assert [r.record_ref for r in page.results] == [plain.record_ref], query
        assert page.total == 1
        assert "约定" not in page.results[0].snippet
    assert find(store, "违约金 -约定 -酌减", clock).total == 0
    assert {r.record_ref for r in find(store, "违约金", clock).results} == {
        plain.record_ref,
        agreed.record_ref,
        agreed_in_text.record_ref,
    }
    assert [r.record_ref for r in find(store, "研究 -违约金", clock).results] == [other.record_ref]


@pytest.mark.parametrize("query", ["违约金，酌减", "违约金、酌减", "违约金,酌减", "违约金；酌减", "违约金 AND 酌减"])
def test_chinese_and_english_list_separators_split_terms(store: Store, clock: FakeClock, query: str) -> None:
    store.upsert_from_grid([row("违约金过高时的司法酌减规则研究", "S1"), row("违约金的性质", "S2")], T0)
    assert titles(find(store, query, clock)) == ["违约金过高时的司法酌减规则研究"]


@pytest.mark.parametrize(("query", "reason"), [("违约金 OR 酌减", "or"), ("-违约金", "only_excluded"), ("---", "no_text")])
def test_unsupported_or_unbounded_library_queries_say_how_to_write_them(
    store: Store, clock: FakeClock, query: str, reason: str
) -> None:
    with pytest.raises(CnkiError) as info:
        find(store, query, clock)
    assert info.value.code == "INVALID_ARGUMENT"
    assert info.value.details["reason"] == reason


def test_document_types_take_english_names_and_refuse_names_that_match_nothing(store: Store, clock: FakeClock) -> None:
    store.upsert_from_grid(
        [row("违约金研究一", "D1"), row("违约金研究二", "D2", doc_type="硕士"), row("违约金研究三", "D3", doc_type="学位论文")],
        T0,
    )
    assert titles(find(store, "违约金", clock, document_types=["Master's"])) == ["违约金研究二"]
    assert titles(find(store, "违约金", clock, document_types=["journal"])) == ["违约金研究一"]
    # 学位论文: the paper a list labelled so and every 博士 / 硕士 thesis (it was the label alone)
    assert sorted(titles(find(store, "违约金", clock, document_types=["学位论文"]))) == ["违约金研究三", "违约金研究二"]
    assert find(store, "违约金", clock, document_types=["报纸"]).total == 0  # CNKI's name, none stored
    with pytest.raises(CnkiError) as info:
        find(store, "违约金", clock, document_types=["thesis paper"])
    assert info.value.code == "INVALID_ARGUMENT"
    assert "期刊" in info.value.details["allowed"] and "学位论文" in info.value.details["allowed"]


@pytest.mark.parametrize(
    ("wanted", "found"),
    [
        (["博士学位论文"], ["违约金研究二"]),
        (["硕士论文"], ["违约金研究三"]),
        (["会议论文"], ["违约金研究四"]),
        (["期刊论文"], ["违约金研究一"]),
        (["硕博论文"], ["违约金研究三", "违约金研究二"]),
        # every spelling query/written.py reads as a wish for both levels (they were INVALID_ARGUMENT)
        (["硕博士论文"], ["违约金研究三", "违约金研究二"]),
        (["硕博学位论文"], ["违约金研究三", "违约金研究二"]),
        (["硕博士学位论文"], ["违约金研究三", "违约金研究二"]),
        # the English words a question's wish reads as both levels (the plan's warning names them)
        (["theses"], ["违约金研究三", "违约金研究二"]),
        (["dissertations"], ["违约金研究三", "违约金研究二"]),
    ],
)
def test_document_types_take_the_kinds_as_people_write_them(
    store: Store, clock: FakeClock, wanted: list[str], found: list[str]
) -> None:
    # 博士论文 / 会议论文 …, the words a question's wish is read from: they were INVALID_ARGUMENT
    store.upsert_from_grid(
        [
            row("违约金研究一", "K1"),
            row("违约金研究二", "K2", doc_type="博士"),
            row("违约金研究三", "K3", doc_type="硕士"),
            row("违约金研究四", "K4", doc_type="会议"),
        ],
        T0,
    )
    assert sorted(titles(find(store, "违约金", clock, document_types=wanted))) == sorted(found)


GRID_URL = "https://kns.cnki.net/kns8s/brief/grid"


def test_a_journal_filter_keeps_the_special_journal_rows_of_a_real_grid(store: Store, clock: FakeClock) -> None:
    # The saved page labels CJFN rows 特色期刊 (科技创新与品牌, 共产党员) beside 期刊 and 报纸 rows;
    # their detail page says 期刊 (parse/detail.py maps CJFN so), so a journal filter that dropped
    # them would answer differently before and after a detail page was read.
    from cnki_mcp.parse.grid import parse_grid
    from tests.conftest import read_real

    page = parse_grid(read_real("kns8s-grid/pluginsx_search_result_4rows.html"), GRID_URL)
    assert sorted(r.doc_type or "" for r in page.rows) == ["报纸", "期刊", "特色期刊", "特色期刊"]
    store.upsert_from_grid(page.rows, T0)
    assert find(store, "王淑慧", clock).total == 3  # the 期刊 row and both 特色期刊 rows
    journals = find(store, "王淑慧", clock, document_types=["journal"])
    assert sorted(r.document_type for r in journals.results) == ["期刊", "特色期刊", "特色期刊"]
    assert find(store, "王淑慧", clock, document_types=["期刊"]).total == 3
    assert find(store, "王淑慧", clock, document_types=["特色期刊"]).total == 2  # the label alone
    assert find(store, "排头兵", clock, document_types=["newspaper"]).total == 1
    assert find(store, "排头兵", clock, document_types=["journal"]).total == 0


def test_scores_in_a_small_library_whose_every_paper_matches_are_not_shown_as_zero(
    store: Store, clock: FakeClock
) -> None:
    # FTS5's bm25 floors the weight of a term found in half the library or more at 1e-6, so in a
    # small library on one topic every score is of that order: rounded to decimals, all were 0.0
    store.upsert_from_grid(
        [row("违约金酌减", "S1"), row("违约金调整规则", "S2"), row("违约金与损害赔偿的关系研究", "S3")], T0
    )
    page = find(store, "违约金", clock)
    scores = [r.score for r in page.results]
    assert len(scores) == 3 and all(s > 0 for s in scores), scores
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1], scores


@pytest.mark.parametrize(
    ("wanted", "tier", "matches"),
    [
        ("SCI", "SCI", True), ("sci", "SCI-E", True), ("SCI", "CSSCI", False), ("SCI", "SSCI", False),
        ("CSSCI", "CSSCI扩展版", True), ("CSC", "CSCD核心库", False), ("CSCD", "CSCD核心库", True),
        ("AMI", "AMI权威", True), ("核心", "北大核心", True), ("北大核心", "北大核心", True), ("EI", "WEI", False),
    ],
)  # fmt: skip
def test_a_source_tier_asks_for_a_tier_name_not_a_piece_of_a_longer_one(wanted: str, tier: str, matches: bool) -> None:
    assert tier_matches(wanted, tier) is matches


@pytest.mark.parametrize(
    ("wanted", "tier", "matches"),
    [
        # the names people call the lists by (the ones structured_search's source refusal names)
        ("南大核心", "CSSCI", True), ("南大核心", "CSSCI扩展版", True), ("中文核心期刊", "北大核心", True),
        ("中文核心", "北大核心", True), ("SCIE", "SCI", True), ("SCI来源期刊", "SCI", True),
        ("EI来源期刊", "EI", True), ("CSCD扩展库", "CSCD扩展版", True),
        # a source list without its extended one
        ("CSSCI来源期刊", "CSSCI", True), ("CSSCI来源期刊", "CSSCI扩展版", False), ("C刊", "CSSCI来源集刊", False),
        ("CSCD核心库", "CSCD", True), ("CSCD核心库", "CSCD扩展版", False),
        # 核心 (核心期刊) is any core list, an extended one aside
        ("核心期刊", "北大核心", True), ("核心", "CSSCI", True), ("核心", "CSCD", True), ("核心", "AMI权威", True),
        ("核心", "CSSCI扩展版", False), ("核心", "CSCD扩展版", False), ("核心", "AMI扩展", False), ("核心", "SCI", False),
    ],
)  # fmt: skip
def test_a_source_tier_named_as_people_call_the_list_finds_its_tag(wanted: str, tier: str, matches: bool) -> None:
    assert tier_matches(wanted, tier) is matches


def test_a_source_tier_that_no_journal_can_list_is_invalid_argument(store: Store, clock: FakeClock) -> None:
    store.upsert_from_grid([row("违约金研究一", "G1", source="法学研究")], T0)
    store.save_journal("法学研究", JournalPage(name="法学研究", tiers=["CSSCI", "某新收录"]), "present", T0)
    for name in ("一区", "CSC", "核心期刊目录"):
        with pytest.raises(CnkiError) as info:
            find(store, "违约金", clock, source_tiers=[name])
        assert info.value.code == "INVALID_ARGUMENT" and "CSSCI" in info.value.details["allowed"], name
    # a known list no stored journal has finds nothing; a tag only a stored page shows is found
    assert find(store, "违约金", clock, source_tiers=["SSCI"]).total == 0
    assert find(store, "违约金", clock, source_tiers=["某新收录"]).total == 1


@pytest.mark.parametrize(
    ("name", "title"),
    [
        ("journal articles", "违约金研究一"),
        ("Journals", "违约金研究一"),
        ("master's theses", "违约金研究二"),
        ("PhD dissertations", "违约金研究四"),
        ("doctoral theses", "违约金研究四"),
        ("conference papers", "违约金研究五"),
    ],
)
def test_document_types_take_plural_english_names(store: Store, clock: FakeClock, name: str, title: str) -> None:
    store.upsert_from_grid(
        [
            row("违约金研究一", "D1"),
            row("违约金研究二", "D2", doc_type="硕士"),
            row("违约金研究四", "D4", doc_type="博士"),
            row("违约金研究五", "D5", doc_type="会议"),
        ],
        T0,
    )
    assert titles(find(store, "违约金", clock, document_types=[name])) == [title]


def test_a_traditional_term_finds_the_writers_words_when_its_taiwan_rewrite_changes_them(
    store: Store, clock: FakeClock
) -> None:
    # OpenCC's Taiwan phrases read 刑事程序 (criminal procedure) as 刑事进程: the library searched
    # only that and missed the stored paper on criminal procedure; 網路 still finds 网络
    store.upsert_from_grid([row("刑事程序与证据规则研究", "F1"), row("网络平台治理研究", "F2")], T0)
    page = find(store, "刑事程序與證據", clock)
    assert titles(page) == ["刑事程序与证据规则研究"]
    assert page.results[0].matched_fields == ["title"]  # the writer's spelling is marked as found
    assert titles(find(store, "網路平台", clock)) == ["网络平台治理研究"]
