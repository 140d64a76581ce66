"""The kns8s grid fragment (`POST /kns8s/brief/grid`), shaped like the 2026 captures.

Markers the clients rely on: `span.pagerTitleCell em` total (thousands comma), `span.countPageMark`
`cur/last` (absent for a single page), `table.result-table-list` rows, `#hidTurnPage` cursor.
A true zero result is `p.no-content` (value="") reading 抱歉，暂无数据，请稍后重试。 like the real
page; the temporarily-empty fault is `div.no-content > p` with similar words and no count: clients
must tell them apart by structure, not by the words."""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from html import escape

from cnki_mcp.sim.corpus import SimRecord
from cnki_mcp.sim.links import Links

# Resource names CNKI puts on the collect icon (data-resource).
_RESOURCE = {
    "期刊": "JOURNAL",
    "博士": "DISSERTATION",
    "硕士": "DISSERTATION",
    "会议": "CONFERENCE",
    "报纸": "NEWSPAPER",
    "年鉴": "YEARBOOK",
    "图书": "BOOK",
    "外文期刊": "JOURNAL",
}

_SORT_LABELS = (("FFD", "相关度"), ("PT", "发表时间"), ("CF", "被引"), ("DFR", "下载"))
_TURN_TIP = "键盘的“← →”可以实现快速翻页"


def format_count(n: int, wan: bool = True) -> str:
    """CNKI shows large counts as 1.2万 (one decimal, trailing .0 dropped)."""
    if wan and n >= 10000:
        s = f"{n / 10000:.1f}".rstrip("0").rstrip(".")
        return f"{s}万"
    return str(n)


def collect_dbname(r: SimRecord) -> str:
    # Online-first journal papers are in CAPJ; the collect icon carries the product code.
    if r.online_first and r.dbcode == "CJFD":
        return "CAPJ"
    return r.dbcode


def _highlight(title: str, terms: list[str]) -> str:
    text = escape(title)
    usable = sorted({escape(t) for t in terms if t.strip()}, key=len, reverse=True)
    if not usable:
        return text
    pattern = re.compile("|".join(re.escape(t) for t in usable), re.IGNORECASE)
    return pattern.sub(lambda m: f'<font color="red">{m.group(0)}</font>', text)


