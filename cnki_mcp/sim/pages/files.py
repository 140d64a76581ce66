"""Downloadable files and download-failure pages.

`pdf_bytes` writes a real PDF by hand: A4 pages, the Adobe-GB1 font STSong-Light (a standard CJK
font viewers supply, nothing embedded) with the `UniGB-UCS2-H` CMap, so each character is its
UCS-2 code; a ToUnicode CMap maps codes back to Unicode so text extraction (pypdf) round-trips.
`caj_bytes` writes a small CAJ-like container (`CAJ` magic + UTF-8 text). Refusal texts follow the
markers production checks in the first 300 characters (余额不足, 下载失败 …)."""

from __future__ import annotations

import struct
import zlib

from ..corpus import SimRecord
from ..links import Links, Visitor
from .common import esc

PAGE_W, PAGE_H = 595, 842
MARGIN = 56
BODY_SIZE, TITLE_SIZE = 11, 16
LEADING = 1.45


def _char_w(ch: str, size: float) -> float:
    return size * (0.5 if ord(ch) < 0x80 else 1.0)


def _wrap(text: str, size: float, width: float) -> list[str]:
    lines: list[str] = []
    for para in text.split("\n"):
        cur, w = "", 0.0
        for ch in para:
            cw = _char_w(ch, size)
            if w + cw > width and cur:
                lines.append(cur)
                cur, w = "", 0.0
            cur += ch
            w += cw
        lines.append(cur)
    return lines


def _ucs2_hex(text: str) -> str:
    return "".join(
        f"{ord(c):04X}" if ord(c) <= 0xFFFF and not 0xD800 <= ord(c) <= 0xDFFF else "003F" for c in text
    )


def _to_unicode_cmap(text: str) -> bytes:
    """Map only the codes the document uses (a full 64k map makes extractors slow on every page)."""
    codes = sorted({_ucs2_hex(c) for c in text})
    entries = [f"<{code}> <{code}>" for code in codes]
    chunks = []
    for i in range(0, len(entries), 100):
        part = entries[i : i + 100]
        chunks.append(f"{len(part)} beginbfchar\n" + "\n".join(part) + "\nendbfchar")
    return (
        "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n"
        "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n"
        "/CMapName /Sim-UCS2-UCS def\n/CMapType 2 def\n"
        "1 begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n"
        + "\n".join(chunks)
        + "\nendcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n"
    ).encode("ascii")


def _text_lines(record: SimRecord) -> list[tuple[float, str]]:
    """(font size, line) for the whole document, wrapped to the text width."""
    width = PAGE_W - 2 * MARGIN
    out: list[tuple[float, str]] = [(TITLE_SIZE, ln) for ln in _wrap(record.title, TITLE_SIZE, width)]
    meta = [
        "；".join(a.name for a in record.authors),
        "；".join(dict.fromkeys(i for a in record.authors for i in a.institutions)),
        " ".join(x for x in (record.source or "", str(record.year or ""), record.pages or "") if x),
    ]
    if record.doi:
        meta.append(f"DOI: {record.doi}")
    for m in meta:
        out += [(BODY_SIZE, ln) for ln in _wrap(m, BODY_SIZE, width) if m]
    out.append((BODY_SIZE, ""))
    if record.abstract:
        out += [(BODY_SIZE, ln) for ln in _wrap("摘要：" + record.abstract, BODY_SIZE, width)]
    if record.keywords:
        out += [(BODY_SIZE, ln) for ln in _wrap("关键词：" + "；".join(record.keywords), BODY_SIZE, width)]
    for sec in record.fulltext:
        out.append((BODY_SIZE, ""))
        out += [(BODY_SIZE + 1, ln) for ln in _wrap(sec.heading, BODY_SIZE + 1, width)]
        out += [(BODY_SIZE, ln) for ln in _wrap(sec.text, BODY_SIZE, width)]
    return out


