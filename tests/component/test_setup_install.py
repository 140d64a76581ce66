"""Installing the cnki entry into existing client config files (JSON, TOML, DSH YAML), the
safe writer's refusals, `setup` end to end (flags and prompts) and `config CLIENT`.
Every test runs with HOME / APPDATA / USERPROFILE inside tmp_path."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from cnki_mcp.cli import doctor_cmd, setup_cmd
from cnki_mcp.cli.clients import get_client, merge_into, server_entry
from cnki_mcp.cli.configfile import install_file
from cnki_mcp.cli.main import main
from cnki_mcp.errors import CnkiError

NOW = datetime(2026, 3, 1, 12, 30, 45)
COMMAND = ["/opt/cnki/bin/cnki-mcp", "serve"]
ENV = {"CNKI_BROWSER_PATH": "/usr/bin/chromium"}
CONFIG_VARS = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "KIMI_CODE_HOME", "DSH_HOME", "CNKI_BROWSER_PATH")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "home"
    root.mkdir()
    monkeypatch.setenv("HOME", str(root))
    monkeypatch.setenv("USERPROFILE", str(root))
    monkeypatch.setenv("APPDATA", str(root / "AppData" / "Roaming"))
    monkeypatch.setenv("CNKI_DATA_DIR", str(tmp_path / "data"))
    for name in CONFIG_VARS:
        monkeypatch.delenv(name, raising=False)
    return root


def _install(client_id: str, path: Path, env: dict[str, str] | None = None, **kw: Any) -> Any:
    client = get_client(client_id)
    entry = server_entry(client, COMMAND, ENV if env is None else env)
    return install_file(path, lambda text: merge_into(client, text, entry), now=NOW, **kw)


def _backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.bak-*"))


def _leftovers(path: Path) -> list[Path]:
    return sorted(p for p in path.parent.iterdir() if p.name.startswith(f".{path.name}.cnki-"))


# --- JSON ----------------------------------------------------------------------------

CLAUDE_JSON = {
    "numStartups": 12,
    "theme": "dark",
    "mcpServers": {"filesystem": {"command": "npx", "args": ["-y", "@mcp/fs", "/tmp"]}},
    "projects": {"/work": {"allowedTools": ["Bash"]}},
}


def test_json_install_keeps_siblings_and_backs_up_the_original(home: Path) -> None:
    path = home / ".claude.json"
    original = json.dumps(CLAUDE_JSON, indent=4) + "\n"
    path.write_text(original, encoding="utf-8")

    result = _install("claude-code", path)

    assert result.status == "updated"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["mcpServers"]["filesystem"] == CLAUDE_JSON["mcpServers"]["filesystem"]
    assert data["mcpServers"]["cnki"] == {
        "type": "stdio",
        "command": COMMAND[0],
        "args": ["serve"],
        "env": ENV,
    }
    assert {k: v for k, v in data.items() if k != "mcpServers"} == {
        k: v for k, v in CLAUDE_JSON.items() if k != "mcpServers"
    }
    assert list(data) == list(CLAUDE_JSON)  # key order kept
    assert '\n    "numStartups"' in path.read_text(encoding="utf-8")  # 4-space indent kept
    assert _backups(path) == [result.backup]
    assert result.backup.name == ".claude.json.bak-20260301-123045"
    assert result.backup.read_text(encoding="utf-8") == original
    assert _leftovers(path) == []


def test_second_identical_install_writes_nothing_and_makes_no_backup(home: Path) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text('{"mcpServers": {}}', encoding="utf-8")
    assert _install("cursor", path).status == "updated"
    before = path.read_bytes()
    stat = path.stat()

    again = _install("cursor", path)

    assert again.status == "unchanged"
    assert again.backup is None
    assert path.read_bytes() == before
    assert path.stat().st_mtime_ns == stat.st_mtime_ns
    assert len(_backups(path)) == 1


def test_identical_entry_in_a_differently_formatted_file_is_left_alone(home: Path) -> None:
    path = home / ".workbuddy" / "mcp.json"
    path.parent.mkdir()
    entry = {"command": COMMAND[0], "args": ["serve"], "env": ENV}
    compact = json.dumps({"other": [1, 2], "mcpServers": {"cnki": entry}}, separators=(",", ":"))
    path.write_text(compact, encoding="utf-8")
    assert _install("workbuddy", path).status == "unchanged"
    assert path.read_text(encoding="utf-8") == compact
    assert _backups(path) == []


def test_install_creates_a_missing_file_and_its_folders_without_backup(home: Path) -> None:
    path = home / ".gemini" / "settings.json"
    result = _install("gemini", path)
    assert result.status == "created" and result.backup is None
    assert json.loads(path.read_text(encoding="utf-8"))["mcpServers"]["cnki"]["timeout"] == 900_000


def test_changed_entry_replaces_only_cnki_with_a_new_backup(home: Path) -> None:
    path = home / ".qwen" / "settings.json"
    path.parent.mkdir()
    path.write_text(
        json.dumps({"mcpServers": {"other": {"command": "x"}}, "model": "qwen3"}), encoding="utf-8"
    )
    _install("qwen-code", path)
    result = _install("qwen-code", path, env={"CNKI_BROWSER_PATH": "/opt/edge/msedge"})
    assert result.status == "updated"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["mcpServers"]["cnki"]["env"] == {"CNKI_BROWSER_PATH": "/opt/edge/msedge"}
    assert data["mcpServers"]["other"] == {"command": "x"} and data["model"] == "qwen3"
    assert "/usr/bin/chromium" in result.backup.read_text(encoding="utf-8")


@pytest.mark.parametrize(("client_id", "folder"), [("gemini", ".gemini"), ("qwen-code", ".qwen")])
def test_gemini_style_settings_with_comments_are_merged_keeping_the_comments(
    home: Path, client_id: str, folder: str
) -> None:
    """Gemini CLI and Qwen Code read settings.json through strip-json-comments (and keep comments
    when they save it), so a commented file is theirs to have: setup merges into it."""
    path = home / folder / "settings.json"
    path.parent.mkdir()
    text = '{\n  // my theme\n  "theme": "Dracula",\n  "mcpServers": {\n    "other": {"command": "o"} // keep\n  }\n}\n'
    path.write_text(text, encoding="utf-8")
    result = _install(client_id, path)
    assert result.status == "updated"
    merged = path.read_text(encoding="utf-8")
    assert "// my theme" in merged and "// keep" in merged
    from cnki_mcp.cli.jsonc import loads

    servers = loads(merged)["mcpServers"]
    assert servers["other"] == {"command": "o"} and servers["cnki"]["command"] == COMMAND[0]
    assert _install(client_id, path).status == "unchanged"


def test_nested_servers_key_is_walked_keeping_sibling_settings(home: Path) -> None:
    path = home / ".zcode" / "cli" / "config.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"mcp": {"enabled": True}, "ui": {"lang": "zh"}}), encoding="utf-8")
    _install("zcode", path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["mcp"]["enabled"] is True and data["ui"] == {"lang": "zh"}
    assert data["mcp"]["servers"]["cnki"]["type"] == "stdio"


@pytest.mark.parametrize(
    ("client_id", "name", "content"),
    [
        ("cursor", "mcp.json", '{"mcpServers": {"a": 1},}  // trailing comma'),
        ("cursor", "mcp.json", '["not", "an", "object"]'),
        ("cursor", "mcp.json", '{"mcpServers": ["wrong type"]}'),
        ("codex", "config.toml", '[mcp_servers\ncommand = "x"\n'),
        ("codex", "config.toml", 'mcp_servers = "not a table"\n'),
    ],
)
def test_invalid_existing_file_is_refused_untouched(
    home: Path, client_id: str, name: str, content: str
) -> None:
    path = home / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(CnkiError) as info:
        _install(client_id, path)
    assert info.value.code == "CONFIG_INVALID"
    assert info.value.details["path"] == str(path)  # which file: setup prints it nowhere else
    assert path.read_text(encoding="utf-8") == content
    assert _backups(path) == [] and _leftovers(path) == []


def test_symlinked_config_is_refused_and_its_target_untouched(home: Path) -> None:
    target = home / "real-settings.json"
    target.write_text('{"keep": 1}', encoding="utf-8")
    link = home / ".claude.json"
    link.symlink_to(target)
    with pytest.raises(CnkiError) as info:
        _install("claude-code", link)
    assert info.value.code == "CONFIG_SYMLINK"
    assert target.read_text(encoding="utf-8") == '{"keep": 1}'
    assert link.is_symlink()
    assert _backups(link) == [] and _leftovers(link) == []


def test_file_changed_between_read_and_replace_is_detected_and_kept(home: Path) -> None:
    path = home / ".claude.json"
    path.write_text('{"theme": "light"}', encoding="utf-8")

    def another_program_saves() -> None:
        path.write_text('{"theme": "dark", "edited": true}', encoding="utf-8")

    with pytest.raises(CnkiError) as info:
        _install("claude-code", path, before_replace=another_program_saves)
    assert info.value.code == "CONFIG_CHANGED"
    assert path.read_text(encoding="utf-8") == '{"theme": "dark", "edited": true}'
    assert _leftovers(path) == []
    assert _backups(path) == []  # nothing was written, so no backup is left behind


def test_file_created_meanwhile_is_detected(home: Path) -> None:
    path = home / ".cursor" / "mcp.json"

    def created_by_client() -> None:
        path.write_text("{}", encoding="utf-8")

    with pytest.raises(CnkiError) as info:
        _install("cursor", path, before_replace=created_by_client)
    assert info.value.code == "CONFIG_CHANGED"
    assert path.read_text(encoding="utf-8") == "{}"


# --- TOML ----------------------------------------------------------------------------

CODEX_TOML = """\
# Codex settings — edited by hand
model = "gpt-5"  # default model
approval_policy = "on-request"

