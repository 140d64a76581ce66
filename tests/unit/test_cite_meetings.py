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
def test_meeting_date_parts(raw: str, parts: list[list[int]]) -> None:
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
