"""The navi journal detail page (`navi.cnki.net/knavi/detail?p=…`), in two generations.

`navi-2023` (the real layout; docs/simulator.md, "Journal page"): `dd.infobox > h3.titbox.titbox1`
(name, translated name in a child `p`), `p.journalType.journalType1 > span` (网络首发 …),
`p.journalType.journalType2 > span` (index tags, one per span), then `div.listbox` with
`ul#JournalBaseInfo` / `ul#publishInfo` / `ul#evaluateInfo` of `p.hostUnit > label + span`
pairs (曾用刊名, 主办单位, ISSN, CN, …, (2023版)复合影响因子 / 综合影响因子) and `p.database`
lines. `legacy`: the earlier assumption, `div.journalInfo > div.infobox` with `标签：值` text
and label-sized tier `span`s. Both carry a decoy `<aside>` outside the data (tier words and an
impact factor) and a prose paragraph that mentions "Science"/"SCI" in running text."""

from __future__ import annotations

import zlib
from typing import Literal

from ..corpus import Corpus, SimJournal, SimRecord
from ..links import Links, Visitor
from .common import esc, page_shell

RECENT_LIMIT = 30


def _metric_line(label: str, value: float | None, year: int | None) -> str:
    if value is None:
        return ""
    prefix = f"({year}版)" if year else ""
    return f'<p class="metric">{prefix}{label}：{value:.3f}</p>'


def _info_lines(journal: SimJournal) -> str:
    lines: list[str] = []
    if journal.former_titles:
        lines.append(f"<li><p>曾用刊名：{esc(';'.join(journal.former_titles))}</p></li>")
    if journal.sponsor:
        lines.append(f"<li><p>主办单位：{esc(journal.sponsor)}</p></li>")
    if journal.issn:
        lines.append(f"<li><p>ISSN：{esc(journal.issn)}</p></li>")
    if journal.cn:
        lines.append(f"<li><p>CN：{esc(journal.cn)}</p></li>")
    return f'<ul id="JournalBaseInfo">{"".join(lines)}</ul>' if lines else ""


def _issue_label(rec: SimRecord) -> str:
    if rec.online_first and not rec.issue:
        return "网络首发"
    return f"{rec.year or ''}年{rec.issue or ''}期"


def _recent(journal: SimJournal, corpus: Corpus, links: Links) -> str:
    recs = [r for r in corpus.records if r.source == journal.name]
    recs.sort(key=lambda r: (r.year or 0, r.issue or "", r.date or "", r.id), reverse=True)
    groups: dict[str, list[SimRecord]] = {}
    for rec in recs[:RECENT_LIMIT]:
        groups.setdefault(_issue_label(rec), []).append(rec)
    blocks = []
    for label, items in groups.items():
        rows = "".join(
            f'<dd class="row"><span class="name"><a target="_blank" href="{esc(links.detail(r.id))}">'
            f'{esc(r.title)}</a></span><span class="author">{esc(";".join(a.name for a in r.authors))}</span>'
            f'<span class="company">{esc(r.pages or "")}</span></dd>'
            for r in items
        )
        blocks.append(f'<dl class="tit"><dt class="tit">{esc(label)}</dt>{rows}</dl>')
    body = "".join(blocks) or '<p class="empty">本刊暂未收录文献</p>'
    return f'<div class="yearissuepage" id="CataLogContent"><h4 class="issue-title">最新出版</h4>{body}</div>'


JournalLayout = Literal["navi-2023", "legacy"]

_PROSE = (
    '<p class="jour-intro">本刊坚持学术性与前沿性并重，设有专题研究、学术综述等栏目，'
    "刊发论文曾被 Science Education 等国际刊物评介，并注重论文引用 SCI 研究成果的规范性。</p>"
)
_DECOY = (
    '<aside class="recommend-journals"><h4>相关期刊推荐</h4>'
    "<p>SCI 复合影响因子：99.99</p><p>SSCI</p><span>EI</span><span>CSCD</span>"
    "<p>综合影响因子：88.88</p></aside>"
)


