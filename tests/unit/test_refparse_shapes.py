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
    ],
)
def test_a_law_standard_or_classic_by_its_name_is_not_a_paper(raw: str, kind: str | None) -> None:
    assert parse_reference(raw).not_a_paper == kind


def test_a_title_broken_by_a_line_break_is_joined_as_written() -> None:
    assert parse_reference("《基于深度学习的\n  图像识别研究》").title == "基于深度学习的图像识别研究"
    assert parse_reference("张三. Deep\nlearning for images[J]. 计算机学报, 2020, 1(2): 3-4.").title == "Deep learning for images"
