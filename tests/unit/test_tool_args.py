"""`tool_args.trim_ids`: the space around ids taken off, for every tool in one place."""

from __future__ import annotations

from cnki_mcp.tool_args import trim_ids


def test_trim_ids_takes_the_space_off_ids_and_list_items_only() -> None:
    given = {"search_id": " op_1\n", "record_refs": [" rec_a", "rec_b ", 3], "seeds": ["\u3000F1 "],
             "query": " 违约金 ", "limit": 5}  # fmt: skip
    assert trim_ids(given) == {"search_id": "op_1", "record_refs": ["rec_a", "rec_b", 3], "seeds": ["F1"],
                               "query": " 违约金 ", "limit": 5}  # fmt: skip
