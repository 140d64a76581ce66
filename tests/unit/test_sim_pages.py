"""The simulator's page renderers reproduce the structure of real CNKI pages."""

from __future__ import annotations

import dataclasses
import io
import re

import pytest
from pypdf import PdfReader
from selectolax.lexbor import LexborHTMLParser
from sim_pages_fixtures import (
    BOOK_REC,
    CONF_REC,
    JOURNAL,
    JOURNAL_REC,
    NEWS_REC,
    ONLINE_REC,
    THESIS_REC,
    FakeLinks,
    corpus,
    sections,
)

from cnki_mcp.sim.corpus import SimRecord
from cnki_mcp.sim.links import Visitor
from cnki_mcp.sim.pages.common import header_html
from cnki_mcp.sim.pages.detail import render_detail, render_references_fragment
from cnki_mcp.sim.pages.errors import render_not_found, render_rate_limited, render_server_error
from cnki_mcp.sim.pages.files import caj_bytes, pdf_bytes, render_download_refused, render_html_as_pdf
from cnki_mcp.sim.pages.home import render_home
from cnki_mcp.sim.pages.journal import render_journal
from cnki_mcp.sim.pages.login import render_login
from cnki_mcp.sim.pages.reader import render_reader
from cnki_mcp.sim.pages.verify import render_verify, vericode_fragment
from tests.conftest import read_real

LINKS = FakeLinks()
ANON = Visitor()

# Selectors production relies on for the main detail fields; each must exist in the real capture too.
DETAIL_SELECTORS = [
    "div.doc div.top-first div.top-tip a[href]",
    "div.brief div.wx-tit h1",
    "div.wx-tit h1 span#corr-video",
    "h3#authorpart.author span a sup",
    "h3#authorpart input.authorcode[type=hidden]",
    "div.wx-tit h3.author:not(#authorpart) span a",
    "div.row span.rowtit",
    "span#ChDivSummary.abstract-text[name=ChDivSummary]",
    "input#abstract_text[type=hidden]",
    "p.keywords a",
    "p.funds span span",
    "li.top-space span.rowtit",
    "li.top-space p.clc-code",
    "input#paramdbcode",
    "input#paramdbname",
    "input#paramfilename",
    "input#param-dbcode",
    "input#param-dbname",
    "input#param-filename",
    "input#paramresource",
    "div#DownLoadParts.operate ul.operate-btn li.btn-dlpdf a[target=_blank]",
    "div#DownLoadParts.operate ul.operate-btn li.btn-dlcaj a[target=_blank]",
    "div#DownLoadParts.operate ul.operate-btn li.btn-html a[target=_blank]",
    "div.ecp_personalLoginBox h1",
    "#ecpAccountLogin",
    "#refpartdiv #quoted-references",
    "#refpartdiv #quoted-citations",
]


def tree(text: str) -> LexborHTMLParser:
    return LexborHTMLParser(text)


def detail(record: SimRecord, visitor: Visitor = ANON) -> LexborHTMLParser:
    return tree(render_detail(record, corpus(), LINKS, visitor))


def with_meta(record: SimRecord) -> SimRecord:
    """The record with `extra["meta_tags"]`: the page also carries citation_* meta (the real
    2026 page carries none; the option keeps the parser's meta path covered)."""
    return dataclasses.replace(record, extra={**record.extra, "meta_tags": True})


def metas(t: LexborHTMLParser, name: str) -> list[str]:
    return [m.attributes.get("content") or "" for m in t.css(f'meta[name="{name}"]')]


def ancestor_classes(node) -> str:  # type: ignore[no-untyped-def]
    out = []
    while node is not None:
        out.append((node.attributes or {}).get("class") or "")
        node = node.parent
    return " ".join(out)


def own_text(node) -> str:  # type: ignore[no-untyped-def]
    return "".join(c.text_content or "" for c in node.iter(include_text=True) if c.tag == "-text").strip()


