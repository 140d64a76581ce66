"""HTML reader parser: the article body, its sections, and how complete the capture looks.

The reader fills chapters lazily and may serve a trial (abstract-only) body, so the result
always carries coverage evidence; an abstract is never accepted as full text. Pure; no I/O."""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser, LexborNode

from cnki_mcp.errors import IdentityConflict, ReaderUnsupported
from cnki_mcp.models import ReaderCoverage, ReaderPage, ReaderScope, Section
from cnki_mcp.parse._html import collapse, parse_html, query_param, text_of
from cnki_mcp.parse.keys import title_key

_CONTAINERS = ("#XMLContent", ".reader-content", ".html-content")
_TOC = ".catalog a[href^='#'], .toc a[href^='#'], .catalogboxs .tit"
# Reader chrome and the abstract block: neither is body text.
_CHROME = "nav, header, footer, aside, button, .toolbar, .ai-panel, .catalog, .catalogboxs, #ChDivSummary"
_BLOCKS = frozenset(
    [
        "div",
        "section",
        "article",
        "p",
        "li",
        "tr",
        "blockquote",
        "figure",
        "figcaption",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "ul",
        "ol",
        "table",
    ]
)
_NON_TEXT = "img, canvas, svg, math, iframe, object"
_CELLS = frozenset(["td", "th"])
CELL_SEPARATOR = " | "  # between the cells of a table row
_TRIAL_TEXT = re.compile(r"仅供试读|试读结束|购买后阅读全文|试读内容结束|订购后阅读全文|剩余内容请购买")
_MIN_BODY = 150  # characters; below this the "body" is an abstract or a notice
# Extracted text this much below the DOM text means the extraction dropped content.
_PARTIAL_RATIO = 0.9
_INLINE_WS = re.compile(r"[ \t\r\f\v\u00a0\u3000]+")


def _non_space(text: str) -> int:
    return sum(1 for ch in text if not ch.isspace())


def _walk(node: LexborNode, out: list[str]) -> None:
    for child in node.iter(include_text=True):
        tag = child.tag
        if tag == "-text":
            out.append(_INLINE_WS.sub(" ", (child.text_content or "").replace("\n", " ")))
        elif tag == "br":
            out.append("\n")
        elif tag == "tr":
            # one line per row, its cells separated: run together, a row of 12 | 3.4 read 123.4
            out.append("\n\n")
            cells = [cell for cell in child.iter() if cell.tag in _CELLS]
            if cells:
                out.append(CELL_SEPARATOR.join(_cell_text(cell) for cell in cells))
            else:
                _walk(child, out)
            out.append("\n\n")
        elif tag in _BLOCKS:
            out.append("\n\n")
            _walk(child, out)
            out.append("\n\n")
        else:
            _walk(child, out)


def _cell_text(cell: LexborNode) -> str:
    """A table cell on one line: its paragraphs and breaks joined by spaces."""
    parts: list[str] = []
    _walk(cell, parts)
    return " ".join("".join(parts).split())


def _clean(raw: str) -> str:
    """Blocks joined by one blank line; MathJax loading lines and repeated lines dropped."""
    lines: list[str] = []
    previous = ""
    for line in raw.split("\n"):
        line = line.strip()
        if line.startswith("Loading [MathJax]"):
            continue
        if not line:
            if lines and lines[-1]:
                lines.append("")
            continue
        if line == previous:
            continue
        lines.append(line)
        previous = line
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def _container(tree: LexborHTMLParser) -> LexborNode:
    node = tree.css_first("#paperRead")
    if node is None:
        for sel in _CONTAINERS:
            node = tree.css_first(sel)
            if node is not None:
                break
    if node is None:
        raise ReaderUnsupported("阅读页缺少正文容器")
    return node


def _is_title(node: LexborNode) -> bool:
    """The paper title (`.js-prefix h1.Chapter`, `.article-title`, `.paper-title`): not a section."""
    classes = (node.attributes.get("class") or "").split()
    if "article-title" in classes or "paper-title" in classes:
        return True
    if node.tag != "h1" or "Chapter" not in classes:
        return False
    cur = node.parent
    while cur is not None:
        if "js-prefix" in (cur.attributes.get("class") or "").split():
            return True
        cur = cur.parent
    return False


