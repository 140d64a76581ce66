"""Installing into the clients added for issue-12 (Zed, VS Code, opencode: JSONC with
comments; Goose: YAML mapping; Continue: YAML list; Kiro, LM Studio, Windsurf: JSON) and Claude
Code through its own CLI: siblings and comments kept, backup made, second install a no-op,
symlinks refused, a change between read and replace detected. HOME is inside tmp_path."""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from cnki_mcp.cli.client_cli import install_with_cli, run_subprocess
from cnki_mcp.cli.clients import get_client, merge_into, server_entry
from cnki_mcp.cli.configfile import install_file
from cnki_mcp.cli.jsonc import loads as jsonc_loads
from cnki_mcp.cli.main import main
from cnki_mcp.errors import CnkiError

NOW = datetime(2026, 3, 1, 12, 30, 45)
COMMAND = ["/opt/cnki/bin/cnki-mcp", "serve"]
ENV = {"CNKI_BROWSER_PATH": "/usr/bin/chromium"}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "home"
    root.mkdir()
    for var in ("HOME", "USERPROFILE"):
        monkeypatch.setenv(var, str(root))
    monkeypatch.setenv("APPDATA", str(root / "AppData" / "Roaming"))
    monkeypatch.setenv("CNKI_DATA_DIR", str(tmp_path / "data"))
    for var in ("XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR", "CNKI_BROWSER_PATH"):
        monkeypatch.delenv(var, raising=False)
    return root


def _install(client_id: str, path: Path, env: dict[str, str] | None = None, **kw: Any) -> Any:
    client = get_client(client_id)
    entry = server_entry(client, COMMAND, ENV if env is None else env)
    return install_file(path, lambda text: merge_into(client, text, entry), now=NOW, **kw)


def _backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.bak-*"))


ZED_SETTINGS = """// Zed settings
//
// For information on how to configure Zed, see the Zed documentation.
{
  "theme": "One Dark", // picked in the theme selector
  /* fonts */
  "buffer_font_size": 15,
  "context_servers": {
    "github": {"command": "github-mcp", "args": [], "env": {}},
  },
}
"""


def test_zed_settings_with_comments_keep_every_comment_and_sibling(home: Path) -> None:
    path = home / ".config" / "zed" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(ZED_SETTINGS, encoding="utf-8")

    result = _install("zed", path)

    text = path.read_text(encoding="utf-8")
    assert result.status == "updated" and _backups(path) == [result.backup]
    for line in ZED_SETTINGS.splitlines():
        if "//" in line or "/*" in line:
            assert line in text  # comments stay where they were
    doc = jsonc_loads(text)
    assert doc["theme"] == "One Dark" and doc["buffer_font_size"] == 15
    assert doc["context_servers"]["github"]["command"] == "github-mcp"
    assert doc["context_servers"]["cnki"] == {"command": COMMAND[0], "args": ["serve"], "env": ENV}
    before = path.read_bytes()
    assert _install("zed", path).status == "unchanged"
    assert path.read_bytes() == before and len(_backups(path)) == 1


def test_zed_update_replaces_only_the_cnki_member(home: Path) -> None:
    path = home / ".config" / "zed" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(ZED_SETTINGS, encoding="utf-8")
    _install("zed", path)
    _install("zed", path, env={"CNKI_BROWSER_PATH": "/opt/edge"})
    doc = jsonc_loads(path.read_text(encoding="utf-8"))
    assert doc["context_servers"]["cnki"]["env"] == {"CNKI_BROWSER_PATH": "/opt/edge"}
    assert "// picked in the theme selector" in path.read_text(encoding="utf-8")


def test_broken_jsonc_is_refused_untouched(home: Path) -> None:
    path = home / ".config" / "zed" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text('{ "theme": "x", /* never closed \n', encoding="utf-8")
    with pytest.raises(CnkiError) as info:
        _install("zed", path)
    assert info.value.code == "CONFIG_INVALID"
    assert path.read_text(encoding="utf-8").startswith('{ "theme"') and _backups(path) == []


