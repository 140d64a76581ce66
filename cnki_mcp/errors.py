"""The error tree. Every error has a stable `code` (a public API: never renamed once
published), whether a retry may succeed (`retryable`) and whether the whole operation
must stop (`fatal`). Messages may be Chinese; callers and tests compare codes only."""

from __future__ import annotations

from typing import Any, ClassVar


class CnkiError(Exception):
    """Base of every expected failure. Anything else reaching the server edge is a bug."""

    code: ClassVar[str] = "INTERNAL"
    retryable: ClassVar[bool] = False
    fatal: ClassVar[bool] = False
    default_message: ClassVar[str] = "内部错误"

    def __init__(self, message: str | None = None, **details: Any) -> None:
        self.message = message or self.default_message
        self.details: dict[str, Any] = details
        super().__init__(self.message)

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "retryable": self.retryable,
            "details": self.details,
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


# --- input validation -------------------------------------------------------------


class InvalidInput(CnkiError):
    code = "INVALID_ARGUMENT"
    default_message = "参数无效"


class InvalidExpression(InvalidInput):
    code = "INVALID_EXPRESSION"
    default_message = "表达式节点不能同时是运算符和条件"


class InvalidNot(InvalidInput):
    code = "INVALID_NOT"
    default_message = "not 需要恰好一个子项"


class InvalidOperator(InvalidInput):
    code = "INVALID_OPERATOR"
    default_message = "and/or 需要 2 到 12 个子项"


class InvalidCondition(InvalidInput):
    code = "INVALID_CONDITION"
    default_message = "检索条件无效"


class InvalidMatch(InvalidInput):
    code = "INVALID_MATCH"
    default_message = "match 只能是 phrase 或 exact"


class QueryTooComplex(InvalidInput):
    code = "QUERY_TOO_COMPLEX"
    default_message = "表达式过于复杂"


class UnboundedQuery(InvalidInput):
    code = "UNBOUNDED_QUERY"
    default_message = "每个分支至少需要一个肯定条件"


class QueryUnsupported(InvalidInput):
    code = "QUERY_UNSUPPORTED"
    default_message = "知网不支持该检索值"


class InvalidPlan(InvalidInput):
    code = "INVALID_PLAN"
    default_message = "概念分组无效"


class InputTooLarge(InvalidInput):
    code = "INPUT_TOO_LARGE"
    default_message = "输入过大"


class TooManyReferences(InvalidInput):
    code = "TOO_MANY_REFERENCES"
    default_message = "题名数量超过上限"


class InvalidTemplate(InvalidInput):
    code = "INVALID_TEMPLATE"
    default_message = "自定义模板无效"


UNKNOWN_REF_MESSAGE = (
    "本地没有这个 record_ref：先用 search 或 structured_search 检索，或用 get_metadata(titles=[完整题名]) "
    "取得 record_ref，再用它调用"
)


RELOCATE_FAILED = "relocate_failed"  # DOCUMENT_NOT_FOUND's reason: a stored paper's title found nothing


class DocumentNotFound(CnkiError):
    code = "DOCUMENT_NOT_FOUND"
    default_message = "未找到该文献"

    @classmethod
    def unknown_ref(cls, record_ref: str) -> DocumentNotFound:
        """A record_ref this data directory has no record of, saying how to get one (it was the
        bare 未找到该文献 in read_online_html, download_paper, read_pdf_text and get_metadata)."""
        return cls(UNKNOWN_REF_MESSAGE, record_ref=record_ref)


class SearchNotFound(CnkiError):
    code = "SEARCH_NOT_FOUND"
    default_message = "没有这个检索编号（检索结果只保留最近 300 次）"


class LibraryIndexBuilding(CnkiError):
    """search_library while the library index of a large library is rebuilt after an upgrade
    (DESIGN.md §Library search, "Rebuild"); details `indexed` and `papers`."""

    code = "LIBRARY_INDEX_BUILDING"
    retryable = True
    default_message = "本地文献库的检索索引正在重建（升级后第一次启动时进行），完成前无法检索本地文献；稍后重试，其他工具不受影响"