# Page furniture of the PDFs CNKI serves (docs/simulator.md "Downloaded files"): the copyright
# line CNKI stamps on every page, the publisher's running head (a journal's name, year, issue and
# page number, as in "思想理论教育导刊 58 2016 年第 8 期"; a thesis's university and degree) and
# a page number. Text extraction returns them in content-stream order, so they land before, after
# or between the lines of the page's running text.
COPYRIGHT = (
    "©1994-2026 China Academic Journal Electronic Publishing House. All rights reserved. http://www.cnki.net"
)
FURNITURE_SIZE = 8


def _first_page(record: SimRecord) -> int:
    head = (record.pages or "").split("-")[0].strip()
    return int(head) if head.isdigit() else 1


def _running_head(record: SimRecord, index: int, number: int) -> str | None:
    """The head of page `index` (0-based; the first page has none), numbered `number`."""
    if index == 0:
        return None
    if record.type in ("硕士", "博士") and record.source:
        return f"{record.source}{record.type}学位论文"
    if record.type == "期刊" and record.source and record.year:
        issue = f"年第 {record.issue} 期" if record.issue else "年"
        if index % 2:  # even page numbers of a two-sided layout: the number outside, on the left
            return f"{record.source} {number} {record.year} {issue}"
        return f"{record.year} {issue} {record.source} {number}"
    return None


def _text_op(size: float, x: float, y: float, text: str) -> str:
    return f"BT /F1 {size:g} Tf 1 0 0 1 {x:g} {y:.1f} Tm <{_ucs2_hex(text)}> Tj ET"


def _furnish(record: SimRecord, bodies: list[list[str]]) -> list[bytes]:
    """Each page's body ops with its furniture: the head first on some pages and last on others
    (where extraction puts it depends on the producer), the page number, the copyright line."""
    start = _first_page(record)
    pages: list[bytes] = []
    for index, body in enumerate(bodies):
        number = start + index
        head = _running_head(record, index, number)
        ops = list(body)
        if head is not None:
            op = _text_op(FURNITURE_SIZE + 1, MARGIN, PAGE_H - MARGIN + 18, head)
            if index % 2:
                ops.insert(0, op)
            else:
                ops.append(op)
        if head is None or str(number) not in head:
            ops.append(_text_op(FURNITURE_SIZE + 1, PAGE_W / 2 - 12, MARGIN - 22, f"· {number} ·"))
        ops.append(_text_op(FURNITURE_SIZE - 2, MARGIN, 18, COPYRIGHT))
        pages.append("\n".join(ops).encode("ascii"))
    return pages


def _furniture_text(record: SimRecord, page_count: int) -> str:
    """Every character the furniture of `page_count` pages uses (for the ToUnicode map)."""
    start = _first_page(record)
    heads = (_running_head(record, i, start + i) or "" for i in range(page_count))
    return COPYRIGHT + "·0123456789 " + "".join(heads)


def _paginate(lines: list[tuple[float, str]]) -> list[list[str]]:
    pages: list[list[str]] = []
    ops: list[str] = []
    y = PAGE_H - MARGIN
    for size, text in lines:
        step = size * LEADING
        if y - step < MARGIN and ops:
            pages.append(ops)
            ops, y = [], PAGE_H - MARGIN
        y -= step
        if text:
            ops.append(_text_op(size, MARGIN, y, text))
    pages.append(ops)
    return pages


def _pdf_string(text: str) -> bytes:
    return b"<FEFF" + "".join(f"{b:02X}" for b in text.encode("utf-16-be")).encode("ascii") + b">"


