"""The production parsers read the simulator's pages exactly as the corpus says they should.

Every corpus record's detail page (with meta tags, and the script-rendered variant's DOM),
every journal page, every full-text reader page (whole, trial, lazy) and a few grid pages are
rendered by `cnki_mcp.sim` and parsed by `cnki_mcp.parse`; the parsed values must equal the
corpus values field by field. The first tests pin parser bugs the round trip exposed, on real
captures where one exists."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from cnki_mcp.errors import CnkiError
from cnki_mcp.models import DetailPage, IdentityBasis, JournalState, ReaderScope
from cnki_mcp.parse._html import collapse
from cnki_mcp.parse.detail import parse_detail
from cnki_mcp.parse.grid import parse_grid
from cnki_mcp.parse.journal import parse_journal, tier_tags
from cnki_mcp.parse.keys import title_key
from cnki_mcp.parse.reader import parse_reader
from cnki_mcp.parse.references import parse_reference_list
from cnki_mcp.sim.corpus import Corpus, SimRecord
from cnki_mcp.sim.grid import GridPage, render_grid
from cnki_mcp.sim.links import Visitor
from cnki_mcp.sim.pages.detail import offered_entries, online_time, render_detail, render_references_fragment
from cnki_mcp.sim.pages.journal import JournalLayout, journal_layout, render_journal
from cnki_mcp.sim.pages.reader import render_reader
from tests.conftest import read_real
from tests.sim_pages_fixtures import FakeLinks

KCMS2 = "detail-kcms2/pluginsx_detail_kcms2_2026.html"
URL = "https://kns.cnki.net/kcms2/article/abstract?v=abc&uniplatform=NZKPT"
CORPUS = Corpus.load()
LINKS = FakeLinks()
VISITOR = Visitor()
RECORD_IDS = [r.id for r in CORPUS.records]
FULLTEXT_IDS = [r.id for r in CORPUS.records if r.fulltext]
JOURNAL_NAMES = [j.name for j in CORPUS.journals]
THESIS = ("博士", "硕士")
JOURNAL_TYPES = ("期刊", "外文期刊")


def _kcms2(inner: str, top_tip: str = "", head: str = "") -> str:
    return (
        f"<html><head>{head}</head><body><div class='doc-top'><div class='top-tip'><span>{top_tip}</span></div></div>"
        f"<div class='brief'><div class='wx-tit'><h1>题名</h1>{inner}</div></div></body></html>"
    )


# --- bug 1: meta author names must not lose the DOM affiliation marks ----------------------


def test_meta_author_names_keep_the_dom_affiliation_marks_on_the_real_page() -> None:
    html = read_real(KCMS2)
    meta = (
        "<meta name='citation_author' content='时郁婷'><meta name='citation_author' content='周微'>"
        "<meta name='citation_author_institution' content='哈尔滨石油学院'>"
        "<meta name='citation_author_institution' content='马来西亚博特拉大学'>"
    )
    d = parse_detail(html.replace("</head>", meta + "</head>", 1), URL)
    assert [a.name for a in d.authors] == ["时郁婷", "周微"]
    assert d.authors[0].institutions == ["哈尔滨石油学院", "马来西亚博特拉大学"]
    assert d.authors[1].institutions == ["哈尔滨石油学院"]


def test_meta_names_with_role_suffix_still_find_their_dom_marks() -> None:
    inner = (
        "<h3 class='author' id='authorpart'><span><a>林倩(文)<sup>2</sup></a></span>"
        "<span><a>胡馨元<sup>1</sup></a></span></h3>"
        "<h3 class='author'><span><a>1.北京大学</a></span><span><a>2.清华大学</a></span></h3>"
    )
    head = "<meta name='citation_author' content='林倩(文)'><meta name='citation_author' content='胡馨元'>"
    d = parse_detail(_kcms2(inner, head=head))
    assert [(a.name, a.institutions) for a in d.authors] == [("林倩", ["清华大学"]), ("胡馨元", ["北京大学"])]


def test_a_single_unnumbered_institution_line_belongs_to_every_author() -> None:
    inner = (
        "<h3 class='author' id='authorpart'><span><a>张三</a></span><span><a>李四</a></span></h3>"
        "<h3 class='author'><span><a>北京大学法学院</a></span></h3>"
    )
    for head in (
        "",
        "<meta name='citation_author' content='张三'><meta name='citation_author' content='李四'>",
    ):
        d = parse_detail(_kcms2(inner, head=head))
        assert [(a.name, a.institutions) for a in d.authors] == [
            ("张三", ["北京大学法学院"]),
            ("李四", ["北京大学法学院"]),
        ]


def test_the_real_one_author_one_institution_thesis_page_links_them() -> None:
    d = parse_detail(read_real("detail-kcms-old/roliygu_detail_cdfd_2017.html"))
    assert [(a.name, a.institutions) for a in d.authors] == [("姚昆仑", ["中国科学技术大学"])]


def test_several_institutions_without_marks_are_not_guessed_per_author() -> None:
    d = parse_detail(read_real("detail-kcms-old/roliygu_detail_cjfd_2017.html"))
    assert len(d.institutions) > 1
    assert all(a.institutions == [] for a in d.authors)


# --- bug 2: a degree year or a newspaper date is never a page range -------------------------


def test_degree_year_in_the_source_line_is_not_pages() -> None:
    tip = "<a href='https://navi.cnki.net/knavi/x'>武汉大学 .</a><span class='degree-year'>2020</span>"
    d = parse_detail(_kcms2("", top_tip=tip), URL)
    assert d.pages is None
    assert d.year == 2020


def test_newspaper_date_in_the_source_line_is_not_pages() -> None:
    tip = "<a href='https://navi.cnki.net/knavi/x'>人民法院报 .</a><span>2022-03-01</span>"
    d = parse_detail(_kcms2("", top_tip=tip), URL)
    assert d.pages is None
    assert (d.date, d.year) == ("2022-03-01", 2022)


def test_page_range_after_the_issue_is_still_pages() -> None:
    tip = "<a href='https://navi.cnki.net/knavi/x'>视听 .</a><a href='https://navi.cnki.net/knavi/y'>2026 (02)</a>"
    d = parse_detail(_kcms2("", top_tip=tip + "<span>: 103-107</span>"), URL)
    assert (d.year, d.issue, d.pages) == (2026, "02", "103-107")
    assert parse_detail(read_real(KCMS2), URL).pages == "103-107"


def test_a_one_page_range_from_meta_is_one_page() -> None:
    head = "<meta name='citation_firstpage' content='2'><meta name='citation_lastpage' content='2'>"
    assert parse_detail(_kcms2("", head=head)).pages == "2"


# --- bug 3: the reader's paper title is not a section ----------------------------------------


def test_reader_title_is_not_a_level_one_section() -> None:
    para = "正文段落，用于检验阅读页解析的章节结构是否正确。" * 6
    html = (
        "<html><body><div id='XMLContent'><div id='paperRead'>"
        "<div class='js-prefix'><h1 class='Chapter'>数字文物传播研究</h1></div>"
        f"<h2>一、引言</h2><p>{para}</p><h3>（一）背景</h3><p>{para}</p><h2>二、结论</h2><p>{para}</p>"
        "<h3 id='bibliography'>参考文献</h3><p>[1]王利明.违约金调整规则研究[J].法学研究,2019.</p>"
        "</div></div></body></html>"
    )
    page = parse_reader(html, expected_title="数字文物传播研究")
    assert page.title == "数字文物传播研究"
    assert [(s.level, s.title) for s in page.sections] == [
        (1, "一、引言"),
        (2, "（一）背景"),
        (1, "二、结论"),
        (1, "参考文献"),
    ]


# --- references: a title containing a dot ---------------------------------------------------


def test_list_entry_title_with_a_dot_is_the_link_text() -> None:
    html = (
        "<div class='essayBox'><ul class='ebBox'><li><em>[1]</em>"
        "<a href='/kcms2/article/abstract?v=x'>锂离子电池LiNi0.8Co0.1Mn0.1O2正极材料的改性研究</a>"
        "[J].张三,李四.电源技术.2021(04)</li></ul></div>"
    )
    (entry,) = parse_reference_list(html, URL)
    assert entry.title == "锂离子电池LiNi0.8Co0.1Mn0.1O2正极材料的改性研究"
    assert (entry.authors, entry.source, entry.year, entry.doc_type_code) == (
        ["张三", "李四"],
        "电源技术",
        2021,
        "[J]",
    )


# --- journal tiers: real navi labels are read whole, never as a shorter (stronger) tier -----


def test_real_navi_tier_labels_are_read_whole_or_not_at_all() -> None:
    labels = {line.split("\t")[0] for line in read_real("dataset/navi_tier_labels_2023.txt").splitlines()}
    assert {"CSCD扩展版", "CSSCI扩展版", "CSSCI来源集刊"} <= labels
    for label in labels:
        assert tier_tags(label) in ([], [label]), label
        assert tier_tags(f"收录：{label}") in ([], [label]), label
    assert tier_tags("CSCD扩展版") == ["CSCD扩展版"]  # the extended library, not CSCD core
    assert tier_tags("收录：北大核心;CSCD扩展版") == ["北大核心", "CSCD扩展版"]


# --- round trip: detail pages ----------------------------------------------------------------

_ROLE = re.compile(r"\s*[(（](?:文|著|编|译|主编|编著|编译|撰|撰文|执笔|整理|口述|摄|图|供稿)[)）]$")
# CNKI groups a reference / citing list by database, in this order (kcms2 知网节).
_GROUP_ORDER = ("期刊", "博士", "硕士", "会议", "报纸", "年鉴", "图书", "外文期刊")


def _detail_params() -> list[object]:
    out: list[object] = []
    for r in CORPUS.records:
        out.append(pytest.param(r.id, id=r.id))
    return out


def _name(name: str) -> str:
    return _ROLE.sub("", name)


def _grouped(records: list[SimRecord]) -> list[str]:
    def group(r: SimRecord) -> int:
        return _GROUP_ORDER.index(r.type) if r.type in _GROUP_ORDER else 0

    return [r.title for r in sorted(records, key=group)]


def _expected_source(r: SimRecord) -> str | None:
    return (r.publisher or r.source) if r.type in ("图书", "年鉴") else r.source


def _script_dom(raw: str) -> str:
    """The document the script-rendered page builds in the browser: its JSON payload inserted."""
    m = re.search(r"var d=(\{.*?\});setTimeout", raw, re.S)
    assert m is not None
    data = json.loads(m.group(1))
    return f"<html><head><title>{data['title']}</title></head><body><div id='root'>{data['body']}</div></body></html>"


def _assert_people_and_text(d: DetailPage, r: SimRecord) -> None:
    assert d.title == r.title
    assert [a.institutions for a in d.authors] == [list(a.institutions) for a in r.authors]
    assert d.source == _expected_source(r)
    assert d.year == r.year
    assert d.doi == r.doi
    if r.type == "报纸":
        assert (d.abstract, d.excerpt) == (None, collapse(r.abstract) or None)
    else:
        assert (d.abstract, d.excerpt) == (collapse(r.abstract) or None, None)
    assert d.keywords == list(r.keywords)
    assert d.funds == list(r.funds)
    assert d.classification == [c for c in re.split(r"[;；]", r.classification or "") if c]
    assert (d.native.dbcode, d.native.dbname, d.native.filename) == (r.dbcode, r.dbname, r.native_filename)
    offered = offered_entries(r)
    assert (d.reader_url is not None, d.pdf_url is not None, d.caj_url is not None) == (
        "html" in offered,
        "pdf" in offered,
        "caj" in offered,
    )
    assert d.online_date == online_time(r)  # a journal paper in an issue shows one too
    if r.type in THESIS:
        assert (d.supervisor, d.degree_place) == (r.supervisor, r.source)
    if r.type == "会议":
        assert d.conference == r.conference
    # The lists are not in the page: a script loads them from the citation API after a scroll,
    # as on the real 2026 page (docs/citation-api.md); tests/unit/test_sim_citation_api.py reads them.
    assert d.references == [] and d.citing == []
    # Names last: the only field with a known simulator fault (see `_detail_params`).
    assert [a.name for a in d.authors] == [_name(a.name) for a in r.authors]


@pytest.mark.parametrize("record_id", _detail_params())
def test_detail_page_with_meta_reads_back_the_corpus_record(record_id: str) -> None:
    r = CORPUS.by_id[record_id]
    d = parse_detail(render_detail(r, CORPUS, LINKS, VISITOR), LINKS.detail(r.id))
    assert (d.volume, d.issue) == (r.volume, r.issue)
    assert d.pages == r.pages
    _assert_people_and_text(d, r)


@pytest.mark.parametrize("record_id", _detail_params())
def test_script_rendered_detail_dom_reads_back_the_corpus_record(record_id: str) -> None:
    r = CORPUS.by_id[record_id]
    raw = render_detail(r, CORPUS, LINKS, VISITOR, script_rendered=True)
    with pytest.raises(CnkiError) as err:
        parse_detail(raw, LINKS.detail(r.id))
    assert err.value.code == "PARSER_UNSUPPORTED"  # what triggers the rendered-DOM fallback

    d = parse_detail(_script_dom(raw), LINKS.detail(r.id))
    assert (d.volume, d.issue) == (r.volume, r.issue)
    # Without meta tags the pages come from the journal source line, the 页码 row (proceedings,
    # yearbooks, books) or a newspaper's 版号; nothing else (a degree year, a newspaper or
    # conference date) may be read as pages.
    assert d.pages == (r.pages if r.type in (*JOURNAL_TYPES, "会议", "图书", "年鉴", "报纸") else None)
    if r.type in ("报纸", "会议"):
        assert d.date == r.date
    _assert_people_and_text(d, r)


@pytest.mark.parametrize("record_id", [r.id for r in CORPUS.records if r.references])
def test_reference_fragment_reads_back_the_corpus_reference_list(record_id: str) -> None:
    r = CORPUS.by_id[record_id]
    refs = parse_reference_list(
        render_references_fragment(r, CORPUS, LINKS, "references"), LINKS.detail(r.id)
    )
    known = sorted(CORPUS.references_of(r), key=lambda x: _GROUP_ORDER.index(x.type))
    assert len(refs) == len(r.references)
    assert [e.title for e in refs[: len(known)]] == [k.title for k in known]
    for entry, rec in zip(refs, known, strict=False):
        assert entry.detail_url == LINKS.detail(rec.id)
        if not any("," in a.name for a in rec.authors):  # `Brown, Oliver,Liu Yang` is ambiguous
            assert entry.authors == [_name(a.name) for a in rec.authors]


@pytest.mark.parametrize("record_id", [r.id for r in CORPUS.records if CORPUS.citing(r.id)])
def test_citing_fragment_reads_back_the_corpus_citing_list(record_id: str) -> None:
    r = CORPUS.by_id[record_id]
    citing = parse_reference_list(render_references_fragment(r, CORPUS, LINKS, "citing"), LINKS.detail(r.id))
    assert [e.title for e in citing] == _grouped(CORPUS.citing(r.id))


# --- round trip: journal pages ---------------------------------------------------------------


@pytest.mark.parametrize("layout", ["navi-2023", "legacy"])
@pytest.mark.parametrize("name", JOURNAL_NAMES)
def test_journal_page_reads_back_the_corpus_journal(name: str, layout: JournalLayout) -> None:
    j = CORPUS.journal_by_name[name]
    html = render_journal(j, CORPUS, LINKS, VISITOR, layout=layout)
    assert ('class="titbox titbox1"' in html) is (layout == "navi-2023")
    p = parse_journal(html, LINKS.journal(name), expected_source=name)
    assert p.name == name
    assert p.identity_basis == IdentityBasis.CURRENT_TITLE
    assert p.tiers == list(j.tiers)  # in the order the journal lists them; decoys never count
    assert (p.composite_if, p.aggregate_if) == (j.composite_if, j.aggregate_if)
    has_metric = j.composite_if is not None or j.aggregate_if is not None
    assert p.metric_year == (j.metric_year if has_metric else None)
    assert p.translated_titles == ([j.translated_title] if j.translated_title else [])
    assert p.former_titles == list(j.former_titles)
    assert (p.issn, p.cn, p.sponsor) == (j.issn, j.cn, j.sponsor)
    assert p.state == (JournalState.PRESENT if j.tiers or has_metric else JournalState.UNKNOWN)

    current = title_key(name)
    for former in j.former_titles:
        # A former title whose key equals the current one (`中国人口.资源与环境`) IS the current title.
        want = IdentityBasis.CURRENT_TITLE if title_key(former) == current else IdentityBasis.FORMER_TITLE
        assert parse_journal(html, expected_source=former).identity_basis == want
    if j.translated_title and title_key(j.translated_title) != current:
        assert (
            parse_journal(html, expected_source=j.translated_title).identity_basis
            == IdentityBasis.TRANSLATED_TITLE
        )
    known = {current, *(title_key(t) for t in (*j.former_titles, j.translated_title or ""))}
    wrongs = [w for w in (name + "研究", "大学学报", name[:-2]) if w and title_key(w) not in known]
    assert wrongs
    for wrong in wrongs:  # a substring or a longer name is never the journal
        with pytest.raises(CnkiError) as err:
            parse_journal(html, expected_source=wrong)
        assert err.value.code == "SOURCE_IDENTITY_UNCONFIRMED"


# --- round trip: reader pages ----------------------------------------------------------------


def _reader_sections(r: SimRecord) -> list[tuple[int, str, str]]:
    """The corpus full text plus the 参考文献 section the reader appends for a reference list."""
    out = [(s.level, s.heading, s.text) for s in r.fulltext]
    if r.references and not any(s.heading.strip() == "参考文献" for s in r.fulltext):
        out.append((1, "参考文献", ""))
    return out


def _reader(r: SimRecord, *, trial: bool = False, lazy: bool = False) -> str:
    return render_reader(r, LINKS, VISITOR, trial=trial, lazy=lazy, slider=False)


@pytest.mark.parametrize("record_id", FULLTEXT_IDS)
def test_reader_page_reads_back_the_corpus_sections(record_id: str) -> None:
    r = CORPUS.by_id[record_id]
    page = parse_reader(_reader(r), LINKS.reader(r.id), expected_title=r.title)
    expected = _reader_sections(r)
    assert page.title == r.title
    assert [(s.level, s.title) for s in page.sections] == [(lv, h) for lv, h, _ in expected]
    for section, (_, _, text) in zip(page.sections, expected, strict=True):
        body = page.text[section.offset : section.offset + section.length]
        for line in text.split("\n"):
            if line.strip():
                assert collapse(line) in body
    assert page.coverage.catalog_headings == [h for _, h, _ in expected]
    assert page.coverage.missing_catalog_headings == []
    assert page.coverage.scope == ReaderScope.UNKNOWN
    assert page.trial is False


@pytest.mark.parametrize("record_id", FULLTEXT_IDS)
def test_trial_reader_page_is_trial_and_never_the_whole_body(record_id: str) -> None:
    r = CORPUS.by_id[record_id]
    page = parse_reader(_reader(r, trial=True), LINKS.reader(r.id), expected_title=r.title)
    assert page.trial is True and page.coverage.scope == ReaderScope.TRIAL
    expected = _reader_sections(r)
    assert [s.title for s in page.sections] == [expected[0][1]]
    whole = parse_reader(_reader(r), LINKS.reader(r.id), expected_title=r.title)
    assert page.coverage.extracted_characters < whole.coverage.extracted_characters


@pytest.mark.parametrize("record_id", FULLTEXT_IDS)
def test_lazy_reader_raw_html_is_partial_with_the_missing_headings(record_id: str) -> None:
    r = CORPUS.by_id[record_id]
    page = parse_reader(_reader(r, lazy=True), LINKS.reader(r.id), expected_title=r.title)
    headings = [h for _, h, _ in _reader_sections(r)]
    shown = [s.title for s in page.sections]
    assert shown and headings[: len(shown)] == shown
    assert page.coverage.missing_catalog_headings == headings[len(shown) :]
    assert page.coverage.missing_catalog_headings  # the corpus has more than two sections
    assert page.coverage.scope == ReaderScope.PARTIAL


def test_reader_of_another_paper_is_identity_conflict() -> None:
    r = CORPUS.by_id[FULLTEXT_IDS[0]]
    other = CORPUS.by_id[FULLTEXT_IDS[1]]
    with pytest.raises(CnkiError) as err:
        parse_reader(_reader(r), LINKS.reader(r.id), expected_title=other.title)
    assert err.value.code == "IDENTITY_CONFLICT"


# --- round trip: grid pages ------------------------------------------------------------------

GRID_URL = "http://sim.test/kns8s/brief/grid"


def _shown_count(n: int) -> int | None:
    """What a count reads back as after CNKI's display: 10400 -> `1万` -> 10000."""
    if not n:
        return None
    return round(n / 10000, 1) * 10000 if n >= 10000 else n


