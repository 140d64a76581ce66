"""SEARCH_NOT_FOUND for a search whose results are not saved yet, or an operation id of another
kind given as a search_id (said so, with the operation_status call that reads it): the tools that read a stored
search (search_results, export_search_log, search_library, watch_search, export_citations and
get_metadata with a search_id) say that it is still running or
unfinished, and the call that finishes it, instead of "no such search"."""

from __future__ import annotations

from typing import Any

from cnki_mcp.errors import CnkiError, SearchNotFound
from cnki_mcp.jobs import OperationKind, OperationStatus


def unfinished_search(jobs: Any, search_id: str) -> SearchNotFound | None:
    """A search whose results are not saved yet because its operation has not ended (a search's
    id is its operation's): SEARCH_NOT_FOUND that says so and how to finish it; an operation of
    another kind: SEARCH_NOT_FOUND naming its kind and operation_status. None otherwise."""
    try:
        record = jobs.status(search_id)
    except CnkiError:
        return None
    if record is None:
        return None
    if record.kind is not OperationKind.SEARCH:
        # an operation id of another kind (a metadata read, a citation list ...): no search was
        # forgotten, so not "only the last 300 are kept"; the record is read by operation_status
        step = f"operation_status(operation_id='{search_id}')"
        return SearchNotFound(
            f"这是 {record.kind.value} 任务的编号，不是检索编号（search_id 来自 search 或 structured_search）："
            f"它的结果用 {step} 读取",
            search_id=search_id, operation_kind=record.kind.value, next_step=step,
        )  # fmt: skip
    status = record.status.value
    if record.status.active:
        step = f"operation_status(operation_id='{search_id}', wait_seconds=50)"
        message = "这个检索还在运行，结果在完成时保存"
    elif record.checkpoint is not None and record.status is not OperationStatus.COMPLETED:
        step = f"operation_control(action='continue', operation_id='{search_id}')"
        message = f"这个检索没有完成（{status}），结果尚未保存"
    else:
        return None
    return SearchNotFound(f"{message}：用 {step}", search_id=search_id, operation_status=status, next_step=step)


def or_unfinished(jobs: Any, search_id: str | None, exc: SearchNotFound) -> SearchNotFound:
    """`exc`, or the unfinished-search error when `search_id` names a search still under way."""
    return (unfinished_search(jobs, search_id) if search_id else None) or exc
