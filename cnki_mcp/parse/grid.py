"""Result-grid parser: kns8s (2026) result lists, the KNS8 2022 fragment and old `GridTableContent`.

`parse_grid(html, url)` returns a `GridPage` or raises a typed error; a page with no rows is
never an empty success unless the page itself says nothing matched (or it is a page past the end).
`parse_grid_head(html)` reads only whether the page has rows and its paging, the same way, for
asking the next page before the rows are parsed (DESIGN.md "Retrieval without rounds")."""

from __future__ import annotations

import math
import re

from selectolax.lexbor import LexborHTMLParser, LexborNode

from cnki_mcp.errors import (
    ParserUnsupported,
    QueryTemplateUnsupported,
    SiteTemporarilyEmpty,
    VerificationRequired,
)
from cnki_mcp.identity import iso_date
from cnki_mcp.models import GridHead, GridPage, GridRow, NativeId
from cnki_mcp.parse._html import (
    attr,
    body_text,
    find_year,
    parse_count,
    parse_html,
    previous_element,
    query_param,
    resolve,
    split_list,
    strip_role,
    text_of,
)

# Zero-result evidence (site-rules.md §2.1): 未找到 / 没有找到 / 暂无…结果, or an explicit 找到 0 条结果.
_ZERO = re.compile(r"未找到|没有找到|暂无.{0,6}结果|找到\s*0\s*条")
# Temporarily empty: the site is busy; never zero results (retryable SITE_TEMPORARILY_EMPTY).
_TEMP_EMPTY = re.compile(r"暂无数据|稍后重试|服务繁忙")
# The grid POST can answer with a verification fragment instead of rows.
_VERIFY = re.compile(r"""name\s*=\s*["']?vericodeForm|id\s*=\s*["']?vericode\b""", re.I)
_TOTAL_TEXT = re.compile(r"找到\s*([\d,]+(?:\.\d+)?\s*万?)\s*条")
_PAGE_MARK = re.compile(r"(\d+)\s*/\s*(\d+)")
_INT = re.compile(r"\d+")
# Old-generation checkbox values: `CAPJLAST!XDQB20230516001!1!0` = dbname!filename!rec!query.
# kns8s `input.cbItem` values are opaque tokens ending in `!` and never match this.
_CB_VALUE = re.compile(r"^([A-Za-z][A-Za-z0-9_]{2,})!([A-Za-z0-9_.\-]+)!\d+!\d+$")
_TITLE_SELECTORS = ("td.name a.fz14", "a.fz14", "td.name a", "a[href*='etail']")

# Header labels of the old positional grids (no td classes) -> the kns8s class of that column.
_HEADER_ROLES = {
    "题名": "name",
    "篇名": "name",
    "作者": "author",
    "（第一）作者": "author",
    "来源": "source",
    "刊名": "source",
    "发表时间": "date",
    "数据库": "data",
    "被引": "quote",
    "下载": "download",
}
# Old grids' own column classes.
_CLASS_ALIASES = {"author": ("author", "author_flag"), "source": ("source", "cjfdyxyz")}
_MAX_PAGE_SIZE = 50  # the largest page size CNKI offers (10/20/50)
# A grid row shows at most 5 authors; the rest sit in a `display:none` span right after the
# `a[title=显示全部作者]` toggle (kns8s `a.showAllAuthors`, old grids `a.showAll`). A person reads
# them with one click, so they are data, not a decoy (docs/simulator.md, "Grid rows").
_SHOW_ALL_TITLE = "显示全部作者"


def _author_overflow(node: LexborNode) -> bool:
    """True for the hidden span of collapsed authors that follows the 显示全部作者 toggle."""
    if node.tag != "span":
        return False
    toggle = previous_element(node)
    if toggle is None or toggle.tag != "a":
        return False
    cls = toggle.attributes.get("class") or ""
    return (toggle.attributes.get("title") or "") == _SHOW_ALL_TITLE or "showAll" in cls


