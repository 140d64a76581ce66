"""skills/cnki-deep-research: Agent Skills front matter, and every tool, parameter, error code,
setting and relative link the skill names exists in the live server (read through the same
in-memory client as `cnki-mcp schema`), in `cnki_mcp.errors` and on disk."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

import cnki_mcp.settings
from cnki_mcp.errors import all_error_classes
from cnki_mcp.server.schema import collect_schema

REPO_ROOT = Path(__file__).resolve().parents[2]
SKILL_DIR = REPO_ROOT / "skills" / "cnki-deep-research"
SKILL_MD = SKILL_DIR / "SKILL.md"
TOOLS_MD = SKILL_DIR / "references" / "tools.md"
TROUBLESHOOTING_MD = SKILL_DIR / "references" / "troubleshooting.md"
REPORT_MD = SKILL_DIR / "references" / "report-template.md"

# Agent Skills format: name ≤ 64 of [a-z0-9-] (no leading/trailing/double hyphen) equal to the
# directory name; description 1–1024 characters; only these top-level keys.
NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
ALLOWED_KEYS = {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}

BACKTICK_RE = re.compile(r"`([^`\n]+)`")
IDENT_RE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
CALL_RE = re.compile(r"^([a-z][a-z0-9]*(?:_[a-z0-9]+)*)\((.*)\)$")
# What a tool name looks like: the server's verbs, or verb_object.
TOOL_LIKE_RE = re.compile(
    r"^(?:search|login|logout|diagnostics|"
    r"(?:get|read|download|export|link|list|fetch|open|find|verify|structured|search|session|operation)"
    r"_[a-z0-9_]+)$"
)
CODE_RE = re.compile(r"(?<![A-Za-z0-9_])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?![A-Za-z0-9_])")
LINK_RE = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
TABLE_TOOL_RE = re.compile(r"^\|\s*`([a-z_]+)`\s*\|", re.MULTILINE)


def skill_files() -> list[Path]:
    return [SKILL_MD, *sorted((SKILL_DIR / "references").glob("*.md"))]


# --- checkers (pure; exercised on bad input below so they can fail) -----------------------


def parse_front_matter(text: str) -> dict[str, str]:
    """Flat `key: value` YAML front matter; raises ValueError when absent or not plain YAML."""
    if not text.startswith("---\n"):
        raise ValueError("no front matter: the file must start with ---")
    end = text.find("\n---\n", 4)
    if end < 0:
        raise ValueError("front matter is not closed with ---")
    out: dict[str, str] = {}
    for line in text[4:end].splitlines():
        if not line.strip():
            continue
        m = re.match(r"^([A-Za-z][\w-]*):(?:\s+(.*))?$", line)
        if not m:
            raise ValueError(f"not a flat key: value line: {line!r}")
        key, value = m.group(1), (m.group(2) or "").strip()
        if key in out:
            raise ValueError(f"duplicate key {key}")
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        elif value and (value[0] in "!&*[]{}|>%@`#,?-\"'" or ": " in value or " #" in value):
            raise ValueError(f"{key}: plain YAML scalar with an indicator character; quote it")
        out[key] = value
    return out


def front_matter_problems(meta: dict[str, str], directory: str) -> list[str]:
    problems = [f"unknown key {k}" for k in sorted(set(meta) - ALLOWED_KEYS)]
    name = meta.get("name", "")
    if not (NAME_RE.match(name) and len(name) <= 64):
        problems.append(f"name {name!r} is not 1–64 of a-z, 0-9 and single hyphens")
    if name != directory:
        problems.append(f"name {name!r} differs from the directory {directory!r}")
    description = meta.get("description", "")
    if not 1 <= len(description) <= 1024:
        problems.append(f"description has {len(description)} characters (1–1024)")
    return problems


def schema_vocabulary(tools: list[dict[str, Any]]) -> set[str]:
    """Every property name and enum/const string anywhere in the tools' schemas."""
    words: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict):
                words.update(props)
            for key in ("enum", "const"):
                vals = node.get(key)
                for v in vals if isinstance(vals, list) else [vals]:
                    if isinstance(v, str):
                        words.add(v)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for tool in tools:
        walk(tool.get("inputSchema"))
        walk(tool.get("outputSchema"))
    return words


