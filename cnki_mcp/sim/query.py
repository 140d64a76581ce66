"""QueryJson as CNKI's grid receives it: parse, evaluate against the corpus, rank.

Semantics implemented (documented in docs/simulator.md):

* `QNode.QGroup` is a list of groups; every group is `{Key, Title, Logic, Items[], ChildItems[]}`
  and ChildItems nest further groups. Keys are read case-insensitively.
* Within a level the elements are Items (in order) followed by ChildItems (in order). They are
  combined strictly left to right, no precedence: `acc = first; acc = acc <logic> next ...` where
  the NEXT element's `Logic` says how it joins what precedes it: 0 AND, 1 OR, 2 AND NOT. The first
  element's Logic is ignored. Items with an empty Value and groups with no effective elements are
  dropped before combining (blank form rows do not constrain anything).
* The top-level QGroup list is combined the same way. The `ControlGroup` holds filters (PT year
  range, Operator 7, `Value`/`Value2` dates, either may be empty).
* A value's in-field operators (`+` OR, `*` AND, `-` AND NOT, parentheses, quotes, the spacing
  rules) are read by `value.py`; ambiguous values match nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from typing import Any

from cnki_mcp.sim.corpus import Corpus, SimRecord
from cnki_mcp.sim.expert import (
    Clause,
    ExpertError,
    ExpertErrorKind,
    Join,
    Match,
    canonical_value,
    parse_expert,
)
from cnki_mcp.sim.value import (
    BoolOp,
    Logic,
    Term,
    Unclear,
    ValueExpr,
    eval_value,
    parse_value,
    positive_terms,
)

__all__ = [
    "BoolOp",
    "Condition",
    "Group",
    "Logic",
    "Query",
    "QueryError",
    "QueryRefused",
    "Sort",
    "Term",
    "Unclear",
    "ValueExpr",
    "combine",
    "matches",
    "parse_query_json",
    "parse_value",
    "positive_terms",
    "search",
]


class QueryError(ValueError):
    """The posted QueryJson cannot be understood (the grid answers with its error fragment)."""


class QueryRefused(QueryError):
    """A query the site's risk control answers like an empty result (expert `YE BETWEEN`)."""


class Field(StrEnum):
    SU = "SU"
    TI = "TI"
    KY = "KY"
    AB = "AB"
    AU = "AU"
    FI = "FI"
    RP = "RP"
    AF = "AF"
    LY = "LY"
    DOI = "DOI"
    FU = "FU"
    FT = "FT"
    RF = "RF"
    CLC = "CLC"
    ST = "ST"
    TKA = "TKA"
    PT = "PT"
    YE = "YE"  # expert search only: year, compared as a number
    CF = "CF"  # expert search only: times cited
    SN = "SN"  # expert search: ISSN / CN / ISBN, which records here do not carry (match nothing)
    CN = "CN"
    IB = "IB"


class Operator(StrEnum):
    TOPRANK = "TOPRANK"
    FUZZY = "FUZZY"
    DEFAULT = "DEFAULT"
    RANGE = "7"  # PT date range in the ControlGroup (sent as the number 7)
    GT = "GT"  # comparisons of expert search (YE, CF)
    GE = "GE"
    LT = "LT"
    LE = "LE"


class Sort(StrEnum):
    FFD = "FFD"  # relevance
    PT = "PT"  # publication date
    CF = "CF"  # cited
    DFR = "DFR"  # downloaded


# A value is parsed once per process: the trees are immutable (frozen dataclasses), so one parse
# serves every record and every request that sends the same value (docs/simulator.md "Scaling").
_parsed = lru_cache(maxsize=8192)(parse_value)

_LOGIC_NAMES = {"AND": Logic.AND, "OR": Logic.OR, "NOT": Logic.NOT}
# Old form pickers sent match symbols instead of operator names.
_OPERATOR_ALIASES = {"=": Operator.DEFAULT, "%": Operator.FUZZY, "%=": Operator.TOPRANK}


# value expressions live in `value.py`: ValueExpr, Term, BoolOp, Unclear, parse_value, positive_terms


# ---------------------------------------------------------------- QueryJson model


@dataclass(frozen=True, slots=True)
class Condition:
    field: Field
    operator: Operator
    value: str
    value2: str = ""
    logic: Logic = Logic.AND
    extend: bool = False  # bilingual expansion (the AdvSearch EN checkbox)

    @property
    def expr(self) -> ValueExpr:
        return _parsed(self.value)


