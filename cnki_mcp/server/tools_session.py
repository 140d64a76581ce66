"""login, session_status and diagnostics. Diagnostics is local only and never starts the browser."""

from __future__ import annotations

import inspect
import os
import platform
import re
import sys
import unicodedata
from importlib import metadata
from typing import Annotated, Any
from urllib.parse import urlsplit

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field

from cnki_mcp import __version__
from cnki_mcp.errors import CnkiError, InvalidInput
from cnki_mcp.jobs import OperationKind
from cnki_mcp.server.deps import services_of
from cnki_mcp.server.errors import CnkiServer, recorded_error
from cnki_mcp.server.models import (
    BrowserDiagnostics,
    BrowserNetwork,
    Diagnostics,
    IdentityView,
    OperationView,
    SessionStatusView,
)
from cnki_mcp.server.progress import start_operation, typed_view
from cnki_mcp.services import Services

LOGIN_DESCRIPTION = """在专用浏览器中打开知网登录页，由用户登录（访问知网；个人、机构 IP、机构账号、机构远程访问均可）。已登录（先用一次请求确认知网当前会话）且未设 force 时直接返回身份。
remote_access_url：机构远程访问入口（如学校的 CARSI 链接），须为不含账号信息的 https 地址；不支持 WebVPN/EZproxy 代理（REMOTE_ACCESS_UNSUPPORTED）。
awaiting_user 时请用户在弹出的窗口登录，再用 operation_status 等待。账号密码只在浏览器中输入，不经过 MCP。"""

SESSION_DESCRIPTION = """查看知网登录状态。refresh=false：返回本次运行最近一次识别的结果（cached=true，本地，不访问知网；observed_at 为观察到的时间；未检查过时 evidence_source=not_checked；之后某次请求遇到知网登录页时 evidence_source=login_wall、personal=not_observed）。
refresh=true：在浏览器中重新读取知网页头（访问知网，约 1–2 次请求）。显示机构名称不代表该机构订购了所有资源。"""

DIAGNOSTICS_DESCRIPTION = """本地诊断（不启动浏览器，不访问知网）：版本、平台、数据目录、是否找到浏览器、请求间隔与并发、调用内等待时间、只读模式、限速器状态、存储提示、当前与最近的任务。出现问题时先调用它。"""


class LoginOperation(OperationView):
    result: IdentityView | None = Field(default=None, description="登录后识别到的身份")


# A host name as a browser opens it: letters of any script, digits, hyphens and dots (an IPv6
# address comes without its brackets from urlsplit). Anything else (a space, `<`, `%`, a NUL) is a
# URL Chromium will not navigate to: the login tab stayed about:blank and the operation waited
# for a person there.
_HOST = re.compile(r"[\w.-]+|[0-9A-Fa-f:.]+")


