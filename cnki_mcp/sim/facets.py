"""The result page's facet groups (`POST /kns8s/group/result`): counts over a query's hits.

Request form (public clients post the same): `queryJson` (the grid's QueryJson), `groupIds`
(comma-separated; one group may join sub-ids with `|||`, e.g. `ZYZT|||CYZT`), `manageId`, `aside`,
`subject`. The answer is an HTML fragment of `dl[groupid]` blocks shaped like the left column of
the saved kns8s result pages: `dt.tit[groupid][groupitem] > b` (label), then one `dd[field][tit]`
per sub-id holding `div.resultlist > ul > li` items `input[type=checkbox][value][text][title]`,
`a[title]` and `span` `(count)`. Groups the corpus cannot count (学科 codes, 研究层次, OA) come
back with an empty `dd`; unknown ids are left out."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from html import escape

from cnki_mcp.sim.corpus import Corpus, SimRecord

# groupid -> (label shown in `dt b`, title attribute of `b`)
GROUP_LABELS: dict[str, tuple[str, str]] = {
    "ZYZT|||CYZT": ("主题", "只对前4万条记录分组"),
    "LYBSM": ("来源类别", "只对前4万条记录分组"),
    "CCL": ("学科", "只对前4万条记录分组"),
    "YJCC": ("研究层次", "只对前4万条记录分组"),
    "YE": ("年度", "只对前100万条记录分组"),
    "WXLX": ("文献类型", "对所有数据进行分组"),
    "WXLX2": ("文献类型", "对所有数据进行分组"),
    "WXLY": ("文献来源", "只对前100万条记录分组"),
    "AUC|||HWZZ": ("作者", "只对前4万条记录分组"),
    "AFC": ("机构", "只对前4万条记录分组"),
    "FUC": ("基金", "只对前4万条记录分组"),
    "OA": ("OA出版", "只对前100万条记录分组"),
}
# sub-id -> dd `tit`
_SUB_TITLES = {
    "ZYZT": "主要主题", "CYZT": "次要主题", "LYBSM": "来源类别", "CCL": "学科", "YJCC": "研究层次",
    "YE": "年度", "WXLX": "文献类型", "WXLX2": "文献类型", "WXLY": "文献来源", "AUC": "作者",
    "HWZZ": "H指数", "AFC": "机构", "FUC": "基金", "OA": "OA出版",
}  # fmt: skip
# The page opens these three and loads the folded ones when their title is clicked.
DEFAULT_OPEN = ("ZYZT|||CYZT", "LYBSM", "CCL")
FOLDED = ("YJCC", "YE", "WXLX", "WXLY", "AUC|||HWZZ", "AFC", "FUC", "OA")
MAX_ITEMS = 30


def _values(sub: str, corpus: Corpus) -> Callable[[SimRecord], Iterable[str]] | None:
    """What one record contributes to a sub-group; None = not countable from the corpus."""
    match sub:
        case "ZYZT":
            return lambda r: r.keywords
        case "YE":
            return lambda r: [str(r.year)] if r.year else []
        case "WXLX" | "WXLX2":
            return lambda r: [r.type]
        case "WXLY":
            return lambda r: [r.source] if r.source else []
        case "AUC":
            return lambda r: [a.name for a in r.authors]
        case "AFC":
            return lambda r: list(dict.fromkeys(i for a in r.authors for i in a.institutions))
        case "FUC":
            return lambda r: [f.split("(")[0].split("（")[0] for f in r.funds]
        case "LYBSM":

            def tiers(r: SimRecord) -> Iterable[str]:
                j = corpus.journal_by_name.get(r.source or "")
                return j.tiers if j is not None else ()

            return tiers
    return None


def _items(sub: str, hits: list[SimRecord], corpus: Corpus) -> list[tuple[str, int]]:
    pick = _values(sub, corpus)
    if pick is None:
        return []
    counts: Counter[str] = Counter()
    for r in hits:
        counts.update(set(v for v in pick(r) if v))
    if sub == "YE":  # 年度 is ordered by time, newest first
        return sorted(counts.items(), key=lambda kv: kv[0], reverse=True)[:MAX_ITEMS]
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_ITEMS]


def _li(value: str, count: int) -> str:
    v = escape(value)
    return (
        f'<li style="display:list-item"><input type="checkbox" value="{v}" text="{v}" title="{v}"> '
        f'<a href="javascript:void(0)" title="{v}">{v}</a> <span>({count})</span></li>'
    )


def render_group(group_id: str, hits: list[SimRecord], corpus: Corpus) -> str:
    """One `dl` block; '' for an id the page does not have."""
    label = GROUP_LABELS.get(group_id)
    if label is None:
        return ""
    subs = group_id.split("|||")
    dds = []
    for i, sub in enumerate(subs):
        hidden = ' style="display:none;"' if i else ""
        items = "".join(_li(v, n) for v, n in _items(sub, hits, corpus))
        dds.append(
            f'<dd{hidden} field="{escape(sub)}" tit="{escape(_SUB_TITLES.get(sub, label[0]))}">'
            f'<div class="resultlist"><ul>{items}</ul></div></dd>'
        )
    gid = escape(group_id)
    return (
        f'<dl class=" " groupid="{gid}"><dt class="tit" groupid="{gid}" groupitem="{escape(_SUB_TITLES.get(subs[0], label[0]))}">'
        f'<b title="{escape(label[1])}" class="noorders">{escape(label[0])}</b><i class="icon icon-arrow"></i></dt>'
        + "".join(dds)
        + "</dl>"
    )


def render_groups(group_ids: str, hits: list[SimRecord], corpus: Corpus) -> str:
    ids = [g.strip() for g in group_ids.split(",") if g.strip()]
    return "".join(render_group(g, hits, corpus) for g in ids)


def render_sidebar_skeleton() -> str:
    """The result page's `#divGroup` before any counts arrive: every group's title, empty lists;
    the folded ones carry `is-up-fold off` like the saved page."""
    parts = []
    for gid in DEFAULT_OPEN + FOLDED:
        label, tip = GROUP_LABELS[gid]
        cls = " " if gid in DEFAULT_OPEN else "is-up-fold off "
        g = escape(gid)
        parts.append(
            f'<dl class="{cls}" groupid="{g}"><dt class="tit" groupid="{g}" groupitem="{escape(label)}">'
            f'<b title="{escape(tip)}" class="noorders">{escape(label)}</b><i class="icon icon-arrow"></i></dt>'
            "</dl>"
        )
    return (
        '<div id="divGroup" class="sidebar-filter-sort js-condition js-single">' + "".join(parts) + "</div>"
    )
