"""The citation-API parser on answers in the shapes public tools and the page's script read
(docs/citation-api.md), and its refusals."""

from __future__ import annotations

import json

import pytest

from cnki_mcp.errors import CnkiError
from cnki_mcp.parse.citations import CitationType, codes_for, parse_citation_list, parse_citation_metrics

BASE = "https://kns.cnki.net/kcms2/article/abstract?v=abc"


def answer(items: list[dict], total: int, start: int = 1) -> str:
    return json.dumps({"code": 0, "message": "", "data": {"total": total, "start": start, "size": len(items),
                                                         "type": "JOURNAL", "data": items}})  # fmt: skip


PAGE_ITEM = {
    "metadata": [{"name": "TI", "value": "数字人文视域下的文物传播"}, {"name": "AU", "value": "王五;赵六;"},
                 {"name": "LY", "value": "图书馆论坛"}, {"name": "YE", "value": "2024"},
                 {"name": "FN", "value": "TSGL202401003"}, {"name": "product", "value": "CJFD"},
                 {"name": "TB", "value": "CJFDLAST2024"}, {"name": "CF", "value": "12"}, {"name": "DFR", "value": "1,024"}],
    "source": {"title": "图书馆论坛", "year": "2024", "issue": "01", "type": "JOURNALS"},
    "relations": [{"scope": "ABSTRACT", "url": "/kcms2/article/abstract?v=xyz&uniplatform=NZKPT"}],
}  # fmt: skip


def test_a_list_page_reads_every_field_the_page_script_shows() -> None:
    page = parse_citation_list(answer([PAGE_ITEM], total=13, start=11), "CJFDREF", BASE)
    assert (page.total, page.start, page.type_code) == (13, 11, "CJFDREF")
    (item,) = page.items
    assert item.title == "数字人文视域下的文物传播" and item.authors == ["王五", "赵六"]
    assert (item.source, item.year, item.filename, item.dbcode, item.dbname) == (
        "图书馆论坛", 2024, "TSGL202401003", "CJFD", "CJFDLAST2024")  # fmt: skip
    assert (item.cited, item.downloads, item.type) == (12, 1024, CitationType.JOURNAL)
    assert item.detail_url == "https://kns.cnki.net/kcms2/article/abstract?v=xyz&uniplatform=NZKPT"
    assert item.key == "TSGL202401003"


def test_authors_objects_and_the_zkabstract_relation_are_read_too() -> None:
    item = {"metadata": [{"name": "TI", "value": "A study"}], "authors": [{"name": "Li Lei"}, {"title": "Han Mei"}],
            "relations": [{"scope": "ZKABSTRACT", "url": "https://kns.cnki.net/kcms2/article/abstract?v=q"}]}  # fmt: skip
    (got,) = parse_citation_list(answer([item], 1), "WWJDREF").items
    assert got.authors == ["Li Lei", "Han Mei"] and got.type is CitationType.FOREIGN
    assert got.detail_url == "https://kns.cnki.net/kcms2/article/abstract?v=q"


def test_an_unlinked_entry_has_no_link_and_a_title_key() -> None:
    item = {"metadata": [{"name": "TI", "value": "某某  著作. 2001"}, {"name": "RBF", "value": "N"}]}
    (got,) = parse_citation_list(answer([item], 1), "NLNKREF").items
    assert got.detail_url is None and got.filename is None and got.key == "T:某某 著作. 2001"


def test_an_answer_without_data_is_an_empty_list() -> None:
    body = json.dumps({"code": 0, "message": "", "data": None})
    assert parse_citation_list(body, "CJFDREF").total == 0


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ('{"code": 1, "message": "参数错误", "data": null}', "LOCATOR_EXPIRED"),
        ("<html><body>出错了</body></html>", "PARSER_UNSUPPORTED"),
        ('{"code": 0, "data": {"data": {"x": 1}}}', "PARSER_UNSUPPORTED"),
        ('{"data": []}', "PARSER_UNSUPPORTED"),
    ],
)
def test_answers_that_are_not_a_list_are_refused_with_a_code(text: str, code: str) -> None:
    with pytest.raises(CnkiError) as err:
        parse_citation_list(text, "CJFDREF")
    assert err.value.code == code


def test_metrics_are_the_six_counts() -> None:
    body = json.dumps({"code": 0, "data": [{"name": "references", "value": "15"}, {"name": "citations", "value": ""},
                                            {"name": "co-citations", "value": "1,203"}]})  # fmt: skip
    counts = parse_citation_metrics(body)
    assert counts["references"] == 15 and counts["citations"] == 0 and counts["co-citations"] == 1203
    assert counts["second-citations"] == 0 and len(counts) == 6
    with pytest.raises(CnkiError) as err:
        parse_citation_metrics(json.dumps({"code": 0, "data": {"total": 3}}))
    assert err.value.code == "PARSER_UNSUPPORTED"


def test_types_select_databases_in_the_page_order() -> None:
    assert codes_for([CitationType.THESIS, CitationType.JOURNAL]) == ["CJFDREF", "CDFDREF", "CMFDREF"]
    assert len(codes_for(None)) == 12
