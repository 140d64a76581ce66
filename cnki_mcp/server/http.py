"""Streamable HTTP at /mcp, DNS-rebinding protection (Host and Origin allowlists) and, when
CNKI_MCP_TOKEN is set, a bearer token on every request (401 without it), because the server acts
on the user's CNKI account.

By default HTTP serves sessions (`Mcp-Session-Id`) whose responses are SSE streams, so progress
notifications, logging and sampling reach the client exactly as over stdio. `stateless=True`
(`cnki-mcp serve --stateless`) answers each POST with plain JSON and keeps no session; there is
then no stream for a `GET /mcp` to open, so it is answered 405 at once (the specification's
answer for a server without a standalone stream) instead of being held open."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import signal
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator, MutableMapping, Sequence
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings

from cnki_mcp.server.errors import CnkiServer

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# Loopback names with any port, and without one (the scheme's default port: a server on port 80
# gets `Host: localhost` and pages on http://localhost send that origin).
LOCAL_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]")
LOCAL_ORIGINS = (
    "http://127.0.0.1:*",
    "http://localhost:*",
    "http://[::1]:*",
    "http://127.0.0.1",
    "http://localhost",
    "http://[::1]",
)


def security_settings(
    host: str, port: int, allowed_hosts: Sequence[str] = (), allowed_origins: Sequence[str] = ()
) -> TransportSecuritySettings:
    hosts = [*LOCAL_HOSTS, *allowed_hosts]
    origins = [*LOCAL_ORIGINS, *allowed_origins]
    if host not in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::"):
        hosts += [host, f"{host}:{port}", f"{host}:*"]
        origins += [f"http://{host}:{port}", f"https://{host}:{port}"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


class BearerToken:
    """ASGI middleware: every HTTP request needs `Authorization: Bearer <token>`."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._authorised(scope):
            body = json.dumps(
                {"error": "unauthorized", "message": "需要 Authorization: Bearer <CNKI_MCP_TOKEN>"}
            ).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"www-authenticate", b'Bearer realm="cnki-mcp"'),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    def _authorised(self, scope: Scope) -> bool:
        for name, value in scope.get("headers", []):
            if name.lower() == b"authorization":
                scheme, _, given = bytes(value).partition(b" ")
                return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self._token)
        return False


WILDCARD_HOSTS = ("0.0.0.0", "::", "")


def _authority(address: str, port: int) -> bytes:
    name = address.removeprefix("::ffff:")  # an IPv4 client of a dual-stack socket
    return (f"[{name}]:{port}" if ":" in name else f"{name}:{port}").encode()


class OwnAddressHost:
    """ASGI middleware for a server bound to every interface (`--host 0.0.0.0`): a request whose
    Host is exactly the IP address and port its connection arrived on addressed this machine
    directly (a client on the network using the server's address), which DNS rebinding cannot
    produce (a rebinding page sends its own host name). Such a Host is passed on as the loopback
    name the allowlist accepts; every other Host still meets the allowlist (421)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = scope.get("server") if scope["type"] == "http" else None
        if server and server[0] and server[1]:
            own = _authority(str(server[0]), int(server[1]))
            headers = list(scope.get("headers", []))
            for i, (name, value) in enumerate(headers):
                if name.lower() == b"host" and bytes(value).lower() == own.lower():
                    headers[i] = (name, f"127.0.0.1:{int(server[1])}".encode())
                    scope = {**scope, "headers": headers}
                    break
        await self.app(scope, receive, send)


class NoStandaloneStream:
    """ASGI middleware for stateless mode: `GET` (the standalone SSE stream) is 405 at once."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("method") == "GET":
            body = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": -32000, "message": "Method Not Allowed: stateless server, no SSE stream"},
                }
            ).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 405,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"allow", b"POST, DELETE"),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def http_app(
    server: CnkiServer,
    *,
    host: str,
    port: int,
    token: str | None,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    stateless: bool = False,
) -> ASGIApp:
    """Sessions with SSE responses, or (`stateless`) one JSON response per POST."""
    app: ASGIApp = server.streamable_http_app(
        streamable_http_path="/mcp",
        json_response=stateless,
        stateless_http=stateless,
        transport_security=security_settings(host, port, allowed_hosts, allowed_origins),
        host=host,
    )
    if stateless:
        app = NoStandaloneStream(app)
    if host.strip().strip("[]") in WILDCARD_HOSTS:
        app = OwnAddressHost(app)
    if token:
        app = BearerToken(app, token)
    return app


