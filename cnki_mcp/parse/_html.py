"""Shared HTML helpers for the parsers: parsing, hidden-element removal, text, counts, names.

Pure functions over strings and selectolax nodes; no I/O."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urljoin, urlsplit

from cnki_mcp.errors import ResponseTooLarge
from cnki_mcp.identity import CONTROL

if TYPE_CHECKING:  # the string helpers here load no HTML parser (DESIGN.md "Start-up")
    from selectolax.lexbor import LexborHTMLParser, LexborNode

MAX_HTML_BYTES = 8 * 1024 * 1024

_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
_WS = re.compile(r"\s+")
# Control characters (identity.CONTROL): no field CNKI shows holds one, but a page or an API answer
# can carry them raw or as `&#x1B;`, and they would reach the client, the export files and the
# terminal `cnki-mcp watch check` prints to; a vertical tab or form feed is read as a space. Lone
# surrogates (a string cut in the middle of a UTF-16 pair, written as `\ud83d` in JSON) cannot be
# encoded at all.
_BREAKS = str.maketrans({"\x0b": " ", "\x0c": " "})
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_YEAR = re.compile(r"(?<!\d)(1[89]\d\d|20\d\d|21\d\d)(?!\d)")
_COUNT = re.compile(r"(\d[\d,]*(?:\.\d+)?)\s*(万)?")
# Role suffixes CNKI appends to names: 林倩(文), 胡馨元（编）. They break identity matching.
_ROLE = re.compile(
    r"\s*[(（]\s*(?:文|著|编|译|主编|编著|编译|撰|撰文|执笔|整理|口述|摄|图|供稿)\s*[)）]\s*$"
)
_SPLIT_LIST = re.compile(r"[;；,，]+")


def parse_html(
    html: str, *, strip_hidden: bool = True, keep_hidden: Callable[[LexborNode], bool] | None = None
) -> LexborHTMLParser:
    """Parse `html`; by default drop script/style/noscript and hidden elements first.

    `keep_hidden` names hidden elements that still carry data a person can reveal with one click
    (a grid's collapsed author list), so they survive the hidden-node removal."""
    if len(html) > MAX_HTML_BYTES and len(html.encode("utf-8", "ignore")) > MAX_HTML_BYTES:
        raise ResponseTooLarge()
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(html)
    if strip_hidden:
        remove_hidden(tree, keep=keep_hidden)
    return tree


def remove_hidden(tree: LexborHTMLParser, keep: Callable[[LexborNode], bool] | None = None) -> None:
    """Remove what a person cannot see: scripts, styles, `[hidden]`, aria-hidden, inline-hidden.

    Hidden elements for which `keep(node)` is true stay (scripts and styles never do)."""
    for sel in ("script", "style", "noscript", "template"):
        for node in tree.css(sel):
            node.decompose()
    for node in tree.css("[hidden], [aria-hidden=true]"):
        if keep is None or not keep(node):
            node.decompose()
    for node in tree.css("[style]"):
        style = node.attributes.get("style") or ""
        if _HIDDEN_STYLE.search(style) and (keep is None or not keep(node)):
            node.decompose()


def previous_element(node: LexborNode) -> LexborNode | None:
    """The nearest preceding sibling element (text and comment nodes skipped)."""
    cur = node.prev
    while cur is not None and cur.tag in ("-text", "_text", "-comment", "_comment"):
        cur = cur.prev
    return cur


def clean_text(text: str) -> str:
    """`text` without control characters (whitespace kept) and with each lone surrogate as U+FFFD."""
    return _SURROGATE.sub("\ufffd", CONTROL.sub("", text.translate(_BREAKS)))


def collapse(text: str | None) -> str:
    """Collapse whitespace runs (including NBSP and full-width space) to one space, trim; control
    characters and lone surrogates go as `clean_text` says."""
    if not text:
        return ""
    return _WS.sub(" ", clean_text(text).replace("\u00a0", " ").replace("\u3000", " ")).strip()


def text_of(node: LexborNode | None, *, deep: bool = True, sep: str = "") -> str:
    if node is None:
        return ""
    return collapse(node.text(deep=deep, separator=sep))


# Formatting inside a word: CNKI prints formulas in titles and abstracts as markup
# (`H<sub>3</sub>PO<sub>4</sub>`, `Ca<sup>2+</sup>`), which a separator would cut apart.
INLINE_TAGS = ("sub", "sup", "i", "em", "b", "strong", "u", "small", "big", "font")


def inline_text(node: LexborNode | None, *, sep: str = " ") -> str:
    """The text of `node` with its inline formatting unwrapped first (changes `node`):
    `H<sub>3</sub>PO<sub>4</sub>` is `H3PO4`, while block children are still apart by `sep`."""
    if node is None:
        return ""
    node.unwrap_tags(list(INLINE_TAGS))
    node.merge_text_nodes()
    return text_of(node, sep=sep)


def own_text(node: LexborNode) -> str:
    """The node's own text, children's text excluded."""
    return collapse(node.text(deep=False))


def first(tree: LexborHTMLParser | LexborNode, *selectors: str) -> LexborNode | None:
    for sel in selectors:
        node = tree.css_first(sel)
        if node is not None:
            return node
    return None


def attr(node: LexborNode | None, name: str) -> str | None:
    if node is None:
        return None
    value = node.attributes.get(name)
    if value is None:
        return None
    value = value.strip()
    return value or None


def parse_count(text: str | None) -> int | None:
    """CNKI counts: `1,557`, `37`, `1.2万` (x10000). Empty or no digits -> None."""
    if not text:
        return None
    m = _COUNT.search(text)
    if not m:
        return None
    value = float(m.group(1).replace(",", ""))
    if m.group(2):
        value *= 10_000
    return round(value)


def find_year(text: str | None) -> int | None:
    if not text:
        return None
    m = _YEAR.search(text)
    return int(m.group(1)) if m else None


def strip_role(name: str) -> str:
    """`林倩(文)` -> `林倩`; also drops trailing separators and digits left by `<sup>` marks."""
    name = collapse(name).strip(" ;；,，")
    return _ROLE.sub("", name).strip()


def split_list(text: str | None) -> list[str]:
    """Split a `;`/`；`/`,`/`，` separated list, trimming and dropping empties and duplicates."""
    if not text:
        return []
    out: list[str] = []
    for part in _SPLIT_LIST.split(text):
        part = collapse(part)
        if part and part not in out:
            out.append(part)
    return out


def strip_label(text: str, *labels: str) -> str:
    """Drop a leading `label：`/`label:` (full-width or ASCII colon)."""
    text = collapse(text)
    for label in labels:
        for colon in ("：", ":"):
            prefix = f"{label}{colon}"
            if text.startswith(prefix):
                return text[len(prefix) :].strip()
    return text


def resolve(base_url: str | None, href: str | None) -> str | None:
    """Resolve `href` against `base_url`; javascript: and fragment-only links give None."""
    if not href:
        return None
    href = href.strip()
    if not href or href.lower().startswith(("javascript:", "#", "mailto:")):
        return None
    if base_url:
        return urljoin(base_url, href)
    return href


def query_param(url: str | None, *names: str) -> str | None:
    """First non-empty query parameter among `names` (case-insensitive keys)."""
    if not url:
        return None
    params = {k.lower(): v for k, v in parse_qs(urlsplit(url).query).items()}
    for name in names:
        values = params.get(name.lower())
        if values and values[0].strip():
            return values[0].strip()
    return None


def body_text(tree: LexborHTMLParser, limit: int | None = None) -> str:
    body = tree.body or tree.root
    text = text_of(body, sep=" ")
    return text[:limit] if limit else text
