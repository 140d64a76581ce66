"""The simulator over real HTTP (urllib): grid paging, cursors, faults, tokens, login, log, reset."""

from __future__ import annotations

import http.cookiejar
import json
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from cnki_mcp.sim import server as server_module
from cnki_mcp.sim.corpus import Corpus, SimAuthor, SimJournal, SimRecord, SimSection
from cnki_mcp.sim.pages.files import pdf_bytes
from cnki_mcp.sim.server import SimServer

# The real zero and the busy-site block use the same words; they differ in structure.
ZERO_EVIDENCE = re.compile(r'<p class="no-content" value="">')
TEMP_EVIDENCE = re.compile(r'<div class="no-content">')


def _corpus(n: int = 75) -> Corpus:
    recs = [
        SimRecord(
            id=f"t{i:03d}",
            title=f"违约金研究 {i}",
            type="期刊" if i % 5 else "硕士",
            authors=(SimAuthor(f"作者{i}", "某大学"), SimAuthor("王利明")),
            source=f"法学期刊{i % 3}",
            year=2015 + i % 10,
            date=f"{2015 + i % 10}-03-01",
            abstract="违约金的调整规则",
            keywords=("违约金", "合同法"),
            cited=i,
            downloads=i * 1000,
            online_first=i == 1,
            fulltext=(SimSection("一、问题", 1, "正文"),),
        )
        for i in range(n)
    ]
    recs.append(SimRecord(id="other", title="无关", type="期刊", year=2020))
    return Corpus(recs, [SimJournal(name="法学期刊0", code="FXQK")])


@dataclass
class FakeClock:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def sim(clock: FakeClock) -> Iterator[SimServer]:
    with SimServer(_corpus(), clock=clock) as server:
        yield server


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class Browser:
    """A tiny cookie-keeping client (the simulator keys verification, login and sessions by cookie).
    With `home`, it first visits the home page like a person does, which plants the guest session."""

    def __init__(self, home: str | None = None) -> None:
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar), _NoRedirect)
        if home is not None:
            assert self.request(home)[0] == 200

    def request(self, url: str, form: dict[str, Any] | None = None) -> tuple[int, dict[str, str], bytes]:
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        req = urllib.request.Request(url, data=data)
        if data is not None:
            req.add_header("X-Requested-With", "XMLHttpRequest")
        try:
            with self.opener.open(req, timeout=10) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as err:
            return err.code, dict(err.headers), err.read()

    def order(self, url: str) -> tuple[int, dict[str, str], bytes]:
        """A download order, through the 302 to the file host when it answers one (CNKI's order
        URL sends the file from docdown.cnki.net, docs/site-behaviour.md)."""
        status, headers, body = self.request(url)
        if status == 302 and "/docdown/fulltext/download?q=" in headers.get("Location", ""):
            return self.request(headers["Location"])
        return status, headers, body

    def text(self, url: str, form: dict[str, Any] | None = None) -> tuple[int, str]:
        status, _, body = self.request(url, form)
        return status, body.decode("utf-8", "replace")


def visitor(sim: SimServer) -> Browser:
    """A browser that came in through the home page (the first visit every person makes)."""
    return Browser(sim.links.www("/"))


def qjson(value: str, field: str = "TI", op: str = "FUZZY", years: tuple[str, str] | None = None) -> str:
    ctrl: list[dict[str, Any]] = []
    if years:
        ctrl = [{"Key": ".tit-date-box", "Title": "发表时间", "Logic": 0, "ChildItems": [],
                 "Items": [{"Key": ".tit-date-box", "Title": "发表时间", "Logic": 0, "Field": "PT",
                            "Operator": 7, "Value": years[0], "Value2": years[1], "options": {}}]}]  # fmt: skip
    item = {
        "Key": "mcp",
        "Title": "",
        "Logic": 0,
        "Field": field,
        "Operator": op,
        "Value": value,
        "Value2": "",
    }
    return json.dumps(
        {"QNode": {"QGroup": [
            {"Key": "Subject", "Title": "", "Logic": 0, "Items": [],
             "ChildItems": [{"Key": "mcp", "Title": "", "Logic": 0, "Items": [item], "ChildItems": []}]},
            {"Key": "ControlGroup", "Title": "", "Logic": 0, "Items": [], "ChildItems": ctrl},
        ]}},
        ensure_ascii=False,
    )  # fmt: skip


