"""Text of a downloaded PDF by page range (pypdf), so the model can read what it downloaded.

Only files inside `<data>/downloads` are read; anything that is not a PDF is INVALID_FILE."""

from __future__ import annotations

import hashlib
import io
import logging
import math
import re
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cnki_mcp.errors import InvalidFile, InvalidInput
from cnki_mcp.files import inside_downloads, sniff_format

DEFAULT_MAX_CHARACTERS = 20_000
MAX_CHARACTERS = 200_000
MAX_RANGE_PAGES = 2_000
_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d*)\s*)?$")

logging.getLogger("pypdf").setLevel(logging.ERROR)


class PdfText(BaseModel):
    path: str
    text: str
    page_count: int
    pages_returned: list[int]  # 1-based page numbers whose text is (at least partly) in `text`
    # pages of `pages_returned` without any extractable text (a scanned page, a full-page figure):
    # their part of `text` is empty, which read like a page the paper does not have
    pages_without_text: list[int] = []
    # pages of `pages_returned` whose text is mostly characters no Chinese or Western paper is
    # written in: a font without a map to Unicode (glyph ids read as characters)
    garbled_pages: list[int] = []
    warnings: list[str] = []  # what the two lists above mean, in words
    truncated: bool  # `max_characters` cut the text, or pages of the range were left out
    next_page: int | None = None  # the first page not (fully) returned, when truncated
    # how to go on: call again with pages=next_pages (the pages of the request not fully
    # returned, in its order, `next_page` first) and offset=next_offset (where in `next_page`)
    next_pages: str | None = None
    next_offset: int | None = None


def parse_pages(spec: str | None, page_count: int) -> list[int]:
    """`"3"`, `"1-3"`, `"2-"`, `"1,4-5"` (1-based, inclusive) -> page numbers within the file."""
    if spec is None or not spec.strip():
        return list(range(1, page_count + 1))
    out: list[int] = []
    for part in spec.split(","):
        m = _RANGE.match(part)
        if m is None:
            raise InvalidInput("页码范围格式应为 1-3、5 或 2-", pages=spec)
        start = int(m.group(1))
        if start > page_count >= 1:
            # a page the file does not have, even in a list ("1-2,99" read as "1-2" before, and
            # "5-" of a 3-page file was called an invalid range)
            raise InvalidInput("页码超出文件页数", pages=spec, page_count=page_count)
        end = page_count if m.group(2) == "" else int(m.group(2) or start)
        if start < 1 or end < start:
            raise InvalidInput("页码范围无效", pages=spec)
        if end - start > MAX_RANGE_PAGES:
            raise InvalidInput("页码范围过大", pages=spec)
        out.extend(p for p in range(start, min(end, page_count) + 1) if p not in out)
    if not out:
        raise InvalidInput("页码超出文件页数", pages=spec, page_count=page_count)
    return out


def pages_spec(numbers: list[int]) -> str:
    """`parse_pages`' inverse: runs of consecutive pages as `a-b`, in the order given."""
    parts: list[str] = []
    i = 0
    while i < len(numbers):
        j = i
        while j + 1 < len(numbers) and numbers[j + 1] == numbers[j] + 1:
            j += 1
        parts.append(str(numbers[i]) if i == j else f"{numbers[i]}-{numbers[j]}")
        i = j + 1
    return ",".join(parts)


PAGE_SEPARATOR = "\n\n"