def validate_remote_access_url(url: str) -> str:
    """https, a host a browser can open, no user name or password in it, no control or invisible
    characters (INVALID_ARGUMENT otherwise)."""
    text = url.strip()
    odd = [ch for ch in text if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")]
    if odd:
        raise InvalidInput(
            "remote_access_url 含有控制字符或不可见字符", field="remote_access_url",
            characters=[f"U+{ord(ch):04X}" for ch in dict.fromkeys(odd)],
        )  # fmt: skip
    try:
        parts = urlsplit(text)
        _ = parts.port
    except ValueError as exc:
        raise InvalidInput("remote_access_url 不是有效的地址", field="remote_access_url") from exc
    if parts.scheme != "https":
        raise InvalidInput(
            "remote_access_url 必须是 https 地址", field="remote_access_url", scheme=parts.scheme
        )
    if not parts.hostname:
        raise InvalidInput("remote_access_url 缺少主机名", field="remote_access_url")
    if not _HOST.fullmatch(parts.hostname):
        raise InvalidInput("remote_access_url 的主机名无效", field="remote_access_url", host=parts.hostname)
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise InvalidInput("remote_access_url 不能包含账号或密码", field="remote_access_url")
    return text


def register(server: CnkiServer) -> None:
    @server.tool(
        name="login",
        title="登录知网",
        description=LOGIN_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True),
    )
    async def login(
        ctx: Context[Any, Any],
        remote_access_url: Annotated[
            str | None, Field(max_length=2000)
        ] = None,
        force: bool = False,
    ) -> LoginOperation:
        url = validate_remote_access_url(remote_access_url) if remote_access_url else None
        services = services_of(ctx)
        backend = services.backend

        async def runner(op: Any) -> Any:
            do_login = getattr(backend, "login", None)
            if do_login is not None:
                identity = await do_login(op, remote_access_url=url, force=force)
            else:  # a backend without a login flow: report who we are
                identity = await backend.identity(op)
            # a login or an institution: the reader's trial bodies go, even when the identity kept
            # (perhaps stale: CNKI's session expired since) already showed that access
            observed = services.remember_identity(identity, login=True)
            return IdentityView.of(observed.identity, observed.observed_at, observed.evidence)

        record = await start_operation(
            ctx, services.jobs, OperationKind.LOGIN, runner, stage="login", message="打开登录页面"
        )
        return typed_view(LoginOperation, OperationView.of(record))

    @server.tool(
        name="session_status",
        title="登录状态",
        description=SESSION_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True, idempotent_hint=True),
    )
    async def session_status(ctx: Context[Any, Any], refresh: bool = False) -> SessionStatusView:
        services = services_of(ctx)
        if not refresh:
            return _cached_identity(services)
        backend = services.backend

        async def runner(op: Any) -> Any:
            if "refresh" in inspect.signature(backend.identity).parameters:
                identity = await backend.identity(op, refresh=True)  # type: ignore[call-arg]
            else:
                identity = await backend.identity(op)
            observed = services.remember_identity(identity)
            return IdentityView.of(observed.identity, observed.observed_at, observed.evidence)

        record = await start_operation(
            ctx, services.jobs, OperationKind.SESSION, runner, stage="identity", message="读取知网页头"
        )
        if record.status.value == "completed" and record.result:
            return SessionStatusView(**IdentityView.model_validate(record.result).model_dump(), cached=False)
        if record.status.active:
            return SessionStatusView(
                **_cached_identity(services).model_dump(exclude={"operation"})
                | {"operation": OperationView.of(record)}
            )
        error = record.errors[0] if record.errors else None
        if error is None:
            raise CnkiError("读取登录状态失败", operation_id=record.operation_id)
        details = {**error.details, "operation_id": record.operation_id}
        raise recorded_error(error.code, error.message, retryable=error.retryable, **details)

    @server.tool(
        name="diagnostics",
        title="本地诊断",
        description=DIAGNOSTICS_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True),
    )
    async def diagnostics(ctx: Context[Any, Any]) -> Diagnostics:
        return build_diagnostics(services_of(ctx))


def _cached_identity(services: Services) -> SessionStatusView:
    observed = services.identity
    if observed is None:
        return SessionStatusView(cached=True)
    return SessionStatusView(
        **IdentityView.of(observed.identity, observed.observed_at, observed.evidence).model_dump(), cached=True
    )


def _browser(services: Services) -> BrowserDiagnostics:
    from cnki_mcp.site.locate import find_browser

    settings = services.settings
    status = services.host.status()
    found, executable, kind, problem = False, None, None, None
    try:
        cand = find_browser(
            settings.browser_path,
            platform=sys.platform,
            environ=services.environ or {},
            exists=os.path.isfile,
        )
        if cand is not None:
            found, executable, kind = True, cand.path, cand.kind
        else:
            problem = "未找到 Chrome/Edge/Chromium，可设置 CNKI_BROWSER_PATH"
    except CnkiError as exc:
        problem = f"{exc.code}: {exc.message}"
    return BrowserDiagnostics(
        configured_path=settings.browser_path,
        found=found,
        executable=status.get("executable") or executable,
        kind=status.get("kind") or kind,
        problem=problem,
        running=bool(status.get("running")),
        headless=status.get("headless"),
        sandbox=status.get("sandbox"),
        process_id=status.get("process_id"),
        profile_directory=str(status.get("profile_directory")),
        connection_generation=int(status.get("connection_generation") or 0),
        network=_network(services, status.get("headless")),
    )


