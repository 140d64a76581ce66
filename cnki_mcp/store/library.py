"""The library index: SQLite FTS5 over everything the store keeps (titles, keywords, authors,
institutions, sources, abstracts, and full texts read with read_online_html or extracted from
downloaded PDFs), for `search_library` (DESIGN.md §Library search).

Tokenisation is CJK bigrams computed here, in Python, fed to FTS5's `unicode61` tokenizer:
every run of CJK characters becomes its overlapping bigrams plus its last character alone, Latin
text stays words. A query term becomes the phrase of its own bigrams, so any substring of two or
more CJK characters is found through the index, and a one-character term is a prefix query.
Why bigrams and not the built-in `trigram` tokenizer or a segmenter: docs/benchmarks.md
§Library search (measured by scripts/bench_library.py).

The index is written inside the same transaction as the paper or text it reflects
(`index_paper` is called by the papers' writer); it is rebuilt when `ANALYZER_VERSION` or the
schema changes and compacted once enough rows were rewritten (`store/library_upkeep.py`)."""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from cnki_mcp.errors import InvalidInput, LibraryIndexBuilding, SearchNotFound
from cnki_mcp.identity import INVISIBLE, Paper, visible
from cnki_mcp.identity import source_key as normalise_source
from cnki_mcp.rank import tier_matches
from cnki_mcp.script import mainland, simplified
from cnki_mcp.store.db import StoreBase, to_ts
from cnki_mcp.store.downloads import located
from cnki_mcp.stored import load

log = logging.getLogger(__name__)

ANALYZER_VERSION = "bigram-2"  # 2: invisible format characters dropped
MAX_TEXT_CHARS = 300_000  # per record and kind: a long thesis is cut, never refused
RANK_WINDOW = 2_000  # papers ranked together before older matches (see `_segments`)
# Matches counted for `total`: beyond this (and beyond the page asked for) the count stops and
# the total is a lower bound; counting every match of a common term is a full pass.
TOTAL_COUNTED = 5_000
TEXTS_KEPT = 5_000  # full texts kept (newest first); older ones leave the store and the index
TextKind = Literal["html", "pdf"]

FIELDS = ("title", "keywords", "authors", "institutions", "source", "abstract", "fulltext")
# bm25 column weights, in FIELDS order: a hit in the title counts most, in a full text least.
WEIGHTS = (10.0, 6.0, 4.0, 2.0, 2.0, 3.0, 1.0)

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002ebef"
_RUNS = re.compile(f"([{_CJK}]+)")
_WORD = re.compile(r"\w", re.UNICODE)


def normalise(text: str) -> str:
    """NFKC and case folding: full-width letters and digits become ASCII, Latin lowercase;
    invisible format characters (a PDF's soft hyphens, zero-width spaces: `identity.visible`)
    are dropped, in a query as in a stored text."""
    if INVISIBLE.search(text):
        text = visible(text)
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    return text.casefold()


def analyse(text: str) -> str:
    """Document text -> the token string stored in the FTS table (space separated)."""
    out: list[str] = []
    for i, part in enumerate(_RUNS.split(normalise(text))):
        if not part:
            continue
        if i % 2:  # a CJK run
            out.extend(part[j : j + 2] for j in range(len(part) - 1))
            out.append(part[-1])
        else:
            out.append(part)
    return " ".join(out)


def _term_phrase(term: str) -> str | None:
    """One query term -> an FTS5 phrase matching it as a substring (None: nothing indexable)."""
    parts = [p for p in _RUNS.split(normalise(term))]
    tokens: list[str] = []
    prefix = False
    last = max((i for i, p in enumerate(parts) if p.strip() and (i % 2 or _WORD.search(p))), default=-1)
    for i, part in enumerate(parts):
        if not part:
            continue
        if i % 2:
            if len(part) == 1:
                tokens.append(part)
                prefix = i == last  # `X*` matches the bigrams starting with X and X alone
            else:
                tokens.extend(part[j : j + 2] for j in range(len(part) - 1))
                if i != last:  # the document has the run's last character alone before Latin text
                    tokens.append(part[-1])
        elif _WORD.search(part):
            tokens.append(part)
            prefix = False
    if not tokens:
        return None
    phrase = '"' + " ".join(tokens).replace('"', '""') + '"'
    return phrase + " *" if prefix else phrase


