"""Read-only mode (`CNKI_READ_ONLY=1`, `serve --read-only`): which tools are hidden from
`tools/list` and refused when called anyway, and which arguments are refused. The reasons are
the table in DESIGN.md "Read-only mode"; `server/errors.CnkiServer` applies them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cnki_mcp.errors import ReadOnlyMode

# Tools that download, write files outside the store, or could spend money on the account.
HIDDEN_TOOLS: frozenset[str] = frozenset(
    {
        "download_paper",  # a download click: CNKI may charge per download; writes a file
        "read_online_html",  # opens the full-text reader, metered like a download on some accounts
    }
)

# Listed tools whose arguments would write a file outside the store.
REFUSED_ARGUMENTS: Mapping[str, tuple[str, ...]] = {
    "export_citations": ("filename",),  # the text is still returned inline
    "citation_graph": ("filename",),  # the graph is still returned inline (counts when over 64 KB)
}


def is_read_only(lifespan_context: Any) -> bool:
    """Whether the running Services were opened in read-only mode (False before they exist)."""
    settings = getattr(lifespan_context, "settings", None)
    return bool(getattr(settings, "read_only", False))


def check_call(name: str, arguments: Mapping[str, Any]) -> None:
    """READ_ONLY_MODE for a hidden tool or a refused argument (only called in read-only mode)."""
    if name in HIDDEN_TOOLS:
        raise ReadOnlyMode(tool=name)
    for argument in REFUSED_ARGUMENTS.get(name, ()):
        if arguments.get(argument) is not None:
            raise ReadOnlyMode(
                f"只读模式下不能写出文件：去掉 {argument} 即可在结果中返回文本", tool=name, field=argument
            )