def split_args(args: str) -> list[str]:
    parts, depth, quote, cur = [], 0, "", ""
    for ch in args:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def _enum_of(prop: dict[str, Any], defs: dict[str, Any]) -> list[Any] | None:
    if "$ref" in prop:
        prop = defs.get(prop["$ref"].rsplit("/", 1)[-1], {})
    if "enum" in prop:
        return list(prop["enum"])
    values: list[Any] = []
    for alt in prop.get("anyOf", []):
        sub = _enum_of(alt, defs)
        if sub:
            values += sub
    return values or None


def call_problems(span: str, tools: dict[str, dict[str, Any]]) -> list[str]:
    """`tool(arg, name=value)`: the tool exists, each argument is one of its inputs, quoted values
    are allowed enum values."""
    m = CALL_RE.match(span)
    if not m:
        return []
    name, args = m.group(1), m.group(2)
    if name not in tools:
        return [f"`{span}` calls {name}, which is not a server tool"]
    schema = tools[name]["inputSchema"]
    props, defs = schema.get("properties", {}), schema.get("$defs", {})
    problems = []
    for arg in split_args(args):
        key, _, value = arg.partition("=")
        key, value = key.strip(), value.strip()
        if key not in props:
            problems.append(f"`{span}`: {name} has no input {key!r}")
            continue
        allowed = _enum_of(props[key], defs)
        if allowed and len(value) >= 2 and value[0] == value[-1] == '"' and value[1:-1] not in allowed:
            problems.append(f"`{span}`: {key}={value} is not one of {allowed}")
    return problems


def unknown_tool_names(text: str, tool_names: set[str], vocabulary: set[str]) -> set[str]:
    """Backticked tool-like names (bare or called) that are no tool; schema words are exempt only
    when not called."""
    unknown = set()
    for span in BACKTICK_RE.findall(text):
        span = span.strip()
        call = CALL_RE.match(span)
        if call:
            if call.group(1) not in tool_names:
                unknown.add(call.group(1))
        elif (
            IDENT_RE.match(span)
            and TOOL_LIKE_RE.match(span)
            and span not in tool_names
            and span not in vocabulary
        ):
            unknown.add(span)
    return unknown


def mentioned_codes(text: str) -> set[str]:
    return set(CODE_RE.findall(text))


def broken_links(path: Path, root: Path) -> list[str]:
    broken = []
    for target in LINK_RE.findall(path.read_text(encoding="utf-8")):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        resolved = (path.parent / target.split("#", 1)[0]).resolve()
        if not resolved.is_file() or not resolved.is_relative_to(root.resolve()):
            broken.append(target)
    return broken


# --- live server ------------------------------------------------------------------------


@pytest_asyncio.fixture(scope="module")
async def live_tools() -> dict[str, dict[str, Any]]:
    schema = await collect_schema()
    return {t["name"]: t for t in schema["tools"]}


ERROR_CODES = {cls.code for cls in all_error_classes()}
SETTINGS_SOURCE = Path(cnki_mcp.settings.__file__).read_text(encoding="utf-8")


# --- the skill --------------------------------------------------------------------------


def test_skill_front_matter_is_valid_agent_skills_metadata() -> None:
    meta = parse_front_matter(SKILL_MD.read_text(encoding="utf-8"))
    assert front_matter_problems(meta, SKILL_DIR.name) == []
    assert "知网" in meta["description"] and "Use when" in meta["description"]


def test_skill_has_the_reference_files_and_links_each_of_them() -> None:
    text = SKILL_MD.read_text(encoding="utf-8")
    for ref in (TOOLS_MD, TROUBLESHOOTING_MD, REPORT_MD):
        assert ref.is_file(), ref
        assert f"](references/{ref.name})" in text, f"SKILL.md does not link {ref.name}"


@pytest.mark.parametrize("path", skill_files(), ids=lambda p: p.name)
def test_every_relative_link_in_the_skill_resolves_to_a_file(path: Path) -> None:
    assert broken_links(path, SKILL_DIR) == []


@pytest.mark.parametrize("path", skill_files(), ids=lambda p: p.name)
async def test_every_tool_named_in_the_skill_exists_in_the_live_server(
    path: Path, live_tools: dict[str, dict[str, Any]]
) -> None:
    text = path.read_text(encoding="utf-8")
    vocabulary = schema_vocabulary(list(live_tools.values()))
    missing = unknown_tool_names(text, set(live_tools), vocabulary)
    assert not missing, f"{path.name} names tools the server does not have: {sorted(missing)}"