@dataclass(frozen=True, slots=True)
class Group:
    key: str
    logic: Logic = Logic.AND
    elements: tuple[Condition | Group, ...] = ()  # Items then ChildItems, empties dropped


@dataclass(frozen=True, slots=True)
class Query:
    groups: tuple[Group, ...]
    year_from: int | None = None
    year_to: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False)

    def fingerprint(self) -> str:
        return hashlib.sha256(repr(self.groups).encode("utf-8")).hexdigest()[:24]

    def conditions(self) -> list[Condition]:
        out: list[Condition] = []

        def walk(el: Condition | Group) -> None:
            if isinstance(el, Condition):
                out.append(el)
            else:
                for child in el.elements:
                    walk(child)

        for g in self.groups:
            walk(g)
        return out

    def log_params(self) -> dict[str, Any]:
        """What the request log records of a grid query: its conditions and, if any, its years."""
        years = {"years": [self.year_from, self.year_to]} if self.year_from or self.year_to else {}
        return {"query": self.summary(), **years}

    def summary(self) -> list[dict[str, str]]:
        """Field/operator/value of every condition, for the request log."""
        return [
            {"field": c.field.value, "operator": c.operator.value, "value": c.value, "logic": c.logic.name}
            | ({"value2": c.value2} if c.value2 else {})
            for c in self.conditions()
        ]


def _get(obj: dict[str, Any], key: str, default: Any = None) -> Any:
    if key in obj:
        return obj[key]
    low = key.lower()
    for k, v in obj.items():
        if isinstance(k, str) and k.lower() == low:
            return v
    return default


def _logic(raw: Any) -> Logic:
    if raw is None or raw == "":
        return Logic.AND
    if isinstance(raw, str) and raw.strip().upper() in _LOGIC_NAMES:
        return _LOGIC_NAMES[raw.strip().upper()]
    try:
        return Logic(int(raw))
    except (TypeError, ValueError) as exc:
        raise QueryError(f"bad Logic {raw!r}") from exc


def _condition(item: Any) -> Condition | None:
    if not isinstance(item, dict):
        raise QueryError("item is not an object")
    raw_field = str(_get(item, "Field", "") or "").strip().upper()
    try:
        fld = Field(raw_field)
    except ValueError as exc:
        raise QueryError(f"unknown field {raw_field!r}") from exc
    raw_op = str(_get(item, "Operator", "") or "").strip()
    op: Operator
    if raw_op.upper() in Operator.__members__:
        op = Operator[raw_op.upper()]
    elif raw_op in _OPERATOR_ALIASES:
        op = _OPERATOR_ALIASES[raw_op]
    elif raw_op == "7":
        op = Operator.RANGE
    else:
        raise QueryError(f"unknown operator {raw_op!r}")
    if (fld == Field.PT) != (op == Operator.RANGE):
        raise QueryError(f"operator {raw_op!r} does not fit field {raw_field}")
    value = str(_get(item, "Value", "") or "")
    value2 = str(_get(item, "Value2", "") or "")
    if not value.strip() and not value2.strip():
        return None
    if len(value) > 120:  # CNKI's per-row limit
        raise QueryError("value longer than 120 characters")
    extend = bool(_get(item, "Extend", 0))
    return Condition(fld, op, value.strip(), value2.strip(), _logic(_get(item, "Logic")), extend)


_EXPERT_FIELDS = {"JN": Field.LY, "CO": Field.ST}
_EXPERT_OPS = {
    Match.EXACT: Operator.DEFAULT, Match.FUZZY: Operator.FUZZY, Match.RELEVANT: Operator.TOPRANK,
    Match.GT: Operator.GT, Match.GE: Operator.GE, Match.LT: Operator.LT, Match.LE: Operator.LE,
}  # fmt: skip


def _expert_element(node: Clause | Join, logic: Logic) -> Condition | Group:
    if isinstance(node, Clause):
        fld = _EXPERT_FIELDS.get(node.code) or Field(node.code)
        value = node.value.text if isinstance(node.value, Term) and fld in (Field.YE, Field.CF) else None
        return Condition(fld, _EXPERT_OPS[node.match], value or canonical_value(node.value), logic=logic)
    kids = tuple(_expert_element(n, lg) for n, lg in zip(node.items, node.logics, strict=True))
    return Group("Expert", logic, kids)


