"""Detail (abstract) page parser: kcms2 (2023/2026) first, old KCMS (2015–2017) by fallbacks.

Meta tags win (read by `name` or `property`, case-insensitive); the DOM fills what they lack.
Pure: HTML text and the page URL in, a `DetailPage` out. A page without a trustworthy title
raises PARSER_UNSUPPORTED instead of returning an empty record."""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser, LexborNode

from cnki_mcp.errors import ParserUnsupported
from cnki_mcp.identity import iso_date
from cnki_mcp.models import Author, DetailPage, NativeId, ReferenceEntry
from cnki_mcp.parse._html import (
    attr,
    collapse,
    find_year,
    inline_text,
    own_text,
    parse_count,
    parse_html,
    query_param,
    resolve,
    split_list,
    strip_label,
    strip_role,
    text_of,
)
from cnki_mcp.parse.references import entries_in

# Issue line of `.top-tip`: `2024,(3):1-10`, `2025,47(3):1-20`, 2026 `2026 (02)` + ` : 103-107`.
_ISSUE = re.compile(
    r"(?<!\d)(?P<year>(?:18|19|20|21)\d\d)\s*[,，]?\s*(?P<vol>\d+)?\s*"
    r"[(（]\s*(?P<issue>[A-Za-z]?\d+[A-Za-z]?)\s*[)）]"
    r"(?:\s*[:：]\s*(?P<pages>\d+(?:\s*[-–~,+]\s*\d+)*))?"
)
# Old KCMS: `2016年02期`.
_ISSUE_OLD = re.compile(r"(?<!\d)(?P<year>(?:18|19|20|21)\d\d)年\s*(?P<issue>\d+)\s*期")
# A page range stands after the issue, behind a colon (`<span>: 103-107</span>`); a bare
# number in the source line is a degree year or a newspaper date, never pages.
_PAGES = re.compile(r"^\s*[:：]\s*(\d+(?:\s*[-–~,+]\s*\d+)*)\s*$")
# A source-line span holding only a date: a thesis's degree year, a newspaper's issue date.
_DATE_ONLY = re.compile(r"^(?:18|19|20|21)\d\d(?:[-/.]\d{1,2}(?:[-/.]\d{1,2})?)?$")
# Labelled rows that carry the publication date of non-journal types.
_DATE_ROWS = ("报纸日期", "会议时间", "出版时间", "出版日期", "学位年度")
# A labelled DOI element (`<p>DOI：10.5555/xyz.1</p>`, old layouts): the label starts the element's
# text and the DOI is printable ASCII. A DOI anywhere in the page was taken before: the abstract's
# mention of another work (（DOI:10.1016/…）的实验) became the paper's DOI, with its Chinese tail.
_DOI = re.compile(r"^DOI\s*[:：]\s*(10\.\d{4,9}/[!-~]+)", re.I)
_ABSTRACT_SELECTORS = "#ChDivSummary, .abstract-text, #abstract_text"
_DOI_VALUE = re.compile(r"10\.\d{4,9}/\S+")
_DATETIME = re.compile(r"\d{4}-\d{1,2}-\d{1,2}(?:\s+\d{1,2}:\d{2}(?::\d{2})?)?")
_INST_NUMBER = re.compile(r"^\s*(\d+)\s*[.．、]\s*")
_EXCERPT_MARK = re.compile(r"正文快照|全文快照")
# Old KCMS prints `<正>` before an "abstract" that is really the start of the body text.
_BODY_START = re.compile(r"^\s*<\s*正\s*>\s*")
_READ = re.compile(r"HTML阅读|在线阅读")
_PDF = re.compile(r"PDF下载|下载PDF")
_CAJ = re.compile(r"CAJ下载|下载CAJ")
_LOGIN_WORDS = ("login", "Login")
_BRACKET_LABEL = re.compile(r"^【\s*([^】]+?)\s*】\s*")
_FUND_SEPARATORS = "；;"
# A fund's grant numbers may be listed inside its brackets with the same full-width semicolon
# that separates funds: 国家自然科学基金面上项目(72174213；71974206) is ONE fund.
_OPENING = "(（[【《"
_CLOSING = ")）]】》"