# Between terms: whitespace, and the list separators people type in Chinese and English
# (NFKC has already turned ，；into ,;). `-` before a term, or the word NOT, excludes it.
_TERM_SEPARATORS = re.compile(r"[\s,;、]+")
_SYNTAX_HINT = "空格（或逗号、顿号）分隔的词须全部出现，词前加 - 表示排除，例如：违约金 酌减 -约定"


@dataclass(frozen=True, slots=True)
class LibraryQuery:
    """A `search_library` query: the FTS5 expression of the required terms, that of the
    excluded ones (None: none) and the normalised required terms (what snippets mark)."""

    required: str
    excluded: str | None
    terms: list[str]

    @property
    def match(self) -> str:
        """The whole FTS5 MATCH expression."""
        return self.required if self.excluded is None else f"({self.required}) NOT ({self.excluded})"


def parse_library_query(query: str) -> LibraryQuery:
    """Terms separated by whitespace, `,` `;` `、` (full-width too); `-term` or `NOT term` excludes
    a term, an upper-case `AND` between terms is redundant and skipped; a term in traditional
    characters is searched in simplified ones, in mainland terms (`script.mainland`) or as written
    (`script.simplified`: a Taiwan term's rewrite can change its sense); `OR` is refused
    (INVALID_ARGUMENT with the syntax), as is a query without a required term."""
    words = [w for w in _TERM_SEPARATORS.split(unicodedata.normalize("NFKC", query)) if w]
    required: list[tuple[str, list[str]]] = []
    excluded: list[str] = []
    negate = False
    for word in words:
        if word == "AND":
            continue
        if word == "OR":
            raise InvalidInput(f"本地检索不支持 OR；{_SYNTAX_HINT}；要任一词出现时请分别检索", query=query, reason="or")
        if word == "NOT":
            negate = True
            continue
        if word.startswith("-") and len(word) > 1:
            negate, word = True, word[1:]
        term = normalise(mainland(word))  # stored texts are CNKI's simplified ones (綠色金融: 绿色金融)
        phrase = _term_phrase(term)
        written = normalise(simplified(word))  # a Taiwan term's rewrite can change its sense (程序: 进程)
        marked = [term]
        if phrase is not None and written != term and (other := _term_phrase(written)) is not None:
            phrase = f"({phrase} OR {other})"
            marked.append(written)  # a paper found by the writer's spelling has it marked too
        if phrase is not None:
            if negate:
                excluded.append(phrase)
            else:
                required.append((phrase, marked))
        negate = False
    if not required:
        reason = "only_excluded" if excluded else "no_text"
        message = "至少需要一个要出现的词" if excluded else "检索词中没有可检索的文字"
        raise InvalidInput(f"{message}；{_SYNTAX_HINT}", query=query, reason=reason)
    return LibraryQuery(
        required=" AND ".join(p for p, _ in required),
        excluded=" OR ".join(excluded) if excluded else None,
        terms=[t for _, marked in required for t in marked],
    )


def match_expression(query: str) -> tuple[str, list[str]]:
    """The FTS5 MATCH expression (every required term, none of the excluded) and the normalised
    required terms (snippets); see `parse_library_query`."""
    parsed = parse_library_query(query)
    return parsed.match, parsed.terms


# --- index maintenance (inside the caller's transaction) ------------------------------------


def _texts(conn: sqlite3.Connection, record_ref: str) -> str:
    rows = conn.execute(
        "SELECT text FROM library_texts WHERE record_ref = ? ORDER BY kind", (record_ref,)
    ).fetchall()
    return "\n".join(r[0] for r in rows)


