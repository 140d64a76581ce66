"""Reading pasted reference lists: GB/T 7714 (full- and half-width), APA (Chinese and Latin
names), free Chinese style with 《》, wrapped lines, numbering styles, and unreadable entries."""

from __future__ import annotations

import pytest

from cnki_mcp.cite.refparse import parse_reference, parse_references, split_entries, title_spellings

# raw -> (style, authors, title, source, year, volume, issue, pages, doi, type code)
CASES = {
    "[1] 张三, 李四, 王五, 等. 论自动驾驶汽车的产品责任[J]. 东方法学, 2019, 41(3): 12-20. DOI:10.1234/abc.2019.03.": (
        "gbt7714", ["张三", "李四", "王五"], "论自动驾驶汽车的产品责任", "东方法学", 2019, "41", "3", "12-20",
        "10.1234/abc.2019.03", "J",
    ),
    "［2］张三．人工智能法律规制研究［Ｄ］．保定：华北电力大学，2019．": (
        "gbt7714", ["张三"], "人工智能法律规制研究", "华北电力大学", 2019, None, None, None, None, "D",
    ),
    "李明. 大语言模型幻觉的缓解方法[C]//第十届全国计算语言学会议论文集. 北京: 中国中文信息学会, 2021: 45-52.": (
        "gbt7714", ["李明"], "大语言模型幻觉的缓解方法", "第十届全国计算语言学会议论文集", 2021, None, None, "45-52",
        None, "C",
    ),
    "王利明：《人工智能时代对民法学的新挑战》，《东方法学》2018年第3期，第4-9页。": (
        "free", ["王利明"], "人工智能时代对民法学的新挑战", "东方法学", 2018, None, "3", "4-9", None, None,
    ),
    "张三, 李四. (2019). 论自动驾驶汽车的产品责任. 东方法学, 41(3), 12–20. https://doi.org/10.1234/ABC": (
        "apa", ["张三", "李四"], "论自动驾驶汽车的产品责任", "东方法学", 2019, "41", "3", "12-20", "10.1234/abc", None,
    ),
    "Zhang, S., & Li, M. (2020). Large language model hallucination. Journal of AI, 12(2), 100-120.": (
        "apa", ["Zhang, S.", "Li, M."], "Large language model hallucination", "Journal of AI", 2020, "12", "2",
        "100-120", None, None,
    ),
    "刘洋. 深度学习导论[M]. 北京: 科学出版社, 2020.": (
        "gbt7714", ["刘洋"], "深度学习导论", "科学出版社", 2020, None, None, None, None, "M",
    ),
    "陈晨. 数字经济与高质量发展[N]. 人民日报, 2021-05-10(7).": (
        "gbt7714", ["陈晨"], "数字经济与高质量发展", "人民日报", 2021, None, None, "7", None, "N",
    ),
    "张三. 智能合约研究[J]. 法学研究, 2020(2): 33-41.": (
        "gbt7714", ["张三"], "智能合约研究", "法学研究", 2020, None, "2", "33-41", None, "J",
    ),
    "赵六. 区块链存证的证据效力[J/OL]. 法律科学, 2022, 40(1): 5-16.": (
        "gbt7714", ["赵六"], "区块链存证的证据效力", "法律科学", 2022, "40", "1", "5-16", None, "J",
    ),
}


@pytest.mark.parametrize("raw", list(CASES))
def test_each_style_yields_its_fields(raw: str) -> None:
    style, authors, title, source, year, volume, issue, pages, doi, code = CASES[raw]
    got = parse_reference(raw)
    assert got.unparsable is None
    assert (got.style, got.authors, got.title, got.source, got.year) == (style, authors, title, source, year)
    assert (got.volume, got.issue, got.pages, got.doi, got.type_code) == (volume, issue, pages, doi, code)


def test_an_entry_without_a_title_marker_is_unparsable_with_a_reason() -> None:
    got = parse_reference("这是一段不是参考文献的文字")
    assert got.unparsable and got.title is None


