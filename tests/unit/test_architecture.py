"""The dependency rules of docs/DESIGN.md, checked by walking every module's imports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "cnki_mcp"

PURE = ("query", "parse", "identity", "works", "rank", "cite", "links", "script", "doc_kinds")
LEAVES = ("errors", "models", "clock")


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(path: Path, module: str) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            found.add(name)
    return found


def _area(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


MODULES = _modules()


def _internal(imports: set[str]) -> set[str]:
    return {i for i in imports if i == "cnki_mcp" or i.startswith("cnki_mcp.")}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_respects_dependency_rules(module: str) -> None:
    imports = _imports(MODULES[module], module)
    internal = {i for i in _internal(imports) if i != "cnki_mcp"}
    area = _area(module)
    externals = {i.split(".")[0] for i in imports} - {"cnki_mcp"}

    if "playwright" in externals:
        assert area == "site", f"{module} imports playwright; only cnki_mcp.site may"
    if "mcp" in externals or "mcp_types" in externals:
        assert area == "server", f"{module} imports mcp; only cnki_mcp.server may"
    if area == "sim":
        outside = {i for i in internal if _area(i) != "sim"}
        assert not outside, f"simulator module {module} imports {outside}; the simulator must stay independent"
    if area in LEAVES:
        assert not internal, f"{module} must not import internal modules: {internal}"
    if area in PURE:
        allowed = set(PURE) | set(LEAVES)
        bad = {i for i in internal if _area(i) not in allowed}
        assert not bad, f"pure module {module} imports {bad}"
    if area in ("pipeline", "jobs"):
        bad = {i for i in internal if _area(i) == "site" and i not in {"cnki_mcp.site.backend", "cnki_mcp.site"}}
        bad |= {i for i in internal if _area(i) in ("server", "cli")}
        assert not bad, f"{module} must depend on the SiteBackend protocol only, not {bad}"


def test_package_import_builds_nothing() -> None:
    import subprocess
    import sys

    code = (
        "import sys, cnki_mcp; "
        "heavy = [m for m in ('playwright', 'mcp', 'selectolax', 'sqlite3', 'pydantic') if m in sys.modules]; "
        "names = sorted(k for k in vars(cnki_mcp) if not k.startswith('__')); "
        "print(heavy, names)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] []"


def test_the_search_log_formatter_is_pure() -> None:
    """DESIGN.md "Search log": the formatter takes the model and returns text; it reaches no store,
    clock or network, so it may import only pure packages and leaves."""
    module = "cnki_mcp.pipeline.searchlog_format"
    internal = _internal(_imports(MODULES[module], module))
    bad = {i for i in internal if _area(i) not in {*PURE, *LEAVES}}
    assert not bad, f"{module} imports {bad}"


def test_the_server_does_not_import_the_cli() -> None:
    """The CLI builds on the server (`serve`), not the other way round: what both use (the browser's
    route for doctor and `diagnostics`) lives in a neutral module."""
    for module in (m for m in MODULES if _area(m) == "server"):
        bad = {i for i in _internal(_imports(MODULES[module], module)) if _area(i) == "cli"}
        assert not bad, f"{module} imports {bad}"


def test_the_task_helpers_are_neutral() -> None:
    """`tasks` (`all_done`) serves every layer that runs work together, so it imports nothing internal."""
    module = "cnki_mcp.tasks"
    assert not _internal(_imports(MODULES[module], module))
