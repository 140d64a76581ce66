"""Record kinds and shapes the golden set lacks, each expected text being what citeproc-js 2.4.63
printed with the official CSL style for the same item (scripts/cite_oracle, as
scripts/gen_citation_goldens.py runs it), unless the test says otherwise."""

from __future__ import annotations

from cnki_mcp.cite import export

PATENT = {"title": "一种违约金计算装置", "authors": ["张三", "李四"], "doc_type": "专利", "source": "北京大学",
          "year": 2019, "date": "2019-05-10"}


def test_gbt_patent_gives_its_day_and_no_publisher() -> None:
    # citeproc-js, GB/T 7714-2015 numeric, type patent with a publisher: `[1] 张三, 李四. 一种违约金计算装置[P]. 2019-05-10.`
    assert export([PATENT], "gbt7714", missing="omit").text == "[1] 张三, 李四. 一种违约金计算装置[P]. 2019-05-10."
    year_only = {**PATENT, "date": None}
    assert export([year_only], "gbt7714", missing="omit").text == "[1] 张三, 李四. 一种违约金计算装置[P]. 2019."