def _columns(paper: Paper, fulltext: str) -> tuple[str, ...]:
    return (
        " ".join(x for x in (paper.title, paper.title_en or "") if x),
        " ; ".join(paper.keywords),
        " ; ".join(paper.author_names()),
        " ; ".join(paper.institutions),
        paper.source or "",
        paper.abstract or paper.excerpt or "",
        fulltext,
    )


def index_paper(conn: sqlite3.Connection, paper: Paper) -> int:
    """(Re)index one paper with its stored full texts; the characters analysed. A paper written
    again unchanged (the same row in another result page) leaves the FTS index untouched:
    rewriting a row leaves its old entries in the index until a compaction."""
    row = conn.execute(
        "SELECT doc_id, year, doc_type, source_key FROM library_docs WHERE record_ref = ?", (paper.record_ref,)
    ).fetchone()
    values = (paper.year, paper.doc_type or "", normalise_source(paper.source or ""))
    raw = _columns(paper, _texts(conn, paper.record_ref))
    columns = [analyse(c) for c in raw]
    analysed = sum(len(c) for c in raw)
    if row is None:
        doc_id = conn.execute(
            "INSERT INTO library_docs (record_ref, year, doc_type, source_key) VALUES (?, ?, ?, ?)",
            (paper.record_ref, *values),
        ).lastrowid
    else:
        doc_id = row[0]
        if tuple(row[1:]) != values:
            conn.execute(
                "UPDATE library_docs SET year = ?, doc_type = ?, source_key = ? WHERE doc_id = ?", (*values, doc_id)
            )
        old = conn.execute(f"SELECT {', '.join(FIELDS)} FROM library_fts WHERE rowid = ?", (doc_id,)).fetchone()
        if old is not None and list(old) == columns:
            return analysed
        conn.execute("DELETE FROM library_fts WHERE rowid = ?", (doc_id,))
        _count_stale(conn)
    conn.execute(
        f"INSERT INTO library_fts (rowid, {', '.join(FIELDS)}) VALUES (?, {', '.join('?' * len(FIELDS))})",
        (doc_id, *columns),
    )
    return analysed


def unindex(conn: sqlite3.Connection, record_ref: str) -> None:
    row = conn.execute("SELECT doc_id FROM library_docs WHERE record_ref = ?", (record_ref,)).fetchone()
    if row is not None:
        conn.execute("DELETE FROM library_fts WHERE rowid = ?", (row[0],))
        conn.execute("DELETE FROM library_docs WHERE doc_id = ?", (row[0],))
        _count_stale(conn)


def absorb_texts(conn: sqlite3.Connection, primary: str, other: str) -> None:
    """Record `other` was merged into `primary`: its texts move. Of two texts of one kind the
    complete one wins, as in `save_fulltext` (a trial or partial body never replaces a complete
    one); of two alike, the primary's own."""
    html_moves = conn.execute(
        "SELECT 1 FROM library_texts o WHERE o.record_ref = ? AND o.kind = 'html' AND NOT EXISTS"
        " (SELECT 1 FROM library_texts p WHERE p.record_ref = ? AND p.kind = 'html' AND p.complete >= o.complete)",
        (other, primary),
    ).fetchone()
    conn.execute(
        "DELETE FROM library_texts WHERE record_ref = ? AND complete = 0 AND kind IN"
        " (SELECT kind FROM library_texts WHERE record_ref = ? AND complete = 1)",
        (primary, other),
    )
    conn.execute("UPDATE OR IGNORE library_texts SET record_ref = ? WHERE record_ref = ?", (primary, other))
    conn.execute("DELETE FROM library_texts WHERE record_ref = ?", (other,))
    # the reader page goes with the HTML text that stays (store/reader_pages.py: a page is
    # answered only with the text it was read with)
    conn.execute("DELETE FROM reader_pages WHERE record_ref = ?", (primary if html_moves else other,))
    conn.execute("UPDATE reader_pages SET record_ref = ? WHERE record_ref = ?", (primary, other))
    unindex(conn, other)


