"""The kcms2 article page's citation JSON API (`/restapi/citation-api/v1/…`), from the corpus.

What the 2026 article page calls and what it receives is in docs/citation-api.md; this module
serves the same shapes:

- `literature/{references,citations,co-references,co-citations,second-references,second-citations}`
  `?v=<detail token>&type=<CJFDREF…>&start=<1-based item>&size=<n>`: one database's list, at most
  `PAGE_SIZE` items per answer (the page always asks for 10);
- `literature/quotations/metrics?v=`: the six counts as `[{name, value}]`;
- `literature/{starter,source,branch,boost}/domains?v=`: keyword weights;
- `usercenter-api/v1/recommend/similar/articles?articleid=<filename>&size=`: similar papers.

Every call needs the guest session cookie (like the grid: 403 + `{"code":-403,"message":URL}`
without it) and a live detail `v` token (an expired or unknown one answers `code` 1, no data)."""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any

from cnki_mcp.sim.corpus import Corpus, SimRecord
from cnki_mcp.sim.links import Links

if TYPE_CHECKING:
    from cnki_mcp.sim.routes import App, Request, Response

CITATION_PREFIX = "/restapi/citation-api/v1/literature/"
SIMILAR_PATH = "/restapi/usercenter-api/v1/recommend/similar/articles"
LIST_KINDS = ("references", "citations", "co-references", "co-citations", "second-references", "second-citations")
DOMAIN_KINDS = ("starter", "source", "branch", "boost")
PATHS: tuple[str, ...] = (
    *(CITATION_PREFIX + k for k in LIST_KINDS),
    CITATION_PREFIX + "quotations/metrics",
    *(f"{CITATION_PREFIX}{k}/domains" for k in DOMAIN_KINDS),
    SIMILAR_PATH,
)
PAGE_SIZE = 10  # the page always sends size=10; larger sizes are cut to this (docs/citation-api.md)
JSON_TYPE = "application/json; charset=utf-8"

# List type code -> (resource type the answer names, corpus document types it holds).
TYPE_CODES: dict[str, tuple[str, tuple[str, ...]]] = {
    "CJFDREF": ("JOURNAL", ("期刊",)),
    "CDFDREF": ("DISSERTATION-D", ("博士",)),
    "CMFDREF": ("DISSERTATION-M", ("硕士",)),
    "CPFDREF": ("CONFERENCE-C", ("会议",)),
    "IPFDREF": ("CONFERENCE-I", ()),
    "CYFDREF": ("YEARBOOK", ("年鉴",)),
    "CCNDREF": ("NEWSPAPER", ("报纸",)),
    "WWJDREF": ("JOURNAL-W", ("外文期刊",)),
    "CBBDREF": ("BOOK", ("图书",)),
    "SCPDREF": ("PATENT", ()),
    "SCSDREF": ("STANDARD", ()),
    "NLNKREF": ("CRLDENG", ()),  # 中外文题录: references CNKI could not link (free text)
}
_CODE_OF_TYPE = {t: code for code, (_, types) in TYPE_CODES.items() for t in types}
# Product code and source type of each corpus document type, as the items carry them.
_PRODUCT = {"期刊": "CJFD", "外文期刊": "WWJD", "博士": "CDFD", "硕士": "CMFD", "会议": "CPFD",
            "报纸": "CCND", "年鉴": "CYFD", "图书": "CBBD"}  # fmt: skip
_SOURCE_TYPE = {"期刊": "JOURNALS", "外文期刊": "JOURNALS", "会议": "PROCEEDINGS", "报纸": "NEWSPAPERS",
                "年鉴": "ALMANACS", "博士": "DISSERTATIONS", "硕士": "DISSERTATIONS", "图书": "BOOKS"}  # fmt: skip


def type_code(record: SimRecord) -> str:
    return _CODE_OF_TYPE.get(record.type, "CJFDREF")


# --- the lists (pure functions of the corpus) -------------------------------------------------


def _ordered(corpus: Corpus, ids: list[str], exclude: str) -> list[SimRecord]:
    """Unique corpus records, newest first, then by id (a stable order across pages)."""
    seen = dict.fromkeys(i for i in ids if i != exclude and i in corpus.by_id)
    recs = [corpus.by_id[i] for i in seen]
    return sorted(recs, key=lambda r: (-(r.year or 0), r.id))


