"""Paper arguments given in a form another tool showed but this argument does not take
(DESIGN.md "Tool input"): the detail `url` every tool returns, put where a record_ref or a title
goes.

A record_ref argument holds `rec_…` (at most 64 characters: a real kcms2 link is longer, so the
schema refused it as too long, naming neither the argument that takes a paper by link nor the
paper). A title argument sent a link to CNKI as a title search: a request spent on a paper no
title search can find. The call is refused before validation with INVALID_ARGUMENT naming the
argument and, when the link is a stored paper's, `next_step` the same call with its record_ref."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from cnki_mcp.errors import InvalidInput
from cnki_mcp.identity import detail_filename, detail_token

REF_ARGUMENTS = ("record_ref", "record_refs")
# the argument of each tool that takes a paper's title, where a link's paper can be named instead
TITLE_ARGUMENT = {
    "get_metadata": "titles",
    "export_citations": "titles",
    "read_online_html": "title",
    "download_paper": "title",
}


def _links(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [v for v in items if isinstance(v, str) and v.strip().lower().startswith(("http://", "https://"))]


def check_linked_refs(name: str, arguments: Mapping[str, Any], store: Any) -> None:
    """INVALID_ARGUMENT for a link or a stored paper's file name given as a record_ref, or a
    paper's handle given as a title (`store` None: no lookup)."""
    for field in REF_ARGUMENTS:
        if field not in arguments:
            continue
        links = _links(arguments[field])
        handles, found = _handles(arguments[field], store, refs=False)
        if not handles:
            continue
        title = TITLE_ARGUMENT.get(name)
        instead = f"只有题名时用 {title} 传完整题名" if title else "先用 get_metadata 的 titles 按完整题名取得 record_ref"
        details: dict[str, Any] = {"field": field, "links": len(links), "handles": len(handles)}
        if len(found) == len(set(handles)):  # a link given twice is found once
            value = arguments[field]
            sent = [found.get(v, v) for v in value] if isinstance(value, list) else found[value]
            given = ", ".join(f"{k}={(sent if k == field else v)!r}" for k, v in arguments.items())
            details["next_step"] = f"{name}({given})"  # the same call, the links and file names replaced
            details["record_refs"] = list(dict.fromkeys(found.values()))
            said = "它们是本地保存的文献：改传它们的 record_ref（见 details.next_step）"
        else:
            said = f"有链接不是本地保存过的文献的链接（链接会过期）：{instead}"
        raise InvalidInput(f"{field} 只收 rec_… 编号，不收文献链接或文件名；{said}", **details)
    check_linked_titles(name, arguments, store)


def _stored_refs(links: list[str], store: Any) -> dict[str, str]:
    """link -> record_ref of the links that name one stored paper each."""
    found: dict[str, str] = {}
    for link in links:
        papers = store.find_by_detail_token(detail_token(link)) if store is not None else []
        if not papers and store is not None and detail_filename(link):  # a KCMS link: by its file name
            papers = [p for p in [store.find_by_filename(detail_filename(link))] if p is not None]
        if len({p.record_ref for p in papers}) == 1:
            found[link] = papers[0].record_ref
    return found


# A record_ref (no title has this shape) and a CNKI file name (letters then digits, as citation
# lists and graph nodes give it: FXYJ202101001; taken as one only when a stored paper has it).
REF_SHAPE = re.compile(r"rec_[0-9a-f]{24}")
FILENAME_SHAPE = re.compile(r"[A-Za-z]{2,8}[0-9]{4,}[A-Za-z0-9.]*")


def _handles(value: Any, store: Any, *, refs: bool = True) -> tuple[list[str], dict[str, str]]:
    """What of a title argument (`refs`) or a record_ref argument is a paper's handle of another
    kind (links, record_refs where a title goes, stored file names), and the record_ref of each
    that names one stored paper."""
    items = [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)]
    links = _links(items)
    found = _stored_refs(links, store)
    handles = list(links)
    for item in items:
        text = item.strip()
        if REF_SHAPE.fullmatch(text):
            if not refs:
                continue
            handles.append(item)
            paper = store.get(text) if store is not None else None
        elif FILENAME_SHAPE.fullmatch(text) and store is not None:
            paper = store.find_by_filename(text)
            if paper is not None:
                handles.append(item)
        else:
            continue
        if paper is not None:
            found[item] = paper.record_ref
    return handles, found


def check_linked_titles(name: str, arguments: Mapping[str, Any], store: Any) -> None:
    """INVALID_ARGUMENT for a link, a record_ref or a stored paper's file name given as a title:
    `next_step` moves the stored papers' handles to their record_refs (the tool's `record_refs`,
    or `record_ref` in place of `title`)."""
    field = TITLE_ARGUMENT.get(name)
    if field is None or field not in arguments:
        return
    handles, found = _handles(arguments[field], store)
    if not handles:
        return
    details: dict[str, Any] = {"field": field, "handles": len(handles)}
    if len(found) == len(set(handles)):
        value = arguments[field]
        step = dict(arguments)
        if isinstance(value, list):  # get_metadata / export_citations: titles -> record_refs
            titles = [v for v in value if v not in found]
            refs = [*(step.get("record_refs") or []), *dict.fromkeys(found[v] for v in value if v in found)]
            step.pop(field)
            step["record_refs"] = refs
            if titles:
                step[field] = titles
        else:  # read_online_html / download_paper: title -> record_ref
            step.pop(field)
            step["record_ref"] = found[value]
        details["next_step"] = f"{name}({', '.join(f'{k}={v!r}' for k, v in step.items())})"
        details["record_refs"] = list(dict.fromkeys(found.values()))
        said = "它们是本地保存的文献：改传它们的 record_ref（见 details.next_step）"
    else:
        said = "有的不是本地保存过的文献（链接会过期，本地只认工具给出过的链接与编号）：改传完整题名"
    raise InvalidInput(
        f"{field} 收完整题名，不收链接、record_ref 或文件名（按篇名检索找不到它们，还要花请求）；{said}", **details
    )
