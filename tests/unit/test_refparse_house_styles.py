"""Reference shapes Chinese and English journals print that the common styles do not cover: the
author-date free style of 经济研究 / 管理世界, Harvard, the field order of GB/T 7714's parts of
proceedings and books, lists a PDF copy wrapped, and supplement issues written out
(docs/DESIGN.md §References)."""

from __future__ import annotations

import pytest

from cnki_mcp.cite.refmatch import RecordView, judge
from cnki_mcp.cite.refparse import parse_reference, split_entries


@pytest.mark.parametrize(
    ("raw", "authors", "year"),
    [
        ("贾楠、夏思萍、白嘉嘉，2014：《约定违约金酌减规则的法律规制研究》，《现代法学》第6期。", ["贾楠", "夏思萍", "白嘉嘉"], 2014),
        ("余伟芳，2025a：《数字技术对企业创新的影响》，《经济研究》第7期，第81—90页。", ["余伟芳"], 2025),
        ("贾楠（2014）：《约定违约金酌减规则的法律规制研究》，《现代法学》第6期。", ["贾楠"], 2014),
    ],
)
def test_an_author_date_free_entry_reads_the_year_after_the_authors_as_its_year(
    raw: str, authors: list[str], year: int
) -> None:
    # the year was read as a fourth author (an authors mismatch on a correct entry) and the year as missing
    got = parse_reference(raw)
    assert (got.style, got.authors, got.year) == ("free", authors, year)


@pytest.mark.parametrize(
    ("raw", "source", "place", "publisher"),
    [
        # GB/T 7714-2015 §8.3: `[C]//专著主要责任者. 专著题名. 出版地: 出版者, 年: 页码`
        (
            "江明志, 唐桂. 敏感个人信息处理规则的反思与重构[C]//中国法学会民法学研究会. 中国法学会民法学研究会年会论文集. 武汉, 2020: 183-192.",
            "中国法学会民法学研究会年会论文集", None, None,
        ),
        (
            "张三. 数据合规的若干问题[C]//中国法学会. 2023年民商法年会论文集. 北京: 法律出版社, 2023: 12-20.",
            "2023年民商法年会论文集", "北京", "法律出版社",
        ),
        # without the editor, as before
        (
            "雷琳新. 知识图谱在多模态数据中的推理研究[C]//第二十二届中国计算语言学大会论文集. 哈尔滨: 中国中文信息学会, 2023: 370-374.",
            "第二十二届中国计算语言学大会论文集", "哈尔滨", "中国中文信息学会",
        ),
        # a book's edition and translator are not its source (GB/T 7714-2015 §4.2)
        ("王利明. 合同法研究: 第二卷[M]. 3版. 北京: 中国人民大学出版社, 2015.", "中国人民大学出版社", "北京", None),
        ("昂温G, 昂温P S. 外国出版史[M]. 陈生铮, 译. 北京: 中国书籍出版社, 1988.", "中国书籍出版社", "北京", None),
        ("Smith J. Contract Law[M]. 2nd ed. Oxford: Oxford University Press, 2019.", "Oxford University Press", "Oxford", None),
    ],
)
def test_a_part_of_proceedings_or_a_book_reads_its_container_not_its_editor_or_edition(
    raw: str, source: str, place: str | None, publisher: str | None
) -> None:
    # the editor (中国法学会民法学研究会) or the edition (3版) was read as the source: a correct entry
    # was a source mismatch against CNKI's 会议 record (source: the proceedings) or book (the publisher)
    got = parse_reference(raw)
    assert (got.source, got.place, got.publisher) == (source, place, publisher)


@pytest.mark.parametrize(
    ("raw", "authors", "year", "source", "volume", "issue", "pages"),
    [
        # Chicago author-date without quotation marks (社会学研究 and many Chinese social science journals)
        (
            "贾楠, 夏思萍, 白嘉嘉. 2014. 约定违约金酌减规则的法律规制研究. 现代法学 27(6): 75–99.",
            ["贾楠", "夏思萍", "白嘉嘉"], 2014, "现代法学", "27", "6", "75-99",
        ),
        # Harvard (Elsevier): `Author, Author, year. Title. Journal volume (issue), pages.`
        (
            "贾楠, 夏思萍, 白嘉嘉, 2014. 约定违约金酌减规则的法律规制研究. 现代法学 27 (6), 75–99.",
            ["贾楠", "夏思萍", "白嘉嘉"], 2014, "现代法学", "27", "6", "75-99",
        ),
        (
            "Li, N., Schmidt, A., 2025. A review of compliance programs in data compliance. Computer Law & Security Review 35, 5127–5142.",
            ["Li, N.", "Schmidt, A."], 2025, "Computer Law & Security Review", "35", None, "5127-5142",
        ),
    ],
)
def test_an_author_date_entry_without_quotation_marks_reads_the_journal_apart_from_its_numbers(
    raw: str, authors: list[str], year: int, source: str, volume: str, issue: str | None, pages: str
) -> None:
    # Chicago's source was `现代法学 27(6): 75-99` (a source mismatch on a correct entry); Harvard's
    # entries were unparsable
    got = parse_reference(raw)
    assert got.unparsable is None
    assert (got.authors, got.year, got.source) == (authors, year, source)
    assert (got.volume, got.issue, got.pages) == (volume, issue, pages)


