"""GB/T 7714-2015 numeric bibliography entries.

Rules (the standard, as encoded by the official CSL style):
- at most three authors, then `等` (Chinese records) or `et al.` (Latin records);
  Latin names as `SMITH J` (family in capitals, initials without periods);
- document type codes [J] [D] [C] [N] [M] [S] [P] [R] [A] [Z], `/OL` when a DOI or URL
  is given (the online access date `[引用日期]` is not written: the package has no clock);
- journals `刊名, 年, 卷(期): 页码`, theses and books `出版地: 出版者, 年`, conference
  papers `题名[C]//论文集. 出版地: 出版者, 年: 页码`, newspapers `报纸名, 日期(版次)`, patents
  `题名[P]. 公告日期`;
- a thesis's place is its institution's city (places.py); where a thesis or book has no
  known place the standard's rule applies: `[出版地不详]` (Chinese) or `[S.l.]` (Latin script).
"""

from __future__ import annotations

from ._text import page_range
from .missing import MissingMode, view
from .model import CiteRecord, DocKind
from .names import Name

TYPE_CODES: dict[DocKind, str] = {
    DocKind.JOURNAL: "J",
    DocKind.PHD_THESIS: "D",
    DocKind.MASTERS_THESIS: "D",
    DocKind.THESIS: "D",
    DocKind.CONFERENCE: "C",
    DocKind.NEWSPAPER: "N",
    DocKind.BOOK: "M",
    DocKind.YEARBOOK: "M",
    DocKind.STANDARD: "S",
    DocKind.PATENT: "P",
    DocKind.REPORT: "R",
    DocKind.OTHER: "Z",
}


def type_code(rec: CiteRecord) -> str:
    return TYPE_CODES[rec.kind]


def gbt_name(name: Name) -> str:
    if name.cjk or name.literal:
        return name.static
    initials = name.initials(" ", with_period=False)
    return f"{name.family.upper()} {initials}".strip()


def gbt_authors(names: list[Name], lang: str) -> str:
    shown = [gbt_name(n) for n in names[:3]]
    if len(names) > 3:
        shown.append("等" if lang == "zh" else "et al.")
    return ", ".join(shown)


def _dot_join(parts: list[str]) -> str:
    """Join with `. `, never doubling a period that a part already ends with."""
    out = ""
    for part in parts:
        if not part:
            continue
        if out:
            out += " " if out.endswith(".") else ". "
        out += part
    return out


def _colon_comma(place: str, publisher: str, year: str, pages: str) -> str:
    head = ": ".join(p for p in (place, publisher) if p)
    return ": ".join(p for p in (", ".join(p for p in (head, year) if p), pages) if p)


def _date_numeric(rec: CiteRecord, year: str) -> str:
    parts = rec.date_parts
    if len(parts) < 2:
        return year
    return "-".join([str(parts[0])] + [f"{p:02d}" for p in parts[1:]])


UNKNOWN_PLACE = {"zh": "[出版地不详]", "en": "[S.l.]"}
UNKNOWN_PUBLISHER = {"zh": "[出版者不详]", "en": "[s.n.]"}  # GB/T 7714-2015 §8.4.2
_PLACED = (DocKind.PHD_THESIS, DocKind.MASTERS_THESIS, DocKind.THESIS, DocKind.BOOK, DocKind.YEARBOOK)


def place_of(rec: CiteRecord) -> str:
    """出版地; for theses and books an unknown one is written as the standard says, not dropped."""
    if rec.place:
        return rec.place
    return UNKNOWN_PLACE[rec.lang] if rec.kind in _PLACED else ""


def render_entry(rec: CiteRecord, n: int, missing: MissingMode = "mark") -> str:
    v = view(rec, missing)
    kind = rec.kind
    online = bool(rec.doi or rec.url)
    code = type_code(rec) + ("/OL" if online else "")
    title = f"{v.title}[{code}]"
    pages = page_range(rec.pages, "expanded", "-")
    body: list[str]
    if kind in (DocKind.JOURNAL, DocKind.NEWSPAPER):
        if kind is DocKind.NEWSPAPER:
            src = ", ".join(p for p in (v.source, _date_numeric(rec, v.year)) if p)
            src += f"({pages})" if pages else ""
        else:
            src = ", ".join(p for p in (v.source, v.year, rec.volume or "") if p)
            src += f"({rec.issue})" if rec.issue else ""
            src = ": ".join(p for p in (src, pages) if p)
        body = [title, src]
    elif kind is DocKind.PATENT:
        # GB/T 7714-2015 §4.5: `申请者. 题名: 专利号[P]. 公告日期或公开日期`: no publisher, and the
        # day (CNKI's list gives no number: the official CSL style writes `题名[P]. 2019-05-10.`)
        body = [title, _date_numeric(rec, v.year)]
    elif kind is DocKind.YEARBOOK:
        # an article in a yearbook is a contribution to a monograph (GB/T 7714-2015 §8.5): the
        # yearbook is the container, not the publisher, which CNKI does not give
        head = f"{title}//{v.source}" if v.source else title
        publisher = rec.publisher or UNKNOWN_PUBLISHER[rec.lang]
        body = [head, _colon_comma(place_of(rec), publisher, v.year, pages)]
    elif kind is DocKind.CONFERENCE:
        container = v.source or rec.conference or ""
        head = f"{title}//{container}" if container else title
        place, publisher = rec.place or "", rec.publisher or ""
        if place or publisher:  # one known: the other as the standard writes an unknown one (§8.4)
            place = place or UNKNOWN_PLACE[rec.lang]
            publisher = publisher or UNKNOWN_PUBLISHER[rec.lang]
        body = [head, _colon_comma(place, publisher, v.year, pages)]
    else:
        if kind in (DocKind.PHD_THESIS, DocKind.MASTERS_THESIS, DocKind.THESIS):
            publisher = v.source
        else:
            publisher = rec.publisher or v.source
            if kind is DocKind.BOOK and not publisher:  # a book's place is always written (place_of): so is its publisher
                publisher = UNKNOWN_PUBLISHER[rec.lang]
        body = [title, _colon_comma(place_of(rec), publisher, v.year, pages)]
    access = _dot_join([rec.url or "", f"DOI:{rec.doi}" if rec.doi else ""])
    text = _dot_join([gbt_authors(v.names, rec.lang), *body, access])
    if not text.endswith("."):
        text += "."
    return f"[{n}] {text}"


def render(records: list[CiteRecord], missing: MissingMode = "mark") -> list[str]:
    return [render_entry(r, i, missing) for i, r in enumerate(records, 1)]
