"""Output models of the tools that are the server's own (operations, identity, diagnostics).
The search/metadata results are the pipeline's models, carried in `result`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from cnki_mcp.errors import RELOCATE_FAILED
from cnki_mcp.jobs import CONTINUABLE, CONTINUE_DEFAULT_REQUESTS, IDLE, OperationRecord
from cnki_mcp.models import HeaderIdentity, IdentityKind


class ErrorView(BaseModel):
    code: str
    message: str
    retryable: bool = False
    details: dict[str, Any] = Field(default_factory=dict)


class ProgressView(BaseModel):
    done: int = 0
    total: int | None = None
    unit: str | None = None


class BudgetView(BaseModel):
    max_requests: int
    timeout_seconds: float
    on_verification: str = Field(description="ask：出现验证或登录时展示页面并等待处理；skip：跳过该资源")

    @field_validator("on_verification", mode="before")
    @classmethod
    def _as_the_tools_take_it(cls, value: object) -> object:
        # the budget stores what the operation does ("wait"); a client passes "ask" for it
        return "ask" if value == "wait" else value


class OperationView(BaseModel):
    """An operation record as tools return it. `status` is `idle` when nothing runs."""

    operation_id: str | None = None
    kind: str | None = None
    status: str = Field(
        description="running | awaiting_user | completed | partial | failed | skipped | cancelled | interrupted | idle"
    )
    stage: str | None = None
    message: str = ""
    progress: ProgressView | None = None
    requests: int = 0
    active_seconds: float = 0.0
    budget: BudgetView | None = None
    result: Any = Field(default=None, description="工具本身的结果（完成或部分完成时）")
    errors: list[ErrorView] = Field(default_factory=list)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    next_step: str | None = Field(default=None, description="下一步建议调用的工具")

    @classmethod
    def of(cls, record: OperationRecord | None, *, next_step: str | None = None) -> OperationView:
        if record is None:
            return cls(status=IDLE, next_step=next_step)
        data = record.public()
        view = cls.model_validate({**data, "next_step": next_step})
        if view.next_step is None:
            codes = tuple(e.code for e in view.errors)
            saved = view.result.get("format") if isinstance(view.result, dict) else None
            login = any(e.code == "VERIFICATION_SKIPPED" and e.details.get("gate") == "login" for e in view.errors)
            # a paper given by record_ref that relocation by its title did not find again
            lost = any(e.code == "DOCUMENT_NOT_FOUND" and e.details.get("reason") == RELOCATE_FAILED for e in view.errors)
            # a download's page without the asked format names the formats it has (none: no file)
            others = any(e.details.get("available") for e in view.errors if e.code == "DOWNLOAD_ENTRY_NOT_FOUND")
            # a read without a reader entry names the files the page offers (None: not known)
            files = next(
                (e.details.get("available") for e in view.errors if e.code in ("HTML_ENTRY_NOT_FOUND", "READER_UNSUPPORTED")),
                None,
            )
            view.next_step = default_next_step(
                view.status,
                view.kind,
                codes,
                saved_format=saved,
                checkpoint=record.checkpoint is not None,
                operation_id=record.operation_id,
                login_skipped=login,
                lost_ref=lost,
                other_formats=others,
                reader_files=files,
                retryable=any(e.retryable for e in view.errors),
            )
            if view.next_step is None and view.kind == "search":
                view.next_step = more_results_step(view.result)
            if view.next_step is None and view.kind in _PAGED_TOOL and isinstance(view.result, dict):
                # a page stopped early (budget, site, cancel) is not done: its next_offset is the
                # page's end, so the same call goes on with it (details read stay stored)
                stopped = record.final_error or view.status in ("cancelled", "interrupted")
                view.next_step = page_again_step(view.kind) if stopped else scope_page_step(view.kind, view.result)
            if view.next_step is None and view.kind == "export" and isinstance(view.result, dict):
                view.next_step = locator_step(view.result.get("missing_fields") or {})
            if view.next_step is None and view.kind == "read" and isinstance(view.result, dict):
                view.next_step = incomplete_read_step(view.result)
            if view.next_step is None and view.kind == "watch":
                view.next_step = unchecked_step(view.result) or unlisted_step(view.result)
            if view.next_step is None and view.kind == "login" and view.status == "completed":
                view.next_step = no_identity_step(view.result)
            view.next_step = with_record_ref(view.next_step, _paper_ref(view))
        return view


def _paper_ref(view: OperationView) -> str | None:
    """The one paper a read or download is about: its result's record_ref, else an error's."""
    if view.kind not in ("read", "download"):
        return None
    refs = [view.result.get("record_ref")] if isinstance(view.result, dict) else []
    refs += [e.details.get("record_ref") for e in view.errors]
    return next((r for r in refs if isinstance(r, str) and r), None)


def with_record_ref(step: str | None, record_ref: str | None) -> str | None:
    """`step` with its `record_ref` placeholder written as the paper's own, so the call can be sent
    as it stands: a download's advice was `read_pdf_text(record_ref)`, a read's
    `download_paper(record_ref)`, and the client had to know which record_ref was meant (a read
    by title never gave one)."""
    if step is None or record_ref is None:
        return step
    quoted = repr(record_ref)
    return (
        step.replace("(record_ref)", f"(record_ref={quoted})")
        .replace("(record_ref,", f"(record_ref={quoted},")
        .replace("record_refs=[record_ref]", f"record_refs=[{quoted}]")
    )


NO_IDENTITY_STEP = (
    "登录已结束，但知网页头既没有个人账号也没有机构身份（未登录：窗口被关闭，或未登录就 resume）："
    "请用户在弹出的窗口中登录后再调用 login；用 session_status(refresh=true) 确认当前身份"
)


def no_identity_step(result: Any) -> str | None:
    """A login that ended with neither a personal nor an institution identity (the person closed
    the window, or `resume` was sent before logging in): it said `completed` / 已完成 and nothing
    more, and the next download met the login wall again. None when an identity was observed."""
    if not isinstance(result, dict):
        return None
    if result.get("personal") == "authenticated" or result.get("institution") == "observed":
        return None
    return NO_IDENTITY_STEP


TRIAL_READ_STEP = (
    "这是试读（只有开头部分）：用 login 登录有全文权限的账号后再调用 read_online_html；"
    "或用 download_paper(record_ref) 下载后用 read_pdf_text(record_ref) 读全文"
)
PARTIAL_READ_STEP = "正文不完整（目录中的部分章节未读到）：用 download_paper(record_ref) 下载后用 read_pdf_text(record_ref) 读全文"


def incomplete_read_step(result: Mapping[str, object]) -> str | None:
    """How to get the whole text after a read that returned only part of it (None: nothing known missing)."""
    if result.get("trial") is True:
        return TRIAL_READ_STEP
    if result.get("complete_article") is False:
        return PARTIAL_READ_STEP
    return None


NO_WATCH_STEP = "还没有订阅：先用 watch_search(search_id) 订阅一个已保存的检索，再调用 check_updates"


def unchecked_step(result: Any) -> str | None:
    """The check_updates call for the watches a stopped batch left unchecked (None: none). A
    batch has no checkpoint (each check is stored as it ends); `all` takes the least recently
    checked watches first, so those come first again. A batch over no watch at all: how to start one."""
    if not isinstance(result, dict):
        return None
    unchecked = result.get("unchecked")
    if not unchecked:
        # nothing checked and nothing left: `all` over a store without any watch
        return NO_WATCH_STEP if result.get("checks") == [] else None
    if len(unchecked) == 1:
        return f"check_updates(watch_id='{unchecked[0]}')"
    return f"check_updates(watch_id='all')（先检查最久未检查的 {len(unchecked)} 个订阅）"


_PAGED_TOOL = {"metadata": "get_metadata", "export": "export_citations"}


def scope_page_step(kind: str, result: Mapping[str, object]) -> str | None:
    """The call for the next page of a search's scope that get_metadata / export_citations read
    one page of (None: the last page, or no search_id)."""
    after, total = result.get("next_offset"), result.get("total")
    if after is None or kind not in _PAGED_TOOL:
        return None
    if result.get("path"):  # saved to a file: the same filename is FILE_EXISTS (exports never overwrite)
        return (
            f"该范围共 {total} 篇，本页止于第 {after} 篇：用相同参数、offset={after} 和另一个 filename "
            f"再调用 {_PAGED_TOOL[kind]} 取下一页"
        )
    return f"该范围共 {total} 篇，本页止于第 {after} 篇：用相同参数、offset={after} 再调用 {_PAGED_TOOL[kind]} 取下一页"


def page_again_step(kind: str) -> str:
    """The call that finishes a get_metadata / export_citations page an error or a cancel stopped."""
    return (
        f"用相同参数再调用 {_PAGED_TOOL[kind]} 读完这一页：已读到的详情存在本地（30 天内不再请求），"
        "从停下处接着读"
    )


def more_results_step(result: Any) -> str | None:
    """The search_results call for the selected papers a search's answer did not list (its
    `limit`), or, when it selected none, for the relevant (eligible) papers it found; None when it
    listed them all."""
    if not isinstance(result, dict) or not result.get("search_id"):
        return None
    shown, selected = len(result.get("results") or []), int(result.get("selected_count") or 0)
    eligible = int(result.get("eligible_count") or 0)
    if selected == 0 and eligible:  # an empty list is not "nothing found"
        return (
            f"没有文献达到筛选阈值（相关性×来源质量）：search_results(search_id='{result['search_id']}', "
            f"scope='eligible', view='compact') 查看找到的 {eligible} 篇相关文献"
        )
    if shown >= selected:
        return None
    return (
        f"search_results(search_id='{result['search_id']}', offset={shown}) "
        f"读取其余 {selected - shown} 篇筛选结果"
    )


def unlisted_step(result: Any) -> str | None:
    """The list_watches call for the records a check counted but did not list (None: all listed)."""
    if not isinstance(result, dict):
        return None
    calls = [
        f"list_watches(watch_id='{check.get('watch_id')}', offset={check['next_offset']})"
        for check in result.get("checks") or []
        if isinstance(check, dict) and check.get("next_offset") is not None
    ]
    if not calls:
        return None
    return "、".join(calls) + " 列出这次检查其余的记录（每类每次 20 条）"


def locator_step(missing_fields: Mapping[str, Sequence[str]]) -> str | None:
    """The get_metadata call that reads the 卷期页码 an export's `missing_fields` reports (None: none)."""
    refs = [ref for ref, gaps in missing_fields.items() if {"issue", "pages"} & set(gaps)]
    if not refs:
        return None
    shown = ", ".join(f"'{r}'" for r in refs[:20]) + (", …" if len(refs) > 20 else "")
    return (
        f"{len(refs)} 篇期刊文章缺卷期或页码：get_metadata(record_refs=[{shown}], "
        "fields=['volume','issue','pages'])（批量导出，每 20 篇 1 次请求）补全后再导出"
    )