@dataclass(frozen=True, slots=True)
class GridPage:
    rows: list[SimRecord]
    total: int
    page: int  # the page this fragment says it is
    page_size: int
    cursor: str
    sort: str = "FFD"
    sort_type: str = "desc"

    @property
    def last_page(self) -> int:
        return max(1, -(-self.total // self.page_size))


SHOWN_AUTHORS = 5  # a row shows at most 5 authors; the rest hide behind 显示全部作者


def _collapsed(items: list[str]) -> str:
    """Authors joined by `;`; past the fifth, a 显示全部作者 toggle and a `display:none` span."""
    shown = ";".join(items[:SHOWN_AUTHORS])
    rest = items[SHOWN_AUTHORS:]
    if not rest:
        return shown
    return (
        f'{shown}<a title="显示全部作者" class="showAllAuthors"></a>'
        f'<span style="display:none">;{";".join(rest)}</span>'
    )


def _row(r: SimRecord, ordinal: int, links: Links, terms: list[str], wan: bool, cb_value: str) -> str:
    detail = escape(links.detail(r.id))
    flags = '<b class="marktip">网络首发</b>' if r.online_first else ""
    if r.extra.get("open_access"):
        flags += '<b class="cMarkSign" title="开放获取">OA</b>'
    flags += '<i class="freeIdent is-hide" title="Free" style="display: none;">免费</i>'
    foreign = r.type == "外文期刊"
    if foreign:
        names = [escape(a.name) for a in r.authors]
        authors = f'<div class="authorinfo"><p>{_collapsed(names)}</p></div>' if names else ""
    else:
        authors = _collapsed(
            [
                f'<a class="KnowledgeNetLink" target="knet" href="{escape(links.author(a.name, a.institution))}">{escape(a.name)}</a>'
                for a in r.authors
            ]
        )
    if not r.source:
        source = ""
    elif foreign:
        source = f"<span>{escape(r.source)}</span>"
    else:
        source = f'<p><a target="_blank" href="{escape(links.journal(r.source))}">{escape(r.source)}</a></p>'
    date = escape(r.date or (str(r.year) if r.year else ""))
    if r.online_first and r.date:
        # Online-first rows show the publication time (`2026-06-24 09:14`, saved page
        # kns8s-grid/kaffu_waam_p1.html); a fixed time per record keeps pages repeatable.
        minute = zlib.crc32(r.id.encode()) % (14 * 60)
        date += f" {8 + minute // 60:02d}:{minute % 60:02d}"
    quote = (
        f'<span><a class="quoteCnt" target="_blank" href="{detail}">{format_count(r.cited, wan)}</a></span>'
        if r.cited
        else ""
    )
    dl_text = r.extra.get("download_text") or (format_count(r.downloads, wan) if r.downloads else "")
    download = (
        f'<div><a class="downloadCnt" href="javascript:void(0);">{escape(str(dl_text))}</a></div>'
        if dl_text
        else ""
    )
    resource = _RESOURCE.get(r.type, "JOURNAL")
    if foreign:
        ops = f'<a class="icon-textlink" target="_blank" href="{detail}" title="原文链接"><i></i></a>'
    else:
        ops = (
            f'<a href="{escape(links.download(r.id, "pdf"))}" target="_blank" class="downloadlink icon-download" '
            f'title="下载"><i></i><b>下载</b></a>'
            f'<a class="icon-html" href="{escape(links.reader(r.id))}" target="_blank" title="HTML阅读" '
            f'data-resource="{resource}"><i></i><b>HTML阅读</b></a>'
        )
    ops += (
        f'<a class="icon-collect" title="收藏" data-dbname="{collect_dbname(r)}" data-resource="{resource}" '
        f'data-filename="{escape(r.native_filename)}"><i></i></a>'
        '<a class="icon-quote" title="引用" href="javascript:void(0)"><i></i></a>'
    )
    return (
        "<tr>"
        f'<td class="seq"><input class="cbItem" type="checkbox" data-cur="{ordinal}" name="CookieName" '
        f'value="{escape(cb_value)}">{ordinal}</td>'
        f'<td class="name"><a class="fz14" target="_blank" href="{detail}">{_highlight(r.title, terms)}</a>{flags}</td>'
        f'<td class="author">{authors}</td>'
        f'<td class="source">{source}</td>'
        f'<td class="date">{date}</td>'
        f'<td class="data"><span>{escape(r.type)}</span></td>'
        f'<td class="quote">{quote}</td>'
        f'<td class="download">{download}</td>'
        f'<td class="operat">{ops}</td>'
        "</tr>"
    )


def _pager(p: GridPage) -> str:
    if p.last_page <= 1:
        return '<div class="pages"></div>'
    lo = max(1, min(p.page - 4, p.last_page - 8))
    hi = min(p.last_page, lo + 8)
    parts: list[str] = []
    if p.page > 1:
        parts.append(
            f'<a class="pagesnums" href="javascript:void(0);" title="{_TURN_TIP}" id="PagePrev" '
            f'data-curpage="{p.page - 1}">上一页</a>'
        )
    for n in range(lo, hi + 1):
        cur = ' class="cur"' if n == p.page else ""
        parts.append(
            f'<div class="pagesnums"><a href="javascript:void(0);" title="{_TURN_TIP}"{cur} '
            f'data-curpage="{n}">{n}</a></div>'
        )
    parts.append('<div class="clear"></div>')
    if p.page < p.last_page:
        parts.append(
            f'<a class="pagesnums" href="javascript:void(0);" title="{_TURN_TIP}" id="PageNext" '
            f'data-curpage="{p.page + 1}">下一页</a>'
        )
    return '<div class="pages">' + "".join(parts) + "</div>"


def _toolbar(total: int, mark: str, sort: str) -> str:
    cur = ' class="cur"'
    order = "".join(
        f'<li data-sort="{code}"{cur if code == sort else ""}><a href="javascript:void(0);">{label}</a></li>'
        for code, label in _SORT_LABELS
    )
    return (
        '<div class="toolbar"><div id="countPageDiv" class="result-con-r">'
        f'<span class="pagerTitleCell"><span>共找到</span> <em>{total:,}</em> <span>条结果</span></span>'
        f"{mark}</div>"
        f'<div class="toolbar-col"><div class="order-group"><span>排序：</span><ul id="orderList">{order}</ul></div></div>'
        "</div>"
    )


def _hidden(page: int, total: int, cursor: str) -> str:
    return (
        '<input id="errorMsgHid" type="hidden" value="WD0FTY92">'
        f'<input id="curPageHid" type="hidden" value="{page}">'
        f'<input id="totalCnt" type="hidden" value="{total}">'
        '<input id="isSortHid" type="hidden" value="false">'
        f'<input id="hidTurnPage" type="hidden" value="{escape(cursor)}">'
    )


def render_grid(
    p: GridPage,
    links: Links,
    *,
    terms: list[str] | None = None,
    wan_counts: bool = True,
    row_values: list[str] | None = None,
) -> str:
    """One page of results. Ordinals continue across pages ((page-1)*page_size + i)."""
    if p.total == 0:
        return render_zero_results(p.cursor)
    mark = ""
    if p.last_page > 1:
        mark = (
            f'<span class="countPageMark" data-pagenum="{p.last_page}">{p.page}/{p.last_page}</span>'
            '<span class="topTurnSpan">'
            + (
                f'<a id="Page_Prev_top" title="{_TURN_TIP}" data-curpage="{p.page - 1}">&lt;&lt;</a>'
                if p.page > 1
                else ""
            )
            + (
                f'<a id="Page_next_top" title="{_TURN_TIP}" data-curpage="{p.page + 1}">&gt;&gt;</a>'
                if p.page < p.last_page
                else ""
            )
            + "</span>"
        )
    base = (p.page - 1) * p.page_size
    values = row_values or [f"{collect_dbname(r)}!{r.native_filename}!1!0" for r in p.rows]
    rows = "".join(
        _row(r, base + i + 1, links, terms or [], wan_counts, values[i]) for i, r in enumerate(p.rows)
    )
    head = "".join(
        f"<th>{h}</th>" for h in ("", "题名", "作者", "来源", "发表时间", "数据库", "被引", "下载", "操作")
    )
    return (
        "<div>"
        + _toolbar(p.total, mark, p.sort)
        + '<div id="main-content" name="gridTableForm"><div id="gridTable" class="search-result"><div><div><div>'
        f'<table class="result-table-list"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
        "</div></div></div></div>" + _pager(p) + "</div>" + _hidden(p.page, p.total, p.cursor) + "</div>"
    )


def render_zero_results(cursor: str = "") -> str:
    """A search with no hits: the count toolbar, then `p.no-content` with an empty `value`.

    The wording is the real kns8s paragraph's, 抱歉，暂无数据，请稍后重试。, the same words a busy
    site uses: clients must tell them apart by structure (`p.no-content` here, `div.no-content > p`
    in `render_temporarily_empty`), as on the site (docs/simulator.md, "Grid rows")."""
    return (
        "<div>"
        + _toolbar(0, "", "FFD")
        + '<div id="main-content" name="gridTableForm"><div id="gridTable" class="search-result">'
        '<div id="briefBox"><p class="no-content" value="">抱歉，暂无数据，请稍后重试。</p></div>'
        "</div></div>" + _hidden(1, 0, cursor) + "</div>"
    )


def render_temporarily_empty() -> str:
    """What CNKI returns when its search backend hiccups: no count, no table."""
    return (
        '<div><div id="main-content" name="gridTableForm"><div id="gridTable" class="search-result">'
        '<div class="no-content"><p>暂无数据，请稍后重试</p></div></div></div></div>'
    )


def render_query_error(message: str) -> str:
    """Malformed QueryJson: CNKI answers 200 with a short error block and no result markup."""
    return (
        '<div><div id="main-content" name="gridTableForm"><div id="gridTable" class="search-result">'
        f'<div class="errorPage"><p class="error-tip">检索条件格式有误，请检查后重新检索</p>'
        f'<p class="error-detail" style="display:none">{escape(message)}</p></div></div></div></div>'
    )
