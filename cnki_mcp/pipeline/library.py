"""`search_library`: full-text search over what the store keeps, never a CNKI request
(DESIGN.md §Library search). The index itself is `store/library.py`; this module turns the
tool's input into a query, brings downloaded PDFs' text into the index first, and builds the
page: bm25 order, matched fields, one snippet per hit, paging like `search_results`."""

from __future__ import annotations

import dataclasses
import logging
import re
import sqlite3
import sys
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from cnki_mcp.clock import Clock
from cnki_mcp.doc_kinds import DOCTORAL, KIND_ALIASES, MASTER, THESES
from cnki_mcp.errors import CnkiError, InvalidInput
from cnki_mcp.identity import Paper, listed_online_first, source_key
from cnki_mcp.models import DocType
from cnki_mcp.pipeline.models import MAX_OFFSET, SEARCH_ID_CHARS, Scope
from cnki_mcp.rank import KNOWN_TIERS, tier_matches
from cnki_mcp.store import LibraryFilters, Store
from cnki_mcp.store.library import MAX_TEXT_CHARS, LibraryQuery, normalise, parse_library_query
from cnki_mcp.works import final_of, same_work, work_title_key

log = logging.getLogger(__name__)

SNIPPET_CONTEXT = 60  # characters each side of the first hit
# PDFs read into the index by one search_library call (up to seconds each): a library whose
# 3,000 downloads were all pending answered its first search after a minute and more, past a
# client's request timeout. The rest are read by a thread meanwhile (`pdfs_pending` says how many).
PDFS_PER_CALL = 20
MatchedField = Literal[
    "title", "keywords", "authors", "institutions", "source", "abstract", "fulltext_html", "fulltext_pdf"
]
# Where a snippet is taken from, first field with a hit wins (the title is in every result).
_SNIPPET_ORDER: tuple[MatchedField, ...] = (
    "abstract",
    "fulltext_html",
    "fulltext_pdf",
    "keywords",
    "institutions",
    "authors",
    "source",
    "title",
)


class LibraryInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=200)
    year_from: int | None = None
    year_to: int | None = None
    document_types: list[str] = Field(default_factory=list)
    source_tiers: list[str] = Field(default_factory=list)
    search_id: str | None = Field(default=None, max_length=SEARCH_ID_CHARS)
    scope: Scope = "selected"  # of search_id's papers, as search_results
    offset: int = Field(0, ge=0, le=MAX_OFFSET)
    limit: int = Field(20, ge=1, le=100)


class LibraryResult(BaseModel):
    record_ref: str
    title: str
    authors: list[str]
    year: int | None
    source: str | None
    document_type: str | None
    url: str | None
    tiers: list[str] = Field(default_factory=list)  # the source's journal tiers, as search results show them
    score: float = Field(
        description="BM25 相关度（越大越相关，4 位有效数字）；只在本次结果之间比较：小库中多数文献都含的词，分数约为 1e-6 量级"
    )
    matched_fields: list[MatchedField]
    snippet: str = Field(description="命中处上下文，命中词用【】标出")
    fulltext: list[Literal["html", "pdf"]] = Field(description="本地保存的全文种类")


class LibraryPage(BaseModel):
    query: str
    total: int = Field(description="命中记录数（total_exact 为 false 时是下限）；一篇的网络首发与正式版记录只列正式版，故可多于所列")
    total_exact: bool = Field(description="false：命中太多，只数到 total 篇，实际更多；翻页照常用 next_offset")
    offset: int
    next_offset: int | None
    results: list[LibraryResult] = Field(default_factory=list)
    indexed_papers: int = Field(description="本地索引中的文献数")
    indexed_fulltexts: int = Field(description="本地保存的全文数")
    pdfs_pending: int = Field(
        0,
        description="已下载但尚未读入索引的 PDF 篇数（其文字这次还搜不到；正在后台读入，稍后再检索）",
    )
    message: str | None = None  # why the works listed are fewer than `total` counts


# A PDF wraps Chinese text at the line end: the break is not a word boundary.
_CJK_WRAP = re.compile(r"(?<=[\u3400-\u9fff\uf900-\ufaff，、；：])[ \t]*\n[ \t]*(?=[\u3400-\u9fff\uf900-\ufaff])")