# the kinds whose tools take on_verification (search / structured_search in their options)
_SKIPPABLE = {"search", "read", "download", "verify", "citations"}
CHALLENGE_THEN_AGAIN = (
    "知网要求人工验证（滑块或验证码），已按 on_verification='skip' 跳过：有人能在弹出的浏览器窗口中完成验证时，"
    "用相同参数并把 on_verification 改为 'ask' 再调用 {tool}（search / structured_search 写在 options 中）"
)
AMBIGUOUS_STEP = "同名文献有多篇：从 IDENTITY_AMBIGUOUS 错误的 details.candidates 选一篇，用它的 record_ref 再调用"
LOGIN_THEN_AGAIN = "知网要求登录：先用 login 登录（请用户在弹出的窗口登录），再用相同参数调用 {tool}"
_TOOL_OF_KIND = {"download": "download_paper", "read": "read_online_html"}
TITLE_NOT_FOUND_STEP = (
    "未找到的文献（DOCUMENT_NOT_FOUND）：题名须与知网完全一致（含标点、全半角与副标题），不确定时先用 search "
    "或 structured_search（title，match=phrase）查找，再用结果中的 record_ref 调用"
)
RELOCATE_FAILED_STEP = (
    "这条记录的知网详情链接已失效，按它的题名重新定位也没有找到（知网可能撤下了这篇文献或改了题名）："
    "可用 search 按作者或关键词查找它现在的记录，找到后用新的 record_ref 调用"
)
NO_HTML_STEP = "这篇没有 HTML 阅读入口：用 download_paper(record_ref) 下载，PDF 再用 read_pdf_text(record_ref) 读取（本地）"
NO_HTML_CAJ_STEP = (
    "这篇没有 HTML 阅读入口，详情页只有 CAJ 下载（details.available）：CAJ 的文字本工具读不出（read_pdf_text "
    "不能读 CAJ），要全文用 download_paper(record_ref, format='caj') 下载后在 CAJViewer 中打开；"
    "摘要与题录用 get_metadata(record_refs=[record_ref])"
)
NO_HTML_NO_FILE_STEP = (
    "这篇没有 HTML 阅读入口，详情页也没有 PDF 或 CAJ 下载入口（details.available 为空）：知网没有给出全文"
    "（外文期刊只有原文链接：有 DOI 时到 https://doi.org/<doi> 从出版方获取），"
    "摘要、题录与 DOI 用 get_metadata(record_refs=[record_ref])"
)
DENIED_STEP = (
    "知网拒绝了这篇（无权限或余额不足）：用 session_status(refresh=true) 查看当前身份；"
    "有权限的个人或机构账号用 login 登录后再用相同参数调用 {tool}"
)
NO_BODY_STEP = (
    "阅读页没有可读的正文（只有摘要，或正文是图片：details.images）：用 download_paper(record_ref) 下载，"
    "PDF 再用 read_pdf_text(record_ref) 读取（本地；扫描版 PDF 也没有文字）"
)
NO_BODY_NO_PDF_STEP = (
    "阅读页没有可读的正文（只有摘要，或正文是图片：details.images），详情页也没有 PDF 下载（details.available）："
    "知网没有本工具能读的全文（只有 CAJ 时可 download_paper(record_ref, format='caj') 后在 CAJViewer 中打开）；"
    "摘要与题录用 get_metadata(record_refs=[record_ref])"
)
NO_FILE_STEP = (
    "这篇的详情页没有任何下载入口（没有 PDF 也没有 CAJ）：要读全文可试 read_online_html(record_ref)"
    "（外文期刊在知网只有原文链接：有 DOI 时到 https://doi.org/<doi> 从出版方获取），"
    "摘要、题录与 DOI 用 get_metadata(record_refs=[record_ref])"
)
NO_ENTRY_STEP = (
    "详情页没有所要格式的下载入口：details.available 列出它有的格式，用 download_paper(record_ref, format=…) "
    "下载其中一种（CAJ 不能用 read_pdf_text 读取）；要读全文也可试 read_online_html(record_ref)"
)
LIST_AGAIN_STEP = "用相同参数再调用 get_references / get_citing：已读的列表页存在本地不再请求，从停下处接着读"
BROWSER_CODES = ("BROWSER_UNAVAILABLE", "BROWSER_PROFILE_IN_USE")
BROWSER_STEP = (
    "浏览器没能启动（原因见 errors 的 message 与 details）：按其说明处理，或运行 cnki-mcp doctor 检查浏览器"
    "与 CNKI_BROWSER_PATH；修好后 {again}"
)
# The tool to call again after a retryable site error, by operation kind. Not here: metadata and
# export (their page is finished by `page_again_step`), watch (`unchecked_step` names the watches).
_AGAIN_TOOL = {
    "download": "download_paper",
    "read": "read_online_html",
    "verify": "verify_references",
    "links": "link_references",
    "login": "login",
    "session": "session_status",
    "search": "原检索工具（search 或 structured_search）",
    "citations": "原工具（get_references / get_citing 已读的列表页存在本地，不再请求）",
}
BUDGET_AGAIN_STEP = (
    "这次调用自己的预算（请求数或运行时间，见 errors[0].details.reason）用完，不是知网的限制；result 有内容时"
    "是停下前完成的部分：要完成它用相同参数再调用 {tool}（已读到的记录存在本地，不再请求）"
)
RETRY_LATER_STEP = "知网这次没有给出结果（errors 中的错误可重试：限流、暂时不可用或验证未完成）：稍后用相同参数再调用 {tool}"
CANCELLED_DOWNLOAD_STEP = (
    "下载已取消：仍要这篇时用相同参数再调用 download_paper（先找已到的文件与上次的点击：取消在点击之前则照常点击；"
    "已点击过（是否计费未知）则不会自动再点，回答 SIDE_EFFECT_UNCERTAIN 时确认未计费再传 retry=true）"
)
UNCERTAIN_DOWNLOAD_STEP = "稍后用相同参数再调用 download_paper（会先检查文件是否已到）；确认要再次点击时传 retry=true"
INVALID_DOWNLOAD_STEP = "知网给出的文件无效，是否已计费未知：确认要再次点击时用相同参数加 retry=true 调用 download_paper"


