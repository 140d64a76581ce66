"""Reference and citing lists of a detail page, and printed citations split into fields.

CNKI prints list entries in two orders:
- old KCMS / kcms2 AJAX lists (`div.essayBox > ul.ebBox li`): `[1]<a>题名</a>[J].作者.来源.2019(03)`;
- GB/T 7714 strings: `[1]王利明.违约金调整规则研究[J].法学研究,2019,41(03):45-60.`
Pure functions; no I/O."""

from __future__ import annotations

import re

from selectolax.lexbor import LexborNode

from cnki_mcp.errors import ParserUnsupported
from cnki_mcp.models import NativeId, ReferenceEntry
from cnki_mcp.parse._html import collapse, find_year, parse_html, query_param, resolve, text_of

# Document type codes of GB/T 7714 (EB/OL and the /OL variants of the others included).
_TYPE = re.compile(r"\[\s*(J|D|C|M|N|A|R|S|P|G|Z|K|DB|CP|EB|Y)\s*(?:/\s*(OL|CD|MT|DK))?\s*\]")
_ORDINAL = re.compile(r"^\s*(?:\[\s*\d+\s*\]|\d+\s*[.．、])\s*")
_CJK = re.compile(r"[\u3400-\u9fff]")
_AUTHOR_SPLIT = re.compile(r"\s*[,，;；、]\s*")
_ET_AL = re.compile(r"^(?:et\s*al\.?|等)$", re.I)
# Texts CNKI prints in an empty list container.
_EMPTY_LIST = re.compile(r"暂无|没有找到|无相关|共\s*0\s*条")
_LIST_ROOTS = "div.essayBox, ul.ebBox"


def _split_authors(text: str) -> list[str]:
    out: list[str] = []
    for part in _AUTHOR_SPLIT.split(text):
        part = collapse(part).strip(" .．。")
        if part and not _ET_AL.match(part) and part not in out:
            out.append(part)
    return out


def _split_head(head: str) -> tuple[list[str], str]:
    """`作者.题名` -> (authors, title); a head with no separator is a bare title."""
    head = collapse(head).strip()
    if _CJK.search(head[:12]):
        m = re.match(r"^([^.．。]+)[.．。]\s*(.+)$", head)
    else:
        # Latin initials carry dots (`Smith J. A.`), so split at the LAST ". ".
        m = re.match(r"^(.*)\.\s(.+)$", head)
    if m is None:
        return [], head.strip(" .．。")
    return _split_authors(m.group(1)), m.group(2).strip(" .．。")


def _source_of(part: str) -> str | None:
    """The source of a GB/T tail (`法学研究,2019,41(03):45-60`): text before the first comma."""
    part = collapse(part).strip(" .．。")
    if not part:
        return None
    src = re.split(r"\s*[,，]\s*", part, maxsplit=1)[0].strip(" .．。")
    if not src or src[0] in "([（【" or "http" in src or re.fullmatch(r"[\d\s:：\-]+", src):
        return None
    return src


def parse_reference_string(text: str, linked_title: str | None = None) -> ReferenceEntry:
    """Split one printed citation into title, type code, authors, source and year.

    Fields that cannot be located stay None/empty; `text` always keeps the citation as printed
    (ordinal removed). A string without a type code keeps its whole body as the title.
    `linked_title`: the entry's link text; when it is exactly what precedes the type code the
    entry is in list order and that text is the whole title, even with dots in it
    (`LiNi0.8Co0.1Mn0.1O2`)."""
    printed = collapse(text)
    body = _ORDINAL.sub("", printed)
    m = _TYPE.search(body)
    if m is None:
        return ReferenceEntry(text=body, title=body.strip(" .．。") or None, year=find_year(body))
    code = f"[{m.group(1)}{'/' + m.group(2) if m.group(2) else ''}]"
    head, tail = body[: m.start()], body[m.end() :]
    linked = collapse(linked_title)
    if linked and collapse(head).strip(" .．。") == linked.strip(" .．。"):
        authors, title = [], linked.strip(" .．。")
    else:
        authors, title = _split_head(head)
    source: str | None = None
    if authors:
        # GB/T order: the tail is `.来源,年,卷(期):页`.
        source = _source_of(tail)
    else:
        # List order: the tail is `.作者.来源.年(期)`; the last date-like part is the issue.
        parts = [p.strip() for p in re.split(r"\s*[.．。]\s*|\s{2,}", tail) if p.strip()]
        parts = [p for p in parts if not re.fullmatch(r"[\d\s()（）:：\-,，]+", p)]
        if len(parts) >= 2:
            authors = _split_authors(parts[0])
            source = _source_of(parts[1])
        elif parts:
            source = _source_of(parts[0])
    return ReferenceEntry(
        text=body,
        title=title or None,
        authors=authors,
        source=source,
        year=find_year(tail),
        doc_type_code=code,
    )


def _native_of(url: str | None) -> NativeId:
    return NativeId(
        dbcode=query_param(url, "dbcode"),
        dbname=query_param(url, "dbname", "tablename"),
        filename=query_param(url, "filename"),
    )


def entries_in(node: LexborNode, url: str | None = None) -> list[ReferenceEntry]:
    """Entries under one list container (`ul.ebBox li`, else any `li`); empty when none."""
    items = node.css("ul.ebBox li") or node.css("li")
    out: list[ReferenceEntry] = []
    for li in items:
        text = text_of(li, sep=" ")
        if not text or (not _TYPE.search(text) and len(text) < 4):
            continue
        link = li.css_first("a[href]")
        entry = parse_reference_string(text, text_of(link) if link is not None else None)
        href = resolve(url, link.attributes.get("href")) if link is not None else None
        title = entry.title
        if link is not None and not entry.authors:
            linked = text_of(link)
            # In list order the link text IS the title.
            if linked and not _TYPE.search(linked):
                title = linked
        out.append(entry.model_copy(update={"title": title, "detail_url": href, "native": _native_of(href)}))
    return out


def parse_reference_list(html: str, url: str | None = None) -> list[ReferenceEntry]:
    """A reference or citing list response (`div.essayBox` blocks, one per database).

    A response that says the list is empty gives []; markup with neither list blocks nor an
    empty-list notice raises PARSER_UNSUPPORTED."""
    tree = parse_html(html)
    roots = tree.css(_LIST_ROOTS)
    if not roots:
        body = text_of(tree.body or tree.root, sep=" ")
        if _EMPTY_LIST.search(body[:400]):
            return []
        raise ParserUnsupported("参考文献列表结构无法识别", snippet=body[:160])
    out: list[ReferenceEntry] = []
    seen: set[int] = set()
    for root in roots:
        for box in [root] if root.tag == "ul" else root.css("ul.ebBox") or [root]:
            key = hash(box.html)
            if key in seen:
                continue
            seen.add(key)
            out.extend(entries_in(box, url))
    return out