def test_detail_title_meta_and_heading_carry_the_unescaped_title_once_escaped_in_markup() -> None:
    raw = render_detail(JOURNAL_REC, corpus(), LINKS, ANON)
    t = tree(raw)
    assert t.css_first("title").text() == "违约金调整规则研究<b>&amp; - 中国知网"
    h1 = t.css_first("div.doc div.brief div.wx-tit h1")
    assert own_text(h1) == JOURNAL_REC.title
    assert h1.css_first("b") is None and "<b>&amp;amp;" not in raw
    assert metas(t, "citation_title") == []  # the real 2026 page has no citation meta
    t = tree(render_detail(with_meta(JOURNAL_REC), corpus(), LINKS, ANON))
    assert metas(t, "citation_title") == [JOURNAL_REC.title]
    assert metas(t, "citation_author") == ["张三", "李四", "王五"]
    assert metas(t, "citation_journal_title") == ["法学研究"]
    assert metas(t, "citation_doi") == ["10.1234/fx.2024.03.007"]
    assert metas(t, "citation_firstpage") == ["103"] and metas(t, "citation_lastpage") == ["120"]
    assert metas(t, "citation_volume") == ["46"] and metas(t, "citation_issue") == ["03"]


def test_detail_login_widget_heading_comes_before_the_real_title() -> None:
    t = detail(JOURNAL_REC)
    h1s = t.css("h1")
    assert h1s[0].text(strip=True) == "自动登录"
    assert "ecp_personalLoginBox" in ancestor_classes(h1s[0])
    assert "ecp_personalLoginBox" not in ancestor_classes(h1s[-1])
    assert own_text(h1s[-1]) == JOURNAL_REC.title


def test_detail_authors_institutions_and_affiliation_marks() -> None:
    t = detail(JOURNAL_REC)
    links = t.css("h3#authorpart.author > span > a")
    assert [a.text(strip=True) for a in links] == ["张三1", "李四2", "王五1"]
    assert [a.css_first("sup").text() for a in links] == ["1", "2", "1"]
    assert links[0].attributes["href"] == LINKS.author("张三", "北京大学法学院")
    assert len(t.css("h3#authorpart input.authorcode[type=hidden]")) == 3
    insts = t.css("div.wx-tit h3.author:not(#authorpart) > span > a")
    assert [a.text(strip=True) for a in insts] == ["1.北京大学法学院", "2.清华大学法学院"]
    assert metas(t, "citation_author_institution") == []
    assert metas(detail(with_meta(JOURNAL_REC)), "citation_author_institution") == ["北京大学法学院", "清华大学法学院"]


def test_detail_source_line_links_the_journal_with_issue_and_pages() -> None:
    tip = detail(JOURNAL_REC).css_first("div.top-first div.top-tip")
    anchors = tip.css("a")
    assert anchors[0].attributes["href"] == LINKS.journal("法学研究")
    assert anchors[0].text(strip=True) == "法学研究 ."
    text = re.sub(r"\s+", " ", tip.text())
    assert "2024 , 46 (03)" in text and ": 103-120" in text


def test_detail_abstract_keywords_funds_and_field_rows() -> None:
    t = detail(JOURNAL_REC)
    summary = t.css_first("span#ChDivSummary.abstract-text[name=ChDivSummary]")
    assert summary.text() == JOURNAL_REC.abstract
    assert summary.parent.css_first("span.rowtit").text() == "摘要："
    assert t.css_first("input#abstract_text").attributes["value"] == JOURNAL_REC.abstract
    assert [a.text() for a in t.css("p.keywords > a")] == ["违约金;", "损害赔偿;", "合同法;"]
    assert t.css_first("p.funds > span > span").text() == "国家社会科学基金项目(21BFX001)；"
    rows = {li.css_first("span.rowtit").text(): li.css_first("p").text() for li in t.css("ul > li.top-space")}
    assert rows["DOI："] == JOURNAL_REC.doi
    assert rows["专辑："] == "社会科学Ⅰ辑" and rows["专题："] == "民商法"
    assert t.css_first("li.top-space p.clc-code").text() == "D923.6"


