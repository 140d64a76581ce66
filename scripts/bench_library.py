"""search_library benchmark: indexing and query latency over generated stores, and the
tokenizer comparison behind the choice of CJK bigrams (docs/benchmarks.md §Library search).

Records are generated from the simulator corpus's own text (clauses of titles, abstracts and
full texts recombined; authors, institutions, sources, types from its pools; 1 % of records
with a 20,000-character full text), seeded, so every run indexes the same data.

Modes:
  store      the production path: papers written through `Store.upsert_from_grid` (50-row pages,
             one committed transaction each, synchronous=FULL, the index inside it), full texts
             through `save_fulltext`, then `search_library` (query, bm25, snippets, paging) timed
             per call; the same writes with the index switched off give the write-path factor.
  compare    raw FTS5 tables over the same records with three analyzers: `bigram` (production),
             the built-in `trigram` tokenizer, and `jieba` (cut_for_search, if installed):
             build time, size, query p95 and recall against plain substring search.

  python scripts/bench_library.py store --records 10000 100000
  python scripts/bench_library.py compare --records 10000
Wall-clock figures depend on the machine; the script prints it."""

from __future__ import annotations

import argparse
import os
import platform
import random
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cnki_mcp.clock import FakeClock
from cnki_mcp.models import GridRow, NativeId
from cnki_mcp.pipeline.library import LibraryInput, search_library
from cnki_mcp.sim.corpus import Corpus
from cnki_mcp.store import Store
from cnki_mcp.store import papers as store_papers
from cnki_mcp.store.library import FIELDS, WEIGHTS, analyse, match_expression, normalise

T0 = datetime(2026, 1, 1, tzinfo=UTC)
PAGE = 50
FULLTEXT_SHARE = 0.01
FULLTEXT_CHARS = 20_000
QUERIES_PER_KIND = 40


@dataclass(frozen=True, slots=True)
class Rec:
    title: str
    authors: list[str]
    institutions: list[str]
    source: str
    year: int
    doc_type: str
    keywords: list[str]
    abstract: str
    fulltext: str

    def columns(self) -> tuple[str, ...]:
        return (
            self.title,
            " ; ".join(self.keywords),
            " ; ".join(self.authors),
            " ; ".join(self.institutions),
            self.source,
            self.abstract,
            self.fulltext,
        )


class Generator:
    def __init__(self, seed: int = 14) -> None:
        corpus = Corpus.load()
        self.rng = random.Random(seed)
        text = " ".join(
            " ".join([r.title, r.abstract or "", *(s.text for s in r.fulltext)]) for r in corpus.records
        )
        self.clauses = [c for c in re.split(r"[，。；：！？、\s]+", text) if len(c) >= 4]
        self.keywords = sorted({k for r in corpus.records for k in r.keywords if 2 <= len(k) <= 8})
        self.authors = sorted({a.name for r in corpus.records for a in r.authors})
        self.institutions = sorted({a.institution for r in corpus.records for a in r.authors if a.institution})
        self.sources = sorted({r.source for r in corpus.records if r.source})
        self.types = [r.type for r in corpus.records]

    def _sentence(self, chars: int) -> str:
        out: list[str] = []
        size = 0
        while size < chars:
            c = self.rng.choice(self.clauses)
            out.append(c)
            size += len(c) + 1
        return "，".join(out) + "。"

    def record(self) -> Rec:
        rng = self.rng
        title = "".join(rng.choice(self.clauses)[:14] for _ in range(2))
        return Rec(
            title=title,
            authors=rng.sample(self.authors, rng.randint(1, 4)),
            institutions=rng.sample(self.institutions, rng.randint(1, 2)),
            source=rng.choice(self.sources),
            year=rng.randint(1995, 2025),
            doc_type=rng.choice(self.types),
            keywords=rng.sample(self.keywords, rng.randint(3, 5)),
            abstract=self._sentence(rng.randint(150, 300)),
            fulltext=self._sentence(FULLTEXT_CHARS) if rng.random() < FULLTEXT_SHARE else "",
        )

    def records(self, n: int) -> list[Rec]:
        return [self.record() for _ in range(n)]

    def queries(self, recs: list[Rec]) -> dict[str, list[str]]:
        """Query terms by kind, drawn from the indexed text (so each has hits)."""
        rng = random.Random(7)

        def piece(n: int) -> str:
            while True:
                r = rng.choice(recs)
                text = rng.choice([r.title, r.abstract])
                m = re.findall(f"[\u4e00-\u9fff]{{{n},}}", text)
                if m:
                    run = rng.choice(m)
                    i = rng.randint(0, len(run) - n)
                    return run[i : i + n]

        return {
            "1 char": [piece(1) for _ in range(QUERIES_PER_KIND)],
            "2 chars": [piece(2) for _ in range(QUERIES_PER_KIND)],
            "3-4 chars": [piece(rng.choice((3, 4))) for _ in range(QUERIES_PER_KIND)],
            "keyword": [rng.choice(self.keywords) for _ in range(QUERIES_PER_KIND)],
            "two terms": [f"{piece(2)} {piece(3)}" for _ in range(QUERIES_PER_KIND)],
            "6+ chars": [piece(6) for _ in range(QUERIES_PER_KIND)],
        }


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def rows_of(recs: list[Rec], start: int) -> list[GridRow]:
    return [
        GridRow(
            title=r.title,
            authors=r.authors,
            source=r.source,
            year=r.year,
            doc_type=r.doc_type,
            native=NativeId(dbname="CJFDLAST", filename=f"BENCH{start + i:07d}"),
            detail_url=f"https://kns.cnki.net/kcms2/article/abstract?v=B{start + i}",
        )
        for i, r in enumerate(recs)
    ]


