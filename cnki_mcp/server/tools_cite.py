"""export_citations and link_references.

export_citations renders stored papers (record_refs, a saved search's scope) locally; only
`titles` not known locally make it an operation (locate + detail pages through the pipeline's
metadata step, budget 300/900). A `filename` saves the text atomically under `<data>/exports/`
(one safe name component, never overwritten: FILE_EXISTS); text over 64 KiB is only saved, never
returned (OUTPUT_TOO_LARGE without a filename).

link_references is local unless `lookup_missing` is true (then an operation, budget 200/900)."""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
import weakref
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from cnki_mcp import datadir
from cnki_mcp.cite import EXTENSIONS, FORMATS, MissingMode, export, normalize_format
from cnki_mcp.cite.model import to_records
from cnki_mcp.cite.sources import cite_source
from cnki_mcp.cite.tagged import base_key, keys_of_bases
from cnki_mcp.errors import (
    CnkiError,
    DocumentNotFound,
    FileExists,
    InvalidInput,
    OutputTooLarge,
    SearchNotFound,
)
from cnki_mcp.files import check_file_name
from cnki_mcp.identity import asked_title
from cnki_mcp.jobs import OperationKind
from cnki_mcp.links import LinkInput, LinkResult, scan_references
from cnki_mcp.pipeline.links import link_references as run_link_references
from cnki_mcp.pipeline.links import local_matches
from cnki_mcp.pipeline.metadata import refs_in_scope, reranked_note, scope_next_offset
from cnki_mcp.pipeline.models import MAX_OFFSET, MetadataInput, Scope, check_targets
from cnki_mcp.server.deps import services_of
from cnki_mcp.server.errors import CnkiServer
from cnki_mcp.server.models import ErrorView, OperationView, locator_step, scope_page_step
from cnki_mcp.server.progress import start_operation, typed_view
from cnki_mcp.server.unfinished import or_unfinished
from cnki_mcp.services import Services

EXPORTS_DIR = datadir.EXPORTS_DIR
# Contract: a text over 64 KB of UTF-8 is only given as a file (with filename; without it
# OUTPUT_TOO_LARGE). 64 KB is at most ~22,000 tokens whatever the script (a CJK character is three
# bytes and about a token): clients cap a tool result (Claude Code at 25,000 tokens by default) or
# cut it silently. It was 512 KB, ~170,000 tokens of Chinese, and applied with a filename too.
MAX_TEXT_BYTES = 64 * 1024
MAX_RECORD_REFS = 1000
MAX_TITLES = 100
MAX_SCOPE_LIMIT = 3000


class ExportView(BaseModel):
    format: str = Field(description="实际使用的格式")
    count: int = Field(description="导出的文献数")
    text: str | None = Field(
        default=None,
        description="导出内容；超过 64 KB 时只在 filename 的文件中，此处为 null（text_omitted=true）",
    )
    text_omitted: bool = False
    path: str | None = Field(default=None, description="保存的文件（指定 filename 时）")
    bytes: int = Field(description="导出内容的 UTF-8 字节数")
    missing_fields: dict[str, list[str]] = Field(
        default_factory=dict,
        description="缺少作者、来源、年份，或期刊文章缺卷期（issue）、页码（pages）的文献：record_ref -> 缺失项；"
        "卷期页码可用 get_metadata(fields=['volume','issue','pages']) 补全后再导出（网络首发文献尚无卷期页，不报告）",
    )
    not_found: list[str] = Field(default_factory=list, description="本地没有的 record_refs")
    total: int | None = Field(default=None, description="给了 search_id 时：该 scope 的文献总数")
    next_offset: int | None = Field(
        default=None, description="给了 search_id 时：下一页的 offset（相同参数再调用）；null 表示没有下一页"
    )
    warnings: list[str] = Field(
        default_factory=list, description="给了未完成检索的 search_id 时：continue 之后会重新排序，须从 offset=0 重新导出"
    )


class ExportOperation(OperationView):
    result: ExportView | None = Field(default=None, description="导出结果（完成或部分完成时）")


class LinksOperation(OperationView):
    result: LinkResult | None = Field(default=None, description="替换后的文本与逐个题名的结果")


