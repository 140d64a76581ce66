"""The client registry: every client's rendered entry, snippet, link and path per OS, and
how the launch command is derived from the way cnki-mcp was installed."""

from __future__ import annotations

import base64
import json
import tomllib
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from ruamel.yaml import YAML

from cnki_mcp.cli.clients import (
    CLIENTS,
    ConfigFormat,
    InstallMethod,
    OSFamily,
    config_path,
    get_client,
    install_link,
    launch_env,
    render_snippet,
    server_entry,
)
from cnki_mcp.cli.launcher import detect_launcher

MAC_HOME = "/Users/li"
LINUX_HOME = "/home/li"
WIN_HOME = r"C:\Users\li"
WIN_ENV = {"APPDATA": r"C:\Users\li\AppData\Roaming"}

STDIO = {"type": "stdio"}
T900K = {"timeout": 900_000}
CLINE = {"timeout": 900, "disabled": False}
CODEX = {"startup_timeout_sec": 30, "tool_timeout_sec": 900}

W, L, P = "write", "link", "paste"

# id: (format, install, servers key, extra fields, {os: path or None})
EXPECTED: dict[str, tuple[str, str, str, dict[str, Any], dict[str, str | None]]] = {
    "claude-desktop": (
        "json",
        W,
        "mcpServers",
        {},
        {
            "macos": "/Users/li/Library/Application Support/Claude/claude_desktop_config.json",
            "windows": r"C:\Users\li\AppData\Roaming\Claude\claude_desktop_config.json",
            "linux": None,
        },
    ),
    "claude-code": (
        "json",
        W,
        "mcpServers",
        STDIO,
        {
            "macos": "/Users/li/.claude.json",
            "windows": r"C:\Users\li\.claude.json",
            "linux": "/home/li/.claude.json",
        },
    ),
    "codex": (
        "toml",
        W,
        "mcp_servers",
        CODEX,
        {
            "macos": "/Users/li/.codex/config.toml",
            "windows": r"C:\Users\li\.codex\config.toml",
            "linux": "/home/li/.codex/config.toml",
        },
    ),
    "cursor": (
        "json",
        W,
        "mcpServers",
        STDIO,
        {
            "macos": "/Users/li/.cursor/mcp.json",
            "windows": r"C:\Users\li\.cursor\mcp.json",
            "linux": "/home/li/.cursor/mcp.json",
        },
    ),
    "gemini": (
        "jsonc",
        W,
        "mcpServers",
        T900K,
        {
            "macos": "/Users/li/.gemini/settings.json",
            "windows": r"C:\Users\li\.gemini\settings.json",
            "linux": "/home/li/.gemini/settings.json",
        },
    ),
    "dsh-desktop": (
        "dsh-yaml",
        W,
        "mcpServers",
        {},
        {
            "macos": "/Users/li/.dsh/profiles/desktop/cordis.patch.yml",
            "windows": r"C:\Users\li\.dsh\profiles\desktop\cordis.patch.yml",
            "linux": "/home/li/.dsh/profiles/desktop/cordis.patch.yml",
        },
    ),
    "dsh-web": (
        "dsh-yaml",
        W,
        "mcpServers",
        {},
        {
            "macos": "/Users/li/.dsh/profiles/web/cordis.patch.yml",
            "windows": r"C:\Users\li\.dsh\profiles\web\cordis.patch.yml",
            "linux": "/home/li/.dsh/profiles/web/cordis.patch.yml",
        },
    ),
    "workbuddy": (
        "json",
        W,
        "mcpServers",
        {},
        {
            "macos": "/Users/li/.workbuddy/mcp.json",
            "windows": r"C:\Users\li\.workbuddy\mcp.json",
            "linux": "/home/li/.workbuddy/mcp.json",
        },
    ),
    "zcode": (
        "json",
        W,
        "mcp.servers",
        STDIO,
        {
            "macos": "/Users/li/.zcode/cli/config.json",
            "windows": r"C:\Users\li\.zcode\cli\config.json",
            "linux": "/home/li/.zcode/cli/config.json",
        },
    ),
    "kimi-code": (
        "json",
        W,
        "mcpServers",
        {},
        {
            "macos": "/Users/li/.kimi-code/mcp.json",
            "windows": r"C:\Users\li\.kimi-code\mcp.json",
            "linux": "/home/li/.kimi-code/mcp.json",
        },
    ),
    "codebuddy": (
        "json",
        W,
        "mcpServers",
        STDIO,
        {
            "macos": "/Users/li/.codebuddy/.mcp.json",
            "windows": r"C:\Users\li\.codebuddy\.mcp.json",
            "linux": "/home/li/.codebuddy/.mcp.json",
        },
    ),
    "qwen-code": (
        "jsonc",
        W,
        "mcpServers",
        T900K,
        {
            "macos": "/Users/li/.qwen/settings.json",
            "windows": r"C:\Users\li\.qwen\settings.json",
            "linux": "/home/li/.qwen/settings.json",
        },
    ),
    "qoder-cli": (
        "json",
        W,
        "mcpServers",
        STDIO,
        {
            "macos": "/Users/li/.qoder/settings.json",
            "windows": r"C:\Users\li\.qoder\settings.json",
            "linux": "/home/li/.qoder/settings.json",
        },
    ),
    "qoder": ("json", L, "mcpServers", {}, {}),
    "trae": ("json", L, "mcpServers", {}, {}),
    "trae-cn": ("json", P, "mcpServers", {}, {}),
    "lingma": ("json", P, "mcpServers", {}, {}),
    "codebuddy-ide": ("json", P, "mcpServers", STDIO, {}),
    "comate": ("json", P, "mcpServers", STDIO, {}),
    "chatbox": ("json", L, "mcpServers", {}, {}),
    "cherry-studio": ("json", L, "mcpServers", {}, {}),
    "vscode": (
        "jsonc",
        W,
        "servers",
        STDIO,
        {
            "macos": "/Users/li/Library/Application Support/Code/User/mcp.json",
            "windows": r"C:\Users\li\AppData\Roaming\Code\User\mcp.json",
            "linux": "/home/li/.config/Code/User/mcp.json",
        },
    ),
    "windsurf": (
        "json",
        W,
        "mcpServers",
        {},
        {
            "macos": "/Users/li/.codeium/windsurf/mcp_config.json",
            "windows": r"C:\Users\li\.codeium\windsurf\mcp_config.json",
            "linux": "/home/li/.codeium/windsurf/mcp_config.json",
        },
    ),
    "cline": ("json", P, "mcpServers", CLINE, {}),
    "roo": ("json", P, "mcpServers", CLINE, {}),
    "lobehub": ("json", P, "mcpServers", {}, {}),
    "zed": (
        "jsonc",
        W,
        "context_servers",
        {},
        {
            "macos": "/Users/li/.config/zed/settings.json",
            "windows": r"C:\Users\li\AppData\Roaming\Zed\settings.json",
            "linux": "/home/li/.config/zed/settings.json",
        },
    ),
    "continue": (
        "yaml-list",
        W,
        "mcpServers",
        {},
        {
            "macos": "/Users/li/.continue/config.yaml",
            "windows": r"C:\Users\li\.continue\config.yaml",
            "linux": "/home/li/.continue/config.yaml",
        },
    ),
    "kiro": (
        "json",
        W,
        "mcpServers",
        {},
        {
            "macos": "/Users/li/.kiro/settings/mcp.json",
            "windows": r"C:\Users\li\.kiro\settings\mcp.json",
            "linux": "/home/li/.kiro/settings/mcp.json",
        },
    ),
    "jetbrains": ("json", P, "mcpServers", {}, {}),
    "goose": (
        "yaml",
        W,
        "extensions",
        {},
        {
            "macos": "/Users/li/.config/goose/config.yaml",
            "windows": r"C:\Users\li\AppData\Roaming\Block\goose\config\config.yaml",
            "linux": "/home/li/.config/goose/config.yaml",
        },
    ),
    "opencode": (
        "jsonc",
        W,
        "mcp",
        {},
        {
            "macos": "/Users/li/.config/opencode/opencode.json",
            "windows": r"C:\Users\li\.config\opencode\opencode.json",
            "linux": "/home/li/.config/opencode/opencode.json",
        },
    ),
    "lm-studio": (
        "json",
        W,
        "mcpServers",
        {},
        {
            "macos": "/Users/li/.lmstudio/mcp.json",
            "windows": r"C:\Users\li\.lmstudio\mcp.json",
            "linux": "/home/li/.lmstudio/mcp.json",
        },
    ),
    "generic": ("json", P, "mcpServers", {}, {}),
}

