"""Result-grid parser: real kns8s captures read field by field, older generations, and one small
HTML string per rule."""

from __future__ import annotations

import pytest

from cnki_mcp.errors import CnkiError
from cnki_mcp.parse.grid import parse_grid
from tests.conftest import read_real

SEARCH_URL = "https://kns.cnki.net/kns8s/defaultresult/index"
KCMS2 = "https://kns.cnki.net/kcms2/article/abstract?v="
NAVI = "https://navi.cnki.net/knavi/detail?p="


def _code(html: str, url: str | None = None) -> str:
    with pytest.raises(CnkiError) as info:
        parse_grid(html, url)
    return info.value.code


# --- real kns8s captures ------------------------------------------------------------------


@pytest.fixture(scope="module")
def waam():  # type: ignore[no-untyped-def]
    return parse_grid(read_real("kns8s-grid/kaffu_waam_p1.html"), SEARCH_URL)


@pytest.fixture(scope="module")
def wenwu():  # type: ignore[no-untyped-def]
    return parse_grid(read_real("kns8s-grid/pluginsx_shuziwenwu_p1.html"), SEARCH_URL)


@pytest.fixture(scope="module")
def four():  # type: ignore[no-untyped-def]
    return parse_grid(read_real("kns8s-grid/pluginsx_search_result_4rows.html"), SEARCH_URL)


def test_waam_paging_reads_661_results_page_1_of_34(waam) -> None:  # type: ignore[no-untyped-def]
    assert len(waam.rows) == 20
    assert (waam.total, waam.page, waam.page_count) == (661, 1, 34)
    assert waam.turnpage == "8Kf6r96aVUubfe4hUZXU-w!!"
    assert waam.zero_results is False and waam.exhausted is False
    assert [r.ordinal for r in waam.rows] == list(range(1, 21))


def test_waam_first_row_has_online_first_and_capj_ids(waam) -> None:  # type: ignore[no-untyped-def]
    r = waam.rows[0]
    assert r.title == "Al-Mg合金电弧-搅拌摩擦加工复合增材制造组织性能研究"
    # authors are bare a.KnowledgeNetLink siblings with no separator text between them
    assert r.authors == ["刘莉", "冯宇晨", "吴慧琦", "徐望辉", "何艳兵", "Shcheretskiy Volodymyr", "董春林"]
    assert r.source == "焊接学报"
    assert r.source_url is not None and r.source_url.startswith(NAVI)
    assert (r.date, r.year, r.doc_type) == ("2026-06-24 09:14", 2026, "期刊")
    assert (r.cited, r.downloads) == (None, 37)
    assert (r.native.dbname, r.native.dbcode, r.native.filename) == ("CAPJ", "CAPJ", "HJXB20260618001")
    assert r.native.key == "CAPJ:HJXB20260618001"
    assert r.online_first is True
    assert r.open_access is False  # only the hidden i.freeIdent.is-hide badge is present
    assert r.detail_url is not None and r.detail_url.startswith(KCMS2 + "QP2K49WHhiltXm6R1CMq")
    assert r.detail_url.endswith("&uniplatform=NZKPT&language=CHS")


def test_waam_english_row_and_last_row(waam) -> None:  # type: ignore[no-untyped-def]
    r = waam.rows[14]
    assert r.ordinal == 15
    assert r.title.startswith("Enhancing forming quality, refining grains, and reducing anisotropy")
    assert r.authors[:2] == ["Yi-feng Wang", "Zhong-ming Zhang"] and len(r.authors) == 10
    assert (r.source, r.date, r.downloads, r.online_first) == ("China Foundry", "2026-04-17 13:40", 15, True)
    assert r.native.filename == "ZZAF20260416004"
    last = waam.rows[-1]
    assert last.title == "电弧增材制造TC4钛合金的热处理调控研究进展"
    assert last.authors == ["周垒", "付文平", "申鑫雨", "李济鹏", "王成", "李臣达"]
    assert (last.source, last.date, last.year, last.downloads) == (
        "热加工工艺",
        "2026-04-02 20:20",
        2026,
        262,
    )
    assert (last.native.dbname, last.native.filename) == ("CJFQ", "SJGY202607008")
    assert last.online_first is False


def test_wenwu_paging_reads_1557_results_page_1_of_78(wenwu) -> None:  # type: ignore[no-untyped-def]
    assert len(wenwu.rows) == 20
    assert (wenwu.total, wenwu.page, wenwu.page_count) == (1557, 1, 78)
    assert [r.doc_type for r in wenwu.rows].count("外文期刊") == 13