def fill_store(store: Store, recs: list[Rec]) -> tuple[float, list[float]]:
    """Write the records as grid pages (keywords/abstract/institutions through the detail
    fields the grid lacks are set via the paper JSON: a list row carries no abstract)."""
    page_times: list[float] = []
    start = time.perf_counter()
    for at in range(0, len(recs), PAGE):
        chunk = recs[at : at + PAGE]
        t = time.perf_counter()
        store.upsert_from_grid(rows_of(chunk, at), T0)
        page_times.append(time.perf_counter() - t)
    return time.perf_counter() - start, page_times


def enrich_store(store: Store, recs: list[Rec]) -> float:
    """Abstracts, keywords and institutions as a detail page would bring them (500 papers per
    transaction: this fills the store, the write path is timed by `fill_store`), and the full
    texts through `save_fulltext`."""
    from cnki_mcp.identity import Paper
    from cnki_mcp.store.library import index_paper

    start = time.perf_counter()
    conn = store._conn
    refs = [r[0] for r in conn.execute("SELECT record_ref FROM papers ORDER BY rowid")]
    pairs = list(zip(refs, recs, strict=True))
    for at in range(0, len(pairs), 500):
        with store._write() as c:
            for ref, rec in pairs[at : at + 500]:
                data = c.execute("SELECT data FROM papers WHERE record_ref = ?", (ref,)).fetchone()[0]
                paper = Paper.model_validate_json(data).model_copy(
                    update={"abstract": rec.abstract, "keywords": rec.keywords, "institutions": rec.institutions}
                )
                c.execute("UPDATE papers SET data = ? WHERE record_ref = ?", (paper.model_dump_json(), ref))
                index_paper(c, paper)
    for ref, rec in pairs:
        if rec.fulltext:
            store.save_fulltext(ref, "html", rec.fulltext, T0 + timedelta(seconds=len(ref)))
    return time.perf_counter() - start


def bench_store(n: int, gen: Generator, work: Path) -> None:
    recs = gen.records(n)
    queries = gen.queries(recs)
    clock = FakeClock(wall=T0)
    if (work / f"index-{n}" / "cnki.sqlite3").exists():  # --work kept from an earlier run
        t = time.perf_counter()
        with Store.open(work / f"index-{n}", clock) as store:
            print(f"\n## store, {n:,} records (kept from an earlier run: queries only)")
            print(f"open: {time.perf_counter() - t:.1f} s{_compacted(store)}")
            query_store(store, queries, clock)
        return
    # the write path without the index (same code, index_paper switched off), on 5,000 records
    sample = recs[: min(n, 5000)]
    with Store.open(work / f"noindex-{n}", clock) as store:
        saved = store_papers.index_paper
        store_papers.index_paper = lambda conn, paper: None  # type: ignore[assignment]
        try:
            _, plain_pages = fill_store(store, sample)
        finally:
            store_papers.index_paper = saved
    with Store.open(work / f"index-{n}", clock) as store:
        idx_total, idx_pages = fill_store(store, recs)
        enrich_s = enrich_store(store, recs)
        size = sum(p.stat().st_size for p in store.data_dir.glob("cnki.sqlite3*"))
        print(f"\n## store, {n:,} records ({sum(1 for r in recs if r.fulltext)} with a full text)")
        print(f"grid pages of {PAGE}: {idx_total:.1f} s total, page p50 {ms(statistics.median(idx_pages))} ms,"
              f" p95 {ms(pct(idx_pages, 95))} ms")  # fmt: skip
        first = len(sample) // PAGE
        print(f"write path, first {len(sample):,} records: page p50 {ms(statistics.median(plain_pages))} ms without"
              f" the index, {ms(statistics.median(idx_pages[:first]))} ms with it"
              f" (x{statistics.median(idx_pages[:first]) / statistics.median(plain_pages):.2f})")  # fmt: skip
        print(f"abstracts/keywords/full texts written and re-indexed: {enrich_s:.1f} s; database {size / 1e6:.0f} MB")
    # queried as the next start finds it: the open compacts the index after these rewrites
    t = time.perf_counter()
    with Store.open(work / f"index-{n}", clock) as store:
        print(f"open after the writes: {time.perf_counter() - t:.1f} s{_compacted(store)}")
        query_store(store, queries, clock)
    # rebuild at open (a schema or analyzer change)
    conn = sqlite3.connect(work / f"index-{n}" / "cnki.sqlite3")
    conn.execute("UPDATE library_meta SET value = 'older' WHERE key = 'analyzer'")
    conn.commit()
    conn.close()
    t = time.perf_counter()
    Store.open(work / f"index-{n}", clock).close()
    print(f"rebuild at open: {time.perf_counter() - t:.1f} s")


