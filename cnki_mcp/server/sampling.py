"""Concept planning by the client's model (MCP sampling) for `search`, and what happens when the
client does not answer it (DESIGN.md "Planning").

A client that declares sampling may still refuse a request (many ask the person first, who can
say no), fail it, or never answer. None of these may fail or hang the search: the server plans
by segmenting the question instead and says so in the plan's warnings. On protocol revisions
that send the request mid-call, the server sends it itself, bounded by SAMPLING_TIMEOUT_SECONDS;
on revisions that batch it into an input-required result, the SDK asks and the client answers on
its retry.

The time the call waited for the client's model is part of the call: the search's inline wait is
shortened by it (`AskedClient.waited`), so the call still answers within the inline wait and a
client that gives up on a tool call after 60 s gets the `operation_id`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import anyio
from mcp.server.mcpserver import Context, Sample
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp.types import CreateMessageRequest, CreateMessageResult, SamplingMessage, TextContent
from mcp_types.version import is_version_at_least
from pydantic import ValidationError

from cnki_mcp.query.plan import Plan, PlanMethod, sampling_request
from cnki_mcp.server.deps import services_of

# First revision whose tools/call carries server requests inside an input-required result.
INPUT_REQUIRED_VERSION = "2026-07-28"
# How long the search waits for the client's model (and a person approving the request).
SAMPLING_TIMEOUT_SECONDS = 60.0

FailureReason = Literal["refused", "timeout", "invalid"]
_REASON_TEXT: dict[FailureReason, str] = {
    "refused": "客户端拒绝或未能完成 sampling 请求",
    "timeout": f"客户端 {int(SAMPLING_TIMEOUT_SECONDS)} 秒内没有回应 sampling 请求",
    "invalid": "客户端模型的回答不是可用的概念规划",
}


@dataclass(frozen=True, slots=True)
class SamplingFailure:
    """The client declared sampling but gave no usable reply."""

    reason: FailureReason
    detail: str = ""


Sampled = CreateMessageResult | SamplingFailure | None


@dataclass(frozen=True, slots=True)
class AskedClient:
    """The reply to the sampling request the server sent itself, and the seconds the call waited
    for it (on the services' clock)."""

    reply: CreateMessageResult | SamplingFailure
    waited: float


Resolved = Sampled | AskedClient


def unpack(resolved: Resolved) -> tuple[Sampled, float]:
    """The client's reply (or None) and the seconds this call has already waited for it."""
    if isinstance(resolved, AskedClient):
        return resolved.reply, resolved.waited
    return resolved, 0.0


async def sampling_resolver(
    query: str, ctx: Context[Any, Any], concept_groups: list[list[str]] | None = None
) -> Sample | CreateMessageResult | AskedClient | None:
    """Ask the client's model to plan concepts, when it declared sampling and no groups were given."""
    if concept_groups:
        return None
    caps = ctx.client_capabilities
    if caps is None or caps.sampling is None:
        return None
    system, user_text, max_tokens = sampling_request(query)
    sample = Sample(
        [SamplingMessage(role="user", content=TextContent(type="text", text=user_text))],
        max_tokens=max_tokens,
        system_prompt=system,
    )
    version = ctx.protocol_version
    if version is not None and is_version_at_least(version, INPUT_REQUIRED_VERSION):
        return sample  # the SDK batches it into the input-required result
    if not ctx.session.can_send_request:
        return None
    clock = services_of(ctx).clock
    started = clock.monotonic()
    reply = await _ask(ctx, sample)
    return AskedClient(reply, max(0.0, clock.monotonic() - started))


async def _ask(ctx: Context[Any, Any], sample: Sample) -> CreateMessageResult | SamplingFailure:
    try:
        with anyio.fail_after(SAMPLING_TIMEOUT_SECONDS):
            return await ctx.session.send_request(
                CreateMessageRequest(params=sample.params),
                CreateMessageResult,
                metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
            )
    except TimeoutError:
        return SamplingFailure("timeout")
    except MCPError as exc:
        return SamplingFailure("refused", str(exc)[:200])
    except ValidationError:
        return SamplingFailure("invalid")


def sampled_text(sampled: Sampled) -> str | None:
    """The reply's text, when there is one."""
    if not isinstance(sampled, CreateMessageResult):
        return None
    text = getattr(sampled.content, "text", None)
    return text if isinstance(text, str) else None


def with_sampling_warning(plan: Plan, sampled: Sampled) -> Plan:
    """`plan`, with a warning when the client was asked to plan and the server planned instead."""
    if sampled is None or plan.method in (PlanMethod.SAMPLING, PlanMethod.EXPLICIT):
        return plan
    reason: FailureReason = sampled.reason if isinstance(sampled, SamplingFailure) else "invalid"
    return plan.model_copy(update={"warnings": [*plan.warnings, fallback_warning(reason)]})


def fallback_warning(reason: FailureReason) -> str:
    """The plan's warning when the server planned because the client's model did not."""
    return f"{_REASON_TEXT[reason]}，已改用服务器分词规划；可直接传 concept_groups 指定概念"
