"""What README.md, docs/*.md, the server guide and the skill state about settings, error codes
and read-only mode agrees with the code: every `CNKI_*` variable the README's settings table
names is one `load_settings` reads (and every one it reads is in the table, with the default
it has), every error code the user-facing docs name exists in `cnki_mcp.errors`, and every
place that lists what read-only mode refuses names all of `server/readonly.py`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import cnki_mcp.settings
from cnki_mcp.errors import all_error_classes
from cnki_mcp.jobs import CONTINUABLE, OperationKind
from cnki_mcp.server.guide import GUIDE
from cnki_mcp.server.readonly import HIDDEN_TOOLS, REFUSED_ARGUMENTS
from cnki_mcp.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SKILL = (ROOT / "skills" / "cnki-deep-research" / "SKILL.md").read_text(encoding="utf-8")
TROUBLESHOOTING = (ROOT / "skills" / "cnki-deep-research" / "references" / "troubleshooting.md").read_text(
    encoding="utf-8"
)
USER_DOCS = ["README.md", "docs/clients.md"]
# Backticked upper-case names in those that are not error codes: a placeholder, client variables.
NOT_CODES = {"WATCH_ID", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "DSH_HOME", "KIMI_CODE_HOME", "XDG_CONFIG_HOME"}
CODE_RE = re.compile(r"`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`")
ERROR_CODES = {cls.code for cls in all_error_classes()}
ENV_RE = re.compile(r"CNKI_[A-Z_]+")
SETTINGS_SOURCE = Path(cnki_mcp.settings.__file__).read_text(encoding="utf-8")


def settings_table() -> dict[str, str]:
    """README's 配置 table: variable -> its 默认 cell (a row may name two variables)."""
    section = README.split("## 配置（环境变量）", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`CNKI_"):
            for name in ENV_RE.findall(cells[0]):
                rows[name] = cells[1]
    return rows


def read_only_passages() -> dict[str, str]:
    """Each place a reader learns what read-only mode refuses."""
    table_row = next(line for line in README.splitlines() if line.startswith("| `CNKI_READ_ONLY`"))
    english = README.split("`CNKI_READ_ONLY=1` (or `serve --read-only`)", 1)[1].split("`diagnostics`", 1)[0]
    guide = next(line for line in GUIDE.splitlines() if "只读模式" in line)
    skill = SKILL.split("- 只读模式", 1)[1].split("\n- ", 1)[0]
    trouble = next(line for line in TROUBLESHOOTING.splitlines() if line.startswith("| `READ_ONLY_MODE`"))
    return {"README 配置": table_row, "README English": english, "guide": guide, "SKILL": skill,
            "troubleshooting": trouble}  # fmt: skip


def missing_refusals(text: str, *, tools: bool = True) -> list[str]:
    """What of readonly.py a passage does not name: hidden tools and `tool.argument` refusals."""
    missing = [t for t in sorted(HIDDEN_TOOLS) if tools and t not in text]
    for tool, args in REFUSED_ARGUMENTS.items():
        missing += [f"{tool}.{arg}" for arg in args if tool not in text or arg not in text]
    return missing


def test_missing_refusals_notices_a_passage_that_leaves_one_out() -> None:
    assert missing_refusals("download_paper read_online_html export_citations 不接受 filename") == [
        "citation_graph.filename"
    ]
    assert missing_refusals("export_citations citation_graph filename", tools=False) == []


def tools_told_to_page(text: str) -> set[str]:
    """The tool each `offset` in a passage follows (the nearest tool name before it)."""
    names = "|".join(sorted({*HIDDEN_TOOLS, *REFUSED_ARGUMENTS}))
    told = set()
    for m in re.finditer(r"offset", text):
        before = re.findall(rf"(?<![a-z_])(?:{names})(?![a-z_])", text[: m.start()])
        told.add(before[-1] if before else "")
    return told


def test_tools_told_to_page_names_the_tool_an_offset_follows() -> None:
    assert tools_told_to_page("export_citations 用 offset，citation_graph 只有计数") == {"export_citations"}
    assert tools_told_to_page("export_citations 与 citation_graph（超过 64 KB 用 offset/limit）") == {
        "citation_graph"
    }


@pytest.mark.parametrize("where", sorted(read_only_passages()))
def test_read_only_passages_advise_offset_paging_only_for_export_citations(where: str) -> None:
    """citation_graph has no offset/limit (an inline graph over 64 KB is counts only): a passage
    saying both tools page over 64 KB sent an agent to INVALID_ARGUMENT."""
    assert tools_told_to_page(read_only_passages()[where]) <= {"export_citations"}


@pytest.mark.parametrize("where", sorted(read_only_passages()))
def test_every_passage_on_read_only_mode_names_everything_it_refuses(where: str) -> None:
    # the troubleshooting row is about the refused call itself; it names the arguments to drop
    text = read_only_passages()[where]
    assert missing_refusals(text, tools=where != "troubleshooting") == [], where


def test_the_settings_table_names_exactly_the_variables_settings_reads() -> None:
    read = set(ENV_RE.findall(SETTINGS_SOURCE))
    assert set(settings_table()) == read


def test_the_variables_doctor_knows_are_the_ones_the_settings_table_names() -> None:
    from cnki_mcp.settings import VARIABLES, unknown_variables

    assert set(VARIABLES) == set(settings_table())
    assert unknown_variables({"CNKI_WORKERS": "2", "CNKI_WORKER": "2", "CNKI_PROXY": "x", "HOME": "/"}) == {
        "CNKI_PROXY": None,
        "CNKI_WORKER": "CNKI_WORKERS",
    }


def test_the_settings_table_states_the_defaults_settings_has(tmp_path: Path) -> None:
    table = settings_table()
    s = load_settings({"CNKI_DATA_DIR": str(tmp_path)})
    numeric = {
        "CNKI_REQUEST_INTERVAL_MS": s.request_interval_ms,
        "CNKI_MAX_INFLIGHT": s.max_inflight,
        "CNKI_WORKERS": s.workers,
        "CNKI_INLINE_WAIT_SECONDS": s.inline_wait_seconds,
        "CNKI_HUMAN_TIMEOUT_SECONDS": s.human_timeout_seconds,
    }
    for name, value in numeric.items():
        assert float(table[name].strip("`")) == value, name
    assert table["CNKI_LOG_LEVEL"].strip("`") == s.log_level
    assert table["CNKI_READ_ONLY"].strip("`") == "0" and s.read_only is False


@pytest.mark.parametrize("doc", USER_DOCS)
def test_every_error_code_a_document_names_exists(doc: str) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    named = {c for c in CODE_RE.findall(text) if not c.startswith("CNKI_")} - NOT_CODES
    assert sorted(named - ERROR_CODES) == [], doc



def test_a_code_only_ever_given_as_a_warning_is_documented_as_one() -> None:
    # CONTENT_PARTIAL sat in the troubleshooting table as an error ("正文未完整加载") though no tool
    # raises it: read_online_html returns the part it read with the code in `warnings`
    from cnki_mcp import reading_service
    from cnki_mcp.errors import WARNING_CODES

    assert reading_service.CONTENT_PARTIAL in WARNING_CODES
    for code in WARNING_CODES:
        row = next(line for line in TROUBLESHOOTING.splitlines() if line.startswith(f"| `{code}`"))
        assert "`warnings`" in row and "不是错误" in row, code


def test_the_field_names_each_tool_gives_a_paper_are_mapped_in_the_docs() -> None:
    # the same CNKI type label is `doc_type` in some results and `document_type` in others, the
    # date `date` or `publication_date`: not renamed (clients read them), so the docs say which
    from typing import get_args

    from cnki_mcp.cite.refmatch import RecordView
    from cnki_mcp.parse.citations import CitationItem
    from cnki_mcp.pipeline.graph_model import GraphNode
    from cnki_mcp.pipeline.library import LibraryResult
    from cnki_mcp.pipeline.models import MetadataField, ResultItem

    design = (ROOT / "docs" / "DESIGN.md").read_text(encoding="utf-8")
    passage = design.split("**One paper, two sets of field names**", 1)[1].split("\n- ", 1)[0]
    skill = (ROOT / "skills" / "cnki-deep-research" / "references" / "tools.md").read_text(encoding="utf-8")
    names = {"doc_type", "document_type", "date", "publication_date", "type"}
    models = {"ResultItem": ResultItem, "LibraryResult": LibraryResult, "RecordView": RecordView,
              "CitationItem": CitationItem, "GraphNode": GraphNode}  # fmt: skip
    for label, model in models.items():
        for field in names & set(model.model_fields):
            assert label in passage and f"`{field}`" in passage, (label, field)
    for field in names & set(get_args(MetadataField)):
        assert f"`{field}`" in passage and f"`{field}`" in skill, field


# The tools whose operations `operation_control continue` carries on (jobs.CONTINUABLE: a search
# or a citation walk with a checkpoint; get_references / get_citing keep none).
CONTINUED_BY = {OperationKind.SEARCH: "检索", OperationKind.CITATIONS: "`citation_graph`、`find_citation_path`"}


def test_every_readme_error_row_advising_continue_says_which_tools_it_continues() -> None:
    """`continue` is CONTINUE_UNAVAILABLE for a download, a read, get_metadata or a check: a row
    that advises it for a code any tool can meet names the tools it is for and what the others do."""
    assert set(CONTINUED_BY) == set(CONTINUABLE)
    section = README.split("## 故障排查（错误码）", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `") and "continue" in line]
    assert rows
    for line in rows:
        assert all(name in line for name in CONTINUED_BY.values()), line
        assert "重新调用" in line or "再调用" in line, line


def test_the_guide_does_not_advise_continue_for_every_budget_stop() -> None:
    line = next(line for line in GUIDE.splitlines() if "BUDGET_EXHAUSTED" in line)
    assert "citation_graph" in line and "get_references" in line and "再调用" in line, line


def test_setup_help_states_the_environment_defaults_setup_uses() -> None:
    """setup writes CNKI_DATA_DIR / CNKI_BROWSER_PATH from the environment when the flags are
    absent (cli/setup_cmd.py; docs/clients.md says so); its --help said the data directory was
    not written by default and the browser was looked for."""
    import argparse

    from cnki_mcp.cli import setup_cmd

    parser = argparse.ArgumentParser()
    setup_cmd.add_arguments(parser)
    helps = {a.dest: a.help or "" for a in parser._actions}
    assert "默认用环境变量 CNKI_DATA_DIR" in helps["data_dir"] and "默认不写" not in helps["data_dir"]
    assert "默认用环境变量 CNKI_BROWSER_PATH" in helps["browser"]
    clients_md = (ROOT / "docs" / "clients.md").read_text(encoding="utf-8")
    assert "(default: `CNKI_DATA_DIR` when set)" in clients_md and "(default: `CNKI_BROWSER_PATH`" in clients_md


def test_the_command_table_names_every_command() -> None:
    from cnki_mcp.cli.main import COMMANDS

    section = README.split("## 命令行", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`cnki-mcp ([a-z]+)", section))
    assert set(COMMANDS) | {"version"} <= listed, sorted(set(COMMANDS) - listed)


def test_the_privacy_section_states_how_long_the_store_keeps_things() -> None:
    from cnki_mcp.store.library import TEXTS_KEPT
    from cnki_mcp.store.operations import OPERATIONS_KEPT
    from cnki_mcp.store.searches import SEARCHES_KEPT
    from cnki_mcp.store.watches import CHECKS_KEPT

    section = README.split("## 数据与隐私", 1)[1].split("\n## ", 1)[0]
    for said in (f"最近 {SEARCHES_KEPT} 次检索", f"最近 {OPERATIONS_KEPT} 个", f"最近 {TEXTS_KEPT} 篇", f"最近 {CHECKS_KEPT} 次检查"):
        assert said in section, said
    english = README.split("**Data over time**", 1)[1].split("\n\n", 1)[0]
    for said in (f"newest {SEARCHES_KEPT} searches", f"newest {OPERATIONS_KEPT}", f"newest {TEXTS_KEPT:,} full texts", f"{CHECKS_KEPT} check reports"):
        assert said in english, said


def test_every_module_path_a_test_or_document_names_exists() -> None:
    """A docstring named the document-kind table `kinds.py`, a module that never existed (it is
    doc_kinds.py). Lines naming another project's files (a PyPI package's `cnki_mcp/browser.py`)
    are not ours."""
    named: set[str] = set()
    for path in [*(ROOT / "tests").rglob("*.py"), *(ROOT / "docs").glob("*.md"), ROOT / "README.md"]:
        for line in path.read_text(encoding="utf-8").splitlines():
            if "PyPI" not in line:
                named.update(re.findall(r"\bcnki_mcp/[\w/]+\.py\b", line))
    assert named
    assert sorted(p for p in named if not (ROOT / p).exists()) == []