class IdentityAmbiguous(CnkiError):
    code = "IDENTITY_AMBIGUOUS"
    default_message = "题名对应多篇文献，请用 record_ref 指定"


# --- site responses ---------------------------------------------------------------


class SiteError(CnkiError):
    """A CNKI response that is not the page we asked for."""

    code = "SITE_ERROR"
    default_message = "知网返回了意外的页面"


class RateLimited(SiteError):
    code = "RATE_LIMITED"
    retryable = True
    default_message = "知网限制当前请求频率"


class VerificationRequired(SiteError):
    code = "VERIFICATION_REQUIRED"
    retryable = True
    default_message = "知网要求人工验证"


class LoginRequired(SiteError):
    code = "LOGIN_REQUIRED"
    retryable = True
    default_message = "知网要求登录"


class AccessDenied(SiteError):
    code = "ACCESS_DENIED"
    default_message = "知网拒绝访问（无权限）"


class LocatorExpired(SiteError):
    code = "LOCATOR_EXPIRED"
    retryable = True
    default_message = "详情页链接已失效"


class SiteUnavailable(SiteError):
    code = "SITE_UNAVAILABLE"
    retryable = True
    default_message = "知网暂时不可用"


def network_path_refused(message: str, **details: Any) -> SiteUnavailable:
    """SITE_UNAVAILABLE for the network path the site refuses, not the site failing: the CDN's
    refusal (`details.reason: cdn_refused`) or a redirect to the overseas site (`overseas_site`),
    DESIGN.md "The network path". Asked again from the same address it answers the same: not
    retried by the product, and `retryable` false until the person changes the network. No class
    of its own: every error class owns one code."""
    error = SiteUnavailable(message, **details)
    error.retryable = False  # type: ignore[misc]  # the instance's value shadows the class default
    return error


class SiteTemporarilyEmpty(SiteError):
    code = "SITE_TEMPORARILY_EMPTY"
    retryable = True
    default_message = "知网暂时返回空结果（暂无数据/稍后重试）"


class PaginationMismatch(SiteError):
    code = "PAGINATION_MISMATCH"
    retryable = True
    default_message = "知网返回的页码与请求不一致"


class VerificationRepeated(SiteError):
    code = "VERIFICATION_REPEATED"
    retryable = True
    default_message = "多次重试后仍未取得结果"


class ResponseTooLarge(SiteError):
    code = "RESPONSE_TOO_LARGE"
    default_message = "响应超过 8 MiB"


class ContentNotReady(SiteError):
    code = "CONTENT_NOT_READY"
    retryable = True
    default_message = "页面内容未能在时限内渲染"


class QueryTemplateUnavailable(SiteError):
    code = "QUERY_TEMPLATE_UNAVAILABLE"
    retryable = True
    default_message = "未能从高级检索页捕获检索请求"


class QueryTemplateUnsupported(SiteError):
    code = "QUERY_TEMPLATE_UNSUPPORTED"
    default_message = "检索请求结构已变化"


class VerificationContextUnavailable(SiteError):
    code = "VERIFICATION_CONTEXT_UNAVAILABLE"
    retryable = True
    default_message = "无法在检索页显示验证"


class RemoteAccessUnsupported(SiteError):
    """CNKI's pages reached through a library proxy (WebVPN, EZproxy: under the university's host).
    Every request of the product goes to cnki.net itself, outside the proxy (site-rules.md §2.6)."""

    code = "REMOTE_ACCESS_UNSUPPORTED"
    default_message = "不支持经图书馆代理（WebVPN / EZproxy）访问知网"


# --- parsing ----------------------------------------------------------------------


class ParserUnsupported(CnkiError):
    code = "PARSER_UNSUPPORTED"
    default_message = "页面结构无法识别"


class SourceSchemaUnsupported(ParserUnsupported):
    code = "SOURCE_SCHEMA_UNSUPPORTED"
    default_message = "期刊页结构无法识别"


class ReaderUnsupported(ParserUnsupported):
    code = "READER_UNSUPPORTED"
    default_message = "阅读页结构无法识别"


