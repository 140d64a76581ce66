"""Paper identity: normalised keys, record refs, the same-paper rule, the detail identity
check and the merge rules, plus `Paper`, the stored and merged view of one paper.

PURE: no I/O, no clock. Observation times are passed in by callers."""

from __future__ import annotations

import copy
import functools
import hashlib
import html
import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal
from urllib.parse import parse_qsl, quote, urlsplit

from pydantic import BaseModel, ConfigDict, Field

from cnki_mcp.errors import IdentityAmbiguous
from cnki_mcp.models import Author, DetailPage, GridRow, NativeId

# --- keys -------------------------------------------------------------------------

# Spaces around these marks carry no meaning in a title; everything else (`+`, `#`, `.`,
# the space between two words) does, so `C++`/`C#`, `A B`/`AB` and `1.2`/`12` stay apart.
_TITLE_PUNCT = "—–：:，,；;。！!？?（()）“”「」《》"
_AROUND_PUNCT = re.compile(r"\s*([" + re.escape(_TITLE_PUNCT) + r"])\s*")
_DOI_PREFIXES = ("https://doi.org/", "http://doi.org/", "https://dx.doi.org/", "http://dx.doi.org/", "doi:")
# Bracketed role suffixes CNKI appends to names (林倩(文), 胡馨元（编）): they broke matching.
_ROLE = re.compile(r"\s*[(（]\s*(?:文|著|编|译|主编|编著|编译|撰|撰文|执笔|整理|口述|摄|图|供稿)\s*[)）]\s*$")
NODE_ID = re.compile(r"[nN][1-9][0-9]{0,4}")  # citation_graph's node ids (`citegraph._Walk.add`)
# Handles, not titles: a record_ref, a CNKI file name (letters then digits, no space: FXYJ201906001),
# a link, a DOI
NOT_A_TITLE = re.compile(
    r"rec_[0-9a-f]{8,}|[A-Za-z]{2,8}[0-9]{4,}[A-Za-z0-9.]*|(?:https?|doi):\S*|10\.\d{4,9}/\S+", re.I
)


# site-rules.md §1.1: query keys that make a URL secret, the reader's `invoice`/`nonce` included; never shown.
SECRET_QUERY_WORDS = ("token", "ticket", "session", "password", "signature", "invoice", "nonce")


