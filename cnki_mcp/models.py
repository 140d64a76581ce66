"""Pydantic models that cross module or wire boundaries: what the parsers read off CNKI pages.

Closed sets are StrEnums. Every model is plain data (no I/O). Times are passed in by callers.
Modules that need models of their own (store rows, operations, tool results) keep them
beside their code and import these where the data is the same."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DocType(StrEnum):
    """Document types as CNKI labels them (the `td.data` column / database code)."""

    JOURNAL = "期刊"
    FOREIGN_JOURNAL = "外文期刊"
    SPECIAL_JOURNAL = "特色期刊"
    DOCTORAL = "博士"
    MASTER = "硕士"
    CONFERENCE = "会议"
    NEWSPAPER = "报纸"
    YEARBOOK = "年鉴"
    BOOK = "图书"
    PATENT = "专利"
    STANDARD = "标准"
    ACHIEVEMENT = "成果"
    OTHER = "其他"


class NativeId(_Model):
    """CNKI's own identifiers of a record (from `data-dbname`/`data-filename` or URL params)."""

    dbcode: str | None = None
    dbname: str | None = None
    filename: str | None = None

    @property
    def key(self) -> str | None:
        """`DBCODE:FILENAME` upper-cased (dbname carries a year/LAST suffix, so dbcode first)."""
        if not self.filename:
            return None
        db = self.dbcode or (self.dbname[:4] if self.dbname else None)
        if not db:
            return None
        return f"{db.upper()}:{self.filename.upper()}"


class GridRow(_Model):
    """One row of a result grid (`table.result-table-list tbody tr`)."""

    ordinal: int | None = None  # the number CNKI prints in td.seq (page 2 starts at 21)
    title: str
    detail_url: str | None = None  # absolute, resolved against the page URL; internal only
    native: NativeId = Field(default_factory=NativeId)
    authors: list[str] = Field(default_factory=list)
    source: str | None = None
    source_url: str | None = None
    date: str | None = None
    year: int | None = None
    doc_type: str | None = None  # raw td.data label, e.g. 期刊 / 硕士 / 外文期刊
    cited: int | None = None
    downloads: int | None = None
    online_first: bool = False
    open_access: bool = False
    abstract: str | None = None
    keywords: list[str] = Field(default_factory=list)
    export_id: str | None = None  # input[name=CookieName]: the id CNKI's export takes (internal)


class ExportRecord(_Model):
    """One exported record, fields as CNKI wrote them."""

    ref_type: str | None = None  # %0: Journal Article, Thesis, Conference Proceedings, ...
    title: str
    authors: list[str] = Field(default_factory=list)
    institutions: list[str] = Field(default_factory=list)
    source: str | None = None  # %J, else %B (proceedings), else %I for theses
    year: int | None = None
    date: str | None = None
    volume: str | None = None
    issue: str | None = None
    pages: str | None = None
    keywords: list[str] = Field(default_factory=list)
    abstract: str | None = None
    issn: str | None = None
    cn: str | None = None
    doi: str | None = None
    url: str | None = None
    publisher: str | None = None  # %I
    thesis_level: str | None = None  # %9: 博士 / 硕士
    place: str | None = None  # %C


class GridPage(_Model):
    """A parsed grid response: rows plus paging state."""

    rows: list[GridRow] = Field(default_factory=list)
    total: int | None = None  # 共找到 N 条结果
    page: int | None = None  # current page from .countPageMark (or 1 when there is one page)
    page_count: int | None = None
    turnpage: str | None = None  # #hidTurnPage value: cursor for the next page
    zero_results: bool = False  # the page says nothing matched (never inferred from no rows)

    @property
    def exhausted(self) -> bool:
        """Nothing matched, or the paging says this page is the last (`GridHead.exhausted`)."""
        return self.zero_results or GridHead.of(self).exhausted


class GridHead(_Model):
    """What a grid page says before its rows are read (parse/grid.py `parse_grid_head`): whether it
    has rows and where its paging stands, enough to ask the next page while the rows are parsed."""

    has_rows: bool  # GridPage.rows would not be empty
    total: int | None = None
    page: int | None = None
    page_count: int | None = None
    turnpage: str | None = None
    last_ordinal: int | None = None  # the ordinal of the page's last row

    @property
    def exhausted(self) -> bool:
        """This is the last page: its paging says so, or its last row's ordinal reaches the total
        (`GridPage.exhausted` of a page with rows)."""
        if self.page is not None and self.page_count is not None and self.page >= self.page_count:
            return True
        if self.total is not None and self.has_rows and self.last_ordinal is not None:
            return self.last_ordinal >= self.total
        return False

    @classmethod
    def of(cls, page: GridPage) -> GridHead:
        """The head of a page already parsed (backends that build pages without HTML)."""
        return cls(
            has_rows=bool(page.rows),
            total=page.total,
            page=page.page,
            page_count=page.page_count,
            turnpage=page.turnpage,
            last_ordinal=page.rows[-1].ordinal if page.rows else None,
        )


class Author(_Model):
    name: str
    institutions: list[str] = Field(default_factory=list)  # resolved from sup marks when present


class ReferenceEntry(_Model):
    """One entry of a reference list or citing list on a detail page."""

    text: str  # the citation as CNKI prints it
    title: str | None = None
    authors: list[str] = Field(default_factory=list)
    source: str | None = None
    year: int | None = None
    doc_type_code: str | None = None  # [J] [D] [C] [M] [N] ...
    detail_url: str | None = None
    native: NativeId = Field(default_factory=NativeId)


