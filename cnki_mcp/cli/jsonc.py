"""Comment-preserving edits of JSONC files (JSON with `//` and `/* */` comments and trailing
commas: Zed's settings.json, VS Code's mcp.json, opencode.jsonc).

`set_member(text, path, name, value)` sets `<path>.<name>` by splicing the text: only the value
of that one member (or the inserted member) changes; every comment, blank line and the layout of
the rest of the file stay as they were. Pure: text in, text out. A file this reader cannot read
-> CONFIG_INVALID, and nothing is written."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cnki_mcp.errors import ConfigInvalid

_WS = re.compile(r"[ \t\r\n\ufeff]+")
_LITERAL = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')


@dataclass(slots=True)
class _Token:
    kind: str  # one of { } [ ] : , s (string) l (literal)
    start: int
    end: int


_EXPECTED = {
    "{": "应为 {",
    ":": "键名后缺少冒号 :",
    "s": "应为用双引号括起的键名",
    "}": "成员之间缺少逗号，或缺少 }",
    "]": "元素之间缺少逗号，或缺少 ]",
}


def _where(text: str, pos: int) -> tuple[int, int]:
    """1-based line and column of `pos`."""
    line_start = text.rfind("\n", 0, pos) + 1
    return text.count("\n", 0, pos) + 1, pos - line_start + 1


def _invalid(text: str, pos: int, what: str) -> ConfigInvalid:
    """CONFIG_INVALID naming the line, the column and what is wrong there."""
    line, column = _where(text, pos)
    return ConfigInvalid(f"现有配置不是合法的 JSONC（第 {line} 行第 {column} 列：{what}），未改动", line=line, column=column)


def _unexpected(text: str, pos: int) -> str:
    word = re.match(r"[A-Za-z_$][\w$]*", text[pos:])
    if text[pos] == "'":
        return "字符串和键名必须用双引号"
    if word:
        return f"无法识别的 {word.group(0)!r}（键名须加双引号；值只能是字符串、数字、true、false、null）"
    return f"无法识别的字符 {text[pos]!r}"


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        m = _WS.match(text, i)
        if m:
            i = m.end()
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise _invalid(text, i, "/* 注释没有结束")
            i = j + 2
            continue
        ch = text[i]
        if ch in "{}[]:,":
            out.append(_Token(ch, i, i + 1))
            i += 1
            continue
        if ch == '"':
            m = _STRING.match(text, i)
            if not m:
                raise _invalid(text, i, "字符串没有结束（缺少右引号，或含有换行）")
            try:
                json.loads(m.group(0))
            except json.JSONDecodeError as exc:  # a bad escape or a raw control character
                raise _invalid(text, i + exc.pos, f"字符串无效（{exc.msg}）") from exc
            out.append(_Token("s", i, m.end()))
            i = m.end()
            continue
        m = _LITERAL.match(text, i)
        if not m:
            raise _invalid(text, i, _unexpected(text, i))
        out.append(_Token("l", i, m.end()))
        i = m.end()
    return out


@dataclass(slots=True)
class _Node:
    kind: str  # "object" | "array" | "scalar"
    start: int
    end: int  # exclusive; for containers, just past the closing bracket
    members: list[tuple[str, int, _Node]] = field(default_factory=list)  # (key, key start, value)
    last_comma: int | None = None  # position of a trailing comma after the last member


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def _peek(self) -> _Token:
        if self.i >= len(self.toks):
            raise _invalid(self.text, len(self.text.rstrip()), "文件提前结束：缺少 } 或 ]")
        return self.toks[self.i]

    def _take(self, kind: str) -> _Token:
        tok = self._peek()
        if tok.kind != kind:
            raise _invalid(self.text, tok.start, _EXPECTED[kind])
        self.i += 1
        return tok

    def value(self) -> _Node:
        tok = self._peek()
        if tok.kind == "{":
            return self._object()
        if tok.kind == "[":
            return self._array()
        if tok.kind in ("s", "l"):
            self.i += 1
            return _Node("scalar", tok.start, tok.end)
        raise _invalid(self.text, tok.start, "缺少值")

    def _object(self) -> _Node:
        open_ = self._take("{")
        node = _Node("object", open_.start, open_.start)
        while self._peek().kind != "}":
            key_tok = self._take("s")
            self._take(":")
            child = self.value()
            node.members.append((json.loads(self.text[key_tok.start : key_tok.end]), key_tok.start, child))
            node.last_comma = None
            if self._peek().kind == ",":
                node.last_comma = self._take(",").start
            elif self._peek().kind != "}":
                self._take("}")
        node.end = self._take("}").end
        return node

    def _array(self) -> _Node:
        open_ = self._take("[")
        node = _Node("array", open_.start, open_.start)
        while self._peek().kind != "]":
            self.value()
            if self._peek().kind == ",":
                self._take(",")
            elif self._peek().kind != "]":
                self._take("]")
        node.end = self._take("]").end
        return node

    def document(self) -> _Node:
        root = self.value()
        if self.i != len(self.toks):
            raise _invalid(self.text, self.toks[self.i].start, "顶层对象之后还有内容")
        return root


def loads(text: str) -> Any:
    """The value of a JSONC text (comments and trailing commas removed)."""
    toks = _tokens(text)
    parts: list[str] = []
    for k, tok in enumerate(toks):
        if tok.kind == "," and k + 1 < len(toks) and toks[k + 1].kind in "}]":
            continue
        parts.append(text[tok.start : tok.end])
    try:
        return json.loads(" ".join(parts)) if parts else None
    except json.JSONDecodeError as exc:
        raise ConfigInvalid(f"现有配置不是合法的 JSONC（{exc.msg}），未改动") from exc


def _line_indent(text: str, pos: int) -> str:
    line_start = text.rfind("\n", 0, pos) + 1
    m = re.match(r"[ \t]*", text[line_start:pos])
    return m.group(0) if m else ""


def _render(value: Any, indent: str, unit: str) -> str:
    """`value` as JSON, nested lines indented from `indent`."""
    dumped = json.dumps(value, indent=unit, ensure_ascii=False)
    return dumped.replace("\n", "\n" + indent)


def _unit(text: str) -> str:
    m = re.search(r"\n([ \t]+)\S", text)
    if not m:
        return "  "
    return "\t" if m.group(1).startswith("\t") else " " * min(len(m.group(1)), 4)


def set_member(text: str, path: Sequence[str], name: str, value: Any) -> str:
    """`text` with `<path>.<name>` set to `value`; unchanged when it already holds that value.
    Missing objects on the path are created; a non-object on the path -> CONFIG_INVALID."""
    root = _Parser(text).document()
    if root.kind != "object":
        raise ConfigInvalid("现有配置的顶层不是 JSON 对象，未改动")
    unit = _unit(text)
    node = root
    nl = "\r\n" if "\r\n" in text else "\n"
    remaining = [*path, name]
    walked: list[str] = []
    while remaining:
        key = remaining[0]
        # JSON readers keep the last of duplicated keys: edit that one, not a shadowed copy
        found = next((m for m in reversed(node.members) if m[0] == key), None)
        if found is None:
            break
        walked.append(key)
        remaining.pop(0)
        if not remaining:
            _, key_start, child = found
            if loads(text[child.start : child.end]) == value:
                return text
            indent = _line_indent(text, key_start)
            return text[: child.start] + _render(value, indent, unit).replace("\n", nl) + text[child.end :]
        _, key_start, child = found
        if child.kind == "scalar" and text[child.start : child.end] == "null":  # `"servers": null`, as merge_json
            nested_value: Any = value
            for inner in reversed(remaining):
                nested_value = {inner: nested_value}
            indent = _line_indent(text, key_start)
            rendered = _render(nested_value, indent, unit).replace("\n", nl)
            return text[: child.start] + rendered + text[child.end :]
        if child.kind != "object":
            raise ConfigInvalid(f"现有配置里 {'.'.join(walked)} 不是对象，未改动", key=".".join(walked))
        node = child
    # Insert `remaining[0]` (wrapping the rest of the path) into `node`.
    nested: Any = value
    for key in reversed(remaining[1:]):
        nested = {key: nested}
    key = remaining[0]
    if node.members:
        _, first_key_start, _ = node.members[0]
        indent = _line_indent(text, first_key_start)
        member = f"{json.dumps(key, ensure_ascii=False)}: {_render(nested, indent, unit)}".replace("\n", nl)
        last = node.members[-1][2]
        if node.last_comma is not None:  # JSONC trailing comma: keep the style
            at = node.last_comma + 1
            return text[:at] + nl + indent + member + "," + text[at:]
        # Keep a comment that ends the last member's line with that member.
        eol = text.find("\n", last.end)
        eol = len(text) if eol < 0 else eol
        tail = text[last.end : eol].rstrip("\r")
        if re.fullmatch(r"[ \t]*(//.*)?", tail):
            end = last.end + len(tail)
            return text[: last.end] + "," + text[last.end : end] + nl + indent + member + text[end:]
        return text[: last.end] + "," + nl + indent + member + text[last.end :]
    outer = _line_indent(text, node.start)
    indent = outer + unit
    member = f"{json.dumps(key, ensure_ascii=False)}: {_render(nested, indent, unit)}".replace("\n", nl)
    close = node.end - 1
    return text[: node.start + 1] + nl + indent + member + nl + outer + text[close:]