def _network(services: Services, headless: bool | None) -> BrowserNetwork:
    """How this server's browser reaches CNKI (browser_route.py), from the server's own
    environment: an AI client starts it with an environment of its own, which `cnki-mcp doctor`
    in a shell does not see (DESIGN.md "The network path")."""
    from cnki_mcp.browser_route import browser_route
    from cnki_mcp.site.locate import decide_headless

    settings = services.settings
    if headless is None:  # no browser yet: the one the server would launch
        headless = decide_headless(settings.headless, platform=sys.platform, display=settings.display)
    route = browser_route(services.environ or {}, settings.extra_browser_args, platform=sys.platform, headless=headless)
    return BrowserNetwork(route=route.kind, via=route.via, proxy=route.address)


def memory_from(statm: str | None, maxrss: int | None, *, darwin: bool, page_size: int) -> tuple[int | None, int | None]:
    """(resident now, peak resident) in bytes: now from Linux's /proc/self/statm (its second
    field, in pages), the peak from getrusage's ru_maxrss (KiB on Linux, bytes on macOS). Either
    is None where the platform does not give it."""
    current: int | None = None
    if statm:
        fields = statm.split()
        if len(fields) >= 2 and fields[1].isdigit():
            current = int(fields[1]) * page_size
    peak = None if maxrss is None else (maxrss if darwin else maxrss * 1024)
    if peak is not None and current is not None:
        peak = max(peak, current)  # Linux updates the high-water mark lazily: it can lag behind now
    return current, peak


def _memory() -> tuple[int | None, int | None]:
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            statm: str | None = f.read()
    except OSError:
        statm = None
    try:
        import resource

        maxrss: int | None = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        page_size = resource.getpagesize()
    except Exception:  # no `resource` on Windows
        maxrss, page_size = None, 4096
    return memory_from(statm, maxrss, darwin=sys.platform == "darwin", page_size=page_size)


def _mcp_version() -> str:
    try:
        return metadata.version("mcp")
    except metadata.PackageNotFoundError:
        return "unknown"


def build_diagnostics(services: Services) -> Diagnostics:
    settings = services.settings
    gate = services.gate
    human = (
        {"kind": gate.active_kind, "message": gate.active_message, "operations": gate.waiting_operations}
        if gate.active
        else None
    )
    recent = [
        {
            "operation_id": r.operation_id,
            "kind": r.kind.value,
            "status": r.status.value,
            "stage": r.stage,
            "requests": r.requests,
            "updated_at": r.updated_at.isoformat(),
        }
        for r in services.jobs.recent(10)
    ]
    memory = _memory()
    return Diagnostics(
        version=__version__,
        python=platform.python_version(),
        mcp_version=_mcp_version(),
        platform=f"{platform.system()} {platform.machine()}",
        process_id=os.getpid(),
        memory_rss_bytes=memory[0],
        memory_peak_rss_bytes=memory[1],
        data_dir=str(settings.data_dir),
        settings={
            "request_interval_ms": settings.request_interval_ms,
            "max_inflight": settings.max_inflight,
            "workers": settings.workers,
            "inline_wait_seconds": settings.inline_wait_seconds,
            "headless": settings.headless,
            "site_origin": settings.site_origin,
            "human_timeout_seconds": settings.human_timeout_seconds,
            "token_required": bool(settings.mcp_token),
            "read_only": settings.read_only,
        },
        browser=_browser(services),
        limiter=dict(services.limiter.snapshot()),
        human_step=human,
        store_notices=list(services.store.notices),
        interrupted_at_start=services.interrupted_at_start,
        active_operations=[OperationView.of(r) for r in services.jobs.active_operations()],
        recent_operations=recent,
    )