def test_wenwu_first_foreign_row_flattens_highlight_and_reads_authorinfo(wenwu) -> None:  # type: ignore[no-untyped-def]
    r = wenwu.rows[0]
    assert r.ordinal == 1
    # the title contains <font color="red">digital</font>
    assert r.title == (
        "A decentralized digital engineering asset exchange method empowered by model-based "
        "systems engineering and distributed ledger technology"
    )
    assert r.authors == ["Jinzhi Lu", "Xiaochen Zheng", "Zhenchao Hu", "Huisheng Zhang", "Dimitris Kiritsis"]
    assert (r.source, r.source_url) == ("Computers & Industrial Engineering", None)  # span, no link
    assert (r.date, r.year, r.doc_type, r.cited, r.downloads) == ("2026-03-12", 2026, "外文期刊", None, None)
    # icon-collect wins over the icon-textlink[data-filename][data-table] that comes first
    assert (r.native.dbname, r.native.dbcode) == ("WWJD", "WWJD")
    assert r.native.filename == "SJESA745DC3161090C020FAF9A30937E425E"
    assert r.detail_url is not None and r.detail_url.startswith(KCMS2 + "esvOG1ozB-hEXR")


def test_wenwu_truncated_foreign_authors_include_the_collapsed_rest(wenwu) -> None:  # type: ignore[no-untyped-def]
    # `…; Selvi<a class=showAllAuthors></a><span style="display:none">;Silvia Mery</span>`: the
    # hidden span is one click away on the page, so its names are authors too.
    r = wenwu.rows[2]
    assert r.authors == [
        "Astri Ayu Purwati",
        "Mimelientesa Irman",
        "Muhammad Siddik",
        "Muhammad Luthfi Hamzah",
        "Selvi",
        "Silvia Mery",
    ]
    assert r.source == "Social Sciences & Humanities Open"
    assert wenwu.rows[12].authors[-2:] == ["Jiaru Liu", "Yan Wei"]


def test_a_newspaper_row_reads_its_paper_issue_date_and_ccnd_filename(wenwu) -> None:  # type: ignore[no-untyped-def]
    r = wenwu.rows[7]
    assert r.ordinal == 8
    assert r.title == "数字互联背景下博物馆文物藏品的数字化保护探究"
    assert r.authors == ["王文嘉", "楚茹云"]
    assert (r.source, r.date, r.year, r.doc_type, r.downloads) == ("科学导报", "2026-02-11", 2026, "报纸", 43)
    assert (r.native.dbname, r.native.filename) == ("CCND", "KXDB20260211B021")
    assert r.source_url is not None and r.source_url.startswith(NAVI)


def test_wenwu_row_without_authors_and_special_journal(wenwu) -> None:  # type: ignore[no-untyped-def]
    r = wenwu.rows[8]
    assert (r.ordinal, r.title, r.authors) == (9, "川报集团与7家单位开启战略合作", [])
    assert (r.source, r.date, r.doc_type, r.downloads) == ("城市党报研究", "2026-02-10", "期刊", 1)
    assert (r.native.dbname, r.native.filename) == ("CJFQ", "CSDB202602028")
    special = wenwu.rows[15]
    assert (special.title, special.authors) == (
        "革命文物数字叙事赋能高职教育的价值意蕴与实践路径研究",
        ["罗氰献"],
    )
    assert (special.source, special.doc_type, special.downloads) == ("才智", "特色期刊", 11)
    assert (special.native.dbname, special.native.filename) == ("CJFN", "CAIZ202603045")


def test_the_last_row_of_a_page_reads_a_foreign_journal_article(wenwu) -> None:  # type: ignore[no-untyped-def]
    r = wenwu.rows[-1]
    assert r.ordinal == 20
    assert r.title.startswith("From Stone to Standards: A Digital Heritage Interoperability Model")
    assert r.authors == ["Hamest Tamrazyan", "Gayane Hovhannisyan", "Arsen Harutyunyan"]
    assert (r.source, r.date, r.doc_type) == ("Heritage", "2026-01-13", "外文期刊")
    assert r.native.filename == "SJMDB82DB8E11182EC276CA776139BDC1A4E"


def test_four_rows_without_page_marker_is_page_1_of_1(four) -> None:  # type: ignore[no-untyped-def]
    assert [r.ordinal for r in four.rows] == [1, 2, 3, 4]
    assert (four.total, four.page, four.page_count) == (4, 1, 1)
    assert four.exhausted is True


