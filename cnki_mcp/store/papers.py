"""Papers: upsert with identity resolution (native / DOI / bibliography keys, never a title
alone), merge rules from `identity`, stable record refs, aliases, and raw detail pages."""

from __future__ import annotations

import re
import secrets
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from cnki_mcp.errors import DocumentNotFound, IdentityConflict
from cnki_mcp.identity import (
    Paper,
    conflicts,
    detail_matches,
    detail_token,
    doi_key,
    index_keys,
    listed_online_first,
    merge,
    same_observation,
    same_paper,
    split_native_key,
    title_key,
)
from cnki_mcp.models import DetailPage, ExportRecord, GridRow
from cnki_mcp.store.db import StoreBase, from_ts, to_ts
from cnki_mcp.store.library import absorb_texts, index_paper
from cnki_mcp.stored import load, load_cached


def issue_year_differs(paper: Paper, record: ExportRecord) -> bool:
    """Whether the export's year (%D) of a journal paper in an issue, the issue's year and so the
    year a citation gives (as a detail page's `.top-tip` does), should replace the paper's. A list
    row's year is read from 发表时间, which for a paper first published online stays its online day
    (CJFQ rows `2026-04-12 09:47`, saved page kns8s-grid/kaffu_waam_p1.html): online in December,
    printed in a January issue, the row says the year before. A detail page's year (the issue's
    already) and an online-first paper's (no issue yet) stay."""
    return (
        record.year is not None
        and record.year != paper.year
        and bool(record.issue or record.volume)
        and (record.ref_type or "").lower().startswith("journal")
        and not paper.detail_confirmed
        and not listed_online_first(paper.native)
    )


@dataclass(frozen=True, slots=True)
class StoredDetail:
    """The last parsed detail page of a paper (with references and citing lists)."""

    record_ref: str
    page: DetailPage
    locator: str | None
    observed_at: datetime
    parser_version: int


def _resolve(conn: sqlite3.Connection, ref: str) -> str:
    """Follow aliases left by merged records (at most a short chain)."""
    seen: set[str] = set()
    while ref not in seen:
        seen.add(ref)
        row = conn.execute("SELECT record_ref FROM paper_aliases WHERE old_ref = ?", (ref,)).fetchone()
        if row is None:
            return ref
        ref = row[0]
    return ref


def _load(conn: sqlite3.Connection, ref: str) -> Paper | None:
    row = conn.execute("SELECT data FROM papers WHERE record_ref = ?", (ref,)).fetchone()
    return load(Paper, row[0]) if row else None


