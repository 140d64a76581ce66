"""The MCP clients `setup` and `config` know: a registry of data (one `Client` per client)
and pure functions that render the server entry, the snippet, the one-click link and the
config path for a given OS, home and environment. No I/O here."""

from __future__ import annotations

import base64
import json
import ntpath
import posixpath
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import PurePath, PurePosixPath, PureWindowsPath
from typing import Any
from urllib.parse import quote

from cnki_mcp.cli.configfile import (
    merge_dsh,
    merge_json,
    merge_jsonc,
    merge_toml,
    merge_yaml_list,
    merge_yaml_map,
    render_dsh,
)
from cnki_mcp.cli.keep import current_entry, keep_user_settings
from cnki_mcp.errors import UnknownClient

SERVER_NAME = "cnki"
DESCRIPTION = "中国知网（CNKI）检索、题录、阅读、下载与引文"


class ConfigFormat(StrEnum):
    JSON = "json"
    JSONC = "jsonc"  # JSON that may hold comments / trailing commas: spliced, comments kept
    TOML = "toml"
    YAML = "yaml"  # a YAML mapping keyed by server name (Goose `extensions`)
    YAML_LIST = "yaml-list"  # a YAML list of named servers (Continue `mcpServers`)
    DSH = "dsh-yaml"  # DeepSeek Harness patch file (YAML list)


class EntryStyle(StrEnum):
    """The shape of one server entry: most clients take command/args/env; some do not."""

    STANDARD = "standard"  # {command, args, env}
    OPENCODE = "opencode"  # {type: local, command: [cmd, *args], environment, enabled}
    GOOSE = "goose"  # {name, type: stdio, cmd, args, envs, enabled, timeout, description}
    CONTINUE = "continue"  # list item {name, type: stdio, command, args, env}


class InstallMethod(StrEnum):
    WRITE = "write"  # setup merges the entry into the client's config file
    LINK = "link"  # setup opens a one-click import link
    PASTE = "paste"  # the user pastes the snippet into the client's settings


class OSFamily(StrEnum):
    MACOS = "macos"
    WINDOWS = "windows"
    LINUX = "linux"


class Root(StrEnum):
    HOME = "home"
    APPDATA = "appdata"  # %APPDATA% (Windows roaming profile)


class LinkStyle(StrEnum):
    QODER = "qoder"
    TRAE = "trae"
    CHATBOX = "chatbox"
    CHERRY = "cherry-studio"


ALL_OS: tuple[OSFamily, ...] = (OSFamily.MACOS, OSFamily.WINDOWS, OSFamily.LINUX)


@dataclass(frozen=True, slots=True)
class ConfigLocation:
    """`$env_dir/<tail>` when `env_dir` is set in the environment, else
    `<root>/<default_dir>/<tail>`; only on `systems`."""

    tail: tuple[str, ...]
    default_dir: tuple[str, ...] = ()
    root: Root = Root.HOME
    env_dir: str | None = None
    systems: tuple[OSFamily, ...] = ALL_OS


@dataclass(frozen=True, slots=True)
class Client:
    id: str
    name: str
    format: ConfigFormat
    install: InstallMethod
    servers_key: str = "mcpServers"
    extra: tuple[tuple[str, Any], ...] = ()
    locations: tuple[ConfigLocation, ...] = ()
    link: LinkStyle | None = None
    needs_dir: bool = False  # the config folder must exist (the client was started once)
    where: str = ""  # where to paste, for paste clients
    style: EntryStyle = EntryStyle.STANDARD
    cli: str | None = None  # a client CLI that installs the entry itself when on PATH (claude)
    docs: str = ""  # the client's own documentation of this file and key (docs/clients.md)


_STDIO: tuple[tuple[str, Any], ...] = (("type", "stdio"),)
_GEMINI_TIMEOUT: tuple[tuple[str, Any], ...] = (("timeout", 900_000),)
_CLINE: tuple[tuple[str, Any], ...] = (("timeout", 900), ("disabled", False))


def _home(*parts: str) -> ConfigLocation:
    return ConfigLocation(tail=parts[-1:], default_dir=parts[:-1])