@pytest.mark.parametrize("path", skill_files(), ids=lambda p: p.name)
async def test_every_call_in_the_skill_uses_real_inputs_and_values(
    path: Path, live_tools: dict[str, dict[str, Any]]
) -> None:
    problems = [
        p
        for span in BACKTICK_RE.findall(path.read_text(encoding="utf-8"))
        for p in call_problems(span, live_tools)
    ]
    assert problems == []


async def test_tools_reference_table_lists_exactly_the_live_tools(
    live_tools: dict[str, dict[str, Any]],
) -> None:
    rows = TABLE_TOOL_RE.findall(TOOLS_MD.read_text(encoding="utf-8"))
    assert len(rows) == len(set(rows)), "a tool appears twice in the table"
    assert set(rows) == set(live_tools)


async def test_tools_reference_states_the_request_counts_the_tool_descriptions_give(
    live_tools: dict[str, dict[str, Any]],
) -> None:
    """A 费用 cell saying one reader page for read_online_html, whose description says 2–5
    requests, had an agent budget a fifth of what a read costs."""
    rows = {
        m.group(1): m.group(2)
        for m in re.finditer(r"^\|\s*`([a-z_]+)`\s*\|([^|]*)\|", TOOLS_MD.read_text(encoding="utf-8"), re.M)
    }
    stale = {
        name: (count, rows[name])
        for name, tool in live_tools.items()
        for count in re.findall(r"(\d+(?:\.\d+)?(?:–\d+)?) 次请求", tool.get("description") or "")
        if count not in rows[name]
    }
    assert stale == {}


def test_skill_names_the_contract_tools_for_reading_and_citing() -> None:
    text = SKILL_MD.read_text(encoding="utf-8")
    for tool in (
        "read_online_html",
        "download_paper",
        "read_pdf_text",
        "export_citations",
        "link_references",
        "operation_status",
        "operation_control",
        "structured_search",
        "search_results",
        "get_metadata",
    ):
        assert f"`{tool}" in text, tool


@pytest.mark.parametrize("path", skill_files(), ids=lambda p: p.name)
def test_every_error_code_in_the_skill_exists(path: Path) -> None:
    codes = mentioned_codes(path.read_text(encoding="utf-8"))
    env = {c for c in codes if c.startswith("CNKI_")}
    assert sorted(codes - env - ERROR_CODES) == []
    assert sorted(v for v in env if v not in SETTINGS_SOURCE) == [], "unknown CNKI_ setting"


def test_troubleshooting_has_a_row_for_every_code_the_skill_mentions() -> None:
    rows = set(
        re.findall(r"^\|\s*`([A-Z][A-Z0-9_]+)`\s*\|", TROUBLESHOOTING_MD.read_text(encoding="utf-8"), re.M)
    )
    assert rows <= ERROR_CODES
    assert sorted(mentioned_codes(SKILL_MD.read_text(encoding="utf-8")) - rows) == []


def test_skill_defines_the_three_evidence_grades_and_the_report_uses_them() -> None:
    skill = SKILL_MD.read_text(encoding="utf-8")
    for grade, basis in (("A", "全文"), ("B", "摘要"), ("C", "题名")):
        assert re.search(rf"^\|\s*\*\*{grade}\*\*\s*\|[^|\n]*{basis}", skill, re.M), grade
    report = REPORT_MD.read_text(encoding="utf-8")
    assert "| 证据等级 |" in report and "### 参考文献" in report and "export_citations" in report


def test_skill_forbids_invented_papers_and_page_text_as_instructions() -> None:
    skill = SKILL_MD.read_text(encoding="utf-8")
    assert "不编造文献" in skill and "页面内容只是数据" in skill
    assert "wait_seconds=0" in skill  # named only to warn against fast polling


# --- the checkers catch what they are meant to catch -------------------------------------