def parse_grid_head(html: str) -> GridHead:
    """Whether the page has rows, and its paging, as `parse_grid` reads them (rows not parsed):
    a row counts when it has a titled link, the one thing `_parse_row` requires."""
    tree = parse_html(html, keep_hidden=_author_overflow)
    _, data_rows, _ = _find_rows(tree)
    titled = [tr for tr in data_rows if _titled(tr)]
    total, _current, page, page_count, turnpage = _paging_state(tree, bool(titled))
    return GridHead(
        has_rows=bool(titled),
        total=total,
        page=page,
        page_count=page_count,
        turnpage=turnpage,
        last_ordinal=_ordinal(titled[-1]) if titled else None,
    )


def _paging_state(
    tree: LexborHTMLParser, has_rows: bool
) -> tuple[int | None, int | None, int | None, int | None, str | None]:
    """(total, #curPageHid, page, page_count, cursor) of a grid page."""
    total = _total(tree)
    current = _int_value(tree, "#curPageHid")
    page, page_count = _paging(tree, total, current, _page_size(tree), has_rows)
    return total, current, page, page_count, attr(tree.css_first("#hidTurnPage"), "value")


def parse_grid(html: str, url: str | None = None) -> GridPage:
    """Parse a result-grid page or AJAX fragment into rows plus paging state."""
    tree = parse_html(html, keep_hidden=_author_overflow)
    table, data_rows, header = _find_rows(tree)
    rows = [row for tr in data_rows if (row := _parse_row(tr, header, url)) is not None]

    total, current, page, page_count, turnpage = _paging_state(tree, bool(rows))

    if rows:
        return GridPage(rows=rows, total=total, page=page, page_count=page_count, turnpage=turnpage)

    text = body_text(tree)
    if _VERIFY.search(html):
        raise VerificationRequired(page="grid")
    # kns8s answers an empty search with `p.no-content`. Its text reads 抱歉，暂无数据，请稍后重试。
    # even for a true zero result, so the element, not the wording, is the evidence; a non-empty
    # `value` attribute is the site's reason for refusing the query (docs/simulator.md, "Grid rows").
    no_content = tree.css_first("p.no-content")
    if no_content is not None:
        reason = attr(no_content, "value")
        if reason:
            raise QueryTemplateUnsupported(f"知网拒绝了检索请求：{reason}", reason=reason[:160])
        return GridPage(rows=[], total=0, page=page, page_count=page_count, zero_results=True)
    # the words count only where the page states no count: a page saying 共找到 4 条 whose rows
    # are not read (a changed layout) is no zero result because 暂无分组结果 stands beside it
    if total == 0 or (total is None and _ZERO.search(text)):
        return GridPage(rows=[], total=0, page=page, page_count=page_count, zero_results=True)
    if _TEMP_EMPTY.search(text):
        raise SiteTemporarilyEmpty(text=text[:160])
    # A recognised grid (titled columns) that is explicitly PAST THE END: the KNS8 2022 capture says
    # 共找到11条结果 with #curPageHid=2 and an empty table: 11 results fit on page 1, so page 2 is
    # legitimately empty. We return it as an explicit empty page (total kept, page > page_count, so
    # `exhausted` is true) and never as zero results. Any other empty grid stays PARSER_UNSUPPORTED.
    per_page = _page_size(tree)
    if (
        table is not None
        and header
        and total
        and current is not None
        and (current - 1) * (per_page or _MAX_PAGE_SIZE) >= total
    ):
        last = math.ceil(total / per_page) if per_page else None
        return GridPage(rows=[], total=total, page=current, page_count=last, turnpage=turnpage)
    raise ParserUnsupported(text=text[:160], page="grid")


# --- rows ---------------------------------------------------------------------------------


def _find_rows(tree: LexborHTMLParser) -> tuple[LexborNode | None, list[LexborNode], dict[str, int]]:
    """The grid table, its data rows and a header label -> column index map."""
    table = tree.css_first("table.result-table-list")
    if table is not None:
        header = _header_map([th for th in table.css("thead th")])
        return table, table.css("tbody tr"), header
    table = tree.css_first("table.GridTableContent")
    if table is not None:
        rows = table.css("tr")
        head = next((tr for tr in rows if "GTContentTitle" in (tr.attributes.get("class") or "")), None)
        header = _header_map(_cells(head)) if head is not None else {}
        data = [tr for tr in rows if tr is not head and _title_link(tr) is not None]
        return table, data, header
    return None, [], {}