def _reindex_ref(conn: sqlite3.Connection, record_ref: str) -> None:
    row = conn.execute("SELECT data FROM papers WHERE record_ref = ?", (record_ref,)).fetchone()
    if row is not None:
        index_paper(conn, load(Paper, row[0]))


def _meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM library_meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def _set_meta(conn: sqlite3.Connection, key: str, value: str | None) -> None:
    if value is None:
        conn.execute("DELETE FROM library_meta WHERE key = ?", (key,))
    else:
        conn.execute("INSERT OR REPLACE INTO library_meta (key, value) VALUES (?, ?)", (key, value))


def _count_stale(conn: sqlite3.Connection) -> None:
    """One FTS row deleted or rewritten since the last compaction (library_upkeep.compaction_due)."""
    conn.execute(
        "INSERT INTO library_meta (key, value) VALUES ('stale', 1)"
        " ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
    )


def rebuild_progress(conn: sqlite3.Connection) -> tuple[int, int] | None:
    """(papers indexed, papers) of a rebuild under way; None when the index is built."""
    after = _meta(conn, "rebuild_after")
    if after is None:
        return None
    done = int(conn.execute("SELECT COUNT(*) FROM papers WHERE rowid <= ?", (int(after),)).fetchone()[0])
    return done, int(conn.execute("SELECT COUNT(*) FROM papers").fetchone()[0])


# --- queries ---------------------------------------------------------------------------------


# A search's papers a library search looks in (`LibraryFilters.search_scope`): the scopes of
# search_results (`store/searches.py` `_SCOPES`), on the `search_results` table aliased `s`
_SEARCH_SCOPES: dict[str, str] = {
    "selected": " AND s.selected = 1",
    "eligible": " AND (json_type(s.evidence, '$.eligible') IS NULL OR json_extract(s.evidence, '$.eligible'))",
    "candidates": "",
}


@dataclass(frozen=True, slots=True)
class LibraryFilters:
    year_from: int | None = None
    year_to: int | None = None
    document_types: tuple[str, ...] = ()
    source_tiers: tuple[str, ...] = ()  # a tier one of these asks for (`tier_matches`)
    search_id: str | None = None
    search_scope: Literal["selected", "eligible", "candidates"] = "selected"  # of `search_id`, as search_results
    record_refs: tuple[str, ...] = ()  # only these papers (none: every paper)
    source_keys: tuple[str, ...] = ()  # only papers in these sources (`identity.source_key`; none: any)


@dataclass(frozen=True, slots=True)
class LibraryHit:
    record_ref: str
    score: float  # bm25: lower is better (SQLite's sign); the tool shows its negation


@dataclass(frozen=True, slots=True)
class LibraryPage:
    total: int
    hits: list[LibraryHit]
    total_exact: bool = True  # False: `total` matches were counted and there are more


@dataclass(frozen=True, slots=True)
class PendingPdf:
    record_ref: str
    path: str
    sha256: str


def _tier_sources(conn: sqlite3.Connection, wanted: Sequence[str]) -> list[str]:
    """Source keys whose stored journal page lists a tier one of `wanted` asks for."""
    needles = [w for w in wanted if w.strip()]
    out: list[str] = []
    for key, data in conn.execute("SELECT source_key, data FROM journals WHERE data IS NOT NULL"):
        tiers = json.loads(data).get("tiers") or []
        if any(tier_matches(n, str(t)) for t in tiers for n in needles):
            out.append(key)
    return out


def _count(conn: sqlite3.Connection, body: str, args: list[object]) -> int:
    return int(conn.execute("SELECT COUNT(*)" + body, args).fetchone()[0])