def index_downloaded_pdfs(store: Store, data_dir: Path, clock: Clock, limit: int | None = None) -> int:
    """Put the text of archived PDFs not indexed yet into the store (and so the index), the
    oldest downloads first: at most `limit` (PDFS_PER_CALL when None) files read here, the rest by
    a reader thread of the store's this starts. While another call or the reader reads the
    store's PDFs none are read here: two calls at once (search_library runs in worker threads)
    read the same oldest files and started a reader each. Returns how many files are still
    pending (not counting those not there)."""
    with _READERS_LOCK:
        busy = store in _BUSY
        _BUSY.add(store)
    if busy:
        return _read_pending(store, data_dir, clock, 0)
    handed_over = False
    try:
        pending = _read_pending(store, data_dir, clock, PDFS_PER_CALL if limit is None else limit)
        if pending:
            reader = threading.Thread(
                target=_read_rest, args=(store, data_dir, clock), name="cnki-library-pdfs", daemon=True
            )
            with _READERS_LOCK:
                _READERS[store] = reader
            reader.start()
            handed_over = True
        return pending
    finally:
        if not handed_over:
            with _READERS_LOCK:
                _BUSY.discard(store)


# The stores whose pending PDFs a call or a reader thread is reading (one at a time per store),
# and the reader thread reading a store's pending PDFs past a call's bound.
_BUSY: weakref.WeakSet[Store] = weakref.WeakSet()
_READERS: weakref.WeakKeyDictionary[Store, threading.Thread] = weakref.WeakKeyDictionary()
_READERS_LOCK = threading.Lock()


def _read_rest(store: Store, data_dir: Path, clock: Clock) -> None:
    try:
        _read_pending(store, data_dir, clock, sys.maxsize)
    except RuntimeError:  # the store closed: the next call after a start goes on
        return
    except (CnkiError, sqlite3.Error) as exc:  # a full or locked disk: the next call tries again
        log.warning("downloaded PDFs not indexed: %s", exc)
    finally:
        with _READERS_LOCK:
            _BUSY.discard(store)


def _read_pending(store: Store, data_dir: Path, clock: Clock, budget: int) -> int:
    """Read up to `budget` pending PDFs; how many existing files are left. A file that cannot be
    read is remembered with an empty text, so it is not retried until its content changes. A file
    that is not there (deleted or moved away by the person) is not remembered: the same file
    downloaded again is read then."""
    pending = 0
    for item in store.pdfs_to_index():
        if not Path(item.path).is_file():
            continue
        if budget <= 0:
            pending += 1
            continue
        budget -= 1
        try:
            text = _CJK_WRAP.sub("", _pdf_text(item.path, data_dir))
        except CnkiError as exc:  # moved, not a PDF, unreadable: nothing to index
            log.info("PDF of %s not indexed: %s", item.record_ref, exc.code)
            text = ""
        store.save_fulltext(item.record_ref, "pdf", text, clock.now(), sha256=item.sha256)
    return pending


def _pdf_text(path: str, data_dir: Path) -> str:
    """The PDF's text up to MAX_TEXT_CHARS, read in pdf_text's largest pieces."""
    from cnki_mcp.pdf_text import MAX_CHARACTERS, read_pdf_text

    parts: list[str] = []
    size = 0
    page: int | None = 1
    while page is not None and size < MAX_TEXT_CHARS:
        got = read_pdf_text(path, data_dir, pages=f"{page}-", max_characters=min(MAX_CHARACTERS, MAX_TEXT_CHARS - size))
        parts.append(got.text)
        size += len(got.text)
        page = got.next_page if got.truncated and got.next_page != page else None
    return "\n\n".join(parts)


def _fields(paper: Paper, texts: dict[str, str]) -> dict[MatchedField, str]:
    return {
        "title": " ".join(x for x in (paper.title, paper.title_en or "") if x),
        "keywords": "；".join(paper.keywords),
        "authors": "；".join(paper.author_names()),
        "institutions": "；".join(paper.institutions),
        "source": paper.source or "",
        "abstract": paper.abstract or paper.excerpt or "",
        "fulltext_html": texts.get("html", ""),
        "fulltext_pdf": texts.get("pdf", ""),
    }


