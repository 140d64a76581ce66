"""Scoring, eligibility, ordering and selection of search candidates (site-rules.md §3.5, §3.6), plus the
detail-pool size and the feedback keywords that depend on the ranking (§3.4).

PURE: no clock, no I/O. The current year is passed in (`now_year`). The pipeline turns stored
papers into `Candidate`s; `quality` is set only when the journal lookup is `present` and made by
the current parser, exactly the condition under which the reference scores tier and impact.

`ReferenceRanker` reproduces the reference formulas constant for constant (except that AMI权威 and
AMI顶级 journals score as AMI核心 ones and the extended lists CSSCI扩展版/CSCD扩展版 below their source lists,
`tier_score`). Another ranker can be
measured against it (scripts/bench.py quality) by implementing the `Ranker` protocol."""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from cnki_mcp.identity import Paper
from cnki_mcp.works import duplicate_works

# --- tokens and matching ------------------------------------------------------------------

_LATIN = re.compile(r"[a-z0-9]+(?:[+._/\-][a-z0-9]+)*")


def is_han(ch: str) -> bool:
    """A Han ideograph (CJK unified, extensions A-F, compatibility ideographs)."""
    code = ord(ch)
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0x20000 <= code <= 0x2EBEF
        or 0xF900 <= code <= 0xFAFF
        or 0x2F800 <= code <= 0x2FA1F
        or code == 0x3007
    )


def tokens(text: str | None) -> frozenset[str]:
    """Lower-cased Latin runs (`[a-z0-9]`, joined by `+ . _ / -`) plus one bigram per pair of
    consecutive Han characters, after NFKC (CO₂ is co2, ＡＩ is ai). An isolated Han character gives
    no token."""
    low = unicodedata.normalize("NFKC", text or "").lower()
    out: set[str] = set(_LATIN.findall(low))
    previous = ""
    for ch in low:
        if is_han(ch):
            if previous:
                out.add(previous + ch)
            previous = ch
        else:
            previous = ""
    return frozenset(out)


def dice(query: frozenset[str] | set[str], document: frozenset[str] | set[str]) -> float:
    """2·|Q∩D| / (|Q|+|D|); 0 when either side is empty."""
    if not query or not document:
        return 0.0
    return 2.0 * len(query & document) / (len(query) + len(document))


def normalize(text: str | None) -> str:
    """NFKC (a formula's script digits and full-width letters as typed: CO₂ is co2), lower-case,
    whitespace collapsed (how aliases and keywords are compared)."""
    return " ".join(unicodedata.normalize("NFKC", text or "").lower().split())


def query_tokens(groups: Sequence[Sequence[str]]) -> frozenset[str]:
    """Q: the token set of every concept term joined with spaces."""
    return tokens(" ".join(term for group in groups for term in group))


def alias_parts(alias: str) -> tuple[str, ...]:
    """The words of a normalised alias, each of which must occur in a text for the alias to match:
    CNKI's subject, title and keyword searches read a term with spaces as its words, in any order
    (docs/simulator.md), so `违约金 酌减` covers 违约金…酌减 and `privacy protection in China`
    covers "privacy protection: evidence from China". An empty alias has no parts (matches nothing)."""
    return tuple(normalize(alias).split())


