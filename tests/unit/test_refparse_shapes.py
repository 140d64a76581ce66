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
