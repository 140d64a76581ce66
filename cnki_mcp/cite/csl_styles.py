"""APA 7, MLA 9, Chicago author-date and Vancouver (NLM) bibliography entries.

Each follows the official CSL style of the same name as rendered by citeproc-js
(checked by tests/golden/test_citations.py):

| style     | authors shown                      | joiner        | Latin names          | page range    |
|-----------|------------------------------------|---------------|----------------------|---------------|
| apa       | all up to 20; 19 … last from 21    | `, & `        | `Smith, J.`          | 51–66         |
| mla       | 1, 2, or first + `et al.` from 3   | `, and `      | `Smith, John` first  | 123–30        |
| chicago   | all up to 6; first 3 + `et al.`    | `, and `      | `Smith, John` first  | 200–210, 881–89 |
| vancouver | all up to 6; first 6 + `et al.`    | `, `          | `Smith JD`           | 881–9         |

Chinese names are always written whole (张三). In a Chinese-language record, Latin
names keep family-first order without a comma (`Li Wei`, APA `Li W.`), as citeproc-js
does for East Asian items. English titles get title case in MLA and Chicago.
"""

from __future__ import annotations

from collections.abc import Callable

from ._text import (
    MONTHS_LONG,
    MONTHS_MLA,
    MONTHS_NLM,
    date_text,
    end_with,
    nest_quotes,
    page_range,
    title_case,
)
from .missing import MissingMode, View, view
from .model import CiteRecord, DocKind
from .names import Name

_THESES = (DocKind.PHD_THESIS, DocKind.MASTERS_THESIS, DocKind.THESIS)
_BOOKISH = (DocKind.BOOK,)  # a yearbook article is cited inside its yearbook (a container)


def genre(rec: CiteRecord) -> str:
    zh = rec.lang == "zh"
    if rec.kind is DocKind.PHD_THESIS:
        return "博士学位论文" if zh else "Doctoral dissertation"
    if rec.kind is DocKind.MASTERS_THESIS:
        return "硕士学位论文" if zh else "Master's thesis"
    return "学位论文" if zh else "Thesis"


def _publisher(rec: CiteRecord, v: View) -> str:
    if rec.kind in _THESES:
        return v.source
    return rec.publisher or v.source


def _styled_title(rec: CiteRecord, v: View) -> str:
    return title_case(v.title) if rec.lang == "en" else v.title


def _quoted(title: str) -> str:
    """“Title.” — the period goes inside the closing quote."""
    inner = nest_quotes(title)
    return f"“{end_with(inner)}”" if inner else ""


def _pages_label(pages: str) -> str:
    if not pages:
        return ""
    return f"pp. {pages}" if "–" in pages or "-" in pages else f"p. {pages}"


def _sentences(parts: list[str]) -> str:
    return " ".join(end_with(p) for p in parts if p)


def _link(rec: CiteRecord) -> str:
    if rec.doi:
        return f"https://doi.org/{rec.doi}"
    return rec.url or ""


def _event_shown(rec: CiteRecord, *, need_name: bool = False) -> bool:
    """APA, MLA and Chicago print the meeting (name, place, date) only for a conference
    paper that is not published with pages, volume or issue in proceedings (the official
    CSL styles' rule: "don't print event info for conference papers published in a
    proceedings"). APA needs the meeting's name; MLA and Chicago print a date alone."""
    if rec.kind is not DocKind.CONFERENCE or rec.pages or rec.volume or rec.issue:
        return False
    if need_name:
        return bool(rec.conference)
    return bool(rec.conference or rec.event_date)


def _capitalize_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _month_day(rec: CiteRecord, months: tuple[str, ...]) -> tuple[str, str]:
    parts = rec.date_parts
    month = months[parts[1] - 1] if len(parts) > 1 else ""
    day = str(parts[2]) if len(parts) > 2 else ""
    return month, day


# --- names ----------------------------------------------------------------------------


def _latin_form(name: Name, rec: CiteRecord, form: str) -> str:
    """form: 'inverted' (Smith, John), 'full' (John Smith), 'apa' (Smith, J.), 'nlm' (Smith JD)."""
    if name.cjk or name.literal:
        return name.static
    static = rec.lang == "zh"
    if form == "apa":
        initials = name.initials(" ", with_period=True)
        return f"{name.family} {initials}" if static else f"{name.family}, {initials}"
    if form == "nlm":
        return f"{name.family} {name.initials('', with_period=False)}"
    if static:
        return name.static
    return name.inverted if form == "inverted" else name.full


def _names(names: list[Name], rec: CiteRecord, first: str, rest: str) -> list[str]:
    return [_latin_form(n, rec, first if i == 0 else rest) for i, n in enumerate(names)]


def apa_authors(names: list[Name], rec: CiteRecord) -> str:
    shown = _names(names, rec, "apa", "apa")
    if len(shown) == 1:
        return shown[0]
    if len(shown) >= 21:
        return ", ".join(shown[:19]) + ", . . . " + shown[-1]
    return ", ".join(shown[:-1]) + ", & " + shown[-1]


