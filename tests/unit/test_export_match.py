"""Which record of a batch export belongs to a paper (pipeline/enrich.py `_export_match`): the
same title, and the same first author when several records share the title."""

from __future__ import annotations

from cnki_mcp.identity import Author, Paper
from cnki_mcp.models import ExportRecord
from cnki_mcp.pipeline.enrich import _export_match


def paper(title: str, author: str) -> Paper:
    return Paper(record_ref="rec_x", title=title, authors=[Author(name=author)])


def record(title: str, author: str, abstract: str) -> ExportRecord:
    return ExportRecord(title=title, authors=[author], abstract=abstract)


def test_a_paper_takes_the_record_of_its_title_whatever_the_case_and_spacing() -> None:
    records = [record("数据确权研究", "甲", "a"), record("Fairclough 三维分析模型下的话语分析", "乙", "b")]
    match = _export_match(paper("fairclough  三维分析模型下的话语分析", "乙"), records)
    assert match is not None and match.abstract == "b"


def test_records_sharing_a_title_are_told_apart_by_the_first_author() -> None:
    records = [record("同名论文", "张三", "a"), record("同名论文", "李四", "b")]
    match = _export_match(paper("同名论文", "李四"), records)
    assert match is not None and match.abstract == "b"
    assert _export_match(paper("同名论文", "王五"), records) is None  # the detail page decides


def test_a_paper_the_export_left_out_has_no_record() -> None:
    assert _export_match(paper("不在导出中的论文", "甲"), [record("数据确权研究", "甲", "a")]) is None