def grid_form(
    value: str = "违约金", page: int = 1, size: int = 20, turnpage: str | None = None, **kw: Any
) -> dict[str, Any]:
    form: dict[str, Any] = {
        "boolSearch": "true" if page == 1 else "false",
        "QueryJson": qjson(value, **kw),
        "pageNum": page,
        "pageSize": size,
        "dstyle": "listmode",
        "sortField": "PT",
        "sortType": "desc",
    }
    if page == 1:
        form["CurPage"] = 1
    if turnpage is not None:
        form["turnpage"] = turnpage
    return form


def challenge_form(verify_url: str) -> dict[str, str]:
    """What the slider page posts once solved: the fields of the URL the site issued."""
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(verify_url).query))
    return {k: query[k] for k in ("captchaType", "ident", "captchaId", "returnUrl")}


def cursor_of(html: str) -> str:
    m = re.search(r'id="hidTurnPage" type="hidden" value="([^"]*)"', html)
    assert m, html[:300]
    return unescape(m.group(1))


def ordinals(html: str) -> list[int]:
    return [int(x) for x in re.findall(r'<td class="seq"><input [^>]*>(\d+)</td>', html)]


def detail_links(html: str) -> list[str]:
    return [unescape(h) for h in re.findall(r'<a class="fz14" target="_blank" href="([^"]+)"', html)]


def test_grid_pages_need_the_cursor_and_ordinals_continue(sim: SimServer) -> None:
    b = visitor(sim)
    grid = sim.url("/kns8s/brief/grid")
    status, p1 = b.text(grid, grid_form())
    assert status == 200
    assert '<span class="pagerTitleCell"><span>共找到</span> <em>75</em> <span>条结果</span></span>' in p1
    assert 'class="countPageMark" data-pagenum="4">1/4<' in p1
    assert ordinals(p1) == list(range(1, 21))
    assert not ZERO_EVIDENCE.search(p1) and not TEMP_EVIDENCE.search(p1)

    assert b.text(grid, grid_form(page=2))[0] == 400  # no cursor
    assert b.text(grid, grid_form(page=2, turnpage="bogus!!"))[0] == 400
    other_cursor = cursor_of(b.text(grid, grid_form("规则", field="AB"))[1])
    assert b.text(grid, grid_form(page=2, turnpage=other_cursor))[0] == 400  # another query's cursor

    status, p2 = b.text(grid, grid_form(page=2, turnpage=cursor_of(p1)))
    assert status == 200 and ordinals(p2) == list(range(21, 41))
    assert ">2/4<" in p2
    assert b.text(grid, grid_form(page=4, turnpage=cursor_of(p2)))[0] == 400  # no jumping ahead
    _, p3 = b.text(grid, grid_form(page=3, turnpage=cursor_of(p2)))
    status, p4 = b.text(grid, grid_form(page=4, turnpage=cursor_of(p3)))
    assert ordinals(p4) == list(range(61, 76))
    assert 'id="PageNext"' not in p4 and 'id="PagePrev"' in p4


def test_the_advsearch_pages_own_click_is_marked_in_the_log_and_a_replay_is_not(sim: SimServer) -> None:
    b = visitor(sim)
    grid = sim.url("/kns8s/brief/grid")
    own = grid_form()
    # the page's JSON.stringify: no spaces after the separators
    page_json = json.dumps(json.loads(own["QueryJson"]), ensure_ascii=False, separators=(",", ":"))
    own["QueryJson"] = page_json.replace('"Key":"mcp"', '"Key":"input[data-tipid=gradetxt-1]"')
    assert b.text(grid, own)[0] == 200
    assert b.text(grid, grid_form())[0] == 200
    assert [e.params.get("page_form") for e in sim.requests_for("/kns8s/brief/grid", "POST")] == [True, None]


