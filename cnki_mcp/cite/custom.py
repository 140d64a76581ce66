"""`custom` templates: a fixed set of `{placeholder}`s, nothing else.

No attribute access, indexing, format specs or conversions (`{a.b}`, `{a[0]}`,
`{a:>5}`, `{a!r}`): anything but a known name between braces is INVALID_TEMPLATE, as
is a lone `{` or `}`. Literal braces are written `{{` and `}}`. Values are inserted as
text; braces inside values are never interpreted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import InvalidTemplate
from .gbt7714 import type_code
from .missing import PLACEHOLDERS, MissingMode
from .model import CiteRecord

MAX_TEMPLATE_CHARS = 5000


def _year(r: CiteRecord) -> str:
    return str(r.effective_year) if r.effective_year is not None else ""


FIELDS: dict[str, Callable[[CiteRecord], str]] = {
    "title": lambda r: r.title,
    "authors": lambda r: ", ".join(r.authors),
    "first_author": lambda r: r.authors[0] if r.authors else "",
    "year": _year,
    "date": lambda r: r.date or _year(r),
    "source": lambda r: r.source or "",
    "journal": lambda r: r.source or "",
    "volume": lambda r: r.volume or "",
    "issue": lambda r: r.issue or "",
    "pages": lambda r: r.pages or "",
    "doi": lambda r: r.doi or "",
    "url": lambda r: r.url or "",
    "publisher": lambda r: r.publisher or "",
    "place": lambda r: r.place or "",
    "keywords": lambda r: "; ".join(r.keywords),
    "abstract": lambda r: r.abstract or "",
    "type": lambda r: r.doc_type or "",
    "type_code": type_code,
    "record_ref": lambda r: r.record_ref,
}
PLACEHOLDER_NAMES: tuple[str, ...] = tuple(FIELDS)

_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|\{|\}")


@dataclass(frozen=True, slots=True)
class Template:
    parts: tuple[str | tuple[str], ...]  # literal text, or (placeholder name,)


def compile_template(template: str | None) -> Template:
    if not template:
        raise InvalidTemplate("format=custom 需要 template")
    if len(template) > MAX_TEMPLATE_CHARS:
        raise InvalidTemplate(f"模板超过 {MAX_TEMPLATE_CHARS} 个字符", length=len(template))
    if "\x00" in template or "\x01" in template:
        raise InvalidTemplate("模板含有控制字符")
    parts: list[str | tuple[str]] = []
    pos = 0
    for m in _TOKEN.finditer(template):
        if m.start() > pos:
            parts.append(template[pos:m.start()])
        token = m.group()
        if token in ("{{", "}}"):
            parts.append(token[0])
        elif m.group(1) is not None and m.group(1) in FIELDS:
            parts.append((m.group(1),))
        else:
            raise InvalidTemplate(f"模板中的 {token} 不是可用的占位符", placeholder=token,
                                  allowed=list(PLACEHOLDER_NAMES))
        pos = m.end()
    if pos < len(template):
        parts.append(template[pos:])
    return Template(tuple(parts))


def render_one(tpl: Template, rec: CiteRecord, missing: MissingMode = "mark") -> str:
    out: list[str] = []
    for part in tpl.parts:
        if isinstance(part, str):
            out.append(part)
            continue
        name = part[0]
        value = FIELDS[name](rec)
        if not value and missing == "mark" and name in ("authors", "first_author"):
            value = PLACEHOLDERS["authors"]
        out.append(value)
    return "".join(out)


def render(tpl: Template, records: list[CiteRecord], missing: MissingMode = "mark") -> str:
    return "\n\n".join(render_one(tpl, r, missing) for r in records)