def read_pdf_text(
    path: Path | str,
    data_dir: Path,
    pages: str | None = None,
    max_characters: int = DEFAULT_MAX_CHARACTERS,
    offset: int = 0,
    html_reader: bool = True,
) -> PdfText:
    """The text of `pages` of a PDF under `<data>/downloads`, at most `max_characters`, from
    character `offset` of the first page (a read cut short goes on with `next_pages` and
    `next_offset`). Pages are separated by a blank line. `html_reader` false where the HTML
    reader is not offered (read-only mode hides it): no advice then names it."""
    if not 1 <= max_characters <= MAX_CHARACTERS:
        raise InvalidInput("max_characters 须在 1 到 200000 之间", max_characters=max_characters)
    if offset < 0:
        raise InvalidInput("offset 不能为负数", offset=offset)
    resolved = inside_downloads(Path(path), data_dir)
    try:
        is_file = resolved.is_file()
    except OSError as exc:  # e.g. a component longer than NAME_MAX
        raise InvalidInput("路径无效", path=str(path), reason=type(exc).__name__) from exc
    if not is_file:
        raise InvalidInput("文件不存在", path=str(path))
    if sniff_format(resolved) != "pdf":
        raise InvalidFile("不是 PDF 文件", path=str(resolved))
    data = _read(resolved)
    key = _digest(data)
    kept = _kept(key)
    reader: Any = None
    if kept is None:
        reader = _open(data, resolved)
        kept = _Extract(len(reader.pages))
    extract = kept
    count = extract.page_count
    wanted = parse_pages(pages, count)

    def lines_of(index: int) -> list[str]:
        nonlocal reader
        lines = extract.lines.get(index)
        if lines is None:
            if reader is None:
                reader = _open(data, resolved)
            lines = extract.lines[index] = _page_lines(reader.pages[index])
        return lines

    if extract.furniture is None:
        extract.furniture = furniture_of(lines_of, count)
    furniture = extract.furniture
    _keep(key, extract)
    chunks: list[str] = []
    returned: list[int] = []
    empty: list[int] = []
    garbled: list[int] = []
    used = 0
    truncated = False
    next_page: int | None = None
    next_offset: int | None = None
    next_pages: str | None = None
    for i, number in enumerate(wanted):
        skip = offset if i == 0 else 0
        # the blank line after a page belongs to that page (not to the request's last one), so a
        # cut inside it goes on inside it and the pages rejoin exactly
        body = _text_of(lines_of(number - 1), furniture) + (PAGE_SEPARATOR if i < len(wanted) - 1 else "")
        text = body[skip:]
        if not text and skip:
            continue  # the offset is past the first page's end: nothing of it is left
        room = max_characters - used
        if len(text) > room:
            piece = text[:room]
            if piece:
                chunks.append(piece)
                returned.append(number)
                if looks_garbled(body):
                    garbled.append(number)
            truncated, next_page, next_offset = True, number, skip + len(piece)
            next_pages = pages_spec(wanted[i:])
            break
        chunks.append(text)
        used += len(text)
        returned.append(number)
        if not body.strip():
            empty.append(number)
        elif looks_garbled(body):
            garbled.append(number)
    if offset and not returned and not truncated:
        raise InvalidInput("offset 超出正文长度", offset=offset)
    if not offset and not truncated and not "".join(chunks).strip():
        # Every page asked for is without text (a scanned PDF is images only): an empty success
        # read like a blank paper. The HTML reader, or OCR outside this tool, has the text.
        raise InvalidFile(
            "PDF 的所选页没有可提取的文字（扫描版或整页图片）；" + _instead(html_reader),
            path=str(resolved), pages=pages_spec(wanted), page_count=count, reason="no_text",
        )  # fmt: skip
    return PdfText(
        path=str(resolved),
        text="".join(chunks),
        page_count=count,
        pages_returned=returned,
        pages_without_text=empty,
        garbled_pages=garbled,
        warnings=_warnings(empty, garbled, html_reader),
        truncated=truncated,
        next_page=next_page,
        next_pages=next_pages,
        next_offset=next_offset,
    )


# A client pages through a PDF in parts (next_pages / next_offset; the library's indexing in
# MAX_CHARACTERS pieces), and every call needs the running-head sample of up to 12 pages besides
# its own: the pages extracted are kept for the last few files, keyed by the file's identity on
# disk (its content), so a call costs the pages it has not seen yet.
_EXTRACTS_KEPT = 4


@dataclass
class _Extract:
    page_count: int
    lines: dict[int, list[str]] = field(default_factory=dict)  # 0-based page -> its lines
    furniture: frozenset[str] | None = None


_extracts: OrderedDict[bytes, _Extract] = OrderedDict()
_extracts_lock = threading.Lock()


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:  # gone since it was found
        raise InvalidFile("PDF 无法解析", path=str(path), reason=str(exc)[:200]) from exc