def _expert(item: dict[str, Any]) -> Condition | Group | None:
    """An `EXPERT` item: its Value is a whole 专业检索 expression (expert.py)."""
    text = str(_get(item, "Value", "") or "")
    if not text.strip():
        return None
    try:
        tree = parse_expert(text)
    except ExpertError as exc:
        if exc.kind == ExpertErrorKind.BETWEEN:
            raise QueryRefused(str(exc)) from exc
        raise QueryError(f"expert expression: {exc}") from exc
    return _expert_element(tree, _logic(_get(item, "Logic")))


def _group(obj: Any, depth: int = 0) -> Group | None:
    if not isinstance(obj, dict):
        raise QueryError("group is not an object")
    if depth > 16:
        raise QueryError("groups nested too deep")
    items = _get(obj, "Items", []) or []
    children = _get(obj, "ChildItems", []) or []
    if not isinstance(items, list) or not isinstance(children, list):
        raise QueryError("Items/ChildItems must be lists")
    elements: list[Condition | Group] = []
    for it in items:
        is_expert = isinstance(it, dict) and str(_get(it, "Field", "") or "").strip().upper() == "EXPERT"
        c = _expert(it) if is_expert else _condition(it)
        if c is not None:
            elements.append(c)
    for ch in children:
        g = _group(ch, depth + 1)
        if g is not None:
            elements.append(g)
    if not elements:
        return None
    return Group(str(_get(obj, "Key", "") or ""), _logic(_get(obj, "Logic")), tuple(elements))


def _year(value: str) -> int | None:
    m = re.match(r"\s*(\d{4})", value)
    return int(m.group(1)) if m else None


def parse_query_json(text: str | dict[str, Any]) -> Query:
    """The form's QueryJson -> Query. Raises QueryError when it is malformed or has no condition."""
    if isinstance(text, str):
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise QueryError(f"QueryJson is not JSON: {exc.msg}") from exc
    else:
        obj = text
    if not isinstance(obj, dict):
        raise QueryError("QueryJson is not an object")
    qnode = _get(obj, "QNode")
    if not isinstance(qnode, dict):
        raise QueryError("QueryJson has no QNode")
    qgroups = _get(qnode, "QGroup")
    if not isinstance(qgroups, list):
        raise QueryError("QNode has no QGroup list")
    groups = tuple(g for g in (_group(q) for q in qgroups) if g is not None)
    query = Query(groups, raw=obj)
    conds = query.conditions()
    if not any(c.field != Field.PT for c in conds):
        raise QueryError("no search condition")
    years = [c for c in conds if c.field == Field.PT]
    if years:
        return Query(groups, _year(years[-1].value), _year(years[-1].value2), raw=obj)
    return query


# ---------------------------------------------------------------- matching


def _fold(s: str) -> str:
    return s.casefold()


def _classes(r: SimRecord) -> list[str]:
    return [c.strip() for c in re.split(r"[;；,，\s]+", r.classification or "") if c.strip()]


def _first_author(r: SimRecord) -> list[str]:
    return [r.authors[0].name] if r.authors else []


def _corresponding(r: SimRecord) -> list[str]:
    ca = r.extra.get("corresponding_author")
    if isinstance(ca, str) and ca:
        return [ca]
    if isinstance(ca, list) and ca:
        return [str(x) for x in ca]
    return _first_author(r)


def _sources(r: SimRecord, corpus: Corpus | None) -> list[str]:
    out = [r.source] if r.source else []
    if r.source and corpus is not None:
        j = corpus.journal_by_name.get(r.source)
        if j is not None:
            out.extend(j.former_titles)
            if j.translated_title:
                out.append(j.translated_title)
    return out


def _english(r: SimRecord) -> list[str]:
    out = [r.title_en or ""]
    for key in ("keywords_en", "abstract_en"):
        v = r.extra.get(key)
        if isinstance(v, list):
            out.extend(str(x) for x in v)
        elif isinstance(v, str):
            out.append(v)
    return [x for x in out if x]


