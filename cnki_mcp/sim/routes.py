"""Request handling of the simulator: route table, fault injection, cookies, identity.

Host-agnostic: a route is chosen by path alone, so the same table serves origin mode (every host
on one origin) and hosts mode (kns/navi/bar/login/www by Host)."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape
from typing import Any
from urllib.parse import quote, urlsplit

from cnki_mcp.sim import grid as gridmod
from cnki_mcp.sim.advsearch import render_advsearch
from cnki_mcp.sim.corpus import Corpus, SimJournal, SimRecord
from cnki_mcp.sim.docdown import FILE_PATH, carried_fault, serve_file
from cnki_mcp.sim.links import Links, Visitor
from cnki_mcp.sim.query import QueryError, QueryRefused, Sort, highlight_terms, parse_query_json, search
from cnki_mcp.sim.scenario import Area, FaultKind, FaultRule, FaultSchedule, Scenario
from cnki_mcp.sim.tokens import TokenStore, opaque

HTML = "text/html; charset=utf-8"
CLIENT_COOKIE = "Ecp_ClientId"  # CNKI sets this on every visitor
LOGIN_COOKIE = "Ecp_LoginStuts"  # personal login session
NAME_COOKIE = "LID"
VERIFIED_COOKIE = "Ecp_VerifyPass"  # set by solving a verification
# The guest session (docs/simulator.md "Challenges, blocks and sessions"): planted by the home page
# and by solving a verification; kns8s pages without it redirect to /verify/home, grid POSTs get 403.
SESSION_COOKIE = "KNS2COOKIE"
_SESSION_PAGES = frozenset(
    {"/kns8s/AdvSearch", "/kns8s/search", "/kns8s/defaultresult/index", "/kns8s/", "/kns8s"}
)

_GENERIC = frozenset(
    {FaultKind.RATE_LIMITED, FaultKind.ERROR_500, FaultKind.ERROR_502, FaultKind.ERROR_503,
     FaultKind.VERIFICATION, FaultKind.VERIFICATION_403, FaultKind.LOGIN_REQUIRED, FaultKind.NOT_FOUND,
     FaultKind.FORBIDDEN, FaultKind.TRUNCATED, FaultKind.CDN_418, FaultKind.EMPTY_PAGE, FaultKind.OVERSEAS}
)  # fmt: skip
OVERSEAS_HOME = "https://chn.oversea.cnki.net/index/"  # the `overseas` fault's redirect
_CHALLENGES = frozenset({FaultKind.VERIFICATION, FaultKind.VERIFICATION_403})
_GRID_FAULTS = _GENERIC | {FaultKind.TEMPORARILY_EMPTY, FaultKind.PAGINATION_MISMATCH, FaultKind.SOFT_BLOCK}
_DETAIL_FAULTS = _GENERIC | {FaultKind.SCRIPT_RENDERED_DETAIL}
_READER_FAULTS = _GENERIC | {
    FaultKind.TRIAL_READER, FaultKind.READER_SLIDER, FaultKind.LAZY_READER, FaultKind.READER_PAYWALL
}
_DOWNLOAD_FAULTS = _GENERIC | {FaultKind.DOWNLOAD_REFUSED, FaultKind.HTML_AS_PDF, FaultKind.FILE_GONE}

# The AdvSearch page's own search click keys its QueryJson rows by the page's input selectors
# (`input[data-tipid=gradetxt-1]`, cnki_mcp/sim/advsearch.py); a replayed template carries the
# product's keys. The log marks the click so tests can wait for it (it travels beside the replay).
PAGE_FORM_MARK = '"Key":"input[data-tipid='  # as the page's JSON.stringify writes it


@dataclass
class Request:
    method: str
    host: str
    path: str
    query: dict[str, str]
    form: dict[str, str]
    cookies: dict[str, str]
    headers: dict[str, str]
    url: str  # absolute URL as the browser sees it
    truncate: bool = False  # a `truncated` fault fired: the answer is cut halfway (App.handle)


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    content_type: str = HTML
    headers: list[tuple[str, str]] = field(default_factory=list)
    fault: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    cut_at: int | None = None  # send only this many body bytes, then drop the connection

    @classmethod
    def html(cls, text: str, status: int = 200, **kw: Any) -> Response:
        return cls(status, text.encode("utf-8"), HTML, **kw)

    @classmethod
    def redirect(cls, location: str, status: int = 302, **kw: Any) -> Response:
        body = f'<html><body><a href="{escape(location)}">{escape(location)}</a></body></html>'
        r = cls(status, body.encode("utf-8"), HTML, **kw)
        r.headers.append(("Location", location))
        return r


@dataclass(frozen=True, slots=True)
class Challenge:
    """One slider challenge: what `/verify/home` must be called with, and where it returns to."""

    ident: str
    return_token: str  # the opaque `returnUrl` parameter
    return_url: str


@dataclass(frozen=True, slots=True)
class CursorGrant:
    """Who a `turnpage` cursor belongs to: the session, the query (fingerprint + sort), the page it opens."""

    session: str
    query: str
    page: int


class SimState:
    """Everything `reset()` clears: tokens, cursors, sessions, verification state, fault counters."""

    def __init__(self, scenario: Scenario, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.lock = threading.Lock()
        self.tokens = TokenStore(clock, scenario.token_ttl)
        self.schedule = FaultSchedule(scenario)
        self.cursors: dict[str, CursorGrant] = {}
        self.latest_cursor: dict[CursorGrant, str] = {}  # only the newest cursor of a page works
        self.sessions: dict[str, str] = {}
        self.pending_verification: dict[str, FaultKind] = {}  # client -> how it is challenged
        self.challenges: dict[str, Challenge] = {}  # captchaId -> challenge
        self.verified: dict[str, float] = {}
        self.journal_p: dict[str, str] = {}  # source name -> stable navi `p` value
        self.file_fetches: dict[str, int] = {}  # file-host token -> requests of it (resumptions)


class App:
    """Maps a Request to a Response. `links` is the server's Links implementation."""

    def __init__(
        self,
        corpus: Corpus,
        scenario: Scenario,
        links: Links,
        clock: Callable[[], float],
        cookie_domain: str | None,
    ) -> None:
        self.corpus = corpus
        self.scenario = scenario
        self.links = links
        self.state = SimState(scenario, clock)
        self.cookie_domain = cookie_domain
        # Signs session cookies; kept across reset() so a browser's session outlives a test's reset.
        self._secret = secrets.token_bytes(16)
        self._routes: dict[tuple[str, str], Callable[[Request, str], Response]] = {
            ("GET", "/"): self.home,
            ("GET", "/kns8s/AdvSearch"): self.advsearch,
            ("GET", "/kns8s/"): self.onebox,
            ("GET", "/kns8s"): self.onebox,
            ("GET", "/kns8s/search"): self.onebox,
            ("GET", "/kns8s/defaultresult/index"): self.onebox,
            ("POST", "/kns8s/brief/grid"): self.grid,
            ("POST", "/kns8s/group/result"): self.groups,
            ("POST", "/dm8/api/ShowExport"): self.show_export,
            ("POST", "/dm8/API/ShowExport"): self.show_export,
            ("GET", "/kcms2/article/abstract"): self.detail,
            ("GET", "/kcms2/author/detail"): self.author,
            ("GET", "/knavi/detail"): self.journal,
            ("GET", "/bar/htmlread.html"): self.reader_entry,
            ("GET", "/reader/xml"): self.reader,
            ("GET", "/bar/download/order"): self.download,
            ("GET", FILE_PATH): self.file,
            ("GET", "/login/"): self.login_page,
            ("GET", "/login"): self.login_page,
            ("POST", "/login/submit"): self.login_submit,
            ("GET", "/login/logout"): self.logout,
            ("GET", "/verify/home"): self.verify_page,
            ("POST", "/verify/solve"): self.verify_solve,
            ("GET", "/favicon.ico"): self.favicon,
        }
        from cnki_mcp.sim.citation_api import PATHS as CITATION_PATHS

        for path in CITATION_PATHS:  # the article page's citation JSON API (docs/citation-api.md)
            self._routes[("GET", path)] = self.citation_api

    # ------------------------------------------------------------ plumbing

    def set_scenario(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.state.tokens.ttl = scenario.token_ttl
        self.state.schedule = FaultSchedule(scenario)

    def reset(self) -> None:
        self.state = SimState(self.scenario, self.state.clock)

    def handle(self, req: Request) -> Response:
        client = req.cookies.get(CLIENT_COOKIE) or ""
        new_client = ""
        if not client:
            new_client = client = opaque(16)
        handler = self._routes.get((req.method, req.path))
        if handler is None and req.method == "HEAD":
            handler = self._routes.get(("GET", req.path))
        resp = self.not_found() if handler is None else handler(req, client)
        if req.truncate and resp.status == 200 and resp.cut_at is None:
            resp.cut_at = len(resp.body) // 2
            resp.fault = FaultKind.TRUNCATED.value
        if new_client:
            resp.headers.append(("Set-Cookie", self.cookie(CLIENT_COOKIE, new_client, max_age=86400 * 365)))
        return resp

    def cookie(self, name: str, value: str, *, max_age: int | None = None) -> str:
        parts = [f"{name}={value}", "Path=/", "SameSite=Lax"]
        if self.cookie_domain:
            parts.append(f"Domain={self.cookie_domain}")
        if max_age is not None:
            parts.append(f"Max-Age={max_age}")
        return "; ".join(parts)

    def visitor(self, req: Request) -> Visitor:
        ident = self.scenario.identity
        name = self.state.sessions.get(req.cookies.get(LOGIN_COOKIE, ""))
        return Visitor(
            personal_name=name or ident.personal,
            institution=ident.institution,
            verified=self.is_verified(req),
        )

    def is_verified(self, req: Request) -> bool:
        token = req.cookies.get(VERIFIED_COOKIE, "")
        at = self.state.verified.get(token)
        return at is not None and self.state.clock() - at <= self.scenario.verified_ttl

    # ------------------------------------------------------------ session and challenges

    def forget_sessions(self) -> None:
        """Stop honouring every guest session issued so far (the site expired them)."""
        self._secret = secrets.token_bytes(16)

    def forget_logins(self) -> None:
        """End every login session (the site logged everyone out); the cookies stay in the browsers."""
        with self.state.lock:
            self.state.sessions.clear()

    def session_of(self, req: Request) -> str | None:
        """The request's guest session when it carries one this site signed, else None."""
        value = req.cookies.get(SESSION_COOKIE, "")
        nonce, sep, sig = value.rpartition("|")
        if not sep or not nonce:
            return None
        return value if hmac.compare_digest(sig, self._sign(nonce)) else None

    def _sign(self, nonce: str) -> str:
        return hmac.new(self._secret, nonce.encode("utf-8"), hashlib.sha256).hexdigest()[:32]

    def _plant_session(self, req: Request, resp: Response) -> Response:
        """Give the browser a guest session cookie (a session cookie: no expiry) unless it has one."""
        if self.session_of(req) is None:
            # CNKI's looks like `1774513277.535.171404.517558|b25e41a932fd162af3b8c5cff4059fc3`
            nonce = f"{int(self.state.clock() * 1000)}.{secrets.randbelow(1_000_000):06d}.{opaque(6)}"
            resp.headers.append(("Set-Cookie", self.cookie(SESSION_COOKIE, f"{nonce}|{self._sign(nonce)}")))
        return resp

    def new_challenge(self, return_url: str) -> tuple[str, str, str]:
        """Register a slider challenge returning to `return_url`: (ident, captchaId, opaque returnUrl)."""
        ident = secrets.token_hex(3)
        captcha_id = str(uuid.uuid4())
        token = opaque(120)
        with self.state.lock:
            self.state.challenges[captcha_id] = Challenge(ident, token, return_url)
        return ident, captcha_id, token

    def _challenge_json(self, req: Request, fault: str) -> Response:
        """The WAF's answer to an API call it wants verified: 403 + JSON naming the slider page."""
        body = json.dumps({"code": -403, "message": self.links.verify(self._return_url(req))})
        return Response(403, body.encode("utf-8"), "application/json; charset=utf-8", fault=fault)

    def not_found(self) -> Response:
        from cnki_mcp.sim.pages.errors import render_not_found

        return Response.html(render_not_found(self.links), 404)

    def _fault(
        self, req: Request, client: str, kinds: frozenset[FaultKind], *, fragment: bool = False
    ) -> tuple[Response | None, FaultRule | None]:
        """Apply pending verification and scheduled faults; returns (response to send, fired rule)."""
        rule = self.state.schedule.fault_for(req.method, req.path, kinds, req.form)
        verified = self.is_verified(req)
        if rule is not None and rule.kind in _CHALLENGES and not verified:
            with self.state.lock:
                self.state.pending_verification[client] = rule.kind
        pending = self.state.pending_verification.get(client)
        if not verified and pending is not None:
            return self._verification(req, fragment, pending), rule
        if rule is None or rule.kind in _CHALLENGES:
            return None, None
        if rule.kind == FaultKind.TRUNCATED:
            req.truncate = True  # the route answers as usual; App.handle cuts the answer short
            return None, rule
        from cnki_mcp.sim.pages import errors

        kind = rule.kind
        if kind == FaultKind.RATE_LIMITED:
            resp = Response.html(errors.render_rate_limited(), 429)
            resp.headers.append(("Retry-After", "2"))
        elif kind in (FaultKind.ERROR_500, FaultKind.ERROR_502, FaultKind.ERROR_503):
            resp = Response.html(errors.render_server_error(int(kind.value)), int(kind.value))
        elif kind == FaultKind.NOT_FOUND:
            resp = self.not_found()
        elif kind == FaultKind.FORBIDDEN:
            resp = Response.html(errors.render_forbidden(), 403)
        elif kind == FaultKind.LOGIN_REQUIRED:
            resp = Response.redirect(self.links.login(self._return_url(req)))
        elif kind in (FaultKind.CDN_418, FaultKind.EMPTY_PAGE):
            resp = Response(418 if kind == FaultKind.CDN_418 else 200)
        elif kind == FaultKind.OVERSEAS:
            resp = Response.redirect(OVERSEAS_HOME)
        else:
            return None, rule  # route-specific kinds are applied by the route
        resp.fault = kind.value
        return resp, rule

    def _return_url(self, req: Request) -> str:
        if req.method == "GET":
            return req.url
        referer = req.headers.get("referer", "")
        if referer and self._safe_return(referer) == referer:
            return referer  # an API call returns to the page that made it
        return self.links.kns("/kns8s/AdvSearch")

    def _verification(self, req: Request, fragment: bool, kind: FaultKind) -> Response:
        if kind == FaultKind.VERIFICATION_403:
            return self._challenge_json(req, kind.value)
        if fragment:
            from cnki_mcp.sim.pages.verify import vericode_fragment

            return Response.html(vericode_fragment(self.links), fault=FaultKind.VERIFICATION.value)
        return Response.redirect(self.links.verify(self._return_url(req)), fault=FaultKind.VERIFICATION.value)

    def _needs_login(self, req: Request, area: Area) -> Response | None:
        if area not in self.scenario.require_login_for:
            return None
        v = self.visitor(req)
        if v.personal_name or v.institution:
            return None
        return Response.redirect(self.links.login(req.url), fault="login_required")

    # ------------------------------------------------------------ pages

    def home(self, req: Request, client: str) -> Response:
        from cnki_mcp.sim.pages.home import render_home

        return self._plant_session(req, Response.html(render_home(self.links, self.visitor(req))))

    def advsearch(self, req: Request, client: str) -> Response:
        if req.path in _SESSION_PAGES and self.session_of(req) is None and not self.is_verified(req):
            # A browser that never went through the home page is sent to the slider first.
            return Response.redirect(self.links.verify(req.url), fault="no_session")
        resp, _ = self._fault(req, client, _GENERIC)
        expert = req.query.get("type", "").lower() == "expert"
        return resp or Response.html(render_advsearch(self.links, self.visitor(req), expert=expert))

    def onebox(self, req: Request, client: str) -> Response:
        """一框式 search page and its result URL (`?crossids=…&korder=SU&kw=…`); docs/simulator.md."""
        from cnki_mcp.sim.pages.onebox import render_onebox

        if self.session_of(req) is None and not self.is_verified(req):
            return Response.redirect(self.links.verify(req.url), fault="no_session")
        resp, _ = self._fault(req, client, _GENERIC)
        html = render_onebox(self.links, self.visitor(req), kw=req.query.get("kw", ""),
                             korder=req.query.get("korder", "SU").upper(),
                             personal_home=req.path in ("/kns8s/", "/kns8s"))  # fmt: skip
        return resp or Response.html(html, params={"kw": req.query.get("kw", ""), "korder": req.query.get("korder")})

    def groups(self, req: Request, client: str) -> Response:
        """Facet counts of the result page's left column (`POST /kns8s/group/result`, facets.py)."""
        from cnki_mcp.sim.facets import render_groups

        f = req.form
        params: dict[str, Any] = {"groupIds": f.get("groupIds", "")}
        if self.session_of(req) is None:
            resp = self._challenge_json(req, "no_session")
            resp.params = params
            return resp
        resp, _ = self._fault(req, client, _GENERIC)
        if resp is not None:
            resp.params = params
            return resp
        try:
            q = parse_query_json(f.get("queryJson") or f.get("QueryJson") or "")
        except QueryError as exc:  # what the site answers here is not known; an empty fragment
            params["error"] = str(exc)
            return Response.html("", params=params)
        hits = search(self.corpus, q)
        params["total"] = len(hits)
        return Response.html(render_groups(f.get("groupIds", ""), hits, self.corpus), params=params)

    def grid(self, req: Request, client: str) -> Response:
        f = req.form
        params: dict[str, Any] = {
            k: f[k]
            for k in ("pageNum", "pageSize", "sortField", "sortType", "turnpage", "boolSearch")
            if k in f
        }
        if PAGE_FORM_MARK in f.get("QueryJson", ""):
            params["page_form"] = True  # logged only (docs/simulator.md "Request log")
        session = self.session_of(req)
        if session is None:
            resp = self._challenge_json(req, "no_session")
            resp.params = params
            return resp
        resp, rule = self._fault(req, client, _GRID_FAULTS, fragment=True)
        if resp is not None:
            resp.params = params
            return resp
        try:
            q = parse_query_json(f.get("QueryJson", ""))
        except QueryRefused as exc:  # risk control: answered like a zero result (docs/simulator.md)
            params.update(error=str(exc), total=0, rows=0)
            return Response.html(gridmod.render_zero_results(opaque(16) + "!!"), params=params)
        except QueryError as exc:
            params["error"] = str(exc)
            return Response.html(gridmod.render_query_error(str(exc)), params=params)
        params.update(q.log_params())
        try:
            page = max(1, int(f.get("pageNum") or 1))
        except ValueError:
            page = 1
        try:
            size = min(50, max(1, int(f.get("pageSize") or 20)))  # CNKI accepts up to 50
        except ValueError:
            size = 20
        try:
            sort = Sort(f.get("sortField") or "FFD")
        except ValueError:
            sort = Sort.FFD
        descending = (f.get("sortType") or "desc").lower() != "asc"
        fp = f"{q.fingerprint()}:{sort.value}:{int(descending)}"
        if page > 1 and (
            refused := self._cursor_refusal(f.get("turnpage", ""), CursorGrant(session, fp, page))
        ):
            params["error"] = refused
            return Response.html("<html><body><p>请求参数错误</p></body></html>", 400, params=params)
        if rule is not None and rule.kind == FaultKind.TEMPORARILY_EMPTY:
            return Response.html(gridmod.render_temporarily_empty(), fault=rule.kind.value, params=params)
        if rule is not None and rule.kind == FaultKind.SOFT_BLOCK:
            # Indistinguishable from a real zero: count 0, the no-result text, a cursor.
            empty = gridmod.GridPage([], 0, page, size, opaque(16) + "!!", sort.value,
                                     "desc" if descending else "asc")  # fmt: skip
            params.update(total=0, rows=0, served_page=page, ids=[])
            html = gridmod.render_grid(
                empty, self.links, terms=highlight_terms(q), wan_counts=self.scenario.wan_counts
            )
            return Response.html(html, fault=rule.kind.value, params=params)
        hits = search(self.corpus, q, sort, descending)
        served = page
        fault = None
        if rule is not None and rule.kind == FaultKind.PAGINATION_MISMATCH:
            served = 2 if page == 1 else page - 1
            fault = rule.kind.value
        rows = hits[(served - 1) * size : served * size]
        gp = gridmod.GridPage(rows, len(hits), served, size, self._cursor(CursorGrant(session, fp, served + 1)), sort.value,
                              "desc" if descending else "asc")  # fmt: skip
        params.update(total=len(hits), rows=len(rows), served_page=served, ids=[r.id for r in rows])
        html = gridmod.render_grid(
            gp, self.links, terms=highlight_terms(q), wan_counts=self.scenario.wan_counts
        )
        return Response.html(html, fault=fault, params=params)

    def show_export(self, req: Request, client: str) -> Response:
        """Batch EndNote export of the rows named by `FileName` (docs/simulator.md §Export)."""
        from cnki_mcp.sim.export import render_show_export

        f = req.form
        names = [n.strip() for n in (f.get("FileName") or f.get("filename") or "").split(",") if n.strip()]
        params: dict[str, Any] = {"count": len(names), "mode": f.get("DisplayMode")}
        if self.session_of(req) is None:  # like the grid: no site session, 403 with the slider URL
            resp = self._challenge_json(req, "no_session")
            resp.params = params
            return resp
        resp, _rule = self._fault(req, client, _GENERIC, fragment=True)
        if resp is not None:
            resp.params = params
            return resp
        try:
            size = min(50, max(1, int(f.get("PageSize") or 20)))
        except ValueError:
            size = 20
        by_native = self._by_native()
        found = []
        for name in names[:size]:
            parts = name.split("!")
            record = by_native.get(parts[1].upper()) if len(parts) >= 2 else None
            if record is not None:
                found.append(record)
        params["ids"] = [r.id for r in found]
        body = render_show_export(found).encode("utf-8")
        return Response(status=200, body=body, content_type="text/plain; charset=utf-8", params=params)

    def _by_native(self) -> dict[str, Any]:
        cached = getattr(self, "_native_index", None)
        if cached is None or cached[0] is not self.corpus or cached[2] != self.corpus.version:
            by_native = {r.native_filename.upper(): r for r in self.corpus.records}
            cached = (self.corpus, by_native, self.corpus.version)
            self._native_index = cached
        return cached[1]

    def _cursor(self, grant: CursorGrant) -> str:
        """A new cursor for the page `grant` opens; it replaces the one an earlier answer gave."""
        # CNKI's cursor looks like base64 with '!' padding: 8Kf6r96aVUubfe4hUZXU-w!!
        cur = opaque(16) + "!!"
        with self.state.lock:
            self.state.cursors[cur] = grant
            self.state.latest_cursor[grant] = cur
        return cur

    def _cursor_refusal(self, cursor: str, want: CursorGrant) -> str | None:
        """Why `cursor` cannot open `want` (None: it can). Only the newest cursor the previous page
        gave to this session for this query and sort works."""
        with self.state.lock:
            grant = self.state.cursors.get(cursor)
            latest = self.state.latest_cursor.get(want)
        if not cursor:
            return "missing cursor"
        if grant is None:
            return "unknown cursor"
        if grant.session != want.session:
            return "cursor of another session"
        if grant.query != want.query:
            return "cursor of another query"
        if grant.page != want.page or latest != cursor:
            return "stale cursor"
        return None

    def detail(self, req: Request, client: str) -> Response:
        grant = self.state.tokens.lookup("detail", req.query.get("v", ""))
        record = self.corpus.by_id.get(grant.value) if grant else None
        params: dict[str, Any] = {"id": record.id if record else None}
        if record is None:
            params["expired_or_unknown"] = True
            resp = self.not_found()
            resp.params = params
            return resp
        resp, rule = self._fault(req, client, _DETAIL_FAULTS)
        if resp is not None:
            resp.params = params
            return resp
        from cnki_mcp.sim.pages.detail import render_detail

        scripted = rule is not None and rule.kind == FaultKind.SCRIPT_RENDERED_DETAIL
        html = render_detail(record, self.corpus, self.links, self.visitor(req), script_rendered=scripted)
        return Response.html(html, fault=rule.kind.value if scripted and rule else None, params=params)

    def citation_api(self, req: Request, client: str) -> Response:
        from cnki_mcp.sim.citation_api import answer

        return answer(self, req, client, _GENERIC)

    def author(self, req: Request, client: str) -> Response:
        grant = self.state.tokens.lookup("author", req.query.get("v", ""))
        if grant is None:
            return self.not_found()
        resp, _ = self._fault(req, client, _GENERIC)
        if resp is not None:
            return resp
        from cnki_mcp.sim.author import render_author

        return Response.html(render_author(grant.value, self.corpus, self.links, self.visitor(req)),
                             params={"author": grant.value})  # fmt: skip

    def journal_for(self, p: str) -> SimJournal | None:
        j = self.corpus.journal_by_code.get(p)
        if j is not None:
            return j
        grant = self.state.tokens.lookup("journal", p, expires=False)
        if grant is None:
            return None
        return self.corpus.journal_by_title.get(grant.value) or SimJournal(name=grant.value)

    def journal(self, req: Request, client: str) -> Response:
        j = self.journal_for(req.query.get("p", ""))
        if j is None:
            return self.not_found()
        resp, _ = self._fault(req, client, _GENERIC)
        if resp is not None:
            resp.params = {"journal": j.name}
            return resp
        from cnki_mcp.sim.pages.journal import render_journal

        return Response.html(
            render_journal(j, self.corpus, self.links, self.visitor(req)), params={"journal": j.name}
        )

    def _reader_record(
        self, req: Request, client: str, grant: Any
    ) -> tuple[SimRecord | None, FaultRule | None, Response | None]:
        """The record a reader token grants, the reader fault rule that applies, and the response
        that refuses the request instead (not found, a fault, a login), if any."""
        record = self.corpus.by_id.get(grant.value) if grant else None
        if record is None:
            return None, None, self.not_found()
        resp, rule = self._fault(req, client, _READER_FAULTS)
        resp = resp or self._needs_login(req, Area.READER)
        if resp is not None:
            resp.params = {"id": record.id}
        return record, rule, resp

    def reader_entry(self, req: Request, client: str) -> Response:
        grant = self.state.tokens.lookup("entry", req.query.get("cacheID", ""))
        record, rule, refused = self._reader_record(req, client, grant)
        if refused is not None:
            return refused
        assert record is not None
        params = {"id": record.id}
        if rule is not None and rule.kind == FaultKind.READER_PAYWALL:
            from cnki_mcp.sim.pages.reader import render_reader_paywall

            html = render_reader_paywall(record, self.links)
            return Response.html(html, fault=FaultKind.READER_PAYWALL.value, params=params)
        invoice, nonce = self.state.tokens.reader_pair(record.id)
        url = self.links.kns(f"/reader/xml?invoice={invoice}&nonce={nonce}")
        trial = rule is not None and rule.kind == FaultKind.TRIAL_READER
        if trial:
            url += "&loginType=trialRead"
        return Response.redirect(url, fault="trial_reader" if trial else None, params=params)

    def reader(self, req: Request, client: str) -> Response:
        grant = self.state.tokens.check_reader(req.query.get("invoice", ""), req.query.get("nonce", ""))
        record, rule, refused = self._reader_record(req, client, grant)
        if refused is not None:
            return refused
        assert record is not None
        params = {"id": record.id}
        kind = rule.kind if rule is not None else None
        trial = req.query.get("loginType") == "trialRead" or kind == FaultKind.TRIAL_READER
        from cnki_mcp.sim.pages.reader import render_reader

        html = render_reader(record, self.links, self.visitor(req), trial=trial,
                             lazy=kind == FaultKind.LAZY_READER, slider=kind == FaultKind.READER_SLIDER)  # fmt: skip
        return Response.html(html, fault=kind.value if kind else None, params=params | {"trial": trial})

    def download(self, req: Request, client: str) -> Response:
        grant = self.state.tokens.lookup("download", req.query.get("id", ""))
        record = self.corpus.by_id.get(grant.value) if grant else None
        if record is None or grant is None:
            return self.not_found()
        fmt = grant.extra or "pdf"
        params = {"id": record.id, "type": fmt}
        if fmt == "html":  # the HTML阅读 entry's order: on to the htmlread entry (Links.reader)
            resp, _ = self._fault(req, client, _GENERIC)
            resp = resp or self._needs_login(req, Area.READER)
            resp = resp or Response.redirect(self.links.reader_entry(record.id))
            resp.params = params
            return resp
        resp, rule = self._fault(req, client, _DOWNLOAD_FAULTS)
        resp = resp or self._needs_login(req, Area.DOWNLOAD)
        if resp is not None:
            resp.params = params
            return resp
        from cnki_mcp.sim.pages import files

        if rule is not None and rule.kind == FaultKind.DOWNLOAD_REFUSED:
            html = files.render_download_refused(rule.reason, self.links, self.visitor(req))
            return Response.html(html, fault=rule.kind.value, params=params)
        if rule is not None and rule.kind == FaultKind.FILE_GONE:
            return Response.redirect(self.links.gone_file(fmt), fault=rule.kind.value, params=params)
        # CNKI's order answers a 302 to its file host (docdown.py); a cut or a page under a PDF
        # name the order's rule fired for happens in the file answer there
        carried = carried_fault(rule.kind if rule is not None else None)
        return Response.redirect(self.links.file(record.id, fmt, carried), fault=carried or None, params=params)

    def file(self, req: Request, client: str) -> Response:
        return serve_file(self, req, client)

    def login_page(self, req: Request, client: str) -> Response:
        from cnki_mcp.sim.pages.login import render_login

        ret = req.query.get("ReturnURL") or req.query.get("returnUrl") or self.links.kns("/kns8s/AdvSearch")
        return Response.html(render_login(ret, self.links))

    def login_submit(self, req: Request, client: str) -> Response:
        user = req.form.get("username", "").strip()
        password = req.form.get("password", "")
        ret = self._safe_return(req.form.get("returnUrl", ""))
        accounts = self.scenario.accounts
        ok = bool(user and password) and (not accounts or accounts.get(user) == password)
        if not ok:
            from cnki_mcp.sim.pages.login import render_login

            return Response.html(
                render_login(ret, self.links, error="用户名或密码错误"), params={"user": user, "ok": False}
            )
        token = opaque(24)
        with self.state.lock:
            self.state.sessions[token] = user
        resp = Response.redirect(ret, params={"user": user, "ok": True})
        resp.headers.append(("Set-Cookie", self.cookie(LOGIN_COOKIE, token)))
        resp.headers.append(("Set-Cookie", self.cookie(NAME_COOKIE, quote(user))))
        return resp

    def logout(self, req: Request, client: str) -> Response:
        with self.state.lock:
            self.state.sessions.pop(req.cookies.get(LOGIN_COOKIE, ""), None)
        ret = self._safe_return(req.query.get("ReturnURL") or req.headers.get("referer", ""))
        resp = Response.redirect(ret)
        resp.headers.append(("Set-Cookie", self.cookie(LOGIN_COOKIE, "", max_age=0)))
        resp.headers.append(("Set-Cookie", self.cookie(NAME_COOKIE, "", max_age=0)))
        return resp

    def _challenge_for(self, fields: dict[str, str]) -> Challenge | None:
        """The registered challenge `fields` (query or form) name with its ident and returnUrl."""
        challenge = self.state.challenges.get(fields.get("captchaId", ""))
        if challenge is None or fields.get("captchaType", "blockPuzzle") != "blockPuzzle":
            return None
        if fields.get("ident") != challenge.ident or fields.get("returnUrl") != challenge.return_token:
            return None
        return challenge

    def verify_page(self, req: Request, client: str) -> Response:
        from cnki_mcp.sim.pages.verify import render_verify, render_verify_invalid

        challenge = self._challenge_for(req.query)
        if challenge is None:
            # Only the URL the site issued (ident + captchaId + its own returnUrl) opens a puzzle.
            return Response.html(render_verify_invalid(self.links), params={"valid": False})
        html = render_verify(challenge.return_token, self.links, ident=challenge.ident,
                             captcha_id=req.query["captchaId"])  # fmt: skip
        return Response.html(html, params={"valid": True})

    def verify_solve(self, req: Request, client: str) -> Response:
        fields = req.form or req.query
        if "captchaId" in fields:
            with self.state.lock:
                challenge = self._challenge_for(fields)
                if challenge is not None:
                    del self.state.challenges[fields["captchaId"]]  # one solve per challenge
            if challenge is None:
                from cnki_mcp.sim.pages.verify import render_verify_invalid

                return Response.html(render_verify_invalid(self.links), params={"valid": False})
            ret = challenge.return_url
        else:  # the grid's vericodeForm names its page directly
            ret = self._safe_return(fields.get("returnUrl", ""))
        token = opaque(24)
        with self.state.lock:
            self.state.verified[token] = self.state.clock()
            self.state.pending_verification.pop(client, None)
        cookie = self.cookie(VERIFIED_COOKIE, token)
        if req.headers.get("x-requested-with", "").lower() == "xmlhttprequest":
            body = f'{{"success":true,"returnUrl":"{ret}"}}'.encode()
            resp = Response(200, body, "application/json; charset=utf-8", [("Set-Cookie", cookie)])
        else:
            resp = Response.redirect(ret)
            resp.headers.append(("Set-Cookie", cookie))
        return self._plant_session(req, resp)

    def favicon(self, req: Request, client: str) -> Response:
        from cnki_mcp.sim.pages.common import tiny_png

        return Response(200, tiny_png(16, 16, (200, 30, 30), (255, 255, 255)), "image/png",
                        [("Cache-Control", "max-age=86400")])  # fmt: skip

    def _safe_return(self, url: str) -> str:
        """Only redirect back into the site (relative paths or this site's hosts)."""
        default = self.links.kns("/kns8s/AdvSearch")
        if not url:
            return default
        parts = urlsplit(url)
        if not parts.netloc:
            return self.links.kns(url if url.startswith("/") else "/" + url)
        home = urlsplit(self.links.kns("/")).netloc
        if parts.netloc == home or parts.netloc.endswith(".cnki.net"):
            return url
        return default


