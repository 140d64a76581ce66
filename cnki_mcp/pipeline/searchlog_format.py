"""The `SearchLog` model and its pure formatters (Markdown, CSV, JSON), and the readable form of a
QueryJson Subject group: model in, text out; no store, clock or network (DESIGN.md "Search log")."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cnki_mcp.cite.tabular import md_escape
from cnki_mcp.query.expr import FIELD_CODES, FIELD_LABELS

LogFormat = Literal["markdown", "csv", "json"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PageEntry(_Model):
    query: int = Field(1, description="split query number (1 unless the channel was split)")
    page: int
    at: datetime
    rows: int = Field(description="rows CNKI listed on the page")
    kept: int = Field(description="rows inside the year range")
    total: int | None = Field(None, description="total CNKI reported")
    attempts: int = 1
    merged: bool = True


class ChannelLog(_Model):
    id: str
    field: str
    reason: str = ""
    queries: list[str] = Field(default_factory=list, description="each query as typed into the form")
    query_json: list[dict[str, Any]] = Field(
        default_factory=list, description="QueryJson Subject group(s) as sent"
    )
    pages_read: int = 0
    rows: int = 0
    total_reported: int | None = None
    exhausted: bool = False
    error: str | None = None
    answered_locally: bool = Field(
        False,
        description="not sent to CNKI: a subset of the subject channel, whose first page listed every "
        "result; its hits were computed from those results (DESIGN.md \"Request policies\")",
    )
    pages: list[PageEntry] = Field(default_factory=list)


class PrismaFlow(_Model):
    identified: int = Field(description="rows listed on every page read, all channels")
    outside_years: int = Field(description="rows outside the year range, removed")
    duplicates: int = Field(description="rows of a paper already found, removed")
    screened: int = Field(description="distinct papers ranked")
    excluded: int
    excluded_by_reason: dict[str, int] = Field(default_factory=dict)
    selected: int
    page_log: bool = Field(
        True, description="false: per-page log not kept (older search); counts from coverage"
    )


class SearchLog(_Model):
    search_id: str
    status: str
    kind: Literal["search", "structured_search"]
    question: str
    created_at: datetime
    finished_at: datetime
    plan_method: str
    plan_method_note: str
    concepts: list[list[str]] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    parameters: dict[str, Any] = Field(default_factory=dict)
    channels: list[ChannelLog] = Field(default_factory=list)
    requests: int = 0
    abstracts_read: int = Field(
        0, description="candidates whose abstract and keywords this search read: a detail page or CNKI's batch export"
    )
    journals_read: int = Field(0, description="journal pages this search read (sources of its candidates)")
    abstracts_known: int = Field(0, description="candidates with an abstract known, earlier searches' reads included")
    journals_known: int = Field(0, description="sources of the candidates with a journal page kept, earlier reads included")
    selection_rule: str = ""
    prisma: PrismaFlow
    unmerged_pages: int = Field(0, description="pages read but not merged (the search stopped first)")
    year_filter: dict[str, Any] | None = Field(
        None, description="the 发表时间 child of QueryJson's ControlGroup, sent with every page (None: no year range)"
    )



_LABELS: dict[str, str] = {code: FIELD_LABELS[f] for f, code in FIELD_CODES.items()}
_MATCH: dict[str, str] = {"TOPRANK": "", "FUZZY": "模糊", "DEFAULT": "精确"}
_LOGIC: dict[int, str] = {0: "AND", 1: "OR", 2: "NOT"}
_SORTS: dict[str, str] = {
    "relevance": "相关度",
    "date_desc": "发表时间",
    "cited_desc": "被引",
    "downloaded_desc": "下载",
}


def _logic(value: Any) -> str:
    if isinstance(value, str) and value.upper() in {"AND", "OR", "NOT"}:
        return value.upper()
    try:
        return _LOGIC.get(int(value), "AND")
    except (TypeError, ValueError):
        return "AND"


def _row(item: dict[str, Any]) -> str:
    code = str(item.get("Field") or "")
    match = _MATCH.get(str(item.get("Operator") or ""), "")
    label = _LABELS.get(code, code) + (f"[{match}]" if match else "")
    return f"{label}: {item.get('Value', '')}"


def _level(group: dict[str, Any]) -> str:
    """Items then ChildItems, combined left to right as CNKI does (the first element's logic is
    ignored); a child group of several elements is parenthesised when it has siblings."""
    parts: list[tuple[str, str, bool]] = [
        (_logic(i.get("Logic")), _row(i), False) for i in group.get("Items") or [] if i.get("Value")
    ]
    for child in group.get("ChildItems") or []:
        text = _level(child)
        if text:
            parts.append((_logic(child.get("Logic")), text, not _single(child)))
    out = ""
    for n, (logic, text, compound) in enumerate(parts):
        text = f"({text})" if compound and len(parts) > 1 else text
        out = text if n == 0 else f"{out} {logic} {text}"
    return out


def _single(group: dict[str, Any]) -> bool:
    return len([i for i in group.get("Items") or [] if i.get("Value")]) + len(group.get("ChildItems") or []) == 1


def render_subject(subject: dict[str, Any]) -> str:
    """A Subject group as one line: `主题: 'a' + 'b' AND 篇名[模糊]: c OR (...)`."""
    return _level(subject)


def _years(p: dict[str, Any]) -> str:
    y0, y1 = p.get("year_from"), p.get("year_to")
    return "any" if not (y0 or y1) else f"{y0 or ''}–{y1 or ''}"


def _year_step(p: dict[str, Any]) -> str:
    """The rerun instruction for the year range: nothing to set when the search had none."""
    return "leave 发表时间 empty" if not (p.get("year_from") or p.get("year_to")) else f"set 发表时间 to {_years(p)}"


def code_span(text: str) -> str:
    """`text` as a Markdown code span shown exactly: its fence is one backtick longer than the
    longest run inside (a query holding `调整` closed a one-backtick span there), padded with a
    space when the text starts or ends with a backtick."""
    runs = [len(r) for r in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def to_markdown(log: SearchLog) -> str:
    p = log.parameters
    f = log.prisma
    lines = [
        f"# Search log {log.search_id}",
        "",
        f"- Database: CNKI (中国知网) advanced search (高级检索), {log.kind}",
        f"- Question: {md_escape(log.question)}",  # the researcher's words, not Markdown
        f"- Run: {log.created_at.isoformat(timespec='seconds')} – {log.finished_at.isoformat(timespec='seconds')} (UTC), status {log.status}",
        f"- Plan: {log.plan_method} — {log.plan_method_note}",
    ]
    if log.concepts:
        groups = " AND ".join("(" + " OR ".join(md_escape(t) for t in g) + ")" for g in log.concepts)
        lines.append(f"- Concepts: {groups}")
    lines += [
        f"- Years: {_years(p)}; sort: {p.get('sort')} ({_SORTS.get(str(p.get('sort')), '')}); "
        f"up to {p.get('max_pages')} pages per channel; candidate target {p.get('candidate_target')}; "
        f"metadata {p.get('metadata')}; mode {p.get('mode')}",
        f"- Requests to CNKI: {log.requests}; abstracts read by this search (detail pages or batch export): "
        f"{log.abstracts_read} ({log.abstracts_known} candidates with an abstract known, earlier searches' reads included); "
        f"journal pages read: {log.journals_read} ({log.journals_known} sources with a journal page kept)",
        f"- Selection rule: {log.selection_rule}",
    ]
    for w in log.warnings:
        lines.append(f"- Warning: {md_escape(w)}")
    lines += [
        "",
        "To rerun by hand: open CNKI's advanced search (高级检索) with the form's default database scope, "
        "type each query below into the rows as written (`+` joins alternatives inside one box; rows "
        f"combine left to right), {_year_step(p)}, sort by {_SORTS.get(str(p.get('sort')), p.get('sort'))} "
        "and show 50 rows per page; the totals should match the CNKI totals below, growing only as CNKI "
        "indexes new papers.",
        "",
        "## Channels (as sent)",
        "",
    ]
    for ch in log.channels:
        state = "exhausted" if ch.exhausted else ("failed: " + ch.error if ch.error else "not exhausted")
        lines.append(f"### {ch.id} — {ch.field}" + (f" ({ch.reason})" if ch.reason else ""))
        lines.append("")
        for i, q in enumerate(ch.queries, start=1):
            lines.append(f"- Query{f' {i}' if len(ch.queries) > 1 else ''}: {code_span(q)}")
        if ch.answered_locally:
            lines.append(
                "- Not sent to CNKI: every paper it can match is in the subject channel's results, whose "
                "first page listed them all; its hits were computed from those results. To rerun it by "
                "hand, search the query above on CNKI."
            )
        else:
            lines.append(
                f"- Pages read {ch.pages_read}, rows {ch.rows}, CNKI reported total "
                f"{'unknown (no page answered)' if ch.total_reported is None else ch.total_reported}, {state}"
            )
        if ch.pages:
            lines += [
                "",
                "| query | page | time (UTC) | rows | in year range | CNKI total | attempts | merged |",
                "|---|---|---|---|---|---|---|---|",
            ]
            for pg in ch.pages:
                lines.append(
                    f"| {pg.query} | {pg.page} | {pg.at.isoformat(timespec='seconds')} | {pg.rows} | {pg.kept} "
                    f"| {'' if pg.total is None else pg.total} | {pg.attempts} | {'yes' if pg.merged else 'no'} |"
                )
        lines.append("")
    lines += [
        "## Flow (PRISMA-style)",
        "",
        f"- Records identified (rows listed on all pages read): {f.identified}",
        f"- Removed outside the year range: {f.outside_years}",
        f"- Removed duplicates (same paper from another channel or page): {f.duplicates}",
        f"- Records screened (distinct papers ranked): {f.screened}",
        f"- Excluded: {f.excluded}"
        + ("".join(f"; {k} {v}" for k, v in f.excluded_by_reason.items()) if f.excluded_by_reason else ""),
        f"- Selected: {f.selected}",
    ]
    if not f.page_log:
        lines.append("- Note: per-page log not kept for this search; rows counted from its coverage.")
    if log.unmerged_pages:
        lines.append(
            f"- Note: {log.unmerged_pages} page(s) were read but not merged (the search stopped first)."
        )
    lines += ["", "## QueryJson (exact)", "", "```json"]
    lines.append(json.dumps({c.id: c.query_json for c in log.channels}, ensure_ascii=False, indent=1))
    lines += ["```"]
    if log.year_filter is not None:
        lines += ["", "Every page also carried this 发表时间 filter in QueryJson's ControlGroup:", "", "```json"]
        lines.append(json.dumps(log.year_filter, ensure_ascii=False, indent=1))
        lines += ["```"]
    lines.append("")
    return "\n".join(lines)


CSV_HEADER = (
    "section",
    "channel",
    "field",
    "query",
    "page",
    "time_utc",
    "rows",
    "in_year_range",
    "cnki_total",
    "attempts",
    "merged",
    "value",
)


def to_csv(log: SearchLog) -> str:
    """One row per page read, then one row per flow step (`section` = page | flow | meta; `local`: a
    channel answered from the subject channel's results, not sent to CNKI)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_HEADER)
    meta = {
        "search_id": log.search_id,
        "question": log.question,
        "status": log.status,
        "plan_method": log.plan_method,
        "years": _years(log.parameters),
        "sort": log.parameters.get("sort"),
        "requests": log.requests,
        "abstracts_read": log.abstracts_read,
        "abstracts_known": log.abstracts_known,
        "selection_rule": log.selection_rule,
    }
    for key, value in meta.items():
        w.writerow(("meta", "", key, "", "", "", "", "", "", "", "", _cell(value)))
    for ch in log.channels:
        if ch.answered_locally:
            q = ch.queries[0] if ch.queries else ""
            w.writerow(("local", ch.id, ch.field, _cell(q), "", "", "", "", "", "", "", "answered locally"))
    for ch in log.channels:
        for pg in ch.pages:
            q = ch.queries[pg.query - 1] if pg.query - 1 < len(ch.queries) else ""
            w.writerow(
                (
                    "page",
                    ch.id,
                    ch.field,
                    _cell(q),
                    pg.page,
                    pg.at.isoformat(timespec="seconds"),
                    pg.rows,
                    pg.kept,
                    "" if pg.total is None else pg.total,
                    pg.attempts,
                    int(pg.merged),
                    "",
                )
            )
        if not ch.pages:
            w.writerow(
                (
                    "page",
                    ch.id,
                    ch.field,
                    _cell(ch.queries[0] if ch.queries else ""),
                    "",
                    "",
                    ch.rows,
                    "",
                    "" if ch.total_reported is None else ch.total_reported,
                    "",
                    "",
                    "",
                )
            )
    f = log.prisma
    for step, value in (
        ("identified", f.identified),
        ("outside_years", f.outside_years),
        ("duplicates", f.duplicates),
        ("screened", f.screened),
        ("excluded", f.excluded),
        *((f"excluded:{k}", v) for k, v in f.excluded_by_reason.items()),
        ("selected", f.selected),
    ):
        w.writerow(("flow", "", step, "", "", "", "", "", "", "", "", value))
    return buf.getvalue()


def _cell(value: Any) -> str:
    """A CSV cell a spreadsheet will not run as a formula (text starting = + - @ gets a quote)."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def to_json(log: SearchLog) -> str:
    return log.model_dump_json(indent=1)


def format_log(log: SearchLog, fmt: LogFormat) -> str:
    if fmt == "csv":
        return to_csv(log)
    if fmt == "json":
        return to_json(log)
    return to_markdown(log)