def _ranked(
    conn: sqlite3.Connection, body: str, args: list[object], limit: int, offset: int, *, head: str | None = None
) -> list[tuple[int, float]]:
    """A page of rows in bm25 order; with `head` (the title/keyword expression), the rows it
    matches first: both tiers in one statement, for a match set small enough to rank whole."""
    score = f"bm25(library_fts, {', '.join(map(str, WEIGHTS))})"
    if head is None:
        sql = f"SELECT library_fts.rowid, {score} AS score{body} ORDER BY score, library_fts.rowid LIMIT ? OFFSET ?"
        params = [*args, max(0, limit), max(0, offset)]
    else:
        tier = "library_fts.rowid IN (SELECT rowid FROM library_fts(?))"
        sql = (
            f"SELECT library_fts.rowid, {score} AS score, {tier} AS head{body}"
            " ORDER BY head DESC, score, library_fts.rowid LIMIT ? OFFSET ?"
        )
        params = [head, *args, max(0, limit), max(0, offset)]
    return [(int(r[0]), float(r[1])) for r in conn.execute(sql, params)]


def _segments(
    conn: sqlite3.Connection, body: str, args: list[object]
) -> Iterator[tuple[str, list[object], int | None]]:
    """A tier as ranking segments (condition, arguments, size when known without counting):
    when it holds more than RANK_WINDOW papers, the RANK_WINDOW most recently indexed come
    first and the older ones after, each segment in bm25 order, so a first page ranks
    RANK_WINDOW rows, not every match (docs/benchmarks.md §Library search). Lazy: the window
    boundary (a partial pass, newest first) is looked up only when a page reaches the tier."""
    boundary = conn.execute(
        "SELECT library_fts.rowid" + body + " ORDER BY library_fts.rowid DESC LIMIT 1 OFFSET ?",
        [*args, RANK_WINDOW - 1],
    ).fetchone()
    if boundary is None:
        yield "", args, None
        return
    yield " AND library_fts.rowid >= ?", [*args, boundary[0]], RANK_WINDOW
    yield " AND library_fts.rowid < ?", [*args, boundary[0]], None


Tier = tuple[str, list[object]]  # (body: FROM/WHERE of its rows, arguments)


def _page(
    conn: sqlite3.Connection,
    tiers: Sequence[Tier],
    offset: int,
    limit: int,
    *,
    after_whole_first: Callable[[list[int]], Tier] | None = None,
) -> list[tuple[int, float]]:
    """Rows `offset` .. `offset + limit` of the ranking: the tiers in order, each as its
    segments. A segment's size is counted only when a page starts beyond it and its ranked
    rows cannot tell (a first page never counts a tier: one pass less per query). When this
    page saw every row of the first tier, `after_whole_first(its rowids)` may give a cheaper
    statement for the second tier, with the same rows and scores."""
    rows: list[tuple[int, float]] = []
    start = 0  # rank of the current segment's first row
    first: list[int] | None = []  # rowids of the first tier; None: not all seen by this page
    for n, (body, tier_args) in enumerate(tiers):
        if n == 1 and after_whole_first is not None and first is not None:
            body, tier_args = after_whole_first(first)
        for where, args, known in _segments(conn, body, tier_args):
            skip = max(0, offset - start)
            if known is not None and skip >= known:
                start += known
                first = None
                continue
            want = limit - len(rows)
            got = _ranked(conn, body + where, args, want, skip)
            rows += got
            if len(rows) >= limit:
                return rows
            if n == 0 and first is not None and skip == 0:
                first += [r[0] for r in got]
            else:
                first = None
            # the segment ran out: its size is known from the rows seen, or counted
            if known is not None:
                start += known
            elif got or skip == 0:
                start += skip + len(got)
            else:
                start += _count(conn, body + where, args)
    return rows


def _without_rows(body: str, args: list[object]) -> Callable[[list[int]], Tier]:
    """The second tier of a one-term query once a page saw the whole first tier: the matches
    minus those rows. The same rows as `(match) NOT <first tier>`, and the same bm25: the NOT
    side's phrase (one term) has no instance in a row it does not match, so it adds exactly 0
    to each score. Saved: its IDF pass over the whole table and its doclist reads in the
    window boundary and the ranking (docs/benchmarks.md §Library search, "Second tier")."""

    def tier(ids: list[int]) -> Tier:
        if not ids:
            return body, args
        # fewer ids than the page: one parameter each
        return body + f" AND library_fts.rowid NOT IN ({','.join('?' * len(ids))})", [*args, *ids]

    return tier


