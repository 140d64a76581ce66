"""What keeps a large search's ranking steps cheap (DESIGN.md "Ranking cost"): the store reads
papers in bulk with aliases followed exactly as one at a time, `PaperMemo` decodes a stored paper
again only when its text changed, and the ranker's memo gives the scores a fresh ranker gives."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cnki_mcp.clock import FakeClock
from cnki_mcp.models import GridRow, NativeId
from cnki_mcp.pipeline.paper_memo import PaperMemo
from cnki_mcp.rank import Candidate, Hit, RelevanceRescueRanker, SourceQuality
from cnki_mcp.store import Store
from tests.paper_samples import sample_detail, sample_row

T0 = datetime(2026, 1, 1, tzinfo=UTC)
GROUPS = [["违约金"], ["酌减", "调整"]]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(tmp_path / "data", FakeClock(wall=T0))
    yield s
    s.close()


def _row(i: int, **kw: object) -> GridRow:
    return sample_row(
        title=f"违约金酌减的裁判规则{i}",
        native=NativeId(dbname="CJFDLAST2024", filename=f"FXYJ2024{i:05d}"),
        detail_url=f"https://kns.cnki.net/kcms2/article/abstract?v=T{i}",
        **kw,
    )


def _rows(store: Store, n: int) -> list[str]:
    rows = [_row(i) for i in range(n)]
    return [p.record_ref for p in store.upsert_from_grid(rows, T0)]


def test_bulk_read_follows_aliases_and_chains_exactly_as_one_ref_at_a_time(store: Store) -> None:
    refs = _rows(store, 3)
    by_native = store.upsert_from_detail(sample_detail(doi=None, source=None), None, T0)
    by_doi = store.upsert_from_detail(
        sample_detail(native=NativeId(), source="软件学报", title="Other"), None, T0
    )
    store.upsert_from_detail(sample_detail(), None, T0 + timedelta(hours=1))  # merges by_doi into by_native
    with store._write() as conn:  # a chain of two merges and a cycle no merge makes, read alike
        conn.execute("INSERT INTO paper_aliases VALUES (?, ?)", ("rec_old", by_doi.record_ref))
        conn.execute("INSERT INTO paper_aliases VALUES (?, ?)", ("rec_loop_a", "rec_loop_b"))
        conn.execute("INSERT INTO paper_aliases VALUES (?, ?)", ("rec_loop_b", "rec_loop_a"))
    asked = [*refs, by_doi.record_ref, "rec_old", "rec_missing", "rec_loop_a", refs[0]]
    bulk = store.papers_by_refs(asked)
    one_by_one = {ref: p for ref in asked if (p := store.get(ref)) is not None}
    assert bulk == one_by_one
    assert bulk["rec_old"].record_ref == by_native.record_ref
    assert "rec_missing" not in bulk and "rec_loop_a" not in bulk
    texts = store.paper_texts(asked)
    assert texts["rec_old"][0] == by_native.record_ref
    assert set(texts) == set(bulk)


def test_bulk_read_crosses_the_chunk_size(store: Store) -> None:
    refs = _rows(store, 1203)
    got = store.papers_by_refs(reversed(refs))
    assert len(got) == 1203 and all(got[r].record_ref == r for r in refs)


def test_paper_memo_decodes_a_paper_again_only_when_its_stored_text_changed(store: Store) -> None:
    refs = _rows(store, 3)
    memo = PaperMemo(store)
    first = memo.papers(refs)
    again = memo.papers(refs)
    assert all(again[r] is first[r] for r in refs)  # unchanged text: the same decoded object
    store.upsert_from_grid([_row(0, cited=99)], T0 + timedelta(days=1))
    changed = memo.papers(refs)
    assert changed[refs[0]] is not first[refs[0]] and changed[refs[0]].cited == 99
    assert changed[refs[0]] == store.get(refs[0])
    assert changed[refs[1]] is first[refs[1]]


def test_paper_memo_keeps_only_the_papers_of_its_last_call(store: Store) -> None:
    refs = _rows(store, 5)
    memo = PaperMemo(store)
    first = memo.papers(refs[:4])
    second = memo.papers(refs[2:])
    assert second[refs[2]] is first[refs[2]]  # asked both times: decoded once
    assert set(memo._decoded) == set(refs[2:])  # refs[0] and refs[1] were let go
    again = memo.papers(refs[:1])
    assert again[refs[0]] is not first[refs[0]] and again[refs[0]] == first[refs[0]]


def _cands() -> list[Candidate]:
    return [
        Candidate(
            ref=f"r{i}",
            title=f"违约金酌减规则研究{i}" if i % 2 else f"合同解除与损害赔偿{i}",
            abstract="法院对过高违约金予以调整" if i % 3 == 0 else "",
            keywords=("违约金", "酌减") if i % 4 == 0 else (),
            doc_type="期刊",
            year=2015 + i % 10,
            cited=i * 3,
            hits=(Hit("q1", i + 1),),
            quality=SourceQuality(("CSSCI",), 2.5, None) if i % 5 == 0 else None,
        )
        for i in range(40)
    ]


def test_the_ranker_memo_scores_as_a_fresh_ranker_after_candidates_change() -> None:
    ranker = RelevanceRescueRanker()
    cands = _cands()
    assert ranker.rank(cands, GROUPS, 2026) == RelevanceRescueRanker().rank(cands, GROUPS, 2026)
    # an abstract read and a journal tier found change those candidates only
    read = [
        replace(c, abstract="违约金过高时法院酌减", quality=SourceQuality(("北大核心",), 1.2, 0.8))
        if i < 10
        else c
        for i, c in enumerate(cands)
    ]
    assert ranker.rank(read, GROUPS, 2026) == RelevanceRescueRanker().rank(read, GROUPS, 2026)
    assert ranker.rank(read, GROUPS, 2026) != ranker.rank(cands, GROUPS, 2026)
    # other concepts or another year are other scores, never the memo's
    other = [["损害赔偿"]]
    assert ranker.rank(read, other, 2026) == RelevanceRescueRanker().rank(read, other, 2026)
    assert ranker.rank(read, GROUPS, 2031) == RelevanceRescueRanker().rank(read, GROUPS, 2031)
    for n in range(6):  # more concept sets than it keeps: still the fresh ranker's scores
        groups = [[f"概念{n}"], ["违约金"]]
        assert ranker.rank(read, groups, 2026) == RelevanceRescueRanker().rank(read, groups, 2026)
    memos = ranker._memos
    assert len(memos) <= 4
    assert all(len(m) <= len(read) for m in memos.values())  # one candidate set each
