"""Citation data the site has, read by the production parsers and carried into the citation
(issue 10 items 11-13): a journal paper's full date from the grid, a conference paper's meeting
(name, place, date) from its detail page, a thesis's place from the institution table.

On real captures where they exist (grids, the 2026 journal detail page) and on the simulator's
pages for what no capture shows (conference and thesis detail pages)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from cnki_mcp.cite import export, from_paper
from cnki_mcp.cite.sources import cite_source
from cnki_mcp.identity import Paper, merge
from cnki_mcp.models import GridRow, NativeId
from cnki_mcp.parse.detail import parse_detail
from cnki_mcp.parse.grid import parse_grid
from cnki_mcp.sim.corpus import Corpus
from cnki_mcp.sim.grid import GridPage, render_grid
from cnki_mcp.sim.links import Visitor
from cnki_mcp.sim.pages.detail import render_detail
from tests.conftest import read_real
from tests.sim_pages_fixtures import FakeLinks

T0 = datetime(2026, 3, 1, tzinfo=UTC)
GRID_URL = "https://kns.cnki.net/kns8s/brief/grid"
DETAIL_URL = "https://kns.cnki.net/kcms2/article/abstract?v=abc&uniplatform=NZKPT"
CORPUS = Corpus.load()
LINKS = FakeLinks()


def _cite(paper: Paper, fmt: str) -> str:
    return export([from_paper(paper)], fmt, missing="omit").text


# --- item 11: journal dates ------------------------------------------------------------


def test_real_grid_date_gives_month_and_day_to_mla_chicago_and_vancouver() -> None:
    page = parse_grid(read_real("kns8s-grid/pluginsx_search_result_4rows.html"), GRID_URL)
    row = next(r for r in page.rows if r.native.filename == "LVBZ201606020")
    assert (row.doc_type, row.date) == ("期刊", "2016-06-15")
    paper = Paper.from_grid_row(row, T0)
    assert "绿色包装, June 2016." in _cite(paper, "mla")
    assert "绿色包装, June 15." in _cite(paper, "chicago")
    assert "绿色包装. 2016 Jun 15." in _cite(paper, "vancouver")
    assert json.loads(export([from_paper(paper)], "csl_json").text)[0]["issued"] == {"date-parts": [[2016, 6, 15]]}


def test_real_detail_online_date_does_not_replace_the_grid_publication_date() -> None:
    detail = parse_detail(read_real("detail-kcms2/pluginsx_detail_kcms2_2026.html"), DETAIL_URL)
    assert detail.date is None  # the 2026 journal page prints no publication date
    assert detail.online_date == "2026-01-29 09:01"  # "不代表文献的发表时间"
    listed = Paper.from_grid_row(
        GridRow(title=detail.title, authors=[a.name for a in detail.authors], source=detail.source,
                date="2026-02-12", year=2026, doc_type="期刊", native=detail.native),
        T0,
    )
    merged = merge(listed, Paper.from_detail(detail, DETAIL_URL, T0), "detail")
    assert (merged.date, merged.online_date) == ("2026-02-12", "2026-01-29 09:01")
    assert merged.issue == "02" and merged.pages == "103-107"
    assert "视听, no. 02, Feb. 2026, pp. 103–07" in _cite(merged, "mla")


def test_online_date_of_a_paper_in_an_issue_is_not_its_date_when_only_its_detail_page_is_known() -> None:
    # The real page's paper is in an issue (2026 (02): 103-107, CJFDLAST2026, no 网络首发 mark);
    # its 在线公开时间 row says "不代表文献的发表时间", and its grid row gives 2026-01-20.
    detail = parse_detail(read_real("detail-kcms2/pluginsx_detail_kcms2_2026.html"), DETAIL_URL)
    paper = Paper.from_detail(detail, DETAIL_URL, T0)
    assert paper.online_date == "2026-01-29 09:01" and paper.publication_date() is None
    record = from_paper(cite_source(paper))
    assert (record.date, record.date_parts) == (None, [2026])
    assert json.loads(export([record], "csl_json").text)[0]["issued"] == {"date-parts": [[2026]]}
    assert "DA  -" not in export([record], "ris").text


def test_online_date_is_the_date_of_an_online_first_paper_known_only_from_its_detail_page() -> None:
    detail = parse_detail(read_real("detail-kcms2/pluginsx_detail_kcms2_2026.html"), DETAIL_URL)
    online_first = detail.model_copy(
        update={"issue": None, "pages": None, "native": NativeId(dbcode="CAPJ", dbname="CAPJLAST", filename="F1")}
    )
    paper = Paper.from_detail(online_first, DETAIL_URL, T0)
    assert paper.publication_date() == "2026-01-29 09:01"
    assert from_paper(cite_source(paper)).date_parts == [2026, 1, 29]


def test_sim_detail_page_of_a_paper_in_an_issue_shows_an_online_time_that_is_not_its_date() -> None:
    # As on the real page: a journal paper in an issue has an 在线公开时间 row too.
    record = next(r for r in CORPUS.records if r.type == "期刊" and not r.online_first and r.issue and r.date)
    detail = parse_detail(render_detail(record, CORPUS, LINKS, Visitor()), LINKS.detail(record.id))
    assert detail.online_date is not None and detail.online_date[:10] > record.date
    paper = Paper.from_detail(detail, None, T0)
    assert paper.publication_date() is None
    assert from_paper(cite_source(paper)).date_parts == [record.year]


def test_sim_grid_serves_the_journal_date_and_its_detail_page_does_not() -> None:
    record = next(r for r in CORPUS.records if r.type == "期刊" and r.volume and r.date)
    grid = parse_grid(render_grid(GridPage(rows=[record], total=1, page=1, page_size=20, cursor="c"), LINKS),
                      GRID_URL)
    assert grid.rows[0].date == record.date
    detail = parse_detail(render_detail(record, CORPUS, LINKS, Visitor()), LINKS.detail(record.id))
    assert detail.date is None  # as on the real page: no meta tag, no dated row for journals
    merged = merge(Paper.from_grid_row(grid.rows[0], T0), Paper.from_detail(detail, None, T0), "detail")
    year, month, day = (int(p) for p in record.date.split("-"))
    assert from_paper(merged).date_parts == [year, month, day]
    assert f"{year} {(['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'])[month - 1]} {day};" in _cite(
        merged, "vancouver")


def test_sim_grid_online_first_date_has_a_time_and_cites_its_day() -> None:
    record = next(r for r in CORPUS.records if r.online_first and r.date)
    grid = parse_grid(render_grid(GridPage(rows=[record], total=1, page=1, page_size=20, cursor="c"), LINKS),
                      GRID_URL)
    shown = grid.rows[0].date or ""
    assert shown.startswith(f"{record.date} ") and len(shown) == len("2026-06-24 09:14")
    year, month, day = (int(p) for p in (record.date or "").split("-"))
    assert from_paper(Paper.from_grid_row(grid.rows[0], T0)).date_parts == [year, month, day]


# --- item 12: conference meetings ------------------------------------------------------


def test_sim_conference_detail_gives_meeting_name_place_and_date() -> None:
    record = next(r for r in CORPUS.records if r.type == "会议" and r.place)
    detail = parse_detail(render_detail(record, CORPUS, LINKS, Visitor()), LINKS.detail(record.id))
    assert (detail.source, detail.conference, detail.conference_place, detail.conference_date) == (
        record.source, record.conference, record.place, record.date)
    paper = Paper.from_detail(detail, None, T0)
    item = json.loads(export([from_paper(paper)], "csl_json").text)[0]
    year, month, day = (int(p) for p in record.date.split("-"))
    assert item["event-title"] == record.conference
    assert item["event-place"] == record.place
    assert item["event-date"] == {"date-parts": [[year, month, day]]}
    # With pages the paper is published in proceedings: APA and Chicago name no meeting (the
    # official styles' rule). Without pages the meeting is named.
    assert record.place not in _cite(paper, "apa") and record.place not in _cite(paper, "chicago")
    unpaged = paper.model_copy(update={"pages": None})
    assert f"{record.conference}, {record.place}," in _cite(unpaged, "apa")
    assert f"Paper presented at {record.conference}," in _cite(unpaged, "chicago")
    assert f"{record.conference}, " in _cite(unpaged, "mla")


def test_meeting_fields_survive_a_later_grid_row() -> None:
    record = next(r for r in CORPUS.records if r.type == "会议" and r.place)
    detail = parse_detail(render_detail(record, CORPUS, LINKS, Visitor()), LINKS.detail(record.id))
    confirmed = Paper.from_detail(detail, None, T0)
    row = Paper.from_grid_row(GridRow(title=record.title, source=record.source, date=record.date,
                                      native=detail.native), T0)
    merged = merge(confirmed, row, "list")
    assert (merged.conference, merged.conference_place, merged.conference_date) == (
        record.conference, record.place, record.date)


# --- item 13: thesis places ------------------------------------------------------------


def test_sim_thesis_detail_cites_its_institution_city() -> None:
    record = next(r for r in CORPUS.records if r.type == "博士" and r.source == "武汉大学")
    detail = parse_detail(render_detail(record, CORPUS, LINKS, Visitor()), LINKS.detail(record.id))
    paper = Paper.from_detail(detail, None, T0)
    assert f"[D]. 武汉: 武汉大学, {record.year}." in _cite(paper, "gbt7714")