def _digest(data: bytes) -> bytes:
    """A file replaced, even in the same clock tick, has another key: it is read anew."""
    return hashlib.blake2b(data, digest_size=20).digest()


def _kept(key: bytes) -> _Extract | None:
    with _extracts_lock:
        return _extracts.get(key)


def _keep(key: bytes, extract: _Extract) -> None:
    with _extracts_lock:
        _extracts[key] = extract
        _extracts.move_to_end(key)
        while len(_extracts) > _EXTRACTS_KEPT:
            _extracts.popitem(last=False)


def _open(data: bytes, path: Path) -> Any:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        len(reader.pages)
    except (PdfReadError, ValueError, OSError) as exc:
        raise InvalidFile("PDF 无法解析", path=str(path), reason=str(exc)[:200]) from exc
    return reader


def _instead(html_reader: bool) -> str:
    """Where the text is when the PDF has none that reads."""
    if html_reader:
        return "可改用 read_online_html 读取 HTML 全文"
    return "只读模式下不能读 HTML 全文，可用 get_metadata 取得摘要"


def _warnings(empty: list[int], garbled: list[int], html_reader: bool = True) -> list[str]:
    out: list[str] = []
    if empty:
        out.append(f"第 {pages_spec(empty)} 页没有可提取的文字（扫描页或整页图片），text 中没有这些页的内容")
    if garbled:
        out.append(
            f"第 {pages_spec(garbled)} 页的文字像是乱码（PDF 字体缺少到 Unicode 的映射）；" + _instead(html_reader)
        )
    return out


# Where the characters of a Chinese or Western paper lie: Latin, Greek, Cyrillic, punctuation,
# sub/superscripts, letterlike, arrows, math, technical, enclosed numbers (①), boxes, shapes,
# symbols, dingbats, supplemental math, Latin extended additional (ế), CJK radicals/symbols/kana/bopomofo/enclosed/compatibility, CJK ideographs
# (Ext. A, URO), Hangul, compatibility ideographs, ligatures, vertical/small/full-width forms,
# mathematical alphanumerics and CJK Ext. B onwards; and the scripts of China's minority-language
# journals CNKI carries: Arabic (Uyghur, Kazakh) with its presentation forms, Tibetan, Mongolian, Yi.
_READABLE = (
    (0x0000, 0x024F), (0x0370, 0x04FF), (0x1E00, 0x1EFF), (0x2000, 0x2BFF), (0x2E80, 0x4DBF), (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF), (0xF900, 0xFAFF), (0xFB00, 0xFB06), (0xFE10, 0xFE6F), (0xFF00, 0xFFEF),
    (0x1D400, 0x1D7FF), (0x20000, 0x3134F),
    (0x0600, 0x06FF), (0xFB50, 0xFDFF), (0xFE70, 0xFEFF), (0x0F00, 0x0FFF), (0x1800, 0x18AF), (0xA000, 0xA4CF),
)  # fmt: skip
_GARBLED_SHARE = 0.3
_GARBLED_MIN = 20  # non-space characters; fewer is no sample


def _readable(ch: str) -> bool:
    code = ord(ch)
    if unicodedata.category(ch) in ("Cc", "Co", "Cn", "Cs") or ch == "\ufffd":
        return False
    return any(lo <= code <= hi for lo, hi in _READABLE)


def looks_garbled(text: str) -> bool:
    """Whether more than 30 % of a page's characters (at least 20) are control, private-use,
    unassigned or replacement characters, or lie outside the scripts a paper is written in:
    what extraction gives for a font without a ToUnicode map (glyph ids read as code points)."""
    chars = [ch for ch in text if not ch.isspace()]
    if len(chars) < _GARBLED_MIN:
        return False
    odd = sum(1 for ch in chars if not _readable(ch))
    return odd > _GARBLED_SHARE * len(chars)


def _page_lines(page: Any) -> list[str]:
    """A page's extracted lines without CNKI's copyright line."""
    try:
        raw = page.extract_text() or ""
    except Exception as exc:  # pypdf raises many types on damaged content streams
        raise InvalidFile("PDF 页面无法提取文字", reason=str(exc)[:200]) from exc
    lines: list[str] = []
    for line in raw.replace("\r\n", "\n").split("\n"):
        kept = _CNKI_FOOTER.sub("", line).rstrip()
        if kept or not line.strip():  # a line that was only the copyright line goes
            lines.append(kept)
    return lines


