"""Reference shapes Chinese and English journals print that the common styles do not cover: the
author-date free style of 经济研究 / 管理世界, and the field order of GB/T 7714's parts of
proceedings and books (docs/DESIGN.md §References)."""

from __future__ import annotations

import pytest

from cnki_mcp.cite.refparse import parse_reference


@pytest.mark.parametrize(
    ("raw", "authors", "year"),
    [
        ("贾楠、夏思萍、白嘉嘉，2014：《约定违约金酌减规则的法律规制研究》，《现代法学》第6期。", ["贾楠", "夏思萍", "白嘉嘉"], 2014),
        ("余伟芳，2025a：《数字技术对企业创新的影响》，《经济研究》第7期，第81—90页。", ["余伟芳"], 2025),
        ("贾楠（2014）：《约定违约金酌减规则的法律规制研究》，《现代法学》第6期。", ["贾楠"], 2014),
    ],
)
def test_an_author_date_free_entry_reads_the_year_after_the_authors_as_its_year(
    raw: str, authors: list[str], year: int
) -> None:
    # the year was read as a fourth author (an authors mismatch on a correct entry) and the year as missing
    got = parse_reference(raw)
    assert (got.style, got.authors, got.year) == ("free", authors, year)