EXPORT_DESCRIPTION = """生成参考文献或导出题录（record_refs、search_id 本地；本地没有的 titles 访问知网定位并读详情）。
来源可组合：record_refs、完整 titles、search_id（scope/offset/limit）。custom 格式需要 template，占位符如 {title} {authors} {source} {year} {volume} {issue} {pages} {doi} {url}，字面花括号写 {{ }}。
filename 保存到 data/exports/（不覆盖：FILE_EXISTS）；超过 64 KB 时只写文件（text 为 null），不给 filename 则为 OUTPUT_TOO_LARGE（给 filename，或分批：search_id 用 offset/limit，record_refs 少传）。"""

LINKS_DESCRIPTION = """把文本中的《论文题名》替换为 Markdown 链接：有 DOI 的用 https://doi.org/ 链接（长期有效），没有的用知网详情页链接（含时效令牌，会失效，见 warnings）。默认只用本地记录（不访问知网）；lookup_missing=true 时到知网按篇名精确查找本地没有的题名（每 10 个 1 次检索）。
支持嵌套书名号；已有链接、代码、URL 和 HTML 不改动。references 逐个题名给出 status（ambiguous 可用 get_metadata 区分）。"""


# --- export helpers (no MCP in them) --------------------------------------------------


def export_file_name(filename: str, extension: str) -> str:
    """One safe file name (no directory, no traversal); `.ext` of the format added when the
    name has none. INVALID_ARGUMENT otherwise."""
    name = filename if "." in filename.strip(".") else f"{filename}.{extension}"
    suffix = name.rsplit(".", 1)[-1]
    if not suffix:
        raise InvalidInput("文件名无效", field="filename")
    try:
        check_file_name(name, suffix)  # type: ignore[arg-type]
    except InvalidInput as exc:
        raise InvalidInput(exc.message, field="filename") from exc
    return name


def exports_dir(data_dir: Path) -> Path:
    return datadir.checked_dir(Path(data_dir), EXPORTS_DIR)  # DATA_PATH_SYMLINK when a symlink


def ensure_free(data_dir: Path, name: str) -> Path:
    dest = exports_dir(data_dir) / name
    if dest.exists() or dest.is_symlink():
        raise FileExists(path=str(dest))
    return dest