# English words a search reads past (`privacy protection in China` needs no standalone "in")
_STOP_WORDS = frozenset(("a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "of", "on", "or", "the", "to", "with"))


def _word_char(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()


@functools.lru_cache(maxsize=8192)
def _part_pattern(part: str) -> re.Pattern[str] | None:
    """How a part is found in a text: None for a plain substring (Han at both ends: Chinese has no
    word breaks); a Latin letter or digit at an end must not continue a longer word or number
    there, so `ai` is not found in "maintain", `rag` in "storage", `585条` in 第1585条 (a plural s
    after a final letter is the word still: LLMs)."""
    head, tail = _word_char(part[0]), _word_char(part[-1])
    if not (head or tail):
        return None
    plural = "(?:e?s)?" if tail and part[-1].isalpha() else ""
    return re.compile(
        ("(?<![a-z0-9])" if head else "") + re.escape(part) + plural + ("(?![a-z0-9])" if tail else "")
    )


def _part_in(part: str, text: str) -> bool:
    if part not in text:
        return False
    pattern = _part_pattern(part)
    return pattern is None or pattern.search(text) is not None


def alias_in(alias: str, text: str) -> bool:
    """Does the alias occur in an already normalised text (every part of `alias_parts`, English
    stop words aside; Latin words and numbers as whole words, `_part_pattern`)?"""
    parts = alias_parts(alias)
    wanted = [part for part in parts if part not in _STOP_WORDS] or parts
    return bool(parts) and all(_part_in(part, text) for part in wanted)


def concept_coverage(
    groups: Sequence[Sequence[str]], title: str, keywords: Sequence[str], abstract: str
) -> float:
    """Share of concept groups with at least one alias inside the normalised
    title + keywords + abstract (`alias_in`)."""
    if not groups:
        return 0.0
    text = normalize(f"{title} {' '.join(keywords)} {abstract}")
    matched = sum(1 for group in groups if any(alias_in(alias, text) for alias in group))
    return matched / len(groups)


# --- candidates ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hit:
    """One paper found by one channel at a 1-based position."""

    channel: str
    position: int
    weight: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"channel": self.channel, "position": self.position, "weight": self.weight}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Hit:
        return cls(str(data["channel"]), int(data["position"]), float(data.get("weight", 1.0)))


@dataclass(frozen=True, slots=True)
class SourceQuality:
    """Journal evidence that counts for scoring (present, current parser)."""

    tiers: tuple[str, ...] = ()
    composite_if: float | None = None
    aggregate_if: float | None = None


@dataclass(frozen=True, slots=True)
class Candidate:
    ref: str
    title: str = ""
    abstract: str = ""
    keywords: tuple[str, ...] = ()
    doc_type: str = ""
    year: int | None = None
    cited: int | None = None
    hits: tuple[Hit, ...] = ()
    quality: SourceQuality | None = None


EVIDENCE_KEYS = (
    "relevance",
    "quality",
    "title_match",
    "abstract_match",
    "keyword_match",
    "rrf",
    "concept_coverage",
    "source_tier",
    "impact",
    "annual_citations",
    "resource_type",
    "quality_evidence_present",
)


@dataclass(frozen=True, slots=True)
class Evidence:
    relevance: float = 0.0
    quality: float = 0.0
    title_match: float = 0.0
    abstract_match: float = 0.0
    keyword_match: float = 0.0
    rrf: float = 0.0
    concept_coverage: float = 0.0
    source_tier: float = 0.0
    impact: float = 0.0
    annual_citations: float = 0.0
    resource_type: float = 0.0
    quality_evidence_present: bool = False
    channels: int = 0  # distinct channels behind `rrf` (not an evidence key of the reference)

    def to_dict(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in EVIDENCE_KEYS}


@dataclass(frozen=True, slots=True)
class Ranked:
    ref: str
    score: float
    eligible: bool
    evidence: Evidence = field(default_factory=Evidence)

    def to_dict(self) -> dict[str, Any]:
        return {
            "record": self.ref,
            "score": self.score,
            "relevance_eligible": self.eligible,
            "evidence": self.evidence.to_dict(),
        }


# --- quality features ---------------------------------------------------------------------


# What people call a list (南大核心, 中文核心期刊, C刊, SCIE …) -> the name a navi page tags it
# with (DESIGN.md "Journal pages"): `source_tiers` takes either. Keys upper-cased, spaces removed.
TIER_ALIASES: dict[str, str] = {
    "南大核心": "CSSCI",
    "南大核心期刊": "CSSCI",
    "CSSCI期刊": "CSSCI",
    "C刊": "CSSCI来源期刊",
    "CSSCI来源": "CSSCI来源期刊",
    "中文核心": "北大核心",
    "中文核心期刊": "北大核心",
    "北大核心期刊": "北大核心",
    "北大中文核心": "北大核心",
    "核心期刊": "核心",
    "CSCD核心": "CSCD核心库",
    "CSCD核心期刊": "CSCD核心库",
    "CSCD来源期刊": "CSCD核心库",
    "CSCD扩展库": "CSCD扩展",
    "CSCD扩展版": "CSCD扩展",
    "SCIE": "SCI",
    "SCI-E": "SCI",
    "SCI来源期刊": "SCI",
    "SCI期刊": "SCI",
    "SSCI来源期刊": "SSCI",
    "EI来源期刊": "EI",
    "EI期刊": "EI",
    "AHCI": "A&HCI",
}
# The tags a navi page shows (tests/fixtures/cnki-real/dataset/navi_tier_labels_2023.txt) and the
# older names the parser also reads (DESIGN.md "Journal pages"): a `source_tiers` name that finds
# none of them, nor a tag stored, can only filter every paper out.
KNOWN_TIERS: tuple[str, ...] = (
    "CSSCI", "CSSCI扩展版", "CSSCI来源集刊", "CSSCI来源期刊", "北大核心", "CSCD", "CSCD扩展版", "CSCD核心库",
    "SCI", "SCI-E", "SSCI", "A&HCI", "EI", "AMI顶级", "AMI权威", "AMI核心", "AMI扩展", "AMI入库",
    "AMI集刊核心", "AMI集刊入库", "AMI新刊核心", "AMI新刊入库", "AMI职院刊核心", "AMI职院刊扩展", "AMI职院刊入库",
    "AMI外文刊权威", "AMI外文刊核心", "AMI外文刊入库", "JST", "WJCI", "INSPEC", "CA", "Pж(AJ)", "卓越期刊",
    "社科基金资助期刊",
)  # fmt: skip
# A source list without its extended one: a navi page tags the CSSCI source journals `CSSCI`
# and the extended list `CSSCI扩展版` (the CSCD core library `CSCD`, the extended `CSCD扩展版`).
_EXACT_LISTS: dict[str, frozenset[str]] = {
    "CSSCI来源期刊": frozenset({"CSSCI", "CSSCI来源期刊"}),
    "CSCD核心库": frozenset({"CSCD", "CSCD来源期刊", "CSCD核心库"}),
}
# 核心 alone: any core list, the extended lists (CSSCI扩展版, CSCD扩展版, AMI扩展) aside.
_CORE_LISTS = frozenset({"CSSCI", "CSSCI来源期刊", "CSSCI来源集刊", "CSCD", "CSCD来源期刊", "CSCD核心库"})


def tier_wanted(wanted: str) -> str:
    """The tag name `wanted` asks for: an alias resolved (`南大核心` -> `CSSCI`), upper-cased."""
    key = re.sub(r"\s+", "", wanted).upper()
    return TIER_ALIASES.get(key, key)


def tier_matches(wanted: str, tier: str) -> bool:
    """Whether the tier CNKI lists (`CSSCI扩展版`, `AMI核心`, `SCI-E`, `北大核心`) is asked for by
    `wanted` (case ignored, an alias read as its list: `tier_wanted`): `wanted` occurs in it, but
    not inside a longer Latin name, so `SCI` is not `CSSCI` or `SSCI` while `CSSCI`, `AMI` and
    `CSCD` still find their variants. `CSSCI来源期刊` and `CSCD核心库` are the source lists
    without their extended ones; `核心` is any core list (北大核心, CSSCI, CSCD, AMI 核心 and up)."""
    want = tier_wanted(wanted)
    if not want:
        return False
    tag = re.sub(r"\s+", "", tier).upper()
    if want in _EXACT_LISTS:
        return tag in _EXACT_LISTS[want]
    if want == "核心":
        return tag in _CORE_LISTS or "核心" in tag or (tag.startswith("AMI") and tier_score(tag) > 0)
    return re.search(rf"(?<![A-Z]){re.escape(want)}(?![A-Z])", tag) is not None


# AMI grades (中国人文社会科学期刊AMI综合评价) from 核心 up: 顶级 > 权威 > 核心, in any of its lists
# (AMI集刊核心, AMI外文刊权威 …). 扩展 and 入库 are below the core and score 0.
_AMI_CORE_GRADES = ("顶级", "权威", "核心")


def tier_score(tier: str) -> float:
    """The reference tier table, except that the AMI grades above 核心 (顶级, 权威) score as 核心
    does (the reference gave them 0 below AMI核心's 0.88), and the extended lists (CSSCI扩展版,
    CSCD扩展版/扩展库) as EI does, below their source lists (the reference read any tag holding
    CSSCI or CSCD as the source list); AMI 扩展/入库 and `EI来源期刊` score 0."""
    u = tier.strip().upper()
    if "扩展" in u and ("CSSCI" in u or "CSCD" in u):
        return 0.90
    if "CSSCI" in u:
        return 0.96
    if u in ("SSCI", "SCI", "SCI-E", "A&HCI"):
        return 1.0
    if "北大核心" in u or "CSCD" in u:
        return 0.94
    if u == "EI":
        return 0.90
    if "AMI" in u and any(grade in u for grade in _AMI_CORE_GRADES):
        return 0.88
    return 0.0


def source_tier(tiers: Iterable[str]) -> float:
    return max((tier_score(t) for t in tiers), default=0.0)


def impact_score(composite_if: float | None, aggregate_if: float | None) -> float:
    """1 − exp(−max(0, m)/2), m the composite factor, else the aggregate one."""
    metric = composite_if if composite_if is not None else aggregate_if
    if metric is None:
        return 0.0
    return 1.0 - math.exp(-max(0.0, metric) / 2.0)


def annual_citation_score(cited: int | None, year: int | None, now_year: int) -> float | None:
    """1 − exp(−cited/age/3), age = max(1, now − year + 1); None when unknown."""
    if cited is None or not year or year <= 0 or year > now_year:
        return None
    age = max(1, now_year - year + 1)
    return 1.0 - math.exp(-max(0, cited) / age / 3.0)


def resource_type_score(doc_type: str | None) -> float:
    t = doc_type or ""
    for needle, score in (
        ("博士", 0.72),
        ("硕士", 0.46),
        ("本科", 0.10),
        ("期刊", 0.55),
        ("会议", 0.52),
        ("报纸", 0.14),
    ):
        if needle in t:
            return score
    return 0.0


def rrf_score(hits: Iterable[Hit]) -> tuple[float, int]:
    """Σ weight/(60 + position) over distinct channels (first hit of each; weight 0 counts as 1),
    and the number of those channels."""
    seen: set[str] = set()
    total = 0.0
    for hit in hits:
        if hit.position <= 0 or hit.channel in seen:
            continue
        seen.add(hit.channel)
        total += (hit.weight or 1.0) / (60.0 + hit.position)
    return total, len(seen)


# --- formulas -----------------------------------------------------------------------------


def relevance_formula(
    title: float, abstract: float, keywords: float, rrf: float, channels: int, coverage: float
) -> float:
    return (
        0.32 * title
        + 0.28 * abstract
        + 0.12 * keywords
        + 0.20 * min(rrf * 20.0, 1.0)
        + 0.08 * min(channels / 3.0, 1.0)
        + 0.12 * coverage
    ) / 1.12


def quality_formula(tier: float, impact: float, annual: float, kind: float) -> float:
    return 0.45 * tier + 0.25 * impact + 0.20 * annual + 0.10 * kind


def score_formula(relevance: float, quality: float) -> float:
    return relevance * (0.35 + 0.65 * quality) + 0.20 * quality


def is_eligible(relevance: float, coverage: float) -> bool:
    return relevance >= 0.25 and coverage >= 0.5


def order_key(eligible: bool, score: float, ref: str) -> tuple[bool, float, str]:
    """Eligible first, then score descending, then ref ascending."""
    return (not eligible, -score, ref)


def sort_key(r: Ranked) -> tuple[bool, float, str]:
    """The ranking's order of `r` (`order_key`)."""
    return order_key(r.eligible, r.score, r.ref)


def selection_floor(ranked: Sequence[Ranked]) -> float:
    return max(0.24, 0.55 * ranked[0].score) if ranked else 0.24


def reach_floor(listed: Sequence[Ranked], selected: Sequence[Ranked]) -> float:
    """The score under which no paper of `listed` is selected, for the enrichment's decisions: the
    selection floor, or the score of the lowest paper `selected` (in rank order) where the
    selection reaches under it (`MinimumSelectionRanker`: the top-up to 10, a rescued paper and
    the clause-passing papers ranked above it)."""
    floor = selection_floor(listed)
    return min(floor, selected[-1].score) if selected else floor


def passes_clauses(e: Evidence) -> bool:
    q, rel = e.quality, e.relevance
    return (
        (rel >= 0.35 and e.concept_coverage == 1.0)
        or q >= 0.45
        or (q >= 0.25 and rel >= 0.35)
        or (not e.quality_evidence_present and rel >= 0.55)
    )


# --- rankers ------------------------------------------------------------------------------

MAX_SELECTED = 100
EXCLUDED_IRRELEVANT = "insufficient_relevance_evidence"
EXCLUDED_THRESHOLD = "ranking_or_quality_threshold"
# not among the first MAX_SELECTED in order, where the selection is just those (structured searches
# and metadata=basic select the first 100, eligible or not: neither threshold nor eligibility applies)
EXCLUDED_LIMIT = "selection_limit"
# another record of a work listed already (works.duplicate_works: online-first and final
# records, a reprint, a conference version): never selected, whatever its score
EXCLUDED_DUPLICATE = "duplicate_work"


class Ranker(Protocol):
    name: str

    def rank(
        self, candidates: Sequence[Candidate], groups: Sequence[Sequence[str]], now_year: int
    ) -> list[Ranked]:
        """Score every candidate and return them in final order."""
        ...

    def select(self, ranked: Sequence[Ranked], limit: int = MAX_SELECTED) -> list[Ranked]:
        """The selected subset of `ranked`, in order."""
        ...


# Scores kept between rankings (`ReferenceRanker.rank`): `evaluate` is a function of the candidate
# (frozen, compared by value), the groups and the year, and a research search ranks the same
# candidates at every enrichment step. Per concept set (searches side by side), the candidates of
# its last ranking only, so memory stays one candidate set per set.
RANK_MEMO_SETS = 4


class ReferenceRanker:
    """The reference's formulas (site-rules.md §3.5/§3.6), unchanged."""

    name = "reference"

    def __init__(self) -> None:
        self._memos: dict[tuple[tuple[tuple[str, ...], ...], int], dict[Candidate, Ranked]] = {}

    def evaluate(
        self, c: Candidate, query: frozenset[str], groups: Sequence[Sequence[str]], now_year: int
    ) -> Ranked:
        title = dice(query, tokens(c.title))
        abstract = dice(query, tokens(c.abstract))
        keywords = dice(query, tokens(" ".join(c.keywords)))
        coverage = concept_coverage(groups, c.title, c.keywords, c.abstract)
        rrf, channels = rrf_score(c.hits)
        relevance = relevance_formula(title, abstract, keywords, rrf, channels, coverage)
        tier = impact = 0.0
        known = False
        if c.quality is not None:
            known = True
            tier = source_tier(c.quality.tiers)
            impact = impact_score(c.quality.composite_if, c.quality.aggregate_if)
        annual = annual_citation_score(c.cited, c.year, now_year)
        if annual is not None:
            known = True
        kind = resource_type_score(c.doc_type)
        quality = quality_formula(tier, impact, annual or 0.0, kind)
        evidence = Evidence(
            relevance=relevance,
            quality=quality,
            title_match=title,
            abstract_match=abstract,
            keyword_match=keywords,
            rrf=rrf,
            concept_coverage=coverage,
            source_tier=tier,
            impact=impact,
            annual_citations=annual or 0.0,
            resource_type=kind,
            quality_evidence_present=known,
            channels=channels,
        )
        return Ranked(c.ref, score_formula(relevance, quality), is_eligible(relevance, coverage), evidence)

    def rank(
        self, candidates: Sequence[Candidate], groups: Sequence[Sequence[str]], now_year: int
    ) -> list[Ranked]:
        query = query_tokens(groups)
        key = (tuple(tuple(g) for g in groups), now_year)
        memos = self._memos
        memo = memos.pop(key, {})
        kept: dict[Candidate, Ranked] = {}
        out: list[Ranked] = []
        for c in candidates:
            r = kept.get(c) or memo.get(c)
            if r is None:
                r = self.evaluate(c, query, groups, now_year)
            kept[c] = r
            out.append(r)
        memos[key] = kept  # most recent last
        while len(memos) > RANK_MEMO_SETS:
            del memos[next(iter(memos))]
        out.sort(key=sort_key)
        return out

    def select(self, ranked: Sequence[Ranked], limit: int = MAX_SELECTED) -> list[Ranked]:
        if not ranked:
            return []
        limit = limit if limit > 0 else MAX_SELECTED
        floor = selection_floor(ranked)
        out: list[Ranked] = []
        for r in ranked:
            if not r.eligible or r.score < floor or not passes_clauses(r.evidence):
                continue
            out.append(r)
            if len(out) == limit:
                break
        return out


MIN_SELECTED = 10
RESCUE_RELEVANCE = 0.55


def _reference_pass(r: Ranked, floor: float) -> bool:
    return r.eligible and r.score >= floor and passes_clauses(r.evidence)


class MinimumSelectionRanker(ReferenceRanker):
    """Reference scores and order; selection = the reference's, topped up to `min_selected` with
    the next eligible papers that pass the reference clauses but fall below the score floor.

    Why: the 55 % floor is relative to the top score, so one high-quality paper can push
    relevant, lower-quality papers out (the reference's own validation: "the 55% floor picked only
    4 papers in one real search"). The top-up never removes or reorders a reference pick."""

    name = "min10"

    def __init__(self, min_selected: int = MIN_SELECTED) -> None:
        super().__init__()
        self.min_selected = min_selected

    def _extra(self, r: Ranked) -> bool:
        """Kept below the floor regardless of the minimum size (none here)."""
        return False

    def select(self, ranked: Sequence[Ranked], limit: int = MAX_SELECTED) -> list[Ranked]:
        if not ranked:
            return []
        limit = limit if limit > 0 else MAX_SELECTED
        floor = selection_floor(ranked)
        keep = {r.ref for r in ranked if _reference_pass(r, floor) or self._extra(r)}
        want = min(self.min_selected, limit)
        for r in ranked:
            if len(keep) >= want:
                break
            if r.ref not in keep and r.eligible and passes_clauses(r.evidence):
                keep.add(r.ref)
        # a paper kept below the floor (`_extra`) keeps the clause-passing papers ranked above it:
        # one with a higher score is never left out as under the threshold
        last = max((i for i, r in enumerate(ranked) if r.ref in keep), default=-1)
        keep |= {r.ref for r in ranked[:last] if r.eligible and passes_clauses(r.evidence)}
        return [r for r in ranked if r.ref in keep][:limit]


class RelevanceRescueRanker(MinimumSelectionRanker):
    """`MinimumSelectionRanker` plus: an eligible paper covering every concept group with
    relevance ≥ 0.55 is selected even below the score floor. 0.55 is the reference's own level at
    which relevance alone suffices (clause 4, no quality evidence); here it also applies when the
    quality evidence is present but low, since the floor, not relevance, is what drops them. The
    eligible papers passing the reference clauses ranked above a rescued one are selected with it
    (`MinimumSelectionRanker.select`): a higher score is never excluded as under the threshold."""

    name = "min10_rescue55"

    def __init__(self, min_selected: int = MIN_SELECTED, rescue_relevance: float = RESCUE_RELEVANCE) -> None:
        super().__init__(min_selected)
        self.rescue_relevance = rescue_relevance

    def _extra(self, r: Ranked) -> bool:
        e = r.evidence
        return r.eligible and e.concept_coverage == 1.0 and e.relevance >= self.rescue_relevance


def select_works(
    ranked: Sequence[Ranked],
    papers: Mapping[str, Paper],
    select: Callable[[Sequence[Ranked]], list[Ranked]],
    settled: Callable[[str], bool] | None = None,
) -> tuple[list[Ranked], dict[str, str]]:
    """`select` over the ranking with each work listed once (`works.duplicate_works`), and the
    copies left out (copy -> kept record). Where a work's final record took the place of its
    online-first one and was then not selected (its abstract unread, fewer hits: a lower score),
    the online-first record keeps its place, so a work is never lost to the swap. `settled`: for a
    decision while records are still being read: a record not `settled(ref)` (its detail unread)
    may be a final record (`duplicate_works`' `unread`), and a final record not selected yields its
    place only once settled (its score is no longer a lower bound)."""
    ordered = [papers[r.ref] for r in ranked]
    at = {r.ref: i for i, r in enumerate(ranked)}
    unread = frozenset(r.ref for r in ranked if settled is not None and not settled(r.ref))
    keep: set[str] = set()
    while True:
        dupes = duplicate_works(ordered, keep, unread)
        selected = select([r for r in ranked if r.ref not in dupes])
        chosen = {r.ref for r in selected}
        lost = {
            ref
            for ref, kept in dupes.items()
            if at[kept] > at[ref] and kept not in chosen and (settled is None or settled(kept))
        } - keep
        if not lost:
            return selected, dupes
        keep |= lost


def works_ranking(ranked: Sequence[Ranked], copies: Mapping[str, str]) -> list[Ranked]:
    """`ranked` with each work once, for the enrichment's decisions: the record kept for a work
    (`copies`: copy -> kept record, `select_works`) stands at the place of the work's best-ranked
    record, so the work is read once, as the record the answer lists, and where the work ranks."""
    by_ref = {r.ref: r for r in ranked}
    out: dict[str, Ranked] = {}
    for r in ranked:
        kept = copies.get(r.ref, r.ref)
        out.setdefault(kept, by_ref[kept])
    return list(out.values())


def work_keywords(keywords: Mapping[str, Sequence[str]], copies: Mapping[str, str]) -> dict[str, list[str]]:
    """`keywords` per record with each copy's joined to its kept record's (`copies`: copy -> kept):
    over `works_ranking` a work's keywords count once in `feedback_keywords`, whichever of its
    records was read."""
    out = {ref: list(words) for ref, words in keywords.items()}
    for copy, kept in copies.items():
        out[kept] = list(dict.fromkeys([*out.get(kept, ()), *keywords.get(copy, ())]))
    return out


def exclusions(
    ranked: Sequence[Ranked],
    selected: Iterable[str],
    *,
    first_only: bool = False,
    duplicates: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Why each unselected record was left out: another record of its work is listed
    (`duplicates`, selected from the ranking without them), else not eligible, or below a
    threshold; with `first_only` (the selection is the first MAX_SELECTED in order) that limit."""
    chosen = set(selected)
    copies = duplicates or {}
    return {
        r.ref: EXCLUDED_DUPLICATE
        if r.ref in copies
        else EXCLUDED_LIMIT
        if first_only
        else EXCLUDED_THRESHOLD
        if r.eligible
        else EXCLUDED_IRRELEVANT
        for r in ranked
        if r.ref not in chosen
    }


# --- pool and feedback --------------------------------------------------------------------


def enhancement_size(candidates: int) -> int:
    """Detail pool size: n up to 30, 40 up to 100, 60 up to 300, else 80 (never above n)."""
    if candidates <= 30:
        size = candidates
    elif candidates <= 100:
        size = 40
    elif candidates <= 300:
        size = 60
    else:
        size = 80
    return max(0, min(candidates, size))


FEEDBACK_TOP = 10
FEEDBACK_MIN_FREQUENCY = 2
FEEDBACK_CHANNELS = 2


def feedback_keywords(
    ranked: Sequence[Ranked], keywords: Mapping[str, Sequence[str]], groups: Sequence[Sequence[str]]
) -> list[str]:
    """Keywords shared by ≥ 2 of the eligible papers among the top 10 (ineligible ones skipped,
    not replaced), 2–30 characters, not an original alias; by frequency desc then key asc; at
    most 2. Returned as written on the last paper that had them. The words of an alias with
    spaces count as original too (`alias_parts`: CNKI already requires each of them)."""
    if not groups:
        return []
    original = {normalize(a) for g in groups for a in g} | {w for g in groups for a in g for w in alias_parts(a)}
    frequency: dict[str, int] = {}
    example: dict[str, str] = {}
    for r in ranked[:FEEDBACK_TOP]:
        words = keywords.get(r.ref) or ()
        if not r.eligible or not words:
            continue
        seen: set[str] = set()
        for word in words:
            key = normalize(word)
            if not 2 <= len(key) <= 30 or key in original or key in seen:
                continue
            seen.add(key)
            frequency[key] = frequency.get(key, 0) + 1
            example[key] = word
    keys = sorted(
        (k for k, n in frequency.items() if n >= FEEDBACK_MIN_FREQUENCY), key=lambda k: (-frequency[k], k)
    )
    return [example[k] for k in keys[:FEEDBACK_CHANNELS]]