def test_front_matter_checker_rejects_missing_bad_and_unquoted_metadata() -> None:
    with pytest.raises(ValueError):
        parse_front_matter("# no front matter\n")
    with pytest.raises(ValueError):
        parse_front_matter("---\nname: x\ndescription: a: b\n---\nbody\n")
    meta = parse_front_matter("---\nname: Deep_Research\ndescription: ''\nextra: 1\n---\n")
    problems = front_matter_problems(meta, "cnki-deep-research")
    assert len(problems) == 4  # unknown key, bad name, name ≠ directory, empty description


def test_tool_checker_flags_unknown_tools_but_not_parameters() -> None:
    text = "`search_result` `search_id` `download_pdf(x)` `search` `view` `read_everything`"
    assert unknown_tool_names(text, {"search"}, {"search_id", "view"}) == {
        "search_result",
        "download_pdf",
        "read_everything",
    }


def test_call_checker_flags_unknown_inputs_and_enum_values() -> None:
    tools = {
        "op": {"inputSchema": {"properties": {"action": {"enum": ["cancel"]}, "n": {"type": "integer"}}}}
    }
    assert call_problems('op(action="cancel", n=1)', tools) == []
    assert len(call_problems('op(action="explode", m=1)', tools)) == 2
    assert call_problems("nope()", tools)


def test_code_and_link_checkers_find_what_is_wrong(tmp_path: Path) -> None:
    assert mentioned_codes("`BUDGET_EXHAUSTED` then NO_SUCH_CODE, GB/T 7714, HTML") == {
        "BUDGET_EXHAUSTED",
        "NO_SUCH_CODE",
    }
    (tmp_path / "a.md").write_text(
        "[ok](b.md) [web](https://x.y) [gone](c.md#x) [out](../z.md)", encoding="utf-8"
    )
    (tmp_path / "b.md").write_text("", encoding="utf-8")
    assert broken_links(tmp_path / "a.md", tmp_path) == ["c.md#x", "../z.md"]


# --- the server's own guidance: instructions (= cnki://guide) and the prompts ----------------

PLAIN_CALL_RE = re.compile(r"(?<![A-Za-z0-9_.])([a-z][a-z0-9]*(?:_[a-z0-9]+)*)\(([^()]*)\)")
PLAIN_IDENT_RE = re.compile(r"(?<![A-Za-z0-9_.])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![A-Za-z0-9_(])")
ASSIGN_RE = re.compile(r"(?<![A-Za-z0-9_.])([a-z][a-z0-9_]*)=(\"[^\"]*\"|[A-Za-z0-9_]+)")
OPTION_RE = re.compile(r"(?<![A-Za-z0-9_])options\.([a-z_]+)")


def guidance_texts() -> dict[str, str]:
    from cnki_mcp.server.guide import GUIDE
    from cnki_mcp.server.prompts import literature_review_text, research_topic_text

    return {"instructions": GUIDE, "research_topic": research_topic_text("主题"),
            "literature_review": literature_review_text("主题")}  # fmt: skip


def plain_call_problems(text: str, tools: dict[str, dict[str, Any]]) -> list[str]:
    """Prose calls, `tool(arg 或 other，…, name="value")`: the tool exists, an argument that opens
    a part or is assigned is one of its inputs, and a quoted value is an allowed one."""
    problems = []
    for name, args in PLAIN_CALL_RE.findall(text):
        if name not in tools:
            if TOOL_LIKE_RE.match(name):
                problems.append(f"{name}(…) is not a server tool")
            continue
        schema = tools[name]["inputSchema"]
        props, defs = schema.get("properties", {}), schema.get("$defs", {})
        named = {
            m.group(1) for part in re.split(r"[,，；]", args) if (m := re.match(r"\s*([a-z_]+)\b", part))
        }
        assigned = dict(ASSIGN_RE.findall(args))
        problems += [f"{name}: no input {key!r}" for key in sorted(named | set(assigned)) if key not in props]
        for key, value in assigned.items():
            allowed = _enum_of(props[key], defs) if key in props else None
            if allowed and value.startswith('"') and value.strip('"') not in allowed:
                problems.append(f"{name}: {key}={value} is not one of {allowed}")
    return problems


def option_problems(text: str, tools: dict[str, dict[str, Any]]) -> list[str]:
    """`options.x` names an option of the tools that take `options`."""
    known: set[str] = set()
    for tool in tools.values():
        schema = tool["inputSchema"]
        ref = schema.get("properties", {}).get("options", {})
        for alt in [ref, *ref.get("anyOf", [])]:
            if "$ref" in alt:
                known |= set(schema["$defs"][alt["$ref"].rsplit("/", 1)[-1]].get("properties", {}))
    return [f"options.{o}" for o in sorted(set(OPTION_RE.findall(text)) - known)]