def pdf_bytes(record: SimRecord) -> bytes:
    """A valid multi-page PDF holding the record's title, authors, abstract and full text."""
    lines = _text_lines(record)
    bodies = _paginate(lines)
    streams = _furnish(record, bodies)
    objs: list[bytes] = []  # object n is objs[n-1]

    def add(body: bytes) -> int:
        objs.append(body)
        return len(objs)

    def stream(data: bytes) -> bytes:
        packed = zlib.compress(data)
        return b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(packed) + packed + b"\nendstream"

    catalog = add(b"")  # filled below
    pages_id = add(b"")
    used = "".join(t for _, t in lines) + _furniture_text(record, len(bodies))
    cmap_id = add(stream(_to_unicode_cmap(used)))
    desc_id = add(
        b"<< /Type /Font /Subtype /CIDFontType0 /BaseFont /STSong-Light "
        b"/CIDSystemInfo << /Registry (Adobe) /Ordering (GB1) /Supplement 4 >> "
        b"/FontDescriptor << /Type /FontDescriptor /FontName /STSong-Light /Flags 6 "
        b"/FontBBox [-25 -254 1000 880] /ItalicAngle 0 /Ascent 880 /Descent -120 /CapHeight 880 "
        b"/StemV 93 >> /DW 1000 /W [1 95 500] >>"
    )
    font_id = add(
        b"<< /Type /Font /Subtype /Type0 /BaseFont /STSong-Light-UniGB-UCS2-H /Encoding /UniGB-UCS2-H "
        b"/DescendantFonts [%d 0 R] /ToUnicode %d 0 R >>" % (desc_id, cmap_id)
    )
    page_ids = []
    for data in streams:
        content_id = add(stream(data))
        page_ids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %d %d] /Resources << /Font << /F1 %d 0 R >> >> "
                b"/Contents %d 0 R >>" % (pages_id, PAGE_W, PAGE_H, font_id, content_id)
            )
        )
    objs[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id
    kids = b" ".join(b"%d 0 R" % p for p in page_ids)
    objs[pages_id - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, len(page_ids))
    authors = ";".join(a.name for a in record.authors)
    info_id = add(
        b"<< /Title "
        + _pdf_string(record.title)
        + b" /Author "
        + _pdf_string(authors)
        + b" /Producer (cnki-mcp simulator) >>"
    )

    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for n, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objs) + 1,
        catalog,
        info_id,
        xref,
    )
    return bytes(out)


def caj_bytes(record: SimRecord) -> bytes:
    """A CAJ-like file: `CAJ` magic, a version word, then length-prefixed UTF-8 text blocks."""
    blocks = [
        record.title,
        ";".join(a.name for a in record.authors),
        record.abstract or "",
        *(f"{s.heading}\n{s.text}" for s in record.fulltext),
    ]
    body = b"".join(struct.pack("<I", len(b)) + b for b in (x.encode("utf-8") for x in blocks))
    data = b"CAJ\x00" + struct.pack("<HH", 1, len(blocks)) + body
    return data + b"\x00" * max(0, 128 - len(data))


def render_download_refused(reason: str, links: Links, visitor: Visitor) -> str:
    """bar.cnki.net order page refusing a download; the reason comes first in the body text."""
    who = esc(visitor.personal_name or visitor.institution or "游客")
    return (
        '<!DOCTYPE html><html lang="zh-CN"><head><meta charset="utf-8"><title>下载失败 - 中国知网</title></head>'
        '<body><div class="tip-box"><div class="tip-main">'
        f'<div class="tip-header"><p class="tip-title">下载失败：{esc(reason)}</p></div>'
        f'<div class="tip-body"><span class="organizationTip">{esc(reason)}</span>'
        f'<a class="tip-btn" href="{esc(links.www("/"))}">返回首页</a></div>'
        f'</div></div><div class="herder"><div class="header-content"><span class="user">{who}</span></div></div>'
        "</body></html>"
    )


def render_html_as_pdf(record: SimRecord) -> bytes:
    """An HTML error page the server serves under a `.pdf` name (must fail file validation)."""
    page = (
        '<!DOCTYPE html><html lang="zh-CN"><head><meta charset="utf-8"><title>下载失败</title></head>'
        '<body><div class="error"><h2>系统繁忙，下载失败</h2>'
        f"<p>文献《{esc(record.title)}》暂时无法下载，请稍后重试。</p></div></body></html>"
    )
    return page.encode("utf-8")