def test_missing_parts_stay_none_rather_than_guessed() -> None:
    got = parse_reference("张三. 某题名[J]. 某刊.")
    assert got.title == "某题名" and got.source == "某刊"
    assert got.year is None and got.volume is None and got.issue is None and got.pages is None


def test_wrapped_lines_continue_the_numbered_entry() -> None:
    text = "[1] 张三. 题名一[J]. 刊名,\n2019, 3(2): 1-5.\n[2] 李四. 题名二[J]. 刊, 2020.\n"
    assert split_entries(text) == ["张三. 题名一[J]. 刊名, 2019, 3(2): 1-5.", "李四. 题名二[J]. 刊, 2020."]


def test_chinese_wrapped_lines_join_without_a_space() -> None:
    text = "1. 王五：《很长的题名的前半部分\n后半部分》，《刊》2019年第3期。"
    assert split_entries(text) == ["王五：《很长的题名的前半部分后半部分》，《刊》2019年第3期。"]


@pytest.mark.parametrize(
    "text",
    [
        "（1）甲：《题一》，《刊》2019年第3期。\n（2）乙：《题二》，《刊》2020年第1期。",
        "1、甲：《题一》，《刊》2019年第3期。\n2、乙：《题二》，《刊》2020年第1期。",
        "① 甲：《题一》，《刊》2019年第3期。\n② 乙：《题二》，《刊》2020年第1期。",
        "- 甲：《题一》，《刊》2019年第3期。\n- 乙：《题二》，《刊》2020年第1期。",
        "1) 甲：《题一》，《刊》2019年第3期。\n2) 乙：《题二》，《刊》2020年第1期。",
        "1）甲：《题一》，《刊》2019年第3期。\n2）乙：《题二》，《刊》2020年第1期。",
        "甲：《题一》，《刊》2019年第3期。\n\n乙：《题二》，《刊》2020年第1期。",
    ],
)
def test_numbering_and_bullet_styles_split_into_two_entries(text: str) -> None:
    parsed = parse_references(text)
    assert [p.title for p in parsed] == ["题一", "题二"]
    assert [p.year for p in parsed] == [2019, 2020]


def test_a_list_of_strings_is_taken_one_entry_each() -> None:
    parsed = parse_references(references=["甲. 题一[J]. 刊, 2019.", "乙. 题二[D]. 北京: 北京大学, 2020."])
    assert [p.type_code for p in parsed] == ["J", "D"]
    assert parsed[1].source == "北京大学"


def test_gbt_all_capitals_western_names_are_one_author_each() -> None:
    got = parse_reference(
        "WILSON S, CHEN J, ZHANG W, et al. Carbon emissions and driving factors: evidence from China[J]. "
        "Journal of Cleaner Production, 2020, 30(11): 259-273."
    )
    assert (got.authors, got.authors_truncated) == (["WILSON S", "CHEN J", "ZHANG W"], True)


def test_the_apa_ampersand_before_the_last_chinese_author_is_dropped() -> None:
    got = parse_reference("贾楠, 夏思萍, & 白嘉嘉. (2014). 约定违约金酌减规则的法律规制研究. 现代法学, 27(6), 75–99.")
    assert (got.authors, got.authors_truncated) == (["贾楠", "夏思萍", "白嘉嘉"], False)


def test_latin_names_with_initials_or_given_names_are_paired_whatever_the_style() -> None:
    apa = parse_reference("Tanaka, Y., Smith, J. D., & Kim, M.-J. (2024). A title. Journal, 34(5), 1-9.")
    assert apa.authors == ["Tanaka, Y.", "Smith, J. D.", "Kim, M.-J."]
    chicago = parse_reference('Tanaka, Yuki, John Smith, and Emma Johnson. 2024. "A Title." Journal 34 (5): 1–9.')
    assert chicago.authors == ["Tanaka, Yuki", "John Smith", "Emma Johnson"]
    vancouver = parse_reference("Tanaka Y, Smith JD. A title. Journal. 2024;34(5):1–9.")
    assert vancouver.authors == ["Tanaka Y", "Smith JD"]


