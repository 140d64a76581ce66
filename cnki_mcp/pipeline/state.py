"""The resumable search checkpoint (site-rules.md §3.4) and the channels it searches.

Every field is JSON (it is stored with the operation); `continue` rebuilds the state from it and
repeats no request: finished rounds are never refetched, details and journals already known are
read from the store."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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
    "finished",
    "cursors",
    "lanes",
    "landed",
    "local",
    "subject_retried",
)


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
    finished: bool = False
    # channel id -> the `turnpage` cursor of its next page (the last page's `GridPage.turnpage`),
    # so a search continued in another process asks CNKI for no page twice. Internal only.
    cursors: dict[str, str] = field(default_factory=dict)
    # channel id -> one Lane per query, only for channels split into several queries.
    lanes: dict[str, list[Lane]] = field(default_factory=dict)
    # unit key (channel id, or `channel#lane` for a split channel) -> {"page": n, "grid": GridPage JSON}: pages of the round in progress that were
    # answered before the round ended (a deadline or a crash cut it short); the round resumes with
    # them instead of asking CNKI again. Emptied when the round is merged. Internal only.
    landed: dict[str, dict[str, Any]] = field(default_factory=dict)
    # channels answered from the known candidates instead of CNKI (pipeline/policy.py
    # `SubsetChannels.LOCAL`): [{id, field, weight, phrase}], in the order they were decided.
    local: list[dict[str, Any]] = field(default_factory=list)
    # the subject channel's first page, asked alone, was empty and is asked again with the others
    subject_retried: bool = False

    @property
    def channels(self) -> list[Channel]:
        return [Channel.from_dict(c) for c in self.plan["channels"]]

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
            "finished": self.finished,
            "cursors": dict(self.cursors),
            "lanes": {cid: [lane.to_dict() for lane in lanes] for cid, lanes in self.lanes.items()},
            "landed": dict(self.landed),
            "local": [dict(x) for x in self.local],
            "subject_retried": self.subject_retried,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SearchState:
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
            finished=bool(data.get("finished")),
            cursors={str(k): str(v) for k, v in (data.get("cursors") or {}).items() if v},
            lanes={
                str(cid): [Lane.from_dict(x) for x in lanes]
                for cid, lanes in (data.get("lanes") or {}).items()
            },
            landed={str(k): dict(v) for k, v in (data.get("landed") or {}).items()},
            local=[dict(x) for x in (data.get("local") or [])],
            subject_retried=bool(data.get("subject_retried")),
        )