# Clients whose entry is not {command, args, env}: their documented shapes.
SHAPED: dict[str, dict[str, Any]] = {
    "opencode": {
        "type": "local",
        "command": ["/opt/cnki/bin/cnki-mcp", "serve"],
        "enabled": True,
        "environment": {"CNKI_BROWSER_PATH": "/usr/bin/chromium", "CNKI_DATA_DIR": "/data/知网"},
    },
    "goose": {
        "name": "cnki",
        "type": "stdio",
        "cmd": "/opt/cnki/bin/cnki-mcp",
        "args": ["serve"],
        "envs": {"CNKI_BROWSER_PATH": "/usr/bin/chromium", "CNKI_DATA_DIR": "/data/知网"},
        "enabled": True,
        "timeout": 300,
        "description": "中国知网（CNKI）检索、题录、阅读、下载与引文",
    },
    "continue": {
        "name": "cnki",
        "type": "stdio",
        "command": "/opt/cnki/bin/cnki-mcp",
        "args": ["serve"],
        "env": {"CNKI_BROWSER_PATH": "/usr/bin/chromium", "CNKI_DATA_DIR": "/data/知网"},
    },
}

COMMAND = ["/opt/cnki/bin/cnki-mcp", "serve"]
ENV = {"CNKI_BROWSER_PATH": "/usr/bin/chromium", "CNKI_DATA_DIR": "/data/知网"}


