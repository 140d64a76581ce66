"""`link_references`, the pure half: find the 《title》 spans of a Markdown text, decide each
title's status from its candidate papers and write `[《title》](url)` links (site-rules.md §8, contract
link_references). No I/O: text in, spans and text out; the lookups live in `pipeline.links`.

Scanning rules:

* left alone: fenced code blocks (``` or ~~~, closed by a fence of the same mark at least as
  long, or running to the end), inline code (a run of N backticks up to the next run of exactly N;
  with no closing run only the opening run is skipped), Markdown links and images `[…](…)`,
  reference links `[…][…]`, reference definitions `[x]: …` (not footnote definitions `[^1]: …`,
  which are content), autolinks `<scheme:…>`, bare http(s)/ftp URLs (up to whitespace, `<` or
  Chinese punctuation, non-ASCII characters and 《》 included), HTML anchors `<a …>…</a>`,
  `<code>`/`<pre>` elements and any other HTML tag;
* `《` opens a title with depth 1, each nested `《` adds one, each `》` subtracts one; at depth 0
  the inner text (nested marks included) is the title: `《A《B》C》` -> `A《B》C`, and
  `《论〈民法典〉中的违约金》` -> `论〈民法典〉中的违约金` (single marks are plain text);
* a title may run onto the next line (a wrapped line: `《基于深度学习的` + `图像识别研究》`, its lines
  joined as `cite.refshapes.join_lines` joins them, without a space between Han characters), never
  further, over a blank line or across a protected region; an unclosed `《` gives no span and
  scanning resumes right after it (so `《A《B》` still yields `B`); empty `《》` is no title;
* a link this tool wrote for a paper without a DOI, `[《title》](url)` whose label is one title
  and whose URL is a CNKI detail link carrying the expiring `v` token (site-rules.md §1.1), is a
  span of its own: linked again, it is rewritten whole with the URL found now (the token's
  successor, or the DOI the paper has since got), and left as written when its title no longer
  finds one paper. The warning on such links says to run link_references again before the
  text is final; that run found no title in them and changed nothing.

Titles are grouped by `reference_key`: the title key with single marks `〈〉` read as `《》`, since
a title quoted inside 《》 writes its own 《》 as 〈〉."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from cnki_mcp.cite.refshapes import NAME_DOTS, chinese_marks, join_lines, not_a_paper
from cnki_mcp.errors import InputTooLarge, TooManyReferences
from cnki_mcp.identity import NESTED_MARKS, ascii_letters, decode_entities, title_key, visible
from cnki_mcp.script import simplified

MAX_TEXT_BYTES = 512 * 1024  # contract: 文本最大 512 KB (UTF-8 bytes)
MAX_TITLES = 100  # contract: 最多 100 个题名 (distinct titles; repeats of one title count once)

LinkStatus = Literal["linked", "matched_without_link", "ambiguous", "unresolved", "not_a_paper"]
# doi: https://doi.org/<doi>, lasting; cnki: a kcms2 detail link whose `v` token expires
# (site-rules.md §1.1), written only for a paper without a DOI.
LinkKind = Literal["doi", "cnki"]

OPEN, CLOSE = "《", "》"


# --------------------------------------------------------------------- models


class LinkInput(BaseModel):
    """Input of the `link_references` tool."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(description="含《题名》的 Markdown 文本，最大 512 KB，最多 100 个不同题名")
    lookup_missing: bool = Field(
        False, description="是否到知网按篇名精确查找本地没有的题名（每 10 个合并为一次检索）"
    )

    @field_validator("text")
    @classmethod
    def _size(cls, text: str) -> str:
        check_text_size(text)
        return text


class LinkReference(BaseModel):
    """The outcome for one distinct title, in order of first appearance."""

    model_config = ConfigDict(extra="forbid")

    title: str = Field(description="文中书名号内的题名（首次出现的写法）")
    status: LinkStatus = Field(
        description="linked：已添加链接；matched_without_link：有记录但无公开链接；"
        "ambiguous：多篇同名，未加链接；unresolved：没有找到；not_a_paper：法规、标准、古籍，未查找"
    )
    record_refs: list[str] = Field(
        default_factory=list, description="匹配到的记录（ambiguous 时为全部同名记录）"
    )
    url: str | None = Field(
        None, description="linked 时使用的链接（见 link_kind）"
    )
    link_kind: LinkKind | None = Field(
        None, description="doi：DOI 链接，长期有效；cnki：知网详情页链接，含时效令牌，会失效"
    )
    occurrences: int = Field(1, ge=1, description="该题名在文中出现的次数")


