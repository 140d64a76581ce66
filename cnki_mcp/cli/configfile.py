"""Client configuration files: pure merges (JSON by key, JSONC by splicing with comments kept
(`jsonc.py`), TOML through tomlkit and YAML through ruamel.yaml with comments and layout kept,
the DeepSeek Harness YAML patch by marker) and the one safe writer.

The merges take the current text (None: no file) and return the new text; they return the
input unchanged when the cnki entry is already there with the same content, so a second
install is a no-op. `install_file` is the only function here that touches the disk: it
refuses symlinks, backs the file up, writes a temporary file, re-reads the original right
before the replace (a change meanwhile -> CONFIG_CHANGED) and renames atomically."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import tomlkit
import tomlkit.items
from tomlkit.exceptions import TOMLKitError

from cnki_mcp.errors import ConfigChanged, ConfigExists, ConfigInvalid, ConfigSymlink, ConfigWriteFailed

DSH_MARKER = "id: mcp-cnki"
BOM = "\ufeff"


# --- JSON -------------------------------------------------------------------------


def _indent_of(text: str) -> int | str:
    """The indentation unit of an existing JSON file (2 spaces when unknown)."""
    match = re.search(r"^[{\[][ \t]*\r?\n([ \t]+)\S", text.lstrip(BOM), re.MULTILINE)
    if not match:
        return 2
    unit = match.group(1)
    return unit if "\t" in unit else len(unit)


def nested(servers_key: str, name: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    """`{"mcp": {"servers": {name: entry}}}` for servers_key "mcp.servers"."""
    value: dict[str, Any] = {name: dict(entry)}
    for part in reversed(servers_key.split(".")):
        value = {part: value}
    return value


def render_json(servers_key: str, name: str, entry: Mapping[str, Any]) -> str:
    return json.dumps(nested(servers_key, name, entry), indent=2, ensure_ascii=False) + "\n"


def merge_json(text: str | None, servers_key: str, name: str, entry: Mapping[str, Any]) -> str:
    """Set `<servers_key>.<name>` to `entry`, keeping every other key (and their order).
    Invalid JSON, a non-object root or a non-object on the key path -> CONFIG_INVALID."""
    if text is None or not text.strip(BOM).strip():
        return render_json(servers_key, name, entry)
    try:
        root = json.loads(text.lstrip(BOM))
    except json.JSONDecodeError as exc:
        raise ConfigInvalid(
            f"现有配置不是合法的 JSON（第 {exc.lineno} 行第 {exc.colno} 列：{exc.msg}），未改动",
            line=exc.lineno,
            column=exc.colno,
        ) from exc
    if not isinstance(root, dict):
        raise ConfigInvalid("现有配置的顶层不是 JSON 对象，未改动")
    node: dict[str, Any] = root
    walked: list[str] = []
    for part in servers_key.split("."):
        walked.append(part)
        child = node.setdefault(part, {})
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise ConfigInvalid(f"现有配置里 {'.'.join(walked)} 不是对象，未改动", key=".".join(walked))
        node = child
    if node.get(name) == dict(entry):
        return text
    node[name] = dict(entry)
    newline = "\r\n" if "\r\n" in text else "\n"
    out = json.dumps(root, indent=_indent_of(text), ensure_ascii=False) + "\n"
    if newline != "\n":
        out = out.replace("\n", newline)
    return (BOM if text.startswith(BOM) else "") + out


def merge_jsonc(text: str | None, servers_key: str, name: str, entry: Mapping[str, Any]) -> str:
    """Like `merge_json` for files that may hold comments and trailing commas (Zed, VS Code,
    opencode): a strict-JSON file is merged as JSON; otherwise only the cnki member is spliced
    in, so every comment stays where it was."""
    if text is None or not text.strip(BOM).strip():
        return render_json(servers_key, name, entry)
    try:
        json.loads(text.lstrip(BOM))
    except json.JSONDecodeError:
        from cnki_mcp.cli.jsonc import set_member

        bom = BOM if text.startswith(BOM) else ""
        return bom + set_member(text.lstrip(BOM), servers_key.split("."), name, dict(entry))
    return merge_json(text, servers_key, name, entry)


# --- YAML (ruamel.yaml round trip: comments, order and quoting kept) ---------------------


def _yaml() -> Any:
    from ruamel.yaml import YAML

    yaml = YAML()  # round-trip mode
    yaml.preserve_quotes = True
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    return yaml


def _yaml_load(text: str | None) -> Any:
    from ruamel.yaml.comments import CommentedMap
    from ruamel.yaml.error import YAMLError

    source = (text or "").lstrip(BOM)
    if not source.strip():
        return CommentedMap()
    try:
        doc = _yaml().load(source)
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if mark is None:
            raise ConfigInvalid(f"现有配置不是合法的 YAML（{problem}），未改动") from exc
        line, column = mark.line + 1, mark.column + 1
        raise ConfigInvalid(
            f"现有配置不是合法的 YAML（第 {line} 行第 {column} 列：{problem}），未改动", line=line, column=column
        ) from exc
    if doc is None:
        return CommentedMap()
    if not isinstance(doc, dict):
        raise ConfigInvalid("现有配置的顶层不是 YAML 映射，未改动")
    return doc


def _yaml_dump(doc: Any, text: str | None) -> str:
    import io

    buf = io.StringIO()
    _yaml().dump(doc, buf)
    return (BOM if text and text.startswith(BOM) else "") + buf.getvalue()


def _yaml_container(doc: Any, key: str, kind: type) -> Any:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    node = doc
    walked: list[str] = []
    parts = key.split(".")
    for i, part in enumerate(parts):
        walked.append(part)
        last = i == len(parts) - 1
        child = node.get(part)
        if child is None:
            child = node[part] = CommentedSeq() if (last and kind is list) else CommentedMap()
        want = list if (last and kind is list) else dict
        if not isinstance(child, want):
            what = "列表" if want is list else "映射"
            raise ConfigInvalid(f"现有配置里 {'.'.join(walked)} 不是{what}，未改动", key=".".join(walked))
        node = child
    return node


def merge_yaml_map(text: str | None, servers_key: str, name: str, entry: Mapping[str, Any]) -> str:
    """Set `<servers_key>.<name>` in a YAML mapping (Goose's `extensions`)."""
    doc = _yaml_load(text)
    container = _yaml_container(doc, servers_key, dict)
    if name in container and _plain(container[name]) == _plain(entry):
        return text if text is not None else _yaml_dump(doc, text)
    container[name] = dict(entry)
    return _yaml_dump(doc, text)


def merge_yaml_list(
    text: str | None, list_key: str, name: str, entry: Mapping[str, Any], *, header: Mapping[str, Any]
) -> str:
    """Set the item whose `name` is `name` in a YAML list (Continue's `mcpServers`), appending
    it when absent. A new file starts with `header` (the keys the client requires)."""
    doc = _yaml_load(text)
    if text is None or not text.strip(BOM).strip():
        for key, value in header.items():
            doc[key] = value
    items = _yaml_container(doc, list_key, list)
    for i, item in enumerate(items):
        if isinstance(item, dict) and item.get("name") == name:
            if _plain(item) == _plain(entry):
                return text if text is not None else _yaml_dump(doc, text)
            items[i] = dict(entry)
            return _yaml_dump(doc, text)
    items.append(dict(entry))
    return _yaml_dump(doc, text)


# --- TOML -------------------------------------------------------------------------


def _toml_table(entry: Mapping[str, Any]) -> tomlkit.items.Table:
    """Scalars and arrays first, then sub-tables (TOML requires that order)."""
    table = tomlkit.table()
    subtables = [(k, v) for k, v in entry.items() if isinstance(v, Mapping)]
    for key, value in entry.items():
        if not isinstance(value, Mapping):
            table[key] = value
    for i, (key, value) in enumerate(subtables):
        sub = tomlkit.table()
        for k, v in value.items():
            sub[k] = v
        if i == len(subtables) - 1:
            sub.add(tomlkit.nl())
        table[key] = sub
    if not subtables:
        table.add(tomlkit.nl())
    return table


def _toml_inline(entry: Mapping[str, Any]) -> tomlkit.items.InlineTable:
    table = tomlkit.inline_table()
    for key, value in entry.items():
        table[key] = _toml_inline(value) if isinstance(value, Mapping) else value
    return table


def render_toml(servers_key: str, name: str, entry: Mapping[str, Any]) -> str:
    return merge_toml(None, servers_key, name, entry)


def merge_toml(text: str | None, servers_key: str, name: str, entry: Mapping[str, Any]) -> str:
    """Set table `[<servers_key>.<name>]` through tomlkit: comments, key order and the
    layout of everything else are kept. Invalid TOML -> CONFIG_INVALID."""
    source = (text or "").lstrip(BOM)
    try:
        doc = tomlkit.parse(source)
    except TOMLKitError as exc:
        raise ConfigInvalid(f"现有配置不是合法的 TOML（{exc}），未改动") from exc
    container: Any = doc
    walked: list[str] = []
    for part in servers_key.split("."):
        walked.append(part)
        if part not in container:
            container[part] = tomlkit.table(is_super_table=True)
        child = container[part]
        if not isinstance(child, dict):
            raise ConfigInvalid(f"现有配置里 {'.'.join(walked)} 不是表，未改动", key=".".join(walked))
        container = child
    current = container.get(name)
    if current is not None and _plain(current) == _plain(entry):
        return text if text is not None else doc.as_string()
    if isinstance(container, tomlkit.items.InlineTable):
        container[name] = _toml_inline(entry)
    else:
        container[name] = _toml_table(entry)
    out = doc.as_string()
    out = out.rstrip("\n") + "\n"
    return (BOM if text and text.startswith(BOM) else "") + out


def _plain(value: Any) -> Any:
    unwrap = getattr(value, "unwrap", None)
    if callable(unwrap):
        value = unwrap()
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


# --- DeepSeek Harness YAML patch ----------------------------------------------------


def render_dsh(command: str, args: list[str], env: Mapping[str, str]) -> str:
    """The `cordis.patch.yml` list item. Strings are JSON-quoted, which YAML reads as is."""
    q = json.dumps
    lines = [
        "# cnki-mcp: 中国知网 MCP 服务器（由 cnki-mcp setup 写入）",
        "- insert:",
        f"    - {DSH_MARKER}",
        "      name: '@deepseek-ai/dsh-mcp-client'",
        "      config:",
        "        serverName: cnki",
        "        transport: stdio",
        f"        command: {q(command, ensure_ascii=False)}",
        f"        args: {q(args, ensure_ascii=False)}",
        f"        env: {q(dict(env), ensure_ascii=False)}",
        "        toolCallTimeoutMs: 900000",
        "        failOnStartupError: false",
    ]
    return "\n".join(lines) + "\n"


def merge_dsh(text: str | None, snippet: str) -> str:
    """Append the snippet. An empty file or `[]` is replaced; an identical snippet is a
    no-op; a different cnki entry (the marker) -> CONFIG_EXISTS (YAML is not rewritten)."""
    if text is None or text.strip(BOM).strip() in ("", "[]"):
        return snippet
    if DSH_MARKER in text:
        body = snippet.split("\n", 1)[1]  # without the comment header
        if body in text.replace("\r\n", "\n"):
            return text
        raise ConfigExists("该文件里已有不同的 cnki 条目（id: mcp-cnki）；请手动删除后重试")
    sep = "" if text.endswith("\n") else "\n"
    return f"{text}{sep}{snippet}"


# --- the safe writer ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InstallResult:
    status: Literal["created", "updated", "unchanged"]
    path: Path
    backup: Path | None = None


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def _read_text(path: Path) -> tuple[str | None, str | None]:
    """(text, sha256) of the current file; (None, None) when there is none."""
    if path.is_symlink():
        raise ConfigSymlink(f"{path} 是符号链接，拒绝写入（请改写链接指向的文件）", path=str(path))
    if path.exists() and not path.is_file():
        raise ConfigInvalid(f"{path} 不是普通文件，未改动", path=str(path))
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        raise ConfigWriteFailed(f"无法读取 {path}：{exc.strerror or exc}", path=str(path)) from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigInvalid(f"{path} 不是 UTF-8 文本，未改动", path=str(path)) from exc
    return text, hashlib.sha256(raw).hexdigest()


def backup_path(path: Path, now: datetime) -> Path:
    stamp = now.strftime("%Y%m%d-%H%M%S")
    candidate = path.with_name(f"{path.name}.bak-{stamp}")
    n = 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}.bak-{stamp}-{n}")
    return candidate