def test_detail_hidden_identifiers_and_data_filename() -> None:
    t = detail(JOURNAL_REC)
    for name, value in (("dbcode", "CJFD"), ("dbname", "CJFD2024"), ("filename", "J1")):
        assert t.css_first(f"input#param{name}").attributes["value"] == value
        assert t.css_first(f"input#param-{name}").attributes["value"] == value
    el = t.css_first("[data-filename]")
    assert (el.attributes["data-dbname"], el.attributes["data-filename"]) == ("CJFD2024", "J1")


def test_detail_entries_open_in_new_tabs_at_download_and_reader_links() -> None:
    t = detail(JOURNAL_REC)
    pdf = t.css_first("div#DownLoadParts.operate ul.operate-btn li.btn-dlpdf a")
    caj = t.css_first("div#DownLoadParts.operate ul.operate-btn li.btn-dlcaj a")
    html = t.css_first("div#DownLoadParts.operate ul.operate-btn li.btn-html a")
    assert (pdf.text(strip=True), caj.text(strip=True), html.text(strip=True)) == (
        "PDF下载",
        "CAJ下载",
        "HTML阅读",
    )
    assert pdf.attributes["href"] == LINKS.download("j1", "pdf")
    assert caj.attributes["href"] == LINKS.download("j1", "caj")
    assert html.attributes["href"] == LINKS.reader("j1")
    assert {a.attributes["target"] for a in (pdf, caj, html)} == {"_blank"}


def test_newspaper_detail_shows_excerpt_under_snapshot_label_and_role_suffix() -> None:
    t = detail(NEWS_REC)
    summary = t.css_first("#ChDivSummary")
    assert "正文快照" in summary.parent.text() and "摘要" not in summary.parent.text()
    assert [a.text(strip=True) for a in t.css("#authorpart > span > a")] == ["林倩(文)"]
    assert metas(detail(with_meta(NEWS_REC)), "citation_author") == ["林倩(文)"]
    assert t.css_first("li.btn-html") is None and t.css_first("li.btn-dlpdf a") is not None
    rows = {li.css_first("span.rowtit").text(): li.css_first("p").text() for li in t.css("li.top-space")}
    assert rows["报纸日期："] == "2022-03-01" and rows["版号："] == "003"


def test_thesis_conference_book_and_online_first_fields() -> None:
    thesis = detail(THESIS_REC)
    rows = {li.css_first("span.rowtit").text(): li.css_first("p").text() for li in thesis.css("li.top-space")}
    assert (
        rows["导师："] == "王利明"
        and rows["学位授予单位："] == "中国人民大学"
        and rows["学位类型："] == "博士"
    )
    assert rows["学科专业："] == "民商法学"
    assert thesis.css_first("div.top-tip a").attributes["href"] == LINKS.journal("中国人民大学")
    assert thesis.css_first("input#paramdbcode").attributes["value"] == "CDFD"
    assert thesis.css_first("input#paramresource").attributes["value"] == "DISSERTATION"
    # A single institution is shown without a number and authors carry no mark.
    assert thesis.css_first("#authorpart sup") is None
    assert thesis.css_first("div.wx-tit h3.author:not(#authorpart) a").text(strip=True) == "中国人民大学"

    conf = detail(CONF_REC)
    assert metas(detail(with_meta(CONF_REC)), "citation_conference_title") == ["第十届民法论坛论文集"]
    assert conf.css_first("div.top-tip a").text(strip=True).startswith("第十届民法论坛论文集")
    rows = {li.css_first("span.rowtit").text(): li.css_first("p").text() for li in conf.css("li.top-space")}
    assert rows["会议名称："] == "第十届民法论坛" and rows["会议地点："] == "北京"

    book = detail(BOOK_REC)
    assert book.css_first("li.btn-dlpdf") is None and book.css_first("li.btn-dlcaj") is None
    assert book.css_first("li.btn-html a") is not None
    assert "法律出版社" in book.css_first("div.top-tip").text()

    online = detail(ONLINE_REC)
    assert online.css_first("input#paramdbname").attributes["value"] == "CAPJLAST"
    rows = {li.css_first("span.rowtit").text(): li.css_first("p").text() for li in online.css("li.top-space")}
    assert rows["在线公开时间："].startswith("2025-01-29 09:01")
    assert online.css_first("div.top-tip b.marktip").text() == "网络首发"