def test_vscode_user_mcp_json_gets_a_stdio_server_under_servers(home: Path) -> None:
    path = home / ".config" / "Code" / "User" / "mcp.json"
    path.parent.mkdir(parents=True)
    path.write_text('{\n\t// mine\n\t"servers": {},\n\t"inputs": []\n}\n', encoding="utf-8")
    _install("vscode", path)
    text = path.read_text(encoding="utf-8")
    assert "// mine" in text and '\t"inputs": []' in text
    assert jsonc_loads(text)["servers"]["cnki"]["type"] == "stdio"


def test_opencode_entry_is_a_local_command_array(home: Path) -> None:
    path = home / ".config" / "opencode" / "opencode.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"$schema": "https://opencode.ai/config.json", "theme": "tokyonight"}', encoding="utf-8")
    _install("opencode", path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["theme"] == "tokyonight"
    assert doc["mcp"]["cnki"] == {
        "type": "local",
        "command": COMMAND,
        "enabled": True,
        "environment": ENV,
    }


GOOSE_CONFIG = """# goose configuration
GOOSE_PROVIDER: anthropic
GOOSE_MODEL: claude-sonnet  # the default model
extensions:
  developer:
    bundled: true
    enabled: true
    name: developer
    timeout: 300
    type: builtin
"""


def test_goose_yaml_keeps_comments_and_other_extensions(home: Path) -> None:
    path = home / ".config" / "goose" / "config.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(GOOSE_CONFIG, encoding="utf-8")
    result = _install("goose", path)
    text = path.read_text(encoding="utf-8")
    assert result.status == "updated" and result.backup is not None
    assert "# goose configuration" in text and "# the default model" in text
    doc = YAML(typ="safe").load(text)
    assert doc["extensions"]["developer"]["type"] == "builtin"
    cnki = doc["extensions"]["cnki"]
    assert cnki["type"] == "stdio" and cnki["cmd"] == COMMAND[0] and cnki["args"] == ["serve"]
    assert cnki["envs"] == ENV and cnki["enabled"] is True
    assert _install("goose", path).status == "unchanged"


CONTINUE_CONFIG = """name: My Config  # shown in the picker
version: 0.0.1
schema: v1
models:
  - name: local
    provider: ollama
    model: qwen3
mcpServers:
  - name: other
    command: other-mcp
"""


def test_continue_list_item_is_appended_then_replaced_in_place(home: Path) -> None:
    path = home / ".continue" / "config.yaml"
    path.parent.mkdir()
    path.write_text(CONTINUE_CONFIG, encoding="utf-8")
    _install("continue", path)
    _install("continue", path, env={"CNKI_BROWSER_PATH": "/opt/edge"})
    text = path.read_text(encoding="utf-8")
    doc = YAML(typ="safe").load(text)
    assert "# shown in the picker" in text and doc["models"][0]["model"] == "qwen3"
    assert [s["name"] for s in doc["mcpServers"]] == ["other", "cnki"]
    assert doc["mcpServers"][1]["env"] == {"CNKI_BROWSER_PATH": "/opt/edge"}
    assert len(_backups(path)) == 2


def test_continue_without_its_folder_is_client_not_initialized(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("cnki_mcp.cli.setup_cmd.probe", lambda path: (True, "156.0"))
    monkeypatch.setenv("CNKI_BROWSER_PATH", sys.executable)
    code = main(["setup", "--yes", "--client", "continue", "--install-client"])
    assert code == 2
    assert "CLIENT_NOT_INITIALIZED" in capsys.readouterr().err
    assert not (home / ".continue").exists()


@pytest.mark.parametrize(
    ("client_id", "parts"),
    [("kiro", (".kiro", "settings", "mcp.json")), ("lm-studio", (".lmstudio", "mcp.json"))],
)
def test_json_clients_write_their_documented_user_file(home: Path, client_id: str, parts: tuple[str, ...]) -> None:
    path = home.joinpath(*parts)
    path.parent.mkdir(parents=True)
    path.write_text('{"mcpServers": {"x": {"command": "y"}}}', encoding="utf-8")
    _install(client_id, path)
    servers = json.loads(path.read_text(encoding="utf-8"))["mcpServers"]
    assert set(servers) == {"x", "cnki"}


@pytest.mark.parametrize("client_id", ["zed", "goose", "continue"])
def test_new_formats_refuse_a_symlinked_config(home: Path, tmp_path: Path, client_id: str) -> None:
    target = tmp_path / "real.cfg"
    target.write_text("{}" if client_id == "zed" else "a: 1\n", encoding="utf-8")
    link = home / "cfg"
    link.symlink_to(target)
    with pytest.raises(CnkiError) as info:
        _install(client_id, link)
    assert info.value.code == "CONFIG_SYMLINK"
    assert target.read_text(encoding="utf-8") in ("{}", "a: 1\n")


def test_yaml_file_changed_between_read_and_replace_is_detected(home: Path) -> None:
    path = home / "config.yaml"
    path.write_text(GOOSE_CONFIG, encoding="utf-8")

    def meanwhile() -> None:
        path.write_text(GOOSE_CONFIG + "GOOSE_MODE: auto\n", encoding="utf-8")

    with pytest.raises(CnkiError) as info:
        _install("goose", path, before_replace=meanwhile)
    assert info.value.code == "CONFIG_CHANGED"
    assert path.read_text(encoding="utf-8").endswith("GOOSE_MODE: auto\n")


# --- Claude Code through its own CLI ---------------------------------------------------

FAKE_CLAUDE = r'''#!{python}
"""Stands in for the `claude` CLI: records argv and edits ~/.claude.json like `mcp add-json` /
`mcp remove --scope user` do."""
import json, os, sys
home = os.environ["HOME"]
path = os.path.join(home, ".claude.json")
with open(os.path.join(home, "claude-calls.jsonl"), "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\n")
doc = json.load(open(path)) if os.path.exists(path) else {{}}
args = sys.argv[1:]
if args[:2] == ["mcp", "add-json"]:
    name, payload = args[-2], json.loads(args[-1])
    doc.setdefault("mcpServers", {{}})[name] = payload
elif args[:2] == ["mcp", "remove"]:
    doc.get("mcpServers", {{}}).pop(args[-1], None)
else:
    sys.exit(2)
json.dump(doc, open(path, "w"), indent=2)
'''


@pytest.fixture
def fake_claude(tmp_path: Path) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "claude"
    exe.write_text(FAKE_CLAUDE.format(python=sys.executable), encoding="utf-8")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def _calls(home: Path) -> list[list[str]]:
    log = home / "claude-calls.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_claude_code_is_installed_with_its_cli_when_present(home: Path, fake_claude: Path) -> None:
    path = home / ".claude.json"
    path.write_text(json.dumps({"theme": "dark", "mcpServers": {"fs": {"command": "npx"}}}), encoding="utf-8")
    client = get_client("claude-code")
    entry = server_entry(client, COMMAND, ENV)
    result = install_with_cli(
        str(fake_claude), path, servers_key="mcpServers", name="cnki", entry=entry, now=NOW, run=run_subprocess
    )
    assert result.status == "updated" and result.backup is not None
    assert _calls(home) == [["mcp", "add-json", "--scope", "user", "cnki", json.dumps(entry, ensure_ascii=False)]]
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["mcpServers"]["cnki"] == entry and doc["mcpServers"]["fs"] == {"command": "npx"}
    # again: identical entry, the CLI is not run and nothing is backed up
    again = install_with_cli(
        str(fake_claude), path, servers_key="mcpServers", name="cnki", entry=entry, now=NOW, run=run_subprocess
    )
    assert again.status == "unchanged" and len(_calls(home)) == 1
    # a changed entry: remove, then add
    changed = server_entry(client, COMMAND, {"CNKI_BROWSER_PATH": "/opt/edge"})
    install_with_cli(
        str(fake_claude), path, servers_key="mcpServers", name="cnki", entry=changed, now=NOW, run=run_subprocess
    )
    assert [c[:2] for c in _calls(home)[1:]] == [["mcp", "remove"], ["mcp", "add-json"]]


def test_setup_uses_the_claude_cli_when_it_is_on_path(
    home: Path, fake_claude: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", f"{fake_claude.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr("cnki_mcp.cli.setup_cmd.probe", lambda path: (True, "156.0"))
    monkeypatch.setattr("cnki_mcp.cli.setup_cmd.protocol_step", lambda command, env: 0)
    monkeypatch.setenv("CNKI_BROWSER_PATH", sys.executable)
    assert main(["setup", "--yes", "--client", "claude-code", "--install-client"]) == 0
    assert "claude mcp add-json" in capsys.readouterr().out
    assert _calls(home)[0][:5] == ["mcp", "add-json", "--scope", "user", "cnki"]
    assert json.loads((home / ".claude.json").read_text())["mcpServers"]["cnki"]["type"] == "stdio"


def test_claude_cli_failure_is_a_coded_error(home: Path, tmp_path: Path) -> None:
    bad = tmp_path / "claude"
    bad.write_text("#!/bin/sh\necho 'unknown option' >&2\nexit 1\n", encoding="utf-8")
    bad.chmod(bad.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(CnkiError) as info:
        install_with_cli(
            str(bad), home / ".claude.json", servers_key="mcpServers", name="cnki",
            entry={"command": "x"}, now=NOW, run=run_subprocess,
        )
    assert info.value.code == "CONFIG_WRITE_FAILED"


def test_claude_cli_path_refuses_a_symlinked_config(home: Path, tmp_path: Path, fake_claude: Path) -> None:
    real = tmp_path / "claude.json"
    real.write_text("{}", encoding="utf-8")
    (home / ".claude.json").symlink_to(real)
    with pytest.raises(CnkiError) as info:
        install_with_cli(
            str(fake_claude), home / ".claude.json", servers_key="mcpServers", name="cnki",
            entry={"command": "x"}, now=NOW, run=run_subprocess,
        )
    assert info.value.code == "CONFIG_SYMLINK" and _calls(home) == []


def test_a_claude_cli_that_fails_after_removing_the_old_entry_puts_it_back(home: Path, tmp_path: Path) -> None:
    """Replacing the entry is `mcp remove` then `mcp add-json`; when the add fails the person was
    left without any cnki entry and no word of the backup. The old entry is re-added and the
    error names the backup; a CLI that fails before changing anything leaves no backup behind."""
    path = home / ".claude.json"
    old = {"command": "old-cnki"}
    path.write_text(json.dumps({"mcpServers": {"cnki": old}}), encoding="utf-8")
    calls: list[list[str]] = []

    def runner(argv: Sequence[str]) -> tuple[int, str]:
        calls.append(list(argv))
        if argv[2] == "add-json" and json.loads(argv[-1]) != old:
            return 1, "boom"
        return 0, ""

    with pytest.raises(CnkiError) as info:
        install_with_cli("claude", path, servers_key="mcpServers", name="cnki", entry={"command": "new"}, now=NOW, run=runner)
    assert info.value.code == "CONFIG_WRITE_FAILED" and info.value.details["restored"] is True
    assert [c[2] for c in calls] == ["remove", "add-json", "add-json"]
    assert json.loads(calls[-1][-1]) == old
    assert Path(info.value.details["backup"]).exists()

    calls.clear()
    with pytest.raises(CnkiError) as refused:
        install_with_cli(
            "claude", path, servers_key="mcpServers", name="cnki", entry={"command": "new"}, now=NOW,
            run=lambda argv: (calls.append(list(argv)), (1, "no such command"))[1],
        )
    assert len(calls) == 1  # the remove failed: nothing changed
    assert refused.value.code == "CONFIG_WRITE_FAILED" and refused.value.details == {"path": str(path)}  # no backup
    assert sorted(p.name for p in home.glob(".claude.json.bak-*")) == [Path(info.value.details["backup"]).name]