class IdentityConflict(CnkiError):
    code = "IDENTITY_CONFLICT"
    default_message = "页面与请求的文献不一致"


class SourceIdentityUnconfirmed(CnkiError):
    code = "SOURCE_IDENTITY_UNCONFIRMED"
    default_message = "期刊页与来源名称不一致"


class ContentPartial(CnkiError):
    """Never raised: the code `read_online_html` puts in its result's `warnings` when the reader
    showed only part of the body (`coverage.scope` partial). The part read is the answer, with
    `complete_article` false; an error would have thrown it away. Kept as that warning's stable name."""

    code = "CONTENT_PARTIAL"
    retryable = True
    default_message = "正文未完整加载"


# Codes a result carries in `warnings`, never as an error (the docs say so where they list them).
WARNING_CODES = frozenset({ContentPartial.code})


# --- human steps ------------------------------------------------------------------


class VerificationTimeout(CnkiError):
    code = "VERIFICATION_TIMEOUT"
    retryable = True
    default_message = "等待人工验证超时"


class VerificationSkipped(CnkiError):
    code = "VERIFICATION_SKIPPED"
    default_message = "按请求跳过需要人工处理的资源，未判定资源权限"


class VerificationNotFound(CnkiError):
    code = "VERIFICATION_NOT_FOUND"
    default_message = "当前没有需要人工处理的页面"


# --- browser, store, operations ---------------------------------------------------


class BrowserUnavailable(CnkiError):
    code = "BROWSER_UNAVAILABLE"
    fatal = True
    default_message = "未找到可用的 Chrome/Edge/Chromium"


class TabClosed(CnkiError):
    """A tab the product was reading was closed in the shown window (by the person) while the
    browser ran on: nothing of the page was read; calling again opens it anew."""

    code = "TAB_CLOSED"
    retryable = True
    default_message = "浏览器窗口中正在读取的页面被关闭了：再调用一次即可（任务进行时请勿关闭它打开的标签页）"


class BrowserProfileInUse(CnkiError):
    code = "BROWSER_PROFILE_IN_USE"
    fatal = True
    default_message = "浏览器资料目录正被另一个进程使用"


class DataDirectoryInUse(CnkiError):
    code = "DATA_DIRECTORY_IN_USE"
    fatal = True
    default_message = "数据目录正被另一个 cnki-mcp 进程使用"


class DataDirectoryUnusable(CnkiError):
    """The data directory (or an entry the product uses in it) cannot be used as it is."""

    code = "DATA_DIRECTORY_UNUSABLE"
    fatal = True
    default_message = "数据目录无法使用（不是文件夹或不可写）"


class DataDirectoryMissing(DataDirectoryUnusable):
    """A command that only reads or removes (`watch list/check/remove`) named a data directory
    that does not exist: nothing to read, and creating it would leave a stray folder behind."""

    code = "DATA_DIRECTORY_MISSING"
    default_message = "数据目录不存在"


class DataPathSymlink(DataDirectoryUnusable):
    code = "DATA_PATH_SYMLINK"
    default_message = "数据目录中的路径是符号链接，为防止数据写到数据目录之外，拒绝使用"


class DatabaseUnusable(DataDirectoryUnusable):
    code = "DATABASE_UNUSABLE"
    default_message = "数据库文件无法打开（cnki.sqlite3 不是文件或不可读写）"


class BudgetExhausted(CnkiError):
    code = "BUDGET_EXHAUSTED"
    retryable = True
    default_message = "预算已用完（检索与引文图、引文路径可用 operation_control continue 继续）"


class OperationState(CnkiError):
    code = "OPERATION_STATE"
    default_message = "操作当前状态不允许该动作"


class OperationNotRunning(CnkiError):
    code = "OPERATION_NOT_RUNNING"
    default_message = "操作不在本进程中运行"


class OperationNotFound(CnkiError):
    code = "OPERATION_NOT_FOUND"
    default_message = "未找到该操作"