def test_references_are_grouped_by_database_with_type_codes() -> None:
    t = tree(render_references_fragment(JOURNAL_REC, corpus(), LINKS, "references"))
    boxes = t.css("div.essayBox")
    titles = [re.sub(r"共.*", "", b.css_first("div.dbTitle").text()) for b in boxes]
    assert titles == [
        "中国博士学位论文全文数据库",
        "中国重要会议论文全文数据库",
        "中国重要报纸全文数据库",
        "其他来源文献",
    ]
    items = [li.text() for li in t.css("ul.ebBox li")]
    assert items[0] == "[1]合同责任论[D].赵六.中国人民大学.2020"
    assert items[1] == "[1]违约责任研讨会论文[C].钱七.第十届民法论坛论文集.2021"
    assert items[2] == "[1]法院审理违约金纠纷[N].林倩.人民法院报.2022-03-01"
    assert items[3] == "[1]自由文本参考文献：某某著作"
    first = t.css_first("ul.ebBox li a")
    assert first.attributes["href"] == LINKS.detail("t1")
    assert boxes[0].css_first("span[name=pcount]").text() == "1"


def test_citing_list_names_the_records_that_cite_this_one() -> None:
    t = tree(render_references_fragment(JOURNAL_REC, corpus(), LINKS, "citing"))
    items = [li.text() for li in t.css("ul.ebBox li")]
    assert items == ["[1]网络首发论文[J].孙八.法学研究.2025"]
    assert "中国学术期刊网络出版总库" in t.css_first("div.dbTitle").text()


def test_detail_page_lists_are_empty_until_the_script_loads_them() -> None:
    # As on the real 2026 page: empty containers, the API host and the page's `v` for the script.
    page = tree(render_detail(JOURNAL_REC, corpus(), LINKS, ANON))
    for tab in ("references", "citations", "coreferences", "cocitations", "secondreferences", "secondcitations"):
        box = page.css_first(f"#refpartdiv #quoted-{tab}")
        assert box is not None and box.text() == ""
        assert page.css_first(f'ul.tpl_lieteratures li[data-id="{tab}"]') is not None
    assert page.css_first("input#apiHost").attributes["value"] == LINKS.kns("/restapi")
    assert page.css_first("input#paramkcmslink").attributes["value"].startswith("v=")
    assert render_references_fragment(CONF_REC, corpus(), LINKS, "references") == ""


def test_script_rendered_detail_raw_html_has_no_content() -> None:
    raw = render_detail(JOURNAL_REC, corpus(), LINKS, ANON, script_rendered=True)
    t = tree(raw)
    root = t.css_first("div#root")
    assert root is not None and root.text() == "" and root.child is None
    for node in t.css("script"):
        node.decompose()
    assert t.css_first("meta[name=citation_title]") is None
    assert "违约金" not in t.body.text() and "违约金" not in raw  # data is \u-escaped inside the script
    assert "</" not in raw.split("<script>", 1)[1].rsplit("</script>", 1)[0]


def test_legacy_journal_page_root_titles_tiers_metrics_and_former_titles() -> None:
    t = tree(render_journal(JOURNAL, corpus(), LINKS, ANON, layout="legacy"))
    root = t.css_first(".journalInfo .infobox")
    assert root.parent.css_matches("div.journalInfo")
    titbox = root.css_first("h3.titbox")
    assert own_text(titbox) == "法学研究"
    assert titbox.css_first("p").text() == "Chinese Journal of Law"
    assert [s.text() for s in root.css("p.journalType > span")] == ["北大核心", "CSSCI", "AMI顶级"]
    texts = [n.text(strip=True) for n in root.css("p, li")]
    assert "曾用刊名：法学研究动态;政法研究" in texts
    root_text = root.text()
    assert re.findall(r"复合影响因子[:：]?\s*([\d.]+)", root_text) == ["16.135"]
    assert re.findall(r"综合影响因子[:：]?\s*([\d.]+)", root_text) == ["9.597"]
    assert "(2025版)复合影响因子：16.135" in texts
    assert "ISSN：1002-896X" in texts and "CN：11-1162/D" in texts
    assert "主办单位：中国社会科学院法学研究所" in texts
    assert "Science" in root_text  # prose inside the root exercises label-sized tier matching