def _needles(terms: list[str]) -> list[str]:
    """What a snippet looks for: each term, and for Latin words each word (FTS5 matched words)."""
    out: list[str] = []
    for term in terms:
        out.append(term)
        out.extend(w for w in re.findall(r"\w+", term) if w != term)
    return [n for n in out if n]


def _pattern(terms: list[str], flags: int = 0) -> re.Pattern[str]:
    needles = sorted(set(_needles(terms)), key=len, reverse=True)
    return re.compile("|".join(re.escape(n) for n in needles), flags)


@dataclass(frozen=True, slots=True)
class _Finder:
    """The terms as patterns: `folded` over normalised text (what the index saw), `raw` over the
    stored text, case ignored. A long full text is searched raw first: NFKC over 20,000
    characters costs milliseconds per result (docs/benchmarks.md §Library search)."""

    folded: re.Pattern[str]
    raw: re.Pattern[str]

    @classmethod
    def of(cls, terms: list[str]) -> _Finder:
        return cls(_pattern(terms), _pattern(terms, re.IGNORECASE))

    def hits(self, value: str) -> bool:
        return self.raw.search(value) is not None or self.folded.search(normalise(value)) is not None


def snippet(text: str, terms: list[str], context: int = SNIPPET_CONTEXT) -> str | None:
    """`context` characters around the first hit of any term, hits marked 【】; None: no hit."""
    return _snippet(text, _Finder.of(terms), context)


def _snippet(text: str, finder: _Finder, context: int = SNIPPET_CONTEXT) -> str | None:
    if len(text) > 8 * context and (raw := finder.raw.search(text)) is not None:
        # a long text: only the stretch around its first raw hit is normalised
        lo, hi = max(0, raw.start() - 2 * context), min(len(text), raw.end() + 2 * context)
        inner = _window(text[lo:hi], finder.folded, context)
        if inner is not None:
            return ("…" if lo > 0 and not inner.startswith("…") else "") + inner
    return _window(text, finder.folded, context)


def _window(text: str, pattern: re.Pattern[str], context: int) -> str | None:
    folded = normalise(text)
    if len(folded) != len(text):
        text = folded  # folding changed lengths: show the folded text so offsets stay right
    first = pattern.search(folded)
    if first is None:
        return None
    start = max(0, first.start() - context)
    end = min(len(text), first.end() + context)
    out: list[str] = []
    at = start
    for m in pattern.finditer(folded, start, end):
        out += [text[at : m.start()], "【", text[m.start() : m.end()], "】"]
        at = m.end()
    out.append(text[at:end])
    body = re.sub(r"\s+", " ", "".join(out)).strip()
    return ("…" if start > 0 else "") + body + ("…" if end < len(text) else "")


# CNKI's document type names (site-rules.md §2.1, and the other resource types the site lists) and
# the English words a client may use for them.
DOC_TYPES = (*(t.value for t in DocType if t is not DocType.OTHER), "学术辑刊")
# 期刊 includes the grid's 特色期刊 rows (CJFN): their detail page says 期刊 (parse/detail.py), so a
# paper's type label depends on which page was read last (saved page kns8s-grid/pluginsx_search_result_4rows.html).
# 学位论文 (some lists' label, and a word for both levels) is every thesis.
_INCLUDES = {"期刊": ("特色期刊",), THESES: (DOCTORAL, MASTER)}
# the kinds as people write them (and as a question's wish is read, query/written.py), in Chinese and English
DOC_TYPE_ALIASES = KIND_ALIASES


def _english_type(name: str) -> str:
    """CNKI's name for an English document type name, singular or plural (`journal articles`,
    `theses`, `PhD dissertations`, `Conference Papers`); other names as written."""
    key = name.casefold()
    if key in DOC_TYPE_ALIASES:
        return DOC_TYPE_ALIASES[key]
    def singular(word: str) -> str:
        if word == "theses":
            return "thesis"
        plural = len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "'s"))
        return word[:-1] if plural else word

    return DOC_TYPE_ALIASES.get(" ".join(singular(w) for w in key.split()), name)


