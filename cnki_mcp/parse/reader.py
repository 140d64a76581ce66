"""HTML reader parser: the article body, its sections, and how complete the capture looks.

The reader fills chapters lazily and may serve a trial (abstract-only) body, so the result
always carries coverage evidence; an abstract is never accepted as full text. Pure; no I/O."""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser, LexborNode

from cnki_mcp.errors import IdentityConflict, ReaderUnsupported
from cnki_mcp.models import ReaderCoverage, ReaderPage, ReaderScope, Section
from cnki_mcp.parse._html import clean_text, collapse, inline_text, parse_html, query_param
from cnki_mcp.parse.keys import title_key
from cnki_mcp.parse.mathtext import math_text, script

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
IMAGE_MARK = "[图片]"  # where an image without alt text stood
_IMAGE_MARKS = re.compile(r"\[图(?:片|：[^\]\n]*)\]")
# spans above these are page errors, not layouts (a colspan's text is repeated in each column)
_MAX_SPAN = {"colspan": 64, "rowspan": 1000}
_TRIAL_TEXT = re.compile(r"仅供试读|试读结束|购买后阅读全文|试读内容结束|订购后阅读全文|剩余内容请购买")
# A trial notice is a short element of its own (`<p>试读结束，购买后阅读全文</p>` under the part
# shown); the same words in the article's prose (a paper on paid reading quoting them, in a
# paragraph, a heading or emphasis) are the paper's text and must not make it a trial.
_NOTICE_MAX = 60
_NOT_NOTICE = frozenset(["h1", "h2", "h3", "h4", "h5", "h6"])
_FORMATTING = frozenset(["em", "strong", "b", "i", "u", "font", "q", "cite", "sup", "sub", "small", "big", "mark", "code"])
_MIN_BODY = 150  # characters; below this the "body" is an abstract or a notice
# Extracted text this much below the DOM text means the extraction dropped content.
_PARTIAL_RATIO = 0.9
_INLINE_WS = re.compile(r"[ \t\r\f\v\u00a0\u3000]+")


def _non_space(text: str) -> int:
    return sum(1 for ch in text if not ch.isspace())


def _walk(node: LexborNode, out: list[str], rows: dict[int, list[str]] | None = None) -> None:
    """Append `node`'s text to `out`; `rows` holds the cells of the enclosing table's rows."""
    for child in node.iter(include_text=True):
        tag = child.tag
        if tag == "-text":
            out.append(_INLINE_WS.sub(" ", clean_text(child.text_content or "").replace("\n", " ")))
        elif tag == "br":
            out.append("\n")
        elif tag in ("sup", "sub"):
            # the script level stays visible: 10<sup>-3</sup> read 10-3, H<sub>2</sub>O read H2O
            out.append(script(_inline_text(child), tag, _before(out)))
        elif tag == "img":
            # a figure or a formula set as an image: where it stood is said, not silently lost
            # ("公式如图所示" with the formula gone); its alt text when it has one
            alt = collapse(child.attributes.get("alt"))
            out.append(f"[图：{alt}]" if alt else IMAGE_MARK)
        elif tag == "math":
            out.append(math_text(child))  # flattened, y = x^2 + 1/(n+1) read y=x2+1n+1
        elif tag == "table":
            out.append("\n\n")
            _walk(child, out, _table_rows(child))
            out.append("\n\n")
        elif tag == "tr":
            # one line per row, its cells separated: run together, a row of 12 | 3.4 read 123.4
            out.append("\n\n")
            cells = (rows or {}).get(child.mem_id) or [_inline_text(c) for c in child.iter() if c.tag in _CELLS]
            if cells:
                out.append(CELL_SEPARATOR.join(cells))
            else:
                _walk(child, out, rows)
            out.append("\n\n")
        elif tag == "ol":
            # the numbers a browser draws before the items are the text's (a reference list as
            # <ol>: its [2] markers pointed at unnumbered entries)
            out.append("\n\n")
            number = _start(child)
            for item in child.iter():
                if item.tag != "li":
                    if item.is_element_node:
                        _walk(item, out, rows)
                    continue
                number = _start(item, "value", number)
                parts: list[str] = []
                _walk(item, parts, rows)
                body = "".join(parts).lstrip()
                # an item that writes its own number ([1] 张三…, 1. …) is not numbered twice
                mark = "" if re.match(rf"[\[(（]?\s*{number}\s*[\].、)）]", body) else f"{number}. "
                out.append(f"\n\n{mark}{body}\n\n")
                number += 1
            out.append("\n\n")
        elif tag in _BLOCKS:
            out.append("\n\n")
            _walk(child, out, rows)
            out.append("\n\n")
        else:
            _walk(child, out, rows)


def _start(node: LexborNode, name: str = "start", default: int = 1) -> int:
    """An `<ol start>` or `<li value>` number, `default` when absent or not a number."""
    raw = (node.attributes.get(name) or "").strip()
    return int(raw) if raw.lstrip("-").isdigit() and len(raw) < 9 else default


def _span(cell: LexborNode, name: str) -> int:
    """A cell's colspan/rowspan, 1 when absent or bad; rowspan 0 (to the end) as the cap."""
    raw = (cell.attributes.get(name) or "").strip()
    if not raw.isdigit() or len(raw) > 6:
        return 1
    return min(int(raw), _MAX_SPAN[name]) if int(raw) > 0 else _MAX_SPAN[name]


