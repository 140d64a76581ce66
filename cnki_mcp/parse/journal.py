"""Journal (navi) page parser for both page generations, and the old KNavi search-result list.

The navi page of 2023 on lays its data out as `h3.titbox` (name, translated name in a child `p`),
`p.journalType2 > span` (index tags, one per span) and `<label>X</label><span>v</span>` pairs in
`ul#JournalBaseInfo`, `ul#publishInfo` and `ul#evaluateInfo`; only those elements count. The
older generation keeps everything in `.journalInfo .infobox` as `标签：值` text; there only text
inside that root counts, so impact factors or index names in asides, ads or prose never become
metrics or tier tags (DESIGN.md, "Journal pages"). Pure; no I/O."""

from __future__ import annotations

import re
import unicodedata

from selectolax.lexbor import LexborHTMLParser, LexborNode

from cnki_mcp.errors import SourceIdentityUnconfirmed, SourceSchemaUnsupported
from cnki_mcp.models import IdentityBasis, JournalPage, JournalState
from cnki_mcp.parse._html import attr, collapse, own_text, parse_html, text_of
from cnki_mcp.parse.keys import title_key

# Every index tag seen on navi pages (DESIGN.md, "Journal pages"), longer alternatives first so
# CSSCI is not read as SCI. `CSCD扩展版` and `CSSCI来源集刊` are whole tags: reading them as
# `CSCD` / `CSSCI` would claim the core library for an extended-library journal. AMI grades come
# with an optional collection prefix: AMI集刊核心, AMI新刊入库, AMI职院刊扩展, AMI外文刊权威.
_TIER = re.compile(
    r"(?<![A-Za-z0-9])"
    r"(CSSCI(?:来源期刊|来源集刊|扩展版)?|CSCD(?:来源期刊|核心库|扩展库|扩展版)?|北大核心|SSCI|SCI(?:-E)?|A&HCI"
    r"|EI(?:来源期刊)?|AMI(?:综合评价)?(?:集刊|新刊|职院刊|外文刊)?(?:顶级|权威|核心|扩展|入库)"
    r"|JST|WJCI|INSPEC|CA|Pж\(AJ\)|卓越期刊|社科基金资助期刊)"
    r"(?![A-Za-z0-9])"
)
# An element may carry a leading label before its tags: `收录：CSSCI`.
_TIER_LABEL = re.compile(r"^(?:收录|数据库收录|来源类别|期刊荣誉|期刊收录)\s*[:：]")
_COMPOSITE = re.compile(r"复合影响因子\s*[:：]?\s*(\d+(?:\.\d+)?)")
_AGGREGATE = re.compile(r"综合影响因子\s*[:：]?\s*(\d+(?:\.\d+)?)")
_METRIC_YEAR = re.compile(r"[(（]\s*(\d{4})\s*版?\s*[)）]\s*(?:复合|综合)影响因子")
_FORMER = re.compile(r"^曾用刊名\s*[:：]\s*(.+)$")
_SPONSOR = re.compile(r"^主办单位\s*[:：]\s*(.+)$")
_ISSN = re.compile(r"ISSN\s*[:：]\s*(\d{4}\s*-\s*\d{3}[\dXx])")
_CN = re.compile(r"(?<![A-Za-z])CN\s*[:：]\s*(\d{2}\s*-\s*\d{4}\s*/\s*[A-Za-z0-9.]+)")
_ISSN_VALUE = re.compile(r"^\d{4}\s*-\s*\d{3}[\dXx]$")
_NUMBER = re.compile(r"^\d+(?:\.\d+)?$")
_HEADINGS = ("h1", "h2", "h3")
# The 2023 navi generation: any of these marks it.
_NAVI_2023 = "h3.titbox1, p.journalType2, #JournalBaseInfo label, #evaluateInfo label"
_PAIR_LISTS = ("ul#JournalBaseInfo", "ul#publishInfo", "ul#evaluateInfo")


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


def _fields(
    name: str,
    translated: list[str],
    former: list[str],
    tiers: list[str],
    composite: float | None,
    aggregate: float | None,
    metric_year: int | None,
    issn: str | None,
    cn: str | None,
    sponsor: str | None,
) -> dict[str, object]:
    return {
        "name": name,
        "translated_titles": translated,
        "former_titles": former,
        "tiers": tiers,
        "composite_if": composite,
        "aggregate_if": aggregate,
        "metric_year": metric_year if composite is not None or aggregate is not None else None,
        "issn": re.sub(r"\s+", "", issn).upper() if issn else None,
        "cn": re.sub(r"\s+", "", cn) if cn else None,
        "sponsor": sponsor or None,
    }