def document_types(store: Store, wanted: list[str]) -> tuple[str, ...]:
    """The filter's document types as CNKI names them (English aliases mapped); a name neither
    CNKI's nor held by any indexed paper is INVALID_ARGUMENT listing the names to use: a filter
    that can match nothing would only answer "no paper"."""
    out: list[str] = []
    stored: set[str] | None = None
    for raw in wanted:
        name = " ".join(raw.split())
        if not name:
            continue
        name = _english_type(name)
        if name not in DOC_TYPES and name not in _INCLUDES:
            stored = store.library_doc_types() if stored is None else stored
            if name not in stored:
                names = list(dict.fromkeys([*DOC_TYPES, *_INCLUDES, *sorted(stored)]))
                raise InvalidInput(
                    f"未知的文献类型：{raw}；可用：{'、'.join(names)}", document_type=raw, allowed=names
                )
        out += [name, *_INCLUDES.get(name, ())]
    return tuple(dict.fromkeys(out))


# The names `source_tiers` suggests when one finds nothing (any alias works too: rank.TIER_ALIASES).
TIER_SUGGESTIONS = ("CSSCI", "CSSCI来源期刊", "CSSCI扩展版", "北大核心", "CSCD", "CSCD核心库", "CSCD扩展版", "SCI", "SSCI", "EI", "AMI", "核心")


def source_tiers(store: Store, wanted: list[str]) -> tuple[str, ...]:
    """The filter's tier names; a name that asks for no tier CNKI lists (`rank.KNOWN_TIERS`,
    aliases read as their list: 南大核心, 中文核心期刊, SCIE …) nor one a stored journal page
    lists is INVALID_ARGUMENT naming the tiers to use, as an unknown document type is."""
    out: list[str] = []
    stored: set[str] | None = None
    for raw in wanted:
        name = raw.strip()
        if not name:
            continue
        if not any(tier_matches(name, t) for t in KNOWN_TIERS):
            stored = store.stored_tiers() if stored is None else stored
            if not any(tier_matches(name, t) for t in stored):
                raise InvalidInput(
                    f"未知的来源级别：{raw}；可用：{'、'.join(TIER_SUGGESTIONS)}（或期刊页所列的其他收录名）",
                    source_tier=raw,
                    allowed=list(TIER_SUGGESTIONS),
                )
        out.append(name)
    return tuple(dict.fromkeys(out))


@dataclass(frozen=True, slots=True)
class _Works:
    """Among the papers matching the query and filters in some sources: each online-first record
    whose work's final record (`works.final_of`) matches too -> that final record's ref, and the
    papers read to tell."""

    final: dict[str, str]
    papers: dict[str, Paper]

    def hidden(self, ref: str) -> list[Paper]:
        """The online-first records the work listed by `ref` leaves out."""
        return [self.papers[first] for first, final in self.final.items() if final == ref]


def _works(store: Store, papers: list[Paper], query: LibraryQuery, filters: LibraryFilters) -> _Works:
    """The one-work records of `papers` (a stretch of hits): CNKI keeps a work's online-first
    record and its final record in the issue, in one source, under titles spelt alike or not
    (`works.work_title_key`), and the store keeps both. Looked up among the matches of the same
    query and filters in the sources of the online-first records among `papers` and their
    namesakes, so whether a record is left out does not depend on the page it ranks on; with no
    online-first record there, no index pass at all."""
    namesakes = store.title_namesakes([p.record_ref for p in papers])
    sources = tuple(
        dict.fromkeys(
            key for p in [*papers, *namesakes.values()] if listed_online_first(p.native) and (key := source_key(p.source))
        )
    )
    keys = {key for p in papers if (key := work_title_key(p.title))}
    if not sources or not keys:
        return _Works({}, {})
    only = dataclasses.replace(filters, source_keys=sources)
    rows = store.library_titles(query.required, only, excluded=query.excluded)
    read = store.papers_by_refs(ref for ref, title in rows if work_title_key(title) in keys)
    groups: dict[str, dict[str, Paper]] = {}
    for paper in read.values():
        groups.setdefault(work_title_key(paper.title), {})[paper.record_ref] = paper
    final: dict[str, str] = {}
    for group in groups.values():
        for paper in group.values():
            if len(group) < 2 or not listed_online_first(paper.native):
                continue
            kin = [p for p in group.values() if p.record_ref != paper.record_ref and same_work(paper, p)]
            found = final_of([paper, *kin]) if kin else None
            if found is not None:
                final[paper.record_ref] = found.record_ref
    return _Works(final, {p.record_ref: p for p in read.values()})


