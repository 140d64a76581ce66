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
                raise ConfigInvalid("现有配置里有未结束的 /* 注释，未改动")
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
                raise ConfigInvalid(f"现有配置在第 {text.count(chr(10), 0, i) + 1} 行有未结束的字符串，未改动")
            out.append(_Token("s", i, m.end()))
            i = m.end()
            continue
        m = _LITERAL.match(text, i)
        if not m:
            raise ConfigInvalid(f"现有配置在第 {text.count(chr(10), 0, i) + 1} 行不是合法的 JSONC，未改动")
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
            raise ConfigInvalid("现有配置提前结束（缺少括号），未改动")
        return self.toks[self.i]

    def _take(self, kind: str) -> _Token:
        tok = self._peek()
        if tok.kind != kind:
            line = self.text.count("\n", 0, tok.start) + 1
            raise ConfigInvalid(f"现有配置在第 {line} 行不是合法的 JSONC（应为 {kind!r}），未改动", line=line)
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
        line = self.text.count("\n", 0, tok.start) + 1
        raise ConfigInvalid(f"现有配置在第 {line} 行不是合法的 JSONC（缺少值），未改动", line=line)

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
            raise ConfigInvalid("现有配置在顶层对象之后还有内容，未改动")
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
        found = next((m for m in node.members if m[0] == key), None)
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
        if found[2].kind != "object":
            raise ConfigInvalid(f"现有配置里 {'.'.join(walked)} 不是对象，未改动", key=".".join(walked))
        node = found[2]
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