def test_four_rows_field_by_field(four) -> None:  # type: ignore[no-untyped-def]
    first, second, paper, last = four.rows
    assert (first.title, first.authors) == ("行走在方寸之间——访王淑慧老师", [])
    assert (first.source, first.date, first.doc_type, first.downloads) == (
        "绿色包装",
        "2016-06-15",
        "期刊",
        21,
    )
    assert (first.native.dbname, first.native.filename) == ("CJFQ", "LVBZ201606020")
    assert second.authors == ["宋文芳", "田晓东", "叶英军", "綦长海"]  # plain <a> with ; text between
    assert (second.source, second.doc_type, second.year) == ("科技创新与品牌", "特色期刊", 2012)
    assert (paper.title, paper.authors) == ("乡镇统计的排头兵", ["郭峰", "王广军", "娜仁"])
    assert (paper.source, paper.date, paper.year, paper.doc_type) == (
        "中国信息报",
        "2004-06-29",  # listed 2004/06/29: one form of the day for every kind (identity.iso_date)
        2004,
        "报纸",
    )
    assert (paper.native.dbcode, paper.native.filename, paper.downloads) == ("CCND", "ZGXX20040629ZZ16", 6)
    assert last.title.startswith("苦海中,她用真爱和坚强撑起了希望的风帆")
    assert (last.authors, last.source, last.date) == (["杨颖"], "共产党员", "2002-05-08")


def test_raw_search_shell_without_grid_is_unsupported() -> None:
    html = read_real("kns8s-grid/kaffu_search_shell_raw.html")
    with pytest.raises(CnkiError) as info:
        parse_grid(html, SEARCH_URL)
    assert info.value.code == "PARSER_UNSUPPORTED"
    assert 0 < len(info.value.details["text"]) <= 160


def test_a_page_with_a_count_but_rows_in_an_unknown_layout_is_unsupported_not_zero() -> None:
    """The facet column's 暂无分组结果 (or any 未找到 in the page) read as a zero result, total 0,
    under a count of 4: a changed row layout would have been reported as 'no papers'."""
    html = (
        '<div id="countPageDiv"><span class="pagerTitleCell"><span>共找到</span> <em>4</em> <span>条结果</span></span>'
        "</div><dl><dt>来源类别</dt><dd>暂无分组结果</dd></dl>"
        '<div class="list-2027"><div class="item"><a href="/kcms2/article/abstract?v=x">违约金研究</a></div></div>'
    )
    with pytest.raises(CnkiError) as info:
        parse_grid(html, SEARCH_URL)
    assert info.value.code == "PARSER_UNSUPPORTED"


# --- older generations --------------------------------------------------------------------


def test_old_grid_zero_results_page() -> None:
    page = parse_grid(read_real("kns-old-grid/summerwu_brief_zero_results.html"))
    assert page.zero_results is True and page.rows == [] and page.total == 0


def test_old_grid_rows_by_header_position() -> None:
    page = parse_grid(
        read_real("kns-old-grid/roliygu_brief_scdb_2017.html"), "https://kns.cnki.net/kns/brief/brief.aspx"
    )
    assert len(page.rows) == 50
    assert (page.total, page.page, page.page_count) == (14855, 1, 120)
    first, last = page.rows[0], page.rows[-1]
    assert (first.ordinal, first.title, first.authors) == (
        1,
        "公共管理事业下的政府自然科学科技管理定位研究",
        ["边蕊"],
    )
    assert (first.source, first.date, first.doc_type, first.downloads) == (
        "中国高新技术企业",
        "2017-04-15",
        "期刊",
        3,
    )
    assert (first.native.dbcode, first.native.dbname, first.native.filename) == (
        "CJFQ",
        "CJFDTEMP",
        "ZGGX201708130",
    )
    assert first.detail_url is not None and first.detail_url.startswith(
        "https://kns.cnki.net/kns/detail/detail.aspx?"
    )
    assert (last.ordinal, last.cited, last.downloads, last.source) == (50, 7, 297, "科技导报")