def test_an_unnumbered_list_copied_from_a_pdf_joins_the_lines_it_wrapped() -> None:
    # a PDF copy loses the hanging indent: each wrapped line was an entry of its own (a source
    # `现代法` mismatch, a title cut at `…的实`, and two unparsable halves)
    text = (
        "以下是参考文献\n"  # a line of text before the list, ending without a colon, is no part of an entry
        "贾楠, 夏思萍, 白嘉嘉. 约定违约金酌减规则的法律规制研究[J]. 现代法\n学, 2014, 27(6): 75-99.\n"
        "余伟芳, 龙桂宇, 闫楠超. 数字技术对企业创新的影响——基于断点回归的实\n证分析[J]. 经济研究, 2025, 32(7): 81-90.\n"
        "Li, N., & Schmidt, A. (2025). A review of compliance programs in data\ncompliance. Computer Law & Security Review, 35(5), 5127–5142.\n"
        "崔建远. 合同法[M]. 北京: 法律出版社\n"  # finished without a year or a full stop: the next line is the next entry
        "韩世远. 合同法总论[M]. 北京: 法律出版社, 2018\n"
        "甲. 题一[J]. 刊, 2019\n"
        "王利明. 合同法研究[M]. 北京: 中国人民大学出版社\n"  # nor an entry of another style (APA's year)
        "张三. (2020). 某题. 某刊, 1(2), 3-4.\n"
    )
    assert split_entries(text) == [
        "以下是参考文献",
        "贾楠, 夏思萍, 白嘉嘉. 约定违约金酌减规则的法律规制研究[J]. 现代法学, 2014, 27(6): 75-99.",
        "余伟芳, 龙桂宇, 闫楠超. 数字技术对企业创新的影响——基于断点回归的实证分析[J]. 经济研究, 2025, 32(7): 81-90.",
        "Li, N., & Schmidt, A. (2025). A review of compliance programs in data compliance. Computer Law & Security Review, 35(5), 5127–5142.",
        "崔建远. 合同法[M]. 北京: 法律出版社",
        "韩世远. 合同法总论[M]. 北京: 法律出版社, 2018",
        "甲. 题一[J]. 刊, 2019",
        "王利明. 合同法研究[M]. 北京: 中国人民大学出版社",
        "张三. (2020). 某题. 某刊, 1(2), 3-4.",
    ]


SUPPLEMENT = RecordView(
    record_ref="r", title="论违约金", authors=["张三"], source="法学研究", year=2019, volume="41", issue="S1",
    pages="12-20", doc_type="期刊",
)


@pytest.mark.parametrize(
    ("raw", "verdict", "fields"),
    [
        ("张三. 论违约金[J]. 法学研究, 2019, 41(增刊1): 12-20.", "verified", []),
        ("张三. 论违约金[J]. 法学研究, 2019, 41(Suppl. 1): 12-20.", "verified", []),
        ("张三. (2019). 论违约金. 法学研究, 41(Suppl 1), 12–20.", "verified", []),
        ("张三：《论违约金》，《法学研究》2019年增刊第1期。", "verified", []),
        ("张三. 论违约金[J]. 法学研究, 2019, 41(s1): 12-20.", "verified", []),
        # a wrong volume or supplement number beside a supplement written out
        ("张三. 论违约金[J]. 法学研究, 2019, 45(增刊1): 12-20.", "mismatch", ["volume"]),
        ("张三. 论违约金[J]. 法学研究, 2019, 41(增刊2): 12-20.", "mismatch", ["issue"]),
        ("张三. 论违约金[J]. 法学研究, 2019, 45(Suppl 1): 12-20.", "mismatch", ["volume"]),
    ],
)
def test_a_supplement_issue_written_out_is_compared_as_cnkis_s_number(raw: str, verdict: str, fields: list[str]) -> None:
    # `41(增刊1)` was read as neither volume nor issue: a wrong volume or supplement number was verified
    judged = judge(parse_reference(raw), [SUPPLEMENT])
    assert (judged.verdict, judged.fields) == (verdict, fields)