def mla_authors(names: list[Name], rec: CiteRecord) -> str:
    shown = _names(names, rec, "inverted", "full")
    if len(shown) == 1:
        return shown[0]
    if len(shown) == 2:
        return f"{shown[0]}, and {shown[1]}"
    return f"{shown[0]}, et al."


def chicago_authors(names: list[Name], rec: CiteRecord) -> str:
    shown = _names(names, rec, "inverted", "full")
    if len(shown) >= 7:
        return ", ".join(shown[:3]) + ", et al."
    if len(shown) == 1:
        return shown[0]
    return ", ".join(shown[:-1]) + ", and " + shown[-1]


def vancouver_authors(names: list[Name], rec: CiteRecord) -> str:
    shown = _names(names, rec, "nlm", "nlm")
    if len(shown) >= 7:
        return ", ".join(shown[:6]) + ", et al."
    return ", ".join(shown)


# --- APA 7 ----------------------------------------------------------------------------


def apa(rec: CiteRecord, n: int = 1, missing: MissingMode = "mark") -> str:
    v = view(rec, missing)
    kind = rec.kind
    year = v.year or "n.d."
    if kind is DocKind.NEWSPAPER:
        month, day = _month_day(rec, MONTHS_LONG)
        year = ", ".join(p for p in (year, f"{month} {day}".strip()) if p)
    title = v.title
    if kind in _THESES:
        title = f"{title} [{genre(rec)}]"
    pages = page_range(rec.pages, "expanded", "–")
    if kind in _THESES or kind in _BOOKISH:
        source = _publisher(rec, v)
    elif kind is DocKind.JOURNAL:
        vol = (rec.volume or "") + (f"({rec.issue})" if rec.issue else "")
        source = ", ".join(p for p in (v.source, vol, pages) if p)
    elif kind is DocKind.YEARBOOK:  # APA 7 §10.3, a chapter: `In Book (p. 226)`
        label = ("pp. " if "–" in pages else "p. ") + pages if pages else ""
        source = " ".join(p for p in (f"In {v.source}" if v.source else "", f"({label})" if label else "") if p)
    else:
        source = ", ".join(p for p in (v.source, pages) if p)
    event = ""
    if _event_shown(rec, need_name=True):
        event = ", ".join(p for p in (_capitalize_first(rec.conference or ""), rec.event_place or "",
                                      date_text(rec.event_date_parts, MONTHS_LONG)) if p)
    author = apa_authors(v.names, rec) if v.names else ""
    head = [author, f"({year})", title] if author else [title, f"({year})"]
    text = _sentences([*head, source, event])
    link = _link(rec)
    return f"{text} {link}" if link else text


# --- MLA 9 ----------------------------------------------------------------------------


def mla(rec: CiteRecord, n: int = 1, missing: MissingMode = "mark") -> str:
    v = view(rec, missing)
    kind = rec.kind
    title = _styled_title(rec, v)
    pages = _pages_label(page_range(rec.pages, "minimal-two", "–"))
    author = mla_authors(v.names, rec) if v.names else ""
    if kind in _THESES:
        parts = [author, title, v.year, ", ".join(p for p in (v.source, genre(rec)) if p)]
        return _sentences(parts)
    if kind in _BOOKISH:
        container = ", ".join(p for p in (_publisher(rec, v), v.year) if p)
        return _sentences([author, title, container])
    if kind is DocKind.JOURNAL:
        # MLA gives a journal issue's month and year (`May 2015`), never the day.
        month, _ = _month_day(rec, MONTHS_MLA)
        items = [v.source, f"vol. {rec.volume}" if rec.volume else "", f"no. {rec.issue}" if rec.issue else "",
                 " ".join(p for p in (month, v.year) if p), pages]
    elif kind is DocKind.NEWSPAPER:
        month, day = _month_day(rec, MONTHS_MLA)
        items = [v.source, " ".join(p for p in (day, month, v.year) if p), pages]
    elif kind is DocKind.CONFERENCE:
        items = [v.source + (f" [{rec.place}]" if rec.place and v.source else ""), v.year, pages]
        if _event_shown(rec):
            items[2:2] = [_capitalize_first(rec.conference or ""),
                          date_text(rec.event_date_parts, MONTHS_MLA, day_first=True), rec.event_place or ""]
    else:
        items = [v.source, v.year, pages]
    link = _link(rec)
    container = ", ".join(p for p in [*items, link] if p)
    return " ".join(p for p in (end_with(author), _quoted(title), end_with(container)) if p)


# --- Chicago author-date --------------------------------------------------------------