def test_navi_2023_journal_page_has_the_real_layout() -> None:
    t = tree(render_journal(JOURNAL, corpus(), LINKS, ANON, layout="navi-2023"))
    titbox = t.css_first("dd.infobox > h3.titbox.titbox1")
    assert own_text(titbox) == "法学研究" and titbox.css_first("p").text() == "Chinese Journal of Law"
    assert [s.text() for s in t.css("p.journalType.journalType2 > span")] == ["北大核心", "CSSCI", "AMI顶级"]
    pairs = {
        p.css_first("label").text(): p.css_first("span").text()
        for p in t.css("div.listbox ul p.hostUnit")
    }
    assert pairs["曾用刊名"] == "法学研究动态;政法研究"
    assert pairs["主办单位"] == "中国社会科学院法学研究所"
    assert (pairs["ISSN"], pairs["CN"]) == ("1002-896X", "11-1162/D")
    assert pairs["(2025版)复合影响因子"] == "16.135" and pairs["(2025版)综合影响因子"] == "9.597"
    assert t.css_first(".journalInfo") is None


def test_journal_decoy_aside_is_outside_the_root() -> None:
    t = tree(render_journal(JOURNAL, corpus(), LINKS, ANON, layout="legacy"))
    aside = t.css_first("aside")
    assert "99.99" in aside.text() and "SCI" in aside.text()
    assert not {"journalInfo", "infobox"} & set(ancestor_classes(aside).split())
    assert "99.99" not in t.css_first(".journalInfo .infobox").text()


def test_journal_recent_issue_list_links_the_journals_records() -> None:
    t = tree(render_journal(JOURNAL, corpus(), LINKS, ANON))
    anchors = t.css("#CataLogContent dd.row span.name a")
    assert {a.attributes["href"] for a in anchors} == {LINKS.detail("j1"), LINKS.detail("o1")}
    assert t.css_first(".journalInfo .infobox #CataLogContent") is None


def test_reader_toc_entries_match_headings_with_levels_and_bibliography() -> None:
    t = tree(render_reader(JOURNAL_REC, LINKS, ANON, trial=False, lazy=False, slider=False))
    assert t.css_first('meta[name="citation_title"]').attributes["content"] == JOURNAL_REC.title
    body = t.css_first("#XMLContent > #paperRead")
    assert own_text(body.css_first(".js-prefix h1.Chapter")) == JOURNAL_REC.title
    toc = [s.text() for s in t.css(".catalogboxs span.tit")]
    headings = [h.text() for h in body.css("h2, h3, h4")]
    assert toc == headings and len(toc) == 7
    assert [h.tag for h in body.css("h2, h3")][:2] == ["h2", "h3"]
    assert body.css_first("h3#bibliography").text() == "参考文献"
    assert len(body.css("img")) >= 1 and len(body.css("math")) >= 1
    assert "试读结束" not in t.body.text()


def test_reader_trial_shows_abstract_first_section_and_trial_markers() -> None:
    t = tree(render_reader(JOURNAL_REC, LINKS, ANON, trial=True, lazy=False, slider=False))
    body = t.css_first("#paperRead")
    assert "本文讨论违约金的调整规则" in body.text()
    assert [h.text() for h in body.css("h2, h3, h4")] == ["1　第1章 研究内容"]
    assert "试读结束" in body.text() and "购买后阅读全文" in body.text()
    assert len(t.css(".catalogboxs span.tit")) == 7


def test_reader_lazy_keeps_later_sections_out_of_the_raw_dom() -> None:
    raw = render_reader(JOURNAL_REC, LINKS, ANON, trial=False, lazy=True, slider=False)
    t = tree(raw)
    assert len(t.css("#paperRead h2, #paperRead h3")) == 2
    assert "第3章" not in t.css_first("#paperRead").text()
    assert "setTimeout" in raw and "第3章正文" not in raw  # pending sections are escaped script data