def test_cursor_belongs_to_the_previous_page_of_the_same_session(sim: SimServer) -> None:
    grid = sim.url("/kns8s/brief/grid")
    b, other = visitor(sim), visitor(sim)
    _, p1 = b.text(grid, grid_form())
    cursor = cursor_of(p1)
    assert other.request(grid, grid_form(page=2, turnpage=cursor))[0] == 400  # another session
    assert b.request(grid, grid_form("规则", field="AB", page=2, turnpage=cursor))[0] == 400  # another query
    assert b.request(grid, grid_form(page=3, turnpage=cursor))[0] == 400  # not the page it opens
    _, again = b.text(grid, grid_form())  # page 1 once more: a new cursor replaces the old one
    assert b.request(grid, grid_form(page=2, turnpage=cursor))[0] == 400  # stale
    assert b.request(grid, grid_form(page=2, turnpage=cursor_of(again)))[0] == 200
    errors = [e.params.get("error") for e in sim.requests_for("/kns8s/brief/grid") if e.status == 400]
    assert errors == ["cursor of another session", "cursor of another query", "stale cursor", "stale cursor"]


def test_first_visit_plants_the_session_and_a_cookieless_browser_is_challenged(sim: SimServer) -> None:
    grid = sim.url("/kns8s/brief/grid")
    fresh = Browser()
    status, headers, _ = fresh.request(sim.url("/kns8s/AdvSearch"))
    assert status == 302  # straight to a kns8s page without the session: the slider first
    location = headers["Location"]
    assert re.search(r"/verify/home\?captchaType=blockPuzzle&ident=[0-9a-f]{6}&captchaId=[0-9a-f-]{36}"
                     r"&returnUrl=[\w-]{100,}$", location)  # fmt: skip
    status, headers, body = fresh.request(grid, grid_form())
    assert status == 403 and headers["Content-Type"].startswith("application/json")
    answer = json.loads(body)
    assert answer["code"] == -403 and "/verify/home?captchaType=blockPuzzle&ident=" in answer["message"]
    # Only the URL the site issued opens a puzzle; solving it returns where the challenge began.
    made_up = sim.url("/verify/home?captchaType=blockPuzzle&returnUrl=" + urllib.parse.quote(grid))
    assert "verify-move-block" not in fresh.text(made_up)[1]
    assert "verify-move-block" in fresh.text(location)[1]
    status, _, body = fresh.request(sim.url("/verify/solve"), challenge_form(location))
    assert status == 200 and json.loads(body) == {"success": True, "returnUrl": sim.url("/kns8s/AdvSearch")}
    assert {"Ecp_VerifyPass", "KNS2COOKIE"} <= {c.name for c in fresh.jar}
    assert "verify-error" in fresh.text(sim.url("/verify/solve"), challenge_form(location))[1]  # used up
    assert fresh.request(grid, grid_form())[0] == 200
    # The home page plants the session on its own: no slider for a person who came in that way.
    home = visitor(sim)
    session = next(c for c in home.jar if c.name == "KNS2COOKIE")
    assert session.expires is None  # a session cookie: a relaunched browser loses it unless saved
    assert home.request(sim.url("/kns8s/AdvSearch"))[0] == 200
    assert home.request(grid, grid_form())[0] == 200
    forged = Browser()
    forged.jar.set_cookie(http.cookiejar.Cookie(
        0, "KNS2COOKIE", "1.2.3|" + "0" * 32, None, False, "127.0.0.1", False, False, "/", True,
        False, None, True, None, None, {}))  # fmt: skip
    assert forged.request(grid, grid_form())[0] == 403


def test_verification_403_persists_as_json_on_grid_and_pages_until_solved(sim: SimServer) -> None:
    sim.set_scenario({"faults": [{"path": "/kns8s/brief/grid", "kind": "verification_403", "at": [1]}]})
    b = visitor(sim)
    grid = sim.url("/kns8s/brief/grid")
    status, _, body = b.request(grid, grid_form())
    assert status == 403
    verify = json.loads(body)["message"]
    status, _, body = b.request(sim.links.detail("t003"))
    assert status == 403 and json.loads(body)["code"] == -403  # every route, until solved
    assert b.request(sim.url("/verify/solve"), challenge_form(verify))[0] == 200
    assert b.request(grid, grid_form())[0] == 200
    assert b.request(sim.links.detail("t003"))[0] == 200


def test_soft_block_answers_a_confident_zero(sim: SimServer) -> None:
    sim.set_scenario({"faults": [{"path": "/kns8s/brief/grid", "kind": "soft_block", "at": [2]}]})
    b = visitor(sim)
    grid = sim.url("/kns8s/brief/grid")
    _, p1 = b.text(grid, grid_form())
    status, blocked = b.text(grid, grid_form(page=2, turnpage=cursor_of(p1)))
    # Exactly a real zero: count 0 and `p.no-content` (value=""), not the busy-site block.
    assert status == 200 and "<em>0</em>" in blocked and '<p class="no-content" value="">' in blocked
    assert '<div class="no-content">' not in blocked and "result-table-list" not in blocked
    assert [e.fault for e in sim.requests_for("/kns8s/brief/grid")] == [None, "soft_block"]


