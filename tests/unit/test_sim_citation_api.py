"""The simulator's citation JSON API (docs/citation-api.md): session rule, lists by database with
paging, counts, items that lead to the paper's page, tokens that expire."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from http.cookiejar import CookieJar
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from cnki_mcp.sim.citation_api import CITATION_PREFIX, PAGE_SIZE, list_page, related, typed
from cnki_mcp.sim.citation_hub import HUB_ID, hub_records
from cnki_mcp.sim.corpus import Corpus, SimRecord
from cnki_mcp.sim.server import SimServer

CORPUS = Corpus.load()
LONG = "r0306"  # the corpus paper with the longest citing list (19 journal papers cite it)


def _opener(sim: SimServer, *, session: bool = True) -> urllib.request.OpenerDirector:
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
    if session:
        opener.open(sim.links.www("/")).read()  # the home page plants the guest session
    return opener


def _get(opener: urllib.request.OpenerDirector, url: str) -> tuple[int, Any]:
    try:
        with opener.open(url) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def _v(sim: SimServer, record_id: str) -> str:
    return parse_qs(urlsplit(sim.links.detail(record_id)).query)["v"][0]


def _list(sim: SimServer, opener: Any, rid: str, kind: str, code: str, start: int = 1, size: int = 10) -> Any:
    url = sim.url(f"{CITATION_PREFIX}{kind}?v={_v(sim, rid)}&type={code}&start={start}&size={size}")
    return _get(opener, url)


def _meta(item: dict[str, Any], name: str) -> str:
    return next(m["value"] for m in item["metadata"] if m["name"] == name)


def test_a_call_without_the_guest_session_is_a_verification(sim_server: SimServer) -> None:
    status, body = _list(sim_server, _opener(sim_server, session=False), LONG, "citations", "CJFDREF")
    assert status == 403 and body["code"] == -403 and "/verify/home" in body["message"]


def test_a_long_citing_list_is_served_ten_items_a_page(sim_server: SimServer) -> None:
    opener = _opener(sim_server)
    want = typed(related(CORPUS, CORPUS.by_id[LONG], "citations"), "CJFDREF")
    assert len(want) > PAGE_SIZE
    _, first = _list(sim_server, opener, LONG, "citations", "CJFDREF", size=50)  # cut to 10
    _, second = _list(sim_server, opener, LONG, "citations", "CJFDREF", start=11)
    assert first["code"] == 0 and first["data"]["total"] == len(want)
    assert (first["data"]["size"], first["data"]["start"], first["data"]["type"]) == (10, 1, "JOURNAL")
    assert second["data"]["size"] == len(want) - 10 and second["data"]["start"] == 11
    titles = [_meta(i, "TI") for i in first["data"]["data"] + second["data"]["data"]]
    assert titles == [r.title for r in want]  # type: ignore[union-attr]
    # Every citing paper names this one in its references.
    assert all(LONG in r.references for r in want)  # type: ignore[union-attr]


def test_items_carry_metadata_and_a_detail_link_that_opens_the_paper(sim_server: SimServer) -> None:
    opener = _opener(sim_server)
    _, body = _list(sim_server, opener, LONG, "citations", "CJFDREF")
    item = body["data"]["data"][0]
    rec = typed(related(CORPUS, CORPUS.by_id[LONG], "citations"), "CJFDREF")[0]
    assert _meta(item, "FN") == rec.native_filename  # type: ignore[union-attr]
    assert _meta(item, "AU").rstrip(";").split(";") == [a.name for a in rec.authors]  # type: ignore[union-attr]
    assert item["source"]["title"] == rec.source  # type: ignore[union-attr]
    url = next(r["url"] for r in item["relations"] if r["scope"] == "ABSTRACT")
    assert any(r["scope"] == "ZKABSTRACT" for r in item["relations"])
    v = parse_qs(urlsplit(url).query)["v"][0]
    status, counts = _get(opener, sim_server.url(f"{CITATION_PREFIX}quotations/metrics?v={v}"))
    assert status == 200 and {m["name"] for m in counts["data"]} >= {"references", "citations"}


def test_metrics_count_every_list(sim_server: SimServer) -> None:
    _, body = _get(_opener(sim_server), sim_server.url(f"{CITATION_PREFIX}quotations/metrics?v={_v(sim_server, LONG)}"))
    counts = {m["name"]: int(m["value"]) for m in body["data"]}
    rec = CORPUS.by_id[LONG]
    assert counts["citations"] == len(CORPUS.citing(LONG))
    assert counts["references"] == len(rec.references)
    assert set(counts) == {"references", "citations", "co-references", "co-citations",
                           "second-references", "second-citations"}  # fmt: skip


def test_unlinked_references_are_the_free_text_list() -> None:
    own = Corpus(records=[SimRecord(id="a", title="甲", type="期刊", references=("b", "某某著作. 2001"))],
                 journals=[])  # fmt: skip
    own.records.append(SimRecord(id="b", title="乙", type="博士"))
    own.__dict__.pop("by_id", None)
    page = list_page(own, own.by_id["a"], _Links(), "references", "NLNKREF", 1, 10)
    assert page["total"] == 1 and page["type"] == "CRLDENG"
    assert [_meta(i, "TI") for i in page["data"]] == ["某某著作. 2001"] and page["data"][0]["relations"] == []
    thesis = list_page(own, own.by_id["a"], _Links(), "references", "CDFDREF", 1, 10)
    assert [_meta(i, "TI") for i in thesis["data"]] == ["乙"] and thesis["type"] == "DISSERTATION-D"


class _Links:
    def detail(self, record_id: str) -> str:
        return f"http://x/kcms2/article/abstract?v={record_id}"

    def journal(self, name: str) -> str:
        return f"http://x/knavi/detail?p={name}"

    def kns(self, path: str) -> str:
        return "http://x" + path


@pytest.mark.parametrize("v", ["", "not-a-token"])
def test_an_unknown_token_answers_no_data(sim_server: SimServer, v: str) -> None:
    status, body = _get(_opener(sim_server), sim_server.url(f"{CITATION_PREFIX}references?v={v}&type=CJFDREF"))
    assert status == 200 and body["code"] != 0 and body["data"] is None


def test_requests_are_logged_with_their_paging(sim_server: SimServer) -> None:
    _list(sim_server, _opener(sim_server), LONG, "citations", "CJFDREF", start=11)
    (entry,) = sim_server.requests_for(CITATION_PREFIX + "citations")
    assert entry.params["start"] == "11" and entry.params["id"] == LONG and entry.params["served"] == 9


def test_keyword_domains_and_similar_papers_are_bare_lists(sim_server: SimServer) -> None:
    opener = _opener(sim_server)
    _, body = _get(opener, sim_server.url(f"{CITATION_PREFIX}source/domains?v={_v(sim_server, LONG)}"))
    rec = CORPUS.by_id[LONG]
    ref_keywords = {k for r in CORPUS.references_of(rec) for k in r.keywords}
    assert body["code"] == 0 and isinstance(body["data"], list) and body["data"]
    assert {d["item"] for d in body["data"]} <= ref_keywords
    assert all(int(d["metrics"][0]["value"]) >= 1 and d["metrics"][0]["name"] == "PUC" for d in body["data"])
    similar = sim_server.url(f"/restapi/usercenter-api/v1/recommend/similar/articles?articleid={rec.native_filename}&size=5")
    _, body = _get(opener, similar)
    assert 0 < len(body["data"]) <= 5
    assert all(_meta(i, "TI") and i["relations"] for i in body["data"])


def test_only_the_hyphenated_list_names_the_page_sends_are_served(sim_server: SimServer) -> None:
    opener = _opener(sim_server)
    status, _ = _list(sim_server, opener, LONG, "co-references", "CJFDREF")
    assert status == 200
    try:
        opener.open(sim_server.url(f"{CITATION_PREFIX}coreferences?v={_v(sim_server, LONG)}&type=CJFDREF"))
        raise AssertionError("coreferences answered")
    except urllib.error.HTTPError as err:
        assert err.code == 404


def test_the_citation_hub_is_deterministic_and_lists_hundreds_newest_first_in_pages_of_ten() -> None:
    records = hub_records(citers=300, refs_each=40)
    assert records == hub_records(citers=300, refs_each=40)
    corpus = Corpus.load()
    for rec in records:
        corpus.add_record(rec)
    hub = corpus.by_id[HUB_ID]
    citing = related(corpus, hub, "citations")
    assert len(citing) == 300
    years = [r.year for r in citing if isinstance(r, SimRecord)]
    assert years == sorted(years, reverse=True)
    journals = typed(citing, "CJFDREF")
    assert 200 < len(journals) < 300 and typed(citing, "CMFDREF") and typed(citing, "CDFDREF")
    pages = [list_page(corpus, hub, _Links(), "citations", "CJFDREF", s, PAGE_SIZE)
             for s in range(1, len(journals) + 1, PAGE_SIZE)]  # fmt: skip
    assert [p["size"] for p in pages[:-1]] == [PAGE_SIZE] * (len(pages) - 1) and pages[0]["total"] == len(journals)
    assert sum(p["size"] for p in pages) == len(journals)
    # the 被引 count each record carries is its citing list's length
    assert all(r.cited == len(corpus.citing_ids.get(r.id, [])) for r in corpus.records if r.id.startswith("hub"))