def chicago(rec: CiteRecord, n: int = 1, missing: MissingMode = "mark") -> str:
    v = view(rec, missing)
    kind = rec.kind
    title = _styled_title(rec, v)
    year = v.year or "n.d."
    pages = page_range(rec.pages, "chicago-16", "–")
    if kind in _BOOKISH:
        shown_title, container = end_with(title), _publisher(rec, v)
    else:
        shown_title = _quoted(title)
        if kind is DocKind.JOURNAL:
            # The month stands in parentheses where an issue number does not: `47 (3)`,
            # `47 (May)`, `no. 5 (September)`, and pages follow a colon (`no. 02: 103–7`); with
            # neither volume nor issue the date is written out: `情报学报, December 1, 51–66`.
            month, day = _month_day(rec, MONTHS_LONG)
            if rec.volume:
                paren = rec.issue or month
                container = f"{v.source} {rec.volume}".strip() + (f" ({paren})" if paren else "")
                container = ": ".join(p for p in (container, pages) if p)
            elif rec.issue:
                no = f"no. {rec.issue}" + (f" ({month})" if month else "")
                container = ", ".join(p for p in (v.source, no) if p)
                container = ": ".join(p for p in (container, pages) if p)  # `视听, no. 02: 103–7`
            else:
                container = ", ".join(p for p in (v.source, f"{month} {day}".strip(), pages) if p)
        elif kind is DocKind.NEWSPAPER:
            month, day = _month_day(rec, MONTHS_LONG)
            container = ", ".join(p for p in (v.source, f"{month} {day}".strip()) if p)
        elif kind is DocKind.CONFERENCE:
            # The style prints the proceedings' place only when no meeting is named.
            placed = rec.place and v.source and not (rec.conference or rec.event_date_parts)
            head = v.source + (f" ({rec.place})" if placed else "")
            container = ", ".join(p for p in (head, pages) if p)
        elif kind in _THESES:
            container = ", ".join(p for p in (genre(rec), v.source) if p)
        elif kind is DocKind.YEARBOOK:  # a chapter: `In Book, pages`
            container = ", ".join(p for p in (f"In {v.source}" if v.source else "", pages) if p)
        else:
            container = ", ".join(p for p in (v.source, pages) if p)
    author = chicago_authors(v.names, rec) if v.names else ""
    parts = [end_with(author), end_with(year), shown_title] if author else [shown_title, end_with(year)]
    if _event_shown(rec):
        where = ", ".join(p for p in (rec.conference or "", date_text(rec.event_date_parts, MONTHS_LONG),
                                      rec.event_place or "") if p)
        parts.append(end_with(("Paper presented at " if rec.conference else "Paper presented ") + where))
    parts.append(end_with(container) if container else "")
    link = _link(rec)
    if link:
        parts.append(end_with(link))
    return " ".join(p for p in parts if p)


# --- Vancouver (NLM) ------------------------------------------------------------------


def vancouver(rec: CiteRecord, n: int = 1, missing: MissingMode = "mark") -> str:
    v = view(rec, missing)
    kind = rec.kind
    online_only = bool(rec.url and not rec.doi)  # with a DOI, NLM cites the DOI only
    internet = " [Internet]" if online_only else ""
    pages = page_range(rec.pages, "minimal", "–")
    author = vancouver_authors(v.names, rec) if v.names else ""
    place_pub = ": ".join(p for p in (rec.place or "", _publisher(rec, v)) if p)
    if kind is DocKind.JOURNAL:
        vol = (rec.volume or "") + (f"({rec.issue})" if rec.issue else "")
        date = ":".join(p for p in (vol, pages) if p)
        month, day = _month_day(rec, MONTHS_NLM)  # NLM: `2015 May 15;47(3):51-66`
        date = ";".join(p for p in (" ".join(p for p in (v.year, month, day) if p), date) if p)
        parts = [author, v.title, v.source + internet, date]
    elif kind is DocKind.NEWSPAPER:
        month, day = _month_day(rec, MONTHS_NLM)
        date = " ".join(p for p in (v.year, month, day) if p)
        parts = [author, v.title, v.source + internet, ":".join(p for p in (date, rec.pages or "") if p)]
    elif kind is DocKind.CONFERENCE:
        parts = [author, v.title + internet, f"In: {v.source}" if v.source else "",
                 "; ".join(p for p in (": ".join(p for p in (rec.place or "", rec.publisher or "") if p), v.year)
                           if p),
                 f"p. {pages}" if pages else ""]
    elif kind is DocKind.YEARBOOK:  # NLM, a part of a book: `In: Book. Year. p. 226.`
        parts = [author, v.title + internet, f"In: {v.source}" if v.source else "",
                 "; ".join(p for p in (place_pub if rec.publisher else "", v.year) if p),
                 f"p. {pages}" if pages else ""]
    elif kind in _THESES:
        place = f"[{rec.place}]" if rec.place else ""
        pub = ": ".join(p for p in (place, v.source) if p)
        parts = [author, f"{v.title} [{genre(rec)}]{internet}", "; ".join(p for p in (pub, v.year) if p)]
    else:
        parts = [author, v.title + internet, "; ".join(p for p in (place_pub, v.year) if p)]
    text = _sentences(parts)
    if online_only:
        text += f" Available from: {rec.url}"
    if rec.doi:
        text += f" doi:{rec.doi}"
    return f"{n}. {text}"


Renderer = Callable[[CiteRecord, int, MissingMode], str]

STYLES: dict[str, Renderer] = {"apa": apa, "mla": mla, "chicago": chicago, "vancouver": vancouver}
