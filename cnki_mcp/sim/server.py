"""`SimServer`: the simulator's HTTP(S) server, its Links and its Python API for tests.

Origin mode: every CNKI host lives on one origin (`http://127.0.0.1:PORT`) with the real paths.
Hosts mode: HTTPS with a trustme certificate for the real host names; Chromium is pointed at it
with `chromium_args()` (`--host-resolver-rules` + `--ignore-certificate-errors`)."""

from __future__ import annotations

import contextlib
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, quote, urlsplit

from cnki_mcp.sim.corpus import Corpus
from cnki_mcp.sim.docdown import FILE_PATH
from cnki_mcp.sim.reqlog import LogEntry, RequestLog
from cnki_mcp.sim.routes import CLIENT_COOKIE, App, Request, Response
from cnki_mcp.sim.scenario import Scenario
from cnki_mcp.sim.tokens import opaque

HOSTS: dict[str, str] = {
    "kns": "kns.cnki.net",
    "navi": "navi.cnki.net",
    "bar": "bar.cnki.net",
    "docdown": "docdown.cnki.net",
    "login": "login.cnki.net",
    "www": "www.cnki.net",
}
_PLATFORM = "&uniplatform=NZKPT&language=CHS"


class SimLinks:
    """The `Links` protocol over the server's token store and host layout."""

    def __init__(self, server: SimServer) -> None:
        self._server = server

    def _base(self, role: str) -> str:
        s = self._server
        if s.hosts_mode:
            return f"https://{HOSTS[role]}"
        return s.origin

    @property
    def _app(self) -> App:
        return self._server.app

    def detail(self, record_id: str) -> str:
        v = self._app.state.tokens.issue("detail", record_id, nbytes=90)
        return f"{self._base('kns')}/kcms2/article/abstract?v={v}{_PLATFORM}"

    def journal(self, journal_name: str) -> str:
        app = self._app
        j = app.corpus.journal_by_title.get(journal_name)
        if j is not None and j.code:
            p = j.code
        else:
            with app.state.lock:
                p = app.state.journal_p.get(journal_name, "")
            if not p:
                p = app.state.tokens.issue("journal", journal_name, nbytes=60)
                with app.state.lock:
                    p = app.state.journal_p.setdefault(journal_name, p)
        return f"{self._base('navi')}/knavi/detail?p={p}{_PLATFORM}"

    def author(self, name: str, institution: str | None = None) -> str:
        v = self._app.state.tokens.issue("author", name, extra=institution or "", nbytes=75)
        return f"{self._base('kns')}/kcms2/author/detail?v={v}{_PLATFORM}"

    def reader(self, record_id: str) -> str:
        # The real grid and detail pages point HTML阅读 at the order endpoint the downloads use
        # (docs/site-behaviour.md "The HTML阅读 entry goes through the order endpoint").
        oid = self._app.state.tokens.issue("download", record_id, extra="html", nbytes=120)
        return f"{self._base('bar')}/bar/download/order?id={quote(oid, safe='')}&language=CHS"

    def reader_entry(self, record_id: str) -> str:
        cache_id = self._app.state.tokens.issue("entry", record_id, nbytes=45)
        return f"{self._base('bar')}/bar/htmlread.html?lang=CHS&cacheID={cache_id}"

    def download(self, record_id: str, fmt: Literal["pdf", "caj"]) -> str:
        oid = self._app.state.tokens.issue("download", record_id, extra=fmt, nbytes=120)
        return f"{self._base('bar')}/bar/download/order?id={quote(oid, safe='')}&type={fmt}&language=CHS"

    def file(self, record_id: str, fmt: str, fault: str = "") -> str:
        """The file-host URL an order redirects to (sim/docdown.py); `fault` is what the order's
        fired rule asks of its answer (`truncated`, `html_as_pdf`)."""
        q = self._app.state.tokens.issue("file", record_id, extra=f"{fmt}:{fault}", nbytes=60)
        return f"{self._base('docdown')}{FILE_PATH}?q={q}"

    def gone_file(self, fmt: str) -> str:
        """A file URL on the bar host no route answers (404): where the `file_gone` fault sends an order."""
        return f"{self._base('bar')}/bar/download/file?id={opaque(45)}&type={fmt}"

    def login(self, return_url: str) -> str:
        return f"{self._base('login')}/login/?ReturnURL={quote(return_url, safe='')}"

    def verify(self, return_url: str) -> str:
        """A slider page the site issued: `ident`, `captchaId` and an opaque `returnUrl` that only
        this server can map back to `return_url` (docs/simulator.md "Challenges, blocks and sessions")."""
        ident, captcha_id, token = self._app.new_challenge(return_url)
        return (
            f"{self._base('kns')}/verify/home?captchaType=blockPuzzle&ident={ident}"
            f"&captchaId={captcha_id}&returnUrl={token}"
        )

    def kns(self, path: str) -> str:
        return self._base("kns") + (path if path.startswith("/") else "/" + path)

    def www(self, path: str) -> str:
        return self._base("www") + (path if path.startswith("/") else "/" + path)