def save_export(data_dir: Path, name: str, text: str) -> Path:
    """Write `text` to `<data>/exports/name` atomically and exclusively (temporary file, fsync,
    hard link): a complete file appears or nothing; an existing one is never replaced."""
    dest = ensure_free(data_dir, name)
    datadir.ensure_dir(Path(data_dir), EXPORTS_DIR)  # 0700 (DESIGN.md "Data directory")
    _clear_stale_parts(dest.parent)
    tmp = dest.with_name(f".export-{os.getpid()}-{uuid.uuid4().hex[:8]}.part")  # short: name may be 240 bytes
    with _WRITING_LOCK:
        _WRITING.add(tmp.name)
    try:
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, datadir.FILE_MODE), "wb") as fh:
            datadir.make_private(tmp)
            fh.write(text.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        os.link(tmp, dest)
    except FileExistsError as exc:
        raise FileExists(path=str(dest)) from exc
    except OSError as exc:  # a full, read-only or failing disk: coded, not INTERNAL
        raise datadir.write_refused(exc, EXPORTS_DIR) from exc
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        with _WRITING_LOCK:
            _WRITING.discard(tmp.name)
    return dest


# The temporaries this process is writing now (exports run in worker threads too).
_WRITING: set[str] = set()
_WRITING_LOCK = threading.Lock()


def _clear_stale_parts(folder: Path) -> None:
    """The temporaries of an export a process was killed in (between its write and its link: a
    3,000-record file's fsync): one process holds the data directory at a time, so none but
    this one's own is being written now. They stayed for good, hidden, the size of the export
    each. This process's own are known by name, not by its pid: a container's server starts
    as the same pid every time, and a killed run's temporaries carried it."""
    with _WRITING_LOCK:
        writing = set(_WRITING)
    for part in folder.glob(".export-*.part"):
        if part.name not in writing and not part.is_symlink():
            with contextlib.suppress(OSError):
                part.unlink()


SAVE_STEP = "用 filename 保存为文件"
UNKNOWN_REFS_MESSAGE = (
    "本地没有这些 record_ref：先用 search 或 structured_search 检索，或用 get_metadata(titles=[完整题名]) 取得 record_ref"
)


def too_large(size: int, count: int, read_only: bool, paged: bool = False, listed: bool = True) -> OutputTooLarge:
    """OUTPUT_TOO_LARGE, with the ways out that work: a `filename` or exporting in parts, and in
    read-only mode (which refuses `filename`, server/readonly.py) exporting in parts only. In parts
    is offset/limit only for a `search_id` export (`paged`); record_refs and titles ignore them, and
    an export of 60 record_refs told to page with offset/limit met the same error again."""
    parts = (
        "分批导出：search_id 减小 limit 用 offset 分批，record_refs / titles 每次少传一些"
        if paged and listed
        else "减小 limit 用 offset 分批导出"
        if paged
        else "每次少传一些 record_refs / titles 分批导出"
    )
    if not read_only:
        return OutputTooLarge(
            f"导出内容 {size} 字节，超过 {MAX_TEXT_BYTES // 1024} KB（客户端会截断更长的结果）："
            f"给 filename 保存为文件，或{parts}",
            bytes=size,
            max_bytes=MAX_TEXT_BYTES,
            count=count,
        )
    return OutputTooLarge(
        f"导出内容 {size} 字节，超过 {MAX_TEXT_BYTES // 1024} KB（客户端会截断更长的结果），只读模式下不能保存为文件："
        f"{parts}",
        bytes=size,
        max_bytes=MAX_TEXT_BYTES,
        count=count,
        read_only=True,
    )


def render_export(
    services: Services,
    refs: list[str],
    fmt: str,
    template: str | None,
    missing: MissingMode,
    filename: str | None,
    key_scope: list[str] | None = None,
    paged: bool = False,
    listed: bool = True,
) -> ExportView:
    """Export the stored papers `refs` (in order, repeats once) and save when asked. `key_scope`:
    the refs of the whole search scope `refs` is a page of (BibTeX keys unique over it). `paged`: a
    search_id export, which offset/limit cut in parts; `listed`: record_refs or titles given too."""
    ordered = list(dict.fromkeys(refs))
    papers = services.store.papers_by_refs(ordered)
    not_found = [r for r in ordered if r not in papers]
    seen: set[str] = set()
    sources: list[dict[str, Any]] = []
    for ref in ordered:
        paper = papers.get(ref)
        if paper is None or paper.record_ref in seen:
            continue
        seen.add(paper.record_ref)
        sources.append(cite_source(paper))
    keys = scope_keys(services.store, key_scope) if key_scope else None
    if keys is not None and all(s.get("record_ref") in keys for s in sources):
        result = export(sources, fmt, template=template, missing=missing, keys=keys)
    else:  # a paper outside the scope (named by record_refs too) takes its key among the scope's
        scope_papers = services.store.papers_by_refs(key_scope) if key_scope else {}
        scope_sources = [cite_source(scope_papers[r]) for r in key_scope or [] if r in scope_papers]
        result = export(sources, fmt, template=template, missing=missing, key_scope=scope_sources or None)
    size = len(result.text.encode("utf-8"))
    path: Path | None = None
    if filename is not None:
        path = save_export(services.settings.data_dir, filename, result.text)
    elif size > MAX_TEXT_BYTES:
        raise too_large(size, result.count, services.settings.read_only, paged=paged, listed=listed)
    omit = size > MAX_TEXT_BYTES
    return ExportView(
        format=result.format,
        count=result.count,
        text=None if omit else result.text,
        text_omitted=omit,
        path=str(path) if path else None,
        bytes=size,
        missing_fields=result.missing_fields,
        not_found=not_found,
    )


# The BibTeX keys of the scope last exported page by page, per store: (scope, papers stamp, keys).
# Every page made them from every paper of the scope (20,000 candidates: 6 s of CPU a page).
_SCOPE_KEYS: weakref.WeakKeyDictionary[Any, tuple[tuple[str, ...], tuple[int, int], dict[str | None, str]]] = (
    weakref.WeakKeyDictionary()
)


KEYS_READ = 1000  # papers read at a time for a scope's keys


def scope_keys(store: Any, key_scope: list[str]) -> dict[str | None, str]:
    """The BibTeX key of every paper of a search's scope (as `tagged.scope_key_map` makes them), made again
    only when the scope differs or a paper was written since (`Store.papers_stamp`: a search or a
    PDF read running beside the export writes the store all the time)."""
    scope = tuple(key_scope)
    stamp = store.papers_stamp()
    kept = _SCOPE_KEYS.get(store)
    if kept is not None and kept[0] == scope and kept[1] == stamp:
        return kept[2]
    # the base keys a part at a time (each paper once, as `tagged.scope_key_map`): the papers of
    # a 20,000-candidate scope held at once took 300 MB
    refs: list[str | None] = []
    bases: list[str] = []
    seen: set[str] = set()
    for at in range(0, len(scope), KEYS_READ):
        part = scope[at : at + KEYS_READ]
        papers = store.papers_by_refs(part)
        for rec in to_records(cite_source(papers[r]) for r in part if r in papers):
            if rec.record_ref and rec.record_ref in seen:
                continue
            seen.add(rec.record_ref or "")
            refs.append(rec.record_ref)
            bases.append(base_key(rec))
    keys = dict(zip(refs, keys_of_bases(bases), strict=True))
    _SCOPE_KEYS[store] = (scope, stamp, keys)
    return keys


class _LocalOp:
    """What pipeline.links needs of an operation when nothing goes to CNKI."""

    requests = 0
    item_errors: list[Any] = []  # noqa: RUF012 - never mutated

    def set_stage(self, stage: str, message: str | None = None) -> None:
        return None

    def progress(self, done: int, total: int | None = None, unit: str | None = None) -> None:
        return None

    def set_result(self, result: Any) -> None:
        return None

    def add_item_error(self, error: CnkiError, **details: Any) -> None:
        raise error  # pragma: no cover - local linking records no item errors


def register(server: CnkiServer) -> None:
    @server.tool(
        name="export_citations",
        title="导出参考文献",
        description=EXPORT_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True),
    )
    async def export_citations(
        ctx: Context[Any, Any],
        record_refs: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=64)]],
            Field(max_length=MAX_RECORD_REFS),
        ] = [],  # noqa: B006
        titles: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=500)]],
            Field(max_length=MAX_TITLES),
        ] = [],  # noqa: B006
        search_id: Annotated[
            str | None, Field(min_length=1, max_length=64, description="导出某次检索的结果")
        ] = None,
        scope: Scope = "selected",
        offset: Annotated[int, Field(ge=0, le=MAX_OFFSET)] = 0,
        limit: Annotated[
            int, Field(ge=1, le=MAX_SCOPE_LIMIT)
        ] = 1000,
        format: Annotated[
            str,
            Field(
                max_length=32,
                description=" ".join(FORMATS),
            ),
        ] = "gbt7714",
        template: Annotated[str | None, Field(max_length=5000)] = None,
        missing_fields: Annotated[
            MissingMode, Field(description="mark：缺失处写“[作者未取得]”等；omit：按著录标准省略")
        ] = "mark",
        filename: Annotated[
            str | None,
            Field(
                min_length=1, max_length=200, description="文件名，不含路径"
            ),
        ] = None,
    ) -> ExportOperation:
        fmt = normalize_format(format)  # FORMAT_UNAVAILABLE
        export([], fmt, template=template)  # INVALID_TEMPLATE before anything else
        check_targets(record_refs, titles, search_id)
        services = services_of(ctx)
        store = services.store
        name = export_file_name(filename, EXTENSIONS[fmt]) if filename is not None else None
        if name is not None:
            ensure_free(services.settings.data_dir, name)
        refs = [store.resolve_ref(r) for r in record_refs]
        paging: dict[str, Any] = {}
        key_scope: list[str] | None = None
        reranked: str | None = None
        if search_id:
            try:
                total, scoped = refs_in_scope(store, search_id, scope, offset, limit)
            except SearchNotFound as exc:  # a search still running says so (server/unfinished.py)
                raise or_unfinished(services.jobs, search_id, exc) from None
            paging = {"total": total, "next_offset": scope_next_offset(offset, len(scoped), total)}
            searched = store.get_search(search_id)
            reranked = reranked_note(searched.status if searched else "completed", offset, paging["next_offset"])
            if reranked:  # in the result too: an export that locates titles runs as an operation,
                paging["warnings"] = [reranked]  # whose ending replaces its message
            refs.extend(store.resolve_ref(r) for r in scoped)
            if fmt == "bibtex" and len(scoped) < total:  # a part: its keys are the whole scope's
                key_scope = [store.resolve_ref(r) for r in refs_in_scope(store, search_id, scope, 0, total)[1]]

        pending: list[str] = []
        for title in dict.fromkeys(map(asked_title, titles)):
            local = local_matches(store, title)
            if len(local) == 1:
                refs.append(local[0].record_ref)
            else:  # unknown (located on CNKI) or ambiguous (reported as an item error there)
                pending.append(title)

        if not pending:
            if record_refs and not search_id and not titles and not store.papers_by_refs(refs):
                raise DocumentNotFound(UNKNOWN_REFS_MESSAGE, record_refs=list(dict.fromkeys(record_refs)))
            view = render_export(
                services, refs, fmt, template, missing_fields, name, key_scope, bool(search_id), bool(record_refs or titles)
            )
            view = view.model_copy(update=paging)
            unknown = [ErrorView(**DocumentNotFound.unknown_ref(r).to_dict()) for r in view.not_found]
            return ExportOperation(
                kind=OperationKind.EXPORT.value,
                status="partial" if unknown else "completed",
                message="本地导出（未访问知网）" + (f"；{reranked}" if reranked else ""),
                result=view,
                errors=unknown,
                next_step=scope_page_step("export", view.model_dump())
                or locator_step(view.missing_fields)
                or (SAVE_STEP if view.path is None and view.count and not services.settings.read_only else None),
            )

        pipeline = services.pipeline

        async def runner(op: Any) -> Any:
            op.set_stage("locate", f"按题名定位 {len(pending)} 篇")
            found = await pipeline.metadata(MetadataInput(titles=pending), op)
            located = [str(r["record_ref"]) for r in found.records if r.get("record_ref")]
            op.set_stage("export", "生成参考文献")
            view = render_export(
                services, [*refs, *located], fmt, template, missing_fields, name, key_scope, bool(search_id),
                bool(record_refs or titles),
            )
            view = view.model_copy(update=paging)
            for ref in view.not_found:
                op.add_item_error(DocumentNotFound.unknown_ref(ref), stage="export", record_ref=ref)
            return view

        record = await start_operation(
            ctx, services.jobs, OperationKind.EXPORT, runner, stage="locate", message="定位题名"
        )
        return typed_view(ExportOperation, OperationView.of(record))

    @server.tool(
        name="link_references",
        title="为题名添加知网链接",
        description=LINKS_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True),
    )
    async def link_references(
        ctx: Context[Any, Any],
        text: Annotated[
            str, Field(description="含《题名》的 Markdown 文本，最大 512 KB，最多 100 个不同题名")
        ],
        lookup_missing: Annotated[
            bool, Field()
        ] = False,
    ) -> LinksOperation:
        scan_references(text)  # INPUT_TOO_LARGE / TOO_MANY_REFERENCES before any work
        inp = LinkInput(text=text, lookup_missing=lookup_missing)
        services = services_of(ctx)
        origin = services.settings.site_origin
        origins = (origin,) if origin else ()
        if not lookup_missing:
            result = await run_link_references(
                inp, services.store, services.backend, _LocalOp(), public_origins=origins
            )
            return LinksOperation(
                kind=OperationKind.LINKS.value,
                status="completed",
                message="只用本地记录（未访问知网）",
                result=result,
                next_step=(
                    "link_references(text, lookup_missing=true) 可到知网查找 unresolved 的题名"
                    if any(r.status == "unresolved" for r in result.references)
                    else None
                ),
            )

        async def runner(op: Any) -> Any:
            return await run_link_references(
                inp, services.store, services.backend, op, public_origins=origins
            )

        record = await start_operation(
            ctx, services.jobs, OperationKind.LINKS, runner, stage="links", message="匹配题名"
        )
        return typed_view(LinksOperation, OperationView.of(record))