def http_server(
    server: CnkiServer,
    *,
    host: str,
    port: int,
    token: str | None,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    stateless: bool = False,
) -> Any:
    """A uvicorn.Server for the app (`await it.serve(sockets=...)`; stop with `should_exit = True`)."""
    import uvicorn

    answering = Answering(
        http_app(
            server,
            host=host,
            port=port,
            token=token,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
            stateless=stateless,
        )
    )
    if not token and host not in ("127.0.0.1", "localhost", "::1"):
        log.warning(
            "HTTP on %s without CNKI_MCP_TOKEN: anyone who reaches it can use your CNKI account", host
        )
    # Open SSE streams (a client's GET) must not keep a stopping server alive.
    config = uvicorn.Config(
        answering, host=host, port=port, log_level="warning", lifespan="on", timeout_graceful_shutdown=5
    )

    class Server(uvicorn.Server):
        """uvicorn's server, except that the first SIGTERM/SIGINT ends the operations before the
        server starts stopping: they end `interrupted` (checkpoints kept) and every call waiting
        on one is answered with its record and next_step. Before, the exit flag closed the SSE
        streams at once (sse-starlette watches it) and the waiting calls got no answer ("Server
        returned an error response" / "SSE stream ended without a response"), so the client never
        learnt its operation_id. A second signal stops at once, as uvicorn does."""

        _loop: asyncio.AbstractEventLoop | None = None
        _stopping = False

        async def serve(self, sockets: list[socket.socket] | None = None) -> None:
            self._loop = asyncio.get_running_loop()
            await super().serve(sockets)

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            # SIGHUP (the terminal running the server closed) stops it as SIGTERM does; uvicorn
            # handles SIGINT and SIGTERM only, so it killed the process on the spot: operations
            # left `running`, calls unanswered, the store not closed. Left alone when ignored
            # (`nohup`). Inside uvicorn's capture, so the SIGHUP it raises again after the stop
            # meets the handler found at start, as SIGTERM's does.
            with super().capture_signals():
                hangup: int | None = getattr(signal, "SIGHUP", None)  # not on Windows
                if (
                    hangup is None
                    or threading.current_thread() is not threading.main_thread()
                    or signal.getsignal(hangup) == signal.SIG_IGN
                ):
                    yield
                    return
                before = signal.signal(hangup, self.handle_exit)
                try:
                    yield
                finally:
                    signal.signal(hangup, signal.SIG_DFL if before is None else before)

        def handle_exit(self, sig: int, frame: Any) -> None:
            if self._stopping or self.should_exit or self._loop is None:
                super().handle_exit(sig, frame)
                return
            self._stopping = True
            self._loop.call_soon_threadsafe(self._begin_stop, sig, frame)  # safe in a signal handler

        def _begin_stop(self, sig: int, frame: Any) -> None:
            task = asyncio.ensure_future(self._answer_then_exit(sig, frame))
            _background.add(task)
            task.add_done_callback(_background.discard)

        async def _answer_then_exit(self, sig: int, frame: Any) -> None:
            try:
                # A 2026-era client's listen stream is a POST that never ends by itself: closed
                # here, it ends with its final result instead of holding answered() for its whole
                # bound and then uvicorn's graceful timeout (which cancels it with an error).
                server.close_listen_streams()
                # bounded: a runner that ignores its cancel must not hold the exit back
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(end_operations(server), ANSWER_SECONDS)
                await answering.answered(ANSWER_SECONDS)
            finally:
                super().handle_exit(sig, frame)

    return Server(config)


_background: set[asyncio.Task[None]] = set()

ANSWER_SECONDS = 5.0  # at shutdown, how long the calls in flight get to send their answers


class Answering:
    """Counts the POSTs (JSON-RPC requests) whose response has not been sent in full, so a
    stopping server can let them answer first; the standalone GET stream never ends, so it is
    not counted."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        self.in_flight += 1
        self._idle.clear()
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
            if not self.in_flight:
                self._idle.set()

    async def answered(self, seconds: float) -> None:
        """Wait until no POST is being answered, at most `seconds`."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), seconds)


async def end_operations(server: CnkiServer) -> None:
    """Stop the operations of the services `server`'s lifespan opened (none open: nothing)."""
    services = server.services
    if services is None:
        return
    try:
        await services.jobs.shutdown()
    except Exception:
        log.warning("stopping operations before the HTTP shutdown failed", exc_info=True)


async def serve_http(
    server: CnkiServer,
    *,
    host: str,
    port: int,
    token: str | None,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    sockets: Sequence[socket.socket] = (),
    stateless: bool = False,
) -> None:
    """Run uvicorn until it is stopped. `sockets`: already bound, listening sockets (all on one
    port; a name such as localhost may give one per address family)."""
    actual_port = sockets[0].getsockname()[1] if sockets else port
    srv = http_server(
        server,
        host=host,
        port=actual_port,
        token=token,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
        stateless=stateless,
    )
    await srv.serve(sockets=list(sockets) or None)