def test_old_grid_online_first_marker_and_truncated_authors() -> None:
    page = parse_grid(read_real("kns-old-grid/summerwu_brief_shouyi_20rows.html"))
    assert (len(page.rows), page.total, page.page_count) == (20, 185632, 300)
    first = page.rows[0]
    assert first.online_first is True  # b.cMarkTip 网络首发
    assert (first.native.dbcode, first.native.dbname) == ("CAPJ", "CAPJDAY")  # `DbCode= CAPJ` trimmed
    # 5 shown, then `a.showAll[title=显示全部作者]` + `<span style="display:none">;<a>…</a>…</span>`
    assert page.rows[-1].authors == ["张诺", "柯鼎焜", "杜红方", "巫攀", "郭玉光", "凌华云", "蒋思婧", "张桂敏"]


def test_kns8_fragment_past_the_end_is_an_explicit_empty_page() -> None:
    # 共找到11条结果 but #curPageHid=2 at 20 per page: page 2 is past the end, not zero results.
    page = parse_grid(read_real("kns8-grid-2022-2023/sa1utyeggs_kns8_brief_grid_empty_tbody.html"))
    assert page.rows == [] and page.zero_results is False
    assert (page.total, page.page, page.page_count) == (11, 2, 1)
    assert page.exhausted is True


def test_old_simple_skin_with_script_titles_is_unsupported() -> None:
    # titles are written by document.write: not in the DOM, so no row can be read honestly
    assert _code(read_real("kns-old-grid/asianroad_brief_simple_2017.html")) == "PARSER_UNSUPPORTED"


# --- rules on small HTML strings ----------------------------------------------------------


def _row(
    *,
    seq: str = "1",
    name: str = '<a class="fz14" href="/kcms2/article/abstract?v=abc">标题</a>',
    author: str = "",
    source: str = "",
    date: str = "",
    data: str = "",
    quote: str = "",
    download: str = "",
    extra: str = "",
    attrs: str = "",
) -> str:
    return (
        f'<tr{attrs}><td class="seq">{seq}</td><td class="name">{name}</td><td class="author">{author}</td>'
        f'<td class="source">{source}</td><td class="date">{date}</td><td class="data">{data}</td>'
        f'<td class="quote">{quote}</td><td class="download">{download}</td><td class="operat">{extra}</td></tr>'
    )


def _page(*rows: str, head: str = "", tail: str = "") -> str:
    return (
        f"<html><body>{head}<table class='result-table-list'><thead><tr><th></th><th>题名</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>{tail}</body></html>"
    )


def test_counts_with_wan_and_commas() -> None:
    page = parse_grid(_page(_row(quote="<span><a class='quoteCnt'>1,204</a></span>", download="1.2万")))
    assert (page.rows[0].cited, page.rows[0].downloads) == (1204, 12000)


def test_role_suffix_and_sup_marks_are_removed_from_authors() -> None:
    author = (
        '<a class="KnowledgeNetLink">林倩<sup>1,2</sup>(文)</a>;<a class="KnowledgeNetLink">胡馨元（编）</a>'
    )
    assert parse_grid(_page(_row(author=author))).rows[0].authors == ["林倩", "胡馨元"]


def test_co_authors_sharing_a_name_are_both_kept() -> None:
    # two people named 王伟, each with an author link of their own: the byline keeps three names
    author = (
        '<a class="KnowledgeNetLink" href="/a1">王伟</a>;<a class="KnowledgeNetLink" href="/a2">李强</a>;'
        '<a class="KnowledgeNetLink" href="/a3">王伟</a>'
    )
    assert parse_grid(_page(_row(author=author))).rows[0].authors == ["王伟", "李强", "王伟"]


def test_one_author_listed_twice_with_the_same_link_is_one_author() -> None:
    # a saved 2018 grid lists 董守斌 twice with one link (one author code list): CNKI's duplicate,
    # not two people; namesakes carry links of their own (above)
    page = parse_grid(read_real("kns-old-grid/yanxianchen_brief_2018.html"))
    [row] = [r for r in page.rows if "董守斌" in r.authors]
    assert row.authors.count("董守斌") == 1 and len(row.authors) == 4
    same = '<a class="KnowledgeNetLink" href="/a1">王伟</a>;<a class="KnowledgeNetLink" href="/a1">王伟</a>'
    assert parse_grid(_page(_row(author=same))).rows[0].authors == ["王伟"]
    # a link that names nobody (kns8s grids link authors `javascript:void(0)`): namesakes both kept
    void = '<a class="KnowledgeNetLink" href="javascript:void(0)">王伟</a>;' * 2
    assert parse_grid(_page(_row(author=void))).rows[0].authors == ["王伟", "王伟"]


def test_plain_text_authors_split_on_all_separators() -> None:
    page = parse_grid(_page(_row(author="张三；李四,王五，赵六;张三")))
    assert page.rows[0].authors == ["张三", "李四", "王五", "赵六"]