def _take_carried(
    row: list[str], carry: dict[int, tuple[int, str]], below: dict[int, tuple[int, str]]
) -> None:
    """Fill `row` from its current column with the cells rows above span into it; what they
    still span after this row goes to `below`."""
    while len(row) in carry:
        left, text = carry.pop(len(row))
        if left > 1:
            below[len(row)] = (left - 1, text)
        row.append(text)


def _table_rows(table: LexborNode) -> dict[int, list[str]]:
    """Each row of `table` (not of a table inside it) as its cells with row and column spans
    spread out, so every row has its columns in place: a two-row header `<th rowspan=2>变量</th>
    <th colspan=2>模型</th>` / `(1) (2)` read `变量 | 模型` above `(1) | (2)`, one column short."""
    out: dict[int, list[str]] = {}
    carry: dict[int, tuple[int, str]] = {}  # column -> (rows still covered, text)
    for tr in table.css("tr"):
        owner = tr.parent
        while owner is not None and owner.tag != "table":
            owner = owner.parent
        if owner is None or owner.mem_id != table.mem_id:
            continue
        row: list[str] = []
        below: dict[int, tuple[int, str]] = {}
        for cell in (c for c in tr.iter() if c.tag in _CELLS):
            _take_carried(row, carry, below)
            text = _inline_text(cell)
            down = _span(cell, "rowspan")
            for _ in range(_span(cell, "colspan")):
                if down > 1:
                    below[len(row)] = (down - 1, text)
                row.append(text)
        for col in sorted(c for c in carry if c >= len(row)):
            row.extend([""] * (col - len(row)))
            _take_carried(row, carry, below)
        carry.update(below)
        out[tr.mem_id] = row
    return out


def _inline_text(node: LexborNode) -> str:
    """A node's text on one line, as the body renders it (scripts, formulas): its paragraphs and
    breaks joined by spaces. Table cells, headings and catalog entries."""
    parts: list[str] = []
    _walk(node, parts)
    return " ".join("".join(parts).split())


def _before(out: list[str]) -> str:
    """The text written just before the current position (the last non-blank piece)."""
    for piece in reversed(out):
        if piece.strip():
            return piece
    return ""


def _clean(raw: str) -> str:
    """Blocks joined by one blank line; MathJax loading lines and repeated lines dropped, except
    table rows (two rows of equal values are two rows of the table)."""
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
        if line == previous and CELL_SEPARATOR not in line:
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


def _trial_notice(tree: LexborHTMLParser, headings: set[str]) -> bool:
    """Whether the page shows a trial notice: words of `_TRIAL_TEXT` in an element (not a heading
    nor a catalogue entry naming one, not inline emphasis) whose whole text is at most
    `_NOTICE_MAX` characters."""
    root = tree.body or tree.root
    if root is None or not _TRIAL_TEXT.search(root.text(deep=True)):
        return False
    for node in root.traverse(include_text=True):
        if node.tag != "-text" or not _TRIAL_TEXT.search(node.text_content or ""):
            continue
        cur = node.parent
        while cur is not None and cur.tag not in _NOT_NOTICE and cur is not root.parent:
            text = collapse(cur.text(deep=True))
            if len(text) > _NOTICE_MAX or text in headings:
                break
            if cur.tag not in _FORMATTING:
                return True
            cur = cur.parent
    return False


def _body_only(container: LexborNode) -> str:
    """The container's text without its `.js-prefix` head (the paper's title, authors and
    abstract): what is left is the body. A reader page of a title, an author line and a long
    abstract (a book, a paper whose body the reader does not hold) passed the length check and
    its abstract was given as the full text. The head is taken out of `container` itself (the
    page is parsed once): call it when nothing else is read from the container."""
    for node in container.css(".js-prefix"):
        node.decompose()
    parts: list[str] = []
    _walk(container, parts)
    return _clean("".join(parts))


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
        # as the body renders it: a heading with inline markup (CO<sub>2</sub>, <em>) was
        # read "CO 2" here and "CO2" in the text, so the section was never found
        title = _inline_text(node)
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
        # formula markup in the heading (`H<sub>3</sub>PO<sub>4</sub>`) is part of the words, as on
        # the detail page and in the list: `H 3 PO 4` was another paper's title to the check below
        # (on a copy: unwrapping the heading in the page would write its formulas plainly in the text)
        title = inline_text(parse_html(node.html or "").body) if node is not None else ""
    if expected_title and title and title_key(title) != title_key(expected_title):
        raise IdentityConflict("阅读页题名与请求不一致", expected=expected_title, found=title)

    catalog = [c for c in (_inline_text(n) for n in tree.css(_TOC)) if c]
    catalog = list(dict.fromkeys(catalog))
    headings = {collapse(n.text(deep=True)) for n in container.css("h1, h2, h3, h4, h5, h6")}
    trial = query_param(url, "loginType") == "trialRead" or _trial_notice(tree, headings | set(catalog))

    for node in container.css(_CHROME):
        node.decompose()
    ident = container.attributes.get("id")
    name = f"#{ident}" if ident else container.tag or "?"
    dom_chars = _non_space(container.text(deep=True, separator=" "))
    parts: list[str] = []
    _walk(container, parts)
    text = _clean("".join(parts))
    images = len(container.css("img"))
    sections = _sections(container, text)
    non_text = len(container.css(_NON_TEXT))
    if len(_IMAGE_MARKS.sub("", _body_only(container))) < _MIN_BODY:  # the marks images leave are not body text
        raise ReaderUnsupported("正文不足，未将摘要当全文", characters=len(text), images=images)

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
        non_text_elements=non_text,
        scope=scope,
    )
    return ReaderPage(title=title or None, text=text, sections=sections, trial=trial, coverage=coverage)