def related(corpus: Corpus, record: SimRecord, kind: str) -> list[SimRecord | str]:
    """The records (or, for unresolved references, the printed strings) of one list kind."""
    if kind == "references":
        return [corpus.by_id.get(r) or r for r in record.references]
    if kind == "citations":
        return list(_ordered(corpus, corpus.citing_ids.get(record.id, []), record.id))
    refs = [r for r in record.references if r in corpus.by_id]
    if kind == "second-references":
        return list(_ordered(corpus, [x for r in refs for x in corpus.by_id[r].references], record.id))
    if kind == "second-citations":
        first = corpus.citing_ids.get(record.id, [])
        return list(_ordered(corpus, [x for c in first for x in corpus.citing_ids.get(c, [])], record.id))
    if kind == "co-references":  # papers sharing at least one reference with this one
        return list(_ordered(corpus, [c for r in refs for c in corpus.citing_ids.get(r, [])], record.id))
    if kind == "co-citations":  # papers cited together with this one by some paper
        citing = corpus.citing_ids.get(record.id, [])
        return list(_ordered(corpus, [x for c in citing for x in corpus.by_id[c].references], record.id))
    raise ValueError(kind)


def typed(items: list[SimRecord | str], code: str) -> list[SimRecord | str]:
    """The part of a list one database (type code) holds; free-text references are 中外文题录."""
    if code == "NLNKREF":
        return [i for i in items if isinstance(i, str)]
    return [i for i in items if isinstance(i, SimRecord) and type_code(i) == code]


def item_json(rec: SimRecord, links: Links) -> dict[str, Any]:
    """One list item as the API gives it: metadata pairs, authors, source, relations."""
    detail = links.detail(rec.id)
    names = [a.name for a in rec.authors]
    product = _PRODUCT.get(rec.type, "CJFD")
    meta = [
        ("TI", rec.title),
        ("AU", "".join(f"{n};" for n in names)),
        ("LY", rec.source or rec.publisher or rec.conference or ""),
        ("YE", str(rec.year or "")),
        ("PD", rec.date or ""),
        ("FN", rec.native_filename),
        ("product", product),
        ("TB", rec.dbname),
        ("TN", rec.dbname),
        ("FLAG", ""),
        ("DFR", str(rec.downloads)),
        ("CF", str(rec.cited)),
        ("ID", rec.native_filename),
    ]
    source: dict[str, Any] = {
        "title": rec.source or rec.publisher or rec.conference or "",
        "year": str(rec.year or ""),
        "issue": rec.issue or "",
        "type": _SOURCE_TYPE.get(rec.type, "JOURNALS"),
        "relations": [],
    }
    if rec.type in ("期刊", "外文期刊") and rec.source:
        source["relations"] = [{"scope": "PUBLICATION", "url": links.journal(rec.source)}]
    return {
        "metadata": [{"name": n, "value": v} for n, v in meta],
        "authors": [{"name": n, "title": n} for n in names],
        "source": source,
        "relations": [{"scope": "ABSTRACT", "url": detail}, {"scope": "ZKABSTRACT", "url": detail}],
    }


def free_item_json(text: str) -> dict[str, Any]:
    """A reference CNKI could not link: its printed text as the title, no relations."""
    return {"metadata": [{"name": "TI", "value": text}, {"name": "RBF", "value": "N"}],
            "authors": [], "relations": []}  # fmt: skip


def list_page(
    corpus: Corpus, record: SimRecord, links: Links, kind: str, code: str, start: int, size: int
) -> dict[str, Any]:
    """The `data` object of one list answer: `total`, `start`, `size` (items in this answer),
    `type` (resource type) and `data` (the items)."""
    items = typed(related(corpus, record, kind), code)
    chunk = items[start - 1 : start - 1 + size]
    return {
        "total": len(items),
        "start": start,
        "size": len(chunk),
        "type": TYPE_CODES[code][0],
        "data": [free_item_json(i) if isinstance(i, str) else item_json(i, links) for i in chunk],
    }