def test_foreign_authorinfo_splits_on_semicolons_only_so_names_keep_their_commas() -> None:
    author = '<div class="authorinfo"><p>Smith, John; Doe, Jane；Lee, K.</p></div>'
    assert parse_grid(_page(_row(author=author))).rows[0].authors == ["Smith, John", "Doe, Jane", "Lee, K."]


def test_empty_show_all_link_is_not_an_author() -> None:
    author = '<a href="#x">甲</a>;<a href="#y">乙</a><a class="showAllAuthors" title="显示全部作者"></a>'
    assert parse_grid(_page(_row(author=author))).rows[0].authors == ["甲", "乙"]


def test_collapsed_authors_after_the_show_all_toggle_are_kept_other_hidden_names_are_not() -> None:
    shown = "".join(f'<a class="KnowledgeNetLink" href="/a{i}">作者{i}</a>;' for i in range(1, 6))
    author = (
        shown.rstrip(";") + '<a class="showAllAuthors" title="显示全部作者"></a>'
        '<span style="display:none">;<a class="KnowledgeNetLink" href="/a6">作者6</a>;'
        '<a class="KnowledgeNetLink" href="/a7">作者7</a></span>'
        '<span style="display:none"><a class="KnowledgeNetLink" href="/x">陷阱</a></span>'
    )
    assert parse_grid(_page(_row(author=author))).rows[0].authors == [f"作者{i}" for i in range(1, 8)]


def test_semicolons_between_author_links_are_separators_not_names() -> None:
    author = '<a class="KnowledgeNetLink">王文嘉</a>;<a class="KnowledgeNetLink">楚茹云</a>'
    assert parse_grid(_page(_row(author=author))).rows[0].authors == ["王文嘉", "楚茹云"]
    author = '<a style="pointer-events: none;">郭峰</a>;<a style="pointer-events: none;">娜仁</a>'
    assert parse_grid(_page(_row(author=author))).rows[0].authors == ["郭峰", "娜仁"]


def test_rows_with_empty_title_are_skipped_and_hidden_rows_ignored() -> None:
    html = _page(
        _row(seq="1", name='<a class="fz14" href="/a">  </a>'),
        _row(seq="2", name='<a class="fz14" href="/b">看得见</a>'),
        _row(seq="3", name='<a class="fz14" href="/c">陷阱</a>', attrs=' style="display:none"'),
    )
    page = parse_grid(html, "https://kns.cnki.net/kns8s/x")
    assert [(r.ordinal, r.title) for r in page.rows] == [(2, "看得见")]
    assert page.rows[0].detail_url == "https://kns.cnki.net/b"


def test_ordinal_from_seq_text_next_to_checkbox() -> None:
    seq = '<input class="cbItem" type="checkbox" value="opaque!">21'
    assert parse_grid(_page(_row(seq=seq))).rows[0].ordinal == 21


def test_ids_from_detail_url_params_case_insensitive() -> None:
    name = '<a class="fz14" href="/kns8/Detail?FileName=XDQB20230516001&DbName=CAPJLAST&DbCode=CAPJ">题</a>'
    native = parse_grid(_page(_row(name=name))).rows[0].native
    assert (native.dbcode, native.dbname, native.filename) == ("CAPJ", "CAPJLAST", "XDQB20230516001")


def test_ids_from_checkbox_value_and_dbcode_from_dbname() -> None:
    seq = '<input class="cbItem" type="checkbox" value="CAPJLAST!XDQB20230516001!1!0">1'
    native = parse_grid(_page(_row(seq=seq))).rows[0].native
    assert (native.dbcode, native.dbname, native.filename) == ("CAPJ", "CAPJLAST", "XDQB20230516001")


def test_open_access_badge_counts_but_hidden_free_badge_does_not() -> None:
    oa = '<a class="fz14" href="/a">题</a><b class="cMarkSign" title="开放获取">OA</b>'
    free = '<a class="fz14" href="/a">题</a><i class="freeIdent is-hide" title="Free" style="display: none;">免费</i>'
    assert parse_grid(_page(_row(name=oa))).rows[0].open_access is True
    assert parse_grid(_page(_row(name=free))).rows[0].open_access is False