def field_texts(r: SimRecord, fld: Field, corpus: Corpus | None = None, extend: bool = False) -> list[str]:
    """The texts of a record a field searches; list fields keep one entry per element."""
    tka = [r.title, *r.keywords, r.abstract or ""]
    match fld:
        case Field.SU:
            base = [*tka, r.classification or ""]
        case Field.TKA:
            base = tka
        case Field.TI:
            base = [r.title]
        case Field.KY:
            base = list(r.keywords)
        case Field.AB:
            base = [r.abstract or ""]
        case Field.AU:
            base = [a.name for a in r.authors]
        case Field.FI:
            base = _first_author(r)
        case Field.RP:
            base = _corresponding(r)
        case Field.AF:
            base = [i for a in r.authors for i in a.institutions]
            extra_af = r.extra.get("institutions")
            if isinstance(extra_af, list):
                base += [str(x) for x in extra_af]
        case Field.LY:
            base = _sources(r, corpus)
        case Field.DOI:
            base = [r.doi] if r.doi else []
        case Field.FU:
            base = list(r.funds)
        case Field.FT:
            base = [r.title, r.abstract or ""] + [f"{s.heading}\n{s.text}" for s in r.fulltext]
        case Field.RF:
            base = _reference_titles(r, corpus)
        case Field.CLC:
            base = _classes(r)
        case Field.ST:
            base = [s.heading for s in r.fulltext]
        case Field.YE:
            base = [str(r.year)] if r.year else []
        case Field.CF:
            base = [str(r.cited)]
        case _:
            base = []
    if extend and fld in (Field.SU, Field.TKA, Field.TI, Field.KY, Field.AB):
        base = base + _english(r)
    return [b for b in base if b]


def _reference_titles(r: SimRecord, corpus: Corpus | None) -> list[str]:
    out: list[str] = []
    for ref in r.references:
        target = corpus.by_id.get(ref) if corpus is not None else None
        out.append(target.title if target is not None else ref)
    return out


def match_term(texts: list[str], fld: Field, op: Operator, term: str) -> bool:
    """Does one literal term match the field's texts under the operator?"""
    folded = tuple(_fold(x) for x in texts)
    return _match_folded(folded, "\n".join(folded), fld, op, term)


# Fields whose entries are matched one by one (an author, a keyword, a source), not as one text.
_PER_ENTRY = frozenset((Field.AU, Field.FI, Field.RP, Field.KY, Field.LY, Field.DOI, Field.AF, Field.FU))
_EXACT_ENTRY = frozenset((Field.KY, Field.AU, Field.FI, Field.RP, Field.LY, Field.DOI))


def _match_folded(folded: tuple[str, ...], joined: str, fld: Field, op: Operator, term: str) -> bool:
    """`match_term` on texts already case-folded (`joined` = them joined by newlines)."""
    if not term.strip():
        return False
    t = _fold(term.strip())
    if fld == Field.CLC:  # classification codes always match by prefix
        return any(x.startswith(t) for x in folded)
    if op in (Operator.TOPRANK, Operator.FUZZY):
        words = t.split()
        if fld in _PER_ENTRY:
            return any(all(w in x for w in words) for x in folded)
        return all(w in joined for w in words)
    # DEFAULT (exact)
    if fld in _EXACT_ENTRY:
        return any(x.strip() == t for x in folded)
    return any(t in x for x in folded)


def _folded_texts(r: SimRecord, fld: Field, corpus: Corpus | None, extend: bool) -> tuple[tuple[str, ...], str]:
    """(case-folded texts, joined) of a record's field; kept per corpus, which never changes once
    loaded, so each record's fields are folded once however many queries read them."""
    key = (r.id, fld, extend)
    memo = corpus.memo.setdefault("texts", {}) if corpus is not None else None
    if memo is not None and (hit := memo.get(key)) is not None and hit[0] is r:
        return hit[1]
    folded = tuple(_fold(x) for x in field_texts(r, fld, corpus, extend))
    out = (folded, "\n".join(folded))
    if memo is not None:
        memo[key] = (r, out)
    return out


def _record_date(r: SimRecord) -> str:
    """The record's day as yyyy-mm-dd: a date given as a year or a month (`2021`, `2021-06`, a
    thesis listed by its year) is its first day, so a range's lower bound in that year keeps it."""
    if r.date:
        day = r.date[:10]
        return day + "-01-01"[len(day) - 4 :] if len(day) in (4, 7) else day
    return f"{r.year:04d}-01-01" if r.year else ""


def eval_condition(c: Condition, r: SimRecord, corpus: Corpus | None = None) -> bool:
    if c.field == Field.PT:
        d = _record_date(r)
        if not d:
            return False
        lo = c.value[:10] if c.value else ""
        hi = c.value2[:10] if c.value2 else ""
        if lo and d < lo:
            return False
        return not (hi and d[: len(hi)] > hi)
    if c.field in (Field.YE, Field.CF):
        return _compare(field_texts(r, c.field, corpus), c.operator, c.value)
    folded, joined = _folded_texts(r, c.field, corpus, c.extend)
    return eval_value(c.expr, lambda term: _match_folded(folded, joined, c.field, c.operator, term))


