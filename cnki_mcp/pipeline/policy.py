"""Request policies of the research search: which channels are asked, which are evaluated on the
candidates already known, and which candidates get a detail page (DESIGN.md "Request policies";
measured per question in docs/benchmarks.md "Request policies").

PURE: rankings and candidates in, decisions out; no clock, no I/O. The engine applies them.

- `SubsetChannels.LOCAL`: the title (q2), keywords (q3) and feedback channels search subsets of
  the subject channel (q1: 主题 covers titles, keywords and abstracts; feedback = the same
  concepts AND one more subject phrase). Once q1 has listed its whole result set, those channels
  can add no candidate; they still carry ranking evidence (reciprocal-rank hits), which is
  computed here from the known candidates instead of being requested.
- `Enrichment.BOUNDARY`: enrichment can only raise a candidate's score (abstract and keyword
  matches, concept coverage and journal quality only add), so the grid-only score is a lower
  bound; an upper bound takes the best abstract/keyword match and journal quality seen among
  the candidates enriched so far in the same search. Detail pages go to the top `readable_top`
  (so the results a client reads carry abstract, keywords and source tier), then, batch by
  batch, to every candidate whose upper bound reaches the `watch_depth`-th lower bound and that
  could still be selected; the loop ends when no such candidate is left.
- `EnrichmentStart.LAST_PAGES` (boundary enrichment by batch export): once the stop rule is
  certain to fetch at most `overlap_pages` (or the paced depth, below; and at least half of
  `overlap_pages`) more levels of pages, the
  steps run on the candidates and hits of the pages landed (a snapshot a resumed search sees
  alike, pipeline/overlap.py) while the last pages are fetched; after retrieval they go on over
  every candidate.
- `OverlapDepth.PACED` (with `LAST_PAGES`): the depth is the levels the snapshot's ~32 reads
  need beside the pages still to come at the pacing the limiter met (latency / interval - 1
  reads a level, at least 1), between `overlap_pages` and twice that (pipeline/overlap.py
  `paced_depth`): `overlap_pages` at the growth benchmark's 200 ms, twice at 500 ms. Decided
  once, from the pacing met, and checkpointed.
- `SnapshotReads.JOURNALS` (with `PACED`): the reads the depth is sized for are 3 per unread
  journal among the top 40 (twice `watch_depth`) of the snapshot at the level where the depth is
  decided, at least the ~32 counted on `main`, and the depth may reach 4 x `overlap_pages`
  (pipeline/overlap.py `snapshot_reads`): sources spread over many journals (the `diverse`
  corpus, the real pages) need about twice the journal pages.
- `middle_pages` (with `LAST_PAGES`): after a first snapshot with more than this many levels to
  come (a depth from the pacing and the journals deeper than `overlap_pages`), one more once at
  most this many are certain to come, before the closing one: the first snapshot's reads end
  long before the last pages, and the pages landed since wait for the closing snapshot otherwise.
- `closing_pages` (with `LAST_PAGES`): a second snapshot once at most this many levels are certain
  to come: the steps read what the pages since the first brought while the last are fetched, so
  the steps after retrieval seldom have anything left to read.
- `closing_steps` (with `closing_pages`): the closing snapshot exports abstracts in at most this
  many steps, then reads only the journal pages its steps propose: a further export would be
  decided as the last page lands and follow it, so the step after retrieval decides those
  abstracts with the last pages' candidates (on the growth question, one export for both).
- `FeedbackStart.WITH_SNAPSHOT` (with `LAST_PAGES`): once the snapshot's steps are done, the
  feedback words come from the snapshot's settled top and the feedback pages are fetched beside
  the last retrieval pages, when the subject channel lists enough papers to reach the target
  (so it cannot be exhausted, which would answer the feedback locally).
- `JournalTiming.TOP_WITH_ABSTRACT` (batch export): the readable top's journal pages go out beside
  their abstracts; the other candidates' journals wait for the abstract (`early_journals`).
- `JournalPrefetch.FIRST_LEVEL` (with `LAST_PAGES`, a retrieval too short to overlap that still
  has pages to come after its first level): the journal pages of the first level's readable top
  (`readable_top`, one per source, `unread_journals`) are read beside the last pages. The
  steps' decisions treat such a journal as unread until a step proposes it (then its read is
  done or in flight), so they, the requests they send and the results are those without the rule;
  only the time changes, unless a journal read early is never proposed (one request more).
- `FeedbackWhen.CERTAIN` (boundary enrichment by batch export, feedback asked after retrieval):
  the feedback words are those of the settled ranking, taken as soon as no later step can change
  them (`feedback_words_certain`), and the feedback pages go out beside the remaining steps, which
  decide on the retrieval candidates alone, as they would without the pages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from cnki_mcp.rank import (
    FEEDBACK_TOP,
    MIN_SELECTED,
    RESCUE_RELEVANCE,
    Candidate,
    Hit,
    Ranked,
    alias_in,
    is_eligible,
    normalize,
    order_key,
    quality_formula,
    relevance_formula,
    score_formula,
    sort_key,
)


class SubsetChannels(StrEnum):
    REQUEST = "request"  # reference: every channel is requested
    LOCAL = "local"  # subsets of an exhausted subject channel are evaluated on known candidates


class FeedbackRule(StrEnum):
    REQUEST = "request"  # reference: the feedback channels are asked (unless local by SubsetChannels)
    LOCAL = "local"  # their hits are always computed on the known candidates, never asked


class Reading(StrEnum):
    DETAIL = "detail"  # reference: a candidate's abstract and keywords come from its detail page
    EXPORT = "export"  # from CNKI's batch export of its list row, 20 per request (detail page fallback)


class JournalTiming(StrEnum):
    AFTER_ABSTRACT = "after_abstract"  # a journal page only once the abstract is known (one step later)
    TOP_WITH_ABSTRACT = "top_with_abstract"  # the readable top's journals beside its abstracts


class EnrichmentStart(StrEnum):
    AFTER_RETRIEVAL = "after_retrieval"  # the enrichment steps start once every page has landed
    LAST_PAGES = "last_pages"  # they start on a snapshot while the last pages are fetched


class OverlapDepth(StrEnum):
    FIXED = "fixed"  # the snapshot once at most `overlap_pages` levels are certain to come
    PACED = "paced"  # deeper where the snapshot's reads need more levels at the pacing met (`paced_depth`)


class SnapshotReads(StrEnum):
    FIXED = "fixed"  # OverlapDepth.PACED sizes the snapshot for ~32 reads (counted on `main`)
    JOURNALS = "journals"  # for 3 reads per unread journal in its top 40, at least 32 (`snapshot_reads`)


class JournalPrefetch(StrEnum):
    NONE = "none"  # a journal page only once an enrichment step proposes it
    FIRST_LEVEL = "first_level"  # a short retrieval's first-level top journals read beside its last pages


class FeedbackStart(StrEnum):
    AFTER_ENRICHMENT = "after_enrichment"  # feedback words from the top of every candidate, settled
    WITH_SNAPSHOT = "with_snapshot"  # from the top of the snapshot beside the last pages (LAST_PAGES)


class FeedbackWhen(StrEnum):
    SETTLED = "settled"  # the feedback pages once every enrichment step is done
    CERTAIN = "certain"  # as soon as the settled ranking's words are certain (same words, same pages)


class Enrichment(StrEnum):
    POOL = "pool"  # reference: the top n of the grid-only ranking (rank.enhancement_size)
    BOUNDARY = "boundary"  # top readable + candidates whose upper bound reaches the watched depth


@dataclass(frozen=True, slots=True)
class SearchPolicy:
    name: str
    subset_channels: SubsetChannels
    enrichment: Enrichment
    feedback: FeedbackRule = FeedbackRule.REQUEST
    reading: Reading = Reading.DETAIL
    subset_pages: int = 0  # page cap of the title and keyword channels under LOCAL (0: max_pages)
    readable_top: int = 10  # results whose abstract, keywords and source tier are always read
    watch_depth: int = 20  # ranking depth whose order the enrichment settles
    batch: int = 10  # candidates decided at a time (bounds tighten between batches)
    journal_timing: JournalTiming = JournalTiming.AFTER_ABSTRACT  # Reading.EXPORT only
    enrichment_start: EnrichmentStart = EnrichmentStart.AFTER_RETRIEVAL  # BOUNDARY + EXPORT only
    overlap_pages: int = 16  # EnrichmentStart.LAST_PAGES: levels of pages left to overlap
    closing_pages: int = 0  # EnrichmentStart.LAST_PAGES: a second snapshot this many levels before the end
    closing_steps: int = 0  # closing snapshot's abstract steps (0: until settled); then journals only
    middle_pages: int = 0  # LAST_PAGES: after a deeper first snapshot, one more this many levels before the end
    overlap_depth: OverlapDepth = OverlapDepth.FIXED  # EnrichmentStart.LAST_PAGES: overlap_pages as is, or paced
    feedback_start: FeedbackStart = FeedbackStart.AFTER_ENRICHMENT  # EnrichmentStart.LAST_PAGES only
    feedback_when: FeedbackWhen = FeedbackWhen.SETTLED  # BOUNDARY + EXPORT, feedback after retrieval
    journal_prefetch: JournalPrefetch = JournalPrefetch.NONE  # EnrichmentStart.LAST_PAGES, a short retrieval
    snapshot_reads: SnapshotReads = SnapshotReads.FIXED  # OverlapDepth.PACED: the reads the depth is sized for

    def without(self, rule: str) -> SearchPolicy:
        """This policy with one rule set back (the ablations of the bench): to the reference's
        value, except `reading` (detail pages in the batches of 5 the detail policy used) and
        `watch_depth` (10, the depth the detail policy used)."""
        back: dict[str, dict[str, object]] = {
            "subset_channels": {"subset_channels": SubsetChannels.REQUEST},
            "enrichment": {"enrichment": Enrichment.POOL},
            "feedback": {"feedback": FeedbackRule.REQUEST},
            "subset_pages": {"subset_pages": 0},
            "watch_depth": {"watch_depth": DETAIL_WATCH_DEPTH},
            "reading": {"reading": Reading.DETAIL, "batch": DETAIL_BATCH},
            "journal_timing": {"journal_timing": JournalTiming.AFTER_ABSTRACT},
            "enrichment_start": {"enrichment_start": EnrichmentStart.AFTER_RETRIEVAL},
            "feedback_start": {"feedback_start": FeedbackStart.AFTER_ENRICHMENT},
            "closing_pages": {"closing_pages": 0},
            "closing_steps": {"closing_steps": 0},
            "middle_pages": {"middle_pages": 0},
            "overlap_depth": {"overlap_depth": OverlapDepth.FIXED},
            "feedback_when": {"feedback_when": FeedbackWhen.SETTLED},
            "journal_prefetch": {"journal_prefetch": JournalPrefetch.NONE},
            "snapshot_reads": {"snapshot_reads": SnapshotReads.FIXED},
        }
        return replace(self, name=f"{self.name}-{rule}", **back[rule])  # type: ignore[arg-type]


REFERENCE_POLICY = SearchPolicy("reference", SubsetChannels.REQUEST, Enrichment.POOL)
# Measured on the bundled and the generated `main` corpus (docs/benchmarks.md "Request policies"):
# reading abstracts by batch export answers 20 candidates per request, so the detail policy's
# trade-off (depth 10 in batches of 5 read ~45 % fewer detail pages than depth 20) is gone:
# depth 20 in batches of 20 (one export request each) costs ~2 requests more per search than
# depth 10 and settles the whole top 20 (nDCG@20 +0.017 on `main`). The title/keyword channels'
# first page carries their ranking evidence, their later pages only list papers q1 also lists.
DETAIL_BATCH = 5
DETAIL_WATCH_DEPTH = 10
DEFAULT_POLICY = SearchPolicy(
    "default",
    SubsetChannels.LOCAL,
    Enrichment.BOUNDARY,
    reading=Reading.EXPORT,
    watch_depth=20,
    batch=20,
    subset_pages=1,
    journal_timing=JournalTiming.TOP_WITH_ABSTRACT,
    enrichment_start=EnrichmentStart.LAST_PAGES,
    feedback_start=FeedbackStart.WITH_SNAPSHOT,
    closing_pages=2,
    closing_steps=1,
    middle_pages=16,
    overlap_depth=OverlapDepth.PACED,
    feedback_when=FeedbackWhen.CERTAIN,
    journal_prefetch=JournalPrefetch.FIRST_LEVEL,
    snapshot_reads=SnapshotReads.JOURNALS,
)
POLICIES = {p.name: p for p in (REFERENCE_POLICY, DEFAULT_POLICY)}

# --- channels evaluated on the known candidates ---------------------------------------------

LOCAL_FIELDS = ("title", "keywords", "subject")


@dataclass(frozen=True, slots=True)
class LocalChannel:
    """A channel answered from the known candidates: `field` title / keywords (all concept
    groups there), or subject with `phrase` (a feedback channel: the phrase anywhere in title,
    keywords or abstract; the concepts already hold, every candidate came from the subject
    channel)."""

    id: str
    field: str
    weight: float
    phrase: str = ""

    def needs_detail(self) -> bool:
        """Keywords and abstracts come from the detail page; titles are in every grid row."""
        return self.field != "title"

    def matches(self, c: Candidate, groups: Sequence[Sequence[str]]) -> bool:
        if self.field == "title":
            text = normalize(c.title)
            return all(any(alias_in(a, text) for a in g) for g in groups)
        if self.field == "keywords":  # CNKI matches a term's words within one keyword
            words = [normalize(k) for k in c.keywords]
            return all(any(alias_in(a, w) for a in g for w in words) for g in groups)
        text = normalize(f"{c.title} {' '.join(c.keywords)} {c.abstract}")
        return alias_in(self.phrase, text)


def with_local_hits(
    candidates: Sequence[Candidate],
    groups: Sequence[Sequence[str]],
    channels: Sequence[LocalChannel],
    detailed: set[str],
    *,
    order_by: str,
) -> list[Candidate]:
    """Add each local channel's hits: the matching candidates in the order of channel `order_by`
    (the subject channel, whose relevance order the subset keeps), positions from 1. A channel
    that needs the detail page tests only candidates in `detailed`."""
    if not channels:
        return list(candidates)

    def position(c: Candidate) -> tuple[int, str]:
        return (min((h.position for h in c.hits if h.channel == order_by), default=1 << 30), c.ref)

    ordered = sorted(candidates, key=position)
    extra: dict[str, list[Hit]] = {}
    for channel in channels:
        n = 0
        for c in ordered:
            if channel.needs_detail() and c.ref not in detailed:
                continue
            if channel.matches(c, groups):
                n += 1
                extra.setdefault(c.ref, []).append(Hit(channel.id, n, channel.weight))
    return [
        replace(c, hits=c.hits + tuple(extra.get(c.ref, ()))) if c.ref in extra else c for c in candidates
    ]


# --- enrichment -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RefState:
    """What the store already holds for one candidate."""

    detailed: bool  # a current detail page (abstract and keywords known)
    journal_open: bool  # a journal article whose journal evidence is not cached yet
    journal_known: bool = False  # its journal evidence is present (tier and impact scored)


@dataclass(frozen=True, slots=True)
class Bounds:
    """Best evidence seen among enriched candidates of this search: the upper bound's inputs."""

    abstract: float = 1.0
    keywords: float = 1.0
    tier: float = 1.0
    impact: float = 1.0
    rrf_gain: float = 0.0  # reciprocal-rank weight local channels may add once the detail is read
    channel_gain: int = 0


