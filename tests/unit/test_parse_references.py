"""Reference strings and list markup, plus the shared title key."""

from __future__ import annotations

import pytest

from cnki_mcp.errors import CnkiError
from cnki_mcp.parse.keys import title_key
from cnki_mcp.parse.references import parse_reference_list, parse_reference_string


def test_chinese_gbt_citation_is_split_into_fields() -> None:
    r = parse_reference_string("[1]王利明.违约金调整规则研究[J].法学研究,2019,41(03):45-60.")
    assert r.text == "王利明.违约金调整规则研究[J].法学研究,2019,41(03):45-60."
    assert (r.title, r.authors, r.source, r.year, r.doc_type_code) == (
        "违约金调整规则研究",
        ["王利明"],
        "法学研究",
        2019,
        "[J]",
    )


def test_latin_citation_keeps_initials_with_authors() -> None:
    r = parse_reference_string("[2]Smith J, Brown A. Title of paper[J]. Journal, 2020, 12(3): 1-10.")
    assert (r.title, r.authors, r.source, r.year) == (
        "Title of paper",
        ["Smith J", "Brown A"],
        "Journal",
        2020,
    )
    r2 = parse_reference_string("Smith J. A., Brown A., et al. Deep nets[C]. Proc. NIPS, 2017: 5-9.")
    assert r2.authors == ["Smith J. A", "Brown A"] and r2.title == "Deep nets" and r2.doc_type_code == "[C]"


@pytest.mark.parametrize(
    ("text", "code", "title"),
    [
        ("[3]张三,李四.深度学习研究[D].北京:北京大学,2018.", "[D]", "深度学习研究"),
        ("[4]Jones K. Web page[EB/OL]. (2020-01-02)[2021-03-04]. https://x.org/a.", "[EB/OL]", "Web page"),
        ("[5]赵六.数据报道[N].人民日报,2021-05-06(05).", "[N]", "数据报道"),
    ],
)
def test_type_codes_are_recognised(text: str, code: str, title: str) -> None:
    r = parse_reference_string(text)
    assert (r.doc_type_code, r.title) == (code, title)


def test_citation_without_type_code_keeps_its_text_as_title() -> None:
    r = parse_reference_string("[9]某个没有类型标记的条目 2015")
    assert r.doc_type_code is None and r.title == "某个没有类型标记的条目 2015" and r.year == 2015


def test_essaybox_list_in_cnki_list_order() -> None:
    html = (
        "<div class='essayBox'><div class='dbTitle'>中国学术期刊网络出版总库<b>(2)</b></div><ul class='ebBox'>"
        "<li><em>[1]</em><a href='/kcms/detail/detail.aspx?dbcode=CJFQ&amp;dbname=CJFDLAST2019&amp;filename=FXYJ201903004'>"
        "违约金调整规则研究</a>[J].王利明.法学研究.2019(03)</li>"
        "<li><em>[2]</em><a href='/kcms/detail/detail.aspx?dbcode=CJFQ&amp;filename=ZGFX202001002'>合同法总则</a>"
        "[J].韩世远,崔建远.中国法学.2020(01)</li></ul></div>"
        "<div class='essayBox'><div class='dbTitle'>中国博士学位论文全文数据库</div><ul class='ebBox'>"
        "<li><em>[3]</em><a href='/kcms/detail/detail.aspx?dbcode=CDFD&amp;filename=1019001.nh'>违约责任研究</a>"
        "[D].张三.北京大学.2019</li></ul></div>"
    )
    entries = parse_reference_list(html, "https://kns.cnki.net/kcms/detail/frame/list.aspx?reftype=1")
    assert [e.title for e in entries] == ["违约金调整规则研究", "合同法总则", "违约责任研究"]
    assert entries[1].authors == ["韩世远", "崔建远"]
    assert [e.source for e in entries] == ["法学研究", "中国法学", "北京大学"]
    assert [e.doc_type_code for e in entries] == ["[J]", "[J]", "[D]"]
    assert entries[0].native.key == "CJFQ:FXYJ201903004"
    assert entries[0].detail_url is not None and entries[0].detail_url.startswith(
        "https://kns.cnki.net/kcms/detail/"
    )


def test_empty_list_notice_gives_no_entries() -> None:
    assert parse_reference_list("<div>暂无参考文献</div>") == []


def test_unknown_list_markup_is_parser_unsupported() -> None:
    with pytest.raises(CnkiError) as err:
        parse_reference_list("<div><p>changed layout</p></div>")
    assert err.value.code == "PARSER_UNSUPPORTED"


def test_title_key_ignores_width_punctuation_quotes_and_case() -> None:
    assert title_key("《法学 评论》") == title_key("法学评论") == "法学评论"
    assert title_key("让文物“活”起来：AI驱动") == title_key("让文物活起来AI驱动".replace("AI", "ＡＩ"))
    assert title_key("Law Review") == "lawreview"
    assert title_key("大学学报") != title_key("开放大学学报")
    assert title_key(None) == "" and title_key("。，") == ""