# Database code -> document type (site-rules.md §2.1).
_DOC_TYPES = {
    "CJFD": "期刊",
    "CJFQ": "期刊",
    "CJFN": "期刊",
    "CDFD": "博士",
    "CDMD": "硕士",
    "CMFD": "硕士",
    "CPFD": "会议",
    "CCND": "报纸",
    "CYFD": "年鉴",
}


# --- small helpers -------------------------------------------------------------------


def _metas(tree: LexborHTMLParser) -> dict[str, list[str]]:
    """Meta contents by lower-cased `name`/`property`, document order, empties dropped."""
    out: dict[str, list[str]] = {}
    for node in tree.css("meta"):
        key = attr(node, "name") or attr(node, "property")
        value = collapse(node.attributes.get("content"))
        if key and value:
            out.setdefault(key.lower(), []).append(value)
    return out


def _meta(metas: dict[str, list[str]], *names: str) -> str | None:
    for name in names:
        values = metas.get(name.lower())
        if values:
            return values[0]
    return None


def _meta_all(metas: dict[str, list[str]], *names: str) -> list[str]:
    for name in names:
        if metas.get(name.lower()):
            return metas[name.lower()]
    return []


def _in_login_widget(node: LexborNode) -> bool:
    """True when an ancestor is a login widget (class/id containing login/Login, class ecp_)."""
    cur = node.parent
    while cur is not None and cur.tag not in ("html", "-document"):
        cls = cur.attributes.get("class") or ""
        ident = cur.attributes.get("id") or ""
        if any(w in cls or w in ident for w in _LOGIN_WORDS) or "ecp_" in cls:
            return True
        cur = cur.parent
    return False


def _clean_source(text: str) -> str:
    return collapse(text).rstrip(" .．。,，")


def _dedupe(items: list[str]) -> list[str]:
    out: list[str] = []
    for item in items:
        if item and item not in out:
            out.append(item)
    return out


# --- title and people ----------------------------------------------------------------


def _title(tree: LexborHTMLParser, metas: dict[str, list[str]]) -> str:
    title = _meta(metas, "citation_title", "dc.title")
    if title:
        return title
    for sel in (".wx-tit h1", ".wxTitle h2.title", "#chTitle", ".brief h1"):
        for node in tree.css(sel):
            if not _in_login_widget(node) and inline_text(node):
                return inline_text(node)
    for node in tree.css("h1"):
        if not _in_login_widget(node) and inline_text(node):
            return inline_text(node)
    raise ParserUnsupported("详情页缺少可信题名")


def _name_and_marks(node: LexborNode) -> tuple[str, list[int]]:
    """Author text with `<sup>` removed, plus the institution numbers the sup carried."""
    marks: list[int] = []
    for sup in node.css("sup"):
        marks.extend(int(d) for d in re.findall(r"\d+", sup.text()))
        sup.decompose()
    return strip_role(text_of(node, sep="")), marks


def _bracket_rows(tree: LexborHTMLParser) -> dict[str, LexborNode]:
    """Old "summary" layout: `<p>【作者】<a>…</a></p>`; label -> the element holding it."""
    out: dict[str, LexborNode] = {}
    for node in tree.css("p, li, div.keywords"):
        m = _BRACKET_LABEL.match(own_text(node))
        if m and m.group(1) not in out:
            out[m.group(1)] = node
    return out


def _dom_authors(
    tree: LexborHTMLParser, part: LexborNode | None, brackets: dict[str, LexborNode]
) -> list[tuple[str, list[int]]]:
    """Authors as the page shows them, each with the `<sup>` institution numbers it carries."""
    authors: list[tuple[str, list[int]]] = []
    if part is not None:
        nodes = [c for c in part.iter() if c.tag == "span"] or part.css("a")
        for span in nodes:
            target = span.css_first("a") or span
            authors.append(_name_and_marks(target))
    if not authors:
        for sel in (".wx-tit > h3.author a", ".wx-tit > h3.author span", ".wxTitle .author a"):
            nodes = tree.css(sel)
            if nodes:
                authors = [_name_and_marks(n) for n in nodes]
                break
    if not authors and "作者" in brackets:
        authors = [_name_and_marks(a) for a in brackets["作者"].css("a")]
    return [(n, m) for n, m in authors if n]


