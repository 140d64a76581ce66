"""Journal (navi) page parser, and the old KNavi journal search-result list.

Only text inside the page's `.journalInfo .infobox` root counts: impact factors or index names
in asides, ads or prose elsewhere never become metrics or tier tags. Pure; no I/O."""

from __future__ import annotations

import re
import unicodedata

from selectolax.lexbor import LexborHTMLParser, LexborNode

from cnki_mcp.errors import SourceIdentityUnconfirmed, SourceSchemaUnsupported
from cnki_mcp.models import IdentityBasis, JournalPage, JournalState
from cnki_mcp.parse._html import collapse, own_text, parse_html, text_of
from cnki_mcp.parse.keys import title_key

# Tier alternation (facts §2.3), longer alternatives first so CSSCI is not read as SCI.
# Real navi labels `CSCD扩展版` and `CSSCI来源集刊` (2023 dataset) are whole tags: reading them
# as `CSCD` / `CSSCI` would claim the core library for an extended-library journal.
_TIER = re.compile(
    r"(?<![A-Za-z0-9])"
    r"(CSSCI(?:来源期刊|来源集刊|扩展版)?|CSCD(?:来源期刊|核心库|扩展库|扩展版)?|北大核心|SSCI|SCI(?:-E)?|A&HCI"
    r"|EI(?:来源期刊)?|AMI(?:综合评价)?(?:顶级|权威|核心|扩展|入库))"
    r"(?![A-Za-z0-9])"
)
# An element may carry a leading label before its tags: `收录：CSSCI`.
_TIER_LABEL = re.compile(r"^(?:收录|数据库收录|来源类别|期刊荣誉|期刊收录)\s*[:：]")
_COMPOSITE = re.compile(r"复合影响因子\s*[:：]?\s*(\d+(?:\.\d+)?)")
_AGGREGATE = re.compile(r"综合影响因子\s*[:：]?\s*(\d+(?:\.\d+)?)")
_METRIC_YEAR = re.compile(r"[(（]\s*(\d{4})\s*版\s*[)）]\s*(?:复合|综合)影响因子")
_FORMER = re.compile(r"^曾用刊名\s*[:：]\s*(.+)$")
_ISSN = re.compile(r"ISSN\s*[:：]\s*(\d{4}\s*-\s*\d{3}[\dXx])")
_CN = re.compile(r"(?<![A-Za-z])CN\s*[:：]\s*(\d{2}\s*-\s*\d{4}\s*/\s*[A-Za-z0-9.]+)")
_HEADINGS = ("h1", "h2", "h3")


def _inside_heading(node: LexborNode, root: LexborNode) -> bool:
    cur = node.parent
    while cur is not None and cur is not root and cur.tag not in ("html", "body"):
        if cur.tag in _HEADINGS:
            return True
        cur = cur.parent
    return False


def _label_sized(text: str) -> bool:
    """Only tags plus punctuation/space, or a recognised label + colon before the tags."""
    if _TIER_LABEL.match(text):
        return True
    rest = _TIER.sub("", text)
    return all(ch.isspace() or unicodedata.category(ch)[0] in "PZ" for ch in rest)


def tier_tags(text: str) -> list[str]:
    """Tier tags in one element's own text, or [] when the text is prose, not a label."""
    text = collapse(text)
    found = [m.group(1) for m in _TIER.finditer(text)]
    if not found or not _label_sized(text):
        return []
    return list(dict.fromkeys(found))


def _single(pattern: re.Pattern[str], text: str) -> float | None:
    """The number when EXACTLY ONE match exists; several candidates mean we cannot know."""
    matches = pattern.findall(text)
    return float(matches[0]) if len(matches) == 1 else None


def _split_names(text: str) -> list[str]:
    out: list[str] = []
    for part in re.split(r"\s*[;；]\s*", collapse(text)):
        part = part.strip(" ,，.。")
        if part and part not in out:
            out.append(part)
    return out


def _identity(expected: str, name: str, translated: list[str], former: list[str]) -> IdentityBasis:
    """Which title the requested source equals (by key; a substring never matches)."""
    want = title_key(expected)
    if want:
        if want == title_key(name):
            return IdentityBasis.CURRENT_TITLE
        if any(want == title_key(t) for t in translated):
            return IdentityBasis.TRANSLATED_TITLE
        if any(want == title_key(t) for t in former):
            return IdentityBasis.FORMER_TITLE
    raise SourceIdentityUnconfirmed(expected=expected, found=name)


def _root(tree: LexborHTMLParser) -> LexborNode:
    root = tree.css_first(".journalInfo .infobox")
    if root is None:
        raise SourceSchemaUnsupported("期刊页缺少 .journalInfo .infobox")
    return root