def _compacted(store: Store) -> str:
    """What the open did to the index: compacted (the stale counter was just reset) or not."""
    row = store._conn.execute("SELECT value FROM library_meta WHERE key = 'stale'").fetchone()
    pages = store._conn.execute("SELECT COUNT(*) FROM library_fts_data").fetchone()[0]
    return f" (index {pages:,} FTS data rows, {row[0] if row else '?'} rows rewritten since its compaction)"


def _timed(store: Store, clock: FakeClock, inp: LibraryInput) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of this process, total) of one search_library call. The CPU
    time is what the query costs; on a shared machine the wall time adds the waits for a core."""
    t, c = time.perf_counter(), time.process_time()
    page = search_library(store, inp, store.data_dir, clock)
    return time.perf_counter() - t, time.process_time() - c, page.total


def _row(kind: str, runs: list[tuple[float, float, int]], note: str = "") -> None:
    wall, cpu = [r[0] for r in runs], [r[1] for r in runs]
    print(f"  {kind:10s} p50 {ms(statistics.median(wall)):>6} ms  p95 {ms(pct(wall, 95)):>6} ms"
          f"  cpu p50 {ms(statistics.median(cpu)):>6} ms  p95 {ms(pct(cpu, 95)):>6} ms"
          f"  {note or f'median hits {int(statistics.median(r[2] for r in runs))}'}")  # fmt: skip


def query_store(store: Store, queries: dict[str, list[str]], clock: FakeClock) -> None:
    every: list[tuple[float, float, int]] = []
    for kind, terms in queries.items():
        runs = [_timed(store, clock, LibraryInput(query=q, limit=20)) for q in terms]
        every += runs
        _row(kind, runs)
    filtered = [
        _timed(store, clock, LibraryInput(query=q, year_from=2010, year_to=2020, document_types=["期刊"]))
        for q in queries["2 chars"]
    ]
    _row("filtered", filtered, "(2 chars, years 2010-2020, 期刊)")
    every += filtered
    wall, cpu = [r[0] for r in every], [r[1] for r in every]
    print(f"  ALL        p95 {ms(pct(wall, 95))} ms, cpu p95 {ms(pct(cpu, 95))} ms over {len(every)} queries")
    # not in ALL (kept comparable with earlier runs): pages further down the ranking
    deep = [_timed(store, clock, LibraryInput(query=q, offset=100, limit=20)) for q in queries["2 chars"]]
    _row("page 6", deep, "(2 chars, offset 100)")
    far = [_timed(store, clock, LibraryInput(query=q, offset=3000, limit=20)) for q in queries["2 chars"]]
    _row("offset 3000", far, "(2 chars, past the first window)")


# --- analyzer comparison -------------------------------------------------------------------


def _jieba() -> tuple[Callable[[str], str], Callable[[str], str | None]] | None:
    """Documents: cut_for_search (words and their sub-words); queries: every word of the
    precise cut required (a phrase would not match: the sub-words sit between the words)."""
    try:
        import jieba
    except ImportError:
        return None
    jieba.setLogLevel(60)

    def doc(text: str) -> str:
        return " ".join(t for t in jieba.cut_for_search(normalise(text)) if t.strip())

    def query(q: str) -> str | None:
        words = [w for t in q.split() for w in jieba.cut(normalise(t)) if re.search(r"\w", w)]
        return " AND ".join('"' + w.replace('"', '""') + '"' for w in words) or None

    return doc, query


@dataclass
class Analyzer:
    name: str
    tokenize: str
    doc: Callable[[str], str]
    query: Callable[[str], str | None]


def analyzers() -> Iterator[Analyzer]:
    yield Analyzer("bigram", "unicode61 remove_diacritics 2", analyse, lambda q: match_expression(q)[0])

    def trigram_query(q: str) -> str | None:
        terms = q.split()
        if any(len(t) < 3 for t in terms):
            return None  # below 3 characters trigram has no index entry: a scan is needed
        return " AND ".join('"' + t.replace('"', '""') + '"' for t in terms)

    yield Analyzer("trigram", "trigram", lambda s: s, trigram_query)
    jb = _jieba()
    if jb is not None:
        yield Analyzer("jieba", "unicode61 remove_diacritics 2", *jb)


def compare(n: int, gen: Generator, work: Path, names: tuple[str, ...] = (), recall: bool = True) -> None:
    recs = gen.records(n)
    queries = gen.queries(recs)
    folded = [tuple(normalise(c) for c in r.columns()) for r in recs] if recall else []
    print(f"\n## analyzers, {n:,} records")
    print("| analyzer | build s | MB | kind | p50 ms | p95 ms | recall |")
    print("|---|---|---|---|---|---|---|")
    for a in analyzers():
        if names and a.name not in names:
            continue
        path = work / f"cmp-{a.name}-{n}.sqlite3"
        conn = sqlite3.connect(path)
        conn.execute(f"CREATE VIRTUAL TABLE f USING fts5({', '.join(FIELDS)}, tokenize = '{a.tokenize}')")
        t = time.perf_counter()
        conn.executemany(
            f"INSERT INTO f ({', '.join(FIELDS)}) VALUES ({', '.join('?' * len(FIELDS))})",
            ([a.doc(c) for c in r.columns()] for r in recs),
        )
        conn.commit()
        build = time.perf_counter() - t
        size = path.stat().st_size / 1e6
        for kind, terms in queries.items():
            times: list[float] = []
            found = expected = 0
            for q in terms:
                words = normalise(q).split()
                truth = {i for i, cols in enumerate(folded) if all(any(t in c for c in cols) for t in words)}
                expr = a.query(q)
                rows: list[Any] = []
                t = time.perf_counter()
                if expr is None:  # trigram below 3 characters: scan every column with instr()
                    cond = " AND ".join(
                        "(" + " OR ".join(f"instr({c}, ?) > 0" for c in FIELDS) + ")" for _ in q.split()
                    )
                    args: list[Any] = [w for w in q.split() for _ in FIELDS]
                    rows = conn.execute(f"SELECT rowid FROM f WHERE {cond}", args).fetchall()
                else:
                    conn.execute(
                        f"SELECT rowid, bm25(f, {', '.join(map(str, WEIGHTS))}) AS s FROM f WHERE f MATCH ?"
                        " ORDER BY s LIMIT 20", (expr,),
                    ).fetchall()  # fmt: skip
                    conn.execute("SELECT COUNT(*) FROM f WHERE f MATCH ?", (expr,)).fetchone()
                times.append(time.perf_counter() - t)  # ranked page + total, what the tool runs
                if expr is not None and recall:
                    rows = conn.execute("SELECT rowid FROM f WHERE f MATCH ?", (expr,)).fetchall()
                got = {r[0] - 1 for r in rows}
                found += len(got & truth)
                expected += len(truth)
            shown = f"{found / expected:.3f}" if recall and expected else "-"
            print(f"| {a.name} | {build:.1f} | {size:.0f} | {kind} | {ms(statistics.median(times))} |"
                  f" {ms(pct(times, 95))} | {shown} |")  # fmt: skip
        conn.close()
        path.unlink()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("store", "compare"))
    parser.add_argument("--records", type=int, nargs="+", default=[10_000])
    parser.add_argument("--analyzers", nargs="*", default=[], help="compare: only these (bigram trigram jieba)")
    parser.add_argument("--no-recall", action="store_true", help="compare: skip the substring ground truth")
    parser.add_argument("--work", type=Path, default=None,
                        help="keep the stores here; a store already there is queried, not rebuilt")  # fmt: skip
    args = parser.parse_args(argv)
    print(f"# bench_library {args.mode}: Python {platform.python_version()}, SQLite {sqlite3.sqlite_version},"
          f" {platform.machine()}, {os.cpu_count()} CPUs, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")  # fmt: skip
    gen = Generator()
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.work or scratch
        for n in args.records:
            if args.mode == "store":
                bench_store(n, gen, Path(tmp))
            else:
                compare(n, gen, Path(tmp), tuple(args.analyzers), not args.no_recall)
            sys.stdout.flush()


if __name__ == "__main__":
    main()