class LinkResult(BaseModel):
    """Output of the `link_references` tool."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["completed"] = "completed"
    text: str = Field(description="替换后的文本")
    references: list[LinkReference] = Field(default_factory=list)
    requests: int = Field(0, ge=0, description="本次访问知网的请求数")
    warnings: list[str] = Field(default_factory=list, description="例如有链接是会失效的知网详情页链接")


def expiring_link_warning(references: Sequence[LinkReference]) -> list[str]:
    """The warning for written links that carry an expiring CNKI token (none -> [])."""
    count = sum(1 for r in references if r.status == "linked" and r.link_kind == "cnki")
    if not count:
        return []
    return [
        f"{count} 个题名没有 DOI，链接的是知网详情页（链接含时效令牌，一段时间后可能打不开）；"
        "定稿前可用 lookup_missing=true 再运行 link_references 到知网更新，或改写为 DOI 等长期标识"
    ]


# --------------------------------------------------------------------- limits


def check_text_size(text: str) -> None:
    """INPUT_TOO_LARGE above 512 KiB of UTF-8."""
    size = len(text.encode("utf-8"))
    if size > MAX_TEXT_BYTES:
        raise InputTooLarge("文本最大 512 KB", bytes=size, max_bytes=MAX_TEXT_BYTES)


def check_title_count(count: int) -> None:
    """TOO_MANY_REFERENCES above 100 distinct titles."""
    if count > MAX_TITLES:
        raise TooManyReferences("一次最多处理 100 个题名", count=count, max_titles=MAX_TITLES)


# --------------------------------------------------------------------- keys


def reference_key(title: str) -> str:
    """The grouping key of a cited title: `title_key` with 〈〉 read as 《》."""
    return title_key(title.translate(NESTED_MARKS))


# A space between Han characters and a Latin word (`ChatGPT 对在线教育…`, `面向 C++ 程序`), as many
# writers and AI assistants space them; CNKI's titles write them together (`ChatGPT对在线教育…`). Not
# digits: a title numbered `研究 007` keeps one spelling (a second one costs a leaf in every batch).
_LATIN_HAN_SPACE = re.compile(r"(?<=[\u4e00-\u9fff])\s+(?=[A-Za-z])|(?<=[A-Za-z+#])\s+(?=[\u4e00-\u9fff])")


def title_variants(title: str) -> list[str]:
    """The spellings to look a title up by, locally and on CNKI: as written (invisible format
    characters such as a PDF's soft hyphens and zero-width spaces dropped, spaces collapsed); with
    the letters CNKI writes otherwise (`ＣＯ２`/`CO₂` -> `CO2`, `R&amp;D` -> `R&D`, `列夫•托尔斯泰` ->
    `列夫·托尔斯泰`; punctuation as written, so a title with `：` costs no second spelling); with
    CNKI's marks for straight quotes and a lone dash (`cite.refparse.chinese_marks`); without the
    spaces a writer puts between Han characters and a Latin word (`ChatGPT 对…` ->
    `ChatGPT对…`); in
    simplified characters when written in traditional ones (`script.simplified`: CNKI's titles are
    simplified, 違約金懲罰性功能的困境與出路 is 违约金惩罚性功能的困境与出路 there); each also with 〈〉
    turned into 《》."""
    written = " ".join(visible(title).split())
    letters = simplified(ascii_letters(decode_entities(written).translate(NAME_DOTS)))
    joined = _LATIN_HAN_SPACE.sub("", letters)
    spellings = dict.fromkeys(
        [written, letters, chinese_marks(written), chinese_marks(letters), joined, chinese_marks(joined)]
    )
    return list(dict.fromkeys(v for s in spellings for v in (s, s.translate(NESTED_MARKS))))


# --------------------------------------------------------------------- scanning

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_TRIGGER = re.compile(r"[`\[<]|(?<![A-Za-z0-9])(?:https?|ftp)://", re.IGNORECASE)
# A bare URL runs, as GFM autolinks it, up to whitespace or `<`, non-ASCII characters included
# (an IRI such as https://zh.wikipedia.org/wiki/民法典, or ?q=《论违约金》); it ended at the first
# non-ASCII character, so a 《title》 inside a URL was linked and the URL broken. Chinese
# punctuation still ends it (见https://x.org/a，《丙》), and so does a 》 closing a 《 opened
# before the URL.
_URL = re.compile(r"(?:https?|ftp)://[^\s<>，。；：！？、“”‘’（）【】「」『』〔〕…—]+", re.IGNORECASE)
_AUTOLINK = re.compile(r"<[A-Za-z][A-Za-z0-9+.\-]{1,31}:[^\s<>]*>|<[^\s<>@]+@[^\s<>@]+>")
_HTML_OPEN = re.compile(r"<(a|code|pre)(?:\s[^<>]*)?>", re.IGNORECASE)
_HTML_TAG = re.compile(r"<!--.*?-->|</?[A-Za-z][A-Za-z0-9\-]*(?:\s[^<>]*)?/?>", re.DOTALL)
# a link reference definition `[x]: url …`; a footnote definition `[^1]: 王某：《论违约金》…` is
# content (where a paper's references are), not a destination
_REF_DEF = re.compile(r"\[(?!\^)[^\]\n]+\]:[^\n]*")
_BRACKETS = re.compile(r"\\.|[\[\]()]|\n[ \t]*\n", re.DOTALL)
_TITLE_MARKS = re.compile(r"[《》\n]")
# A line that starts a Markdown block of its own (a list item, quote, heading, table row, blank line)
_BLOCK_START = re.compile(r"[ \t]*(?:$|\n|[-*+>#|]|\d{1,3}[.)][ \t])", re.M)
_INLINE_LINK = re.compile(r"\[((?:[^\[\]\\\n]|\\.)*)\]\(([^()\s]*)\)")
_LABEL_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


@dataclass(frozen=True, slots=True)
class TitleSpan:
    """One `《…》` in the text: `text[start:end]` is the raw span, marks included."""

    start: int
    end: int
    title: str  # the inner text as written (nested marks included)
    label: str | None = None  # a link this tool wrote: its label unescaped, `text[start:end]` the link

    @property
    def key(self) -> str:
        return reference_key(self.title)


def _fenced_blocks(text: str) -> list[tuple[int, int]]:
    """(start, end) of every fenced code block; an unclosed fence runs to the end."""
    out: list[tuple[int, int]] = []
    pos = 0
    open_at: int | None = None
    mark = ""
    for line in text.splitlines(keepends=True):
        m = _FENCE.match(line.rstrip("\r\n"))
        if open_at is None:
            if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
                open_at, mark = pos, m.group(1)
        elif m and m.group(1)[0] == mark[0] and len(m.group(1)) >= len(mark) and not m.group(2).strip():
            out.append((open_at, pos + len(line)))
            open_at = None
        pos += len(line)
    if open_at is not None:
        out.append((open_at, len(text)))
    return out


class _Segment:
    """Precomputed structure of `text[start:limit]` so every lookup is O(log n) or O(1):
    backtick runs by length, matching `[]` and `()` pairs (never across a blank line), and
    where each HTML element's closing tag is."""

    def __init__(self, text: str, start: int, limit: int) -> None:
        self.text, self.start, self.limit = text, start, limit
        self.runs: dict[int, list[int]] = {}  # run length -> sorted run starts
        for m in re.finditer(r"`+", text[start:limit]):
            self.runs.setdefault(len(m.group()), []).append(start + m.start())
        self.pair: dict[int, int] = {}  # opener index -> index just past its closer
        stacks: dict[str, list[int]] = {"[": [], "(": []}
        for m in _BRACKETS.finditer(text, start, limit):
            tok = m.group()
            if tok in ("[", "("):
                stacks[tok].append(m.start())
            elif tok in ("]", ")"):
                stack = stacks["[" if tok == "]" else "("]
                if stack:
                    self.pair[stack.pop()] = m.end()
            elif tok[0] == "\n":
                stacks = {"[": [], "(": []}
        self._low: str | None = None
        self._no_close: dict[str, int] = {}  # tag -> a position after which no closing tag exists

    def closing_run(self, after: int, n: int) -> int | None:
        """End of the first run of exactly `n` backticks starting at or after `after`."""
        starts = self.runs.get(n, [])
        k = bisect_left(starts, after)
        return starts[k] + n if k < len(starts) else None

    def link_end(self, i: int) -> int | None:
        """End of `[…](…)` or `[…][…]` whose label opens at `i`."""
        label_end = self.pair.get(i)
        if label_end is None or label_end >= self.limit or self.text[label_end] not in "([":
            return None
        return self.pair.get(label_end)

    def element_end(self, name: str, after: int) -> int | None:
        """End of the first `</name>` at or after `after`."""
        name = name.lower()
        if after >= self._no_close.get(name, self.limit + 1):
            return None
        if self._low is None:
            self._low = self.text.lower()
        close = self._low.find("</" + name, after, self.limit)
        gt = self.text.find(">", close, self.limit) if close >= 0 else -1
        if gt < 0:
            self._no_close[name] = min(after, self._no_close.get(name, after))
            return None
        return gt + 1


def _url_end(text: str, start: int, end: int) -> int:
    """End of a bare URL matched as `text[start:end]`: a 》 without its 《 inside the URL closes a
    title the URL stands in (《见https://x.org/a》), so the URL ends before it."""
    depth = 0
    for k in range(start, end):
        if text[k] == OPEN:
            depth += 1
        elif text[k] == CLOSE:
            if depth == 0:
                return k
            depth -= 1
    return end


def _protected_inline(text: str, start: int, limit: int) -> list[tuple[int, int]]:
    """Code spans, links, autolinks, HTML and bare URLs in `text[start:limit]`."""
    seg = _Segment(text, start, limit)
    out: list[tuple[int, int]] = []
    i = start
    while True:
        m = _TRIGGER.search(text, i, limit)
        if m is None:
            break
        i = m.start()
        c = text[i]
        end: int | None = None
        if c == "`":
            k = i
            while k < limit and text[k] == "`":
                k += 1
            end = seg.closing_run(k, k - i) or k  # no closing run: only the opening run is skipped
        elif c == "[":
            ref = _REF_DEF.match(text, i, limit) if i == 0 or text[i - 1] == "\n" else None
            end = ref.end() if ref else seg.link_end(i)
        elif c == "<":
            html = _HTML_OPEN.match(text, i, limit)
            if html:
                end = seg.element_end(html.group(1), html.end()) or html.end()
            else:
                other = _AUTOLINK.match(text, i, limit) or _HTML_TAG.match(text, i, limit)
                end = other.end() if other else None
        else:
            url = _URL.match(text, i, limit)
            end = _url_end(text, i, url.end()) if url else None
        if end is not None and end > i:
            out.append((i, end))
            i = end
        else:
            i += 1
    return out


def protected_ranges(text: str) -> list[tuple[int, int]]:
    """Sorted, non-overlapping (start, end) regions where nothing may be linked."""
    out: list[tuple[int, int]] = []
    pos = 0
    for start, end in _fenced_blocks(text):
        out.extend(_protected_inline(text, pos, start))
        out.append((start, end))
        pos = end
    out.extend(_protected_inline(text, pos, len(text)))
    return out


def _titles_in(text: str, start: int, limit: int) -> list[TitleSpan]:
    """Outer balanced 《…》 pairs of one unprotected stretch. Pairing 》 with the latest open 《
    (reset at each line break) and keeping pairs not inside another pair is the same as the
    depth scan that, after an unclosed 《, resumes right after it."""
    pairs: list[tuple[int, int]] = []
    stack: list[tuple[int, int]] = []  # (position of an open 《, its line)
    line = 0
    for m in _TITLE_MARKS.finditer(text, start, limit):
        mark = m.group()
        if mark == OPEN:
            stack.append((m.start(), line))
        elif mark == CLOSE:
            if stack:
                pairs.append((stack.pop()[0], m.end()))
        else:  # a title may run onto the next line, not further, over a blank line or into a new block
            line += 1
            block = _BLOCK_START.match(text, m.end())
            stack = [(at, ln) for at, ln in stack if ln == line - 1 and block is None]
    out: list[TitleSpan] = []
    last = start
    for s, e in sorted(pairs):
        if s < last:
            continue  # nested inside an outer pair already taken
        last = e
        inner = join_lines(text[s + 1 : e - 1]) if "\n" in text[s:e] else text[s + 1 : e - 1]
        if inner.strip():
            out.append(TitleSpan(s, e, inner))
    return out


def expiring_cnki_link(url: str) -> bool:
    """A CNKI detail link whose `v` token expires (what `link_kind` cnki links are)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    path = parts.path.lower()
    return "/kcms" in path and "abstract" in path and "v" in parse_qs(parts.query)


def _relink_span(text: str, start: int, end: int) -> TitleSpan | None:
    """The protected region `text[start:end]` as a span when it is a link this tool wrote to an
    expiring CNKI detail page: `[《title》](url)`, the label one title and nothing else."""
    m = _INLINE_LINK.fullmatch(text, start, end)
    if m is None or not expiring_cnki_link(m.group(2)):
        return None
    label = _LABEL_ESCAPE.sub(r"\1", m.group(1))
    inner = _titles_in(label, 0, len(label))
    if len(inner) != 1 or (inner[0].start, inner[0].end) != (0, len(label)):
        return None
    return TitleSpan(start, end, inner[0].title, label)


def find_title_spans(text: str) -> list[TitleSpan]:
    """Every outer 《…》 outside code, links, URLs and HTML, and every expiring CNKI link this
    tool wrote (`_relink_span`), in text order."""
    spans: list[TitleSpan] = []
    pos = 0
    for start, end in protected_ranges(text):
        spans.extend(_titles_in(text, pos, start))
        own = _relink_span(text, start, end)
        if own is not None:
            spans.append(own)
        pos = end
    spans.extend(_titles_in(text, pos, len(text)))
    return spans


def distinct_titles(spans: Sequence[TitleSpan]) -> dict[str, tuple[str, int]]:
    """reference key -> (title as first written, occurrences), in order of first appearance."""
    out: dict[str, tuple[str, int]] = {}
    for span in spans:
        key = span.key
        if not key:
            continue
        title, count = out.get(key, (" ".join(span.title.split()), 0))
        out[key] = (title, count + 1)
    return out


def scan_references(text: str) -> tuple[list[TitleSpan], dict[str, tuple[str, int]]]:
    """Spans and distinct titles of `text`, limits checked (INPUT_TOO_LARGE, TOO_MANY_REFERENCES)."""
    check_text_size(text)
    spans = find_title_spans(text)
    titles = distinct_titles(spans)
    check_title_count(len(titles))
    return spans, titles


# --------------------------------------------------------------------- resolution and output


@dataclass(frozen=True, slots=True)
class Candidate:
    """A paper a title matched: its ref, shareable URL (None = no public link) and its kind."""

    record_ref: str
    url: str | None
    kind: LinkKind | None = None


def resolve(title: str, candidates: Sequence[Candidate], occurrences: int = 1) -> LinkReference:
    """A law, standard or classic by its name (`cite.refshapes.not_a_paper`) -> not_a_paper; 0
    candidates -> unresolved; several distinct papers -> ambiguous; one -> linked when it has a
    public URL, else matched_without_link."""
    if not_a_paper(title) and not candidates:
        return LinkReference(title=title, status="not_a_paper", occurrences=occurrences)
    unique = list({c.record_ref: c for c in candidates}.values())
    refs = [c.record_ref for c in unique]
    if not unique:
        return LinkReference(title=title, status="unresolved", occurrences=occurrences)
    if len(unique) > 1:
        return LinkReference(title=title, status="ambiguous", record_refs=refs, occurrences=occurrences)
    url = unique[0].url
    status: LinkStatus = "linked" if url else "matched_without_link"
    return LinkReference(
        title=title,
        status=status,
        record_refs=refs,
        url=url,
        link_kind=unique[0].kind if url else None,
        occurrences=occurrences,
    )


# A backslash before ASCII punctuation is an escape the text already has (`\*`, `\_`, `\[`): kept as
# written, since escaping its backslash again would show it (`论\*x` rendered as `论\*x`, not `论*x`).
_LABEL_SPECIALS = re.compile(r"\\[!-/:-@\[-`{-~]|([\\\[\]`*_<>~])")  # `~`: see cite.tabular.md_escape


def escape_label(raw: str) -> str:
    """Link text safe inside `[…]`: Markdown punctuation backslash-escaped, existing escapes kept."""
    return _LABEL_SPECIALS.sub(lambda m: m.group() if m.group(1) is None else "\\" + m.group(1), raw)


def escape_url(url: str) -> str:
    """A destination safe inside `(…)`: parentheses and whitespace percent-encoded."""
    return url.replace("(", "%28").replace(")", "%29").replace(" ", "%20").replace("\t", "%09")


def markdown_link(raw: str, url: str) -> str:
    return f"[{escape_label(raw)}]({escape_url(url)})"


def apply_links(text: str, spans: Sequence[TitleSpan], urls: Mapping[str, str]) -> str:
    """`text` with every span whose key has a URL wrapped as `[《title》](url)`."""
    parts: list[str] = []
    pos = 0
    for span in spans:
        url = urls.get(span.key)
        if not url:
            continue
        parts.append(text[pos : span.start])
        raw = span.label if span.label is not None else text[span.start : span.end]
        parts.append(markdown_link(raw, url))
        pos = span.end
    parts.append(text[pos:])
    return "".join(parts)


__all__ = [
    "MAX_TEXT_BYTES",
    "MAX_TITLES",
    "Candidate",
    "LinkInput",
    "LinkKind",
    "LinkReference",
    "LinkResult",
    "LinkStatus",
    "TitleSpan",
    "apply_links",
    "check_text_size",
    "check_title_count",
    "distinct_titles",
    "escape_label",
    "escape_url",
    "expiring_cnki_link",
    "expiring_link_warning",
    "find_title_spans",
    "markdown_link",
    "protected_ranges",
    "reference_key",
    "resolve",
    "scan_references",
    "title_variants",
]
