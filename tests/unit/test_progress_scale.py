"""Progress notifications over an operation's stages (`server.progress.ProgressScale`): the value
always increases (MCP) and never passes the total, though each stage counts from 0 again."""

from __future__ import annotations

from itertools import pairwise

from cnki_mcp.server.progress import ProgressScale


def test_stages_counting_again_from_zero_stay_increasing_and_within_their_totals() -> None:
    scale = ProgressScale()
    events = [
        ("retrieval", 0, 150), ("retrieval", 60, 150), ("retrieval", 148, 150),
        ("enrichment", 0, 5), ("enrichment", 2, 5), ("enrichment", 2, 5),  # a heartbeat repeats
        ("enrichment", 5, 5), ("feedback", 0, None), ("feedback_enrichment", 1, 3),
    ]  # fmt: skip
    sent = [scale.map(stage, done, total) for stage, done, total in events]
    values = [v for v, _ in sent]
    assert all(a < b for a, b in pairwise(values)), values
    assert all(top is None or value <= top for value, top in sent), sent
    # a stage's own share shows: two of enrichment's five papers leave three to go
    value, top = sent[4]
    assert top is not None and top - value == 3


def test_a_count_that_falls_within_one_stage_starts_a_new_segment() -> None:
    scale = ProgressScale()
    first = scale.map("enrichment", 60, 60)
    again = scale.map("enrichment", 1, 40)  # the feedback papers, counted under the same stage
    assert again[0] > first[0] and again[1] is not None and again[0] <= again[1]


def test_values_keep_three_decimals_however_many_repeats_add_up() -> None:
    # 0.001 steps summed as floats reached the client as 16.002000000000002 / 36.001999999999995
    scale = ProgressScale()
    sent = [scale.map("retrieval", 16, 20)] + [scale.map("retrieval", 16, 20) for _ in range(50)]
    sent += [scale.map("enrichment", 3, 7) for _ in range(20)]
    for value, top in sent:
        assert value == round(value, 3) and (top is None or top == round(top, 3)), (value, top)
    assert [v for v, _ in sent[:3]] == [16, 16.001, 16.002]