def _chunks(items: list[str], size: int = 500) -> Iterator[list[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _taken(conn: sqlite3.Connection, ref: str) -> bool:
    return bool(
        conn.execute("SELECT 1 FROM papers WHERE record_ref = ?", (ref,)).fetchone()
        or conn.execute("SELECT 1 FROM paper_aliases WHERE old_ref = ?", (ref,)).fetchone()
    )


def _like_suffix(filename: str) -> str:
    """LIKE pattern for `<anything>:FILENAME` (wildcards in the filename escaped)."""
    escaped = filename.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return "%:" + escaped


def _strong_keys(paper: Paper) -> list[str]:
    return [k for k in index_keys(paper.keys()) if not k.startswith("title:")]


# Paper writes per connection (by id: a Connection takes no attributes), what `papers_stamp`
# counts: a cache of what papers say (the BibTeX keys of a search's scope) holds until one.
_PAPER_WRITES: dict[int, int] = {}


def _touched(conn: sqlite3.Connection) -> None:
    _PAPER_WRITES[id(conn)] = _PAPER_WRITES.get(id(conn), 0) + 1


def _write_paper(conn: sqlite3.Connection, paper: Paper, now: str, *, new: bool) -> None:
    _touched(conn)
    data = paper.model_dump_json()
    keys = paper.keys()
    if new:
        conn.execute(
            "INSERT INTO papers (record_ref, title_key, native_key, doi_key, data, detail_confirmed,"
            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                paper.record_ref,
                keys.title,
                keys.native,
                keys.doi,
                data,
                int(paper.detail_confirmed),
                now,
                now,
            ),
        )
    else:
        conn.execute(
            "UPDATE papers SET title_key = ?, native_key = ?, doi_key = ?, data = ?, detail_confirmed = ?,"
            " updated_at = ? WHERE record_ref = ?",
            (keys.title, keys.native, keys.doi, data, int(paper.detail_confirmed), now, paper.record_ref),
        )
    # Keys accumulate: an older bibliography key keeps finding the paper for candidate
    # lookup; `same_paper` on the current keys still decides every join.
    conn.executemany(
        "INSERT OR IGNORE INTO paper_keys (key, record_ref) VALUES (?, ?)",
        [(k, paper.record_ref) for k in _strong_keys(paper)],
    )
    index_paper(conn, paper)  # the library index commits with the paper (DESIGN.md §Library search)


def _absorb(conn: sqlite3.Connection, primary: str, other: str) -> None:
    """Fold record `other` into `primary`: keys move, the old ref becomes an alias."""
    _touched(conn)
    conn.execute("UPDATE OR IGNORE paper_keys SET record_ref = ? WHERE record_ref = ?", (primary, other))
    conn.execute("DELETE FROM paper_keys WHERE record_ref = ?", (other,))
    conn.execute("UPDATE paper_aliases SET record_ref = ? WHERE record_ref = ?", (primary, other))
    conn.execute("INSERT OR REPLACE INTO paper_aliases (old_ref, record_ref) VALUES (?, ?)", (other, primary))
    conn.execute("DELETE FROM papers WHERE record_ref = ?", (other,))
    conn.execute(
        "DELETE FROM details WHERE record_ref = ? AND EXISTS (SELECT 1 FROM details WHERE record_ref = ?)",
        (other, primary),
    )
    conn.execute("UPDATE OR IGNORE details SET record_ref = ? WHERE record_ref = ?", (primary, other))
    absorb_texts(conn, primary, other)


def _upsert(
    conn: sqlite3.Connection,
    incoming: Paper,
    origin: Literal["list", "detail"],
    expected: Paper | None,
    now: str,
) -> Paper:
    keys = incoming.keys()
    filename = split_native_key(keys.native)[1]
    matches: list[Paper] = [expected] if expected is not None else []
    strong = _strong_keys(incoming)
    if strong:
        marks = ",".join("?" * len(strong))
        # Papers whose DOI or native FILENAME contradicts the incoming one are filtered here,
        # so a common bibliography key does not make every upsert load every namesake. The
        # stored native key is `FILENAME`, `FAMILY:FILENAME` or (schema 1) `DBCODE:FILENAME`;
        # families are compared by `same_paper`.
        refs = [
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT k.record_ref FROM paper_keys k JOIN papers p ON p.record_ref = k.record_ref"
                f" WHERE k.key IN ({marks})"
                " AND (p.native_key = '' OR ? = '' OR p.native_key = ? OR p.native_key LIKE ? ESCAPE '\\')"
                " AND (p.doi_key = '' OR ? = '' OR p.doi_key = ?)"
                " ORDER BY p.rowid",
                (*strong, filename, filename, _like_suffix(filename), keys.doi, keys.doi),
            )
        ]
        for ref in refs:
            if any(m.record_ref == ref for m in matches):
                continue
            candidate = _load(conn, ref)
            if candidate is not None and same_paper(candidate, keys):
                matches.append(candidate)
    if not matches:
        same = _load(conn, _resolve(conn, incoming.record_ref))
        if same is not None and same_observation(same.keys(), keys):
            matches.append(same)
    if not matches:
        ref = incoming.record_ref
        while _taken(conn, ref):  # the strongest-key ref belongs to a different paper
            ref = "rec_" + secrets.token_hex(12)
        paper = incoming.model_copy(update={"record_ref": ref})
        _write_paper(conn, paper, now, new=True)
        return paper
    base = matches[0]
    for other in matches[1:]:
        # Records that only this observation shows to be one paper are joined, unless they
        # contradict each other (two native keys that share a bibliography key stay apart).
        if conflicts(base.keys(), other.keys()):
            continue
        base = merge(base, other, "detail" if other.detail_confirmed else "list")
        _absorb(conn, base.record_ref, other.record_ref)
    merged = merge(base, incoming, origin)
    _write_paper(conn, merged, now, new=False)
    return merged