[mcp_servers.github]
command = "github-mcp"   # the GitHub server
args = ["stdio"]

# profiles below
[profiles.fast]
model = "gpt-5-mini"
"""


def test_toml_install_keeps_comments_layout_and_other_tables(home: Path) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text(CODEX_TOML, encoding="utf-8")

    result = _install("codex", path)

    text = path.read_text(encoding="utf-8")
    assert result.status == "updated"
    for line in CODEX_TOML.splitlines():
        assert line in text.splitlines(), f"line lost: {line!r}"
    original = [ln for ln in CODEX_TOML.splitlines() if ln.strip()]
    kept = [ln for ln in text.splitlines() if ln in original]
    assert kept == original  # every non-blank line kept, in the same order
    assert text.startswith(CODEX_TOML.split("[mcp_servers.github]")[0])
    data = tomllib.loads(text)
    assert data["mcp_servers"]["github"] == {"command": "github-mcp", "args": ["stdio"]}
    assert data["mcp_servers"]["cnki"] == {
        "command": COMMAND[0],
        "args": ["serve"],
        "startup_timeout_sec": 30,
        "tool_timeout_sec": 900,
        "env": ENV,
    }
    assert data["profiles"] == {"fast": {"model": "gpt-5-mini"}}
    assert "\n\n[profiles.fast]" in text  # the next table is still separated by a blank line
    assert result.backup.read_text(encoding="utf-8") == CODEX_TOML
    assert _install("codex", path).status == "unchanged"


def test_toml_update_replaces_the_cnki_table_in_place(home: Path) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text(CODEX_TOML, encoding="utf-8")
    _install("codex", path)
    _install("codex", path, env={"CNKI_BROWSER_PATH": "/opt/edge"})
    text = path.read_text(encoding="utf-8")
    assert text.count("[mcp_servers.cnki]") == 1 and text.count("[mcp_servers.cnki.env]") == 1
    assert tomllib.loads(text)["mcp_servers"]["cnki"]["env"] == {"CNKI_BROWSER_PATH": "/opt/edge"}
    assert "# profiles below" in text and "# the GitHub server" in text


# --- DeepSeek Harness -----------------------------------------------------------------


def test_dsh_patch_is_appended_once_and_a_different_entry_is_refused(home: Path) -> None:
    path = home / ".dsh" / "profiles" / "web" / "cordis.patch.yml"
    path.parent.mkdir(parents=True)
    existing = "- insert:\n    - id: other\n      name: x\n"
    path.write_text(existing, encoding="utf-8")

    assert _install("dsh-web", path).status == "updated"
    text = path.read_text(encoding="utf-8")
    assert text.startswith(existing) and text.count("id: mcp-cnki") == 1
    assert _install("dsh-web", path).status == "unchanged"
    with pytest.raises(CnkiError) as info:
        _install("dsh-web", path, env={"CNKI_BROWSER_PATH": "/other"})
    assert info.value.code == "CONFIG_EXISTS"
    assert info.value.details["path"] == str(path)
    assert path.read_text(encoding="utf-8") == text


def test_dsh_empty_list_file_is_replaced_by_the_snippet(home: Path) -> None:
    path = home / "cordis.patch.yml"
    path.write_text("[]\n", encoding="utf-8")
    _install("dsh-desktop", path)
    assert path.read_text(encoding="utf-8").startswith("# cnki-mcp")


# --- setup end to end -------------------------------------------------------------------


@pytest.fixture
def fake_browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    exe = tmp_path / "bin" / "chrome"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n", encoding="utf-8")
    probed: list[str] = []

    def probe(path: str) -> tuple[bool, str]:
        probed.append(path)
        return True, "156.0.0.1"

    monkeypatch.setattr(setup_cmd, "probe", probe)
    monkeypatch.delattr(doctor_cmd, "protocol_check", raising=False)
    yield str(exe)
    assert probed and set(probed) == {str(exe)}, "setup probes the chosen browser"


def test_setup_noninteractive_installs_into_the_client_file(
    home: Path, fake_browser: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text('{"mcpServers": {"other": {"command": "o"}}}', encoding="utf-8")

    code = main(["setup", "--yes", "--client", "cursor", "--browser", fake_browser, "--install-client"])

    out = capsys.readouterr().out
    assert code == 0
    servers = json.loads(path.read_text(encoding="utf-8"))["mcpServers"]
    assert servers["other"] == {"command": "o"}
    entry = servers["cnki"]
    assert Path(entry["command"]).is_absolute() and entry["args"][-1] == "serve"
    assert entry["env"] == {"CNKI_BROWSER_PATH": fake_browser, "CNKI_DATA_DIR": os.environ["CNKI_DATA_DIR"]}
    assert len(_backups(path)) == 1
    assert "协议检查暂不可用" in out

    assert main(["setup", "--yes", "--client", "cursor", "--browser", fake_browser, "--install-client"]) == 0
    assert "未改动" in capsys.readouterr().out
    assert len(_backups(path)) == 1


def test_setup_without_install_flag_or_with_dry_run_writes_nothing(
    home: Path, fake_browser: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = sorted(p.relative_to(home) for p in home.rglob("*"))
    assert (
        main(
            [
                "setup",
                "--yes",
                "--client",
                "gemini",
                "--browser",
                fake_browser,
                "--dry-run",
                "--install-client",
            ]
        )
        == 0
    )
    assert "--dry-run" in capsys.readouterr().out
    assert sorted(p.relative_to(home) for p in home.rglob("*")) == before
    data = home / "cnki data"
    assert main(["setup", "--yes", "--client", "gemini", "--browser", fake_browser, "--data-dir", str(data)]) == 0
    out = capsys.readouterr().out
    assert "未写入" in out
    assert sorted(p.relative_to(home) for p in home.rglob("*")) == before
    # the command it suggests writes the same entry: the browser and data directory go with it
    suggested = shlex.split(out.split("需要时运行：", 1)[1].splitlines()[0])
    assert suggested[suggested.index("--browser") + 1] == fake_browser
    assert suggested[suggested.index("--data-dir") + 1] == str(data) and suggested[-1] == "--install-client"


def test_setup_interactive_prompts_choose_client_and_confirm(
    home: Path, fake_browser: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    answers = iter(["3", ""])  # client 3 (codex), then accept the default "Y"
    prompts: list[str] = []

    def fake_input(prompt: str = "") -> str:
        prompts.append(prompt)
        return next(answers)

    monkeypatch.setattr("builtins.input", fake_input)
    assert main(["setup", "--browser", fake_browser]) == 0
    out = capsys.readouterr().out
    assert "选择要配置的 AI 客户端" in out and " 3. Codex（codex）" in out
    assert any("[Y/n]" in p for p in prompts)
    config = tomllib.loads((home / ".codex" / "config.toml").read_text(encoding="utf-8"))
    assert config["mcp_servers"]["cnki"]["tool_timeout_sec"] == 900


def test_setup_for_dsh_without_its_profile_folder_is_a_coded_error(home: Path, fake_browser: str) -> None:
    code = main(["setup", "--yes", "--client", "dsh-desktop", "--browser", fake_browser, "--install-client"])
    assert code == 2
    assert not (home / ".dsh").exists()


def test_setup_without_a_terminal_asks_for_flags(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(setup_cmd, "probe", lambda path: (True, "1"))

    def no_input(prompt: str = "") -> str:
        raise EOFError

    monkeypatch.setattr("builtins.input", no_input)
    exe = home / "chrome"
    exe.write_text("", encoding="utf-8")
    assert main(["setup", "--browser", str(exe)]) == 2
    assert "错误 INVALID_ARGUMENT" in capsys.readouterr().err


def test_setup_with_a_missing_browser_is_a_coded_error(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["setup", "--yes", "--browser", str(home / "nowhere" / "chrome")]) == 2
    assert "错误 BROWSER_UNAVAILABLE" in capsys.readouterr().err


def test_a_missing_configured_browser_is_an_error_not_silently_replaced(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """CNKI_BROWSER_PATH naming no file is BROWSER_UNAVAILABLE for serve and doctor; setup used to
    skip it, pick another browser and write that into the entry without a word."""
    monkeypatch.setattr(setup_cmd, "probe", lambda path: (True, "1"))
    other = home / "installed-chrome"
    other.write_text("", encoding="utf-8")
    monkeypatch.setattr(setup_cmd, "browser_candidates", lambda environ: [str(other)])  # one is installed
    monkeypatch.setenv("CNKI_BROWSER_PATH", str(home / "typo" / "chrome"))
    assert main(["setup", "--yes", "--client", "cursor", "--install-client"]) == 2
    assert "错误 BROWSER_UNAVAILABLE" in capsys.readouterr().err
    assert not (home / ".cursor").exists()


def test_setup_rejects_an_unknown_client_before_probing_the_browser(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    probed: list[str] = []
    monkeypatch.setattr(setup_cmd, "probe", lambda path: (probed.append(path), (True, "1"))[1])
    exe = home / "chrome"
    exe.write_text("", encoding="utf-8")
    assert main(["setup", "--yes", "--client", "cursr", "--browser", str(exe)]) == 2
    assert "错误 UNKNOWN_CLIENT" in capsys.readouterr().err
    assert probed == []


def test_setup_runs_the_protocol_check_when_available_and_fails_with_it(
    home: Path, fake_browser: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[tuple[list[str], dict[str, str]]] = []

    def protocol_check(command: list[str], env: dict[str, str]) -> doctor_cmd.Check:
        seen.append((command, env))
        return doctor_cmd.Check("protocol", False, "no tools listed")

    monkeypatch.setattr(doctor_cmd, "protocol_check", protocol_check, raising=False)
    assert main(["setup", "--yes", "--browser", fake_browser]) == 1
    assert "FAIL  protocol" in capsys.readouterr().out
    assert seen and seen[0][0][-1] == "serve" and seen[0][1]["CNKI_BROWSER_PATH"] == fake_browser


def test_rerunning_setup_keeps_what_the_user_set_in_the_installed_entry(
    home: Path, fake_browser: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second setup without --data-dir (a new browser, say) keeps CNKI_DATA_DIR from the first
    one, and what the user added (another variable, the client's own keys); this run's values win."""
    monkeypatch.delenv("CNKI_DATA_DIR")
    data = tmp_path / "my-cnki"
    argv = ["setup", "--yes", "--client", "cursor", "--install-client", "--browser", fake_browser]
    assert main([*argv, "--data-dir", str(data)]) == 0
    path = home / ".cursor" / "mcp.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["mcpServers"]["cnki"]["env"]["CNKI_READ_ONLY"] = "1"
    doc["mcpServers"]["cnki"]["disabled"] = False
    doc["mcpServers"]["cnki"]["env"]["CNKI_BROWSER_PATH"] = "/old/chrome"
    path.write_text(json.dumps(doc), encoding="utf-8")
    capsys.readouterr()

    assert main(argv) == 0

    entry = json.loads(path.read_text(encoding="utf-8"))["mcpServers"]["cnki"]
    assert entry["env"] == {"CNKI_BROWSER_PATH": fake_browser, "CNKI_DATA_DIR": str(data), "CNKI_READ_ONLY": "1"}
    assert entry["disabled"] is False and entry["args"] == ["serve"]
    written = path.read_text(encoding="utf-8")
    assert main(argv) == 0  # and the kept entry is the installed one: nothing to do
    assert path.read_text(encoding="utf-8") == written
    assert len(_backups(path)) == 1  # the first run created the file, the second updated it