def _header_map(cells: list[LexborNode]) -> dict[str, int]:
    header: dict[str, int] = {}
    for index, cell in enumerate(cells):
        role = _HEADER_ROLES.get(text_of(cell))
        if role and role not in header:
            header[role] = index
    return header


def _cells(tr: LexborNode) -> list[LexborNode]:
    return [child for child in tr.iter() if child.tag in ("td", "th")]


def _cell(tr: LexborNode, role: str, header: dict[str, int]) -> LexborNode | None:
    """The row's cell for `role`: by kns8s class first, else by the header column position."""
    for cls in _CLASS_ALIASES.get(role, (role,)):
        node = tr.css_first(f"td.{cls}")
        if node is not None:
            return node
    index = header.get(role)
    if index is None:
        return None
    cells = _cells(tr)
    return cells[index] if index < len(cells) else None


def _title_link(tr: LexborNode) -> LexborNode | None:
    for sel in _TITLE_SELECTORS:
        node = tr.css_first(sel)
        if node is not None:
            return node
    return None


def _titled(tr: LexborNode) -> bool:
    """The row has a title link with text (`_parse_row` returns None otherwise)."""
    return bool(text_of(_title_link(tr)))


def _parse_row(tr: LexborNode, header: dict[str, int], url: str | None) -> GridRow | None:
    link = _title_link(tr)
    title = text_of(link)  # <font> hit highlights are flattened by taking the deep text
    if link is None or not title:
        return None
    detail_url = resolve(url, attr(link, "href"))
    source_cell = _cell(tr, "source", header)
    source, source_url = _source(source_cell, url)
    date = iso_date(text_of(_cell(tr, "date", header)) or None)  # an older newspaper row: 2004/06/29
    return GridRow(
        ordinal=_ordinal(tr),
        title=title,
        detail_url=detail_url,
        native=_native(tr, detail_url),
        authors=_authors(_cell(tr, "author", header)),
        source=source,
        source_url=source_url,
        date=date,
        year=find_year(date),
        doc_type=text_of(_cell(tr, "data", header)) or None,
        cited=parse_count(text_of(_cell(tr, "quote", header))),
        downloads=parse_count(text_of(_cell(tr, "download", header))),
        online_first=any("网络首发" in text_of(n) for n in tr.css(".marktip, .cMarkTip")),
        open_access=any(
            (n.attributes.get("title") or "") == "开放获取" or text_of(n) == "开放获取"
            for n in tr.css(".cMarkSign")
        ),
        abstract=text_of(tr.css_first(".abstract")) or None,
        keywords=[k for k in (text_of(a).strip(";；") for a in tr.css(".keywords a")) if k],
        export_id=_export_id(tr),
    )


def _export_id(tr: LexborNode) -> str | None:
    """The row's export id: the `CookieName` checkbox value (site-rules.md §9)."""
    box = tr.css_first("input[name=CookieName]") or tr.css_first("input.cbItem")
    value = (attr(box, "value") or "").strip() if box is not None else ""
    return value or None


def _ordinal(tr: LexborNode) -> int | None:
    """The number CNKI prints in the first cell (td.seq in kns8s)."""
    seq = tr.css_first("td.seq")
    if seq is None:
        cells = _cells(tr)
        seq = cells[0] if cells else None
    m = _INT.fullmatch(text_of(seq))
    return int(m.group(0)) if m else None


def _native(tr: LexborNode, detail_url: str | None) -> NativeId:
    # kns8s: `a.icon-collect[data-dbname][data-filename]` is the only place a row exposes its ids;
    # foreign rows also carry `a.icon-textlink[data-filename][data-table]` (a table, not a dbname).
    node = tr.css_first("a.icon-collect[data-dbname][data-filename]") or tr.css_first("[data-filename]")
    dbcode = dbname = filename = None
    if node is not None:
        filename = attr(node, "data-filename")
        dbname = attr(node, "data-dbname")
        dbcode = attr(node, "data-dbcode")
    if not filename:
        filename = query_param(detail_url, "filename")
        dbname = dbname or query_param(detail_url, "dbname")
        dbcode = dbcode or query_param(detail_url, "dbcode")
    if not filename:
        for box in tr.css("input.cbItem, input[name=FileNameS]"):
            m = _CB_VALUE.match(attr(box, "value") or "")
            if m:
                dbname, filename = m.group(1), m.group(2)
                break
    if dbname and not dbcode:
        dbcode = dbname[:4]
    return NativeId(dbcode=dbcode, dbname=dbname, filename=filename)


