"""The grid template rewrite (site-rules.md §1.2/§1.3) without a browser: parse, form fields, year filter,
exact-title condition, fingerprint and the cursor cache."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl, urlencode

import pytest

from cnki_mcp.errors import CnkiError
from cnki_mcp.site.backend import GridRequest, SortOrder
from cnki_mcp.site.grid_template import (
    CursorCache,
    build_form,
    exact_title_subject,
    fingerprint,
    parse_template,
)

TEMPLATE_QJ = {
    "Platform": "",
    "QNode": {
        "QGroup": [
            {"Key": "Subject", "Title": "", "Logic": 0, "Items": [], "ChildItems": [{"Key": "anchor"}]},
            {"Key": "ControlGroup", "Title": "", "Logic": 0, "Items": [], "ChildItems": []},
        ]
    },
}
SUBJECT = {"Key": "Subject", "Title": "", "Logic": 0, "Items": [], "ChildItems": [{"Key": "mine"}]}


def post(qj: Any = TEMPLATE_QJ, **extra: str) -> str:
    fields = {
        "boolSearch": "true",
        "QueryJson": json.dumps(qj),
        "pageNum": "1",
        "pageSize": "20",
        "CurPage": "1",
    }
    fields.update(extra)
    return urlencode(fields)


def form_of(body: str) -> dict[str, str]:
    return dict(parse_qsl(body, keep_blank_values=True))


def test_template_url_drops_the_query_string() -> None:
    t = parse_template("https://kns.cnki.net/kns8s/brief/grid?x=1", post(productStr="P"))
    assert t.url == "https://kns.cnki.net/kns8s/brief/grid"
    assert t.has_page_size


@pytest.mark.parametrize(
    "body",
    [
        urlencode({"pageNum": "1"}),
        post(qj={"QNode": {}}),
        post(qj={"QNode": {"QGroup": [{"Key": "ControlGroup"}]}}),
        post(qj={"QNode": {"QGroup": ["Subject"]}}),
        urlencode({"QueryJson": "{not json"}),
    ],
)
def test_template_without_a_subject_group_is_unsupported(body: str) -> None:
    with pytest.raises(CnkiError) as info:
        parse_template("https://kns.cnki.net/kns8s/brief/grid", body)
    assert info.value.code == "QUERY_TEMPLATE_UNSUPPORTED"


def test_first_page_form_replaces_subject_and_sets_the_fact_fields() -> None:
    t = parse_template("https://kns.cnki.net/kns8s/brief/grid", post(productStr="P", SearchFrom="1"))
    req = GridRequest(subject=SUBJECT, anchor="a", sort=SortOrder.CITED_DESC, year_from=2020)
    qj_text, body = build_form(t, req, None)
    form = form_of(body)
    assert form["QueryJson"] == qj_text
    assert (form["pageNum"], form["boolSearch"], form["dstyle"], form["sortField"]) == (
        "1",
        "true",
        "listmode",
        "CF",
    )
    assert (form["sortType"], form["boolSortSearch"], form["sentenceSearch"]) == ("desc", "false", "false")
    assert form["pageSize"] == "50" and form["productStr"] == "P" and form["CurPage"] == "1"
    assert "turnpage" not in form
    qj = json.loads(qj_text)
    assert qj["QNode"]["QGroup"][0] == SUBJECT
    assert qj["SearchFrom"] == 1 and form["SearchFrom"] == "1"
    year = qj["QNode"]["QGroup"][1]["ChildItems"][0]
    assert year["Items"][0] == {
        "Key": ".tit-date-box",
        "Title": "发表时间",
        "Logic": 0,
        "Field": "PT",
        "Operator": 7,
        "Value": "2020-01-01",
        "Value2": "",
        "options": {},
    }
    assert TEMPLATE_QJ["QNode"]["QGroup"][1]["ChildItems"] == []  # the template is never mutated


def test_later_page_sends_the_cursor_and_drops_curpage() -> None:
    t = parse_template("https://kns.cnki.net/kns8s/brief/grid", post(aside="x"))
    qj_text, body = build_form(t, GridRequest(subject=SUBJECT, anchor="a", page=3), "CUR!!")
    form = form_of(body)
    assert "CurPage" not in form
    assert (form["turnpage"], form["aside"], form["boolSearch"], form["pageNum"]) == (
        "CUR!!",
        "",
        "false",
        "3",
    )
    assert json.loads(qj_text)["SearchFrom"] == 4
    with pytest.raises(ValueError):
        build_form(t, GridRequest(subject=SUBJECT, anchor="a", page=2), None)


def test_page_size_is_only_sent_when_the_template_has_one() -> None:
    t = parse_template(
        "https://kns.cnki.net/kns8s/brief/grid", urlencode({"QueryJson": json.dumps(TEMPLATE_QJ)})
    )
    _, body = build_form(t, GridRequest(subject=SUBJECT, anchor="a"), None)
    assert "pageSize" not in form_of(body)


def test_exact_title_subject_has_one_branch_with_a_ti_default_item() -> None:
    subject = exact_title_subject(" 数据 合规 ")
    (branch,) = subject["ChildItems"]
    (item,) = branch["Items"]
    assert subject["Key"] == "Subject"
    assert (item["Field"], item["Operator"], item["Value"]) == ("TI", "DEFAULT", '"数据 合规"')


def test_fingerprint_ignores_the_page_but_not_the_search() -> None:
    a = GridRequest(subject=SUBJECT, anchor="a", page=1)
    assert fingerprint(a) == fingerprint(a.model_copy(update={"page": 4}))
    assert fingerprint(a) != fingerprint(a.model_copy(update={"sort": SortOrder.DATE_DESC}))
    assert fingerprint(a) != fingerprint(a.model_copy(update={"year_to": 2020}))


def test_cursor_cache_is_cleared_when_full() -> None:
    cache = CursorCache(limit=3)
    cache.put("k", 2, "c2")
    cache.put("k", 3, "c3")
    assert cache.highest_below("k", 5) == 3 and cache.highest_below("other", 5) == 1
    cache.put("j", 2, "d2")
    assert len(cache) == 3
    cache.put("j", 3, "d3")
    assert cache.get("k", 2) is None and cache.get("j", 3) == "d3" and len(cache) == 1


def test_cursor_cache_discards_one_rejected_cursor_and_the_fingerprint_ignores_the_cursor() -> None:
    cache = CursorCache()
    cache.put("k", 2, "c2")
    cache.put("k", 3, "c3")
    cache.discard("k", 3)
    cache.discard("k", 9)  # unknown: nothing happens
    assert cache.get("k", 3) is None and cache.get("k", 2) == "c2" and len(cache) == 1
    base = GridRequest(subject={"Key": "Subject"}, anchor="a", page=3)
    assert fingerprint(base) == fingerprint(base.model_copy(update={"cursor": "c3"}))
