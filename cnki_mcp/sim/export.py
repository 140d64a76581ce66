"""The batch export `POST /dm8/api/ShowExport` (docs/simulator.md §Export): the records named by
`FileName` (the grid rows' `CookieName` values, comma-separated) in EndNote/Refer tags, one
`<li>` each, `<br>` between tags, in the order asked, unknown ids skipped, at most `PageSize`
(default 20, at most 50) records. The same text shape the real site answers (jasminum's and
cookjohn's export code, and the saved EndNote exports).

Half of the theses (a fixed choice per record) carry their abstract on the line after a bare
`%X`, as several theses in the saved export `export/cmsax_endnote_refer.txt` do; a line that
starts no tag continues the tag before it (docs/simulator.md, "Export")."""

from __future__ import annotations

import zlib
from html import escape

from .corpus import SimRecord

_REF_TYPE = {
    "期刊": "Journal Article",
    "硕士": "Thesis",
    "博士": "Thesis",
    "会议": "Conference Proceedings",
    "报纸": "Newspaper Article",
    "图书": "Book",
}


def _tags(r: SimRecord) -> list[tuple[str, str]]:
    kind = next((v for k, v in _REF_TYPE.items() if k in r.type), "Journal Article")
    tags: list[tuple[str, str]] = [("%0", kind)]
    tags += [("%A", a.name) for a in r.authors]
    organs = [i for a in r.authors for i in a.institutions]
    if organs:
        tags.append(("%+", ";".join(dict.fromkeys(organs)) + ";"))
    tags.append(("%T", r.title))
    if kind == "Thesis":
        tags += [("%I", r.source or ""), ("%9", "博士" if "博士" in r.type else "硕士"), ("%D", str(r.year or ""))]
        if r.supervisor:
            tags.append(("%Y", r.supervisor))
    elif kind == "Conference Proceedings":
        tags += [("%B", r.source or ""), ("%D", str(r.year or ""))]
        if r.place:
            tags.append(("%C", r.place))
    elif kind == "Newspaper Article":
        tags += [("%J", r.source or ""), ("%D", r.date or str(r.year or ""))]
    else:
        tags += [("%J", r.source or ""), ("%D", str(r.year or "")), ("%V", r.volume or ""), ("%N", r.issue or "")]
    if r.keywords:
        tags.append(("%K", ";".join(r.keywords)))
    if r.abstract and kind == "Thesis" and zlib.crc32(r.id.encode()) % 2 == 0:
        tags += [("%X", ""), ("", r.abstract)]
    elif r.abstract:
        tags.append(("%X", r.abstract))
    tags.append(("%P", r.pages or ""))
    if r.doi:
        tags += [("%U", f"https://link.cnki.net/doi/{r.doi}"), ("%R", r.doi)]
    tags.append(("%W", "CNKI"))
    return tags


def _line(tag: str, value: str) -> str:
    """One tag line, or (tag "") a line continuing the tag before it, indented as in the capture."""
    if not tag:
        return f"    {escape(value, quote=False)}<br>"
    return f" {tag} {escape(value, quote=False)}<br>"


def render_show_export(records: list[SimRecord]) -> str:
    items = "".join(
        "<li>" + "".join(_line(tag, value) for tag, value in _tags(r)) + " </li>" for r in records
    )
    return (
        f"<ul class='literature-list'>{items}</ul>"
        "<input id='hidMode' type='hidden' value='BATCH_DOWNLOAD,EXPORT,CLIPYBOARD,PRINT'>"
    )
