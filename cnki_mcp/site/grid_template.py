"""The captured grid request template and its rewrite (site-rules.md §1.2/§1.3): parse the form the real
AdvSearch page posted, then rebuild it for any subject, year range, sort and page. Pure: no I/O."""

from __future__ import annotations

import copy
import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from cnki_mcp.errors import QueryTemplateUnsupported
from cnki_mcp.query.compiler import year_filter
from cnki_mcp.query.expr import quote_value
from cnki_mcp.site.backend import SORT_FIELDS, GridRequest

CURSOR_CACHE_LIMIT = 2000


@dataclass(frozen=True, slots=True)
class GridTemplate:
    """The grid POST as the page sent it: its URL without the query string and its form fields
    in order. `query_json` is the parsed QueryJson (never mutated; rewrites deep-copy it)."""

    url: str
    fields: tuple[tuple[str, str], ...]
    query_json: dict[str, Any]

    @property
    def has_page_size(self) -> bool:
        return any(k == "pageSize" for k, _ in self.fields)


def _groups(query_json: Any) -> list[Any]:
    node = query_json.get("QNode") if isinstance(query_json, dict) else None
    groups = node.get("QGroup") if isinstance(node, dict) else None
    if not isinstance(groups, list):
        raise QueryTemplateUnsupported("检索请求没有 QNode.QGroup", reason="no QNode.QGroup")
    if any(not isinstance(g, dict) for g in groups):
        raise QueryTemplateUnsupported("查询分组形状变化", reason="QGroup element is not an object")
    return groups


def _subject_index(groups: list[dict[str, Any]]) -> int:
    for i, group in enumerate(groups):
        if group.get("Key") == "Subject":
            return i
    raise QueryTemplateUnsupported("检索请求没有 Subject 分组", reason="no Subject group")


def parse_template(url: str, post_data: str | None) -> GridTemplate:
    """The template from a captured `/brief/grid` POST. QUERY_TEMPLATE_UNSUPPORTED when the form
    has no QueryJson whose QNode.QGroup holds a Subject element."""
    fields = tuple(parse_qsl(post_data or "", keep_blank_values=True))
    raw = next((v for k, v in fields if k == "QueryJson"), None)
    if raw is None:
        raise QueryTemplateUnsupported("检索请求没有 QueryJson", reason="no QueryJson field")
    try:
        query_json = json.loads(raw)
    except ValueError as exc:
        raise QueryTemplateUnsupported("QueryJson 不是 JSON", reason="QueryJson is not JSON") from exc
    _subject_index(_groups(query_json))
    parts = urlsplit(url)
    return GridTemplate(urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")), fields, query_json)


def rewrite_query_json(template: GridTemplate, request: GridRequest) -> dict[str, Any]:
    """The template's QueryJson with the Subject element replaced and the year filter appended."""
    query_json = copy.deepcopy(template.query_json)
    groups = _groups(query_json)
    groups[_subject_index(groups)] = copy.deepcopy(request.subject)
    if request.year_from is not None or request.year_to is not None:
        control = next((g for g in groups if g.get("Key") == "ControlGroup"), None)
        if control is None:
            control = {"Key": "ControlGroup", "Title": "", "Logic": 0, "Items": [], "ChildItems": []}
            groups.append(control)
        children = control.get("ChildItems")
        if not isinstance(children, list):
            children = control["ChildItems"] = []
        children.append(year_filter(request.year_from, request.year_to))
    query_json["SearchFrom"] = 1 if request.page == 1 else 4
    return query_json


def build_form(template: GridTemplate, request: GridRequest, cursor: str | None) -> tuple[str, str]:
    """(QueryJson text, urlencoded body) for one page. Fields not named in site-rules.md §1.3 are copied
    verbatim from the template, in the template's order."""
    if request.page > 1 and not cursor:
        raise ValueError("a page after the first needs the previous page's turnpage cursor")
    query_json = json.dumps(rewrite_query_json(template, request), ensure_ascii=False, separators=(",", ":"))
    form: OrderedDict[str, str] = OrderedDict(template.fields)
    form["QueryJson"] = query_json
    form["pageNum"] = str(request.page)
    form["boolSearch"] = "true" if request.page == 1 else "false"
    form["dstyle"] = "listmode"
    form["sortField"] = SORT_FIELDS[request.sort]
    form["sortType"] = "desc"
    form["boolSortSearch"] = "false"
    form["sentenceSearch"] = "false"
    if template.has_page_size:
        form["pageSize"] = str(request.page_size)
    if "SearchFrom" in form:
        form["SearchFrom"] = "1" if request.page == 1 else "4"
    if request.page > 1:
        form.pop("CurPage", None)
        form["turnpage"] = cursor or ""
        form["aside"] = ""
    return query_json, urlencode(list(form.items()))


def exact_title_subject(title: str) -> dict[str, Any]:
    """A Subject group with one branch: title is exactly `title` (site-rules.md §3.10)."""
    item = {
        "Key": "mcp",
        "Title": "title",
        "Logic": 0,
        "Field": "TI",
        "Operator": "DEFAULT",
        "Value": quote_value(title.strip()),
        "Value2": "",
        "options": {},
    }
    branch = {"Key": "mcp", "Title": "", "Logic": 0, "Items": [item], "ChildItems": []}
    return {"Key": "Subject", "Title": "", "Logic": 0, "Items": [], "ChildItems": [branch]}


def fingerprint(request: GridRequest) -> str:
    """Cursor-cache key: the search (subject, years, sort), never the page."""
    blob = json.dumps(
        [request.subject, request.year_from, request.year_to, request.sort.value, request.page_size],
        ensure_ascii=False,
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class CursorCache:
    """fingerprint -> {page: cursor to send for that page}; cleared once it holds too many."""

    def __init__(self, limit: int = CURSOR_CACHE_LIMIT) -> None:
        self._limit = limit
        self._map: dict[str, dict[int, str]] = {}
        self._size = 0

    def get(self, key: str, page: int) -> str | None:
        return self._map.get(key, {}).get(page)

    def put(self, key: str, page: int, cursor: str) -> None:
        if self._size >= self._limit:
            self._map.clear()
            self._size = 0
        pages = self._map.setdefault(key, {})
        if page not in pages:
            self._size += 1
        pages[page] = cursor

    def discard(self, key: str, page: int) -> None:
        """Forget one cursor (CNKI rejected it)."""
        pages = self._map.get(key)
        if pages is not None and pages.pop(page, None) is not None:
            self._size -= 1

    def forget(self, key: str) -> None:
        """Forget every cursor of one search (CNKI refused one: they belong to an ended session)."""
        self._size -= len(self._map.pop(key, {}))

    def highest_below(self, key: str, page: int) -> int:
        """The highest page <= `page` whose cursor is known (1 when none: page 1 needs none)."""
        known = [p for p in self._map.get(key, {}) if p <= page]
        return max(known, default=1)

    def clear(self) -> None:
        self._map.clear()
        self._size = 0

    def __len__(self) -> int:
        return self._size
