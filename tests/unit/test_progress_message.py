"""The progress notification's text (server/progress.py) and the stage a client reads back from it
(the demo names its stage from each notification)."""

from __future__ import annotations

from cnki_mcp.server.progress import progress_message, stage_of


def test_the_stage_is_read_back_from_a_notification_with_or_without_a_message() -> None:
    assert (
        progress_message("running", "enrichment", "读取摘要与期刊") == "running · enrichment · 读取摘要与期刊"
    )
    assert stage_of(progress_message("running", "enrichment", "读取摘要与期刊")) == "enrichment"
    assert stage_of(progress_message("running", "retrieval")) == "retrieval"


def test_a_human_wait_notice_names_no_stage() -> None:
    assert stage_of("等待人工操作：请在浏览器中完成验证") is None
    assert stage_of(None) is None