def metrics(corpus: Corpus, record: SimRecord) -> list[dict[str, str]]:
    return [{"name": k, "value": str(len(related(corpus, record, k)))} for k in LIST_KINDS]


def domains(corpus: Corpus, record: SimRecord, links: Links, kind: str) -> list[dict[str, Any]]:
    """Keyword weights: keywords of the papers behind each part of the citation network."""
    base = {"starter": "second-references", "source": "references", "branch": "citations",
            "boost": "second-citations"}[kind]  # fmt: skip
    counts: Counter[str] = Counter()
    for rec in related(corpus, record, base):
        if isinstance(rec, SimRecord):
            counts.update(rec.keywords)
    return [
        {"item": kw, "metrics": [{"name": "PUC", "value": str(n)}],
         "relations": [{"scope": "KEYWORD", "url": links.kns(f"/kns8s/defaultresult/index?kw={kw}")}]}
        for kw, n in counts.most_common(10)
    ]  # fmt: skip


def similar(corpus: Corpus, record: SimRecord, links: Links, size: int) -> list[dict[str, Any]]:
    """Papers sharing the most keywords with this one (ties: newest first)."""
    mine = set(record.keywords)
    scored = [(len(mine & set(r.keywords)), r) for r in corpus.records if r.id != record.id]
    ranked = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], -(s[1].year or 0), s[1].id))
    return [item_json(r, links) for _, r in ranked[:size]]


# --- the route ------------------------------------------------------------------------------


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value else default
    except ValueError:
        return default


def _json(body: object, status: int = 200, **kw: Any) -> Response:
    from cnki_mcp.sim.routes import Response

    return Response(status, json.dumps(body, ensure_ascii=False).encode("utf-8"), JSON_TYPE, **kw)


def answer(app: App, req: Request, client: str, generic: frozenset[Any]) -> Response:
    """Any citation-api / similar call: session, faults, token, then the answer."""
    q = req.query
    params: dict[str, Any] = {k: q[k] for k in ("type", "start", "size") if k in q}
    if app.session_of(req) is None:
        resp = app._challenge_json(req, "no_session")
        resp.params = params
        return resp
    resp, _rule = app._fault(req, client, generic, fragment=True)
    if resp is not None:
        resp.params = params
        return resp
    record = _record_of(app, req)
    params["id"] = record.id if record else None
    if record is None:
        return _json({"code": 1, "message": "参数错误", "data": None}, params=params)
    links = app.links
    path = req.path
    if path == SIMILAR_PATH:
        size = min(PAGE_SIZE, max(1, _int(q.get("size"), PAGE_SIZE)))
        return _json({"code": 0, "message": "", "data": similar(app.corpus, record, links, size)}, params=params)
    rest = path[len(CITATION_PREFIX) :]
    if rest == "quotations/metrics":
        return _json({"code": 0, "message": "", "data": metrics(app.corpus, record)}, params=params)
    if rest.endswith("/domains"):
        data = domains(app.corpus, record, links, rest.split("/")[0])
        # A bare list: what cnki-deepsearch's parser reads (the page's script takes either form).
        return _json({"code": 0, "message": "", "data": data}, params=params)
    code = q.get("type", "")
    if code not in TYPE_CODES:
        # No such database: an empty list (the page never sends one; evidence for others is missing).
        return _json({"code": 0, "message": "", "data": {"total": 0, "start": 1, "size": 0, "data": []}},
                     params=params)  # fmt: skip
    start = max(1, _int(q.get("start"), 1))
    size = min(PAGE_SIZE, max(1, _int(q.get("size"), PAGE_SIZE)))
    data = list_page(app.corpus, record, links, rest, code, start, size)
    params.update(total=data["total"], served=data["size"])
    return _json({"code": 0, "message": "", "data": data}, params=params)


def _record_of(app: App, req: Request) -> SimRecord | None:
    if req.path == SIMILAR_PATH:
        name = req.query.get("articleid", "").upper()
        return next((r for r in app.corpus.records if r.native_filename.upper() == name), None)
    grant = app.state.tokens.lookup("detail", req.query.get("v", ""))
    return app.corpus.by_id.get(grant.value) if grant else None