def test_reader_slider_shows_the_verification_box_and_posts_to_solve() -> None:
    raw = render_reader(JOURNAL_REC, LINKS, ANON, trial=False, lazy=False, slider=True)
    t = tree(raw)
    box = t.css_first(".read-btn-boxXml")
    assert box.css_first(".slider-wrapper") is not None
    assert "滑动验证" in box.text() and "继续阅读全文" in box.text()
    assert "http://sim.test/verify/solve" in raw and "returnUrl=" in raw
    assert len(t.css("#paperRead h2, #paperRead h3")) == 1


@pytest.mark.parametrize(
    ("visitor", "personal", "institution"),
    [
        (Visitor(), False, False),
        (Visitor(personal_name="PLUGINS"), True, False),
        (Visitor(institution="北京大学"), False, True),
        (Visitor(personal_name="张三", institution="北京大学"), True, True),
    ],
)
def test_header_identity_area_reflects_the_visitor(
    visitor: Visitor, personal: bool, institution: bool
) -> None:
    t = tree(header_html(visitor, LINKS))
    area = t.css_first(".ecp_header_login_area")
    name = t.css_first(".ecp_header_personalName_loginbg")
    unit = t.css_first(".ecp_header_unitName#Ecp_top_orgName") if institution else None
    logout = [a for a in t.css("a") if a.text(strip=True) == "退出登录"]
    if personal:
        assert "display" not in (name.attributes.get("style") or "")
        assert name.text(strip=True) == visitor.personal_name and logout
    else:
        assert "display: none" in (name.attributes.get("style") or "") and not logout
        assert "登录" in area.text() and "注册" in area.text()
    if institution:
        assert unit is not None and unit.text(strip=True) == visitor.institution
    else:
        assert "display: none" in (t.css_first(".ecp_header_unitName").attributes.get("style") or "")


def test_home_page_has_header_identity_search_box_and_login_box() -> None:
    t = tree(render_home(LINKS, ANON))
    assert t.css_first("title").text() == "中国知网"
    # The saved home page's search area: field picker, textarea box, div button.
    assert t.css_first("textarea#txt_SearchText.search-input[name=txt_SearchText]") is not None
    assert t.css_first("#DBFieldBox .sort-default span").text() == "主题"
    assert [a.attributes["value"] for a in t.css("#DBFieldList a")][:3] == ["SU$%=|", "TKA$%=|", "KY$=|"]
    assert t.css_first("div.search-btn") is not None
    assert t.css_first(".home-login #ecpAccountLogin") is not None
    assert t.css_first(".ecp_header_login_area") is not None


def test_login_page_form_posts_credentials_and_return_url() -> None:
    t = tree(render_login("http://sim.test/back?x=1&y=<2>", LINKS, error="用户名或密码错误"))
    form = t.css_first("form")
    assert form.attributes["action"] == "http://sim.test/login/submit"
    assert form.attributes["method"] == "post"
    assert form.css_first("input.ecp_userName").attributes["name"] == "username"
    pw = form.css_first("input[type=password]")
    assert pw.attributes["name"] == "password" and "display" not in (pw.parent.attributes.get("style") or "")
    assert form.css_first("input[name=returnUrl]").attributes["value"] == "http://sim.test/back?x=1&y=<2>"
    assert t.css_first("#ecpAccountLogin").text() == "账号登录" and t.css_first("#ecpSmsLogin") is not None
    assert t.css_first(".ecp_loginErrMsg").text() == "用户名或密码错误"
    assert tree(render_login("u", LINKS)).css_first(".ecp_loginErrMsg").text() == ""