def _with_dom_marks(names: list[str], dom: list[tuple[str, list[int]]]) -> list[tuple[str, list[int]]]:
    """Meta names keep the affiliation marks of the same author in the DOM (meta has none).

    Matched by name first, else by position when both lists have the same length."""
    marks_by_name: dict[str, list[list[int]]] = {}
    for name, marks in dom:
        marks_by_name.setdefault(name, []).append(marks)
    out: list[tuple[str, list[int]]] = []
    for i, name in enumerate(names):
        same = marks_by_name.get(name)
        if same:
            out.append((name, same.pop(0)))
        elif len(dom) == len(names):
            out.append((name, dom[i][1]))
        else:
            out.append((name, []))
    return out


def _authors(
    tree: LexborHTMLParser, metas: dict[str, list[str]], brackets: dict[str, LexborNode]
) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """(authors with their institutions, all institutions).

    Names may come from meta tags, but per-author institutions always come from the DOM:
    `<sup>1,2</sup>` marks point into the numbered institution line (`1.XX大学`). A page that
    shows ONE unnumbered institution and no marks (kcms2 and old KCMS print a single
    affiliation that way) gives that institution to every author; several unnumbered
    institutions without marks cannot be assigned and stay unassigned."""
    part = tree.css_first("#authorpart")
    dom = _dom_authors(tree, part, brackets)
    meta_names: list[str] = []
    for value in _meta_all(metas, "citation_author", "dc.creator"):
        for name in split_list(value) if ";" in value or "；" in value else [value]:
            name = strip_role(name)
            if name:
                meta_names.append(name)
    authors = _with_dom_marks(meta_names, dom) if meta_names else dom

    insts: list[str] = list(_meta_all(metas, "citation_author_institution", "citation_author_affiliation"))
    numbered: dict[int, str] = {}
    inst_nodes: list[LexborNode] = []
    if part is not None and part.parent is not None:
        # The institution line is the `h3` after `#authorpart`: `h3.author` on the 2026 page, a
        # bare `h3` (no class) with `span > a.author` on the 2023 one (DESIGN.md, "Detail pages").
        for h3 in part.parent.css("h3"):
            if h3.attributes.get("id") != "authorpart" and h3.parent == part.parent:
                inst_nodes.extend(h3.css("a") or h3.css("span"))
    if not inst_nodes:
        inst_nodes = tree.css(".orgn a") or tree.css(".author-org a") or tree.css("#catalog_ORG")
    if not inst_nodes and "机构" in brackets:
        inst_nodes = brackets["机构"].css("a")
    shown: list[str] = []
    for node in inst_nodes:
        text = strip_label(text_of(node, sep=""), "机构").strip(" ;；")
        m = _INST_NUMBER.match(text)
        if m:
            text = text[m.end() :].strip()
            numbered[int(m.group(1))] = text
        if text and text not in shown:
            shown.append(text)
        if text and not insts.count(text):
            insts.append(text)
    single = shown[0] if len(shown) == 1 and not numbered and not any(m for _, m in authors) else None
    resolved = [
        (name, [single] if single else _dedupe([numbered[m] for m in marks if m in numbered]))
        for name, marks in authors
    ]
    return resolved, insts


# --- labelled rows -------------------------------------------------------------------


def _rows(tree: LexborHTMLParser) -> dict[str, LexborNode]:
    """kcms2 `li.top-space` (`span.rowtit` + `p`) and 2017 `p > label[id^=catalog_]` rows."""
    out: dict[str, LexborNode] = {}
    for li in tree.css("li.top-space"):
        label = li.css_first("span.rowtit")
        value = li.css_first("p")
        if label is not None and value is not None:
            out.setdefault(text_of(label).rstrip("：: "), value)
    for label in tree.css("p > label[id^=catalog_]"):
        parent = label.parent
        key = text_of(label).rstrip("：: ")
        if parent is not None and key:
            out.setdefault(key, parent)
    return out