def default_next_step(
    status: str,
    kind: str | None = None,
    codes: tuple[str, ...] = (),
    *,
    saved_format: str | None = None,
    checkpoint: bool = False,
    operation_id: str | None = None,
    login_skipped: bool = False,
    lost_ref: bool = False,
    other_formats: bool = True,
    reader_files: list[str] | None = None,
    retryable: bool = False,
) -> str | None:
    """What to call next, by status, operation kind, error codes, whether a checkpoint was kept
    and (a download) the saved file's format: the same advice whether the record comes back
    inside the tool call or later through operation_status. Only an operation `operation_control`
    can continue (a kind in `jobs.CONTINUABLE` with a checkpoint: a search, a citation graph or
    path, not get_references / get_citing: those are told to call again, their pages being stored)
    is told to; read_pdf_text reads PDFs only, so a CAJ
    download gets no advice. A page skipped because CNKI asked for a login (`login_skipped`): log
    in first, then the same call again. An operation stopped by an error a retry may get past
    (`retryable`: RATE_LIMITED, SITE_UNAVAILABLE, ...) and no other advice: the same call later.
    A read or download of a stored paper CNKI no longer lists under its title (`lost_ref`:
    DOCUMENT_NOT_FOUND naming the record_ref) is not told to spell the title exactly."""
    if status == "skipped" and login_skipped:
        return LOGIN_THEN_AGAIN.format(tool=_TOOL_OF_KIND.get(kind or "", "原工具"))
    if status == "skipped" and "VERIFICATION_SKIPPED" in codes and kind in _SKIPPABLE:
        # a slider or captcha skipped under on_verification='skip': it said nothing, and the same
        # call with skip meets the same page again
        return CHALLENGE_THEN_AGAIN.format(tool=_AGAIN_TOOL.get(kind or "", "原工具"))
    if kind == "download":
        if "SIDE_EFFECT_UNCERTAIN" in codes:
            return UNCERTAIN_DOWNLOAD_STEP
        if "INVALID_FILE" in codes:  # sent for a handled order: charged or not is unknown
            return INVALID_DOWNLOAD_STEP
        if status == "completed":
            return "read_pdf_text(record_ref)" if saved_format in (None, "pdf") else None
    op = f"'{operation_id}'" if operation_id else "operation_id"
    if status in ("running", "awaiting_user"):
        return f"operation_status(operation_id={op}, wait_seconds=50)"
    if status in ("partial", "failed") and any(c in codes for c in BROWSER_CODES):
        # continuing (or calling again) before the browser is fixed fails the same way
        continuable = checkpoint and kind in {k.value for k in CONTINUABLE}
        again = f"operation_control(action='continue', operation_id={op})" if continuable else "用相同参数再调用原工具"
        return BROWSER_STEP.format(again=again)
    if status in ("partial", "interrupted") and checkpoint and kind in {k.value for k in CONTINUABLE}:
        if "BUDGET_EXHAUSTED" in codes:
            # a continue without additional_requests adds CONTINUE_DEFAULT_REQUESTS: said here, as a
            # graph the user limited to 6 requests spent 206 on the advice without a word
            return (
                f"operation_control(action='continue', operation_id={op}) 从检查点继续（已取得的不再请求；"
                f"不给 additional_requests 时追加 {CONTINUE_DEFAULT_REQUESTS} 次请求，要少些请给 additional_requests）"
            )
        return f"operation_control(action='continue', operation_id={op}) 从检查点继续（已取得的不再请求）"
    if status == "cancelled" and kind == "search" and checkpoint:
        # a cancelled search keeps the candidates it found (DESIGN.md "A cancelled search keeps
        # what it read") and its checkpoint
        return (
            f"search_results(search_id={op}) 分页读取取消前找到的结果；"
            f"要继续检索用 operation_control(action='continue', operation_id={op})（已取得的不再请求）"
        )
    if status == "cancelled":
        if kind == "citations" and checkpoint:
            # citation_graph / find_citation_path answer the walk so far and keep their checkpoint;
            # continue takes cancelled operations (jobs.continue_): it said nothing
            return (
                f"result 为取消前读到的部分；要接着走用 operation_control(action='continue', operation_id={op})"
                "（已取得的不再请求）"
            )
        if kind == "citations":  # get_references / get_citing: every list page read is stored
            return LIST_AGAIN_STEP
        if kind == "download":  # a click may have been sent (and charged) before the cancel
            return CANCELLED_DOWNLOAD_STEP
    if status == "partial" and kind == "citations" and "BUDGET_EXHAUSTED" in codes:
        # get_references / get_citing keep no checkpoint: every list page read is stored, so the
        # same call goes on from where this one stopped
        return LIST_AGAIN_STEP
    if "IDENTITY_AMBIGUOUS" in codes:
        return AMBIGUOUS_STEP
    if "DOCUMENT_NOT_FOUND" in codes and kind in ("download", "read") and lost_ref:
        return RELOCATE_FAILED_STEP
    # a title CNKI's exact search missed (download_paper / read_online_html given a title too)
    if "DOCUMENT_NOT_FOUND" in codes and kind in ("metadata", "export", "download", "read"):
        return TITLE_NOT_FOUND_STEP
    if "HTML_ENTRY_NOT_FOUND" in codes:  # no HTML reader for this paper: the file has the text
        if reader_files is not None and "pdf" not in reader_files:  # unless there is no PDF
            return NO_HTML_CAJ_STEP if "caj" in reader_files else NO_HTML_NO_FILE_STEP
        return NO_HTML_STEP
    if "READER_UNSUPPORTED" in codes and kind == "read":  # a reader of page images, or abstract only
        return NO_BODY_NO_PDF_STEP if reader_files is not None and "pdf" not in reader_files else NO_BODY_STEP
    if "DOWNLOAD_ENTRY_NOT_FOUND" in codes and kind == "download":  # e.g. a CAJ-only yearbook asked as PDF
        return NO_ENTRY_STEP if other_formats else NO_FILE_STEP
    if "ACCESS_DENIED" in codes and kind in _TOOL_OF_KIND:  # 账户余额不足 / 无权访问: the account's rights
        return DENIED_STEP.format(tool=_TOOL_OF_KIND[kind])
    if "DOWNLOAD_REFUSED" in codes and kind == "download":  # the same refusal on the order page: it said nothing
        return DENIED_STEP.format(tool="download_paper") + "；要读全文也可试 read_online_html(record_ref)"
    if status == "interrupted":
        return "重新调用原工具（服务重启打断了这次调用）"
    if status == "partial" and "BUDGET_EXHAUSTED" in codes and kind in _AGAIN_TOOL:
        # not CNKI's doing (it said 知网这次没有给出结果, 限流…): this call's own request or time budget
        return BUDGET_AGAIN_STEP.format(tool=_AGAIN_TOOL[kind])
    if status in ("partial", "failed") and retryable and kind in _AGAIN_TOOL:
        # it was null: a get_references stopped by SITE_UNAVAILABLE said nothing (README: 重新调用)
        return RETRY_LATER_STEP.format(tool=_AGAIN_TOOL[kind])
    return None


