"""Detail parser: the real kcms2 2026 page field by field, old KCMS pages, and each rule."""

from __future__ import annotations

import pytest

from cnki_mcp.errors import CnkiError
from cnki_mcp.parse.detail import parse_detail
from tests.conftest import read_real

KCMS2 = "detail-kcms2/pluginsx_detail_kcms2_2026.html"
URL = "https://kns.cnki.net/kcms2/article/abstract?v=abc&uniplatform=NZKPT"


def test_kcms2_2026_page_every_visible_field() -> None:
    d = parse_detail(read_real(KCMS2), URL)
    assert d.title == "让文物“活”起来：AI驱动下的黑龙江文物智能传播研究"
    assert [a.name for a in d.authors] == ["时郁婷", "周微"]
    assert d.authors[0].institutions == ["哈尔滨石油学院", "马来西亚博特拉大学"]
    assert d.authors[1].institutions == ["哈尔滨石油学院"]
    assert d.institutions == ["哈尔滨石油学院", "马来西亚博特拉大学"]
    assert d.source == "视听"
    assert d.source_url is not None and d.source_url.startswith("https://navi.cnki.net/knavi/detail?p=")
    assert "index=1" not in d.source_url  # not the 查看该刊数据库收录来源 link
    assert (d.year, d.volume, d.issue, d.pages) == (2026, None, "02", "103-107")
    assert d.abstract is not None
    assert d.abstract.startswith("在人工智能、大数据与沉浸式交互技术快速发展的背景下")
    assert d.abstract.endswith("为黑龙江乃至东北地区的文博数字化转型提供参考。")
    assert d.excerpt is None
    assert d.keywords == ["人工智能", "文物传播", "文化创新", "黑龙江"]
    assert d.funds == [
        "2025年黑龙江省经济社会发展重点研究课题（科普专项）：新质生产力驱动下黑龙江文物智能传播的"
        "普及转化路径研究（项目编号：SKPJ202532）"
    ]
    assert d.doi == "10.19395/j.cnki.1674-246x.2026.02.023"
    assert d.album == "信息科技;哲学与人文科学"
    assert d.topic == "考古;新闻与传媒"
    assert d.classification == ["G206", "K872"]
    assert d.online_date == "2026-01-29 09:01"
    assert (d.native.dbcode, d.native.dbname, d.native.filename) == ("CJFQ", "CJFDLAST2026", "SHIT202602024")
    assert d.native.key == "CJFQ:SHIT202602024"
    assert d.doc_type == "期刊"
    assert d.downloads == 58
    assert d.cited is None and d.page_count is None  # the 2026 page shows neither
    assert d.source_tiers == []  # the 2026 source line carries no index tags
    for link in (d.reader_url, d.pdf_url, d.caj_url):
        assert link is not None and link.startswith("https://bar.cnki.net/bar/download/order?id=")
    assert len({d.reader_url, d.pdf_url, d.caj_url}) == 3
    assert d.references == [] and d.citing == []  # AJAX containers are empty in the capture


def test_old_summary_layout_journal_article_2017() -> None:
    d = parse_detail(read_real("detail-kcms-old/journalcrawler_detail_cjfd_2017.html"))
    assert d.title == "无绩效考核下外部独立董事薪酬的决定"
    assert [a.name for a in d.authors] == ["沈艺峰", "陈旋"]
    assert d.institutions == ["厦门大学管理学院"]
    assert d.source == "南开管理评论"
    assert (d.year, d.issue) == (2016, "02")
    assert d.abstract is not None and d.abstract.startswith("本文主要研究在没有绩效考虑的情况下")
    assert d.keywords == ["外部独立董事", "公司治理", "薪酬"]
    assert d.funds == ["国家自然科学基金项目(71232005、71172053)资助"]
    assert d.classification == ["F271", "F272.92"]
    assert d.downloads == 784


def test_old_wx_layout_doctoral_thesis_2017() -> None:
    d = parse_detail(read_real("detail-kcms-old/roliygu_detail_cdfd_2017.html"))
    assert d.title == "中国科学技术奖励制度研究"
    assert [a.name for a in d.authors] == ["姚昆仑"]
    assert d.institutions == ["中国科学技术大学"]
    assert d.supervisor == "张秉伦; 胡化凯"
    assert d.classification == ["N01", "N092"]
    assert d.abstract is not None and d.abstract.startswith("本文以系统的发掘、搜集和考证中国25史")
    assert (d.downloads, d.page_count) == (3740, 322)


