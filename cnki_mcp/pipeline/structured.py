"""The structured search (site-rules.md §4): the caller's expression tree compiled to one `native`
channel; CNKI's order is kept, nothing is re-ranked, no feedback, list data only by default."""

from __future__ import annotations

import re
from typing import Any

from cnki_mcp.pipeline.models import CoverageEntry, StructuredSearchInput
from cnki_mcp.pipeline.searchlog_format import render_subject
from cnki_mcp.pipeline.state import Channel
from cnki_mcp.query.compiler import compile_expression
from cnki_mcp.query.expr import FIELD_CODES, Field, parse_expression, unquote
from cnki_mcp.script import has_traditional, simplified

NATIVE_REASON = "知网原生条件与排序"
_QUERY_HEAD = "结构化检索："


def structured_channel(inp: StructuredSearchInput) -> Channel:
    """Parse and compile the expression (coded INVALID_* / QUERY_* errors) into the channel."""
    compiled = compile_expression(parse_expression(inp.expression))
    return Channel.compiled("native", "expression", 1.0, NATIVE_REASON, compiled)


def structured_params(inp: StructuredSearchInput) -> dict[str, Any]:
    o = inp.options
    channel = structured_channel(inp)
    # named as the search log writes its queries (search log, watch list); the cache key holds the
    # channel's fingerprint
    text = " | ".join(render_subject(s) for s in channel.subjects or [channel.subject])
    return {
        "query": f"{_QUERY_HEAD}{text}",
        "mode": "precise",
        "limit": inp.limit,
        "year_from": inp.year_from or None,
        "year_to": inp.year_to or None,
        "candidate_target": o.candidate_target or inp.limit,
        "max_pages": o.max_pages,
        "metadata": o.metadata,
        "sort": inp.effective_sort.value,
    }


def structured_plan() -> dict[str, Any]:
    return {"method": "structured", "concepts": [], "warnings": []}


def rows_left_warning(coverage: list[CoverageEntry], params: dict[str, Any]) -> str | None:
    """A structured search is answered in CNKI's order up to its target (`limit` unless
    `candidate_target` is set) and `max_pages`: when CNKI lists more rows than were read, the
    answer says how many and which option reads more; its counts and `search_results` hold only
    the rows read, so without this a client takes them for everything CNKI has."""
    left = [c for c in coverage if not c.exhausted and not c.failed and c.total is not None and c.total > c.rows]
    if not left:
        return None
    total, rows = sum(c.total or 0 for c in left), sum(c.rows for c in left)
    return (
        f"知网共列出 {total} 条，按 candidate_target={params.get('candidate_target')}、"
        f"max_pages={params.get('max_pages')} 只读取了前 {rows} 条；需要更多时提高 options.candidate_target"
        "（最多 3000）或 options.max_pages 重新检索"
    )


def empty_years_warning(coverage: list[CoverageEntry], params: dict[str, Any]) -> str | None:
    """A structured search CNKI answered with no row while years were set: the years may be why
    (a range in the future, or before the topic existed), as the research search's advice says."""
    year_from, year_to = params.get("year_from"), params.get("year_to")
    if not (year_from or year_to) or not coverage:
        return None
    if any(c.failed or c.rows or not c.exhausted for c in coverage):
        return None
    span = f"{year_from or ''}–{year_to or ''}"
    return f"知网在年份 {span} 内没有符合条件的文献：年份限定可能是原因，必要时放宽或去掉 year_from/year_to 重新检索"


def traditional_warning(coverage: list[CoverageEntry], params: dict[str, Any]) -> str | None:
    """A structured search written in traditional characters that CNKI answered with no row: its
    records are in simplified characters, so the answer names the simplified spelling to search
    (the expression's values are the caller's literals and are sent as written)."""
    query = str(params.get("query") or "")
    if not coverage or any(c.failed or c.rows or not c.exhausted for c in coverage) or not has_traditional(query):
        return None
    return (
        f"检索词含繁体字，知网按简体字收录，没有结果：请改用简体字重新检索（{simplified(query.removeprefix(_QUERY_HEAD))}）"
    )


_AUTHOR_CODES = frozenset(FIELD_CODES[f] for f in (Field.AUTHORS, Field.FIRST_AUTHOR, Field.CORRESPONDING_AUTHOR))
_ROMANISED = re.compile(r"[A-Za-z][A-Za-z'’\-]*(?:[ ,.]+[A-Za-z][A-Za-z'’\-]*)+\.?")


def _author_values(subject: Any) -> list[str]:
    """The values of the author conditions (作者, 第一作者, 通讯作者) of a QueryJson Subject group."""
    if isinstance(subject, dict):
        own = [unquote(str(subject.get("Value") or ""))] if subject.get("Field") in _AUTHOR_CODES else []
        return own + [v for value in subject.values() for v in _author_values(value)]
    if isinstance(subject, list):
        return [v for item in subject for v in _author_values(item)]
    return []


def romanised_author_warning(coverage: list[CoverageEntry], subjects: list[dict[str, Any]]) -> str | None:
    """A structured search for an author written in Latin letters (`Jiang Yuxin`, `ZHANG S.`) that
    CNKI answered with no row: CNKI lists the authors of Chinese papers in Chinese characters (a
    pinyin name finds foreign-language papers and the few listing an English name), so the answer
    says to search the Han name."""
    if not coverage or any(c.failed or c.rows or not c.exhausted for c in coverage):
        return None
    names = [v for v in dict.fromkeys(v for s in subjects for v in _author_values(s)) if _ROMANISED.fullmatch(v.strip())]
    if not names:
        return None
    return (
        f"没有结果：知网的中文文献多以汉字收录作者姓名，拼音或英文写法（{'、'.join(names)}）常常检索不到，请改用汉字姓名检索"
        "（不知道汉字时，可先用 search 按主题找到其论文，从 authors 中取）"
    )


def structured_warnings(
    coverage: list[CoverageEntry], params: dict[str, Any], channels: list[Channel] | None = None
) -> list[str]:
    """What a completed structured search says beyond its rows (`rows_left_warning`,
    `empty_years_warning`, `traditional_warning`, `romanised_author_warning` for its channels)."""
    subjects = [s for c in channels or [] for s in c.subjects or [c.subject]]
    found = (rows_left_warning(coverage, params), empty_years_warning(coverage, params))
    named = (traditional_warning(coverage, params), romanised_author_warning(coverage, subjects))
    return [w for w in (*found, *named) if w]