# Invisible format characters that text copied from PDFs, Word and web pages carries inside words:
# soft hyphen, zero-width space, direction marks and embeddings, word joiner and invisible
# operators, isolates, BOM. No CNKI title or search term holds one, and a person cannot see one
# to take it out. ZWJ/ZWNJ (U+200C/D) and the Mongolian vowel separator stay: scripts CNKI
# carries spell words with them.
# Control characters other than tab, newline and carriage return (C0 and C1: ESC starts terminal
# escape sequences, BEL, NUL, vertical tab, form feed …): refused in a tool's input, dropped from the
# site's text (parse/_html.clean_text).
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
INVISIBLE = re.compile("[\u00ad\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def visible(text: str) -> str:
    """`text` without the invisible format characters of INVISIBLE."""
    return INVISIBLE.sub("", text)


def ascii_letters(text: str) -> str:
    """Full-width letters and digits (an IME in full-width mode: `ＣＯ２`), sub- and superscript
    digits (`CO₂`) and ligatures as the ASCII CNKI indexes (its text of CO<sub>2</sub> is CO2);
    punctuation is left as typed (CNKI's titles carry full-width punctuation themselves)."""
    if text.isascii():
        return text
    out = []
    for ch in text:
        folded = ch if ch.isascii() else unicodedata.normalize("NFKC", ch)
        out.append(folded if folded != ch and folded.isascii() and folded.isalnum() else ch)
    return "".join(out)


# An HTML character reference left in text a client escaped or copied from a page's source
# (`R&amp;D`, `&#8220;`): only complete ones, `;` included (html.unescape alone also reads `&para`
# in `&parameter` as ¶).
_ENTITY = re.compile(r"&(?:[A-Za-z][A-Za-z0-9]{1,31}|#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6});")


def decode_entities(text: str) -> str:
    """`text` with its complete HTML character references decoded (`R&amp;D` -> `R&D`)."""
    return _ENTITY.sub(lambda m: html.unescape(m.group()), text) if "&" in text else text


# a day written with slashes or dots, or without leading zeros (`2004/06/29`, `2019.5.1`)
_DAY_WRITTEN = re.compile(r"^\s*(\d{4})\s*[-/.]\s*(\d{1,2})\s*[-/.]\s*(\d{1,2})(?!\d)")


def iso_date(value: str | None) -> str | None:
    """A site date with its day as `YYYY-MM-DD` (what follows it, a time of day, kept): the grid
    lists an older newspaper's day as `2004/06/29` beside `2016-06-15` (saved page
    kns8s-grid/pluginsx_search_result_4rows.html). A year or a month alone is left as it is."""
    if value is None:
        return None
    m = _DAY_WRITTEN.match(value)
    if m is None or not 1 <= int(m.group(2)) <= 12 or not 1 <= int(m.group(3)) <= 31:
        return value
    return f"{m.group(1)}-{int(m.group(2)):02d}-{int(m.group(3)):02d}{value[m.end():]}"


def _collapse(text: str | None) -> str:
    """Whitespace runs (any Unicode space, NBSP, full-width space) to one space, trimmed."""
    return " ".join((text or "").split())


def title_key(title: str | None) -> str:
    """Lower-case, whitespace collapsed, spaces around title punctuation removed ("" = no key)."""
    return _AROUND_PUNCT.sub(r"\1", _collapse(title).lower())


# single title marks written for a title nested in one (`《〈民法典〉实施…》`) as the double ones
NESTED_MARKS = str.maketrans("〈〉", "《》")


def asked_title(title: str) -> str:
    """A title as a caller asked for it: surrounding space dropped, and one pair of 《》 around
    the whole title (how Chinese text quotes a title) taken off, a title nested in it written
    with 《》 again (`《〈民法典〉实施…》` -> `《民法典》实施…`); 《》 that only start or end a
    title stay (`《民法典》第585条的适用`). Invisible format characters (`visible`) are dropped first."""
    text = visible(title).strip()
    if not (text.startswith("《") and text.endswith("》")):
        return text
    depth = 0
    for i, char in enumerate(text):
        depth += 1 if char == "《" else -1 if char == "》" else 0
        if depth == 0 and i < len(text) - 1:
            return text  # the first 《 closes before the end: not one pair around the whole
    if depth != 0:
        return text  # unbalanced marks: taken as written
    return text[1:-1].strip().translate(NESTED_MARKS)  # `《》` alone: no title at all


def source_key(source: str | None) -> str:
    """Whitespace cleaned, trailing ` .。` removed, lower-case, full-width brackets to ASCII."""
    text = _collapse(source).rstrip(" .。").lower()
    return text.replace("（", "(").replace("）", ")")


def bare_doi(doi: str | None) -> str:
    """The DOI without resolver prefixes or `doi:`, its case kept ("" = no DOI)."""
    text = _collapse(doi)
    changed = True
    while changed:
        changed = False
        for prefix in _DOI_PREFIXES:
            if text.lower().startswith(prefix):
                text = text[len(prefix) :].strip()
                changed = True
    return text


def doi_key(doi: str | None) -> str:
    """Lower-case DOI without resolver prefixes or `doi:` ("" = no DOI)."""
    return bare_doi(doi).lower()


def author_key(name: str | None) -> str:
    """A person's name for comparison: role suffix and trailing marks removed, lower-case."""
    text = _ROLE.sub("", _collapse(name).strip(" ;；,，*∗0123456789"))
    return text.strip().lower()


# CNKI's product codes for ONE paper differ between pages: an online-first article is
# `data-dbname="CAPJ"` in the kns8s grid but `paramdbcode=CJFQ`, `paramdbname=CJFDLAST2026` on
# its kcms2 detail page (real captures). Only the FILENAME is stable, so identity uses the
# filename qualified by the database FAMILY the code belongs to. Codes not listed here (or no
# code at all) give the filename alone, which never contradicts a family.
NATIVE_FAMILIES: dict[str, str] = {
    **dict.fromkeys(("CJFQ", "CJFD", "CAPJ", "CJFN", "CJFX", "CJFZ", "CJZK"), "JOURNAL"),
    **dict.fromkeys(("CDFD", "CMFD", "CDMD"), "THESIS"),
    **dict.fromkeys(("CPFD", "CIPD", "CPVD"), "CONFERENCE"),
    **dict.fromkeys(("CCND", "CCNF"), "NEWSPAPER"),
    "CYFD": "YEARBOOK",
}
_FAMILY_NAMES = frozenset(NATIVE_FAMILIES.values())


def listed_online_first(native: NativeId | None) -> bool:
    """CNKI lists an online-first (网络首发) paper under CAPJ (dbname `…LAST`): it has no
    volume, issue or pages yet."""
    name = ((native.dbname if native is not None else None) or "").upper()
    return name.startswith("CAPJ") or name.endswith("LAST")


def native_dbcode(native: NativeId | None) -> str:
    """The four-letter product code: `dbcode`, else the head of `dbname` (CJFDLAST2026)."""
    if native is None:
        return ""
    code = (native.dbcode or "").strip() or (native.dbname or "").strip()[:4]
    return code.upper()


def native_family(native: NativeId | None) -> str:
    """JOURNAL / THESIS / CONFERENCE / NEWSPAPER / YEARBOOK, or "" when unknown."""
    return NATIVE_FAMILIES.get(native_dbcode(native), "")


def native_key(native: NativeId | None) -> str:
    """`FAMILY:FILENAME` upper-case, or `FILENAME` when the family is unknown ("" = no
    filename). Unlike `NativeId.key` (the raw `DBCODE:FILENAME` a page showed), equal for
    the grid row and the detail page of one paper."""
    if native is None:
        return ""
    filename = "".join((native.filename or "").split()).upper()
    if not filename:
        return ""
    family = native_family(native)
    return f"{family}:{filename}" if family else filename


def split_native_key(key: str) -> tuple[str, str]:
    """(family, filename) of a native key; family "" when unqualified."""
    family, sep, filename = key.partition(":")
    return (family, filename) if sep and family in _FAMILY_NAMES else ("", key)


def natives_conflict(a: str, b: str) -> bool:
    """Two native keys name different papers: different filenames, or the same filename in
    two different known families. An absent key or an unknown family never conflicts."""
    if not a or not b:
        return False
    fa, na = split_native_key(a)
    fb, nb = split_native_key(b)
    return na != nb or bool(fa and fb and fa != fb)


def bibliography_key(title: str | None, authors: list[str], source: str | None, year: int | None) -> str:
    """Fingerprint of [title key, normalised authors joined by `|`, source key, year].
    Needs all four; "" when any is missing."""
    tkey = title_key(title)
    akeys = [k for k in (author_key(a) for a in authors) if k]
    skey = source_key(source)
    if not tkey or not akeys or not skey or not year:
        return ""
    payload = json.dumps([tkey, "|".join(akeys), skey, int(year)], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:32]


@functools.lru_cache(maxsize=8192)
def _keys(
    dbcode: str | None,
    dbname: str | None,
    filename: str | None,
    doi: str | None,
    title: str,
    authors: tuple[str, ...],
    source: str | None,
    year: int | None,
    locator: str | None,
) -> IdentityKeys:
    """A paper's identity keys from the fields they depend on (memoised: storing one list page asks
    for the same paper's keys several times, and each key normalises its text again)."""
    return IdentityKeys(
        native=native_key(NativeId(dbcode=dbcode, dbname=dbname, filename=filename)),
        doi=doi_key(doi),
        bib=bibliography_key(title, list(authors), source, year),
        title=title_key(title),
        locator=(locator or "").strip(),
    )


@dataclass(frozen=True, slots=True)
class IdentityKeys:
    """Everything identity decisions look at. Empty strings mean "absent"."""

    native: str = ""
    doi: str = ""
    bib: str = ""
    title: str = ""
    locator: str = ""

    @property
    def strong(self) -> bool:
        return bool(self.native or self.doi or self.bib)


def record_ref(keys: IdentityKeys) -> str:
    """`rec_` + 24 hex of SHA-256 over the JSON of the strongest key:
    native > DOI > bibliography key > title + NUL + locator."""
    if keys.native:
        basis: list[str] = ["native", keys.native]
    elif keys.doi:
        basis = ["doi", keys.doi]
    elif keys.bib:
        basis = ["bib", keys.bib]
    else:
        basis = ["title", f"{keys.title}\x00{keys.locator}"]
    digest = hashlib.sha256(json.dumps(basis, ensure_ascii=False).encode("utf-8")).hexdigest()
    return "rec_" + digest[:24]


def index_keys(keys: IdentityKeys) -> list[str]:
    """`native:<FILENAME>`, `doi:…`, `bib:…`, `title:…` for the keys present. Only the first
    three may ever join two records (after `same_paper`); `title:` is for lookup."""
    out: list[str] = []
    if keys.native:
        out.append(f"native:{split_native_key(keys.native)[1]}")  # families are compared later
    if keys.doi:
        out.append(f"doi:{keys.doi}")
    if keys.bib:
        out.append(f"bib:{keys.bib}")
    if keys.title:
        out.append(f"title:{keys.title}")
    return out


def conflicts(a: IdentityKeys, b: IdentityKeys) -> bool:
    """Two records with different DOIs or conflicting native keys are different papers."""
    return bool((a.doi and b.doi and a.doi != b.doi) or natives_conflict(a.native, b.native))


def same_paper(a: IdentityKeys | Paper, b: IdentityKeys | Paper) -> bool:
    """Nothing conflicts AND (both have a DOI, or both a native key, or equal bibliography
    keys). A title alone is never enough."""
    ka = a.keys() if isinstance(a, Paper) else a
    kb = b.keys() if isinstance(b, Paper) else b
    if conflicts(ka, kb):
        return False
    return bool((ka.doi and kb.doi) or (ka.native and kb.native) or (ka.bib and ka.bib == kb.bib))


def same_observation(a: IdentityKeys, b: IdentityKeys) -> bool:
    """Two weak records (no native/DOI/bib key) seen at the same detail URL with the same
    title: the same listing observed twice, not a title-only match."""
    return (
        not a.strong
        and not b.strong
        and bool(a.title and a.locator)
        and a.title == b.title
        and a.locator == b.locator
    )


def detail_matches(requested: Paper, page: DetailPage) -> bool:
    """The identity check of a detail page against the paper it was fetched for:
    equal title keys; equal first authors when both have authors; no DOI conflict, no native
    conflict (filename and database family, `natives_conflict`); equal source keys when both
    name a source."""
    if title_key(requested.title) != title_key(page.title) or not title_key(page.title):
        return False
    if (
        requested.authors
        and page.authors
        and author_key(requested.authors[0].name) != author_key(page.authors[0].name)
    ):
        return False
    rdoi, pdoi = doi_key(requested.doi), doi_key(page.doi)
    if rdoi and pdoi and rdoi != pdoi:
        return False
    # Filename and database family, not the product code: CAPJ in the list, CJFQ on the page.
    if natives_conflict(native_key(requested.native), native_key(page.native)):
        return False
    rsrc, psrc = source_key(requested.source), source_key(page.source)
    return not (rsrc and psrc and rsrc != psrc)


# --- public URL -------------------------------------------------------------------


def doi_url(doi: str | None) -> str | None:
    """The resolver link of a DOI (`https://doi.org/<doi>`, case kept), None without one: unlike
    a kcms2 detail link it does not expire (site-rules.md §1.1)."""
    text = bare_doi(doi)
    if not text.startswith("10.") or "/" not in text:
        return None
    return "https://doi.org/" + quote(text, safe="/:;.-_()~!*'+,=@")


def is_cnki_host(host: str) -> bool:
    return host == "cnki.net" or host.endswith(".cnki.net")


def odd_authority(netloc: str) -> bool:
    """Whether an authority (urlsplit's netloc) is read differently by a browser or carries user
    info: a backslash is a path separator to Chromium (WHATWG URL) but host text to urlsplit, so
    `https://evil.com\\.cnki.net/…` and `https://evil.com\\@kns.cnki.net/…` open evil.com while
    urlsplit names a cnki.net host. No CNKI page is written so."""
    return "\\" in netloc or "@" in netloc


def public_url(url: str | None, extra_origins: tuple[str, ...] = ()) -> str | None:
    """The URL that may be shown: a CNKI https URL whose path contains `abstract` and whose
    query, fragment and path-parameter keys contain none of SECRET_QUERY_WORDS. Anything else: None.

    `extra_origins` (e.g. the simulator's `http://127.0.0.1:port`) count as CNKI."""
    if not url:
        return None
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").lower()
    except ValueError:
        return None
    if parts.username or parts.password or odd_authority(parts.netloc):
        return None
    origin = f"{parts.scheme}://{parts.netloc}".lower()
    cnki = parts.scheme == "https" and is_cnki_host(host)
    if not cnki and origin not in {o.rstrip("/").lower() for o in extra_origins}:
        return None
    if "abstract" not in parts.path.lower():
        return None
    # query keys, `;`-separated ones too, fragment keys (`#token=`) and path parameters
    # (`/abstract;jsessionid=`): a secret may ride in any of them
    params = [parts.query, parts.fragment, *parts.path.split(";")[1:]]
    for text in params:
        for key, _ in parse_qsl(text.replace(";", "&"), keep_blank_values=True):
            low = key.lower()
            if any(word in low for word in SECRET_QUERY_WORDS):
                return None
    return url.strip()


def detail_token(url: str | None) -> str:
    """The `v` token of a kcms2 detail link (site-rules.md §1.1), "" when the text is not one: what
    names the paper in a detail URL, so a link a tool showed matches the stored locator whatever
    query keys (`uniplatform`, `language`) either one carries."""
    text = (url or "").strip()
    if not text.lower().startswith(("http://", "https://")):
        return ""
    try:
        parts = urlsplit(text)
    except ValueError:
        return ""
    if "abstract" not in parts.path.lower():
        return ""
    return next((v.strip() for k, v in parse_qsl(parts.query) if k == "v" and v.strip()), "")


def detail_filename(url: str | None) -> str:
    """The file name a KCMS detail link names its paper by (`detail.aspx?…&FileName=LTLW201932025`,
    any key case; saved pages kns-old-grid/*), "" when the text is not such a link: a link without
    a `v` token (`detail_token`) still names a stored paper by it."""
    text = (url or "").strip()
    if not text.lower().startswith(("http://", "https://")) or "detail" not in text.lower():
        return ""
    try:
        query = urlsplit(text).query
    except ValueError:
        return ""
    return next((v.strip() for k, v in parse_qsl(query) if k.lower() == "filename" and v.strip()), "")


# --- the stored paper -------------------------------------------------------------


class Paper(BaseModel):
    """The merged view of one paper as the store keeps it. `locator` (the detail URL with
    its expiring token) is internal and never shown; `public_url` is the shareable form."""

    model_config = ConfigDict(extra="ignore")  # rows written by newer versions still load

    record_ref: str
    title: str
    title_en: str | None = None
    authors: list[Author] = Field(default_factory=list)
    institutions: list[str] = Field(default_factory=list)
    source: str | None = None
    source_url: str | None = None
    doc_type: str | None = None
    date: str | None = None  # publication date: the grid's 发表时间, a detail page's dated row
    online_date: str | None = None  # 在线公开时间: "不代表文献的发表时间", kept apart from `date`
    year: int | None = None
    volume: str | None = None
    issue: str | None = None
    pages: str | None = None
    doi: str | None = None
    abstract: str | None = None
    excerpt: str | None = None
    keywords: list[str] = Field(default_factory=list)
    funds: list[str] = Field(default_factory=list)
    classification: list[str] = Field(default_factory=list)
    conference: str | None = None  # 会议名称 (conference papers; `source` is the proceedings)
    conference_place: str | None = None  # 会议地点
    conference_date: str | None = None  # 会议时间
    supervisor: str | None = None  # 导师 (theses), as the detail page lists them (`张秉伦; 胡化凯`)
    native: NativeId = Field(default_factory=NativeId)
    cited: int | None = None
    downloads: int | None = None
    detail_confirmed: bool = False
    detail_observed_at: datetime | None = None
    # last time CNKI's batch export answered for this paper (abstract and keywords read, DESIGN.md
    # "Reading abstracts by batch export")
    export_observed_at: datetime | None = None
    observed_at: datetime | None = None  # last time any page showed this paper
    locator: str | None = None
    public_url: str | None = None
    export_id: str | None = None  # the list row's id for CNKI's batch export (internal, site-rules.md §9)
    # `year` is the issue's, read from the batch export (store.papers.issue_year_differs): a later
    # list row's year (its online day) never puts the year before back (internal)
    issue_year_read: bool = False

    def author_names(self) -> list[str]:
        return [a.name for a in self.authors]

    def publication_date(self) -> str | None:
        """The date a reader is shown as the publication date: `date`, else the 在线公开时间 of
        an online-first paper (网络首发, listed under CAPJ), whose online publication it is. A paper
        in an issue shows 在线公开时间 too, "不代表文献的发表时间" (saved page
        detail-kcms2/pluginsx_detail_kcms2_2026.html): it never stands in there."""
        if self.date:
            return self.date
        return self.online_date if listed_online_first(self.native) else None

    def keys(self) -> IdentityKeys:
        n = self.native
        return _keys(
            n.dbcode, n.dbname, n.filename, self.doi, self.title, tuple(self.author_names()), self.source,
            self.year, self.locator,
        )  # fmt: skip

    def public_dict(self) -> dict[str, Any]:
        """JSON-ready view without the internal locator, export id and issue-year mark."""
        return self.model_dump(mode="json", exclude={"locator", "export_id", "issue_year_read"})

    @classmethod
    def from_grid_row(
        cls, row: GridRow, observed_at: datetime, *, public_origins: tuple[str, ...] = ()
    ) -> Paper:
        paper = cls(
            record_ref="rec_pending",
            title=_collapse(row.title),
            authors=[Author(name=n) for n in row.authors if n.strip()],
            source=row.source,
            source_url=row.source_url,
            doc_type=row.doc_type,
            date=row.date,
            year=row.year,
            abstract=row.abstract,
            keywords=list(row.keywords),
            native=row.native.model_copy(),
            cited=row.cited,
            downloads=row.downloads,
            observed_at=observed_at,
            locator=row.detail_url,
            public_url=public_url(row.detail_url, public_origins),
            export_id=row.export_id,
        )
        paper.record_ref = record_ref(paper.keys())
        return paper

    @classmethod
    def from_detail(
        cls,
        detail: DetailPage,
        locator: str | None,
        observed_at: datetime,
        *,
        public_origins: tuple[str, ...] = (),
    ) -> Paper:
        paper = cls(
            record_ref="rec_pending",
            title=_collapse(detail.title),
            title_en=detail.title_en,
            authors=[a.model_copy(deep=True) for a in detail.authors],
            institutions=list(detail.institutions),
            source=detail.source,
            source_url=detail.source_url,
            doc_type=detail.doc_type,
            # The 2026 journal page shows no publication date, only 在线公开时间 ("不代表文献
            # 的发表时间"): it must not replace the grid's 发表时间 (2015-05-15), whose month
            # and day the citation styles print. Readers fall back to it where `date` is empty.
            date=detail.date,
            online_date=detail.online_date,
            year=detail.year,
            volume=detail.volume,
            issue=detail.issue,
            pages=detail.pages,
            doi=detail.doi,
            abstract=detail.abstract,
            excerpt=detail.excerpt,
            keywords=list(detail.keywords),
            funds=list(detail.funds),
            classification=list(detail.classification),
            conference=detail.conference,
            conference_place=detail.conference_place,
            conference_date=detail.conference_date,
            supervisor=detail.supervisor,
            native=detail.native.model_copy(),
            cited=detail.cited,
            downloads=detail.downloads,
            detail_confirmed=True,
            detail_observed_at=observed_at,
            observed_at=observed_at,
            locator=locator,
            public_url=public_url(locator, public_origins),
        )
        paper.record_ref = record_ref(paper.keys())
        return paper


# --- merge ------------------------------------------------------------------------

# Descriptive fields: from a list row they only fill gaps once a detail page confirmed the
# paper (a list row never overwrites what a detail page confirmed).
_DESCRIPTIVE = (
    "title",
    "title_en",
    "authors",
    "institutions",
    "source",
    "source_url",
    "doc_type",
    "date",
    "online_date",
    "year",
    "volume",
    "issue",
    "pages",
    "doi",
    "abstract",
    "excerpt",
    "keywords",
    "funds",
    "classification",
    "conference",
    "conference_place",
    "conference_date",
    "supervisor",
)
# Always the freshest non-empty observation: counts change, detail tokens expire.
_FRESH = ("cited", "downloads", "locator", "public_url", "export_id")


def _empty(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, list | tuple | dict):
        return len(value) == 0
    return False


def _later(a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def merge(existing: Paper, incoming: Paper, incoming_from: Literal["list", "detail"]) -> Paper:
    """Merge a new observation into a stored paper. Only non-empty values replace old ones;
    a list row never overrides values a detail page confirmed (title, authors, source, date,
    year and every other descriptive field), nor an issue year the batch export gave
    (`issue_year_read`); counts always take the fresh value. The record ref never changes."""
    protect = incoming_from == "list" and existing.detail_confirmed
    keep_year = incoming_from == "list" and existing.issue_year_read and existing.year is not None
    data = existing.model_dump()
    for name in _DESCRIPTIVE:
        new = getattr(incoming, name)
        if _empty(new):
            continue
        if protect and not _empty(data[name]):
            continue
        if name == "year" and keep_year:
            continue
        data[name] = copy.deepcopy(new)
    for name in _FRESH:
        new = getattr(incoming, name)
        if not _empty(new):
            data[name] = new
    native = existing.native.model_dump()
    for field, value in incoming.native.model_dump().items():
        if _empty(value):
            continue
        if protect and not _empty(native[field]):
            continue
        native[field] = value
    data["native"] = NativeId(**native)
    data["record_ref"] = existing.record_ref
    data["detail_confirmed"] = existing.detail_confirmed or incoming_from == "detail"
    if incoming_from == "detail":
        data["detail_observed_at"] = _later(existing.detail_observed_at, incoming.detail_observed_at)
    data["export_observed_at"] = _later(existing.export_observed_at, incoming.export_observed_at)
    data["observed_at"] = _later(existing.observed_at, incoming.observed_at)
    return Paper.model_validate(data)


MAX_SHOWN_CANDIDATES = 10
# a stored paper's link expired and its exact title now finds several papers (site-rules.md §3.10)
RELOCATE_AMBIGUOUS = "按完整题名重新定位时知网有 {n} 篇同名文献（见 details.candidates），无法确定是哪一篇"


def candidate_view(paper: Paper | GridRow) -> dict[str, Any]:
    """One paper a title matched, as an IDENTITY_AMBIGUOUS error names it: its record_ref (None
    for a CNKI row not stored) and what tells it from the others."""
    if isinstance(paper, Paper):
        ref: str | None = paper.record_ref
        authors = paper.author_names()
    else:
        ref, authors = None, list(paper.authors)
    return {
        "record_ref": ref, "title": paper.title, "authors": authors[:3], "source": paper.source,
        "year": paper.year, "doc_type": paper.doc_type, "filename": paper.native.filename or None,
    }  # fmt: skip


def ambiguous(
    title: str, papers: Sequence[Paper | GridRow], message: str | None = None, **extra: Any
) -> IdentityAmbiguous:
    """IDENTITY_AMBIGUOUS for a title several papers carry: `details.candidates` names them (at
    most 10; `count` is how many) so the caller can pick one and call again with its record_ref."""
    shown = [candidate_view(p) for p in papers[:MAX_SHOWN_CANDIDATES]]
    return IdentityAmbiguous(
        message or f"同名文献有 {len(papers)} 篇：从 details.candidates 选一篇，用它的 record_ref 再调用",
        title=title, count=len(papers), candidates=shown, **extra,
    )  # fmt: skip