def _xdg(*tail: str, systems: tuple[OSFamily, ...] = ALL_OS) -> ConfigLocation:
    """`$XDG_CONFIG_HOME/<tail>`, else `~/.config/<tail>`."""
    return ConfigLocation(tail=tail, default_dir=(".config",), env_dir="XDG_CONFIG_HOME", systems=systems)


_MAC = (OSFamily.MACOS,)
_WIN = (OSFamily.WINDOWS,)
_LINUX = (OSFamily.LINUX,)
CONTINUE_HEADER: tuple[tuple[str, Any], ...] = (("name", "Local Config"), ("version", "1.0.0"), ("schema", "v1"))
GOOSE_TIMEOUT = 300


CLIENTS: tuple[Client, ...] = (
    Client(
        "claude-desktop",
        "Claude Desktop",
        ConfigFormat.JSON,
        InstallMethod.WRITE,
        locations=(
            ConfigLocation(
                ("claude_desktop_config.json",),
                ("Library", "Application Support", "Claude"),
                systems=(OSFamily.MACOS,),
            ),
            ConfigLocation(
                ("claude_desktop_config.json",), ("Claude",), Root.APPDATA, systems=(OSFamily.WINDOWS,)
            ),
        ),
        where="Linux 没有官方 Claude Desktop：把片段粘贴到所用版本的 claude_desktop_config.json",
    ),
    Client(
        "claude-code",
        "Claude Code",
        ConfigFormat.JSON,
        InstallMethod.WRITE,
        extra=_STDIO,
        locations=(ConfigLocation((".claude.json",), env_dir="CLAUDE_CONFIG_DIR"),),
        cli="claude",
        docs="https://docs.anthropic.com/en/docs/claude-code/mcp (claude mcp add-json --scope user)",
    ),
    Client(
        "codex",
        "Codex",
        ConfigFormat.TOML,
        InstallMethod.WRITE,
        servers_key="mcp_servers",
        extra=(("startup_timeout_sec", 30), ("tool_timeout_sec", 900)),
        locations=(ConfigLocation(("config.toml",), (".codex",), env_dir="CODEX_HOME"),),
    ),
    Client(
        "cursor",
        "Cursor",
        ConfigFormat.JSON,
        InstallMethod.WRITE,
        extra=_STDIO,
        locations=(_home(".cursor", "mcp.json"),),
    ),
    Client(
        "gemini",
        "Gemini CLI",
        ConfigFormat.JSONC,  # read through strip-json-comments: comments are allowed and kept
        InstallMethod.WRITE,
        extra=_GEMINI_TIMEOUT,
        locations=(_home(".gemini", "settings.json"),),
    ),
    Client(
        "dsh-desktop",
        "DeepSeek Harness 桌面版",
        ConfigFormat.DSH,
        InstallMethod.WRITE,
        locations=(
            ConfigLocation(("profiles", "desktop", "cordis.patch.yml"), (".dsh",), env_dir="DSH_HOME"),
        ),
        needs_dir=True,
    ),
    Client(
        "dsh-web",
        "DeepSeek Harness 网页版",
        ConfigFormat.DSH,
        InstallMethod.WRITE,
        locations=(ConfigLocation(("profiles", "web", "cordis.patch.yml"), (".dsh",), env_dir="DSH_HOME"),),
        needs_dir=True,
    ),
    Client(
        "workbuddy",
        "WorkBuddy",
        ConfigFormat.JSON,
        InstallMethod.WRITE,
        locations=(_home(".workbuddy", "mcp.json"),),
    ),
    Client(
        "zcode",
        "ZCode",
        ConfigFormat.JSON,
        InstallMethod.WRITE,
        servers_key="mcp.servers",
        extra=_STDIO,
        locations=(_home(".zcode", "cli", "config.json"),),
    ),
    Client(
        "kimi-code",
        "Kimi Code",
        ConfigFormat.JSON,
        InstallMethod.WRITE,
        locations=(ConfigLocation(("mcp.json",), (".kimi-code",), env_dir="KIMI_CODE_HOME"),),
    ),
    Client(
        "codebuddy",
        "CodeBuddy CLI",
        ConfigFormat.JSON,
        InstallMethod.WRITE,
        extra=_STDIO,
        locations=(_home(".codebuddy", ".mcp.json"),),
    ),
    Client(
        "qwen-code",
        "Qwen Code",
        ConfigFormat.JSONC,  # read through strip-json-comments: comments are allowed and kept
        InstallMethod.WRITE,
        extra=_GEMINI_TIMEOUT,
        locations=(_home(".qwen", "settings.json"),),
    ),
    Client(
        "qoder-cli",
        "Qoder CLI",
        ConfigFormat.JSON,
        InstallMethod.WRITE,
        extra=_STDIO,
        locations=(_home(".qoder", "settings.json"),),
    ),
    Client("qoder", "Qoder IDE", ConfigFormat.JSON, InstallMethod.LINK, link=LinkStyle.QODER),
    Client("trae", "Trae", ConfigFormat.JSON, InstallMethod.LINK, link=LinkStyle.TRAE),
    Client(
        "trae-cn",
        "Trae CN",
        ConfigFormat.JSON,
        InstallMethod.PASTE,
        where="Trae CN：设置 → MCP → 添加 → 手动配置，粘贴 JSON",
    ),
    Client(
        "lingma",
        "通义灵码",
        ConfigFormat.JSON,
        InstallMethod.PASTE,
        where="通义灵码：个人设置 → MCP 服务 → 添加 → 配置文件，粘贴 JSON",
    ),
    Client(
        "codebuddy-ide",
        "CodeBuddy IDE",
        ConfigFormat.JSON,
        InstallMethod.PASTE,
        extra=_STDIO,
        where="CodeBuddy IDE：设置 → MCP → 添加 MCP，粘贴 JSON",
    ),
    Client(
        "comate",
        "文心快码 Comate",
        ConfigFormat.JSON,
        InstallMethod.PASTE,
        extra=_STDIO,
        where="文心快码：MCP 管理 → 配置 MCP Server，粘贴 JSON",
    ),
    Client("chatbox", "Chatbox", ConfigFormat.JSON, InstallMethod.LINK, link=LinkStyle.CHATBOX),
    Client("cherry-studio", "Cherry Studio", ConfigFormat.JSON, InstallMethod.LINK, link=LinkStyle.CHERRY),
    Client(
        "vscode",
        "VS Code / Copilot",
        ConfigFormat.JSONC,
        InstallMethod.WRITE,
        servers_key="servers",
        extra=_STDIO,
        locations=(
            ConfigLocation(("mcp.json",), ("Library", "Application Support", "Code", "User"), systems=_MAC),
            ConfigLocation(("mcp.json",), ("Code", "User"), Root.APPDATA, systems=_WIN),
            _xdg("Code", "User", "mcp.json", systems=_LINUX),
        ),
        needs_dir=True,
        where="VS Code：命令面板 → MCP: Open User Configuration（或工作区 .vscode/mcp.json），粘贴 JSON",
        docs="https://code.visualstudio.com/docs/copilot/reference/mcp-configuration (user profile mcp.json, `servers`)",
    ),
    Client(
        "windsurf",
        "Windsurf",
        ConfigFormat.JSON,
        InstallMethod.WRITE,
        locations=(_home(".codeium", "windsurf", "mcp_config.json"),),
        needs_dir=True,
        where="Windsurf：设置 → Cascade → MCP Servers → View raw config，粘贴 JSON",
        docs="https://docs.windsurf.com/windsurf/cascade/mcp (~/.codeium/windsurf/mcp_config.json)",
    ),
    Client(
        "cline",
        "Cline",
        ConfigFormat.JSON,
        InstallMethod.PASTE,
        extra=_CLINE,
        where="Cline：MCP Servers → Configure MCP Servers（cline_mcp_settings.json），粘贴 JSON",
    ),
    Client(
        "roo",
        "Roo Code",
        ConfigFormat.JSON,
        InstallMethod.PASTE,
        extra=_CLINE,
        where="Roo Code：MCP Servers → Edit Global MCP（mcp_settings.json），粘贴 JSON",
    ),
    Client(
        "lobehub",
        "LobeHub / LobeChat",
        ConfigFormat.JSON,
        InstallMethod.PASTE,
        where="LobeHub 桌面版：插件 → 自定义 MCP → STDIO，填入命令、参数和环境变量",
    ),
    Client(
        "zed",
        "Zed",
        ConfigFormat.JSONC,
        InstallMethod.WRITE,
        servers_key="context_servers",
        locations=(
            ConfigLocation(("settings.json",), ("Zed",), Root.APPDATA, systems=_WIN),
            _xdg("zed", "settings.json", systems=(OSFamily.MACOS, OSFamily.LINUX)),
        ),
        needs_dir=True,
        docs="https://zed.dev/docs/ai/mcp (settings.json `context_servers`)",
    ),
    Client(
        "continue",
        "Continue",
        ConfigFormat.YAML_LIST,
        InstallMethod.WRITE,
        locations=(_home(".continue", "config.yaml"),),
        needs_dir=True,
        style=EntryStyle.CONTINUE,
        docs="https://docs.continue.dev/reference (config.yaml `mcpServers` list)",
    ),
    Client(
        "kiro",
        "Kiro",
        ConfigFormat.JSON,
        InstallMethod.WRITE,
        locations=(_home(".kiro", "settings", "mcp.json"),),
        docs="https://kiro.dev/docs/mcp/configuration (user level ~/.kiro/settings/mcp.json)",
    ),
    Client(
        "jetbrains",
        "JetBrains AI Assistant",
        ConfigFormat.JSON,
        InstallMethod.PASTE,
        where="JetBrains IDE：Settings | Tools | AI Assistant | Model Context Protocol (MCP) → Add → As JSON，粘贴 JSON",
        docs="https://www.jetbrains.com/help/ai-assistant/mcp.html (settings dialog, no documented user file)",
    ),
    Client(
        "goose",
        "Goose",
        ConfigFormat.YAML,
        InstallMethod.WRITE,
        servers_key="extensions",
        locations=(
            ConfigLocation(("config.yaml",), ("Block", "goose", "config"), Root.APPDATA, systems=_WIN),
            _xdg("goose", "config.yaml", systems=(OSFamily.MACOS, OSFamily.LINUX)),
        ),
        style=EntryStyle.GOOSE,
        docs="https://block.github.io/goose/docs/guides/config-files (config.yaml `extensions`)",
    ),
    Client(
        "opencode",
        "opencode",
        ConfigFormat.JSONC,
        InstallMethod.WRITE,
        servers_key="mcp",
        locations=(_xdg("opencode", "opencode.json"),),
        style=EntryStyle.OPENCODE,
        docs="https://opencode.ai/docs/mcp-servers (opencode.json `mcp`, type local)",
    ),
    Client(
        "lm-studio",
        "LM Studio",
        ConfigFormat.JSON,
        InstallMethod.WRITE,
        locations=(_home(".lmstudio", "mcp.json"),),
        docs="https://lmstudio.ai/docs/app/mcp (~/.lmstudio/mcp.json, Cursor notation)",
    ),
    Client(
        "generic",
        "其他 stdio 客户端",
        ConfigFormat.JSON,
        InstallMethod.PASTE,
        where="任何支持 stdio 的 MCP 客户端：在其 MCP 设置中填入 command / args / env",
    ),
)


