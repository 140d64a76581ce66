"""Reference shapes beyond the citation styles: web pages ([EB/OL]), a title broken over two
lines, a line holding only a DOI, the product's own Markdown export, and titles that name a
law, a standard or a classic rather than a paper (docs/DESIGN.md §References)."""

from __future__ import annotations

import pytest

from cnki_mcp.cite.refparse import parse_reference


@pytest.mark.parametrize(
    ("raw", "source"),
    [
        ("国务院. 关于印发新一代人工智能发展规划的通知[EB/OL]. (2017-07-20)[2024-01-01]. "
         "http://www.gov.cn/zhengce/content/2017-07/20/content_5211996.htm.", None),
        ("中国互联网络信息中心. 第52次中国互联网络发展状况统计报告[EB/OL]. [2023-08-28]. "
         "https://www.cnnic.net.cn/n4/2023/0828/c88-10829.html.", None),
        ("张三. 如何写论文[EB/OL]. https://example.com/a, 2020-01-02.", None),
        ("王五. 法律数据库[DB/OL]. (2019-01-01). http://x.org", None),
        ("李强. 人工智能发展报告[EB/OL]. 新华网, 2021-03-05. http://www.xinhuanet.com/a.htm.", "新华网"),
    ],
)
def test_a_web_pages_dates_and_link_are_not_its_source(raw: str, source: str | None) -> None:
    assert parse_reference(raw).source == source


def test_a_line_holding_only_a_doi_is_read_as_that_doi() -> None:
    for line in ("https://doi.org/10.1016/S0140-6736(20)30183-5", "doi: 10.1016/S0140-6736(20)30183-5.", "10.1016/S0140-6736(20)30183-5"):
        entry = parse_reference(line)
        assert (entry.style, entry.doi, entry.title, entry.unparsable) == ("doi", "10.1016/s0140-6736(20)30183-5", None, None)


@pytest.mark.parametrize(
    ("line", "fields"),
    [
        ("[违约金酌减规则的法律规制研究](https://doi.org/10.3969/j.cnki.laws.2019.04.001) — 向玉天; 罗诗俊, 法学研究, 2019",
         ("违约金酌减规则的法律规制研究", ["向玉天", "罗诗俊"], "法学研究", 2019, "10.3969/j.cnki.laws.2019.04.001")),
        ("约定违约金酌减规则的解释论展开研究 — 任若涛, 武汉大学, 2014", ("约定违约金酌减规则的解释论展开研究", ["任若涛"], "武汉大学", 2014, None)),
        ("Deep nets \\[v2\\] — Tanaka, Y.; Smith, J., Nature, 2020", ("Deep nets [v2]", ["Tanaka, Y.", "Smith, J."], "Nature", 2020, None)),
        ("《民法典》第585条违约金酌减规则的适用 — 法学研究, 2021", ("《民法典》第585条违约金酌减规则的适用", [], "法学研究", 2021, None)),
    ],
)
def test_a_line_of_the_products_markdown_export_yields_its_fields(line: str, fields: tuple[object, ...]) -> None:
    entry = parse_reference(line)
    assert (entry.title, entry.authors, entry.source, entry.year, entry.doi) == fields


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ("《民法典》", "law"),
        ("《中华人民共和国著作权法（2020年修正）》", "law"),
        ("《计算机软件保护条例》", "law"),
        ("《合同法》", "law"),
        ("《论语》", "classic"),
        ("《史记·项羽本纪》", "classic"),
        ("信息与文献 参考文献著录规则: GB/T 7714—2015[S]. 北京: 中国标准出版社, 2015.", "standard"),
        ("《信息与文献 参考文献著录规则》（GB/T 7714—2015）", "standard"),
        # papers and books about them are papers and books
        ("崔建远. 合同法[M]. 北京: 法律出版社, 2016.", None),
        ("《论民法总则的体系》", None),
        ("杨伯峻. 论语译注[M]. 北京: 中华书局, 2006.", None),
        ("张三. 基于GB/T 7714—2015的著录差错研究[J]. 编辑学报, 2019, 31(2): 1-5.", None),
        ("《一种图像识别方法》", None),
        # an article's title naming a regulation, or a paper on a law's history (review 11 a)
        ("李明. 浅谈新修订的纪律处分条例[J]. 党建研究, 2019(3): 1-4.", None),
        ("张华. 高校科研经费管理办法[J]. 财会通讯, 2019(5): 2-6.", None),
        ("王五. 中华人民共和国成立以来的教育立法. 教育研究, 2001.", None),
        ("《中华人民共和国成立初期的婚姻法》", None),
        ("全国人民代表大会. 中华人民共和国民法典[Z]. 2020.", "law"),
    ],
)
def test_a_law_standard_or_classic_by_its_name_is_not_a_paper(raw: str, kind: str | None) -> None:
    assert parse_reference(raw).not_a_paper == kind


@pytest.mark.parametrize(
    ("raw", "title", "authors", "doi"),
    [
        ("Smith, J. (2019). Teaching writing — what works. Educational Review, 71(2), 1-20. https://doi.org/10.1000/xyz123",
         "Teaching writing — what works", ["Smith, J."], "10.1000/xyz123"),
        ("Smith J, Lee K. Deep learning — a survey of methods. J AI Res. 2020;12(3):45-67. doi:10.1000/abc1",
         "Deep learning — a survey of methods", ["Smith J", "Lee K"], "10.1000/abc1"),
        ("王明. 数字经济 — 理论与实践. 北京: 人民出版社, 2020.", "数字经济 — 理论与实践", ["王明"], None),
    ],
)  # fmt: skip
def test_a_styles_entry_with_a_spaced_dash_in_its_title_is_not_read_as_a_markdown_line(
    raw: str, title: str, authors: list[str], doi: str | None
) -> None:
    """The Markdown export's `题名 — 作者, 来源, 年` took over every entry with " — ": the title
    became `Smith, J. (2019). Teaching writing`, the DOI was lost, and the lookup found nothing."""
    entry = parse_reference(raw)
    assert (entry.style != "markdown", entry.title, entry.authors, entry.doi) == (True, title, authors, doi)


def test_a_title_broken_by_a_line_break_is_joined_as_written() -> None:
    assert parse_reference("《基于深度学习的\n  图像识别研究》").title == "基于深度学习的图像识别研究"
    assert parse_reference("张三. Deep\nlearning for images[J]. 计算机学报, 2020, 1(2): 3-4.").title == "Deep learning for images"