def test_old_wx_layout_journal_article_body_start_is_excerpt() -> None:
    d = parse_detail(read_real("detail-kcms-old/roliygu_detail_cjfd_2017.html"))
    assert d.title == "荨麻疹证治"
    assert len(d.authors) == 9 and d.authors[0].name == "朱仁康" and d.authors[-1].name == "张宇庆"
    assert d.institutions[0] == "中国中医研究院广安门医院"
    assert d.source == "中医杂志"
    assert (d.year, d.issue, d.pages) == (1987, "12", "7-10")
    assert d.doi == "10.13288/j.11-2166/r.1987.12.002"
    # `<正>` marks the start of the body text, printed where an abstract would be.
    assert d.abstract is None
    assert d.excerpt is not None and d.excerpt.startswith("朱仁康(中国中医研究院广安门医院)")


def test_oldest_summary_layout_thesis_2015() -> None:
    d = parse_detail(read_real("detail-kcms-old/smalltt_detail_cdfd_2015.html"))
    assert d.title == "中国科学技术奖励制度研究"
    assert [a.name for a in d.authors] == ["姚昆仑"]
    assert d.supervisor == "张秉伦; 胡化凯"
    assert d.keywords[:3] == ["科技奖励", "科学技术奖励", "奖励工作"] and len(d.keywords) == 10
    assert (d.cited, d.downloads) == (29, 2527)


def _wx(inner: str, head: str = "", extra: str = "") -> str:
    return f"<html><head>{head}</head><body>{extra}<div class='brief'><div class='wx-tit'>{inner}</div></div></body></html>"


def test_login_widget_h1_is_never_the_title() -> None:
    html = (
        "<html><body><div class='ecp_personalLoginBox'><h1>自动登录</h1></div>"
        "<div id='loginPanel'><h1>账号登录</h1></div><h1>真实题名</h1></body></html>"
    )
    assert parse_detail(html).title == "真实题名"
    with_wx = _wx("<h1>违约金研究</h1>", extra="<div class='ecp_personalLoginBox'><h1>自动登录</h1></div>")
    assert parse_detail(with_wx).title == "违约金研究"


def test_page_without_title_is_parser_unsupported() -> None:
    html = "<html><body><div class='ecp_personalLoginBox'><h1>自动登录</h1></div><p>changed</p></body></html>"
    with pytest.raises(CnkiError) as err:
        parse_detail(html)
    assert err.value.code == "PARSER_UNSUPPORTED"


def test_meta_tags_win_and_role_suffixes_are_stripped() -> None:
    head = (
        "<meta name='Citation_Title' content='报纸题名'>"
        "<meta name='citation_author' content='林倩(文)'>"
        "<meta property='citation_author' content='胡馨元（编）'>"
        "<meta name='citation_doi' content='10.1234/abc.2024.01'>"
        "<meta name='citation_publication_date' content='2023-05-06'>"
        "<meta name='citation_journal_title' content='人民日报'>"
    )
    d = parse_detail(_wx("<h1>DOM题名</h1>", head=head))
    assert d.title == "报纸题名"
    assert [a.name for a in d.authors] == ["林倩", "胡馨元"]
    assert d.doi == "10.1234/abc.2024.01"
    assert (d.date, d.year, d.source) == ("2023-05-06", 2023, "人民日报")


def test_newspaper_snapshot_is_excerpt_not_abstract() -> None:
    html = _wx("<h1>新闻</h1>") + "<div>正文快照：<span class='abstract-text'>正文片段</span></div>"
    d = parse_detail(html)
    assert d.abstract is None
    assert d.excerpt == "正文片段"


def test_sup_marks_map_authors_to_numbered_institutions() -> None:
    inner = (
        "<h1>题名</h1><h3 class='author' id='authorpart'>"
        "<span><a href='/a/1'>张三<sup>1</sup></a></span><span><a href='/a/2'>李四<sup>2,1</sup></a></span></h3>"
        "<h3 class='author'><span><a>1.北京大学</a></span><span><a>2. 清华大学</a></span></h3>"
    )
    d = parse_detail(_wx(inner))
    assert [(a.name, a.institutions) for a in d.authors] == [
        ("张三", ["北京大学"]),
        ("李四", ["清华大学", "北京大学"]),
    ]