def _single_term(match: str) -> bool:
    """`match_expression` joins one phrase per term with " AND " (terms are case folded, so a
    phrase never holds an upper-case AND)."""
    return " AND " not in match


class LibraryMixin(StoreBase):
    _index_pending = False  # a rebuild left by the open, finished by `library_upkeep` (`index_step`)
    upkeep_stalled: str | None = None  # why the upkeep's last step was refused (tried again)

    def check_index_built(self) -> None:
        """LIBRARY_INDEX_BUILDING while a rebuild the open left is under way (retryable, with its
        progress, and `stalled`: why the last step was refused, tried again by itself)."""
        if not self._index_pending:
            return
        with self._read() as conn:
            progress = rebuild_progress(conn)
        if progress is None:
            return
        stalled = self.upkeep_stalled
        why = (
            f"；重建暂时受阻（{stalled}：数据库被其他程序占用或磁盘已满时会这样），排除后会自动继续"
            if stalled
            else ""
        )
        raise LibraryIndexBuilding(
            f"本地文献库的检索索引正在重建（升级后第一次启动时进行，已完成 {progress[0]}/{progress[1]} 篇{why}），"
            "完成前无法检索本地文献；稍后重试，其他工具不受影响",
            indexed=progress[0],
            papers=progress[1],
            **({"stalled": stalled} if stalled else {}),
        )

    def save_fulltext(
        self,
        record_ref: str,
        kind: TextKind,
        text: str,
        observed_at: datetime,
        *,
        sha256: str = "",
        complete: bool = True,
    ) -> bool:
        """Keep a full text (cut at MAX_TEXT_CHARS) and reindex its paper, in one transaction.
        An incomplete text (trial, partial) never replaces a complete one. Only the newest
        TEXTS_KEPT non-empty texts stay. Returns whether the text was written."""
        body = text[:MAX_TEXT_CHARS]
        with self._write() as conn:
            ref = _resolve(conn, record_ref)
            cur = conn.execute(
                "INSERT INTO library_texts (record_ref, kind, text, sha256, complete, chars, observed_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(record_ref, kind) DO UPDATE SET text = excluded.text,"
                " sha256 = excluded.sha256, complete = excluded.complete, chars = excluded.chars,"
                " observed_at = excluded.observed_at WHERE excluded.complete = 1 OR library_texts.complete = 0",
                (ref, kind, body, sha256, int(complete), len(body), to_ts(observed_at)),
            )
            written = cur.rowcount > 0
            old = conn.execute(
                "SELECT record_ref, kind FROM library_texts WHERE chars > 0"
                " ORDER BY observed_at DESC, rowid DESC LIMIT -1 OFFSET ?",
                (TEXTS_KEPT,),
            ).fetchall()
            for old_ref, old_kind in old:
                # A PDF's text leaves as an empty row keeping its file's SHA-256: deleted, the
                # archived file was pending again (pdfs_to_index) and read back at the next search,
                # pushing out another; so every search past the bound read PDFs again.
                conn.execute(
                    "UPDATE library_texts SET text = '', chars = 0 WHERE record_ref = ? AND kind = ?"
                    if old_kind == "pdf"
                    else "DELETE FROM library_texts WHERE record_ref = ? AND kind = ?",
                    (old_ref, old_kind),
                )
            for changed in {ref, *(r for r, _ in old)}:
                _reindex_ref(conn, changed)
            return written

    def fulltexts(self, refs: Sequence[str]) -> dict[str, dict[str, str]]:
        """The stored, non-empty full texts of these papers: ref -> kind (`html`, `pdf`) -> text."""
        out: dict[str, dict[str, str]] = {}
        if not refs:
            return out
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT record_ref, kind, text FROM library_texts WHERE chars > 0 AND record_ref IN"
                f" ({','.join('?' * len(refs))})",
                list(refs),
            ).fetchall()
        for ref, kind, text in rows:
            out.setdefault(ref, {})[kind] = text
        return out

    def pdfs_to_index(self) -> list[PendingPdf]:
        """Archived PDFs whose text is not in the index yet (or whose file changed)."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT d.record_ref, d.path, d.sha256 FROM downloads d LEFT JOIN library_texts t"
                " ON t.record_ref = d.record_ref AND t.kind = 'pdf'"
                " WHERE d.format = 'pdf' AND (t.sha256 IS NULL OR t.sha256 != d.sha256) ORDER BY d.observed_at"
            ).fetchall()
        return [PendingPdf(r[0], str(located(r[1], self.path.parent)), r[2]) for r in rows]

    def library_search(
        self, match: str, filters: LibraryFilters, offset: int, limit: int, *, excluded: str | None = None
    ) -> LibraryPage:
        """One page of papers matching the FTS5 expression `match`: first those with every term
        in the title or keywords, then the others, bm25 order within each tier. Up to
        RANK_WINDOW matches are ranked whole in one statement; beyond, bm25 is computed for the
        window segments the page reaches, never for every match, and `total` is counted up to
        TOTAL_COUNTED past the page (DESIGN.md §Library search, "what a query costs").
        `excluded` (an FTS5 expression) removes the papers it matches in any field."""
        self.check_index_built()
        required = match
        if excluded is not None:
            match = f"({required}) NOT ({excluded})"
        with self._read() as conn:
            filtered = _filtered(conn, match, filters)
            if filtered is None:
                return LibraryPage(0, [])
            where, args = filtered
            # Without a filter the FTS table answers alone (no join per matching row).
            joined = len(where) > 1
            body = (
                " FROM library_fts JOIN library_docs d ON d.doc_id = library_fts.rowid" if joined else " FROM library_fts"
            ) + " WHERE " + " AND ".join(where)
            head = f"{{title keywords}} : ({required})"
            if excluded is not None:  # the title/keyword tier: required terms there, excluded ones nowhere
                head = f"({head}) NOT ({excluded})"
            try:
                # counted far enough to know whether a row follows the page
                cap = max(TOTAL_COUNTED, offset + max(0, limit) + 1)
                total = int(conn.execute(f"SELECT COUNT(*) FROM (SELECT 1{body} LIMIT ?)", [*args, cap]).fetchone()[0])
                if total <= offset or limit <= 0:
                    rows = []
                elif total < cap and total <= RANK_WINDOW:  # one ranking of every match, tier first
                    rows = _ranked(conn, body, args, limit, offset, head=head)
                else:
                    tiers = [(body, [head, *args[1:]]), (body, [f"({match}) NOT ({head})", *args[1:]])]
                    # (a page of at most 1,000 rows keeps the left-out ids under SQLite's
                    # parameter limit; the tool asks for at most 100)
                    lean = excluded is None and _single_term(match) and limit <= 1000
                    rest = _without_rows(body, args) if lean else None
                    rows = _page(conn, tiers, offset, limit, after_whole_first=rest)
            except sqlite3.OperationalError as exc:  # an expression FTS5 refuses
                raise InvalidInput("检索词无法解析", reason=str(exc)) from exc
            refs = dict(
                conn.execute(
                    f"SELECT doc_id, record_ref FROM library_docs WHERE doc_id IN ({','.join('?' * len(rows))})",
                    [r[0] for r in rows],
                ).fetchall()
            )
        hits = [LibraryHit(refs[r[0]], float(r[1])) for r in rows if r[0] in refs]
        return LibraryPage(total, hits, total_exact=total < cap)

    def library_titles(
        self, match: str, filters: LibraryFilters, *, excluded: str | None = None
    ) -> list[tuple[str, str]]:
        """(record_ref, title) of every paper matching `match` and `filters`, unranked: the
        records a page's papers may share a work with (`pipeline/library._works`, narrowed by
        `filters.source_keys`)."""
        self.check_index_built()
        if excluded is not None:
            match = f"({match}) NOT ({excluded})"
        with self._read() as conn:
            filtered = _filtered(conn, match, filters)
            if filtered is None:
                return []
            where, args = filtered
            try:
                rows = conn.execute(
                    "SELECT d.record_ref, json_extract(p.data, '$.title') FROM library_fts"
                    " JOIN library_docs d ON d.doc_id = library_fts.rowid JOIN papers p ON p.record_ref = d.record_ref"
                    f" WHERE {' AND '.join(where)}",
                    args,
                ).fetchall()
            except sqlite3.OperationalError as exc:  # an expression FTS5 refuses
                raise InvalidInput("检索词无法解析", reason=str(exc)) from exc
        return [(str(r[0]), str(r[1] or "")) for r in rows]

    def library_doc_types(self) -> set[str]:
        """The document types of the papers in the index (CNKI's names: 期刊, 硕士, …)."""
        with self._read() as conn:
            return {str(r[0]) for r in conn.execute("SELECT DISTINCT doc_type FROM library_docs") if r[0]}

    _library_size: tuple[tuple[int, int], tuple[int, int]] | None = None  # (write stamp, size)

    def library_size(self) -> tuple[int, int]:
        """(papers indexed, full texts kept). Counted again only after a write: this
        connection's change counter and `data_version` (another connection's commit) stamp it."""
        stamp = self.write_stamp()
        with self._read() as conn:
            if self._library_size is not None and self._library_size[0] == stamp:
                return self._library_size[1]
            docs = int(conn.execute("SELECT COUNT(*) FROM library_docs").fetchone()[0])
            # `chars`, not the text: counting must not read every stored full text
            texts = int(conn.execute("SELECT COUNT(*) FROM library_texts WHERE chars > 0").fetchone()[0])
            self._library_size = (stamp, (docs, texts))
        return docs, texts


def _filtered(conn: sqlite3.Connection, match: str, filters: LibraryFilters) -> tuple[list[str], list[object]] | None:
    """The WHERE terms and their arguments of a library query on `library_fts` joined to
    `library_docs d` (the MATCH first); None when the filters can match no paper."""
    where = ["library_fts MATCH ?"]
    args: list[object] = [match]
    if filters.search_id is not None:
        if conn.execute("SELECT 1 FROM searches WHERE search_id = ?", (filters.search_id,)).fetchone() is None:
            raise SearchNotFound(search_id=filters.search_id)
        scope = _SEARCH_SCOPES[filters.search_scope]
        where.append(
            "d.record_ref IN (SELECT COALESCE(a.record_ref, s.record_ref) FROM search_results s"
            f" LEFT JOIN paper_aliases a ON a.old_ref = s.record_ref WHERE s.search_id = ?{scope})"
        )
        args.append(filters.search_id)
    for column, values in (("record_ref", filters.record_refs), ("source_key", filters.source_keys)):
        if values:
            where.append(f"d.{column} IN ({','.join('?' * len(values))})")
            args.extend(values)
    if filters.year_from is not None:
        where.append("d.year >= ?")
        args.append(filters.year_from)
    if filters.year_to is not None:
        where.append("d.year <= ?")
        args.append(filters.year_to)
    if filters.document_types:
        where.append(f"d.doc_type IN ({','.join('?' * len(filters.document_types))})")
        args.extend(filters.document_types)
    if filters.source_tiers:
        keys = _tier_sources(conn, filters.source_tiers)
        if not keys:
            return None
        where.append(f"d.source_key IN ({','.join('?' * len(keys))})")
        args.extend(keys)
    return where, args


def _resolve(conn: sqlite3.Connection, ref: str) -> str:
    from cnki_mcp.store.papers import _resolve as resolve

    return resolve(conn, ref)