class PapersMixin(StoreBase):
    def upsert_from_grid(
        self, rows: Sequence[GridRow], observed_at: datetime, *, public_origins: tuple[str, ...] = ()
    ) -> list[Paper]:
        """Store one grid page's rows (one transaction) and return the merged papers in row order."""
        now = to_ts(observed_at)
        incoming = [Paper.from_grid_row(r, observed_at, public_origins=public_origins) for r in rows]
        with self._write() as conn:
            return [_upsert(conn, p, "list", None, now) for p in incoming]

    def upsert_from_detail(
        self,
        detail: DetailPage,
        locator: str | None,
        observed_at: datetime,
        expected_ref: str | None = None,
        *,
        parser_version: int = 0,
        public_origins: tuple[str, ...] = (),
    ) -> Paper:
        """Store a parsed detail page. With `expected_ref` (the paper whose locator was
        fetched) the page must pass `detail_matches`, else IDENTITY_CONFLICT and nothing
        is written; an unknown ref gives DOCUMENT_NOT_FOUND."""
        now = to_ts(observed_at)
        incoming = Paper.from_detail(detail, locator, observed_at, public_origins=public_origins)
        with self._write() as conn:
            expected: Paper | None = None
            if expected_ref is not None:
                expected = _load(conn, _resolve(conn, expected_ref))
                if expected is None:
                    raise DocumentNotFound(record_ref=expected_ref)
                if not detail_matches(expected, detail):
                    raise IdentityConflict(record_ref=expected_ref, title=detail.title)
            paper = _upsert(conn, incoming, "detail", expected, now)
            conn.execute(
                "INSERT OR REPLACE INTO details (record_ref, data, locator, observed_at, parser_version)"
                " VALUES (?, ?, ?, ?, ?)",
                (paper.record_ref, detail.model_dump_json(), locator, now, parser_version),
            )
            return paper

    def fill_from_export(self, record_ref: str, record: ExportRecord, observed_at: datetime) -> Paper | None:
        """Fill the paper's empty volume, issue, pages, DOI, abstract, keywords and institutions
        from CNKI's batch export of its list row (one transaction) and note when the export
        answered (`export_observed_at`: abstract and keywords read, even when it had none). Only
        empty fields are filled, and a list row's year becomes the issue's (`issue_year_differs`):
        the export never overrides what a detail page confirmed, nor marks the paper's detail
        page as read."""
        with self._write() as conn:
            paper = _load(conn, _resolve(conn, record_ref))
            if paper is None:
                return None
            update: dict[str, Any] = {"export_observed_at": observed_at}
            for name in ("volume", "issue", "pages", "doi", "abstract"):
                value = getattr(record, name)
                # a newspaper has no abstract: its text is the 正文快照 its detail page shows
                # apart (`excerpt`); stored as the abstract, it had both once that page was read
                field = "excerpt" if name == "abstract" and "报纸" in (paper.doc_type or "") else name
                if value and not getattr(paper, field):
                    update[field] = value
            for name in ("keywords", "institutions"):
                values = [v for v in getattr(record, name) if v.strip()]
                if values and not getattr(paper, name):
                    update[name] = values
            if issue_year_differs(paper, record):
                update["year"] = record.year
                update["issue_year_read"] = True
            paper = paper.model_copy(update=update)
            _write_paper(conn, paper, to_ts(observed_at), new=False)
            return paper

    def get(self, record_ref: str) -> Paper | None:
        with self._read() as conn:
            return _load(conn, _resolve(conn, record_ref))

    def papers_by_refs(self, refs: Iterable[str]) -> dict[str, Paper]:
        """Papers keyed by the ref asked for (an alias maps to the paper it was merged into)."""
        decoded: dict[str, Paper] = {}
        out: dict[str, Paper] = {}
        for ref, (target, text) in self.paper_texts(refs).items():
            paper = decoded.get(target)
            if paper is None:
                paper = decoded[target] = load(Paper, text)
            out[ref] = paper
        return out

    def paper_texts(self, refs: Iterable[str]) -> dict[str, tuple[str, str]]:
        """(record_ref, stored JSON) keyed by the ref asked for, aliases followed; read in chunks,
        a few statements per 500 refs instead of two per ref (a 3,000-candidate ranking asks for
        every candidate at each enrichment step). A caller that decodes only the texts that
        changed since its last call keeps one ranking step from re-validating every paper."""
        asked = list(dict.fromkeys(refs))
        target = {ref: ref for ref in asked}
        out: dict[str, tuple[str, str]] = {}
        with self._read() as conn:
            pending = asked
            seen = {ref: {ref} for ref in asked}  # as `_resolve`: a cycle ends the chain
            while pending:
                moved: dict[str, str] = {}
                for chunk in _chunks(sorted({target[r] for r in pending})):
                    marks = ",".join("?" * len(chunk))
                    moved.update(
                        conn.execute(
                            f"SELECT old_ref, record_ref FROM paper_aliases WHERE old_ref IN ({marks})", chunk
                        ).fetchall()
                    )
                going: list[str] = []
                for r in pending:
                    nxt = moved.get(target[r])
                    if nxt is None:
                        continue
                    target[r] = nxt
                    if nxt not in seen[r]:
                        seen[r].add(nxt)
                        going.append(r)
                pending = going
            texts: dict[str, str] = {}
            for chunk in _chunks(sorted(set(target.values()))):
                marks = ",".join("?" * len(chunk))
                texts.update(
                    conn.execute(
                        f"SELECT record_ref, data FROM papers WHERE record_ref IN ({marks})", chunk
                    ).fetchall()
                )
        for ref in asked:
            text = texts.get(target[ref])
            if text is not None:
                out[ref] = (target[ref], text)
        return out

    def resolve_ref(self, record_ref: str) -> str:
        with self._read() as conn:
            return _resolve(conn, record_ref)

    def find_by_filename(self, filename: str) -> Paper | None:
        """The one stored paper with CNKI file name `filename` (any family; None when there is
        none, or several that no merge joined)."""
        name = "".join(filename.split()).upper()
        if not name:
            return None
        with self._read() as conn:
            refs = [
                r[0]
                for r in conn.execute(
                    "SELECT DISTINCT record_ref FROM paper_keys WHERE key = ? LIMIT 2", (f"native:{name}",)
                )
            ]
            return _load(conn, refs[0]) if len(refs) == 1 else None

    def refs_by_filenames(self, filenames: Iterable[str]) -> dict[str, str]:
        """record_ref of the one stored paper per CNKI file name (keys upper-cased, spaces
        removed; a name with no paper, or several that no merge joined, is left out): what
        `find_by_filename` finds, for a page of list entries in one read."""
        names = list(dict.fromkeys(n for n in ("".join(f.split()).upper() for f in filenames) if n))
        found: dict[str, set[str]] = {}
        with self._read() as conn:
            for part in _chunks(names):
                marks = ",".join("?" * len(part))
                rows = conn.execute(
                    f"SELECT DISTINCT key, record_ref FROM paper_keys WHERE key IN ({marks})",
                    [f"native:{n}" for n in part],
                )
                for key, ref in rows:
                    found.setdefault(key.removeprefix("native:"), set()).add(_resolve(conn, ref))
        return {name: next(iter(refs)) for name, refs in found.items() if len(refs) == 1}

    def find_by_doi(self, doi: str) -> list[Paper]:
        """The stored papers whose DOI is `doi` (any case or resolver prefix); one indexed read."""
        key = doi_key(doi)
        if not key:
            return []
        found: dict[str, Paper] = {}
        with self._read() as conn:
            for (ref,) in conn.execute("SELECT DISTINCT record_ref FROM paper_keys WHERE key = ?", (f"doi:{key}",)):
                paper = _load(conn, _resolve(conn, ref))
                # keys accumulate: a paper whose DOI has since changed is not this DOI's
                if paper is not None and paper.keys().doi == key:
                    found.setdefault(paper.record_ref, paper)
        return list(found.values())

    def find_by_title_key(self, title: str) -> list[Paper]:
        """Every paper whose title key equals that of `title`. Several = ambiguous: the
        caller decides (a title never picks one paper by itself)."""
        key = title_key(title)
        if not key:
            return []
        with self._read() as conn:
            rows = conn.execute(
                "SELECT data FROM papers WHERE title_key = ? ORDER BY rowid", (key,)
            ).fetchall()
        return [load(Paper, r[0]) for r in rows]

    def title_namesakes(self, refs: Sequence[str]) -> dict[str, Paper]:
        """The other papers whose title key equals that of one of `refs` (an indexed lookup;
        read only when there are any)."""
        found: list[str] = []
        with self._read() as conn:
            for chunk in _chunks(sorted(set(refs))):
                found += [
                    r[0]
                    for r in conn.execute(
                        "SELECT DISTINCT o.record_ref FROM papers p JOIN papers o ON o.title_key = p.title_key"
                        f" AND o.record_ref != p.record_ref WHERE p.record_ref IN ({','.join('?' * len(chunk))})",
                        chunk,
                    )
                ]
        others = set(found) - set(refs)
        return self.papers_by_refs(sorted(others)) if others else {}

    def find_by_detail_token(self, token: str) -> list[Paper]:
        """The stored papers whose detail link (locator or shown URL) carries the `v` token
        `token` (`identity.detail_token`): a link a tool showed, given back to name the paper. Not
        indexed: one scan, narrowed by the token's longest alphanumeric run."""
        if not token:
            return []
        probe = max(re.findall(r"[A-Za-z0-9]+", token), key=len, default="")
        with self._read() as conn:
            rows = conn.execute("SELECT data FROM papers WHERE data LIKE ? ORDER BY rowid", (f"%{probe}%",))
            papers = [load(Paper, r[0]) for r in rows]
        return [p for p in papers if token in (detail_token(p.locator), detail_token(p.public_url))]

    def detail_page(self, record_ref: str) -> StoredDetail | None:
        """The stored detail page, or None when there is none or this release cannot read it (a
        cache row: the next detail read replaces it)."""
        with self._read() as conn:
            ref = _resolve(conn, record_ref)
            row = conn.execute(
                "SELECT data, locator, observed_at, parser_version FROM details WHERE record_ref = ?", (ref,)
            ).fetchone()
        page = load_cached(DetailPage, row[0]) if row is not None else None
        if row is None or page is None:
            return None
        return StoredDetail(ref, page, row[1], from_ts(row[2]), int(row[3]))

    def papers_stamp(self) -> tuple[int, int]:
        """Changes whenever a paper is written or merged (by this process, or any commit of
        another connection: `data_version`); other writes (operations, searches, full texts)
        leave it as it was."""
        with self._read() as conn:
            return _PAPER_WRITES.get(id(conn), 0), int(conn.execute("PRAGMA data_version").fetchone()[0])

    def paper_count(self) -> int:
        with self._read() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM papers").fetchone()[0])