def _row_text(rows: dict[str, LexborNode], *labels: str) -> str | None:
    for label in labels:
        node = rows.get(label)
        if node is not None:
            text = strip_label(text_of(node, sep=" "), label)
            if text:
                return text
    return None


# --- source line ---------------------------------------------------------------------


def _source_link(tree: LexborHTMLParser) -> LexborNode | None:
    top = tree.css_first(".top-tip")
    if top is None:
        return None
    cands = top.css(".source a") + top.css("a[href*='navi.cnki.net']") + top.css("a[href*='/knavi/']")
    for a in cands:
        text = _clean_source(text_of(a))
        cls = a.attributes.get("class") or ""
        if not text or "type" in cls.split() or "查看" in text or _ISSUE.search(text):
            continue
        if re.match(r"^\d", text):
            continue
        return a
    return None


def _issue_fields(text: str) -> dict[str, str | None]:
    m = _ISSUE.search(text)
    if m:
        return m.groupdict()
    m = _ISSUE_OLD.search(text)
    if m:
        return {"year": m.group("year"), "vol": None, "issue": m.group("issue"), "pages": None}
    return {}


# --- anchors, ids, counts ------------------------------------------------------------


def _anchor(tree: LexborHTMLParser, url: str | None, li_sel: str, pattern: re.Pattern[str]) -> str | None:
    for a in tree.css(li_sel):
        href = resolve(url, a.attributes.get("href"))
        if href:
            return href
    for a in tree.css("a[href]"):
        if pattern.search(text_of(a)):
            href = resolve(url, a.attributes.get("href"))
            if href:
                return href
    return None


def _input_value(tree: LexborHTMLParser, *names: str) -> str | None:
    for name in names:
        for sel in (f"input[id='{name}']", f"input[name='{name}']"):
            node = tree.css_first(sel)
            value = attr(node, "value")
            if value:
                return value
    return None


def _native(tree: LexborHTMLParser, url: str | None) -> NativeId:
    node = tree.css_first("[data-filename]")
    if node is not None and attr(node, "data-filename"):
        return NativeId(
            dbcode=attr(node, "data-dbcode"),
            dbname=attr(node, "data-dbname"),
            filename=attr(node, "data-filename"),
        )
    filename = _input_value(tree, "paramfilename", "param-filename")
    if filename:
        return NativeId(
            dbcode=_input_value(tree, "paramdbcode", "param-dbcode"),
            dbname=_input_value(tree, "paramdbname", "param-dbname"),
            filename=filename,
        )
    return NativeId(
        dbcode=query_param(url, "dbcode"),
        dbname=query_param(url, "dbname", "tablename"),
        filename=query_param(url, "filename"),
    )


def _counts(tree: LexborHTMLParser, brackets: dict[str, LexborNode]) -> dict[str, str]:
    """下载/被引/页码/页数 from `p.total-inform` (2023), `div.total` (2017) or 【下载频次】."""
    out: dict[str, str] = {}
    texts = [text_of(n, sep=" ") for n in tree.css("p.total-inform, div.total")]
    for label in ("下载频次", "被引频次"):
        if label in brackets:
            texts.append(f"{label}：{_BRACKET_LABEL.sub('', own_text(brackets[label]))}")
    joined = " ".join(texts).replace("【", " ").replace("】", "：")
    for key, pattern in (
        ("downloads", r"下载(?:频次)?\s*[:：]\s*([\d,.]+\s*万?)"),
        ("cited", r"被引(?:频次|次数)?\s*[:：]\s*([\d,.]+\s*万?)"),
        ("page_count", r"页数\s*[:：]\s*(\d+)"),
        ("pages", r"页码\s*[:：]\s*(\d+(?:\s*[-–~,+]\s*\d+)*)"),
    ):
        m = re.search(pattern, joined)
        if m:
            out[key] = m.group(1)
    # kcms2 2026 stats bar: `p.stats-item.download span.num`.
    if "downloads" not in out:
        num = tree.css_first(".stats-moudle .download .num, .stats-module .download .num")
        if num is not None and text_of(num):
            out["downloads"] = text_of(num)
    if "cited" not in out:
        num = tree.css_first(".stats-moudle .quote .num, .stats-module .quote .num")
        if num is not None and text_of(num):
            out["cited"] = text_of(num)
    return out