def observed_bounds(
    ranked: Sequence[Ranked], states: Mapping[str, RefState], local: Sequence[LocalChannel]
) -> Bounds:
    detailed = [r for r in ranked if states[r.ref].detailed]
    journaled = [r for r in ranked if states[r.ref].journal_known]
    pending = [c for c in local if c.needs_detail()]
    return Bounds(
        abstract=max((r.evidence.abstract_match for r in detailed), default=1.0),
        keywords=max((r.evidence.keyword_match for r in detailed), default=1.0),
        tier=max((r.evidence.source_tier for r in journaled), default=1.0),
        impact=max((r.evidence.impact for r in journaled), default=1.0),
        rrf_gain=sum(c.weight / 61.0 for c in pending),
        channel_gain=len(pending),
    )


def upper_bound(r: Ranked, state: RefState, bounds: Bounds) -> tuple[float, float]:
    """(relevance, score) this candidate could reach once enriched: full concept coverage (it was
    found by a search over all concepts), the best abstract/keyword match seen, the local channel
    hits it could gain, and the best journal quality seen when its journal is still unread."""
    e = r.evidence
    abstract, keywords = e.abstract_match, e.keyword_match
    rrf, channels = e.rrf, e.channels
    if not state.detailed:
        abstract, keywords = max(abstract, bounds.abstract), max(keywords, bounds.keywords)
        rrf, channels = rrf + bounds.rrf_gain, channels + bounds.channel_gain
    relevance = relevance_formula(e.title_match, abstract, keywords, rrf, channels, 1.0)
    quality = e.quality
    if state.journal_open:
        quality = quality_formula(
            max(bounds.tier, e.source_tier), max(bounds.impact, e.impact), e.annual_citations, e.resource_type
        )
    return relevance, score_formula(relevance, quality)