def _home_env(os_name: OSFamily) -> tuple[str, dict[str, str]]:
    if os_name is OSFamily.WINDOWS:
        return WIN_HOME, dict(WIN_ENV)
    return (MAC_HOME if os_name is OSFamily.MACOS else LINUX_HOME), {}


def _servers(doc: dict[str, Any], key: str) -> dict[str, Any]:
    for part in key.split("."):
        doc = doc[part]
    return doc


def test_registry_has_the_34_clients_once_each() -> None:
    ids = [c.id for c in CLIENTS]
    assert len(ids) == 34
    assert len(set(ids)) == 34
    assert set(ids) == set(EXPECTED)


def _expected_entry(client_id: str, extra: dict[str, Any]) -> dict[str, Any]:
    return SHAPED.get(client_id) or {"command": COMMAND[0], "args": ["serve"], "env": ENV, **extra}


@pytest.mark.parametrize("client_id", list(EXPECTED))
def test_client_format_install_method_and_servers_key(client_id: str) -> None:
    fmt, install, key, _extra, _paths = EXPECTED[client_id]
    client = get_client(client_id)
    assert client.format == ConfigFormat(fmt)
    assert client.install == InstallMethod(install)
    assert client.servers_key == key
    if client.install is InstallMethod.PASTE:
        assert client.where, "paste clients say where to paste"


@pytest.mark.parametrize("client_id", list(EXPECTED))
def test_client_entry_has_command_args_env_and_its_extra_fields(client_id: str) -> None:
    _fmt, _install, _key, extra, _paths = EXPECTED[client_id]
    entry = server_entry(get_client(client_id), COMMAND, ENV)
    assert entry == _expected_entry(client_id, extra)
    if "type" in extra:
        assert next(iter(entry)) == "type"


@pytest.mark.parametrize("client_id", list(EXPECTED))
def test_client_snippet_parses_back_to_the_entry_under_the_servers_key(client_id: str) -> None:
    fmt, _install, key, extra, _paths = EXPECTED[client_id]
    client = get_client(client_id)
    snippet = render_snippet(client, server_entry(client, COMMAND, ENV))
    expected = _expected_entry(client_id, extra)
    if fmt in ("json", "jsonc"):
        assert _servers(json.loads(snippet), key) == {"cnki": expected}
    elif fmt == "yaml":
        assert _servers(YAML(typ="safe").load(snippet), key) == {"cnki": expected}
    elif fmt == "yaml-list":
        doc = YAML(typ="safe").load(snippet)
        assert doc[key] == [expected]
        assert {"name", "version", "schema"} <= set(doc)  # Continue requires them in a new file
    elif fmt == "toml":
        assert _servers(tomllib.loads(snippet), key) == {"cnki": expected}
        assert "[mcp_servers.cnki]" in snippet and "[mcp_servers.cnki.env]" in snippet
    else:
        assert snippet.startswith("# ")
        assert "- insert:" in snippet and "    - id: mcp-cnki" in snippet
        assert "      name: '@deepseek-ai/dsh-mcp-client'" in snippet
        assert f"        command: {json.dumps(COMMAND[0])}" in snippet
        assert '        args: ["serve"]' in snippet
        assert f"        env: {json.dumps(ENV, ensure_ascii=False)}" in snippet
        assert "toolCallTimeoutMs: 900000" in snippet and "failOnStartupError: false" in snippet


