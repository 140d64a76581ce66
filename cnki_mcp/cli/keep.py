"""What a re-run of `setup` keeps from the cnki entry already installed: the keys and the
environment variables the user (or an earlier `setup --data-dir`) put there and this run does not
set. Without this a second `setup` without `--data-dir` dropped `CNKI_DATA_DIR` (the server then
used another data directory: an empty library, no login) and the client's own per-server
settings (`disabled`, `autoApprove`, …). What this run writes wins. Pure: text in, values out."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from typing import Any

from cnki_mcp.cli.configfile import BOM
from cnki_mcp.errors import ConfigInvalid


def _document(text: str, fmt: str) -> Any:
    """The parsed config (`fmt` is a ConfigFormat value)."""
    source = text.lstrip(BOM)
    if fmt in ("json", "jsonc"):
        from cnki_mcp.cli.jsonc import loads

        return loads(source)
    if fmt == "toml":
        return tomllib.loads(source)
    if fmt in ("yaml", "yaml-list"):
        from ruamel.yaml import YAML

        return YAML(typ="safe", pure=True).load(source)
    return None  # the DeepSeek Harness patch is appended by marker, never merged


def current_entry(text: str | None, fmt: str, servers_key: str, name: str) -> dict[str, Any] | None:
    """The `name` entry in a client config `text` (a list item named `name` for yaml-list);
    None when there is none or the text cannot be read (the merge then reports CONFIG_INVALID)."""
    from ruamel.yaml.error import YAMLError

    if not text or not text.strip(BOM).strip():
        return None
    try:
        node = _document(text, fmt)
    except (ConfigInvalid, tomllib.TOMLDecodeError, YAMLError):
        return None
    for part in servers_key.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    if fmt == "yaml-list":
        items = node if isinstance(node, list) else []
        node = next((i for i in items if isinstance(i, Mapping) and i.get("name") == name), None)
    elif isinstance(node, Mapping):
        node = node.get(name)
    else:
        node = None
    return dict(node) if isinstance(node, Mapping) else None


def keep_user_settings(entry: Mapping[str, Any], current: Mapping[str, Any] | None, env_key: str) -> dict[str, Any]:
    """`entry` plus the keys of `current` it does not set, and the variables of `current`'s
    environment (`env_key`) it does not set."""
    merged = dict(entry)
    if not current:
        return merged
    for key, value in current.items():
        if key != env_key and key not in merged:
            merged[key] = value
    old_env = current.get(env_key)
    if isinstance(old_env, Mapping) and old_env:
        new_env = entry.get(env_key)
        merged[env_key] = {**{str(k): v for k, v in old_env.items()}, **(dict(new_env) if isinstance(new_env, Mapping) else {})}
    return merged


def kept_names(entry: Mapping[str, Any], current: Mapping[str, Any] | None, env_key: str) -> list[str]:
    """What `keep_user_settings` carries over (for setup to say so)."""
    if not current:
        return []
    names = [k for k in current if k != env_key and k not in entry]
    old_env = current.get(env_key)
    new_env = entry.get(env_key)
    if isinstance(old_env, Mapping):
        names += [str(k) for k in old_env if not (isinstance(new_env, Mapping) and k in new_env)]
    return names