def test_page_size_is_capped_at_fifty(sim: SimServer) -> None:
    _, html = visitor(sim).text(sim.url("/kns8s/brief/grid"), grid_form(size=50))
    assert len(ordinals(html)) == 50 and ">1/2<" in html
    _, html = visitor(sim).text(sim.url("/kns8s/brief/grid"), grid_form(size=500))
    assert len(ordinals(html)) == 50


def test_grid_rows_have_the_real_markup(sim: SimServer) -> None:
    _, html = visitor(sim).text(
        sim.url("/kns8s/brief/grid"), grid_form("违约金研究 1", op="DEFAULT", size=50)
    )
    start = html.index("<tbody>")
    row = html[start : html.index("</tr>", start)]
    assert 'class="fz14"' in row and "/kcms2/article/abstract?v=" in row
    assert '<b class="marktip">网络首发</b>' in html  # t001 is online-first
    assert 'class="KnowledgeNetLink"' in row and '<td class="source"><p><a' in row
    assert 'class="icon-collect"' in row and 'data-filename="' in row
    assert '<a class="downloadCnt" href="javascript:void(0);">1.9万</a>' in html  # t019: 19000 downloads


def test_single_page_has_no_page_mark_and_zero_results_say_so(sim: SimServer) -> None:
    b = visitor(sim)
    _, one = b.text(sim.url("/kns8s/brief/grid"), grid_form("违约金研究 8", op="DEFAULT"))
    assert "<em>1</em>" in one and "countPageMark" not in one
    _, zero = b.text(sim.url("/kns8s/brief/grid"), grid_form("不存在的题目"))
    assert "<em>0</em>" in zero and ZERO_EVIDENCE.search(zero) and not TEMP_EVIDENCE.search(zero)
    assert "result-table-list" not in zero


def test_year_range_in_control_group_filters_rows(sim: SimServer) -> None:
    _, html = visitor(sim).text(sim.url("/kns8s/brief/grid"), grid_form(years=("2020-01-01", "2020-12-31")))
    dates = re.findall(r'<td class="date">([^<]*)</td>', html)
    assert dates and all(d.startswith("2020") for d in dates)
    assert "<em>7</em>" in html  # i % 10 == 5 for i < 75: 5, 15, ..., 65


def test_malformed_query_json_gets_the_error_block(sim: SimServer) -> None:
    status, html = visitor(sim).text(sim.url("/kns8s/brief/grid"), {"QueryJson": "{oops", "pageNum": 1})
    assert status == 200 and "检索条件格式有误" in html
    assert not ZERO_EVIDENCE.search(html) and not TEMP_EVIDENCE.search(html)


@pytest.mark.parametrize(
    "kind,status",
    [("429", 429), ("500", 500), ("502", 502), ("503", 503), ("not_found", 404), ("forbidden", 403),
     ("cdn_418", 418), ("empty_page", 200)],
)
def test_status_faults_fire_on_schedule(sim: SimServer, kind: str, status: int) -> None:
    sim.set_scenario({"faults": [{"path": "/kns8s/brief/grid", "kind": kind, "at": [2]}]})
    b = visitor(sim)
    codes = [b.request(sim.url("/kns8s/brief/grid"), grid_form())[0] for _ in range(3)]
    assert codes == [200, status, 200]
    faults = [e.fault for e in sim.requests_for("/kns8s/brief/grid")]
    assert faults == [None, kind, None]


def test_every_n_and_window_schedules(sim: SimServer) -> None:
    sim.set_scenario(
        {"faults": [{"path": "/kns8s/brief/grid", "kind": "503", "every": 2, "from": 3, "count": 4}]}
    )
    b = visitor(sim)
    codes = [b.request(sim.url("/kns8s/brief/grid"), grid_form())[0] for _ in range(8)]
    assert codes == [200, 200, 200, 503, 200, 503, 200, 200]


