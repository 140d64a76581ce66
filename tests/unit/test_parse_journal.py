"""Journal parser: root-only metrics, label-sized tier tags, identity by key, 2017 search list."""

from __future__ import annotations

import pytest

from cnki_mcp.errors import CnkiError
from cnki_mcp.models import IdentityBasis, JournalState
from cnki_mcp.parse.journal import parse_journal, parse_journal_search, tier_tags
from tests.conftest import read_real

LAW_REVIEW = (
    '<dl class="journalInfo"><dd class="infobox"><h3 class="titbox">法学评论<p>Law Review</p></h3>'
    "<p>北大核心 AMI核心 CSSCI</p><p>(2025版)复合影响因子：9.597</p><p>(2025版)综合影响因子：4.913</p>"
    "<p>ISSN：1004-1303</p><p>CN：42-1037/D</p></dd></dl><aside>SCI 复合影响因子：99.99</aside>"
)
OPEN_UNIV = (
    '<div class="journalInfo"><div class="infobox"><h3 class="titbox">开放大学学报'
    "<p>Journal of Open University</p></h3><p>曾用刊名：开放大学学报;广播电视大学学报;电大学刊</p>"
    "<p>AMI入库</p></div></div>"
)


def test_law_review_tiers_metrics_and_aside_decoy() -> None:
    j = parse_journal(LAW_REVIEW, expected_source="法学评论")
    assert j.name == "法学评论"
    assert j.translated_titles == ["Law Review"]
    assert j.tiers == ["北大核心", "AMI核心", "CSSCI"]
    assert (j.composite_if, j.aggregate_if, j.metric_year) == (9.597, 4.913, 2025)
    assert (j.issn, j.cn) == ("1004-1303", "42-1037/D")
    assert j.state == JournalState.PRESENT
    assert j.identity_basis == IdentityBasis.CURRENT_TITLE


def test_translated_and_former_titles_confirm_identity() -> None:
    assert (
        parse_journal(LAW_REVIEW, expected_source="law review").identity_basis
        == IdentityBasis.TRANSLATED_TITLE
    )
    j = parse_journal(OPEN_UNIV, expected_source="《广播电视大学学报》")
    assert j.former_titles == ["开放大学学报", "广播电视大学学报", "电大学刊"]
    assert j.identity_basis == IdentityBasis.FORMER_TITLE
    assert j.tiers == ["AMI入库"]


def test_substring_of_a_title_does_not_confirm_identity() -> None:
    with pytest.raises(CnkiError) as err:
        parse_journal(OPEN_UNIV, expected_source="大学学报")
    assert err.value.code == "SOURCE_IDENTITY_UNCONFIRMED"


def test_mismatching_heading_is_rejected() -> None:
    html = '<div class="journalInfo"><div class="infobox"><h1>别的期刊</h1><p>CSSCI</p></div></div>'
    with pytest.raises(CnkiError) as err:
        parse_journal(html, expected_source="法学评论")
    assert err.value.code == "SOURCE_IDENTITY_UNCONFIRMED"
    assert parse_journal(html).name == "别的期刊"


def test_page_without_root_is_schema_unsupported() -> None:
    with pytest.raises(CnkiError) as err:
        parse_journal("<html><body><h1>法学评论</h1><p>CSSCI</p></body></html>")
    assert err.value.code == "SOURCE_SCHEMA_UNSUPPORTED"


@pytest.mark.parametrize(
    "text", ["Science Education", "EIsevier", "论文引用 SCI 研究成果", "SCI2020", "这是一份 CSSCI 期刊的介绍"]
)
def test_prose_and_words_give_no_tier_tags(text: str) -> None:
    assert tier_tags(text) == []
    html = (
        f'<div class="journalInfo"><div class="infobox"><h3 class="titbox">某刊</h3><p>{text}</p></div></div>'
    )
    j = parse_journal(html)
    assert j.tiers == [] and j.state == JournalState.UNKNOWN


def test_labelled_tier_lines_are_accepted() -> None:
    assert tier_tags("收录：CSSCI、北大核心") == ["CSSCI", "北大核心"]
    assert tier_tags("SCI-E; EI来源期刊 / CSCD核心库") == ["SCI-E", "EI来源期刊", "CSCD核心库"]
    assert tier_tags("AMI综合评价权威") == ["AMI综合评价权威"]


def test_tags_inside_headings_are_ignored() -> None:
    html = '<div class="journalInfo"><div class="infobox"><h3 class="titbox">某刊<span>CSSCI</span></h3></div></div>'
    assert parse_journal(html).tiers == []


def test_two_composite_matches_give_no_impact_factor() -> None:
    html = (
        '<div class="journalInfo"><div class="infobox"><h3 class="titbox">某刊</h3>'
        "<p>(2025版)复合影响因子：1.234</p><p>(2024版)复合影响因子：2.345</p></div></div>"
    )
    j = parse_journal(html)
    assert j.composite_if is None
    assert j.metric_year is None


def test_knavi_2017_search_single_hit_field_by_field() -> None:
    rows = parse_journal_search(read_real("journal-navi/journalcrawler_navi_search_guanlishijie_2017.html"))
    assert len(rows) == 1
    j = rows[0]
    assert (j.name, j.translated_titles, j.former_titles) == ("管理世界", ["Management World"], [])
    assert (j.issn, j.cn, j.composite_if, j.aggregate_if) == ("1002-5502", "11-1235/F", 4.6, 3.123)
    assert j.tiers == [] and j.state == JournalState.PRESENT


def test_knavi_2017_search_ten_hits() -> None:
    rows = parse_journal_search(read_real("journal-navi/journalcrawler_navi_search_jingjiguanli_2017.html"))
    assert len(rows) == 10
    first = rows[0]
    assert first.name == "北京经济管理职业学院学报"
    assert first.translated_titles == ["Journal of Beijing Institute of Economics and Management"]
    assert first.former_titles == ["经济管理与干部教育", "北京市经济管理干部学院学报"]
    assert (first.issn, first.cn, first.composite_if, first.aggregate_if) == (
        "2096-1286",
        "10-1374/F",
        0.227,
        0.063,
    )
    no_metrics = next(r for r in rows if r.name == "广东经济管理学院学报")
    assert no_metrics.composite_if is None and no_metrics.state == JournalState.UNKNOWN
    assert no_metrics.former_titles == ["广东省经济管理学院学报", "广东省经济管理干部学院学报", "管理与教学"]
    assert rows[-1].name == "河南工程学院学报(社会科学版)"


def test_search_markup_missing_is_schema_unsupported() -> None:
    with pytest.raises(CnkiError) as err:
        parse_journal_search("<div>改版后的页面</div>")
    assert err.value.code == "SOURCE_SCHEMA_UNSUPPORTED"