@pytest.mark.parametrize(
    ("raw", "volume", "issue", "pages"),
    [
        ("贾楠. 约定违约金酌减规则的法律规制研究[J]. 现代法学, 2014, Vol. 27, No. 6, pp. 75-99.", "27", "6", "75-99"),
        ("贾楠. “约定违约金酌减规则的法律规制研究.” 现代法学, Vol. 27, No. 6, 2014, PP. 75-99.", "27", "6", "75-99"),
        ("贾楠. 约定违约金酌减规则的法律规制研究[J]. 现代法学, 2014, 27(6): 75～99.", "27", "6", "75-99"),
        # GB/T 7714-2015 §8.6: a journal without issues, `年, 卷: 页`
        ("贾楠. 约定违约金酌减规则的法律规制研究[J]. 现代法学, 2014, 27: 75-99.", "27", None, "75-99"),
        ("贾楠. 约定违约金酌减规则的法律规制研究[J]. 现代法学, 2014: 75-99.", None, None, "75-99"),
    ],
)
def test_a_volume_and_pages_in_any_case_or_without_an_issue_are_read(
    raw: str, volume: str | None, issue: str | None, pages: str
) -> None:
    # `Vol. 27`, `PP.`, `75～99` and `2014, 27: 75-99` were read as no volume or no pages: the
    # field went unchecked, so a wrong one was verified
    got = parse_reference(raw)
    assert (got.volume, got.issue, got.pages) == (volume, issue, pages)


BOOK = RecordView(
    record_ref="r", title="个人信息保护：理论与实践", authors=["任慧嘉"], source="中国人民大学出版社", year=2020,
    doc_type="图书",
)


@pytest.mark.parametrize(
    ("raw", "verdict"),
    [
        ("[美]任慧嘉. 个人信息保护：理论与实践[M]. 北京: 中国人民大学出版社, 2020.", "verified"),
        ("（美）任慧嘉：《个人信息保护：理论与实践》，中国人民大学出版社2020年版。", "verified"),
        ("[美]张三. 个人信息保护：理论与实践[M]. 北京: 中国人民大学出版社, 2020.", "mismatch"),
    ],
)
def test_an_authors_country_in_brackets_is_not_part_of_the_name(raw: str, verdict: str) -> None:
    # GB/T 7714's `[美]波斯纳` for a translated author: `[美]任慧嘉` was an authors mismatch with 任慧嘉
    assert judge(parse_reference(raw), [BOOK]).verdict == verdict


@pytest.mark.parametrize(
    ("text", "entries"),
    [
        (  # a book without a year, then the next entry: two fields ended already
            "王五. 合同法总论. 北京: 法律出版社\n赵六. 侵权法研究. 中外法学, 2019, 31(2): 1-20.\n",
            ["王五. 合同法总论. 北京: 法律出版社", "赵六. 侵权法研究. 中外法学, 2019, 31(2): 1-20."],
        ),
        (  # a statute without year or type code, then an entry bringing its own type code
            "全国人民代表大会常务委员会. 中华人民共和国个人信息保护法\n张三. 个人信息保护研究[J]. 法学研究, 2020, 42(1): 1-9.\n",
            ["全国人民代表大会常务委员会. 中华人民共和国个人信息保护法", "张三. 个人信息保护研究[J]. 法学研究, 2020, 42(1): 1-9."],
        ),
        (  # a sentence above an APA list
            "Please check the references below. Thanks\nLi, N. (2020). A review of things. Journal of X, 3(2), 1-5.\n",
            ["Please check the references below. Thanks", "Li, N. (2020). A review of things. Journal of X, 3(2), 1-5."],
        ),
        (  # a title cut before its last words is still one entry
            "贾楠. 约定违约金酌减规则之法律\n规制研究. 现代法学, 2014, 27(6): 75-99.\n",
            ["贾楠. 约定违约金酌减规则之法律规制研究. 现代法学, 2014, 27(6): 75-99."],
        ),
        (  # a title cut after its subtitle's colon, or after a number's point
            "贾楠. 约定违约金酌减规则：理论与\n实践. 现代法学, 2014, 27(6): 75-99.\n"
            "张三. 工业4.0背景下的制造\n业转型. 管理世界, 2019, 35(1): 1-9.\n",
            ["贾楠. 约定违约金酌减规则：理论与实践. 现代法学, 2014, 27(6): 75-99.",
             "张三. 工业4.0背景下的制造业转型. 管理世界, 2019, 35(1): 1-9."],
        ),
        (  # an APA author list cut before its last initial
            "Li, N., Wang, X., & Zhang\nY. (2020). Title here. Journal, 3(2), 1-5.\n",
            ["Li, N., Wang, X., & Zhang Y. (2020). Title here. Journal, 3(2), 1-5."],
        ),
    ],
)
def test_a_line_opening_with_the_next_entrys_authors_is_not_joined_to_an_unfinished_one(
    text: str, entries: list[str]
) -> None:
    # the PDF-wrap join took the next entry into a yearless one: the entry after a statute or a
    # book without a year vanished from the check (a fabricated one was never looked up)
    assert split_entries(text) == entries


def test_a_tilde_is_a_page_dash_only_between_digits() -> None:
    doi = "Smith, J. (2020). Title of it. Journal of X, 3(2), 1-5. https://doi.org/10.1002/(SICI)1097-4636~x"
    assert (parse_reference(doi).doi or "").endswith("4636~x")
    assert parse_reference("贾楠. 题名研究[J]. 现代法学, 2014, 27(6): 75～99.").pages == "75-99"
