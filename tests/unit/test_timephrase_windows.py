"""Chinese publication windows written the ways researchers write them (DESIGN.md §Modules, `query/`)."""

from __future__ import annotations

import pytest

from cnki_mcp.query.timephrase import extract_years

NOW = 2026


@pytest.mark.parametrize(
    ("question", "year_from", "year_to", "topic"),
    [
        ("从2015年开始到2023年的数字金融研究", 2015, 2023, "的数字金融研究"),
        ("2015年开始到2023年的数字金融研究", 2015, 2023, "的数字金融研究"),
        ("截至2023年的乡村振兴研究", None, 2023, "的乡村振兴研究"),
        ("截止到2020年底的乡村振兴研究", None, 2020, "的乡村振兴研究"),
        ("到2023年为止的乡村振兴研究", None, 2023, "的乡村振兴研究"),
        ("至2023年止的乡村振兴研究", None, 2023, "的乡村振兴研究"),
        ("近两三年的碳中和研究", 2023, None, "的碳中和研究"),
        ("近三五年的碳中和研究", 2021, None, "的碳中和研究"),
        ("近一两年的碳中和研究", 2024, None, "的碳中和研究"),
        ("近十余年的碳中和研究", 2011, None, "的碳中和研究"),
        ("过去十多年的碳中和研究", 2011, None, "的碳中和研究"),
        ("近十来年的碳中和研究", 2011, None, "的碳中和研究"),
        ("近二十几年的碳中和研究", 2001, None, "的碳中和研究"),
        ("近四十多年的改革开放研究", 1981, None, "的改革开放研究"),
        ("近40余年的改革开放研究", 1981, None, "的改革开放研究"),
        ("从2015年至2020年为止的数字金融研究", 2015, 2020, "的数字金融研究"),
    ],
)
def test_a_written_out_window_becomes_the_years_and_leaves_the_topic(
    question: str, year_from: int | None, year_to: int | None, topic: str
) -> None:
    got = extract_years(question, NOW)
    assert (got.year_from, got.year_to) == (year_from, year_to)
    assert got.text.strip() == topic


@pytest.mark.parametrize(
    "question",
    ["到2020年全面建成小康社会的路径", "截至2030年的碳达峰目标", "近几年的碳中和研究", "近五三年的研究"],
)
def test_a_target_year_or_a_vague_span_sets_no_upper_bound(question: str) -> None:
    got = extract_years(question, NOW)
    assert got.year_to is None
    assert got.year_from is None


@pytest.mark.parametrize(
    ("question", "topic"),
    [
        ("2000-2020年底层民众收入研究", "底层民众收入研究"),
        ("2015-2020年止咳药物研究", "止咳药物研究"),
        ("2015-2020年末梢神经研究", "末梢神经研究"),
        ("截至2020年底层民众收入研究", "底层民众收入研究"),
    ],
)
def test_a_window_ending_in_a_year_leaves_the_next_word_whole(question: str, topic: str) -> None:
    # 底 / 末 / 止 after the year were taken as the phrase's end: 底层, 止咳, 末梢 lost a character
    assert extract_years(question, NOW).text.strip() == topic


@pytest.mark.parametrize(
    ("question", "year_from", "year_to", "topic"),
    [
        ("2023年发表的违约金酌减论文", 2023, 2023, "违约金酌减论文"),
        ("违约金酌减 2025年发表", 2025, 2025, "违约金酌减"),
        ("发表于2023年的违约金酌减研究", 2023, 2023, "违约金酌减研究"),
        ("刊登在2021年的违约金酌减论文", 2021, 2021, "违约金酌减论文"),
        # a range or since phrase before 发表 is read first, as it was
        ("2020—2022年发表的违约金酌减研究", 2020, 2022, "发表的违约金酌减研究"),
        ("2020年以来发表的违约金酌减研究", 2020, None, "发表的违约金酌减研究"),
        # a year to come is a target in the topic, as everywhere
        ("2030年发表的违约金酌减研究", None, None, "2030年发表的违约金酌减研究"),
    ],
)
def test_a_year_written_as_published_in_is_that_year(
    question: str, year_from: int | None, year_to: int | None, topic: str
) -> None:
    # before: 2023年发表 stayed a required concept (no paper's text holds it) and no window was set,
    # while English `published in 2023` was one year
    got = extract_years(question, NOW)
    assert (got.year_from, got.year_to) == (year_from, year_to)
    assert got.text.strip() == topic