def test_a_probability_fault_schedule_repeats_under_the_same_seed(sim: SimServer) -> None:
    scen = {"seed": 3, "faults": [{"path": "/kns8s/brief/grid", "kind": "429", "probability": 0.5}]}

    def run() -> list[int]:
        sim.set_scenario(scen)
        sim.reset()
        return [visitor(sim).request(sim.url("/kns8s/brief/grid"), grid_form())[0] for _ in range(12)]

    first = run()
    assert first == run() and 429 in first and 200 in first


def test_temporarily_empty_and_pagination_mismatch(sim: SimServer) -> None:
    sim.set_scenario(
        {"faults": [
            {"path": "/kns8s/brief/grid", "kind": "temporarily_empty", "at": [1]},
            {"path": "/kns8s/brief/grid", "kind": "pagination_mismatch", "at": [3]},
        ]}
    )  # fmt: skip
    b = visitor(sim)
    _, empty = b.text(sim.url("/kns8s/brief/grid"), grid_form())
    assert TEMP_EVIDENCE.search(empty) and not ZERO_EVIDENCE.search(empty) and "pagerTitleCell" not in empty
    _, p1 = b.text(sim.url("/kns8s/brief/grid"), grid_form())
    _, wrong = b.text(sim.url("/kns8s/brief/grid"), grid_form(page=2, turnpage=cursor_of(p1)))
    assert ">1/4<" in wrong and ordinals(wrong)[0] == 1


def test_verification_persists_for_the_browser_until_solved(sim: SimServer) -> None:
    sim.set_scenario({"faults": [{"path": "/kns8s/brief/grid", "kind": "verification", "at": [1]}]})
    b, other = visitor(sim), visitor(sim)
    _, frag = b.text(sim.url("/kns8s/brief/grid"), grid_form())
    assert 'name="vericodeForm"' in frag and 'id="vericode"' in frag
    _, again = b.text(sim.url("/kns8s/brief/grid"), grid_form())
    assert 'name="vericodeForm"' in again  # cookie-keyed: still challenged
    assert "result-table-list" in other.text(sim.url("/kns8s/brief/grid"), grid_form())[1]
    # Pages redirect to the verify page while the challenge is pending.
    link = detail_links(other.text(sim.url("/kns8s/brief/grid"), grid_form())[1])[0]
    status, headers, _ = b.request(link)
    assert status == 302 and "/verify/home?captchaType=blockPuzzle&ident=" in headers["Location"]
    _, verify_page = b.text(headers["Location"])
    assert "<title>安全验证</title>" in verify_page
    status, headers, body = b.request(sim.url("/verify/solve"), challenge_form(headers["Location"]))
    assert "Ecp_VerifyPass" in headers.get("Set-Cookie", "") and json.loads(body)["returnUrl"] == link
    assert "result-table-list" in b.text(sim.url("/kns8s/brief/grid"), grid_form())[1]


def test_login_required_and_require_login_for_download(sim: SimServer) -> None:
    sim.set_scenario(
        {"require_login_for": ["download"], "accounts": {"reader": "pw"},
         "faults": [{"path": "/knavi", "kind": "login_required", "at": [1]}]}
    )  # fmt: skip
    b = visitor(sim)
    _, html = b.text(sim.url("/kns8s/brief/grid"), grid_form("违约金研究 2", op="DEFAULT"))
    dl = unescape(re.search(r'href="([^"]*/bar/download/order[^"]*)"', html).group(1))  # type: ignore[union-attr]
    status, headers, _ = b.request(dl)
    assert status == 302 and "/login/?ReturnURL=" in headers["Location"]
    journal = unescape(re.search(r'href="([^"]*/knavi/detail[^"]*)"', html).group(1))  # type: ignore[union-attr]
    assert b.request(journal)[0] == 302
    assert b.request(journal)[0] == 200

    _, bad = b.text(sim.url("/login/submit"), {"username": "reader", "password": "nope", "returnUrl": dl})
    assert "用户名或密码错误" in bad
    status, headers, _ = b.request(
        sim.url("/login/submit"), {"username": "reader", "password": "pw", "returnUrl": dl}
    )
    assert status == 302 and headers["Location"] == dl
    assert any(c.name == "Ecp_LoginStuts" for c in b.jar)
    status, headers, body = b.order(dl)
    assert status == 200 and body.startswith(b"%PDF-") and "attachment" in headers["Content-Disposition"]
    _, adv = b.text(sim.url("/kns8s/AdvSearch"))
    assert "ecp_header_personalName" in adv and "reader" in adv and "退出登录" in adv