def test_a_gbt_title_containing_book_title_marks_is_kept_whole() -> None:
    got = parse_reference("秦佑丽, 沈涵艳. 《个人信息保护法》第13条的解释与适用[J]. 知识产权, 2022, 33(9): 8-29.")
    assert (got.style, got.authors, got.title, got.source) == (
        "gbt7714", ["秦佑丽", "沈涵艳"], "《个人信息保护法》第13条的解释与适用", "知识产权",
    )
    assert (got.year, got.volume, got.issue, got.pages) == (2022, "33", "9", "8-29")


@pytest.mark.parametrize(
    ("raw", "title"),
    [
        ("《民法典》第585条违约金酌减规则的适用", "《民法典》第585条违约金酌减规则的适用"),
        ("《约定违约金酌减规则的法律规制研究》", "约定违约金酌减规则的法律规制研究"),
        ("《约定违约金酌减规则的法律规制研究》[J]. 现代法学, 2014.", "约定违约金酌减规则的法律规制研究"),
        ("贾楠. (2014). 《民法典》之前的违约金. 现代法学, 27(6), 75–99.", "《民法典》之前的违约金"),
        ("3）《民法典》第585条违约金酌减规则的适用，郭懿玉等，法学研究2022年第6期", "《民法典》第585条违约金酌减规则的适用"),
    ],
)
def test_only_a_title_wholly_in_book_title_marks_loses_them(raw: str, title: str) -> None:
    assert parse_reference(raw).title == title


def test_a_vancouver_doi_is_not_read_as_pages() -> None:
    got = parse_reference(
        "向玉天, 罗诗俊. 违约金酌减规则的法律规制研究. 法学研究. 2019 Apr 21;24(4):34–49. doi:10.3969/j.cnki.laws.2019.04.001"
    )
    assert (got.source, got.year, got.volume, got.issue, got.pages) == ("法学研究", 2019, "24", "4", "34-49")
    assert got.doi == "10.3969/j.cnki.laws.2019.04.001"


def test_a_doi_after_an_entry_without_pages_gives_no_pages() -> None:
    got = parse_reference("范杰丽. 约定违约金调整规则的法律规制研究[J]. 法学评论, 2026. DOI:10.3969/j.cnki.fxpl.2026.01.001.")
    assert (got.year, got.pages, got.volume) == (2026, None, None)


@pytest.mark.parametrize(
    ("raw", "source", "place"),
    [
        ("任若涛. (2014). 约定违约金酌减规则的解释论展开研究 [博士学位论文]. 武汉大学.", "武汉大学", None),
        ("任若涛. 约定违约金酌减规则的解释论展开研究 [博士学位论文]. [武汉]: 武汉大学; 2014.", "武汉大学", "武汉"),
        ("任若涛. 2014. “约定违约金酌减规则的解释论展开研究.” 博士学位论文, 武汉大学.", "武汉大学", None),
        ("任若涛. 约定违约金酌减规则的解释论展开研究. 2014. 武汉大学, 博士学位论文.", "武汉大学", None),
    ],
)
def test_a_thesis_genre_and_place_are_neither_title_nor_source(raw: str, source: str, place: str | None) -> None:
    got = parse_reference(raw)
    assert (got.title, got.source, got.place, got.year) == ("约定违约金酌减规则的解释论展开研究", source, place, 2014)


def test_a_vancouver_yearbook_source_stops_before_the_year() -> None:
    got = parse_reference("[作者未取得]. 违约金调整规则发展概况. 中国法律年鉴; 2017.")
    assert (got.authors, got.title, got.source, got.year) == ([], "违约金调整规则发展概况", "中国法律年鉴", 2017)


def test_an_mla_entry_yields_title_source_volume_issue_pages_and_doi() -> None:
    got = parse_reference(
        "贾楠, et al. “约定违约金酌减规则的法律规制研究.” 现代法学, vol. 27, no. 6, Nov. 2014, pp. 75–99, "
        "https://doi.org/10.3969/j.cnki.xdfx.2014.06.001."
    )
    assert (got.authors, got.authors_truncated, got.title, got.source) == (
        ["贾楠"], True, "约定违约金酌减规则的法律规制研究", "现代法学",
    )
    assert (got.year, got.volume, got.issue, got.pages) == (2014, "27", "6", "75-99")
    assert got.doi == "10.3969/j.cnki.xdfx.2014.06.001"