def client_ids() -> list[str]:
    return [c.id for c in CLIENTS]


def get_client(client_id: str) -> Client:
    wanted = client_id.strip().lower()
    for client in CLIENTS:
        if client.id == wanted:
            return client
    raise UnknownClient(f"未知的客户端 {client_id!r}；可选：{', '.join(client_ids())}", client=client_id)


def os_family(platform: str) -> OSFamily:
    if platform == "darwin":
        return OSFamily.MACOS
    if platform in {"win32", "cygwin"}:
        return OSFamily.WINDOWS
    return OSFamily.LINUX


# --- config paths --------------------------------------------------------------------


def config_path(
    client: Client, *, os_name: OSFamily, home: str, environ: Mapping[str, str]
) -> PurePath | None:
    """Where `client` keeps its MCP servers on `os_name`; None when setup cannot write it."""
    pure: type[PurePath] = PureWindowsPath if os_name is OSFamily.WINDOWS else PurePosixPath
    for loc in client.locations:
        if os_name not in loc.systems:
            continue
        if loc.env_dir and environ.get(loc.env_dir):
            return pure(environ[loc.env_dir], *loc.tail)
        if loc.root is Root.APPDATA:
            base = environ.get("APPDATA") or ntpath.join(home, "AppData", "Roaming")
        else:
            base = home
        return pure(base, *loc.default_dir, *loc.tail)
    return None