def install_file(
    path: Path,
    render: Callable[[str | None], str],
    *,
    now: datetime,
    before_replace: Callable[[], None] | None = None,
) -> InstallResult:
    """Write `render(current_text)` to `path` safely (see the module docstring).
    `before_replace` runs between the backup/temporary write and the final check; tests use
    it to simulate another program editing the file at that moment."""
    path = Path(path)
    old, digest = _read_text(path)
    try:
        new = render(old)
    except (ConfigInvalid, ConfigExists) as exc:  # the merges see text only: name the file here
        if "path" in exc.details:
            raise
        raise type(exc)(f"{path}：{exc.message}", path=str(path), **exc.details) from exc
    if new == old:
        return InstallResult("unchanged", path)
    backup: Path | None = None
    tmp = path.with_name(f".{path.name}.cnki-{secrets.token_hex(4)}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if old is not None:
            backup = backup_path(path, now)
            shutil.copy2(path, backup)
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            fh.write(new)
            fh.flush()
            os.fsync(fh.fileno())
        if old is not None:
            shutil.copymode(path, tmp)
        else:
            os.chmod(tmp, 0o600)
        if before_replace is not None:
            before_replace()
        if path.is_symlink():
            raise ConfigSymlink(f"{path} 在写入前变成了符号链接，未改动", path=str(path))
        if _digest(path) != digest:
            raise ConfigChanged(f"{path} 在写入前被其他程序修改，未改动；请关闭客户端后重试", path=str(path))
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if backup is not None:
            with contextlib.suppress(OSError):
                backup.unlink()
        if isinstance(exc, OSError):
            raise ConfigWriteFailed(f"无法写入 {path}：{exc.strerror or exc}", path=str(path)) from exc
        raise
    return InstallResult("created" if old is None else "updated", path, backup)