@pytest.mark.parametrize(
    ("client_id", "relative", "read_env"),
    [
        ("codex", ".codex/config.toml", lambda t: tomllib.loads(t)["mcp_servers"]["cnki"]["env"]),
        ("opencode", ".config/opencode/opencode.json", lambda t: json.loads(t)["mcp"]["cnki"]["environment"]),
        ("goose", ".config/goose/config.yaml", None),
    ],
)
def test_an_earlier_data_directory_survives_an_update_in_every_format(
    home: Path, client_id: str, relative: str, read_env: Any
) -> None:
    path = home / relative
    first = {"CNKI_BROWSER_PATH": "/usr/bin/chromium", "CNKI_DATA_DIR": "/srv/cnki"}
    _install(client_id, path, env=first)
    _install(client_id, path, env={"CNKI_BROWSER_PATH": "/opt/edge/msedge"})
    text = path.read_text(encoding="utf-8")
    if read_env is None:
        from ruamel.yaml import YAML

        env = YAML(typ="safe", pure=True).load(text)["extensions"]["cnki"]["envs"]
    else:
        env = read_env(text)
    assert env == {"CNKI_BROWSER_PATH": "/opt/edge/msedge", "CNKI_DATA_DIR": "/srv/cnki"}


def test_setup_refuses_a_data_directory_serve_would_refuse_before_writing_anything(
    home: Path, fake_browser: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The protocol check runs with a temporary data directory, so setup itself must refuse a
    --data-dir the client's server would exit on (DATA_DIRECTORY_UNUSABLE)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    for data_dir in (blocker, blocker / "data"):
        argv = ["setup", "--yes", "--client", "cursor", "--browser", fake_browser, "--install-client"]
        assert main([*argv, "--data-dir", str(data_dir)]) == 2
        assert "错误 DATA_DIRECTORY_UNUSABLE" in capsys.readouterr().err
    assert not (home / ".cursor").exists()
    assert blocker.read_text(encoding="utf-8") == "x"


def test_relative_paths_from_the_shell_are_written_absolute(
    home: Path,
    fake_browser: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The client starts the server in a folder of its own: CNKI_DATA_DIR=./data and a relative
    CNKI_BROWSER_PATH from the shell go into the entry as absolute paths (setup and config)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CNKI_DATA_DIR", "rel-data")
    monkeypatch.setenv("CNKI_BROWSER_PATH", str(Path(fake_browser).relative_to(tmp_path)))
    assert main(["setup", "--yes", "--client", "cursor", "--install-client"]) == 0
    capsys.readouterr()
    want = {"CNKI_BROWSER_PATH": fake_browser, "CNKI_DATA_DIR": str(tmp_path / "rel-data")}
    written = json.loads((home / ".cursor" / "mcp.json").read_text(encoding="utf-8"))
    assert written["mcpServers"]["cnki"]["env"] == want
    assert main(["config", "cursor"]) == 0
    assert json.loads(capsys.readouterr().out)["mcpServers"]["cnki"]["env"] == want


def test_setup_accepts_a_macos_app_bundle_as_the_browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/clients.md: `setup --browser "/Applications/Google Chrome.app"` means the binary inside."""
    app = tmp_path / "Applications" / "Google Chrome.app"
    binary = app / "Contents" / "MacOS" / "Google Chrome"
    binary.parent.mkdir(parents=True)
    binary.write_text("", encoding="utf-8")
    monkeypatch.setattr(sys, "platform", "darwin")
    assert setup_cmd.pick_browser(str(app), {}, interactive=False) == str(binary)


# --- config CLIENT -------------------------------------------------------------------------


def test_config_prints_the_snippet_without_touching_files(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert main(["config", "claude-code", "--browser", "/opt/chrome/chrome"]) == 0
    captured = capsys.readouterr()
    entry = json.loads(captured.out)["mcpServers"]["cnki"]
    assert entry["type"] == "stdio" and entry["env"]["CNKI_BROWSER_PATH"] == "/opt/chrome/chrome"
    assert str(home / ".claude.json") in captured.err
    # the setup command it suggests writes this same entry
    suggested = shlex.split(captured.err.split("可用 ", 1)[1].split(" 自动写入", 1)[0])
    assert suggested[suggested.index("--browser") + 1] == "/opt/chrome/chrome"
    assert suggested[:4] == ["cnki-mcp", "setup", "--client", "claude-code"] and suggested[-1] == "--install-client"
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_config_for_another_os_writes_its_paths_as_given_and_runs_through_uvx(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CNKI_BROWSER_PATH", "/usr/bin/chromium")  # this machine's: not for Windows
    other = "windows" if sys.platform != "win32" else "linux"
    data = "C:\\Users\\li\\cnki" if other == "windows" else "/home/li/cnki"
    assert main(["config", "claude-code", "--os", other, "--data-dir", data]) == 0
    entry = json.loads(capsys.readouterr().out)["mcpServers"]["cnki"]
    assert entry["env"] == {"CNKI_DATA_DIR": data}
    assert entry["command"] == "uvx" and entry["args"][:3] == ["--from", "cnki-research-mcp", "cnki-mcp"]


def test_config_list_names_all_clients(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "--list"]) == 0
    out = capsys.readouterr().out
    assert "codex" in out and "cherry-studio" in out and "通义灵码" in out
    assert len(out.strip().splitlines()) == 1 + 34


def test_unknown_client_exits_2_with_a_coded_message_and_no_traceback(home: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "cnki_mcp", "config", "notepad"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("错误 UNKNOWN_CLIENT:")
    assert "Traceback" not in proc.stderr and proc.stdout == ""