def required_dir(client: Client, path: PurePath) -> PurePath | None:
    """The folder that must already exist for `needs_dir` clients (the profile folder)."""
    return path.parent if client.needs_dir else None


# --- entries, snippets, links -----------------------------------------------------------


def server_entry(client: Client, command: Sequence[str], env: Mapping[str, str]) -> dict[str, Any]:
    """The server entry: `type` first when the client wants it, then command, args, env
    (only when non-empty), then the client's other extra fields."""
    if not command:
        raise ValueError("empty launch command")
    if client.style is EntryStyle.OPENCODE:
        shaped: dict[str, Any] = {"type": "local", "command": list(command), "enabled": True}
        if env:
            shaped["environment"] = dict(env)
        return shaped
    if client.style is EntryStyle.GOOSE:
        return {
            "name": SERVER_NAME,
            "type": "stdio",
            "cmd": command[0],
            "args": list(command[1:]),
            "envs": dict(env),
            "enabled": True,
            "timeout": GOOSE_TIMEOUT,
            "description": DESCRIPTION,
        }
    if client.style is EntryStyle.CONTINUE:
        item: dict[str, Any] = {"name": SERVER_NAME, "type": "stdio", "command": command[0], "args": list(command[1:])}
        if env:
            item["env"] = dict(env)
        return item
    extra = dict(client.extra)
    entry: dict[str, Any] = {}
    if "type" in extra:
        entry["type"] = extra.pop("type")
    entry["command"] = command[0]
    entry["args"] = list(command[1:])
    if env:
        entry["env"] = dict(env)
    if client.format is ConfigFormat.TOML:
        env_table = entry.pop("env", None)
        entry.update(extra)
        if env_table is not None:
            entry["env"] = env_table
    else:
        entry.update(extra)
    return entry


