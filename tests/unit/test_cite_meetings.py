"""Meeting (会议名称/地点/时间) and journal date handling in the cite package (pure)."""

from __future__ import annotations

import pytest

from cnki_mcp.cite import export, from_paper
from cnki_mcp.cite._text import MONTHS_LONG, MONTHS_MLA, date_text


@pytest.mark.parametrize(
    ("raw", "parts"),
    [
        ("2016-07-13", [[2016, 7, 13]]),
        ("1990-10", [[1990, 10]]),
        ("2016年7月13日", [[2016, 7, 13]]),
        ("2016-07-13/2016-07-15", [[2016, 7, 13], [2016, 7, 15]]),
        ("2016.07.13", [[2016, 7, 13]]),
        ("2016-13-01", [[2016]]),
        ("日期不详", []),
    ],
)
def test_a_conference_date_is_read_into_its_date_parts(raw: str, parts: list[list[int]]) -> None:
    assert from_paper({"doc_type": "会议", "title": "t", "conference_date": raw}).event_date_parts == parts


@pytest.mark.parametrize(
    ("dates", "mdy", "dmy"),
    [
        ([[2016, 7, 13]], "July 13, 2016", "13 July 2016"),
        ([[2016, 9, 13], [2016, 9, 15]], "September 13–15, 2016", "13–15 Sept. 2016"),
        ([[2016, 7, 30], [2016, 8, 2]], "July 30–August 2, 2016", "30 July–2 Aug. 2016"),
        ([[1990, 10]], "October 1990", "Oct. 1990"),
        ([[2016]], "2016", "2016"),
        ([], "", ""),
    ],
)
def test_date_text_as_the_csl_styles_write_it(dates: list[list[int]], mdy: str, dmy: str) -> None:
    assert date_text(dates, MONTHS_LONG) == mdy
    assert date_text(dates, MONTHS_MLA, day_first=True) == dmy


def test_a_grid_date_of_another_year_than_the_issue_is_not_cited() -> None:
    rec = from_paper({"doc_type": "期刊", "title": "t", "source": "s", "year": 2015, "date": "2014-12-30"})
    assert rec.date_parts == [2015]
    assert from_paper({"doc_type": "期刊", "title": "t", "date": "2014-12-30"}).date_parts == [2014, 12, 30]


def test_bibtex_conference_entry_carries_the_meeting_place_and_dates() -> None:
    rec = from_paper({"doc_type": "会议", "title": "某会议论文", "source": "某年会论文集", "conference": "某年会",
                      "conference_place": "中国内蒙古赤峰", "conference_date": "2016-07-13/2016-07-15"})
    text = export([rec], "bibtex").text
    assert "eventtitle = {某年会}" in text
    assert "venue = {中国内蒙古赤峰}" in text
    assert "eventdate = {2016-07-13/2016-07-15}" in text
    month_only = from_paper({"doc_type": "会议", "title": "t", "conference_date": "1990-10"})
    assert "eventdate = {1990-10}" in export([month_only], "bibtex").text


@pytest.mark.parametrize(
    ("extra", "where"),
    [
        ({"place": "武汉"}, "论文集. 武汉: [出版者不详], 2016: 286-295."),
        ({"publisher": "中山大学出版社"}, "论文集. [出版地不详]: 中山大学出版社, 2016: 286-295."),
        ({"place": "武汉", "publisher": "中山大学出版社"}, "论文集. 武汉: 中山大学出版社, 2016: 286-295."),
        ({}, "论文集. 2016: 286-295."),  # neither known: left out, as the official CSL style does
    ],
)
def test_proceedings_with_one_of_place_and_publisher_write_the_other_as_unknown(extra: dict, where: str) -> None:
    # GB/T 7714-2015 §8.4.1.3 / §8.4.2.2: `出版地: 出版者`; a lone place read "武汉, 2016" before
    paper = {"title": "违约金调整规则的反思与重构", "authors": ["陶欣一"], "doc_type": "会议", "source": "论文集",
             "year": 2016, "pages": "286-295", **extra}  # fmt: skip
    text = export([from_paper(paper)], "gbt7714").text
    assert text == f"[1] 陶欣一. 违约金调整规则的反思与重构[C]//{where}"


def test_a_book_without_a_publisher_writes_it_as_unknown_beside_its_place() -> None:
    book = {"title": "数字文物保护概论", "authors": ["廖明丹"], "doc_type": "图书", "place": "北京", "year": 2015}
    assert export([from_paper(book)], "gbt7714", missing="omit").text == (
        "[1] 廖明丹. 数字文物保护概论[M]. 北京: [出版者不详], 2015."
    )
