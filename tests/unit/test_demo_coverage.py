"""The demo's coverage lines (`cnki_mcp.server.demo.coverage_line`)."""

from __future__ import annotations

from cnki_mcp.server.demo import coverage_line


def test_a_channel_answered_locally_says_it_was_not_sent_instead_of_not_exhausted() -> None:
    line = coverage_line(
        {
            "channel": "q2",
            "field": "title",
            "pages": 0,
            "rows": 0,
            "total": None,
            "exhausted": False,
            "stopped": "local",
        }
    )
    assert "未请求" in line and "未穷尽" not in line and "None" not in line


def test_a_paged_channel_shows_its_pages_rows_total_and_state() -> None:
    line = coverage_line(
        {"channel": "q1", "reason": "完整概念组合", "pages": 1, "rows": 12, "total": 12, "exhausted": True}
    )
    assert "页 1 · 行 12 · 总数 12 · 已穷尽" in line
    unknown = coverage_line(
        {"channel": "q3", "field": "keywords", "pages": 0, "rows": 0, "total": None, "failed": True}
    )
    assert "总数 — · 失败" in unknown and "None" not in unknown
