"""What a search pages and how it is keyed: a channel's paging units (the channel, or each lane of
a split channel), their coverage entries, the plan as the client sees it, and the cache key of a
research search (site-rules.md §3.8)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cnki_mcp.pipeline.enrich import PARSER_VERSION
from cnki_mcp.pipeline.models import CoverageEntry, PlanView
from cnki_mcp.pipeline.state import Channel, coverage_entry


def fingerprint(parts: Sequence[Any]) -> str:
    text = json.dumps(list(parts), ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def cache_key(params: dict[str, Any], channels: Sequence[Channel]) -> str:
    """site-rules.md §3.8: [query, mode, year_from, year_to, candidate_target, max_pages, metadata, sort,
    plan channels, parser version]."""
    return fingerprint(
        [
            params["query"],
            params["mode"],
            params.get("year_from"),
            params.get("year_to"),
            params["candidate_target"],
            params["max_pages"],
            params["metadata"],
            params["sort"],
            [[c.id, c.weight, c.fingerprint] for c in channels],
            PARSER_VERSION,
        ]
    )


@dataclass(frozen=True, slots=True)
class Unit:
    """One query of a channel: the channel itself, or one lane of a split channel."""

    channel: Channel
    lane: int = 0


def units(channels: Sequence[Channel]) -> list[Unit]:
    return [Unit(c, j) for c in channels for j in range(c.queries)]


def coverage(channel: Channel) -> CoverageEntry:
    return coverage_entry(channel)


def plan_view(plan: dict[str, Any], channels: Sequence[Channel]) -> PlanView:
    return PlanView(
        method=plan["method"],
        concepts=plan.get("concepts", []),
        channels=[c.view() for c in channels],  # type: ignore[misc]
        warnings=plan.get("warnings", []),
    )