def _compare(texts: list[str], op: Operator, value: str) -> bool:
    """YE/CF of expert search: a number compared with `=`, `>`, `>=`, `<`, `<=`."""
    if not texts or not value.strip().isdigit():
        return False
    have, want = int(texts[0]), int(value)
    return {
        Operator.GT: have > want, Operator.GE: have >= want, Operator.LT: have < want,
        Operator.LE: have <= want,
    }.get(op, have == want)  # fmt: skip


def combine(elements: Iterable[tuple[Logic, Callable[[], bool]]]) -> bool:
    """Left-to-right combination; the first element's logic is ignored."""
    acc: bool | None = None
    for logic, thunk in elements:
        if acc is None:
            acc = thunk()
        elif logic == Logic.AND:
            acc = acc and thunk()
        elif logic == Logic.OR:
            acc = acc or thunk()
        else:
            acc = acc and not thunk()
    return True if acc is None else acc


def eval_element(el: Condition | Group, r: SimRecord, corpus: Corpus | None = None) -> bool:
    if isinstance(el, Condition):
        return eval_condition(el, r, corpus)
    return combine((e.logic, _thunk(e, r, corpus)) for e in el.elements)


def _thunk(el: Condition | Group, r: SimRecord, corpus: Corpus | None) -> Callable[[], bool]:
    return lambda: eval_element(el, r, corpus)


def matches(q: Query, r: SimRecord, corpus: Corpus | None = None) -> bool:
    return combine((g.logic, _thunk(g, r, corpus)) for g in q.groups)


# ---------------------------------------------------------------- ranking


def relevance(q: Query, r: SimRecord, terms: list[str] | None = None) -> int:
    """Deterministic relevance: hits of positive terms in title (x6) > keywords (x3) > abstract (x1).
    `terms` = `highlight_terms(q)` when the caller already has them (one sort reads them once)."""
    score = 0
    title = _fold(r.title)
    kws = [_fold(k) for k in r.keywords]
    abstract = _fold(r.abstract or "")
    for term in highlight_terms(q) if terms is None else terms:
        t = _fold(term)
        score += 6 * title.count(t) + 3 * sum(k.count(t) for k in kws) + abstract.count(t)
    return score


def highlight_terms(q: Query) -> list[str]:
    """Positive terms of title/subject-like conditions (what CNKI highlights in red)."""
    out: list[str] = []
    for c in q.conditions():
        if c.field in (Field.SU, Field.TKA, Field.TI, Field.KY, Field.AB, Field.FT) and c.logic != Logic.NOT:
            for term in positive_terms(c.expr):
                out.extend(term.split() if c.operator != Operator.DEFAULT else [term])
    return [t for t in dict.fromkeys(out) if t]


def sort_records(records: list[SimRecord], q: Query, sort: Sort, descending: bool = True) -> list[SimRecord]:
    keyf: Callable[[SimRecord], Any]
    match sort:
        case Sort.PT:
            keyf = _record_date
        case Sort.CF:
            keyf = lambda r: r.cited  # noqa: E731
        case Sort.DFR:
            keyf = lambda r: r.downloads  # noqa: E731
        case _:
            terms = highlight_terms(q)
            keyf = lambda r: relevance(q, r, terms)  # noqa: E731
    by_id = sorted(records, key=lambda r: r.id)
    # Stable: ties keep id order whichever direction the primary key goes.
    return sorted(by_id, key=keyf, reverse=descending)


# Answers kept per corpus: a search is a pure function of the corpus, the query and the order,
# and a result list is paged many times (one grid request per page).
_SEARCH_CACHE_SIZE = 64
_SEARCH_LOCK = threading.Lock()  # the server answers requests on several threads


def search(corpus: Corpus, q: Query, sort: Sort = Sort.FFD, descending: bool = True) -> list[SimRecord]:
    """Every matching record in the site's order. The same query (by `fingerprint`, which covers
    every condition and the year range) in the same order is evaluated once per corpus."""
    key = (q.fingerprint(), sort, descending, id(corpus.records), len(corpus.records))
    with _SEARCH_LOCK:
        cache: OrderedDict[tuple[Any, ...], tuple[SimRecord, ...]] = corpus.memo.setdefault("search", OrderedDict())
        hit = cache.get(key)
        if hit is not None:
            cache.move_to_end(key)
            return list(hit)
    hits = [r for r in corpus.records if matches(q, r, corpus)]
    answer = tuple(sort_records(hits, q, sort, descending))
    with _SEARCH_LOCK:
        cache[key] = answer
        while len(cache) > _SEARCH_CACHE_SIZE:
            cache.popitem(last=False)
    return list(answer)
