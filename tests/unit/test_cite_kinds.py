"""Record kinds and shapes the golden set lacks, each expected text being what citeproc-js 2.4.63
printed with the official CSL style for the same item (scripts/cite_oracle, as
scripts/gen_citation_goldens.py runs it), unless the test says otherwise."""

from __future__ import annotations

import json

from cnki_mcp.cite import export

PATENT = {"title": "一种违约金计算装置", "authors": ["张三", "李四"], "doc_type": "专利", "source": "北京大学",
          "year": 2019, "date": "2019-05-10"}


def test_gbt_patent_gives_its_day_and_no_publisher() -> None:
    # citeproc-js, GB/T 7714-2015 numeric, type patent with a publisher: `[1] 张三, 李四. 一种违约金计算装置[P]. 2019-05-10.`
    assert export([PATENT], "gbt7714", missing="omit").text == "[1] 张三, 李四. 一种违约金计算装置[P]. 2019-05-10."
    year_only = {**PATENT, "date": None}
    assert export([year_only], "gbt7714", missing="omit").text == "[1] 张三, 李四. 一种违约金计算装置[P]. 2019."


ENGLISH_IN_CHINESE_JOURNAL = {
    "title": "Carbon emissions and driving factors: evidence from China", "doc_type": "期刊",
    "authors": ["Jie CHEN", "Wei ZHANG", "Hao WU", "Na LI"], "source": "中国人口·资源与环境", "year": 2020,
    "volume": "30", "issue": "11", "pages": "259-273",
}


def test_an_english_paper_in_a_chinese_named_journal_is_cited_as_english() -> None:
    # citeproc-js with `language: en` (the golden generator decides the language by the title)
    expected = {
        "gbt7714": "[1] CHEN J, ZHANG W, WU H, et al. Carbon emissions and driving factors: evidence from China[J]. "
                   "中国人口·资源与环境, 2020, 30(11): 259-273.",
        "apa": "Chen, J., Zhang, W., Wu, H., & Li, N. (2020). Carbon emissions and driving factors: evidence from "
               "China. 中国人口·资源与环境, 30(11), 259–273.",
        "mla": "Chen, Jie, et al. “Carbon Emissions and Driving Factors: Evidence from China.” 中国人口·资源与环境, "
               "vol. 30, no. 11, 2020, pp. 259–73.",
        "chicago": "Chen, Jie, Wei Zhang, Hao Wu, and Na Li. 2020. “Carbon Emissions and Driving Factors: Evidence "
                   "from China.” 中国人口·资源与环境 30 (11): 259–73.",
        "vancouver": "1. Chen J, Zhang W, Wu H, Li N. Carbon emissions and driving factors: evidence from China. "
                     "中国人口·资源与环境. 2020;30(11):259–73.",
    }
    for style, text in expected.items():
        assert export([ENGLISH_IN_CHINESE_JOURNAL], style, missing="omit").text == text, style
    assert "LA  - eng" in export([ENGLISH_IN_CHINESE_JOURNAL], "ris").text


def test_csl_json_gives_organisations_and_middle_dot_names_whole() -> None:
    record = {"title": "中国居民营养与慢性病状况报告", "doc_type": "期刊", "source": "营养学报", "year": 2021,
              "authors": ["中国居民营养与慢性病状况报告编委会", "阿卜杜·热合曼", "欧阳修", "张三"]}
    item = json.loads(export([record], "csl_json").text)[0]
    assert item["author"] == [
        {"literal": "中国居民营养与慢性病状况报告编委会"}, {"literal": "阿卜杜·热合曼"},
        {"family": "欧阳", "given": "修"}, {"family": "张", "given": "三"},
    ]


def test_page_ranges_that_are_not_one_range_are_written_as_given() -> None:
    def styled(pages: str) -> list[str]:
        record = {"title": "T", "authors": ["John Smith"], "doc_type": "外文期刊", "source": "J", "year": 2021,
                  "volume": "5", "pages": pages}
        return [export([record], style, missing="omit").text for style in ("apa", "mla", "chicago", "vancouver")]

    assert styled("12-15+20") == [
        "Smith, J. (2021). T. J, 5, 12-15+20.", "Smith, John. “T.” J, vol. 5, 2021, pp. 12-15+20.",
        "Smith, John. 2021. “T.” J 5: 12-15+20.", "1. Smith J. T. J. 2021;5:12-15+20.",
    ]
    assert styled("12-15,20")[1] == "Smith, John. “T.” J, vol. 5, 2021, pp. 12-15,20."
    assert styled("12+20")[1] == "Smith, John. “T.” J, vol. 5, 2021, p. 12+20."
    # a letter before both numbers is written once where the style shortens the range
    assert styled("S12-S15") == [
        "Smith, J. (2021). T. J, 5, S12–S15.", "Smith, John. “T.” J, vol. 5, 2021, pp. S12–15.",
        "Smith, John. 2021. “T.” J 5: S12–15.", "1. Smith J. T. J. 2021;5:S12–5.",
    ]