def test_a_chicago_entry_yields_year_title_source_volume_issue_pages() -> None:
    got = parse_reference("贾楠, 夏思萍, and 白嘉嘉. 2014. “约定违约金酌减规则的法律规制研究.” 现代法学 27 (6): 75–99.")
    assert (got.authors, got.title, got.source) == (["贾楠", "夏思萍", "白嘉嘉"], "约定违约金酌减规则的法律规制研究", "现代法学")
    assert (got.year, got.volume, got.issue, got.pages) == (2014, "27", "6", "75-99")


def test_a_quoted_phrase_inside_an_apa_title_is_not_an_mla_title() -> None:
    got = parse_reference("张三. (2019). “互联网+”背景下的合同法问题. 法学研究, 41(3), 12–20.")
    assert (got.style, got.title, got.source) == ("apa", "“互联网+”背景下的合同法问题", "法学研究")


@pytest.mark.parametrize("heading", ["参考文献", "参考文献：", "References", "主要参考文献:", "Bibliography"])
def test_a_heading_line_is_not_an_entry(heading: str) -> None:
    text = f"{heading}\n[1] 甲. 题一[J]. 刊, 2019.\n[2] 乙. 题二[J]. 刊, 2020.\n"
    assert [p.title for p in parse_references(text)] == ["题一", "题二"]
    assert split_entries(f"{heading}\n甲. 题一[J]. 刊, 2019.") == ["甲. 题一[J]. 刊, 2019."]


def test_a_journal_name_with_a_colon_is_not_read_as_place_and_publisher() -> None:
    journal = parse_reference("Smith J. A survey. Journal of Physics: Conference Series. 2019;1234(5):1-9.")
    assert (journal.source, journal.place, journal.volume) == ("Journal of Physics: Conference Series", None, "1234")
    book = parse_reference("Smith J. A book. New York: Wiley; 2010.")
    assert (book.source, book.place, book.year) == ("Wiley", "New York", 2010)


@pytest.mark.parametrize(
    ("raw", "title"),
    [
        ("[1] 许涛, 侯超燕. 违约金：从“有没有”到“好不好”[N]. 人民法院报, 2023-02-17(2).", "违约金：从“有没有”到“好不好”"),
        ("任丽然. 数字技术对企业创新的影响——基于断点回归的实证分析[J]. 中国工业经济, 2018, 28(4): 75-84.",
         "数字技术对企业创新的影响——基于断点回归的实证分析"),
        ("王某. (2020). 基于电子背散射衍射（EBSD）的监测优化. 电焊机, 3(2), 1-9.", "基于电子背散射衍射（EBSD）的监测优化"),
        ("王某. “违约金：从‘有没有’到‘好不好’.” 人民法院报, 2020.", "违约金：从‘有没有’到‘好不好’"),
    ],
)
def test_a_title_keeps_its_own_full_width_punctuation(raw: str, title: str) -> None:
    # the entry's structure is read with full-width marks folded, but CNKI's titles carry their own
    got = parse_reference(raw)
    assert got.title == title
    assert title_spellings(title) == [title, title.replace("：", ":").replace("——", "--").replace("（", "(").replace("）", ")")]


def test_a_year_right_after_the_type_code_is_not_the_source() -> None:
    got = parse_reference("违约金举证责任规则的反思与重构[J]. 2019.")
    assert (got.title, got.source, got.year) == ("违约金举证责任规则的反思与重构", None, 2019)