# --- abstract, keywords, funds -------------------------------------------------------


def _labelled_doi(tree: LexborHTMLParser) -> str | None:
    """The DOI of an element whose text is `DOI：10.…` (the label first), outside the abstract."""
    root = tree.body or tree.root
    if root is None or "DOI" not in (root.text(deep=True) or "").upper():
        return None
    inside = _abstract_nodes(tree)
    for node in root.css("p, li, span, label, dd, td, div"):
        m = _DOI.match(text_of(node, sep=" "))
        if m and not _holds_abstract(node, inside):
            return m.group(1).rstrip(".;,")
    return None


def _abstract_nodes(tree: LexborHTMLParser) -> set[int]:
    """The nodes (by `mem_id`) that are an abstract element (`_ABSTRACT_SELECTORS`) or lie inside
    one. Not `LexborNode.css_matches`: it is true of a node whose subtree holds a match, so every
    ancestor of the abstract would count as lying inside it (an old layout's info block, beside
    the abstract, holds the labelled DOI)."""
    return {n.mem_id for found in tree.css(_ABSTRACT_SELECTORS) for n in found.traverse()}


def _holds_abstract(node: LexborNode, inside: set[int]) -> bool:
    """Whether `node` is, holds or lies inside the abstract (an abstract may begin `DOI:10.…`);
    `inside`: `_abstract_nodes` of its page."""
    return node.mem_id in inside or node.css_first(_ABSTRACT_SELECTORS) is not None


def _abstract(tree: LexborHTMLParser, metas: dict[str, list[str]]) -> tuple[str | None, str | None]:
    """(abstract, excerpt): a newspaper's 正文快照 and an old `<正>` body start are excerpts."""
    node = None
    for sel in _ABSTRACT_SELECTORS.split(", "):
        for cand in tree.css(sel):
            if cand.tag != "input" and text_of(cand):
                node = cand
                break
        if node is not None:
            break
    if node is None:
        text = _meta(metas, "citation_abstract", "dc.description")
        return (strip_label(text, "摘要") if text else None), None
    text = strip_label(inline_text(node), "摘要")
    parent = node.parent
    if parent is not None and _EXCERPT_MARK.search(_label_of(parent, node)):
        return None, text
    if _BODY_START.match(text):
        return None, _BODY_START.sub("", text)
    return text or None, None


def _label_of(parent: LexborNode, node: LexborNode) -> str:
    """The text beside `node` in `parent` (its label, `正文快照：`), without `node`'s own: an
    abstract that mentions 正文快照 (a study of search engines' snapshots) was taken for an excerpt."""
    parts = [
        (child.text_content or "") if child.tag == "-text" else text_of(child, sep=" ")
        for child in parent.iter(include_text=True)
        if child.mem_id != node.mem_id
    ]
    return " ".join(parts)


def _keywords(tree: LexborHTMLParser, metas: dict[str, list[str]]) -> list[str]:
    for sel in ("p.keywords a", "#ChDivKeyWord a", "#catalog_KEYWORD ~ a"):
        items = [text_of(a).rstrip(";；,， ") for a in tree.css(sel)]
        if any(items):
            return _dedupe(items)
    for sel in ("#ChDivKeyWord", "#catalog_KEYWORD", "p.keywords"):
        node = tree.css_first(sel)
        if node is not None:
            items = split_list(strip_label(text_of(node, sep=" "), "关键词"))
            if items:
                return items
    return [strip_role(k) for v in _meta_all(metas, "citation_keywords", "dc.subject") for k in split_list(v)]