class IdentityView(BaseModel):
    """Who CNKI says we are (site-rules.md §2.6). permission_scope is always `unknown`."""

    personal: Literal["authenticated", "not_observed"] = "not_observed"
    # the account name the header shows: tells account B after A apart (both "authenticated")
    personal_name: str | None = None
    institution: Literal["observed", "not_observed"] = "not_observed"
    institution_evidence: list[str] = Field(default_factory=list)
    permission_scope: Literal["unknown"] = "unknown"
    evidence_source: Literal["kns_header", "login_wall", "not_checked"] = Field(
        default="not_checked",
        description="kns_header：读自知网页头；login_wall：某次请求遇到知网登录页（未登录个人账号）；not_checked：未检查过",
    )
    observed_at: datetime | None = Field(default=None, description="观察到该身份的时间（页面载入时），不是读取时间")

    @classmethod
    def of(
        cls, identity: HeaderIdentity, observed_at: datetime, evidence: Literal["kns_header", "login_wall"] = "kns_header"
    ) -> IdentityView:
        return cls(
            personal="authenticated" if identity.personal is IdentityKind.AUTHENTICATED else "not_observed",
            personal_name=identity.personal_name if identity.personal is IdentityKind.AUTHENTICATED else None,
            institution="observed" if identity.institutions else "not_observed",
            institution_evidence=list(identity.institutions),
            evidence_source=evidence,
            observed_at=observed_at,
        )