@pytest.mark.parametrize("page", [1, 2, 7, 39])
def test_grid_pages_read_back_the_corpus_rows(page: int) -> None:
    size = 20
    records = CORPUS.records
    rows = records[(page - 1) * size : page * size]
    grid = GridPage(rows=rows, total=len(records), page=page, page_size=size, cursor=f"turn-{page}")
    p = parse_grid(render_grid(grid, LINKS, terms=["违约金", "WAAM"]), GRID_URL)
    last = -(-len(records) // size)
    assert (p.total, p.page, p.page_count, p.turnpage) == (len(records), page, last, f"turn-{page}")
    assert p.exhausted is (page == last)
    assert len(p.rows) == len(rows)
    for i, (row, r) in enumerate(zip(p.rows, rows, strict=True)):
        assert row.ordinal == (page - 1) * size + i + 1
        assert row.title == r.title  # `<font>` highlights flattened
        assert row.authors == [_name(a.name) for a in r.authors]
        assert row.source == r.source
        assert row.year == r.year
        assert row.doc_type == r.type
        assert (row.cited, row.downloads) == (_shown_count(r.cited), _shown_count(r.downloads))
        capj = r.online_first and r.dbcode == "CJFD"
        assert (row.native.dbname, row.native.filename) == ("CAPJ" if capj else r.dbcode, r.native_filename)
        assert row.online_first is r.online_first
        assert row.detail_url == LINKS.detail(r.id)


def test_grid_counts_of_ten_thousand_and_more_are_read_from_wan() -> None:
    big = [r for r in CORPUS.records if r.cited >= 10000 or r.downloads >= 10000]
    assert big
    p = parse_grid(
        render_grid(GridPage(rows=big, total=len(big), page=1, page_size=50, cursor="c"), LINKS), GRID_URL
    )
    assert [(row.cited, row.downloads) for row in p.rows] == [
        (_shown_count(r.cited), _shown_count(r.downloads)) for r in big
    ]
    assert (p.page, p.page_count) == (1, 1) and p.exhausted


def test_grid_zero_results_page_is_zero_results() -> None:
    p = parse_grid(render_grid(GridPage(rows=[], total=0, page=1, page_size=20, cursor="z"), LINKS), GRID_URL)
    assert p.zero_results and p.rows == [] and p.total == 0


def test_grid_rows_with_more_than_five_authors_collapse_the_rest_and_read_back_whole() -> None:
    many = [r for r in CORPUS.records if len(r.authors) > 5]
    assert {r.type for r in many} >= {"期刊", "外文期刊"}
    html = render_grid(GridPage(rows=many, total=len(many), page=1, page_size=50, cursor="m"), LINKS)
    # five names shown, `;` between them, the rest behind the 显示全部作者 toggle in a hidden span
    assert html.count('<a title="显示全部作者" class="showAllAuthors"></a><span style="display:none">;') == len(many)
    assert "</a>;<a class=\"KnowledgeNetLink\"" in html
    p = parse_grid(html, GRID_URL)
    assert [row.authors for row in p.rows] == [[_name(a.name) for a in r.authors] for r in many]


def test_grid_zero_results_page_is_the_no_content_paragraph() -> None:
    html = render_grid(GridPage(rows=[], total=0, page=1, page_size=20, cursor="z"), LINKS)
    assert '<p class="no-content" value="">' in html and 'div class="no-content"' not in html


# --- detail: 2023 layout and funds with grant lists --------------------------------------------


@pytest.mark.parametrize("layout", ["kcms2-2026", "kcms2-2023"])
def test_detail_layouts_read_back_institutions_and_bracketed_grant_lists(layout: str) -> None:
    base = next(r for r in CORPUS.records if r.type == "期刊" and len({a.institution for a in r.authors}) > 1)
    funds = ("国家自然科学基金面上项目(72174213；71974206；71774176)", "教育部人文社会科学基金（23YJA630001;23YJC630002）")
    r = dataclasses.replace(base, funds=funds, extra={**base.extra, "layout": layout})
    html = render_detail(r, CORPUS, LINKS, VISITOR)
    assert ('<h3 class="author"><span>' in html) is (layout == "kcms2-2026")
    d = parse_detail(html, LINKS.detail(r.id))
    assert d.funds == list(funds)
    assert [a.institutions for a in d.authors] == [list(a.institutions) for a in r.authors]
    # r0001's first author is at two institutions, marked `<sup>1,2</sup>` as on the saved kcms2 page
    assert len(d.authors[0].institutions) == 2


def test_the_simulator_serves_both_journal_page_generations() -> None:
    layouts = {journal_layout(CORPUS.journal_by_name[name]) for name in JOURNAL_NAMES}
    assert layouts == {"navi-2023", "legacy"}


def test_every_real_navi_tier_label_is_recognised_whole() -> None:
    labels = [line.split("\t")[0] for line in read_real("dataset/navi_tier_labels_2023.txt").splitlines()]
    assert {"AMI集刊入库", "AMI集刊核心", "AMI职院刊扩展", "AMI外文刊权威", "Pж(AJ)", "社科基金资助期刊"} <= set(labels)
    for label in labels:
        assert tier_tags(label) == [label], label


def test_detail_pages_carry_no_citation_meta_like_the_real_2026_page() -> None:
    """The saved real kcms2 page has no `citation_*` meta; the simulator must not be kinder."""
    for r in CORPUS.records[:200]:
        assert "citation_" not in render_detail(r, CORPUS, LINKS, VISITOR)


def test_reader_page_formulas_scripts_and_note_markers_read_as_written() -> None:
    """The simulator's reader writes a MathML formula, sub/superscripts and `<sup>[k]</sup>` note
    markers as the site does (docs/simulator.md "Reader"); the text keeps their level."""
    r = next(CORPUS.by_id[i] for i in FULLTEXT_IDS if CORPUS.by_id[i].references and len(CORPUS.by_id[i].fulltext) > 2)
    page = parse_reader(_reader(r), LINKS.reader(r.id), expected_title=r.title)
    assert "y=x²+1/(n+1)" in page.text
    assert "式中，xᵢ为第i个样本的指标值，n为样本量，单位为10⁻³。" in page.text
    first = collapse(r.fulltext[0].text.split("\n")[0])
    assert f"{first}[1]" in page.text


def test_a_title_with_formula_markup_reads_back_as_its_text() -> None:
    base = next(r for r in CORPUS.records if r.type == "期刊")
    r = dataclasses.replace(
        base, title="外施Ca2+、ABA及H3PO4对盐碱胁迫的缓解效应",
        extra={**base.extra, "title_html": "外施Ca<sup>2+</sup>、ABA及H<sub>3</sub>PO<sub>4</sub>对盐碱胁迫的缓解效应"},
    )
    html = render_detail(r, CORPUS, LINKS, VISITOR)
    assert "H<sub>3</sub>PO<sub>4</sub>" in html
    assert parse_detail(html, LINKS.detail(r.id)).title == r.title


def _grid_entries(html: str) -> set[tuple[str, bool, bool, bool]]:
    """(type, a download entry, an HTML阅读 entry, a 原文链接) of each result row of a grid page."""
    out: set[tuple[str, bool, bool, bool]] = set()
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", html, flags=re.S):
        kind = re.search(r'<td class="data"[^>]*>(.*?)</td>', row, flags=re.S)
        if kind:
            label = re.sub(r"<[^>]+>|\s", "", kind.group(1))
            out.add((label, "icon-download" in row, "icon-html" in row, "icon-textlink" in row))
    return out


def test_a_foreign_paper_offers_no_file_and_no_reader_as_on_the_site() -> None:
    # The saved grid's WWJD rows carry only 原文链接 (CNKI holds the record, not the file); the
    # simulator's detail page offered PDF and CAJ downloads for them, a file the site does not give
    real = _grid_entries(read_real("kns8s-grid/pluginsx_shuziwenwu_p1.html"))
    assert {e for e in real if e[0] == "外文期刊"} == {("外文期刊", False, False, True)}
    foreign = [r for r in CORPUS.records if r.type == "外文期刊"]
    assert foreign
    for r in foreign:
        d = parse_detail(render_detail(r, CORPUS, LINKS, VISITOR), LINKS.detail(r.id))
        assert (d.reader_url, d.pdf_url, d.caj_url) == (None, None, None), r.id
    page = GridPage(rows=foreign[:5], total=5, page=1, page_size=20, cursor="c")
    assert _grid_entries(render_grid(page, LINKS)) == {("外文期刊", False, False, True)}