def _funds(tree: LexborHTMLParser, brackets: dict[str, LexborNode]) -> list[str]:
    texts: list[str] = []
    p = tree.css_first("p.funds")
    if p is not None:
        leaves = [s for s in p.css("span") if s.css_first("span") is None]
        texts = [text_of(s, sep=" ") for s in leaves] or [text_of(p, sep=" ")]
    if not texts:
        texts = [text_of(a) for a in tree.css(".funds a")]
    if not texts:
        node = tree.css_first("#catalog_FUND")
        if node is not None:
            holder = node.parent if node.tag == "label" and node.parent is not None else node
            texts = [strip_label(text_of(holder, sep=" "), "基金", "基金资助")]
    if not texts and "基金" in brackets:
        texts = [_BRACKET_LABEL.sub("", text_of(brackets["基金"], sep=" "))]
    out: list[str] = []
    for text in texts:
        for part in split_outside_brackets(text):
            part = collapse(part)
            if part and part not in out:
                out.append(part)
    return out


def split_outside_brackets(text: str) -> list[str]:
    """Split on `；`/`;` that stand outside any bracket pair; separators inside brackets stay."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in text:
        if ch in _OPENING:
            depth += 1
        elif ch in _CLOSING and depth:
            depth -= 1
        if ch in _FUND_SEPARATORS and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


# --- inline reference lists ----------------------------------------------------------


def _inline_list(tree: LexborHTMLParser, url: str | None, selectors: str) -> list[ReferenceEntry]:
    """Entries of an inline list container (kcms2 `#quoted-references`/`#quoted-citations`).

    The 2026 page ships these containers empty and fills them by AJAX; empty gives []."""
    node = tree.css_first(selectors)
    return entries_in(node, url) if node is not None else []


# --- the parser ----------------------------------------------------------------------


def parse_detail(html: str, url: str | None = None) -> DetailPage:
    """Parse a detail page; raises PARSER_UNSUPPORTED when no trustworthy title is present."""
    tree = parse_html(html)
    metas = _metas(tree)
    title = _title(tree, metas)
    brackets = _bracket_rows(tree)
    rows = _rows(tree)
    raw_authors, institutions = _authors(tree, metas, brackets)
    authors = [Author(name=name, institutions=insts) for name, insts in raw_authors]

    source = _meta(metas, "citation_journal_title", "citation_conference_title", "dc.source")
    link = _source_link(tree)
    source_url = resolve(url, link.attributes.get("href")) if link is not None else None
    if not source and link is not None:
        source = _clean_source(text_of(link))
    if not source:
        # Books and yearbooks print their publisher/title unlinked: `<span class="source">`.
        plain = tree.css_first(".top-tip span.source")
        source = _clean_source(text_of(plain)) if plain is not None else None
    if not source:
        old = tree.css_first(".sourinfo p.title a, .detailLink a")
        source = _clean_source(text_of(old)) if old is not None else None

    top = tree.css_first(".top-tip")
    issue_text = text_of(top, sep=" ") if top is not None else ""
    if not issue_text:
        old_issue = tree.css_first(".sourinfo, .detailLink")
        issue_text = text_of(old_issue, sep=" ") if old_issue is not None else ""
    issue = _issue_fields(issue_text)

    date = _meta(metas, "citation_publication_date", "citation_date", "dc.date")
    if not date:
        node = tree.css_first(".top-tip .date, #catalog_PUBLISHDATE")
        date = text_of(node) or None if node is not None else None
    if not date:
        date = _row_text(rows, *_DATE_ROWS)
    if not date and top is not None:
        date = next((t for t in (own_text(n) for n in top.css("span")) if _DATE_ONLY.match(t)), None)
    date = iso_date(date)
    year = find_year(date)
    if issue.get("year"):
        year = int(issue["year"] or 0) or year  # the issue year is the citation year

    volume = _meta(metas, "citation_volume", "prism.volume") or issue.get("vol")
    number = _meta(metas, "citation_issue", "prism.number") or issue.get("issue")
    pages = _meta(metas, "citation_pages")
    if not pages:
        first_page = _meta(metas, "citation_firstpage", "prism.startingpage")
        last_page = _meta(metas, "citation_lastpage", "prism.endingpage")
        if first_page:
            pages = f"{first_page}-{last_page}" if last_page and last_page != first_page else first_page
    if not pages and issue.get("pages"):
        pages = re.sub(r"\s+", "", issue["pages"] or "")
    if not pages and top is not None:
        for span in top.css("span"):
            m = _PAGES.match(own_text(span))
            if m:
                pages = re.sub(r"\s+", "", m.group(1))
                break
    counts = _counts(tree, brackets)
    if not pages and counts.get("pages"):
        pages = re.sub(r"\s+", "", counts["pages"])
    if not pages:
        row_pages = _row_text(rows, "页码")  # proceedings papers: a labelled row
        if row_pages and re.fullmatch(r"\d+(?:\s*[-–~,+]\s*\d+)*", row_pages):
            pages = re.sub(r"\s+", "", row_pages)
    if not pages:
        edition = _row_text(rows, "版号")  # newspapers: 第2版 is the page a citation gives
        m = re.fullmatch(r"第?\s*(\d+)\s*版?", edition or "")
        if m:
            pages = m.group(1)

    doi = _meta(metas, "citation_doi", "dc.identifier.doi")
    row_doi = _row_text(rows, "DOI")
    if not doi and row_doi and _DOI_VALUE.match(row_doi):
        doi = row_doi.split()[0]
    if not doi:
        doi = _labelled_doi(tree)

    abstract, excerpt = _abstract(tree, metas)
    classification = split_list(_row_text(rows, "分类号") or "")
    if not classification and "分类号" in brackets:
        classification = split_list(_BRACKET_LABEL.sub("", text_of(brackets["分类号"], sep=" ")))
    online = _row_text(rows, "在线公开时间", "网络出版时间")
    if online:
        m = _DATETIME.search(online)
        online = m.group(0) if m else online
    if year is None:
        year = find_year(online)  # an online-first paper without an issue yet
    supervisor = _row_text(rows, "导师")
    if not supervisor and "导师" in brackets:
        supervisor = "; ".join(split_list(_BRACKET_LABEL.sub("", text_of(brackets["导师"], sep=" "))))
    elif supervisor:
        supervisor = "; ".join(split_list(supervisor))

    native = _native(tree, url)
    doc_type = _DOC_TYPES.get((native.dbcode or (native.dbname or "")[:4]).upper())
    tiers = _dedupe([text_of(a) for a in tree.css(".top-tip a.type")])

    return DetailPage(
        title=title,
        title_en=_meta(metas, "citation_title_en") or None,
        authors=authors,
        institutions=institutions,
        source=source or None,
        source_url=source_url,
        doc_type=doc_type,
        date=date,
        online_date=online,
        year=year,
        volume=volume or None,
        issue=number or None,
        pages=pages or None,
        doi=doi,
        abstract=abstract,
        excerpt=excerpt,
        keywords=_keywords(tree, metas),
        funds=_funds(tree, brackets),
        classification=classification,
        album=_row_text(rows, "专辑"),
        topic=_row_text(rows, "专题"),
        supervisor=supervisor or None,
        degree_place=_row_text(rows, "学位授予单位"),
        conference=_row_text(rows, "会议名称"),
        conference_place=_row_text(rows, "会议地点"),
        conference_date=_row_text(rows, "会议时间"),
        native=native,
        downloads=parse_count(counts.get("downloads")),
        cited=parse_count(counts.get("cited")),
        page_count=parse_count(counts.get("page_count")),
        source_tiers=tiers,
        reader_url=_anchor(tree, url, "li.btn-html a", _READ),
        pdf_url=_anchor(tree, url, "li.btn-dlpdf a", _PDF),
        caj_url=_anchor(tree, url, "li.btn-dlcaj a", _CAJ),
        references=_inline_list(tree, url, "div#quoted-references, div#references, div.references"),
        citing=_inline_list(tree, url, "div#quoted-citations, div#citing, div.citing"),
    )