class DetailPage(_Model):
    """A parsed kcms2 detail (abstract) page."""

    title: str
    title_en: str | None = None
    authors: list[Author] = Field(default_factory=list)
    institutions: list[str] = Field(default_factory=list)
    source: str | None = None
    source_url: str | None = None
    doc_type: str | None = None
    date: str | None = None
    online_date: str | None = None  # 在线公开时间
    year: int | None = None
    volume: str | None = None
    issue: str | None = None
    pages: str | None = None
    doi: str | None = None
    abstract: str | None = None
    excerpt: str | None = None  # newspapers: 正文快照 is not an abstract
    keywords: list[str] = Field(default_factory=list)
    funds: list[str] = Field(default_factory=list)
    classification: list[str] = Field(default_factory=list)  # 分类号, split on ;
    album: str | None = None  # 专辑
    topic: str | None = None  # 专题
    supervisor: str | None = None  # 导师 (theses)
    degree_place: str | None = None  # degree-granting institution (theses)
    conference: str | None = None  # 会议名称 (the proceedings title is `source`)
    conference_place: str | None = None  # 会议地点, as printed (`中国内蒙古赤峰`)
    conference_date: str | None = None  # 会议时间, as printed (`2016-07-13`, `1990-10`)
    native: NativeId = Field(default_factory=NativeId)
    downloads: int | None = None
    cited: int | None = None
    page_count: int | None = None
    source_tiers: list[str] = Field(default_factory=list)  # `a.type` tags on the source line
    reader_url: str | None = None  # internal only, never shown
    pdf_url: str | None = None
    caj_url: str | None = None
    references: list[ReferenceEntry] = Field(default_factory=list)
    citing: list[ReferenceEntry] = Field(default_factory=list)


class JournalState(StrEnum):
    PRESENT = "present"
    UNKNOWN = "unknown"


class IdentityBasis(StrEnum):
    CURRENT_TITLE = "current_title"
    TRANSLATED_TITLE = "translated_title"
    FORMER_TITLE = "former_title"


class JournalPage(_Model):
    """A parsed journal (navi) page."""

    name: str
    translated_titles: list[str] = Field(default_factory=list)
    former_titles: list[str] = Field(default_factory=list)
    tiers: list[str] = Field(default_factory=list)
    composite_if: float | None = None
    aggregate_if: float | None = None
    metric_year: int | None = None
    issn: str | None = None
    cn: str | None = None
    sponsor: str | None = None  # 主办单位
    state: JournalState = JournalState.UNKNOWN
    identity_basis: IdentityBasis | None = None  # set when matched against a requested source


class ReaderScope(StrEnum):
    UNKNOWN = "unknown"  # nothing suggests the body is incomplete (not proof it is complete)
    PARTIAL = "partial"
    TRIAL = "trial"


class Section(_Model):
    level: int
    title: str
    offset: int  # character offset of the heading in `ReaderPage.text`
    length: int  # characters up to the next heading of the same or a higher level


class ReaderCoverage(_Model):
    container: str
    dom_characters: int
    extracted_characters: int
    catalog_headings: list[str] = Field(default_factory=list)
    missing_catalog_headings: list[str] = Field(default_factory=list)
    non_text_elements: int = 0
    scope: ReaderScope = ReaderScope.UNKNOWN


class ReaderPage(_Model):
    """A parsed HTML reader page."""

    title: str | None = None
    text: str
    sections: list[Section] = Field(default_factory=list)
    trial: bool = False
    coverage: ReaderCoverage


class GateKind(StrEnum):
    """What a page is, before any content parser looks at it."""

    CLEAR = "clear"  # an ordinary page; hand it to the content parser
    CHALLENGE = "challenge"  # verification / captcha / slider
    LOGIN = "login"  # a login page or login widget blocking the content
    DENIED = "denied"  # no permission (机构未订购 ...)
    TEMPORARILY_EMPTY = "temporarily_empty"  # 暂无数据 / 稍后重试 / 服务繁忙
    RATE_LIMITED = "rate_limited"  # 访问过于频繁
    NOT_FOUND = "not_found"
    UNSUPPORTED = "unsupported"  # a layout no parser understands
    SERVER_ERROR = "server_error"  # HTTP >= 500: the site is unavailable (SITE_UNAVAILABLE)
    # the CDN refused this network path (HTTP 418, or a blank answer): SITE_UNAVAILABLE naming the proxy
    CDN_REFUSED = "cdn_refused"


class GateVerdict(_Model):
    kind: GateKind
    evidence: str = ""  # the marker that decided it (selector or text), for diagnostics


class IdentityKind(StrEnum):
    AUTHENTICATED = "authenticated"
    NOT_OBSERVED = "not_observed"


class HeaderIdentity(_Model):
    """Who the site says we are (the kns header), read without side effects."""

    ready: bool  # the header rendered: 登录/退出/注册 visible, or an institution shown
    personal: IdentityKind = IdentityKind.NOT_OBSERVED
    personal_name: str | None = None
    institutions: list[str] = Field(default_factory=list)
    # when the page showing it was loaded (set by the site layer; the parser never knows)
    observed_at: datetime | None = None