def _result(
    paper: Paper, score: float, hidden: list[Paper], texts: dict[str, dict[str, str]], finder: _Finder, tiers: list[str]
) -> LibraryResult:
    """A work's result: `paper`, its listed record, with the full texts, matched fields and
    snippet of its `hidden` online-first records too (a body read under the online-first record
    is the work's: not to be read or downloaded again)."""
    records = [paper, *hidden]
    every = [_fields(r, texts.get(r.record_ref, {})) for r in records]
    found: dict[MatchedField, str] = {}
    for fields in every:
        for name, value in fields.items():
            if name not in found and value and finder.hits(value):
                found[name] = value
    text = next((found[n] for n in _SNIPPET_ORDER if n in found), paper.title)
    kinds = {kind for r in records for kind in texts.get(r.record_ref, {}) if kind in ("html", "pdf")}
    return LibraryResult(
        record_ref=paper.record_ref,
        title=paper.title,
        authors=paper.author_names(),
        year=paper.year,
        source=paper.source,
        document_type=paper.doc_type,
        url=paper.public_url,
        tiers=tiers,
        score=float(f"{-score:.4g}"),  # significant digits: see `score`
        matched_fields=[name for name in every[0] if name in found],
        snippet=_snippet(text, finder) or text[: 2 * SNIPPET_CONTEXT],
        fulltext=sorted(kinds),  # type: ignore[arg-type]
    )


def search_library(store: Store, inp: LibraryInput, data_dir: Path, clock: Clock) -> LibraryPage:
    """One page of stored papers matching every term of `inp.query`, one result per work."""
    # 0 is no bound, as search and structured_search read it (year_to=0 found nothing)
    year_from, year_to = inp.year_from or None, inp.year_to or None
    if year_from is not None and year_to is not None and year_from > year_to:
        raise InvalidInput("year_from 不能大于 year_to", year_from=year_from, year_to=year_to)
    query = parse_library_query(inp.query)
    # before the PDFs (seconds each) and the document types (read from the index being rebuilt)
    store.check_index_built()
    pdfs_pending = index_downloaded_pdfs(store, data_dir, clock)
    filters = LibraryFilters(
        year_from=year_from,
        year_to=year_to,
        document_types=document_types(store, inp.document_types),
        source_tiers=source_tiers(store, inp.source_tiers),
        search_id=inp.search_id,
        search_scope=inp.scope,
    )
    finder = _Finder.of(query.terms)
    results: list[LibraryResult] = []
    # Offsets count hits (records); an online-first record left out is passed over, so a page is
    # full while hits remain and `next_offset` is the hit after the page's last listed result.
    position, next_offset, left_out = inp.offset, None, 0
    counted: tuple[int, bool] | None = None  # the first count: (total, total_exact)
    while next_offset is None:
        want = inp.limit - len(results) + 1  # one more: whether a listed result follows the page
        page = store.library_search(query.required, filters, position, want, excluded=query.excluded)
        counted = counted or (page.total, page.total_exact)
        papers = store.papers_by_refs(h.record_ref for h in page.hits)
        works = _works(store, [papers[h.record_ref] for h in page.hits if h.record_ref in papers], query, filters)
        texts = store.fulltexts([*papers, *works.papers])
        tiers = store.journal_tiers(p.source for p in papers.values())
        for i, hit in enumerate(page.hits):
            paper = papers.get(hit.record_ref)
            if paper is None:  # pragma: no cover - the index row commits with its paper
                continue
            if paper.record_ref in works.final:  # passed over: the page reads on
                left_out += 1
                continue
            if len(results) == inp.limit:
                next_offset = position + i
                break
            hidden = works.hidden(paper.record_ref)
            results.append(_result(paper, hit.score, hidden, texts, finder, tiers.get(paper.source or "", [])))
        position += len(page.hits)
        if len(page.hits) < want:
            break
    total, total_exact = counted or (0, True)
    docs, kept = store.library_size()
    return LibraryPage(
        query=inp.query,
        total=total,
        total_exact=total_exact,
        offset=inp.offset,
        next_offset=next_offset,
        results=results,
        indexed_papers=docs,
        indexed_fulltexts=kept,
        pdfs_pending=pdfs_pending,
        message=f"{left_out} 条网络首发记录与所列正式版是同一文献，未单列（total 按记录计）" if left_out else None,
    )