def next_enrichment(
    ranked: Sequence[Ranked],
    states: Mapping[str, RefState],
    attempted: set[str],
    policy: SearchPolicy,
    *,
    selected: int,
    floor: float,
    local: Sequence[LocalChannel] = (),
    journals_tried: frozenset[str] | set[str] = frozenset(),
) -> list[str]:
    """The next candidates to enrich, best upper bound first, at most `policy.batch`; empty when
    the ranking's watched part is settled. `ranked` is the current order (lower bounds),
    `selected`/`floor` the current selection's size and floor. Candidates in `attempted` are
    never proposed again for their abstract (a failed page is not retried here).

    Reading.DETAIL: a proposed candidate gets its detail page and its journal page together.
    Reading.EXPORT: a candidate whose abstract is unread gets it first (the batch export); its
    journal is proposed on a later call only if, with the abstract known, it still matters
    (`journals_tried`: journals asked for in this search, never proposed again). The readable
    top comes first; under EXPORT up to `batch` abstracts and up to `batch` journal pages are
    proposed at a time, the readable top's first, each topped up from the boundary."""
    export = policy.reading == Reading.EXPORT

    def open_(ref: str) -> bool:
        s = states[ref]
        if export:
            return (ref not in attempted and not s.detailed) or (s.journal_open and ref not in journals_tried)
        return ref not in attempted and (not s.detailed or s.journal_open)

    top = [r.ref for r in ranked[: policy.readable_top] if open_(r.ref)]
    if top and not export:
        return top
    bounds = observed_bounds(ranked, states, local)
    # sorted: a work's record stands where its best record ranks (rank.works_ranking)
    eligible = sorted((r.score for r in ranked if r.eligible), reverse=True)
    theta = eligible[policy.watch_depth - 1] if len(eligible) >= policy.watch_depth else float("-inf")
    chosen = set(top)
    want: list[tuple[float, str]] = []
    for r in ranked:
        if r.ref in chosen or not open_(r.ref):
            continue
        relevance, score = upper_bound(r, states[r.ref], bounds)
        if relevance < 0.25 or score < theta:
            continue  # can neither become eligible nor reach the watched depth
        if selected >= MIN_SELECTED and score < floor and relevance < RESCUE_RELEVANCE:
            continue  # below the selection floor and not rescued by relevance: never selected
        want.append((-score, r.ref))
    want.sort()
    if not export:
        return [ref for _, ref in want[: policy.batch]]

    # one batch of abstracts (one export request) and one of journal pages, each topped up from
    # the boundary: a journal never takes an abstract's place in the export
    def unread(ref: str) -> bool:
        return ref not in attempted and not states[ref].detailed

    out: list[str] = []
    for kind in (True, False):
        picked = [ref for ref in top if unread(ref) == kind]
        picked += [ref for _, ref in want if unread(ref) == kind][: max(0, policy.batch - len(picked))]
        out += picked
    return out