def test_an_unnumbered_list_with_hanging_indents_keeps_each_entry_whole() -> None:
    # an APA list copied from a document: entries apart by blank lines, wrapped lines indented
    text = (
        "Wilson, S., Chen, J., Zhang, W., & Wu, H. (2020). Carbon emissions and driving factors:\n"
        "    evidence from China. Journal of Cleaner Production, 30(11), 259–273.\n"
        "\n"
        "沈霞俊. (2020). 《民法典》实施背景下违约赔偿金酌减规则研究. 法学研究,\n"
        "    25(4), 79–89.\n"
    )
    parsed = parse_references(text)
    assert [(p.title, p.source, p.pages) for p in parsed] == [
        ("Carbon emissions and driving factors: evidence from China", "Journal of Cleaner Production", "259-273"),
        ("《民法典》实施背景下违约赔偿金酌减规则研究", "法学研究", "79-89"),
    ]


def test_an_unnumbered_line_that_stops_mid_reference_is_continued() -> None:
    text = "甲. 题一[J]. 刊名,\n2019, 3(2): 1-5.\n乙. 题二[J]. 刊, 2020.\n"
    assert split_entries(text) == ["甲. 题一[J]. 刊名, 2019, 3(2): 1-5.", "乙. 题二[J]. 刊, 2020."]


def test_a_numbered_entry_wrapped_after_a_full_stop_with_a_hanging_indent_is_continued() -> None:
    text = "1. Tanaka Y, Smith J. A title on things.\n   Journal. 2024;34(5):1–9.\n2. Smith J. Another. J Test. 2020;1(1):1-2."
    assert split_entries(text) == [
        "Tanaka Y, Smith J. A title on things. Journal. 2024;34(5):1–9.", "Smith J. Another. J Test. 2020;1(1):1-2."
    ]


def test_short_labels_between_groups_are_headings_not_entries() -> None:
    text = "中文文献：\n甲. 题一[J]. 刊, 2019.\nBooks:\nSmith J. A book. New York: Wiley; 2010.\n"
    assert split_entries(text) == ["甲. 题一[J]. 刊, 2019.", "Smith J. A book. New York: Wiley; 2010."]


def test_indented_finished_entries_of_an_unnumbered_list_stay_apart() -> None:
    # an indented block copied from its first character: only the first line lost its indent
    text = "甲. 题一[J]. 刊, 2019.\n    乙. 题二[J]. 刊, 2020.\n    丙. 题三[J]. 刊, 2021."
    assert split_entries(text) == ["甲. 题一[J]. 刊, 2019.", "乙. 题二[J]. 刊, 2020.", "丙. 题三[J]. 刊, 2021."]


def test_the_publisher_of_proceedings_is_read_apart_from_their_title() -> None:
    got = parse_reference("陶欣一. 违约金调整规则的反思与重构[C]//某年会论文集. 武汉: 中山大学出版社, 2016: 286-295.")
    assert (got.source, got.place, got.publisher, got.year) == ("某年会论文集", "武汉", "中山大学出版社", 2016)
    unknown = parse_reference("陶欣一. 违约金调整规则的反思与重构[C]//某年会论文集. 武汉: [出版者不详], 2016.")
    assert (unknown.place, unknown.publisher) == ("武汉", None)


@pytest.mark.parametrize(
    ("raw", "source", "year", "pages"),
    [
        ("违约金调整规则发展概况[M]//中国法律年鉴. 2017: 226.", "中国法律年鉴", 2017, "226"),
        ("陶欣一. 违约金调整规则的反思与重构[C]//某年会论文集. 2016: 286-295.", "某年会论文集", 2016, "286-295"),
    ],
)
def test_a_year_and_pages_after_the_container_are_not_a_place_and_a_publisher(
    raw: str, source: str, year: int, pages: str
) -> None:
    got = parse_reference(raw)
    assert (got.source, got.place, got.publisher, got.year, got.pages) == (source, None, None, year, pages)


@pytest.mark.parametrize(
    ("raw", "title", "source"),
    [
        ("全国信息与文献标准化技术委员会. 信息与文献 参考文献著录规则: GB/T 7714—2015[S]. 北京: 中国标准出版社, 2015.",
         "信息与文献 参考文献著录规则", "中国标准出版社"),
        ("ISO. Information and documentation: Guidelines for bibliographic references: ISO 690:2010[S]. Geneva: ISO, 2010.",
         "Information and documentation: Guidelines for bibliographic references", "ISO"),
        ("邓一刚. 全智能节电器: 200610171314.3[P]. 2006-12-13.", "全智能节电器", None),
        ("张三. 一种违约金计算装置: CN109000000A[P]. 2019-05-10.", "一种违约金计算装置", None),
    ],
)
def test_a_standard_s_or_patent_s_number_is_not_part_of_its_title(raw: str, title: str, source: str | None) -> None:
    got = parse_reference(raw)
    assert (got.title, got.source) == (title, source)