def test_hidden_elements_are_ignored() -> None:
    inner = (
        "<h1>题名<span style='display: none'>附视频</span></h1>"
        "<h3 id='authorpart'><span><a>张三</a></span><span hidden><a>隐藏者</a></span></h3>"
    )
    d = parse_detail(_wx(inner))
    assert d.title == "题名"
    assert [a.name for a in d.authors] == ["张三"]


def test_issue_line_forms_and_issue_year_override() -> None:
    head = "<meta name='citation_date' content='2023-12-30'>"
    for line, expected in (
        ("<a href='https://navi.cnki.net/knavi/x'>法学研究</a>. 2024,(3):1-10", (2024, None, "3", "1-10")),
        ("<a href='/knavi/journals/X/detail'>法学研究</a> 2025,47(3):1-20", (2025, "47", "3", "1-20")),
    ):
        html = f"<html><head>{head}</head><body><div class='top-tip'>{line}</div><div class='wx-tit'><h1>T</h1></div></body></html>"
        d = parse_detail(html, URL)
        assert (d.year, d.volume, d.issue, d.pages) == expected
        assert d.source == "法学研究"


@pytest.mark.parametrize("written", ["2004/06/29", "2004.6.29", "2004-06-29"])
def test_a_newspapers_day_is_read_as_yyyy_mm_dd_however_written(written: str) -> None:
    """The grid lists an older newspaper's day as 2004/06/29 (saved page
    kns8s-grid/pluginsx_search_result_4rows.html): one form, so the day compares with a reference's."""
    html = _wx("<h1>乡镇统计的排头兵</h1>") + (
        f"<ul><li class='top-space'><span class='rowtit'>报纸日期：</span><p>{written}</p></li></ul>"
    )
    d = parse_detail(html, URL)
    assert (d.date, d.year) == ("2004-06-29", 2004)


def test_rows_ids_and_anchors_from_markup() -> None:
    html = _wx("<h1>学位论文</h1>") + (
        "<ul><li class='top-space'><span class='rowtit'>导师：</span><p>王五；赵六</p></li>"
        "<li class='top-space'><span class='rowtit'>学位授予单位：</span><p>北京大学</p></li></ul>"
        "<p class='total-inform'><span>下载：1.2万</span><span>页码：324-338</span><span>页数：15</span></p>"
        "<div data-dbcode='CMFD' data-dbname='CMFD202401' data-filename='1024001.nh'></div>"
        "<a href='/reader/x'>在线阅读</a><a href='javascript:void(0)'>PDF下载</a>"
        "<p class='keywords'><a>甲;</a><a>乙；</a></p><p>DOI：10.5555/xyz.1</p>"
    )
    d = parse_detail(html, URL)
    assert d.supervisor == "王五; 赵六"
    assert d.degree_place == "北京大学"
    assert (d.downloads, d.pages, d.page_count) == (12000, "324-338", 15)
    assert d.native.key == "CMFD:1024001.NH" and d.doc_type == "硕士"
    assert d.reader_url == "https://kns.cnki.net/reader/x"
    assert d.pdf_url is None and d.caj_url is None
    assert d.keywords == ["甲", "乙"]
    assert d.doi == "10.5555/xyz.1"


def test_native_ids_fall_back_to_url_query() -> None:
    d = parse_detail(
        _wx("<h1>T</h1>"),
        "https://kns.cnki.net/kcms/detail.aspx?dbcode=CJFD&dbname=CJFDLAST2019&filename=FXYJ201903004",
    )
    assert d.native.key == "CJFD:FXYJ201903004"


def test_inline_reference_lists_are_parsed() -> None:
    html = _wx("<h1>T</h1>") + (
        "<div id='quoted-references'><div class='essayBox'><div class='dbTitle'>期刊</div><ul class='ebBox'>"
        "<li><em>[1]</em><a href='/kcms/detail?dbcode=CJFD&filename=FXYJ201903004'>违约金调整规则研究</a>[J].王利明.法学研究.2019(03)</li>"
        "</ul></div></div><div id='quoted-citations'></div>"
    )
    d = parse_detail(html, URL)
    assert len(d.references) == 1 and d.citing == []
    ref = d.references[0]
    assert (ref.title, ref.authors, ref.source, ref.year, ref.doc_type_code) == (
        "违约金调整规则研究",
        ["王利明"],
        "法学研究",
        2019,
        "[J]",
    )
    assert ref.native.key == "CJFD:FXYJ201903004"