def parse_journal(html: str, url: str | None = None, expected_source: str | None = None) -> JournalPage:
    """Parse a navi journal page; with `expected_source`, confirm it is that journal."""
    del url  # journal fields carry no links; the parameter keeps the parser signature uniform
    tree = parse_html(html)
    root = _root(tree)
    titbox = root.css_first("h3.titbox")
    if titbox is not None:
        name = own_text(titbox)
        translated = [text_of(p, sep=" ") for p in titbox.css("p") if text_of(p)]
    else:
        head = next((h for h in root.css("h1, h2, h3") if own_text(h) or text_of(h)), None)
        name = (own_text(head) or text_of(head)) if head is not None else ""
        translated = []
    if not name:
        raise SourceSchemaUnsupported("期刊页缺少刊名")

    former: list[str] = []
    tiers: list[str] = []
    for node in root.css("p, span, a, li"):
        if _inside_heading(node, root):
            continue
        text = own_text(node)
        m = _FORMER.match(collapse(text_of(node, sep=" ")))
        if m and node.tag in ("p", "li", "span"):
            for title in _split_names(m.group(1)):
                if title not in former:
                    former.append(title)
            continue
        for tag in tier_tags(text):
            if tag not in tiers:
                tiers.append(tag)

    root_text = text_of(root, sep=" ")
    composite = _single(_COMPOSITE, root_text)
    aggregate = _single(_AGGREGATE, root_text)
    years = {int(y) for y in _METRIC_YEAR.findall(root_text)}
    metric_year = years.pop() if len(years) == 1 else None
    issn = _ISSN.search(root_text)
    cn = _CN.search(root_text)
    present = bool(tiers) or composite is not None or aggregate is not None
    basis = _identity(expected_source, name, translated, former) if expected_source else None
    return JournalPage(
        name=name,
        translated_titles=translated,
        former_titles=former,
        tiers=tiers,
        composite_if=composite,
        aggregate_if=aggregate,
        metric_year=metric_year,
        issn=re.sub(r"\s+", "", issn.group(1)).upper() if issn else None,
        cn=re.sub(r"\s+", "", cn.group(1)) if cn else None,
        state=JournalState.PRESENT if present else JournalState.UNKNOWN,
        identity_basis=basis,
    )


def parse_journal_search(html: str, url: str | None = None) -> list[JournalPage]:
    """Old KNavi (2017) journal search results: `dl.result > dd`, one journal per `dd`.

    A list with no rows gives [] only when the page says so (`共0条`); markup without
    `#searchResult`/`dl.result` raises SOURCE_SCHEMA_UNSUPPORTED."""
    del url
    tree = parse_html(html)
    result = tree.css_first("dl.result")
    if result is None:
        count = tree.css_first("#searchResult .lblCount")
        if count is not None and text_of(count) == "0":
            return []
        raise SourceSchemaUnsupported("期刊检索结果结构无法识别")
    out: list[JournalPage] = []
    for dd in result.css("dd"):
        # The 2017 toolbar uses self-closing `<a/>`, which HTML parsing re-opens inside later
        # elements; only the anchor with a journal href is the title link.
        link = dd.css_first("div.re_brief h1 a[href*='pubDetail'], div.re_brief h1 a[href*='baseid']")
        if link is None:
            continue
        name = own_text(link) or collapse(link.attributes.get("title"))
        if not name:
            continue
        translated = [text_of(i, sep=" ") for i in link.css("i") if text_of(i)]
        fields: dict[str, str] = {}
        for span in dd.css("li > span"):
            text = text_of(span, sep=" ")
            m = re.match(r"^([^:：]+)\s*[:：]\s*(.*)$", text)
            if m:
                fields.setdefault(m.group(1).strip(), m.group(2).strip())
        composite = _number(fields.get("复合影响因子"))
        aggregate = _number(fields.get("综合影响因子"))
        out.append(
            JournalPage(
                name=name,
                translated_titles=translated,
                former_titles=_split_names(fields.get("曾用刊名", "")),
                composite_if=composite,
                aggregate_if=aggregate,
                issn=(fields.get("ISSN") or None),
                cn=(fields.get("CN") or None),
                state=JournalState.PRESENT
                if composite is not None or aggregate is not None
                else JournalState.UNKNOWN,
            )
        )
    if not out and result.css("dd"):
        raise SourceSchemaUnsupported("期刊检索结果行无法识别")
    return out


def _number(text: str | None) -> float | None:
    if not text:
        return None
    m = re.match(r"^\d+(?:\.\d+)?$", text.strip())
    return float(m.group(0)) if m else None