ENV_KEYS: dict[EntryStyle, str] = {
    EntryStyle.STANDARD: "env",
    EntryStyle.OPENCODE: "environment",
    EntryStyle.GOOSE: "envs",
    EntryStyle.CONTINUE: "env",
}


def installed_entry(client: Client, text: str | None) -> dict[str, Any] | None:
    """The cnki entry already in the client's config `text` (None: none, or unreadable)."""
    return current_entry(text, client.format.value, client.servers_key, SERVER_NAME)


def with_user_settings(client: Client, entry: Mapping[str, Any], text: str | None) -> dict[str, Any]:
    """`entry` keeping what the installed entry has beyond it (cli/keep.py)."""
    return keep_user_settings(entry, installed_entry(client, text), ENV_KEYS[client.style])


def merge_into(client: Client, text: str | None, entry: Mapping[str, Any]) -> str:
    """`text` (the client's current config, None when absent) with the cnki entry set; keys and
    environment variables the installed entry has beyond `entry` are kept (cli/keep.py)."""
    if client.format is not ConfigFormat.DSH:
        entry = with_user_settings(client, entry, text)
    if client.format is ConfigFormat.TOML:
        return merge_toml(text, client.servers_key, SERVER_NAME, entry)
    if client.format is ConfigFormat.DSH:
        return merge_dsh(text, render_snippet(client, entry))
    if client.format is ConfigFormat.JSONC:
        return merge_jsonc(text, client.servers_key, SERVER_NAME, entry)
    if client.format is ConfigFormat.YAML:
        return merge_yaml_map(text, client.servers_key, SERVER_NAME, entry)
    if client.format is ConfigFormat.YAML_LIST:
        return merge_yaml_list(text, client.servers_key, SERVER_NAME, entry, header=dict(CONTINUE_HEADER))
    return merge_json(text, client.servers_key, SERVER_NAME, entry)


def render_snippet(client: Client, entry: Mapping[str, Any]) -> str:
    """What `config CLIENT` prints: exactly what setup writes into an empty file."""
    if client.format is ConfigFormat.DSH:
        return render_dsh(entry["command"], list(entry["args"]), entry.get("env") or {})
    return merge_into(client, None, entry)