def _label_pairs(tree: LexborHTMLParser) -> list[tuple[str, str]]:
    """(label, value) of every `<label>X</label>…<span>v</span>` in the navi info lists.

    The label may carry a trailing colon; the value is the span's `title` (full text of a cut
    value) or its text."""
    out: list[tuple[str, str]] = []
    for sel in _PAIR_LISTS:
        for ul in tree.css(sel):
            for label in ul.css("label"):
                key = collapse(text_of(label)).rstrip("：: ")
                span = label.next
                while span is not None and span.tag != "span":
                    span = span.next
                if not key or span is None:
                    continue
                value = attr(span, "title") or text_of(span, sep=" ")
                out.append((key, collapse(value)))
    return out


def _navi_2023(tree: LexborHTMLParser) -> dict[str, object]:
    titbox = tree.css_first("h3.titbox1") or tree.css_first("h3.titbox")
    if titbox is None:
        raise SourceSchemaUnsupported("期刊页缺少 h3.titbox")
    name = own_text(titbox)
    translated = [text_of(p, sep=" ") for p in titbox.css("p") if text_of(p)]
    # Index tags: one per span, kept as the page writes them, known or not.
    tiers = list(dict.fromkeys(t for t in (collapse(text_of(s)) for s in tree.css("p.journalType2 > span")) if t))
    pairs = _label_pairs(tree)

    def value(label: str) -> str | None:
        return next((v for k, v in pairs if k == label and v), None)

    composites = [_number(v) for k, v in pairs if "复合影响因子" in k]
    aggregates = [_number(v) for k, v in pairs if "综合影响因子" in k]
    years = {int(m.group(1)) for k, _ in pairs if (m := re.search(r"(\d{4})", k)) and "影响因子" in k}
    issn = value("ISSN")
    return _fields(
        name,
        translated,
        _split_names(value("曾用刊名") or ""),
        tiers,
        composites[0] if len(composites) == 1 else None,
        aggregates[0] if len(aggregates) == 1 else None,
        years.pop() if len(years) == 1 else None,
        issn if issn and _ISSN_VALUE.match(issn) else None,
        value("CN"),
        value("主办单位"),
    )


def _legacy(tree: LexborHTMLParser) -> dict[str, object]:
    root = _root(tree)
    titbox = root.css_first("h3.titbox")
    if titbox is not None:
        name = own_text(titbox)
        translated = [text_of(p, sep=" ") for p in titbox.css("p") if text_of(p)]
    else:
        head = next((h for h in root.css("h1, h2, h3") if own_text(h) or text_of(h)), None)
        name = (own_text(head) or text_of(head)) if head is not None else ""
        translated = []

    former: list[str] = []
    tiers: list[str] = []
    sponsor: str | None = None
    for node in root.css("p, span, a, li"):
        if _inside_heading(node, root):
            continue
        text = own_text(node)
        full = collapse(text_of(node, sep=" "))
        m = _FORMER.match(full)
        if m and node.tag in ("p", "li", "span"):
            for title in _split_names(m.group(1)):
                if title not in former:
                    former.append(title)
            continue
        m = _SPONSOR.match(full)
        if m and node.tag in ("p", "li", "span"):
            sponsor = sponsor or m.group(1).strip()
            continue
        parent = node.parent
        in_tag_list = node.tag == "span" and parent is not None and "journalType" in (parent.attributes.get("class") or "")
        found = [collapse(text)] if in_tag_list and collapse(text) else tier_tags(text)
        for tag in found:
            if tag not in tiers:
                tiers.append(tag)

    root_text = text_of(root, sep=" ")
    years = {int(y) for y in _METRIC_YEAR.findall(root_text)}
    issn = _ISSN.search(root_text)
    cn = _CN.search(root_text)
    return _fields(
        name,
        translated,
        former,
        tiers,
        _single(_COMPOSITE, root_text),
        _single(_AGGREGATE, root_text),
        years.pop() if len(years) == 1 else None,
        issn.group(1) if issn else None,
        cn.group(1) if cn else None,
        sponsor,
    )


def parse_journal(html: str, url: str | None = None, expected_source: str | None = None) -> JournalPage:
    """Parse a navi journal page of either generation; with `expected_source`, confirm it is that journal."""
    del url  # journal fields carry no links; the parameter keeps the parser signature uniform
    tree = parse_html(html)
    fields = _navi_2023(tree) if tree.css_first(_NAVI_2023) is not None else _legacy(tree)
    name = str(fields["name"])
    if not name:
        raise SourceSchemaUnsupported("期刊页缺少刊名")
    present = bool(fields["tiers"]) or fields["composite_if"] is not None or fields["aggregate_if"] is not None
    translated = list(fields["translated_titles"])  # type: ignore[call-overload]
    former = list(fields["former_titles"])  # type: ignore[call-overload]
    basis = _identity(expected_source, name, translated, former) if expected_source else None
    return JournalPage.model_validate(
        {**fields, "state": JournalState.PRESENT if present else JournalState.UNKNOWN, "identity_basis": basis}
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
                sponsor=(fields.get("主办单位") or None),
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
    m = _NUMBER.match(text.strip())
    return float(m.group(0)) if m else None
