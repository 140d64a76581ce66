"""Settings: one frozen object built from the environment by `load_settings`, the only
reader of `os.environ` in the package. Everything else receives Settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

from cnki_mcp.errors import ConfigInvalid

# Chromium calls Google's services unless told not to; on a closed network that only
# produces refused connections and slow starts.
QUIET_BROWSER_FLAGS: tuple[str, ...] = (
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
    "--no-default-browser-check",
    "--disable-features=Translate,MediaRouter,OptimizationHints",
)

REAL_HOSTS: dict[str, str] = {
    "kns": "https://kns.cnki.net",
    "navi": "https://navi.cnki.net",
    "bar": "https://bar.cnki.net",
    "login": "https://login.cnki.net",
    "www": "https://www.cnki.net",
}


@dataclass(frozen=True, slots=True)
class Settings:
    data_dir: Path
    browser_path: str | None = None
    headless: bool | None = None  # None: headed when a display exists
    request_interval_ms: int = 500
    max_inflight: int = 6
    workers: int = 8
    inline_wait_seconds: float = 40.0
    site_origin: str | None = None  # CNKI_SITE_ORIGIN: every CNKI URL on one origin (simulator)
    extra_browser_args: tuple[str, ...] = ()
    host_resolver_rules: str | None = None  # hosts mode: map *.cnki.net to the simulator
    ignore_certificate_errors: bool = False
    mcp_token: str | None = None
    display: str | None = None
    log_level: str = "INFO"
    human_timeout_seconds: float = 20 * 60
    # site-rules.md §11.3: how long a detail page's scripts must be idle before a click (the
    # simulator's test stacks, whose pages go idle at once, use less; no environment variable)
    settle_quiet_seconds: float = 1.5
    # how often a human step's page is looked at while the person works in it (the simulator's
    # test stacks, whose person acts at once, look more often; no environment variable)
    human_poll_seconds: float = 1.0
    # CNKI_READ_ONLY: tools that download, write files or could spend money are hidden and
    # refused (DESIGN.md "Read-only mode").
    read_only: bool = False
    extra: Mapping[str, str] = field(default_factory=dict)

    @property
    def browser_args(self) -> tuple[str, ...]:
        args = list(QUIET_BROWSER_FLAGS)
        if self.host_resolver_rules:
            args.append(f"--host-resolver-rules={self.host_resolver_rules}")
        if self.ignore_certificate_errors:
            args.append("--ignore-certificate-errors")
        args.extend(self.extra_browser_args)
        return tuple(args)

    def origin(self, host: str) -> str:
        """Origin serving CNKI host `host` (kns, navi, bar, login, www)."""
        if self.site_origin:
            return self.site_origin
        return REAL_HOSTS[host]

    def with_(self, **changes: object) -> Settings:
        return replace(self, **changes)  # type: ignore[arg-type]


def _int(env: Mapping[str, str], name: str, default: int, lo: int, hi: int) -> int:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ConfigInvalid(f"{name} 必须是整数", name=name, value=raw) from exc
    if not lo <= value <= hi:
        raise ConfigInvalid(f"{name} 必须在 {lo}..{hi} 之间", name=name, value=value)
    return value


def _float(env: Mapping[str, str], name: str, default: float, lo: float, hi: float) -> float:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise ConfigInvalid(f"{name} 必须是数字", name=name, value=raw) from exc
    if not lo <= value <= hi:
        raise ConfigInvalid(f"{name} 必须在 {lo}..{hi} 之间", name=name, value=value)
    return value


def _bool(env: Mapping[str, str], name: str) -> bool | None:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return None
    low = raw.strip().lower()
    if low in {"1", "true", "yes", "on"}:
        return True
    if low in {"0", "false", "no", "off"}:
        return False
    raise ConfigInvalid(f"{name} 必须是 1 或 0", name=name, value=raw)


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

# Every variable `load_settings` reads (README "配置"); `unknown_variables` names the others.
VARIABLES: tuple[str, ...] = (
    "CNKI_DATA_DIR", "CNKI_BROWSER_PATH", "CNKI_HEADLESS", "CNKI_REQUEST_INTERVAL_MS", "CNKI_MAX_INFLIGHT",
    "CNKI_WORKERS", "CNKI_INLINE_WAIT_SECONDS", "CNKI_SITE_ORIGIN", "CNKI_BROWSER_ARGS",
    "CNKI_HOST_RESOLVER_RULES", "CNKI_IGNORE_CERT_ERRORS", "CNKI_MCP_TOKEN", "CNKI_LOG_LEVEL",
    "CNKI_HUMAN_TIMEOUT_SECONDS", "CNKI_READ_ONLY",
)  # fmt: skip


def unknown_variables(environ: Mapping[str, str]) -> dict[str, str | None]:
    """The `CNKI_*` variables set in `environ` that no setting reads, each with the one it most
    resembles (None when none is close): a misspelt headless switch was ignored without a word, and the
    browser then opened a window."""
    import difflib

    unknown = sorted(name for name in environ if name.upper().startswith("CNKI_") and name.upper() not in VARIABLES)
    return {
        name: next(iter(difflib.get_close_matches(name.upper(), VARIABLES, n=1, cutoff=0.8)), None)
        for name in unknown
    }


def _log_level(raw: str | None) -> str:
    level = (raw or "").strip().upper() or "INFO"
    if level == "WARN":
        return "WARNING"
    if level not in LOG_LEVELS:
        raise ConfigInvalid(f"CNKI_LOG_LEVEL 必须是 {' / '.join(LOG_LEVELS)} 之一", name="CNKI_LOG_LEVEL", value=raw)
    return level


def _token(raw: str | None) -> str | None:
    """CNKI_MCP_TOKEN without surrounding whitespace (a client cannot send it in a header)."""
    token = (raw or "").strip()
    return token or None


def _origin(raw: str | None) -> str | None:
    if not raw:
        return None
    parts = urlsplit(raw.strip())
    if parts.scheme not in {"http", "https"} or not parts.hostname or parts.username or parts.password:
        raise ConfigInvalid("CNKI_SITE_ORIGIN 必须是 http(s)://host[:port]", value=raw)
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        # Its path was dropped without a word: a WebVPN prefix (`…/https/<hex>/`) set here sent
        # every request to the proxy's own /kns8s/… (site-rules.md §2.6: proxies are unsupported).
        raise ConfigInvalid(
            "CNKI_SITE_ORIGIN 只能是 http(s)://host[:port]（模拟站的源），不能带路径；"
            "不支持经 WebVPN / EZproxy 代理访问知网",
            value=raw,
        )
    return f"{parts.scheme}://{parts.netloc}"


def default_data_dir() -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir("cnki_mcp", appauthor=False))


def data_dir_of(environ: Mapping[str, str]) -> Path:
    """`CNKI_DATA_DIR` (resolved), else the platform's default. No home directory to put it in
    (HOME unset and the user not in the password database: a container run with a bare UID)
    is CONFIG_INVALID naming CNKI_DATA_DIR, not a RuntimeError traceback from every command."""
    try:
        data_dir = Path(environ["CNKI_DATA_DIR"]).expanduser() if environ.get("CNKI_DATA_DIR") else default_data_dir()
    except RuntimeError as exc:  # platformdirs / expanduser: "could not determine the home directory"
        raise ConfigInvalid(
            "无法确定主目录（没有 HOME，当前用户也不在密码数据库中），也就无法确定默认数据目录："
            "用 CNKI_DATA_DIR 指向一个可写文件夹的绝对路径（或设置 HOME）",
            name="CNKI_DATA_DIR",
            value=environ.get("CNKI_DATA_DIR"),
        ) from exc
    return data_dir.resolve()


def paths_of(environ: Mapping[str, str]) -> Settings:
    """Settings holding only the data directory and browser the environment names, the rest
    default: what `doctor` still checks when another variable is invalid."""
    return Settings(data_dir=data_dir_of(environ), browser_path=environ.get("CNKI_BROWSER_PATH") or None)


def load_settings(environ: Mapping[str, str]) -> Settings:
    """Build Settings from an environment mapping (pass `os.environ` at the edge)."""
    extra_args = tuple(a for a in (environ.get("CNKI_BROWSER_ARGS") or "").split() if a)
    return Settings(
        data_dir=data_dir_of(environ),
        browser_path=environ.get("CNKI_BROWSER_PATH") or None,
        headless=_bool(environ, "CNKI_HEADLESS"),
        request_interval_ms=_int(environ, "CNKI_REQUEST_INTERVAL_MS", 500, 0, 60_000),
        max_inflight=_int(environ, "CNKI_MAX_INFLIGHT", 6, 1, 64),
        workers=_int(environ, "CNKI_WORKERS", 8, 1, 64),
        inline_wait_seconds=_float(environ, "CNKI_INLINE_WAIT_SECONDS", 40.0, 0.0, 55.0),
        site_origin=_origin(environ.get("CNKI_SITE_ORIGIN")),
        extra_browser_args=extra_args,
        host_resolver_rules=environ.get("CNKI_HOST_RESOLVER_RULES") or None,
        ignore_certificate_errors=bool(_bool(environ, "CNKI_IGNORE_CERT_ERRORS")),
        mcp_token=_token(environ.get("CNKI_MCP_TOKEN")),
        display=environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY") or None,
        log_level=_log_level(environ.get("CNKI_LOG_LEVEL")),
        human_timeout_seconds=_float(environ, "CNKI_HUMAN_TIMEOUT_SECONDS", 1200.0, 1.0, 86_400.0),
        read_only=bool(_bool(environ, "CNKI_READ_ONLY")),
    )