def test_scripted_download_faults_refuse_then_serve_html_as_pdf_and_caj_still_downloads(sim: SimServer) -> None:
    sim.set_scenario(
        {"faults": [{"path": "/bar/download", "kind": "download_refused", "at": [1], "reason": "余额不足"},
                    {"path": "/bar/download", "kind": "html_as_pdf", "at": [2]}]}
    )  # fmt: skip
    b = visitor(sim)
    dl = sim.links.download("t003", "pdf")
    status, _, body = b.order(dl)
    assert status == 200 and "余额不足" in body.decode()
    status, headers, body = b.order(dl)
    assert headers["Content-Type"] == "application/pdf" and not body.startswith(b"%PDF-")
    status, headers, body = b.order(sim.links.download("t003", "caj"))
    assert (
        status == 200
        and headers["Content-Disposition"].startswith("attachment")
        and ".caj" in headers["Content-Disposition"]
    )


def test_a_truncated_answer_announces_its_whole_length_and_drops_the_connection_halfway(
    sim: SimServer,
) -> None:
    sim.set_scenario({"faults": [{"path": "/bar/download", "kind": "truncated", "at": [1]}]})
    b = visitor(sim)
    status, headers, _ = b.request(sim.links.download("t003", "pdf"))
    assert status == 302  # the order leads to the file host, where the answer is cut
    url = headers["Location"]
    parts = urllib.parse.urlsplit(url)
    cookies = "; ".join(f"{c.name}={c.value}" for c in b.jar)
    whole = pdf_bytes(sim.corpus.by_id["t003"])
    with socket.create_connection((sim.host, sim.port), timeout=10) as conn:
        conn.sendall(
            f"GET {parts.path}?{parts.query} HTTP/1.1\r\nHost: {parts.netloc}\r\nCookie: {cookies}\r\n\r\n".encode()
        )
        raw = b""
        while chunk := conn.recv(65536):  # ends when the simulator drops the connection
            raw += chunk
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"Content-Length: %d" % len(whole) in head
    assert body == whole[: len(whole) // 2]
    assert b.request(url)[2] == whole  # a resumption of the same file is whole (`at`)
    assert [e.fault for e in sim.requests_for("/bar/download/order")] == ["truncated"]
    assert [e.fault for e in sim.requests_for("/docdown/")] == ["truncated", None]


def test_a_download_order_leads_to_the_file_host_and_a_resumption_asks_the_file_not_the_order(
    sim: SimServer,
) -> None:
    # CNKI's order URL answers a 302 to docdown.cnki.net/docdown/fulltext/download?q=… (public
    # evidence in docs/site-behaviour.md); it sent the file itself, so every resumption of a cut
    # download was a new order (one click looked like up to six)
    b = visitor(sim)
    status, headers, _ = b.request(sim.links.download("t003", "pdf"))
    assert status == 302 and "/docdown/fulltext/download?q=" in headers["Location"]
    file_url = headers["Location"]
    whole = pdf_bytes(sim.corpus.by_id["t003"])
    for _ in range(3):  # the browser asks the same file again (a resumption): no new order
        status, headers, body = b.request(file_url)
        assert status == 200 and body == whole and headers["Content-Disposition"].startswith("attachment")
    assert len(sim.requests_for("/bar/download/order")) == 1
    assert [e.params["fetch"] for e in sim.requests_for("/docdown/")] == [1, 2, 3]
    assert b.request(file_url.replace("?q=", "?q=x"))[0] == 404  # a token no order issued


def test_a_request_that_arrived_before_a_reset_is_not_logged_after_it(
    sim: SimServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A latency rule delays an answer past the end of its test; the session's simulator is reset
    # for the next test, which then counted that request as its own (the 3rd order request the
    # login-wall download test saw in CI came from the previous module's 30 s order)
    arrived, release = threading.Event(), threading.Event()

    class HeldTime:  # the simulator's latency sleep, held until the test lets it go
        monotonic = staticmethod(time.monotonic)
        time = staticmethod(time.time)  # after `monotonic`: this line rebinds `time` in the class

        @staticmethod
        def sleep(_seconds: float) -> None:
            arrived.set()
            release.wait(10)

    monkeypatch.setattr(server_module, "time", HeldTime)
    sim.set_scenario({"latency": [{"path": "/kcms2/article/abstract", "ms": 1000}]})
    url = sim.links.detail("t003")
    answered: list[int] = []
    asking = threading.Thread(target=lambda: answered.append(Browser().request(url)[0]))
    asking.start()
    assert arrived.wait(10)  # the request is in, its answer held
    sim.reset()
    release.set()
    asking.join(10)
    assert answered and sim.requests_for("/kcms2/article/abstract") == []
    Browser().request(sim.links.detail("t003"))
    assert len(sim.requests_for("/kcms2/article/abstract")) == 1  # a request after the reset is logged


def test_reader_entry_trial_slider_and_lazy(sim: SimServer) -> None:
    sim.set_scenario({"faults": [{"path": "/bar/htmlread", "kind": "trial_reader", "at": [1]},
                                 {"path": "/reader/xml", "kind": "reader_slider", "at": [2]}]})  # fmt: skip
    b = visitor(sim)
    status, headers, _ = b.request(sim.links.reader_entry("t004"))
    assert (
        status == 302
        and "/reader/xml?invoice=" in headers["Location"]
        and "loginType=trialRead" in headers["Location"]
    )
    assert b.request(headers["Location"])[0] == 200
    status, headers, _ = b.request(sim.links.reader_entry("t004"))
    assert "loginType" not in headers["Location"]
    assert b.request(headers["Location"])[0] == 200
    bad = re.sub(r"nonce=[^&]+", "nonce=x", headers["Location"])
    assert b.request(bad)[0] == 404
    assert [e.fault for e in sim.requests_for("/reader/xml")][:2] == [None, "reader_slider"]


def test_the_html_reading_entry_is_an_order_url_that_leads_to_the_htmlread_entry(sim: SimServer) -> None:
    # The real grid and detail pages point HTML阅读 at bar.cnki.net/bar/download/order?id=… (saved
    # pages kns8s-grid/pluginsx_shuziwenwu_p1.html, kaffu_waam_p1.html, detail-kcms2/…_2026.html);
    # the person lands on /bar/htmlread.html (saved page reader/pluginsx_bar_htmlread_paywall_2026.html).
    b = visitor(sim)
    entry = sim.links.reader("t004")
    assert "/bar/download/order?id=" in entry
    status, headers, _ = b.request(entry)
    assert status == 302 and "/bar/htmlread.html?lang=CHS&cacheID=" in headers["Location"]
    status, headers, _ = b.request(headers["Location"])
    assert status == 302 and "/reader/xml?invoice=" in headers["Location"]
    assert b.request(headers["Location"])[0] == 200
    assert [e.params["type"] for e in sim.requests_for("/bar/download/order")] == ["html"]


def test_script_rendered_detail_and_token_expiry(sim: SimServer, clock: FakeClock) -> None:
    sim.set_scenario(
        {
            "token_ttl": 600,
            "faults": [{"path": "/kcms2/article", "kind": "script_rendered_detail", "at": [2]}],
        }
    )
    b = visitor(sim)
    url = sim.links.detail("t005")
    _, normal = b.text(url)
    _, scripted = b.text(url)
    assert 'id="ChDivSummary"' in normal and 'id="root"' in scripted and 'id="ChDivSummary"' not in scripted
    clock.now += 601
    assert b.request(url)[0] == 404  # expired
    assert b.request(sim.links.detail("t005"))[0] == 200  # a fresh token works
    assert b.request(sim.url("/kcms2/article/abstract?v=unknown"))[0] == 404
    ids = [e.params.get("id") for e in sim.requests_for("/kcms2/article")]
    assert ids == ["t005", "t005", None, "t005", None]


def test_request_log_records_query_and_client(sim: SimServer, tmp_path: Path) -> None:
    b = visitor(sim)
    b.request(sim.url("/kns8s/AdvSearch"))
    b.request(sim.url("/kns8s/brief/grid"), grid_form("违约金"))
    entries = sim.requests
    assert [e.path for e in entries] == ["/", "/kns8s/AdvSearch", "/kns8s/brief/grid"]
    g = entries[2]
    assert g.method == "POST" and g.status == 200 and g.params["pageSize"] == "20"
    assert g.params["query"] == [{"field": "TI", "operator": "FUZZY", "value": "违约金", "logic": "AND"}]
    assert g.client and g.client == next(c.value for c in b.jar if c.name == "Ecp_ClientId")
    assert entries[1].t <= g.t


def test_the_request_log_file_gets_one_json_line_per_request(tmp_path: Path) -> None:
    log = tmp_path / "req.jsonl"
    with SimServer(_corpus(5), request_log_path=log) as s:
        visitor(s).request(s.url("/kns8s/brief/grid"), grid_form())
    rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [r["path"] for r in rows] == ["/", "/kns8s/brief/grid"] and rows[1]["params"]["total"] == 5


def test_reset_forgets_tokens_cursors_sessions_and_counters(sim: SimServer) -> None:
    sim.set_scenario({"faults": [{"path": "/kns8s/brief/grid", "kind": "429", "at": [2]}]})
    b = visitor(sim)
    _, p1 = b.text(sim.url("/kns8s/brief/grid"), grid_form())
    url = detail_links(p1)[0]
    sim.reset()
    assert sim.requests == []
    assert b.request(url)[0] == 404
    assert b.request(sim.url("/kns8s/brief/grid"), grid_form(page=2, turnpage=cursor_of(p1)))[0] == 400
    assert b.request(sim.url("/kns8s/brief/grid"), grid_form())[0] == 429  # counter restarted: 2nd again


def test_latency_is_applied_and_logged(sim: SimServer) -> None:
    sim.set_scenario({"seed": 1, "latency": [{"path": "/kns8s/AdvSearch", "ms": 30, "jitter": 0.5}]})
    visitor(sim).request(sim.url("/kns8s/AdvSearch"))
    assert sim.requests_for("/kns8s/AdvSearch")[0].duration >= 0.015


def test_cli_prints_origin_first_and_serves(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cnki_mcp",
            "sim",
            "--port",
            "0",
            "--request-log",
            str(tmp_path / "log.jsonl"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        origin = proc.stdout.readline().strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", origin)
        status, html = Browser(origin + "/").text(origin + "/kns8s/AdvSearch")
        assert status == 200 and "高级检索" in html
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


def test_cli_refuses_a_corpus_folder_without_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cnki_mcp.cli.main import main

    assert main(["sim", "--corpus", str(tmp_path / "nowhere")]) == 2  # not an empty simulator
    assert capsys.readouterr().err.startswith("错误 INVALID_ARGUMENT")


def test_a_journal_link_under_a_former_title_opens_the_journals_own_page() -> None:
    corpus = Corpus.load()
    journal = next(j for j in corpus.journals if j.former_titles and j.code)
    former = journal.former_titles[0]
    with SimServer(corpus=corpus) as server:
        url = server.links.journal(former)
        assert url == server.links.journal(journal.name)
        with urllib.request.urlopen(url) as resp:
            page = resp.read().decode("utf-8")
    assert re.search(rf'<h3 class="titbox(?: titbox1)?">{re.escape(journal.name)}', page)  # either generation
    assert former in page  # listed under 曾用刊名
    if journal.composite_if is not None:
        assert f"{journal.composite_if}" in page


def test_a_record_added_at_runtime_is_listed_and_its_detail_served_until_removed(sim: SimServer) -> None:
    b = visitor(sim)
    grid = sim.url("/kns8s/brief/grid")
    new = {"id": "t900", "title": "违约金研究 新收录", "type": "期刊", "source": "法学期刊1", "year": 2026,
           "date": "2026-12-01", "authors": ["新作者"]}  # fmt: skip
    assert sim.add_record(new) == "t900"
    with pytest.raises(ValueError):
        sim.add_record(new)
    _, page = b.text(grid, grid_form())
    assert "<em>76</em>" in page and "新收录" in page
    status, detail = b.text(sim.issue_detail_url("t900"))
    assert status == 200 and "违约金研究 新收录" in detail
    sim.remove_record("t900")
    _, page = b.text(grid, grid_form())
    assert "<em>75</em>" in page and "新收录" not in page


def test_a_client_gone_mid_answer_prints_no_traceback_but_a_simulator_bug_does(
    sim: SimServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server = sim._httpd
    assert server is not None
    try:
        raise BrokenPipeError(32, "Broken pipe")
    except BrokenPipeError:
        server.handle_error(None, ("127.0.0.1", 1))
    assert capsys.readouterr().err == ""
    try:
        raise ValueError("a simulator bug")
    except ValueError:
        server.handle_error(None, ("127.0.0.1", 1))
    assert "ValueError: a simulator bug" in capsys.readouterr().err