def test_verify_page_matches_the_blockpuzzle_structure() -> None:
    t = tree(render_verify("http://sim.test/kns8s/AdvSearch", LINKS))
    assert t.css_first("title").text() == "安全验证"
    box = t.css_first("div#app div.verifybox")
    assert box.css_first(".verifybox-top").text(strip=True) == "请完成安全验证"
    assert box.css_first(".verify-img-panel img").attributes["src"].startswith("data:image/png;base64,")
    assert box.css_first(".verify-bar-area span.verify-msg").text() == "向右滑动完成验证"
    assert box.css_first(".verify-move-block") is not None
    form = box.css_first("form")
    assert form.attributes["action"] == "http://sim.test/verify/solve" and form.attributes["method"] == "post"
    assert form.css_first("input[name=returnUrl]").attributes["value"] == "http://sim.test/kns8s/AdvSearch"


def test_vericode_fragment_has_the_form_production_looks_for() -> None:
    t = tree(vericode_fragment(LINKS))
    form = t.css_first("form[name=vericodeForm]")
    assert form.attributes["action"] == "http://sim.test/verify/solve"
    assert form.css_first(".verifycode #vericode") is not None
    assert form.css_first(".verifycode #changeVercode") is not None
    assert form.css_first(".verifycode img") is not None
    assert form.css_first("input[name=returnUrl]").attributes["value"] == "http://sim.test/kns8s/AdvSearch"


def test_error_pages_carry_their_markers() -> None:
    assert "页面不存在" in tree(render_not_found(LINKS)).body.text()
    assert "503" in tree(render_server_error(503)).css_first("title").text()
    assert "访问过于频繁" in tree(render_rate_limited()).body.text()
    refused = tree(render_download_refused("余额不足", LINKS, ANON)).body.text(strip=True)
    assert "余额不足" in refused[:300] and "下载失败" in refused[:300]
    fake_pdf = render_html_as_pdf(JOURNAL_REC)
    assert not fake_pdf.startswith(b"%PDF-") and "下载失败" in fake_pdf.decode("utf-8")
    assert "<b>" not in fake_pdf.decode("utf-8")


def test_pdf_is_valid_and_its_chinese_text_is_extractable() -> None:
    record = SimRecord(
        id="p1",
        title=JOURNAL_REC.title,
        type="期刊",
        authors=JOURNAL_REC.authors,
        abstract="在人工智能与大数据背景下的文物传播研究。" * 30,
        fulltext=sections(6),
        source="视听",
        year=2026,
    )
    data = pdf_bytes(record)
    assert data.startswith(b"%PDF-") and b"%%EOF" in data[-2048:]
    reader = PdfReader(io.BytesIO(data), strict=True)
    assert len(reader.pages) >= 3
    text = "".join(p.extract_text() for p in reader.pages).replace("\n", "")
    assert record.title in text and "张三；李四；王五" in text
    assert record.abstract[:40] in text
    assert "第6章正文，关于违约金调整规则的讨论。" in text and "6.1 小节6" in text
    # xref offsets point at the objects they name.
    xref_at = int(data.rsplit(b"startxref", 1)[1].split()[0])
    entries = data[xref_at:].split(b"\n")[3:6]
    for n, entry in enumerate(entries, 1):
        assert data[int(entry[:10]) :].startswith(b"%d 0 obj" % n)


def test_caj_has_a_caj_header_and_content() -> None:
    data = caj_bytes(THESIS_REC)
    assert data[:3] == b"CAJ" and len(data) >= 100
    assert "合同责任论".encode() in data


def test_detail_selectors_exist_in_the_real_2026_capture() -> None:
    real = tree(read_real("detail-kcms2/pluginsx_detail_kcms2_2026.html"))
    ours = detail(JOURNAL_REC)
    missing_ours = [s for s in DETAIL_SELECTORS if ours.css_first(s) is None]
    missing_real = [s for s in DETAIL_SELECTORS if real.css_first(s) is None]
    assert missing_ours == []
    assert missing_real == []
    # Same source-line shape: "刊名 . YYYY (NN) : first-last".
    shape = re.compile(r"\S+ \. \d{4}( , \d+)? \(\d{2}\) : \d+-\d+")
    assert shape.search(re.sub(r"\s+", " ", real.css_first("div.top-tip").text()))
    assert shape.search(re.sub(r"\s+", " ", ours.css_first("div.top-tip").text()))