def _cookies(header: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in header.split(";"):
        name, sep, value = part.strip().partition("=")
        if sep and name:
            out.setdefault(name, value)
    return out


# Key form/query parameters kept in the log for non-grid routes.
_LOG_PARAMS = (
    "v", "p", "id", "type", "cacheID", "loginType", "ReturnURL", "returnUrl", "captchaType", "ident", "captchaId",
)  # fmt: skip


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as Chromium expects
    server_version = "Tengine"
    sim: SimServer  # set on the per-server subclass

    def setup(self) -> None:
        ctx = self.sim._ssl_context
        if ctx is not None:  # TLS handshake in the request thread, not the accept loop
            self.request = ctx.wrap_socket(self.request, server_side=True)
        super().setup()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_HEAD(self) -> None:
        self._serve(head=True)

    def _serve(self, head: bool = False) -> None:
        sim = self.sim
        epoch = sim.epoch  # the log this request belongs to (reset() starts another)
        t0 = sim.clock()
        wall = time.time()
        start = time.monotonic()
        split = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        form: dict[str, str] = {}
        if raw and "x-www-form-urlencoded" in (self.headers.get("Content-Type") or ""):
            form = dict(parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True))
        host = self.headers.get("Host") or f"{sim.host}:{sim.port}"
        scheme = "https" if sim.hosts_mode else "http"
        req = Request(
            method=self.command,
            host=host,
            path=split.path or "/",
            query=dict(parse_qsl(split.query, keep_blank_values=True)),
            form=form,
            cookies=_cookies(self.headers.get("Cookie") or ""),
            headers={k.lower(): v for k, v in self.headers.items()},
            url=f"{scheme}://{host}{self.path}",
        )
        try:
            resp = sim.app.handle(req)
        except Exception as exc:  # a simulator bug: answer 500 and keep the trace in the log
            import traceback

            resp = Response.html("<html><body><h1>500</h1></body></html>", 500)
            resp.params = {"exception": repr(exc), "trace": traceback.format_exc()[-2000:]}
        delay = sim.app.state.schedule.hold_answer(req.path, req.form, time.monotonic() - start)
        if delay > 0:
            time.sleep(delay)  # simulated server latency (the server thread, never a test)
        # Logged before the answer leaves, so a client that saw the response also sees the entry.
        sim._log(req, resp, t0, wall, time.monotonic() - start, epoch)
        self.send_response(resp.status)
        self.send_header("Content-Type", resp.content_type)
        self.send_header("Content-Length", str(len(resp.body)))
        self.send_header("Cache-Control", "no-cache")
        for k, v in resp.headers:
            self.send_header(k, v)
        self.end_headers()
        if not head and resp.cut_at is not None:
            # a transfer cut short: the announced length never arrives, the connection drops
            self.wfile.write(resp.body[: resp.cut_at])
            self.wfile.flush()
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
        elif not head:
            self.wfile.write(resp.body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that went away mid-answer (a test killing the browser, a cancelled fetch) is
        # normal traffic, not a simulator bug: no traceback on stderr. Anything else is printed.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class SimServer:
    """The CNKI simulator. `start()` serves in a daemon thread; use as a context manager in tests."""

    def __init__(
        self,
        corpus: Corpus | None = None,
        scenario: dict[str, Any] | Scenario | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        hosts_mode: bool = False,
        request_log_path: Path | str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.corpus = corpus if corpus is not None else Corpus.load()
        self.scenario = Scenario.from_obj(scenario)
        self.host = host
        self.port = port
        self.hosts_mode = hosts_mode
        self.clock = clock
        self.log = RequestLog(request_log_path)
        self.epoch = 0  # reset() count: a request logs only into the log it arrived in
        self.links = SimLinks(self)
        self.app = App(self.corpus, self.scenario, self.links, clock, ".cnki.net" if hosts_mode else None)
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self._ssl_context: ssl.SSLContext | None = None
        self.ca_pem: bytes | None = None

    # ------------------------------------------------------------ lifecycle

    def start(self) -> SimServer:
        if self._httpd is not None:
            return self
        if self.hosts_mode:
            self._ssl_context = self._make_tls()
        handler = type("SimHandler", (_Handler,), {"sim": self})
        self._httpd = _Server((self.host, self.port), handler)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="cnki-sim", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> SimServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _make_tls(self) -> ssl.SSLContext:
        import trustme

        ca = trustme.CA(organization_name="cnki-mcp simulator")
        cert = ca.issue_cert(*HOSTS.values(), "*.cnki.net", "cnki.net", "127.0.0.1", "localhost")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        cert.configure_cert(ctx)
        ctx.set_alpn_protocols(["http/1.1"])
        self.ca_pem = ca.cert_pem.bytes()
        return ctx

    # ------------------------------------------------------------ API

    @property
    def origin(self) -> str:
        """Where the socket listens (`http://127.0.0.1:PORT`; https in hosts mode)."""
        scheme = "https" if self.hosts_mode else "http"
        return f"{scheme}://{self.host}:{self.port}"

    @property
    def site_origin(self) -> str:
        """The origin of the kns pages as a browser sees them."""
        return f"https://{HOSTS['kns']}" if self.hosts_mode else self.origin

    def url(self, path: str) -> str:
        return self.links.kns(path)

    def chromium_args(self) -> list[str]:
        """Chromium flags that send *.cnki.net to this server (hosts mode)."""
        rules = f"MAP *.cnki.net:443 {self.host}:{self.port},MAP cnki.net:443 {self.host}:{self.port}"
        return [f"--host-resolver-rules={rules}", "--ignore-certificate-errors"]

    def reset(self) -> None:
        """Forget requests (those still being answered too), tokens, cursors, sessions,
        verification state and fault counters."""
        self.epoch += 1
        self.app.reset()
        self.log.clear()

    def forget_sessions(self) -> None:
        """Expire every guest session (`KNS2COOKIE`) issued so far; `reset()` keeps them."""
        self.app.forget_sessions()

    def forget_logins(self) -> None:
        """End every login session (the site dropped them); `reset()` does too, with everything else."""
        self.app.forget_logins()

    def set_scenario(self, scenario: dict[str, Any] | Scenario | None) -> None:
        self.scenario = Scenario.from_obj(scenario)
        self.app.set_scenario(self.scenario)

    @property
    def requests(self) -> list[LogEntry]:
        return self.log.entries()

    def requests_for(self, path_prefix: str, method: str | None = None) -> list[LogEntry]:
        return self.log.for_path(path_prefix, method)

    def add_record(self, record: dict[str, Any]) -> str:
        """Add a record to the served corpus at runtime (records.jsonl format); returns its id.
        The shared test server is reset, not rebuilt, between tests: remove it again after."""
        with self.app.state.lock:
            return self.corpus.add_record(record).id

    def remove_record(self, record_id: str) -> None:
        with self.app.state.lock:
            self.corpus.remove_record(record_id)

    def issue_detail_url(self, record_id: str) -> str:
        """A fresh detail URL (what a grid row would link to)."""
        return self.links.detail(record_id)

    def _log(self, req: Request, resp: Response, t0: float, wall: float, duration: float, epoch: int) -> None:
        if epoch != self.epoch:
            # it arrived before a reset(): an answer delayed past it (a latency rule) belongs to
            # the requests reset() forgot, not to the next test's (it was counted there)
            return
        params = dict(resp.params)
        if req.path != "/kns8s/brief/grid":
            for k in _LOG_PARAMS:
                src = req.query.get(k) if k in req.query else req.form.get(k)
                if src is not None and k not in params:
                    params[k] = src
        self.log.add(
            LogEntry(
                t=t0,
                wall=wall,
                method=req.method,
                host=req.host,
                path=req.path,
                params=params,
                status=resp.status,
                fault=resp.fault,
                client=req.cookies.get(CLIENT_COOKIE, ""),
                duration=duration,
            )
        )