def _page_text(page: Any, furniture: frozenset[str] = frozenset()) -> str:
    return _text_of(_page_lines(page), furniture)


def _text_of(lines: list[str], furniture: frozenset[str]) -> str:
    return unwrap_lines(_without_furniture(lines, furniture)).strip()


# Page furniture (DESIGN.md "Reading a downloaded PDF"): a publisher's running head ("思想理论教育导刊
# 58 2016 年第 8 期", a thesis's "武汉大学博士学位论文") and page number sit on every page. Extraction
# puts them before or after the page's running text (content-stream order), where they would cut a
# paragraph that goes on over the page in two. A line is a running head when, with its numbers
# left aside, it stands at the edge of at least 2 and 40 % of the pages sampled after the first (a
# paper's first page has none; a two-sided layout alternates two heads), and it is no table's row,
# note, source or caption; a page number is a line of only a number (`· 58 ·`, `- 3 -`, `第 3 页`)
# at a page's edge.
_EDGE = 3  # lines at either end of a page where furniture stands
_FURNITURE_SAMPLE = 12  # pages sampled, spread over the file, so every call sees the same set
_FURNITURE_MIN, _FURNITURE_SHARE = 2, 0.4  # of the sampled pages after the first (it has no head)
# A table's note, source or caption, which an empirical paper repeats under each of its tables
# (注：***、**、*分别表示在1%、5%、10%的水平上显著), and a table's rows are never a head.
_NOT_HEAD = re.compile(r"^\s*(?:注|资料来源|数据来源|续表|表\s*\d|图\s*\d|Note|Source|Table\s*\d|Fig)", re.IGNORECASE)
_PAGE_NUMBER = re.compile(r"^[\s·•\-—–]*(?:第\s*)?\d{1,4}(?:\s*页)?[\s·•\-—–]*$")
_HEAD_MAX = 80  # characters: a longer line is running text


def _head_shape(line: str) -> str:
    """A line as a running head repeats it (numbers aside), or "" for a line that cannot be one."""
    if len(line.strip()) > _HEAD_MAX or _NOT_HEAD.match(line) or _table_row(line):
        return ""
    # its words in order of their own: the two heads of a two-sided layout put the same words
    # in mirrored order (`现代法学 76 2014 年第 6 期`, `2014 年第 6 期 现代法学 77`)
    words = sorted(w for w in re.split(r"[\s\d]+", line) if w)
    shape = " ".join(words)
    return shape if sum(ch.isalpha() for ch in shape) >= 2 else ""


def _edges(lines: list[str]) -> set[int]:
    filled = [i for i, line in enumerate(lines) if line.strip()]
    return set(filled[:_EDGE] + filled[-_EDGE:])


def furniture_of(lines_of: Callable[[int], list[str]], page_count: int) -> frozenset[str]:
    """The running heads of a file: shapes at the edge of enough of up to 12 pages spread over it
    (`lines_of` gives a 0-based page's lines)."""
    if page_count < 3:
        return frozenset()  # two pages: a line on both is as likely the paper's own
    n = min(page_count, _FURNITURE_SAMPLE)
    sample = sorted({round(i * (page_count - 1) / (n - 1)) for i in range(n)})
    seen: dict[str, int] = {}
    for index in sample:
        try:
            lines = lines_of(index)
        except InvalidFile:
            continue  # a damaged page says nothing of the others' heads
        for shape in {_head_shape(lines[i]) for i in _edges(lines)} - {""}:
            seen[shape] = seen.get(shape, 0) + 1
    need = max(_FURNITURE_MIN, math.ceil(_FURNITURE_SHARE * (len(sample) - 1)))
    return frozenset(shape for shape, count in seen.items() if count >= need)


def _without_furniture(lines: list[str], furniture: frozenset[str]) -> list[str]:
    edges = _edges(lines)
    return [
        line for i, line in enumerate(lines)
        if i not in edges or not (_PAGE_NUMBER.match(line) or _head_shape(line) in furniture - {""})
    ]  # fmt: skip