def test_source_trailing_period_trimmed_and_link_resolved() -> None:
    source = '<p><a href="/knavi/detail?p=x">管理评论.</a></p>'
    row = parse_grid(_page(_row(source=source)), "https://kns.cnki.net/kns8s/a").rows[0]
    assert (row.source, row.source_url) == ("管理评论", "https://kns.cnki.net/knavi/detail?p=x")


def test_abstract_and_keywords_in_list_mode() -> None:
    name = '<a class="fz14" href="/a">题</a><div class="abstract">摘要文字</div><p class="keywords"><a>甲;</a><a>乙</a></p>'
    row = parse_grid(_page(_row(name=name))).rows[0]
    assert (row.abstract, row.keywords) == ("摘要文字", ["甲", "乙"])


def test_cursor_total_and_page_marker() -> None:
    head = (
        '<span class="pagerTitleCell">共找到<em>1,557</em>条结果</span>'
        '<span class="countPageMark" data-pagenum="78">2/78</span>'
    )
    page = parse_grid(
        _page(_row(seq="21"), head=head, tail='<input id="hidTurnPage" type="hidden" value="T!!">')
    )
    assert (page.total, page.page, page.page_count, page.turnpage) == (1557, 2, 78, "T!!")


def test_cur_page_hidden_input_overrides_default_page_one() -> None:
    tail = '<input id="curPageHid" type="hidden" value="3">'
    page = parse_grid(_page(_row(seq="41"), tail=tail))
    assert (page.page, page.page_count) == (3, None)


@pytest.mark.parametrize(
    "text", ["抱歉，未找到相关结果", "没有找到符合条件的文献", "暂无检索结果", "找到 0 条结果"]
)
def test_a_grid_saying_nothing_was_found_is_zero_results_with_no_rows(text: str) -> None:
    page = parse_grid(f"<html><body><div id='gridTable'><p>{text}</p></div></body></html>")
    assert page.zero_results is True and page.rows == []


def test_kns8s_no_content_paragraph_is_zero_results_whatever_its_wording() -> None:
    # The kns8s empty answer: `p.no-content` with an empty value and the text 暂无数据，请稍后重试.
    html = '<div id="briefBox"><p class="no-content" value="">抱歉，暂无数据，请稍后重试。</p></div>'
    page = parse_grid(html)
    assert page.zero_results is True and page.rows == [] and page.total == 0


def test_kns8s_no_content_with_a_reason_is_a_refused_query_not_zero_results() -> None:
    html = '<div id="briefBox"><p class="no-content" value="查询对象结构错误, 没有指定检索分类！">抱歉，暂无数据，请稍后重试。</p></div>'
    with pytest.raises(CnkiError) as info:
        parse_grid(html)
    assert info.value.code == "QUERY_TEMPLATE_UNSUPPORTED"
    assert info.value.details["reason"] == "查询对象结构错误, 没有指定检索分类！"


@pytest.mark.parametrize("text", ["暂无数据", "服务繁忙，请稍后重试"])
def test_temporarily_empty_is_never_zero_results(text: str) -> None:
    assert _code(f"<html><body><div id='gridTable'>{text}</div></body></html>") == "SITE_TEMPORARILY_EMPTY"


def test_rows_win_over_temporary_empty_text() -> None:
    page = parse_grid(_page(_row(), tail="<p>暂无数据</p>"))
    assert len(page.rows) == 1


def test_verification_fragment_raises_verification_required() -> None:
    html = '<form name="vericodeForm"><input id="vericode"><img id="changeVercode"></form>'
    assert _code(html) == "VERIFICATION_REQUIRED"
    assert _code("<form name=vericodeForm></form>") == "VERIFICATION_REQUIRED"


def test_unrecognised_pages_are_unsupported_with_text_excerpt() -> None:
    with pytest.raises(CnkiError) as info:
        parse_grid("<html><body>changed login page</body></html>")
    assert info.value.code == "PARSER_UNSUPPORTED"
    assert info.value.details["text"] == "changed login page"
    table = "<table class='result-table-list'><tbody><tr><td>1</td><td>foo</td></tr></tbody></table>"
    assert _code(table) == "PARSER_UNSUPPORTED"


def test_empty_grid_that_is_not_past_the_end_is_unsupported() -> None:
    html = (
        "<div id='gridTable'><span class='pagerTitleCell'>共找到<em>100</em>条结果</span>"
        "<table class='result-table-list'><thead><tr><th>题名</th><th>作者</th></tr></thead></table>"
        "<input id='curPageHid' type='hidden' value='2'></div>"
    )
    assert _code(html) == "PARSER_UNSUPPORTED"