@pytest.mark.parametrize("os_name", list(OSFamily))
@pytest.mark.parametrize("client_id", list(EXPECTED))
def test_client_config_path_per_os(client_id: str, os_name: OSFamily) -> None:
    _fmt, install, _key, _extra, paths = EXPECTED[client_id]
    home, environ = _home_env(os_name)
    got = config_path(get_client(client_id), os_name=os_name, home=home, environ=environ)
    want = paths.get(os_name.value) if install == W else None
    assert (str(got) if got is not None else None) == want


@pytest.mark.parametrize(
    ("client_id", "variable", "value", "want"),
    [
        ("claude-code", "CLAUDE_CONFIG_DIR", "/cfg/claude", "/cfg/claude/.claude.json"),
        ("codex", "CODEX_HOME", "/cfg/codex", "/cfg/codex/config.toml"),
        ("kimi-code", "KIMI_CODE_HOME", "/cfg/kimi", "/cfg/kimi/mcp.json"),
        ("dsh-web", "DSH_HOME", "/cfg/dsh", "/cfg/dsh/profiles/web/cordis.patch.yml"),
    ],
)
def test_config_dir_variable_overrides_the_home_location(
    client_id: str, variable: str, value: str, want: str
) -> None:
    got = config_path(
        get_client(client_id), os_name=OSFamily.LINUX, home=LINUX_HOME, environ={variable: value}
    )
    assert str(got) == want


def test_windows_appdata_falls_back_to_the_roaming_folder_of_the_home() -> None:
    got = config_path(get_client("claude-desktop"), os_name=OSFamily.WINDOWS, home=WIN_HOME, environ={})
    assert str(got) == r"C:\Users\li\AppData\Roaming\Claude\claude_desktop_config.json"


def _link_query(link: str) -> tuple[str, dict[str, str]]:
    parts = urlsplit(link)
    return f"{parts.scheme}://{parts.netloc}{parts.path}", {k: v[0] for k, v in parse_qs(parts.query).items()}


def _b64json(value: str) -> Any:
    return json.loads(base64.b64decode(value).decode("utf-8"))


@pytest.mark.parametrize("client_id", ["qoder", "trae", "chatbox", "cherry-studio"])
def test_link_clients_encode_the_entry_in_their_import_link(client_id: str) -> None:
    client = get_client(client_id)
    entry = server_entry(client, COMMAND, ENV)
    base, query = _link_query(install_link(client, entry) or "")
    plain = {"command": COMMAND[0], "args": ["serve"], "env": ENV}
    if client_id == "qoder":
        assert base == "qoder://aicoding.aicoding-deeplink/mcp/add"
        assert query["name"] == "cnki"
        assert json.loads(unquote(base64.b64decode(query["config"]).decode("ascii"))) == plain
    elif client_id == "trae":
        assert base == "trae://trae.ai-ide/mcp-import"
        assert query["type"] == "stdio" and query["name"] == "cnki"
        assert _b64json(query["config"]) == plain
    elif client_id == "chatbox":
        assert base == "chatbox://mcp/install"
        assert _b64json(query["server"]) == {"name": "cnki", **plain}
    else:
        assert base == "cherrystudio://mcp/install"
        assert _b64json(query["servers"]) == {"mcpServers": {"cnki": plain}}


@pytest.mark.parametrize("client_id", [c for c, v in EXPECTED.items() if v[1] != L])
def test_only_link_clients_have_a_link(client_id: str) -> None:
    client = get_client(client_id)
    assert install_link(client, server_entry(client, COMMAND, ENV)) is None