class OperationBusy(CnkiError):
    code = "OPERATION_BUSY"
    retryable = True
    default_message = "已有同类操作在运行"


class ContinueUnavailable(CnkiError):
    code = "CONTINUE_UNAVAILABLE"
    default_message = "该操作没有可继续的检查点"


class ReadOnlyMode(CnkiError):
    code = "READ_ONLY_MODE"
    default_message = "只读模式（CNKI_READ_ONLY=1）下不提供该操作：它会下载、写出文件或可能产生费用"


class Cancelled(CnkiError):
    code = "CANCELLED"
    default_message = "操作已取消"


class ServerStopping(CnkiError):
    code = "SERVER_STOPPING"
    retryable = True
    default_message = "服务正在停止，没有开始新的任务；服务重新启动后再调用"


# --- files ------------------------------------------------------------------------


class SideEffectUncertain(CnkiError):
    code = "SIDE_EFFECT_UNCERTAIN"
    default_message = "上次下载点击结果未知；确认后用 retry=true 重试"


class DownloadRefused(CnkiError):
    code = "DOWNLOAD_REFUSED"
    default_message = "知网拒绝下载"


class DownloadEntryNotFound(CnkiError):
    code = "DOWNLOAD_ENTRY_NOT_FOUND"
    default_message = "详情页没有下载入口"


class HtmlEntryNotFound(CnkiError):
    code = "HTML_ENTRY_NOT_FOUND"
    default_message = "详情页没有 HTML 阅读入口"


class InvalidFile(CnkiError):
    code = "INVALID_FILE"
    default_message = "下载内容与请求格式不一致（可能是错误页面）"


class FileExists(CnkiError):
    code = "FILE_EXISTS"
    default_message = "文件已存在，不会覆盖"


class OutputTooLarge(CnkiError):
    code = "OUTPUT_TOO_LARGE"
    default_message = "输出过大，请指定 filename 保存为文件"


class FormatUnavailable(CnkiError):
    code = "FORMAT_UNAVAILABLE"
    default_message = "不支持该格式"


# --- configuration ----------------------------------------------------------------


class ConfigInvalid(CnkiError):
    code = "CONFIG_INVALID"
    default_message = "配置无效"


class TokenRequired(CnkiError):
    code = "TOKEN_REQUIRED"
    default_message = "在非本机地址上提供 HTTP 服务必须设置 CNKI_MCP_TOKEN（或明确传入 --insecure-no-token）"


class ListenFailed(CnkiError):
    code = "LISTEN_FAILED"
    default_message = "无法在该地址和端口上监听（端口已被占用、地址不属于本机或无法解析）"


class ConfigSymlink(CnkiError):
    code = "CONFIG_SYMLINK"
    default_message = "配置文件是符号链接，拒绝写入"


class ConfigChanged(CnkiError):
    code = "CONFIG_CHANGED"
    retryable = True
    default_message = "配置文件在写入前被修改"


class ConfigExists(CnkiError):
    code = "CONFIG_EXISTS"
    default_message = "配置文件里已有不同的 cnki 条目，未改动"


class ConfigWriteFailed(CnkiError):
    code = "CONFIG_WRITE_FAILED"
    default_message = "无法写入客户端配置文件"


class ClientNotInitialized(CnkiError):
    code = "CLIENT_NOT_INITIALIZED"
    default_message = "客户端尚未初始化（配置目录不存在），请先启动一次该客户端"


class ExtraNotInstalled(CnkiError):
    code = "EXTRA_NOT_INSTALLED"
    default_message = "缺少可选依赖；请安装 cnki-research-mcp[sim]"


class UnknownClient(InvalidInput):
    code = "UNKNOWN_CLIENT"
    default_message = "未知的客户端"


def all_error_classes() -> list[type[CnkiError]]:
    """Every error class, for docs and the test that codes stay unique."""
    seen: list[type[CnkiError]] = []
    stack: list[type[CnkiError]] = [CnkiError]
    while stack:
        cls = stack.pop()
        seen.append(cls)
        stack.extend(cls.__subclasses__())
    return seen
