"""server.json (the official MCP registry entry) agrees with pyproject.toml and the README:
the registry finds `mcp-name: <name>` in the README published to PyPI, caps the description at
100 characters, and takes versions that must match the released package."""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def problems() -> list[str]:
    server = json.loads((ROOT / "server.json").read_text(encoding="utf-8"))
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    readme = (ROOT / project["readme"]).read_text(encoding="utf-8")
    out: list[str] = []
    if not re.fullmatch(r"io\.github\.[A-Za-z0-9-]+/[A-Za-z0-9._-]+", server["name"]):
        out.append(f"server.json name {server['name']!r} is not an io.github.<owner>/<name> namespace")
    if f"mcp-name: {server['name']}" not in readme:
        out.append(f"README lacks the line 'mcp-name: {server['name']}'")
    if len(server["description"]) > 100:
        out.append(f"description is {len(server['description'])} characters (the registry allows 100)")
    for where, version in [("server.json", server["version"])] + [
        (f"packages[{i}]", p["version"]) for i, p in enumerate(server["packages"])
    ]:
        if version != project["version"]:
            out.append(f"{where} version {version} != pyproject {project['version']}")
    for pkg in server["packages"]:
        if pkg["registryType"] == "pypi" and pkg["identifier"] != project["name"]:
            out.append(f"package identifier {pkg['identifier']} != pyproject name {project['name']}")
        if pkg["transport"]["type"] != "stdio":
            out.append("the server speaks stdio (HTTP is opt-in)")
    return out


def main() -> int:
    found = problems()
    for line in found:
        print(f"server.json: {line}", file=sys.stderr)
    if not found:
        print("dist: server.json agrees with pyproject.toml and the README")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