def test_unknown_client_is_a_coded_error() -> None:
    from cnki_mcp.errors import CnkiError

    with pytest.raises(CnkiError) as info:
        get_client("notepad")
    assert info.value.code == "UNKNOWN_CLIENT"


def test_entry_without_env_has_no_env_key() -> None:
    entry = server_entry(get_client("cursor"), COMMAND, launch_env(browser_path=None, data_dir=None))
    assert entry == {"type": "stdio", "command": COMMAND[0], "args": ["serve"]}


# --- launcher ------------------------------------------------------------------------


def _detect(
    argv0: str,
    executable: str,
    files: set[str],
    *,
    platform: str = "linux",
    uvx: str | None = None,
    real: dict[str, str] | None = None,
    cwd: str = "/work",
) -> list[str]:
    launcher = detect_launcher(
        argv0,
        executable,
        platform=platform,
        cwd=cwd,
        exists=lambda p: p in files,
        which=lambda name: uvx if name == "uvx" else None,
        realpath=lambda p: (real or {}).get(p, p),
    )
    return launcher.serve()


def test_launcher_uses_the_absolute_console_script() -> None:
    got = _detect(".venv/bin/cnki-mcp", "/work/.venv/bin/python", {"/work/.venv/bin/cnki-mcp"})
    assert got == ["/work/.venv/bin/cnki-mcp", "serve"]


def test_launcher_keeps_a_uv_tool_symlink_rather_than_its_target() -> None:
    real = {"/home/li/.local/bin/cnki-mcp": "/home/li/.local/share/uv/tools/cnki-mcp/bin/cnki-mcp"}
    got = _detect("/home/li/.local/bin/cnki-mcp", "/usr/bin/python3", set(), real=real)
    assert got == ["/home/li/.local/bin/cnki-mcp", "serve"]


def test_launcher_from_the_uv_cache_becomes_uvx() -> None:
    script = "/home/li/.cache/uv/archive-v0/abc123/bin/cnki-mcp"
    got = _detect(
        script, "/home/li/.cache/uv/archive-v0/abc123/bin/python", {script}, uvx="/home/li/.local/bin/uvx"
    )
    # `--from` names our distribution: the PyPI project `cnki-mcp` is someone else's.
    assert got == ["/home/li/.local/bin/uvx", "--from", "cnki-research-mcp", "cnki-mcp", "serve"]


def test_launcher_as_module_without_a_script_uses_the_absolute_interpreter() -> None:
    got = _detect("/work/cnki_mcp/__main__.py", "/opt/py/bin/python3", set())
    assert got == ["/opt/py/bin/python3", "-m", "cnki_mcp", "serve"]


def test_launcher_as_module_prefers_the_script_beside_the_interpreter() -> None:
    got = _detect("/work/cnki_mcp/__main__.py", "/opt/venv/bin/python", {"/opt/venv/bin/cnki-mcp"})
    assert got == ["/opt/venv/bin/cnki-mcp", "serve"]


def test_launcher_on_windows_adds_exe_to_the_script() -> None:
    files = {r"C:\Py\Scripts\cnki-mcp.exe"}
    got = _detect(r"C:\Py\Scripts\cnki-mcp", r"C:\Py\python.exe", files, platform="win32", cwd="C:\\")
    assert got == [r"C:\Py\Scripts\cnki-mcp.exe", "serve"]


def test_the_suggested_setup_command_is_quoted_for_the_windows_shells() -> None:
    """The browser lives under C:\\Program Files: POSIX single quotes are literal in cmd.exe, so on
    Windows the suggestion uses double quotes (read the same way by cmd.exe and PowerShell)."""
    from cnki_mcp.cli.clients import rerun_command

    chrome = r"C:\Program Files\Google\Chrome\Application\chrome.exe"
    data = r"D:\研究 资料\cnki"
    line = rerun_command("cursor", {"CNKI_BROWSER_PATH": chrome, "CNKI_DATA_DIR": data}, uvx=False, windows=True)
    assert f'--browser "{chrome}"' in line and f'--data-dir "{data}"' in line
    assert "'" not in line
    posix = rerun_command("cursor", {"CNKI_BROWSER_PATH": "/opt/my chrome/chrome"}, uvx=False)
    assert "--browser '/opt/my chrome/chrome'" in posix
