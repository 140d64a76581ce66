"""The navi journal detail page (`navi.cnki.net/knavi/detail?p=…`).

No real HTML capture exists; labels come from the 2023 datasets scraped from this page and from
old KNavi list pages: 曾用刊名, 主办单位, ISSN, CN, 收录, (2025版)复合影响因子 / 综合影响因子.
Root `div.journalInfo > div.infobox`, title `h3.titbox` with the translated title in a child `p`,
tier tags as label-sized `span`s. A decoy `<aside>` outside the root carries tier words and an
impact factor, and a prose paragraph inside the root mentions "Science"/"SCI" in running text,
so only label-sized, in-root matches count."""

from __future__ import annotations

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


def render_journal(journal: SimJournal, corpus: Corpus, links: Links, visitor: Visitor) -> str:
    translated = f"<p>{esc(journal.translated_title)}</p>" if journal.translated_title else ""
    tiers = "".join(f"<span>{esc(t)}</span>" for t in journal.tiers)
    tier_block = (
        f'<p class="journalType">{tiers}</p><p class="hostUnit">收录：{esc(";".join(journal.tiers))}</p>'
        if journal.tiers
        else ""
    )
    prose = (
        '<p class="jour-intro">本刊坚持学术性与前沿性并重，设有专题研究、学术综述等栏目，'
        "刊发论文曾被 Science Education 等国际刊物评介，并注重论文引用 SCI 研究成果的规范性。</p>"
    )
    metrics = _metric_line("复合影响因子", journal.composite_if, journal.metric_year) + _metric_line(
        "综合影响因子", journal.aggregate_if, journal.metric_year
    )
    root = (
        '<div class="journalInfo"><div class="infobox">'
        f'<h3 class="titbox">{esc(journal.name)}{translated}</h3>'
        f"{tier_block}{_info_lines(journal)}{metrics}{prose}"
        "</div></div>"
    )
    decoy = (
        '<aside class="recommend-journals"><h4>相关期刊推荐</h4>'
        "<p>SCI 复合影响因子：99.99</p><p>SSCI</p><span>EI</span><span>CSCD</span>"
        "<p>综合影响因子：88.88</p></aside>"
    )
    body = f'<div class="wrapper"><div class="container">{root}{_recent(journal, corpus, links)}</div>{decoy}</div>'
    return page_shell(f"{journal.name} - 中国知网", body, visitor, links)