def test_a_numbered_entry_broken_after_a_full_stop_before_its_year_is_continued() -> None:
    # copied from a PDF: hard line breaks after the authors' `等.` or the type code's `[J].`
    text = (
        "[1] 范杰丽, 龚芳, 闫丹, 等.\n约定违约金调整规则的法律规制研究[J]. 法学评论, 2026.\n"
        "[2] 崔建. 违约赔偿金中调整规则的体系化构造研究[D].\n上海: 复旦大学, 2022.\n"
        "[3] 甲. 题一[J]. 刊, 2019.\n"
    )
    assert split_entries(text) == [
        "范杰丽, 龚芳, 闫丹, 等. 约定违约金调整规则的法律规制研究[J]. 法学评论, 2026.",
        "崔建. 违约赔偿金中调整规则的体系化构造研究[D]. 上海: 复旦大学, 2022.",
        "甲. 题一[J]. 刊, 2019.",
    ]


def test_a_finished_entry_without_a_year_is_not_continued_by_the_next_line() -> None:
    # statutes, undated books and web pages end without a year: the next unnumbered line is the
    # next entry, not the rest of this one (its year would be taken for this entry's)
    text = (
        "1. 甲. 题一[J]. 刊, 2019.\n"
        "2. 崔建远. 合同法[M]. 北京: 法律出版社.\n"
        "韩世远. 合同法总论[M]. 北京: 法律出版社, 2018.\n"
    )
    assert split_entries(text) == [
        "甲. 题一[J]. 刊, 2019.",
        "崔建远. 合同法[M]. 北京: 法律出版社.",
        "韩世远. 合同法总论[M]. 北京: 法律出版社, 2018.",
    ]


@pytest.mark.parametrize(
    ("raw", "authors"),
    [
        ("姜雨欣 谢国思. 违约金惩罚性功能的困境与出路[J]. 法商研究, 2022, 33(1): 179-187.", ["姜雨欣", "谢国思"]),
        ("姜雨欣 谢国思：《违约金惩罚性功能的困境与出路》，《法商研究》2022年第1期。", ["姜雨欣", "谢国思"]),
        ("欧阳 修, 司马 光. 题名[J]. 刊, 2020.", ["欧阳 修", "司马 光"]),
        ("欧阳 娜娜, 司马 相如. 题名[J]. 刊, 2020.", ["欧阳 娜娜", "司马 相如"]),
    ],
)
def test_chinese_names_apart_by_one_space_are_separate_authors(raw: str, authors: list[str]) -> None:
    assert parse_reference(raw).authors == authors


@pytest.mark.parametrize(
    "raw",
    [
        "张三. 题名[J]. 刊名, 2020(3): 12-15+20.",
        "Smith J. A title. J Test. 2021;5:12-15+20.",
        "Smith, John. “A Title.” J Test, vol. 5, 2021, pp. 12-15+20.",
    ],
)
def test_pages_continued_elsewhere_are_read_whole(raw: str) -> None:
    assert parse_reference(raw).pages == "12-15+20"


@pytest.mark.parametrize("marks", [("【1】", "【2】"), ("〔1〕", "〔2〕"), ("【 1 】", "【 2 】")])
def test_numbers_in_lenticular_and_tortoise_shell_brackets_mark_entries(marks: tuple[str, str]) -> None:
    text = f"{marks[0]}姜雨欣, 谢国思. 违约金惩罚性功能的困境与出路[J]. 法商研究, 2022.\n{marks[1]}崔建. 题名二[D]. 上海: 复旦大学, 2022."
    parsed = parse_references(text)
    assert [(p.authors, p.title) for p in parsed] == [
        (["姜雨欣", "谢国思"], "违约金惩罚性功能的困境与出路"), (["崔建"], "题名二"),
    ]
    assert parse_reference(f"{marks[0]}崔建. 题名二[D]. 上海: 复旦大学, 2022.").title == "题名二"


