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
    assert j.sponsor == "中华人民共和国国务院发展研究中心"
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


# --- the navi page of 2023 on: titbox1, journalType2 spans, label/span pairs -------------------

NAVI_2023 = (
    '<dl><dd class="infobox"><h3 class="titbox titbox1">中国工业经济<p>China Industrial Economics</p></h3>'
    '<p class="journalType journalType1"><span>网络首发</span><span>增强出版</span></p>'
    '<p class="journalType journalType2"><span>北大核心</span><span>CSSCI</span><span>AMI权威</span>'
    "<span>AMI集刊核心</span><span>某新评价</span></p></dd></dl>"
    '<div class="listbox"><ul id="JournalBaseInfo">'
    '<li><p class="hostUnit"><label>曾用刊名</label>：<span title="中国工业经济研究;中国工业经济学报">'
    "中国工业经济研究;中国工…</span></p></li>"
    '<li><p class="hostUnit"><label>主办单位</label>：<span>中国社会科学院工业经济研究所</span></p></li>'
    '<li><p class="hostUnit"><label>ISSN</label>：<span>1006-480X</span></p>'
    '<p class="hostUnit"><label>CN</label>：<span>11-3536/F</span></p></li></ul>'
    '<ul id="evaluateInfo"><li><p class="hostUnit"><label>(2023版)复合影响因子</label>：<span>21.679</span></p>'
    '<p class="hostUnit"><label>(2023版)综合影响因子</label>：<span>15.088</span></p></li></ul></div>'
    "<aside><p>SCI 复合影响因子：99.99</p><span>SSCI</span></aside>"
)


def test_navi_2023_layout_field_by_field() -> None:
    j = parse_journal(NAVI_2023, expected_source="中国工业经济学报")
    assert j.name == "中国工业经济"
    assert j.translated_titles == ["China Industrial Economics"]
    assert j.former_titles == ["中国工业经济研究", "中国工业经济学报"]  # the span's title, not its cut text
    assert j.identity_basis == IdentityBasis.FORMER_TITLE
    assert j.sponsor == "中国社会科学院工业经济研究所"
    assert (j.issn, j.cn) == ("1006-480X", "11-3536/F")
    assert (j.composite_if, j.aggregate_if, j.metric_year) == (21.679, 15.088, 2023)
    assert j.state == JournalState.PRESENT


def test_navi_2023_index_tags_are_kept_as_written_even_when_unknown() -> None:
    j = parse_journal(NAVI_2023)
    # 网络首发/增强出版 are publication types (journalType1), not index tags; the aside is a decoy.
    assert j.tiers == ["北大核心", "CSSCI", "AMI权威", "AMI集刊核心", "某新评价"]


def test_navi_2023_without_metrics_or_tags_is_unknown_not_an_error() -> None:
    html = '<dd class="infobox"><h3 class="titbox titbox1">某刊</h3><p class="journalType journalType2"></p></dd>'
    j = parse_journal(html)
    assert (j.name, j.tiers, j.composite_if, j.state) == ("某刊", [], None, JournalState.UNKNOWN)


def test_legacy_layout_reads_sponsor_and_keeps_unknown_tag_spans() -> None:
    html = (
        '<div class="journalInfo"><div class="infobox"><h3 class="titbox">某刊</h3>'
        '<p class="journalType"><span>CSSCI</span><span>某新评价</span></p>'
        "<ul><li><p>主办单位：某大学</p></li></ul></div></div>"
    )
    j = parse_journal(html)
    assert j.tiers == ["CSSCI", "某新评价"]
    assert j.sponsor == "某大学"


@pytest.mark.parametrize(
    "label", ["AMI集刊入库", "AMI集刊核心", "AMI新刊入库", "AMI职院刊扩展", "AMI外文刊权威", "JST", "WJCI", "Pж(AJ)"]
)
def test_tier_vocabulary_covers_the_real_navi_tags(label: str) -> None:
    assert tier_tags(label) == [label]
    assert tier_tags(f"收录：北大核心;{label}") == ["北大核心", label]
