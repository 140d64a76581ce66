"""`/kcms2/author/detail`: a simple author page (name, institutions, the author's records)."""

from __future__ import annotations

from html import escape

from cnki_mcp.sim.corpus import Corpus
from cnki_mcp.sim.links import Links, Visitor


def render_author(name: str, corpus: Corpus, links: Links, visitor: Visitor) -> str:
    from cnki_mcp.sim.pages.common import page_shell

    records = [r for r in corpus.records if any(a.name == name for a in r.authors)]
    orgs = sorted({i for r in records for a in r.authors if a.name == name for i in a.institutions})
    items = "".join(
        f'<li><a target="_blank" href="{escape(links.detail(r.id))}">{escape(r.title)}</a>'
        f'<span class="source">{escape(r.source or "")}</span><span class="date">{escape(r.date or str(r.year or ""))}</span></li>'
        for r in records[:100]
    )
    body = (
        '<div class="wrapper"><div class="author-info">'
        f'<h1 class="name">{escape(name)}</h1>'
        f'<p class="orgn">{"；".join(escape(o) for o in orgs)}</p>'
        f'<p class="count">发文量：<span>{len(records)}</span></p></div>'
        f'<div class="author-papers"><h2>发表的文献</h2><ul class="paper-list">{items}</ul></div></div>'
    )
    return page_shell(f"{name}-作者知网节", body, visitor, links)