@pytest.mark.parametrize(
    ("text", "doi"),
    [
        ("[1] 张三. 题名[J]. 刊, 2019, 3(2): 1-5.\nDOI:10.1234/abc.\n[2] 李四. 题名二[J]. 刊, 2020.", "10.1234/abc"),
        ("张三. 题名[J]. 刊, 2019, 3(2): 1-5.\nhttps://doi.org/10.1234/abc\n李四. 题名二[J]. 刊, 2020.", "10.1234/abc"),
        ("1. Smith, J. (2019). A title. J Test, 3(2), 1–5.\n   https://doi.org/10.1234/abc\n2. Li, M. (2020). Two. J, 1, 2.",
         "10.1234/abc"),
    ],
)
def test_a_doi_or_link_wrapped_onto_its_own_line_stays_with_its_entry(text: str, doi: str) -> None:
    parsed = parse_references(text)
    assert len(parsed) == 2 and parsed[0].doi == doi and not parsed[1].unparsable


def test_a_list_of_dois_or_links_one_per_line_is_one_entry_each() -> None:
    text = "doi:10.3969/j.issn.1000-0001.2020.01.001\nhttps://doi.org/10.1000/xyz123\nwww.cnki.net/kcms/detail/abc\n"
    assert split_entries(text) == [
        "doi:10.3969/j.issn.1000-0001.2020.01.001",
        "https://doi.org/10.1000/xyz123",
        "www.cnki.net/kcms/detail/abc",
    ]
    wrapped = "[1] 甲. 题一[J]. 刊, 2019, 5(2): 1-9.\ndoi:10.1000/abc\n[2] 乙. 题二[J]. 刊, 2020.\n"
    assert split_entries(wrapped)[0].endswith("doi:10.1000/abc")


@pytest.mark.parametrize("brk", ["\u2028", "\u2029", "\v", "\f", "\x85"])
def test_every_line_break_a_copy_holds_ends_an_entry(brk: str) -> None:
    # Word's manual line break is \v, a PDF page break \f, web pages and PDF tools give U+2028
    text = f"[1] 贾楠. 约定违约金酌减规则研究[J]. 现代法学, 2014, 27(6): 75-99.{brk}[2] 李华. R&D投入的影响[J]. 管理世界, 2023, 39(2): 11-20."
    assert [p.title for p in parse_references(text)] == ["约定违约金酌减规则研究", "R&D投入的影响"]


def test_invisible_characters_from_a_file_or_pdf_are_not_part_of_an_entry() -> None:
    text = (
        "\ufeff[1] 贾楠，夏思萍．约定违约金酌减规则的法律规\u00ad\n制研究［J］．现代法学，2014，27（6）：75-99．\n"
        "\u200b[2] 李华. R&D投入的影响[J]. 管理世界, 2023, 39(2): 11-20."
    )
    got = parse_references(text)
    assert [(p.title, p.authors) for p in got] == [
        ("约定违约金酌减规则的法律规制研究", ["贾楠", "夏思萍"]),
        ("R&D投入的影响", ["李华"]),
    ]
    assert [p.title for p in parse_references(references=["贾楠. 违约金\u200b研究[J]. 现代法学, 2014."])] == ["违约金研究"]


def test_an_html_entity_in_a_pasted_entry_is_read_as_its_character() -> None:
    [got] = parse_references("[4] 李华. R&amp;D投入对企业创新绩效的影响[J]. 管理世界, 2023, 39(2): 11-20.")
    assert (got.title, got.source) == ("R&D投入对企业创新绩效的影响", "管理世界")
    [kept] = parse_references(references=["张三. 论&para与&parameter的写法[J]. 法学研究, 2020."])
    assert kept.title == "论&para与&parameter的写法"  # only complete references (with `;`) are decoded