def journal_layout(journal: SimJournal) -> JournalLayout:
    """Which generation a journal's page is served in: a stable quarter of the journals keep the
    legacy layout, so clients meet both."""
    return "legacy" if zlib.crc32(journal.name.encode("utf-8")) % 4 == 0 else "navi-2023"


def render_journal(
    journal: SimJournal, corpus: Corpus, links: Links, visitor: Visitor, *, layout: JournalLayout | None = None
) -> str:
    chosen = layout or journal_layout(journal)
    root = _navi_2023(journal) if chosen == "navi-2023" else _legacy(journal)
    body = f'<div class="wrapper"><div class="container">{root}{_recent(journal, corpus, links)}</div>{_DECOY}</div>'
    return page_shell(f"{journal.name} - 中国知网", body, visitor, links)


def _pair(label: str, value: str | None, *, span_id: str = "") -> str:
    if not value:
        return ""
    ident = f' id="{span_id}"' if span_id else ""
    return f'<p class="hostUnit"><label>{esc(label)}</label>：<span{ident} title="{esc(value)}">{esc(value)}</span></p>'


def _navi_2023(journal: SimJournal) -> str:
    translated = f"<p>{esc(journal.translated_title)}</p>" if journal.translated_title else ""
    tags = "".join(f"<span>{esc(t)}</span>" for t in journal.tiers)
    base = "".join(
        f"<li>{item}</li>"
        for item in (
            _pair("曾用刊名", ";".join(journal.former_titles)),
            _pair("主办单位", journal.sponsor),
            _pair("ISSN", journal.issn),
            _pair("CN", journal.cn),
        )
        if item
    )
    year = f"({journal.metric_year}版)" if journal.metric_year else ""
    metrics = "".join(
        _pair(f"{year}{label}", f"{value:.3f}" if value is not None else None)
        for label, value in (("复合影响因子", journal.composite_if), ("综合影响因子", journal.aggregate_if))
    )
    evaluate = f"<li>{metrics}</li>" if metrics else ""
    if journal.tiers:
        evaluate += "<li><h4>收录信息</h4>" + "".join(f'<p class="database">{esc(t)}</p>' for t in journal.tiers) + "</li>"
    return (
        '<div class="journal-detail"><dl class="journal-top"><dt class="cover"></dt><dd class="infobox">'
        f'<h3 class="titbox titbox1">{esc(journal.name)}{translated}</h3>'
        '<p class="journalType journalType1"><span>网络首发</span></p>'
        f'<p class="journalType journalType2">{tags}</p>'
        "</dd></dl>"
        '<div class="listbox">'
        f'<h4>基本信息</h4><ul id="JournalBaseInfo">{base}</ul>'
        '<h4>出版信息</h4><ul id="publishInfo"></ul>'
        f'<h4>评价信息</h4><ul id="evaluateInfo">{evaluate}</ul>'
        f"</div>{_PROSE}</div>"
    )


def _legacy(journal: SimJournal) -> str:
    translated = f"<p>{esc(journal.translated_title)}</p>" if journal.translated_title else ""
    tiers = "".join(f"<span>{esc(t)}</span>" for t in journal.tiers)
    tier_block = (
        f'<p class="journalType">{tiers}</p><p class="hostUnit">收录：{esc(";".join(journal.tiers))}</p>'
        if journal.tiers
        else ""
    )
    metrics = _metric_line("复合影响因子", journal.composite_if, journal.metric_year) + _metric_line(
        "综合影响因子", journal.aggregate_if, journal.metric_year
    )
    return (
        '<div class="journalInfo"><div class="infobox">'
        f'<h3 class="titbox">{esc(journal.name)}{translated}</h3>'
        f"{tier_block}{_info_lines(journal)}{metrics}{_PROSE}"
        "</div></div>"
    )