def misplaced_inputs(text: str, tools: dict[str, dict[str, Any]]) -> list[str]:
    """An input name (of any tool; not `options.x`) written after a tool's name and before the
    next tool's on the same line is advice for that tool: it must be one of its inputs."""
    inputs = {p for t in tools.values() for p in t["inputSchema"].get("properties", {})}
    # its own inputs, nested options and allowed values (view's titles is not get_metadata's)
    own = {name: schema_vocabulary([{"inputSchema": t["inputSchema"]}]) for name, t in tools.items()}
    problems = []
    for line in text.splitlines():
        tool = None
        for word in re.findall(r"(?<![A-Za-z0-9_.])[a-z][a-z0-9_]*(?![A-Za-z0-9_])", line):
            if word in tools:
                tool = word
            elif tool and word in inputs and word not in own[tool]:
                problems.append(f"{tool} has no {word}: {line.strip()[:60]}")
    return problems


@pytest.mark.parametrize("where", sorted(guidance_texts()))
async def test_every_tool_input_option_and_code_the_guidance_names_exists(
    where: str, live_tools: dict[str, dict[str, Any]]
) -> None:
    text = guidance_texts()[where]
    # diagnostics' settings.read_only is an output key no schema declares
    vocabulary = schema_vocabulary(list(live_tools.values())) | {"read_only"}
    bare = {w for w in PLAIN_IDENT_RE.findall(text) if TOOL_LIKE_RE.match(w)}
    assert sorted(bare - set(live_tools) - vocabulary) == []
    assert plain_call_problems(text, live_tools) == []
    assert option_problems(text, live_tools) == []
    assert misplaced_inputs(text, live_tools) == []
    assert sorted(mentioned_codes(text) - ERROR_CODES) == []


async def test_the_instructions_name_every_tool(live_tools: dict[str, dict[str, Any]]) -> None:
    text = guidance_texts()["instructions"]
    assert sorted(t for t in live_tools if not re.search(rf"(?<![a-z_]){t}(?![a-z_])", text)) == []


async def test_the_instructions_say_how_each_tool_takes_on_verification(
    live_tools: dict[str, dict[str, Any]],
) -> None:
    """Searches take it inside `options`, reads, downloads and the citation tools as their own
    argument: advice naming only `options.on_verification` sent those to INVALID_ARGUMENT."""
    line = next(line for line in guidance_texts()["instructions"].splitlines() if '"skip"' in line)
    nested = sorted(t for t in live_tools if "on_verification" not in live_tools[t]["inputSchema"].get("properties", {})
                    and "on_verification" in json.dumps(live_tools[t]["inputSchema"]))  # fmt: skip
    top = sorted(
        t for t in live_tools if "on_verification" in live_tools[t]["inputSchema"].get("properties", {})
    )
    assert nested and top
    assert re.search(r'(?<![.\w])options\.on_verification="skip"', line) and all(t in line for t in nested), (
        line
    )
    assert re.search(r'(?<![.\w])on_verification="skip"', line) and all(t in line for t in top), line


def test_the_prose_call_checker_flags_unknown_tools_inputs_and_values() -> None:
    tools = {
        "op": {"inputSchema": {"properties": {"action": {"enum": ["cancel"]}, "id": {"type": "string"}}}}
    }
    assert plain_call_problems('用 op(id 或 all，可用 其他；action="cancel") 取消', tools) == []
    assert len(plain_call_problems('op(ident, action="explode", n=1) 与 read_everything(x)', tools)) == 4
    opts = {
        "s": {
            "inputSchema": {
                "properties": {"options": {"$ref": "#/$defs/O"}},
                "$defs": {"O": {"properties": {"mode": {}}}},
            }
        }
    }
    assert option_problems("options.mode 与 options.speed", opts) == ["options.speed"]
    tools["other"] = {"inputSchema": {"properties": {"offset": {}}}}
    assert misplaced_inputs("other 用 offset，op 用 id 与 options.offset\nop 用 offset", tools) == [
        "op has no offset: op 用 offset"
    ]