def unread_journals(
    ranked: Sequence[Ranked], states: Mapping[str, RefState], sources: Mapping[str, str], depth: int
) -> list[str]:
    """Among the `depth` best of `ranked`, one paper per source whose journal is unread
    (`sources`: ref -> source key; no key, no journal page). Over the first level's top 10, the
    papers JournalPrefetch.FIRST_LEVEL reads early: the steps read the journals of the readable
    top and of the boundary around it, and on the four policy-bench corpora every source chosen
    so from the top 10 (and from the top 20) was later proposed by a step (docs/benchmarks.md
    "Journal pages beside a short retrieval"). Counted over the top 40, the unread sources a
    snapshot's depth is sized from (SnapshotReads.JOURNALS)."""
    seen: set[str] = set()
    out: list[str] = []
    for r in ranked[:depth]:
        key = sources.get(r.ref, "")
        if key and key not in seen and states[r.ref].journal_open:
            seen.add(key)
            out.append(r.ref)
    return out


def early_journals(
    ranked: Sequence[Ranked],
    states: Mapping[str, RefState],
    batch: Sequence[str],
    attempted: set[str],
    policy: SearchPolicy,
    journals_tried: frozenset[str] | set[str] = frozenset(),
) -> list[str]:
    """JournalTiming.TOP_WITH_ABSTRACT: the candidates of `batch` in the readable top whose
    abstract this step reads and whose journal is not known. Their journal page goes out beside
    the export instead of one step later: a readable-top result needs its tier either way, and
    an abstract only raises a candidate's score (rank.py), so it rarely leaves the top."""
    if policy.reading != Reading.EXPORT or policy.journal_timing != JournalTiming.TOP_WITH_ABSTRACT:
        return []
    chosen = set(batch)
    return [
        r.ref
        for r in ranked[: policy.readable_top]
        if r.ref in chosen
        and r.ref not in attempted
        and r.ref not in journals_tried
        and not states[r.ref].detailed
        and states[r.ref].journal_open
    ]