def _sections(container: LexborNode, text: str) -> list[Section]:
    """Body headings in order; levels are outline levels (the shallowest heading tag is 1),
    `#bibliography` / `#footnote` are forced to 1, the paper title is excluded."""
    raw: list[tuple[int | None, str]] = []
    for node in container.css("h1, h2, h3, h4, h5, h6"):
        title = text_of(node, sep=" ")
        if not title or _is_title(node):
            continue
        ident = (node.attributes.get("id") or "").lower()
        raw.append((None if ident in ("bibliography", "footnote") else int(node.tag[1]), title))
    top = min((d for d, _ in raw if d is not None), default=1)
    heads = [(1 if d is None else d - top + 1, title) for d, title in raw]
    found: list[tuple[int, str, int]] = []
    cursor = 0
    for level, title in heads:
        # Headings are their own blocks, so they start a line of the cleaned text.
        m = re.compile(r"(?m)^" + re.escape(title) + r"$").search(text, cursor)
        if m is None:
            continue
        found.append((level, title, m.start()))
        cursor = m.end()
    out: list[Section] = []
    for i, (level, title, offset) in enumerate(found):
        end = len(text)
        for later_level, _, later_offset in found[i + 1 :]:
            if later_level <= level:
                end = later_offset
                break
        out.append(Section(level=level, title=title, offset=offset, length=end - offset))
    return out


def parse_reader(html: str, url: str | None = None, expected_title: str | None = None) -> ReaderPage:
    """Parse a reader page; READER_UNSUPPORTED for no body, IDENTITY_CONFLICT for another paper."""
    tree = parse_html(html)
    container = _container(tree)
    meta = next(
        (n for n in tree.css("meta") if (n.attributes.get("name") or "").lower() == "citation_title"),
        None,
    )
    title = collapse(meta.attributes.get("content")) if meta is not None else ""
    if not title:
        node = container.css_first(".js-prefix h1.Chapter, .article-title, .paper-title")
        title = text_of(node, sep=" ") if node is not None else ""
    if expected_title and title and title_key(title) != title_key(expected_title):
        raise IdentityConflict("阅读页题名与请求不一致", expected=expected_title, found=title)

    catalog = [c for c in (text_of(n, sep=" ") for n in tree.css(_TOC)) if c]
    catalog = list(dict.fromkeys(catalog))
    page_text = text_of(tree.body or tree.root, sep=" ")
    trial = query_param(url, "loginType") == "trialRead" or bool(_TRIAL_TEXT.search(page_text))

    for node in container.css(_CHROME):
        node.decompose()
    ident = container.attributes.get("id")
    name = f"#{ident}" if ident else container.tag or "?"
    dom_chars = _non_space(container.text(deep=True, separator=" "))
    parts: list[str] = []
    _walk(container, parts)
    text = _clean("".join(parts))
    if len(text) < _MIN_BODY:
        raise ReaderUnsupported("正文不足，未将摘要当全文", characters=len(text))

    sections = _sections(container, text)
    heading_keys = {title_key(s.title) for s in sections}
    missing = [c for c in catalog if title_key(c) not in heading_keys]
    extracted = _non_space(text)
    if trial:
        scope = ReaderScope.TRIAL
    elif missing or extracted < dom_chars * _PARTIAL_RATIO:
        scope = ReaderScope.PARTIAL
    else:
        scope = ReaderScope.UNKNOWN
    coverage = ReaderCoverage(
        container=name,
        dom_characters=dom_chars,
        extracted_characters=extracted,
        catalog_headings=catalog,
        missing_catalog_headings=missing,
        non_text_elements=len(container.css(_NON_TEXT)),
        scope=scope,
    )
    return ReaderPage(title=title or None, text=text, sections=sections, trial=trial, coverage=coverage)
