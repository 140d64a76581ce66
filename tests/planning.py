"""The raw-question planner as the planning tests call it (DESIGN.md §Question planning): one
segmenter for the session, the year fixed at 2026."""

from __future__ import annotations

from cnki_mcp.query.plan import plan_question
from cnki_mcp.query.segment import default_segmenter

CUT = default_segmenter()


def planned_groups(question: str) -> list[list[str]]:
    """The concept groups (each a list of alternatives) the question is planned into."""
    return plan_question(question, now_year=2026, cut=CUT).groups


def planned_terms(question: str) -> set[str]:
    """Every term of every group."""
    return {t for g in planned_groups(question) for t in g}