def feedback_words_certain(
    ranked: Sequence[Ranked],
    states: Mapping[str, RefState],
    keywords: Mapping[str, Sequence[str]],
    local: Sequence[LocalChannel] = (),
) -> bool:
    """The feedback words of `ranked` (rank.feedback_keywords: shared keywords of the eligible
    papers among the top `FEEDBACK_TOP`) are those of every ranking later enrichment can lead to.
    Enrichment only raises scores and turns papers eligible, never the reverse (rank.py), so it
    holds when:
    - every paper of the top is read, so its keywords and its eligibility are final;
    - no paper outside the top can sort before the last of it, even at its upper bound (eligible
      if it is unread and could reach the relevance floor);
    - each keyword of the top is written one way only, so the top's order cannot change which
      form a word is asked with."""
    top = ranked[:FEEDBACK_TOP]
    if any(not states[r.ref].detailed for r in top):
        return False
    last = max((sort_key(r) for r in top), default=None)
    if last is None:
        return True
    bounds = observed_bounds(ranked, states, local)
    for r in ranked[FEEDBACK_TOP:]:
        relevance, score = upper_bound(r, states[r.ref], bounds)
        eligible = r.eligible if states[r.ref].detailed else is_eligible(relevance, 1.0)  # full coverage
        if order_key(eligible, score, r.ref) < last:
            return False
    forms: dict[str, set[str]] = {}
    for r in top:
        for word in keywords.get(r.ref) or ():
            forms.setdefault(normalize(word), set()).add(word)
    return all(len(f) == 1 for f in forms.values())