# --- kcms2 2023 layout (institutions in a bare h3) and fund lists -------------------------------


def _kcms2_2023(institutions: str, funds: str = "") -> str:
    """The 2023 kcms2 article page as documented in DESIGN.md ("Detail pages")."""
    return (
        "<html><head><title>数字经济与企业创新 - 中国知网</title></head><body><div class='doc'><div class='brief'>"
        "<div class='wx-tit'><h1>数字经济与企业创新</h1>"
        "<h3 id='authorpart' class='author'><span><a href='../author/detail?v=a'>张三</a></span>"
        "<span><a href='../author/detail?v=b'>李四</a></span></h3>"
        f"{institutions}</div></div>"
        "<div class='row'><span class='rowtit'>摘要：</span><span id='ChDivSummary' class='abstract-text'>摘要文本。</span></div>"
        f"{funds}</div></body></html>"
    )


def test_kcms2_2023_bare_h3_institution_line_is_read() -> None:
    html = _kcms2_2023(
        "<h3><span><a class='author' href='../organ/detail?v=o1'>中国人民大学商学院</a></span></h3>"
    )
    d = parse_detail(html, URL)
    assert d.institutions == ["中国人民大学商学院"]
    assert [a.institutions for a in d.authors] == [["中国人民大学商学院"], ["中国人民大学商学院"]]


def test_kcms2_2023_numbered_institutions_in_a_bare_h3() -> None:
    html = _kcms2_2023(
        "<h3><span><a class='author'>1.中国人民大学商学院</a></span><span><a class='author'>2.清华大学</a></span></h3>"
    )
    assert parse_detail(html, URL).institutions == ["中国人民大学商学院", "清华大学"]


def test_semicolons_inside_a_funds_brackets_do_not_split_it() -> None:
    funds = (
        "<p class='funds'>国家自然科学基金面上项目(72174213；71974206；71774176)；"
        "教育部人文社会科学研究规划基金项目（23YJA630001;23YJC630002）；</p>"
    )
    d = parse_detail(_kcms2_2023("", funds), URL)
    assert d.funds == [
        "国家自然科学基金面上项目(72174213；71974206；71774176)",
        "教育部人文社会科学研究规划基金项目（23YJA630001;23YJC630002）",
    ]


def test_formula_markup_in_the_title_and_abstract_is_part_of_the_words() -> None:
    # CNKI prints formulas as markup in the kcms2 h1 (the Zotero CNKI translator's test page:
    # `外施Ca<sup>2+</sup>、ABA及H<sub>3</sub>PO<sub>4</sub>对盐碱胁迫的缓解效应`); the grid row gives the
    # same title as plain text, and the two must agree or the detail page fails its identity check.
    from datetime import UTC, datetime

    from cnki_mcp.identity import Paper, detail_matches
    from cnki_mcp.parse.grid import parse_grid

    marked = "外施Ca<sup>2+</sup>、ABA及H<sub>3</sub>PO<sub>4</sub>对盐碱胁迫的缓解效应"
    page = _wx(
        f"<h1>{marked}</h1><h3 class='author' id='authorpart'><span><a>颜宏</a></span></h3>",
        extra="<div class='row'><span class='rowtit'>摘要：</span>"
        "<span id='ChDivSummary' class='abstract-text'>施用<i>E. coli</i>后CO<sub>2</sub>浓度下降</span></div>",
    )
    d = parse_detail(page, URL)
    assert d.title == "外施Ca2+、ABA及H3PO4对盐碱胁迫的缓解效应"
    assert d.abstract == "施用E. coli后CO2浓度下降"
    grid = (
        "<table class='result-table-list'><tbody><tr><td class='seq'>1</td><td class='name'>"
        f"<a class='fz14' href='/kcms2/article/abstract?v=1'>{marked}</a></td><td class='author'>颜宏</td>"
        "<td class='source'>应用生态学报</td><td class='date'>2000-12-15</td><td class='data'>期刊</td></tr></tbody></table>"
    )
    row = parse_grid(grid, "https://kns.cnki.net/kns8s/brief/grid").rows[0]
    assert row.title == d.title
    assert detail_matches(Paper.from_grid_row(row, datetime.now(UTC)), d)
