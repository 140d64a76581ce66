"""`cnki-mcp serve`: the MCP server over stdio (default) or streamable HTTP.

Services (store, operations, the lazy browser) are opened before serving, so a data directory
held by another process is a clear DATA_DIRECTORY_IN_USE at startup; they are closed when the
session (stdio EOF) or the HTTP server ends. Over stdio the client's handshake is answered from
the packaged snapshot before the MCP SDK is imported (`server/fast_start.py`).

Remote binding needs a token: HTTP on an address that is not loopback without CNKI_MCP_TOKEN
refuses to start (TOKEN_REQUIRED) unless `--insecure-no-token` says the person means it; anyone
who reaches such a port could use their CNKI account and read their data directory."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import re
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import TypeVar

from cnki_mcp.errors import ListenFailed, TokenRequired

T = TypeVar("T")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--transport", choices=("stdio", "http"), default="stdio", help="传输方式 / transport: stdio (default) or http"
    )
    parser.add_argument("--host", default="127.0.0.1", help="HTTP 监听地址 / HTTP listen address (default 127.0.0.1)")
    parser.add_argument("--port", type=port_number, default=8000, help="HTTP 端口 / HTTP port (default 8000; 0 = any free port)")
    parser.add_argument(
        "--allowed-host",
        action="append",
        type=host_header,
        default=[],
        metavar="H",
        help="额外接受的 Host 头，可重复 / extra Host header value to accept (repeatable)",
    )
    parser.add_argument(
        "--allowed-origin",
        action="append",
        type=origin_header,
        default=[],
        metavar="O",
        help="额外接受的 Origin，可重复 / extra Origin to accept (repeatable)",
    )
    parser.add_argument(
        "--insecure-no-token",
        action="store_true",
        help="allow HTTP on a non-loopback address without CNKI_MCP_TOKEN (anyone who reaches it "
        "can use your CNKI account) / 允许在非本机地址上不设令牌（不安全）",
    )
    parser.add_argument(
        "--read-only",
        action="store_true",
        help="hide and refuse tools that download, write files or could spend money (= CNKI_READ_ONLY=1) "
        "/ 只读模式",
    )
    parser.add_argument(
        "--stateless",
        action="store_true",
        help="无会话的 HTTP：每个请求一个 JSON 响应 / HTTP without sessions: one JSON response per request "
        "(no progress, logging or sampling)",
    )


# Options only HTTP reads: (argparse dest, flag, default).
HTTP_ONLY: tuple[tuple[str, str, object], ...] = (
    ("host", "--host", "127.0.0.1"),
    ("port", "--port", 8000),
    ("allowed_host", "--allowed-host", []),
    ("allowed_origin", "--allowed-origin", []),
    ("stateless", "--stateless", False),
    ("insecure_no_token", "--insecure-no-token", False),
)


def stdio_notes(args: argparse.Namespace, *, stdin_is_tty: bool) -> list[str]:
    """What stderr tells a person who starts the stdio server by hand. `serve --port 9000` (no
    `--transport http`) and `serve` at a terminal printed nothing and waited for JSON-RPC on stdin:
    it looked hung. HTTP options given with stdio are named as ignored (a warning, not an error: a
    client's entry that carries one still starts)."""
    notes: list[str] = []
    given = [flag for dest, flag, default in HTTP_ONLY if getattr(args, dest, default) != default]
    if given:
        flags = " ".join(given)
        notes.append(
            f"注意：{flags} 只用于 --transport http；现在以 stdio 运行，已忽略 / "
            f"note: HTTP-only options ignored, serving stdio: {flags}"
        )
    if stdin_is_tty:
        notes.append(
            "cnki-mcp serve 在标准输入输出上等待 AI 客户端的 MCP 消息，通常由客户端自己启动；"
            "在终端里试用请运行 cnki-mcp demo，HTTP 服务请加 --transport http，Ctrl-C 退出 / "
            "waiting for an MCP client on stdin/stdout (clients start it themselves); "
            "try `cnki-mcp demo`, or add --transport http; Ctrl-C quits"
        )
    return notes


def host_header(text: str) -> str:
    """argparse type for --allowed-host: a Host header's value, `name[:port]` or `name:*`. The
    header never carries a scheme or a path, so `http://mybox.local:8000` or `mybox.local:8000/mcp`
    was accepted and matched no request (every one answered 421)."""
    value = text.strip()
    if not value or "://" in value or "/" in value or any(c.isspace() for c in value):
        raise argparse.ArgumentTypeError(
            f"不是 Host 头的值：{text}（应为 主机名[:端口]，如 mybox.local:8000，不带 http:// 和路径）"
        )
    return value


_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")


def origin_header(text: str) -> str:
    """argparse type for --allowed-origin: an Origin header's value, `scheme://name[:port]` (or
    `:*`) in lower case as browsers send it, any scheme (`tauri://localhost`,
    `chrome-extension://…`, `vscode-webview://…`), or `null`. Browsers send it without a path or
    trailing slash, so `app.example.com` or `https://app.example.com/` matched no request (every
    one answered 403)."""
    value = text.strip().lower()
    if value == "null":  # the Origin of a sandboxed frame or a file: page
        return value
    scheme, sep, rest = value.partition("://")
    if not _SCHEME.fullmatch(scheme) or not sep or not rest or "/" in rest or any(c.isspace() for c in rest):
        raise argparse.ArgumentTypeError(
            f"不是 Origin 头的值：{text}（应为 协议://主机名[:端口]，如 https://app.example.com，不带路径和结尾的 /）"
        )
    return value


def port_number(text: str) -> int:
    """argparse type: a TCP port, 0..65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"不是端口号：{text}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"端口号必须在 0..65535 之间：{text}")
    return value


def listen_sockets(host: str, port: int) -> list[socket.socket]:
    """Listening TCP sockets on host:port, one per address the host resolves to (as uvicorn's own
    bind does: `localhost` may be both 127.0.0.1 and ::1), bound before anything is announced: a
    port in use, an address that is not this machine's or a name that does not resolve is
    LISTEN_FAILED."""
    name = host.strip().strip("[]")
    bound: list[socket.socket] = []
    try:
        infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        for family, address in dict.fromkeys((i[0], i[4]) for i in infos):
            if bound:  # port 0: every address on the port the first one got
                address = (address[0], bound[0].getsockname()[1], *address[2:])
            bound.append(socket.create_server(address, family=family, backlog=2048))
    except OSError as exc:
        for sock in bound:
            sock.close()
        raise ListenFailed(
            f"无法在 {host}:{port} 上监听：{exc.strerror or exc}；换一个 --port，结束占用该端口的程序，"
            "或改用本机的地址作 --host",
            host=host,
            port=port,
            reason=exc.strerror or type(exc).__name__,
        ) from exc
    return bound


def http_url(host: str, port: int) -> str:
    """The URL a client uses (an IPv6 literal in brackets)."""
    name = host.strip().strip("[]")
    return f"http://[{name}]:{port}/mcp" if ":" in name else f"http://{name}:{port}/mcp"


def is_loopback(host: str) -> bool:
    """Whether `host` only listens on this machine (127.0.0.0/8, ::1, localhost)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False  # any other host name may resolve to a reachable address


def check_token_rule(transport: str, host: str, token: str | None, insecure_no_token: bool) -> None:
    """TOKEN_REQUIRED for HTTP on a non-loopback address without a token and without the flag."""
    if transport == "http" and not token and not insecure_no_token and not is_loopback(host):
        raise TokenRequired(
            f"在 {host} 上提供 HTTP 服务必须设置 CNKI_MCP_TOKEN；确需不设令牌时请加 --insecure-no-token",
            host=host,
        )


# The event loop's Ctrl-C handler, kept while SIGINT is ignored (`run_like_ctrl_c`).
_LOOP_CTRL_C: list[Callable[[int, object], object]] = []


def as_ctrl_c(signum: int, frame: object) -> None:
    """SIGTERM handler: whatever SIGINT does now. Inside `anyio.run` that is the event loop's own
    Ctrl-C handler, which cancels the main task alone, so the lifespan closes the browser while
    Playwright's connection still runs. `signal.default_int_handler` raised KeyboardInterrupt in
    whichever task ran, and the loop's teardown cancelled every task at once, Playwright's
    connection among them: the browser could not be closed and was killed (SIGKILL), leaving its
    `org.chromium.Chromium.*` socket folder in the temporary directory and the session cookies
    since the last autosave unsaved. Outside the loop (or with SIGINT ignored) it is Ctrl-C."""
    handler = signal.getsignal(signal.SIGINT)
    if not callable(handler) and _LOOP_CTRL_C:
        handler = _LOOP_CTRL_C[-1]  # SIGINT ignored: the loop's own handler, kept aside
    if callable(handler):
        handler(signum, frame)
        return
    raise KeyboardInterrupt


def stop_like_ctrl_c() -> None:
    """SIGTERM, and SIGHUP (the terminal that runs the process closed) unless it is ignored
    (`nohup`), end the process as Ctrl-C does (`as_ctrl_c`). SIGHUP killed it on the spot: no
    clean-up, the browser left to Playwright's driver, a demo's temporary data directory kept."""
    signal.signal(signal.SIGTERM, as_ctrl_c)
    hangup = getattr(signal, "SIGHUP", None)  # not on Windows
    if hangup is not None and signal.getsignal(hangup) == signal.SIG_DFL:
        signal.signal(hangup, as_ctrl_c)


def run_like_ctrl_c(main: Callable[..., Awaitable[T]], *args: object) -> T:
    """`anyio.run(main, *args)` with SIGTERM (and SIGHUP) ending it as Ctrl-C does
    (`stop_like_ctrl_c`), also when SIGINT is ignored, as in a background job of a
    non-interactive shell: the loop installs its Ctrl-C handler only over Python's default one,
    so SIGTERM raised KeyboardInterrupt wherever the loop was and the browser was killed, leaving
    its folder in the temporary directory. The loop is let install it, the handler is kept for
    SIGTERM, and SIGINT is ignored again inside the loop: a Ctrl-C meant for the shell's
    foreground still does not stop the server. `stop_like_ctrl_c` may have run before (it is
    idempotent): a SIGTERM before the loop is Ctrl-C outside it."""
    import anyio

    stop_like_ctrl_c()
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        return anyio.run(main, *args)

    async def ignoring_ctrl_c_again() -> T:
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):
            _LOOP_CTRL_C.append(handler)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        return await main(*args)

    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return anyio.run(ignoring_ctrl_c_again)
    finally:
        _LOOP_CTRL_C.clear()
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _isatty(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (OSError, ValueError):
        return False


def _warm_later() -> None:
    """After the handshake: the first raw question finds the segmenter's dictionary loaded
    (DESIGN.md "Start-up", step 5)."""
    from cnki_mcp.query.segment import warm_in_background

    warm_in_background()


def run(args: argparse.Namespace) -> int:
    import anyio

    from cnki_mcp.services import Services
    from cnki_mcp.settings import load_settings

    settings = load_settings(os.environ)
    if getattr(args, "read_only", False):
        settings = settings.with_(read_only=True)
    check_token_rule(args.transport, args.host, settings.mcp_token, args.insecure_no_token)
    logging.basicConfig(
        level=getattr(logging, settings.log_level, logging.INFO),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    services = Services.open(settings, environ=dict(os.environ))  # DATA_DIRECTORY_IN_USE surfaces here
    handed = False

    def open_services() -> Services:
        nonlocal handed
        if handed:  # a second lifespan would need its own store; one process, one data dir
            raise RuntimeError("services already in use")
        handed = True
        return services

    try:
        if args.transport == "stdio":
            for note in stdio_notes(args, stdin_is_tty=_isatty(sys.stdin)):
                print(note, file=sys.stderr, flush=True)
            # SIGTERM (a client or process manager stopping the server) ends it as Ctrl-C does:
            # operations interrupted with their checkpoints, browser and store closed. By default
            # it killed the process on the spot: operations left `running`, the browser orphaned
            # until Playwright's driver noticed, the store's WAL not checkpointed.
            stop_like_ctrl_c()
            # The handshake is answered before the MCP SDK is imported (server/fast_start.py).
            from cnki_mcp.server.fast_start import Handover, load_snapshot, serve_handshake

            # The snapshot lists every tool; read-only mode lists fewer (DESIGN.md "Read-only mode").
            snapshot = None if settings.read_only else load_snapshot()
            handover = serve_handshake(snapshot) if snapshot is not None else Handover()
            logging.getLogger("cnki_mcp.server").info(
                "stdio: %d handshake replies sent before loading the MCP SDK", handover.replies
            )
            from cnki_mcp.server.app import build_server
            from cnki_mcp.server.stdio import run_stdio

            server = build_server(open_services)
            _warm_later()
            run_like_ctrl_c(run_stdio, server, handover)
        else:
            from cnki_mcp.server.app import build_server

            socks = listen_sockets(args.host, args.port)
            server = build_server(open_services)
            _warm_later()
            from cnki_mcp.server.http import serve_http

            print(f"cnki-mcp: {http_url(args.host, socks[0].getsockname()[1])}", file=sys.stderr, flush=True)
            anyio.run(
                lambda: serve_http(
                    server,
                    host=args.host,
                    port=args.port,
                    token=settings.mcp_token,
                    allowed_hosts=args.allowed_host,
                    allowed_origins=args.allowed_origin,
                    sockets=socks,
                    stateless=args.stateless,
                )
            )
    finally:
        if not handed:
            anyio.run(services.close)
    return 0
