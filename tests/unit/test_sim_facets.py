"""The facet fragment (`/kns8s/group/result`) and the one-box page markup of the simulator."""

from __future__ import annotations

from selectolax.lexbor import LexborHTMLParser

from cnki_mcp.sim.corpus import Corpus, SimAuthor, SimJournal, SimRecord
from cnki_mcp.sim.facets import render_groups
from cnki_mcp.sim.links import Visitor
from cnki_mcp.sim.pages.onebox import render_onebox
from tests.sim_pages_fixtures import FakeLinks

RECS = [
    SimRecord(id="a", title="甲", type="期刊", keywords=("算法", "责任"), year=2021, source="法学研究",
              authors=(SimAuthor("王一", "甲大学"), SimAuthor("李二", "甲大学")), funds=("国家社会科学基金(20BFX001)",)),
    SimRecord(id="b", title="乙", type="硕士", keywords=("算法",), year=2023, source="乙大学",
              authors=(SimAuthor("王一", "乙大学"),)),
]  # fmt: skip
CORPUS = Corpus(records=RECS, journals=[SimJournal("法学研究", tiers=("CSSCI", "北大核心"))])


def _groups(ids: str) -> dict[str, dict[str, list[tuple[str, str]]]]:
    t = LexborHTMLParser(render_groups(ids, RECS, CORPUS))
    out: dict[str, dict[str, list[tuple[str, str]]]] = {}
    for dl in t.css("dl[groupid]"):
        assert dl.css_first("dt.tit b") is not None
        out[dl.attributes["groupid"] or ""] = {
            dd.attributes["field"] or "": [
                (li.css_first("input").attributes["text"] or "", li.css_first("span").text())
                for li in dd.css("li")
            ]
            for dd in dl.css("dd")
        }
    return out


def test_groups_count_the_hits_per_value_most_first_years_newest_first() -> None:
    g = _groups("ZYZT|||CYZT,YE,WXLX,WXLY,AUC|||HWZZ,AFC,FUC,LYBSM")
    assert g["ZYZT|||CYZT"]["ZYZT"] == [("算法", "(2)"), ("责任", "(1)")]
    assert g["ZYZT|||CYZT"]["CYZT"] == []
    assert g["YE"]["YE"] == [("2023", "(1)"), ("2021", "(1)")]
    assert g["WXLX"]["WXLX"] == [("期刊", "(1)"), ("硕士", "(1)")]
    assert g["AUC|||HWZZ"]["AUC"][0] == ("王一", "(2)")
    assert dict(g["AFC"]["AFC"]) == {"甲大学": "(1)", "乙大学": "(1)"}  # one count per record
    assert g["FUC"]["FUC"] == [("国家社会科学基金", "(1)")]
    assert dict(g["LYBSM"]["LYBSM"]) == {"CSSCI": "(1)", "北大核心": "(1)"}


def test_unknown_group_ids_are_left_out_and_uncountable_ones_are_empty() -> None:
    g = _groups("NOPE,CCL")
    assert list(g) == ["CCL"] and g["CCL"]["CCL"] == []


def test_one_box_page_has_the_saved_pages_search_box_picker_and_result_containers() -> None:
    t = LexborHTMLParser(render_onebox(FakeLinks(), Visitor(), kw="数字文物", korder="KY"))
    assert t.css_first("title").text() == "检索-中国知网"
    assert t.css_first("#ModuleSearch input#txt_search.search-input").attributes["value"] == "数字文物"
    sel = t.css_first("#selectfield")
    assert (sel.attributes["korder"], sel.attributes["data-opt"]) == ("KY", "DEFAULT")
    vals = [li.attributes["data-val"] for li in t.css("#ModuleSearch .sort-list li[data-val]")]
    assert vals[:4] == ["SU", "TKA", "KY", "TI"] and "DOI" in vals
    assert t.css_first("#ModuleSearch input.search-btn") is not None
    assert t.css_first("#ModuleSearchResult #briefBox") is not None
    assert len(t.css("#divGroup dl[groupid] dt.tit")) == 11


def test_personal_home_has_the_search_box_and_no_result_area() -> None:
    t = LexborHTMLParser(render_onebox(FakeLinks(), Visitor(), personal_home=True))
    assert t.css_first("title").text() == "个性化首页-中国知网"
    assert t.css_first("#ModuleSearch input#txt_search.search-input") is not None
    assert t.css_first("#ModuleSearch input.search-btn") is not None
    assert t.css_first("#briefBox") is None and t.css_first("#divGroup") is None
    assert "defaultresult/index" in t.css_first("#oneboxConfig").text()


def test_advsearch_open_tab_has_the_first_search_button_and_the_expert_box() -> None:
    from cnki_mcp.sim.advsearch import render_advsearch

    adv = LexborHTMLParser(render_advsearch(FakeLinks(), Visitor()))
    first = adv.css_first("input.btn-search")
    assert first.parent.attributes["class"] == "search-middle"  # this product clicks the first one
    assert "display: none" in (adv.css_first("#majorSearch").attributes.get("style") or "")
    exp = LexborHTMLParser(render_advsearch(FakeLinks(), Visitor(), expert=True))
    first = exp.css_first("input.btn-search")
    assert first.parent.attributes["class"] == "search-buttons"  # cnki-deepsearch clicks the first one
    assert exp.css_first("#majorSearch textarea.textarea-major.majorSearch") is not None
    assert "display: none" in (exp.css_first("#gradeSearch").attributes.get("style") or "")
    assert exp.css_first("#datebox0") is not None and exp.css_first("#datebox1") is not None
