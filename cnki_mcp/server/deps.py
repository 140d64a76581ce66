"""Reaching the Services of the running server from a tool's Context."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context

from cnki_mcp.services import Services


def services_of(ctx: Context[Any, Any]) -> Services:
    value = ctx.request_context.lifespan_context
    if not isinstance(value, Services):  # pragma: no cover - wiring bug
        raise RuntimeError("server lifespan did not provide Services")
    return value