class SessionStatusView(IdentityView):
    cached: bool = Field(description="true：本次服务运行期间最近一次识别的结果，未访问知网")
    operation: OperationView | None = Field(
        default=None, description="refresh=true 且未在调用内完成时的任务记录（用 operation_status 继续等待）"
    )


class OperationControlView(BaseModel):
    action: str
    message: str
    operation: OperationView | None = None


class BrowserNetwork(BaseModel):
    route: Literal["direct", "proxy", "unchecked"] = Field(
        description="direct：直接连接；proxy：经代理；unchecked：由系统或桌面的代理设置决定，未检查"
    )
    via: str = Field("", description="决定它的设置（如 HTTPS_PROXY、CNKI_BROWSER_ARGS --proxy-server）")
    proxy: str = Field("", description="代理的 host:port（不含用户名和密码）")


class BrowserDiagnostics(BaseModel):
    configured_path: str | None = None
    found: bool
    executable: str | None = None
    kind: str | None = None
    problem: str | None = None
    running: bool
    headless: bool | None = None
    sandbox: str | None = Field(
        None,
        description="on：浏览器在 Chromium 沙箱中运行；off_root（以 root 运行）、off_browser_args"
        "（CNKI_BROWSER_ARGS 含 --no-sandbox）、off_unsupported（本机无法启动沙箱）：不在沙箱中",
    )
    process_id: int | None = None
    profile_directory: str
    connection_generation: int = 0
    network: BrowserNetwork | None = Field(
        None, description="浏览器按本服务器进程的环境与 CNKI_BROWSER_ARGS 访问知网的方式（cnki-mcp doctor 只看它自己的环境）"
    )


class Diagnostics(BaseModel):
    status: Literal["ok"] = "ok"
    version: str
    python: str
    mcp_version: str
    platform: str
    process_id: int
    memory_rss_bytes: int | None = Field(default=None, description="本进程当前常驻内存（字节；Linux 以外可能为空）")
    memory_peak_rss_bytes: int | None = Field(default=None, description="本进程启动以来的常驻内存峰值（字节）")
    data_dir: str
    settings: dict[str, Any]
    browser: BrowserDiagnostics
    limiter: dict[str, Any]
    human_step: dict[str, Any] | None = None
    store_notices: list[str] = Field(default_factory=list)
    interrupted_at_start: list[str] = Field(default_factory=list)
    active_operations: list[OperationView] = Field(default_factory=list)
    recent_operations: list[dict[str, Any]] = Field(default_factory=list)