def _b64(data: str) -> str:
    return base64.b64encode(data.encode("utf-8")).decode("ascii")


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def install_link(client: Client, entry: Mapping[str, Any]) -> str | None:
    """The one-click import link for LINK clients, else None."""
    plain = {k: v for k, v in entry.items() if k != "type"}
    if client.link is LinkStyle.QODER:
        inner = quote(_compact(plain), safe="")
        return f"qoder://aicoding.aicoding-deeplink/mcp/add?name={SERVER_NAME}&config={quote(_b64(inner), safe='')}"
    if client.link is LinkStyle.TRAE:
        return (
            f"trae://trae.ai-ide/mcp-import?type=stdio&name={SERVER_NAME}"
            f"&config={quote(_b64(_compact(plain)), safe='')}"
        )
    if client.link is LinkStyle.CHATBOX:
        payload = _compact({"name": SERVER_NAME, **plain})
        return f"chatbox://mcp/install?server={quote(_b64(payload), safe='')}"
    if client.link is LinkStyle.CHERRY:
        payload = _compact({"mcpServers": {SERVER_NAME: plain}})
        return f"cherrystudio://mcp/install?servers={quote(_b64(payload), safe='')}"
    return None


def describe_location(client: Client) -> dict[str, str]:
    """Human-readable path per OS (for docs and `config --list`): `~` is the home folder."""
    out: dict[str, str] = {}
    for os_name in ALL_OS:
        for loc in client.locations:
            if os_name not in loc.systems:
                continue
            join = ntpath.join if os_name is OSFamily.WINDOWS else posixpath.join
            if loc.root is Root.APPDATA:
                base = "%APPDATA%"
            elif os_name is OSFamily.WINDOWS:
                base = "%USERPROFILE%"
            else:
                base = "~"
            default = join(base, *loc.default_dir, *loc.tail)
            if loc.env_dir:
                env_ref = f"%{loc.env_dir}%" if os_name is OSFamily.WINDOWS else f"${loc.env_dir}"
                default = f"{join(env_ref, *loc.tail)}（未设置 {loc.env_dir} 时 {default}）"
            out[os_name.value] = default
            break
    return out


def launch_env(*, browser_path: str | None, data_dir: str | None) -> dict[str, str]:
    """Environment written into the entry. GUI clients do not inherit the shell's variables,
    so the chosen browser (and a non-default data directory) travel with the entry."""
    env: dict[str, str] = {}
    if browser_path:
        env["CNKI_BROWSER_PATH"] = browser_path
    if data_dir:
        env["CNKI_DATA_DIR"] = data_dir
    return env


def rerun_command(client_id: str, env: Mapping[str, str], *, uvx: bool, windows: bool = False) -> str:
    """The setup command that writes the entry `env` belongs to without asking: the browser and
    data directory put in it (`launch_env`), and the launcher (what setup and config suggest).
    On Windows quoted with double quotes, which cmd.exe and PowerShell both read (the browser
    lives under "C:\\Program Files"; POSIX single quotes are literal characters in cmd.exe)."""
    parts = ["cnki-mcp", "setup", "--client", client_id]
    if env.get("CNKI_BROWSER_PATH"):
        parts += ["--browser", env["CNKI_BROWSER_PATH"]]
    if env.get("CNKI_DATA_DIR"):
        parts += ["--data-dir", env["CNKI_DATA_DIR"]]
    if uvx:
        parts.append("--uvx")
    parts.append("--install-client")
    return subprocess.list2cmdline(parts) if windows else shlex.join(parts)


@dataclass(frozen=True, slots=True)
class Plan:
    """Everything setup/config need to show or install one client's entry."""

    client: Client
    entry: dict[str, Any]
    snippet: str
    path: PurePath | None  # the file setup writes (WRITE clients on this OS)
    link: str | None  # the one-click link (LINK clients)


def make_plan(
    client: Client,
    command: Sequence[str],
    env: Mapping[str, str],
    *,
    os_name: OSFamily,
    home: str,
    environ: Mapping[str, str],
) -> Plan:
    entry = server_entry(client, command, env)
    path = (
        config_path(client, os_name=os_name, home=home, environ=environ)
        if client.install is InstallMethod.WRITE
        else None
    )
    return Plan(client, entry, render_snippet(client, entry), path, install_link(client, entry))


def home_of(os_name: OSFamily, environ: Mapping[str, str], fallback: str) -> str:
    if os_name is OSFamily.WINDOWS:
        return environ.get("USERPROFILE") or fallback
    return environ.get("HOME") or fallback