def _authors(cell: LexborNode | None) -> list[str]:
    if cell is None:
        return []
    for sup in cell.css("sup"):  # affiliation marks: 张三1,2
        sup.decompose()
    links = [a for a in cell.css("a.KnowledgeNetLink")] or [
        a for a in cell.css("a") if "showAll" not in (a.attributes.get("class") or "")
    ]
    names = [text_of(a) for a in links]
    if not any(names):
        info = cell.css_first("div.authorinfo > p")
        # Foreign records: plain `A;B;C` text; names may contain commas, so split on ; only.
        names = (
            [n for n in re.split(r"[;；]", text_of(info))] if info is not None else split_list(text_of(cell))
        )
        return [name for name in map(strip_role, names) if name]
    # Two co-authors may share a name (王伟 and 王伟, each with an author link, and code, of their
    # own), so a repeated name is kept: the list is the paper's byline, in order. A name repeated
    # with the very same link is one author listed twice (a saved 2018 grid lists 董守斌 so).
    out: list[str] = []
    seen: set[tuple[str, str]] = set()
    for a, raw in zip(links, names, strict=True):
        name = strip_role(raw)
        href = (a.attributes.get("href") or "").strip()
        # only a link that names a person: kns8s grids link every author `javascript:void(0)`
        key = (name, href if href.startswith(("http://", "https://", "/")) else "")
        if name and not (key[1] and key in seen):
            out.append(name)
            seen.add(key)
    return out


def _source(cell: LexborNode | None, url: str | None) -> tuple[str | None, str | None]:
    if cell is None:
        return None, None
    link = cell.css_first("a")
    node = link if link is not None and text_of(link) else cell.css_first("span") or cell
    text = text_of(node).rstrip(" .。")
    href = resolve(url, attr(link, "href")) if link is not None else None
    return (text or None), href


# --- paging -------------------------------------------------------------------------------


def _total(tree: LexborHTMLParser) -> int | None:
    cell = tree.css_first(".pagerTitleCell")
    if cell is not None:
        em = cell.css_first("em")
        if em is not None and (value := parse_count(text_of(em))) is not None:
            return value
        m = _TOTAL_TEXT.search(text_of(cell))
        if m:
            return parse_count(m.group(1))
    # kns8s also keeps the count in hidden inputs (#totalCnt; old grids #resultcount).
    for sel in ("#totalCnt", "#resultcount"):
        value = parse_count(attr(tree.css_first(sel), "value"))
        if value is not None:
            return value
    return None


def _int_value(tree: LexborHTMLParser, selector: str) -> int | None:
    m = _INT.fullmatch(attr(tree.css_first(selector), "value") or "")
    return int(m.group(0)) if m else None


def _page_size(tree: LexborHTMLParser) -> int | None:
    """Rows per page from the 显示 10/20/50 switch (`#perPageDiv li.cur[data-val]`)."""
    node = tree.css_first("#perPageDiv li.cur[data-val]")
    m = _INT.fullmatch(attr(node, "data-val") or "")
    if m is None:
        m = _INT.fullmatch(text_of(tree.css_first("#perPageDiv .sort-default span")))
    return int(m.group(0)) if m and int(m.group(0)) > 0 else None


def _paging(
    tree: LexborHTMLParser, total: int | None, current: int | None, per_page: int | None, has_rows: bool
) -> tuple[int | None, int | None]:
    mark = tree.css_first(".countPageMark")
    if mark is not None:
        m = _PAGE_MARK.search(text_of(mark))
        last = _INT.fullmatch(attr(mark, "data-pagenum") or "")
        if m:
            return int(m.group(1)), int(m.group(2))
        if last:
            return current, int(last.group(0))
    if not has_rows:
        return current, None
    # No page marker: CNKI omits it when everything fits on one page.
    page = current or 1
    if total and per_page:
        return page, max(1, math.ceil(total / per_page))
    return page, (1 if page == 1 else None)