# The copyright line CNKI stamps on every page of its PDFs (text extracted from them in public
# repositories: "©1994-2018 China Academic Journal Electronic Publishing House. All rights
# reserved. http://www.cnki.net", glued to the running head or between two halves of a sentence).
_CNKI_FOOTER = re.compile(
    r"(?:©|\(C\))?\s*1994\s*[-–]\s*\d{4}\s*China Academic Journal Electronic Publishing House\.?"
    r"\s*All rights reserved\.?\s*(?:https?://www\.cnki\.net/?)?",
    re.IGNORECASE,
)


# A line ending in one of these (closing quotes and brackets after it aside) ends a sentence: the
# break after it is kept even when the line is full (it may end a paragraph, no word is cut there).
_SENTENCE_END = frozenset("。！？：；….!?:;")
_CLOSERS = "”’」』）)\"'"  # after a sentence's end (。” ends it; 损失”时 does not)
_FULL_LINE = 0.85  # of the widest line on the page: a line this wide was wrapped by the layout
_MIN_FULL_LINES = 2  # a page with fewer lines that wide has no running text to measure by


def _width(text: str) -> int:
    """Display width: a CJK (wide or full-width) character counts 2, any other 1."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _latin_end(line: str) -> bool:
    """A line ending in spaced (Latin) words: its wrap was a space. Its last two words decide, not
    any space in it: extraction spaces digits inside Chinese text (`《民法典》第 5` / `85 条`), and
    a Chinese word before the last one means the wrap was inside Chinese text, joined without one."""
    words = line.split()
    return len(words) >= 2 and words[-1].isascii() and words[-2].isascii()


# A number as a table cell prints it: signs, decimals, a percent sign, significance stars, a
# standard error in brackets (`-0.125***`, `(0.031)`, `41.5%`).
_CELL_NUMBER = re.compile(r"^[(\[（]?[-−+]?\d[\d,.]*%?\**[)\]）]?\**$")


def _table_row(line: str) -> bool:
    """A row of a table: at least 4 spaced cells, at least 3 and more than half of them numbers
    (a running head `现代法学 76 2014 年第 6 期` is half). Its line break is the table's, never a
    wrap (`GDP 1.2 0.3 0.1` / `FDI 0.5 0.2 0.1` are two rows)."""
    cells = line.split()
    numbers = sum(1 for cell in cells if _CELL_NUMBER.match(cell))
    return len(cells) >= 4 and numbers >= 3 and 2 * numbers > len(cells)


def unwrap_lines(lines: list[str]) -> str:
    """One page's lines with the layout's line wraps undone: a line as wide as the page's text
    (at least 85 % of its widest line) that does not end a sentence goes on in the next line,
    so `第5` / `85条` and `借` / `鉴` read `第585条`, `借鉴`. Joined without a space, except between
    two Latin words (`of the` / `next` read `of the next`); a line-end hyphen stays
    (`inter-` / `national` read `inter-national`: the PDF cannot tell a hyphenated compound
    from a hyphenated word). Short lines (headings, a paragraph's last line) keep their break, and
    so does every line of a page with only one full line (its widest line is no measure). A
    table's rows neither join nor measure the page's width."""
    rows = [_table_row(line) for line in lines]
    widths = [0 if row else _width(line) for line, row in zip(lines, rows, strict=True)]
    full = _FULL_LINE * max(widths, default=0)
    if sum(1 for w in widths if w and w >= full) < _MIN_FULL_LINES:
        return "\n".join(lines)  # no run of text as wide as the page: nothing to tell a wrap by
    out: list[str] = []
    for i, line in enumerate(lines):
        out.append(line)
        if i == len(lines) - 1:
            break
        nxt = lines[i + 1]
        stripped = line.rstrip()
        wrapped = (
            bool(stripped) and bool(nxt.strip()) and widths[i] >= full and not rows[i + 1]
            and stripped.rstrip(_CLOSERS)[-1:] not in _SENTENCE_END
        )
        if not wrapped:
            out.append("\n")
        elif _latin_end(stripped) and nxt[:1].isascii() and nxt[:1].isalnum():
            out.append(" ")
    return "".join(out)
