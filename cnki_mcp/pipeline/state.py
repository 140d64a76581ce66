"""The resumable search checkpoint (site-rules.md §3.4) and the channels it searches.

Every field is JSON (it is stored with the operation); `continue` rebuilds the state from it and
repeats no request: pages already answered are never refetched, details and journals already known
are read from the store.

A page is merged as the event `page_event` builds, and the same event is appended to the stored
checkpoint (`OperationContext.checkpoint_append`), so a tick writes the page's new rows only;
`from_json` replays the appended events over the last full checkpoint. Candidates are kept in a
canonical order, whatever order pages arrive in: by (stage, page, unit, row) of the first
sighting, the order a search waiting for each round would have seen them in (DESIGN.md
"Retrieval without rounds")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cnki_mcp.operations import CHECKPOINT_LOG
from cnki_mcp.pipeline.models import CoverageEntry
from cnki_mcp.query.compiler import CompiledQuery
from cnki_mcp.rank import Hit

CHECKPOINT_KEYS = (
    "search_id",
    "cache_key",
    "input",
    "plan",
    "refs",
    "hits",
    "coverage",
    "retrieved",
    "pool",
    "enriched",
    "feedback",
    "feedback_done",
    "feedback_refs",
    "feedback_pool",
    "journals",
    "feedback_journals",
    "finished",
    "cursors",
    "lanes",
    "landed",
    "first_seen",
    "hit_keys",
    "local",
    "feedback_beside",
    "overlap_depth",
    "overlap_level",
    "prefetched_journals",
    "closing_steps",
)

RETRIEVAL, FEEDBACK = 0, 1  # the stage part of a candidate's order key


@dataclass(slots=True)
class Channel:
    """One compiled search: its QueryJson `Subject` group(s) and how its hits weigh.

    `subjects` is set when the expression had to be split into several queries whose union is the
    search (query/cnf.py); they run as extra pages of this channel, each with its own lane."""

    id: str
    field: str
    weight: float
    reason: str
    subject: dict[str, Any]
    anchor: str
    fingerprint: str
    subjects: list[dict[str, Any]] = field(default_factory=list)

    @property
    def queries(self) -> int:
        return max(1, len(self.subjects))

    def subject_at(self, lane: int) -> dict[str, Any]:
        return self.subjects[lane] if self.subjects else self.subject

    def to_dict(self) -> dict[str, Any]:
        out = {
            "id": self.id,
            "field": self.field,
            "weight": self.weight,
            "reason": self.reason,
            "subject": self.subject,
            "anchor": self.anchor,
            "fingerprint": self.fingerprint,
        }
        if len(self.subjects) > 1:
            out["subjects"] = self.subjects
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Channel:
        return cls(
            id=data["id"],
            field=data["field"],
            weight=float(data["weight"]),
            reason=data.get("reason", ""),
            subject=data["subject"],
            anchor=data["anchor"],
            fingerprint=data.get("fingerprint", ""),
            subjects=list(data.get("subjects") or []),
        )

    @classmethod
    def compiled(cls, id: str, field: str, weight: float, reason: str, query: CompiledQuery) -> Channel:
        """A channel for a compiled expression (all its queries)."""
        return cls(
            id=id,
            field=field,
            weight=weight,
            reason=reason,
            subject=query.subject,
            anchor=query.anchor,
            fingerprint=query.fingerprint,
            subjects=list(query.subjects) if query.queries > 1 else [],
        )

    def view(self) -> dict[str, Any]:
        return {"id": self.id, "field": self.field, "weight": self.weight, "reason": self.reason}


@dataclass(slots=True)
class Lane:
    """Progress of one query of a split channel (one query = the channel's coverage entry)."""

    pages: int = 0
    rows: int = 0
    total: int | None = None
    exhausted: bool = False
    cursor: str = ""  # `turnpage` of this query's next page

    def to_dict(self) -> dict[str, Any]:
        return {
            "pages": self.pages,
            "rows": self.rows,
            "total": self.total,
            "exhausted": self.exhausted,
            "cursor": self.cursor,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Lane:
        total = data.get("total")
        return cls(
            pages=int(data.get("pages", 0)),
            rows=int(data.get("rows", 0)),
            total=None if total is None else int(total),
            exhausted=bool(data.get("exhausted")),
            cursor=str(data.get("cursor") or ""),
        )



def coverage_entry(channel: Channel) -> CoverageEntry:
    """A channel's coverage before any page of it was read."""
    return CoverageEntry(channel=channel.id, field=channel.field, reason=channel.reason, queries=channel.queries)


@dataclass(slots=True)
class SearchState:
    search_id: str
    cache_key: str
    input: dict[str, Any]
    plan: dict[str, Any]  # {method, concepts, warnings, channels: [Channel dicts], kind, query}
    refs: list[str] = field(default_factory=list)
    hits: dict[str, list[Hit]] = field(default_factory=dict)
    coverage: list[CoverageEntry] = field(default_factory=list)
    retrieved: bool = False
    pool: list[str] = field(default_factory=list)
    enriched: bool = False
    feedback: list[Channel] | None = None
    feedback_done: bool = False
    feedback_refs: list[str] = field(default_factory=list)
    feedback_pool: list[str] = field(default_factory=list)
    # Reading.EXPORT: candidates whose journal page the enrichment (feedback enrichment) decided to
    # read, so a resumed phase finishes that decision before it decides again (pipeline/policy.py)
    journals: list[str] = field(default_factory=list)
    feedback_journals: list[str] = field(default_factory=list)
    finished: bool = False
    # channel id -> the `turnpage` cursor of its next page (the last page's `GridPage.turnpage`),
    # so a search continued in another process asks CNKI for no page twice. Internal only.
    cursors: dict[str, str] = field(default_factory=dict)
    # channel id -> one Lane per query, only for channels split into several queries.
    lanes: dict[str, list[Lane]] = field(default_factory=dict)
    # unit key (channel id, or `channel#lane` for a split channel) -> {"page": n, "grid": GridPage JSON}: pages of the round in progress that were
    # answered before the round ended (a deadline or a crash cut it short); the round resumes with
    # them instead of asking CNKI again. Emptied when the round is merged. Internal only.
    # Checkpoints written before retrieval ran without rounds may hold such pages; they are merged
    # on resume. Never written now.
    landed: dict[str, dict[str, Any]] = field(default_factory=dict)
    # ref -> [stage, page, unit index, row index] of its first sighting in canonical order: `refs`
    # and `feedback_refs` are sorted by it, whatever order the pages arrived in.
    first_seen: dict[str, list[int]] = field(default_factory=dict)
    # "ref|channel" -> [page, unit index] of the hit kept for that channel: the earliest in canonical
    # order (two lanes of a split channel may list one paper), so hits are the same in any order.
    hit_keys: dict[str, list[int]] = field(default_factory=dict)
    # channels answered from the known candidates instead of CNKI (pipeline/policy.py
    # `SubsetChannels.LOCAL`): [{id, field, weight, phrase}], in the order they were decided.
    local: list[dict[str, Any]] = field(default_factory=list)
    # the feedback channels were chosen and asked beside retrieval (pipeline/overlap.py), so the
    # enrichment phase already settled over their candidates
    feedback_beside: bool = False
    # OverlapDepth.PACED: the snapshot's depth in levels, once decided from the pacing met
    # (pipeline/overlap.py); 0 until then. A resumed search keeps it, whatever pacing it meets.
    overlap_depth: int = 0
    # the page level it was decided at: no snapshot before it, as in the search that decided it
    # (levels passed over while no page was timed may have had fewer levels to come than the depth)
    overlap_level: int = 0
    # JournalPrefetch.FIRST_LEVEL: papers whose journal page was read beside the last pages, before
    # any step proposed it (pipeline/overlap.py); the steps treat those journals as unread until
    # a step proposes one of their sources
    prefetched_journals: list[str] = field(default_factory=list)
    # the closing snapshot's steps decided so far (`SearchPolicy.closing_steps`, pipeline/overlap.py):
    # a resumed search takes no more of them than the uninterrupted one
    closing_steps: int = 0

    @property
    def channels(self) -> list[Channel]:
        return [Channel.from_dict(c) for c in self.plan["channels"]]

    @property
    def feedback_ids(self) -> set[str]:
        """The ids of the feedback channels chosen so far."""
        return {c.id for c in self.feedback or ()}

    @property
    def groups(self) -> list[list[str]]:
        return [list(g) for g in self.plan.get("concepts", [])]

    @property
    def structured(self) -> bool:
        return self.plan.get("method") == "structured"

    def lanes_of(self, channel: Channel) -> list[Lane]:
        """The per-query progress of a split channel (created on first use)."""
        lanes = self.lanes.setdefault(channel.id, [])
        while len(lanes) < channel.queries:
            lanes.append(Lane())
        return lanes

    def lanes_by_id(self, channel_id: str, queries: int) -> list[Lane]:
        lanes = self.lanes.setdefault(channel_id, [])
        while len(lanes) < queries:
            lanes.append(Lane())
        return lanes

    def candidates_through(self, page: int) -> int:
        """Distinct retrieval candidates first seen on pages <= `page` (any channel)."""
        return sum(1 for key in self.first_seen.values() if key[0] == RETRIEVAL and key[1] <= page)

    def apply(self, event: dict[str, Any]) -> None:
        """Merge one event of `page_event` / `failed_event` (live, or replayed from the log)."""
        if event.get("e") == "failed":
            entry = self.coverage_of(event["ch"])
            entry.failed = True
            entry.error = event.get("error")
            return
        if event.get("e") == "reopened":
            self._reopen(event["chs"])
            return
        if event.get("e") == "enrich":
            pool = {
                "feedback_pool": self.feedback_pool,
                "journals": self.journals,
                "feedback_journals": self.feedback_journals,
                "prefetched_journals": self.prefetched_journals,
            }.get(event["pool"], self.pool)
            pool.extend(r for r in event["refs"] if r not in pool)
            if event.get("closing"):
                self.closing_steps += 1
            return
        if event.get("e") == "closing":  # the count as its own entry (checkpoints before 51b63ce)
            self.closing_steps += 1
            return
        if event.get("e") == "depth":
            self.overlap_depth = int(event["levels"])
            self.overlap_level = int(event.get("at") or 0)
            return
        if event.get("e") == "local":
            self.coverage_of(event["ch"]).stopped = "local"
            if all(x["id"] != event["ch"] for x in self.local):
                self.local.append(
                    {
                        "id": event["ch"],
                        "field": event["field"],
                        "weight": event["w"],
                        "phrase": event["phrase"],
                    }
                )
            return
        self._apply_page(event)

    def _apply_page(self, ev: dict[str, Any]) -> None:
        cid = ev["ch"]
        entry = self.coverage_of(cid)
        lane = self.lanes_by_id(cid, ev["queries"])[ev["lane"]] if ev["queries"] > 1 else None
        seen_rows = lane.rows if lane is not None else entry.rows
        stage, page = int(ev["stage"]), int(ev["page"])
        resort = False
        for index, ref in ev["refs"]:
            key = [stage, page, int(ev["unit"]), int(index)]
            old = self.first_seen.get(ref)
            if old is None:
                self.first_seen[ref] = key
                self.refs.append(ref)
                if stage == FEEDBACK:
                    self.feedback_refs.append(ref)
                resort = True
            elif key < old:
                self.first_seen[ref] = key
                if old[0] == FEEDBACK and stage != FEEDBACK:
                    # a feedback page landed first (pipeline/overlap.py): a retrieval candidate after all
                    self.feedback_refs.remove(ref)
                resort = True
            self._hit(ref, Hit(cid, seen_rows + int(index) + 1, float(ev["w"])), [page, int(ev["unit"])])
        if resort:
            self._sort_refs()
        rows = int(ev["rows"])
        entry.pages += 1
        entry.rows += rows
        turnpage = ev.get("turnpage") or ""
        if lane is None:
            if turnpage:
                self.cursors[cid] = turnpage
            else:
                self.cursors.pop(cid, None)
            entry.total = ev.get("total")
            entry.exhausted = bool(ev["exhausted"])
            return
        lane.cursor = turnpage
        lane.pages += 1
        lane.rows += rows
        lane.total = ev.get("total")
        lane.exhausted = bool(ev["exhausted"])
        lanes = self.lanes[cid]
        totals = [x.total for x in lanes if x.total is not None]
        entry.total = sum(totals) if totals else None  # sum over the queries; they may overlap
        entry.exhausted = all(x.exhausted for x in lanes)

    def _hit(self, ref: str, hit: Hit, key: list[int]) -> None:
        """Keep one hit per channel, the earliest in canonical order (two lanes of a split channel
        may list the paper), and a paper's hits in that order, as a search waiting for each round
        would have added them."""
        hits = self.hits.setdefault(ref, [])
        keys = self.hit_keys
        at = next((i for i, h in enumerate(hits) if h.channel == hit.channel), None)
        if at is not None:
            kept = keys.get(f"{ref}|{hit.channel}")
            if kept is not None and kept <= key:
                return
            del hits[at]
        keys[f"{ref}|{hit.channel}"] = key
        hits.append(hit)
        if len(hits) > 1:
            hits.sort(key=lambda h: keys.get(f"{ref}|{h.channel}", [0, 0]))

    def _sort_refs(self) -> None:
        def key(ref: str) -> list[int]:
            return self.first_seen.get(ref, [9, 0, 0, 0])

        self.refs.sort(key=key)
        self.feedback_refs.sort(key=key)

    def failed_channels(self) -> list[str]:
        """The channels a non-fatal error closed (`failed_event`), in coverage order."""
        return [c.channel for c in self.coverage if c.failed]

    def _reopen(self, channel_ids: list[str]) -> None:
        """Open closed channels again, and the phases from theirs on: retrieval (and what follows
        it) for a retrieval channel, the feedback phase for a feedback channel. A channel keeps
        its pages and cursor, so it goes on from the page that failed."""
        for cid in channel_ids:
            entry = self.coverage_of(cid)
            entry.failed = False
            entry.error = None
        if any(cid not in self.feedback_ids for cid in channel_ids):
            self.retrieved = self.enriched = False
        if channel_ids:
            self.feedback_done = self.feedback_done and all(cid not in self.feedback_ids for cid in channel_ids)
            self.finished = False

    def ensure_coverage(self) -> None:
        """One coverage entry per retrieval channel, before any page of theirs is recorded: the
        first checkpoint is written before retrieval starts, and the page events appended to it
        name these channels (a continued search replays them onto these entries)."""
        if not self.coverage:
            self.coverage = [coverage_entry(c) for c in self.channels]

    def coverage_of(self, channel_id: str) -> CoverageEntry:
        for entry in self.coverage:
            if entry.channel == channel_id:
                return entry
        raise KeyError(channel_id)

    def to_json(self) -> dict[str, Any]:
        return {
            "search_id": self.search_id,
            "cache_key": self.cache_key,
            "input": self.input,
            "plan": self.plan,
            "refs": list(self.refs),
            "hits": {ref: [h.to_dict() for h in hs] for ref, hs in self.hits.items()},
            "coverage": [c.model_dump(mode="json") for c in self.coverage],
            "retrieved": self.retrieved,
            "pool": list(self.pool),
            "enriched": self.enriched,
            "feedback": [c.to_dict() for c in self.feedback] if self.feedback is not None else None,
            "feedback_done": self.feedback_done,
            "feedback_refs": list(self.feedback_refs),
            "feedback_pool": list(self.feedback_pool),
            "journals": list(self.journals),
            "feedback_journals": list(self.feedback_journals),
            "finished": self.finished,
            "cursors": dict(self.cursors),
            "lanes": {cid: [lane.to_dict() for lane in lanes] for cid, lanes in self.lanes.items()},
            "landed": dict(self.landed),
            "first_seen": {ref: list(k) for ref, k in self.first_seen.items()},
            "hit_keys": {k: list(v) for k, v in self.hit_keys.items()},
            "local": [dict(x) for x in self.local],
            "feedback_beside": self.feedback_beside,
            "overlap_depth": self.overlap_depth,
            "overlap_level": self.overlap_level,
            "prefetched_journals": list(self.prefetched_journals),
            "closing_steps": self.closing_steps,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SearchState:
        """The state of a full checkpoint with the events appended to it replayed in order."""
        st = cls._base(data)
        st.ensure_coverage()  # a checkpoint cut before the engine's first full one has none
        if not st.first_seen:  # a checkpoint written before canonical order: keep its order
            fb = set(st.feedback_refs)
            st.first_seen = {r: [FEEDBACK if r in fb else RETRIEVAL, 0, 0, i] for i, r in enumerate(st.refs)}
        for event in data.get(CHECKPOINT_LOG) or []:
            st.apply(event)
        return st

    @classmethod
    def _base(cls, data: dict[str, Any]) -> SearchState:
        feedback = data.get("feedback")
        return cls(
            search_id=data["search_id"],
            cache_key=data.get("cache_key", ""),
            input=data["input"],
            plan=data["plan"],
            refs=list(data.get("refs", [])),
            hits={ref: [Hit.from_dict(h) for h in hs] for ref, hs in data.get("hits", {}).items()},
            coverage=[CoverageEntry.model_validate(c) for c in data.get("coverage", [])],
            retrieved=bool(data.get("retrieved")),
            pool=list(data.get("pool") or []),
            enriched=bool(data.get("enriched")),
            feedback=[Channel.from_dict(c) for c in feedback] if feedback is not None else None,
            feedback_done=bool(data.get("feedback_done")),
            feedback_refs=list(data.get("feedback_refs") or []),
            feedback_pool=list(data.get("feedback_pool") or []),
            journals=list(data.get("journals") or []),
            feedback_journals=list(data.get("feedback_journals") or []),
            finished=bool(data.get("finished")),
            cursors={str(k): str(v) for k, v in (data.get("cursors") or {}).items() if v},
            lanes={
                str(cid): [Lane.from_dict(x) for x in lanes]
                for cid, lanes in (data.get("lanes") or {}).items()
            },
            landed={str(k): dict(v) for k, v in (data.get("landed") or {}).items()},
            first_seen={str(k): [int(x) for x in v] for k, v in (data.get("first_seen") or {}).items()},
            hit_keys={str(k): [int(x) for x in v] for k, v in (data.get("hit_keys") or {}).items()},
            local=[dict(x) for x in (data.get("local") or [])],
            feedback_beside=bool(data.get("feedback_beside")),
            overlap_depth=int(data.get("overlap_depth") or 0),
            overlap_level=int(data.get("overlap_level") or 0),
            prefetched_journals=list(data.get("prefetched_journals") or []),
            closing_steps=int(data.get("closing_steps") or 0),
        )


def page_event(
    channel: Channel,
    lane: int,
    unit: int,
    stage: int,
    page: int,
    refs: list[tuple[int, str]],
    rows: int,
    total: int | None,
    exhausted: bool,
    turnpage: str | None,
) -> dict[str, Any]:
    """One answered page as the state merges it and the checkpoint log stores it: the row index and
    record ref of each kept row (rows outside the year range are dropped but keep their place)."""
    return {
        "e": "page",
        "ch": channel.id,
        "queries": channel.queries,
        "lane": lane,
        "unit": unit,
        "stage": stage,
        "page": page,
        "w": channel.weight,
        "refs": [[i, r] for i, r in refs],
        "rows": rows,
        "total": total,
        "exhausted": exhausted,
        "turnpage": turnpage or "",
    }


def enrich_event(pool: str, refs: list[str], *, closing: bool = False) -> dict[str, Any]:
    """A batch of candidates the boundary enrichment decided to read (pipeline/policy.py), joining
    `pool` or `feedback_pool` (abstracts), `journals` / `feedback_journals` (journal pages under
    Reading.EXPORT) or `prefetched_journals` (JournalPrefetch.FIRST_LEVEL): a resumed phase reads them
    again only where still missing. `closing`: the batch is an abstract step of the closing snapshot
    (`SearchPolicy.closing_steps`), counted with the batch in the same entry so that no cut
    separates the count from the step."""
    event: dict[str, Any] = {"e": "enrich", "pool": pool, "refs": list(refs)}
    if closing:
        event["closing"] = 1
    return event


def depth_event(levels: int, reads: int | None = None, at: int = 0) -> dict[str, Any]:
    """The snapshot's depth decided from the pacing met (OverlapDepth.PACED, pipeline/overlap.py)
    at page level `at` (no snapshot before it), with the reads it was sized for (for the record)."""
    event: dict[str, Any] = {"e": "depth", "levels": levels}
    if reads is not None:
        event["reads"] = reads
    if at:
        event["at"] = at
    return event


def local_event(channel: Channel, phrase: str) -> dict[str, Any]:
    """A channel answered from the known candidates instead of CNKI (pipeline/policy.py)."""
    return {"e": "local", "ch": channel.id, "field": channel.field, "w": channel.weight, "phrase": phrase}


def failed_event(channel_id: str, error: str) -> dict[str, Any]:
    return {"e": "failed", "ch": channel_id, "error": error}


def reopened_event(channel_ids: list[str]) -> dict[str, Any]:
    """A continued search retries the channels an error had closed (`SearchState._reopen`)."""
    return {"e": "reopened", "chs": list(channel_ids)}
