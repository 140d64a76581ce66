"""What the tabs a download click opened can show, and what each means for the charge
(site-rules.md §2.7): a refusal in the first 300 characters, an HTTP error page at the order URL
or past it, the browser's own error page for a request that failed in the network, a download
the browser ended without a file; and the messages that tell the caller whether to click again."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from cnki_mcp.errors import SideEffectUncertain, SiteError, SiteUnavailable
from cnki_mcp.files import FileFormat
from cnki_mcp.parse.gate import error_page
from cnki_mcp.site.endpoints import network_cause, request_never_left, unreachable

REFUSAL_WINDOW = 300  # site-rules.md §2.7: refusal text within the first 300 characters of the body
LOW_DISK_BYTES = 16 * 1024 * 1024  # below this free space a failed download is put down to the disk
_REFUSAL = re.compile(r"余额不足|未订购|无权|没有权限|暂无权限|请先登录|下载失败|下载异常|超出.{0,6}限")
# The order URL the PDF/CAJ entries open (bar.cnki.net/bar/download/order?id=…). Only an error page
# this URL itself answered says CNKI did not take the order (site-rules.md §2.7).
ORDER_PATH = "/bar/download/order"
# Chromium's own page for a navigation that failed in the network (connection reset, DNS ...)
BROWSER_ERROR_URL = "chrome-error://"
_ERROR_NAME = re.compile(r"\bERR_[A-Z0-9_]+\b")
BODY_TEXT_JS = "() => (document.body ? document.body.innerText : '').trim().slice(0, 2000)"


def refusal_text(text: str) -> str | None:
    """The page's words when its first 300 characters refuse the download."""
    head = re.sub(r"\s+", " ", text).strip()[:REFUSAL_WINDOW]
    return head if _REFUSAL.search(head) else None


async def error_name(page: Page) -> str:
    """The net error Chromium's error page names (`net::ERR_…`), "" when it names none."""
    try:
        text = str(await page.evaluate(BODY_TEXT_JS) or "")
    except PlaywrightError:
        return ""
    found = _ERROR_NAME.search(text)
    return f"net::{found.group(0)}" if found else ""


class DownloadFailed(Exception):
    """The browser ended a download without a file (its reason, e.g. `canceled` when the disk is
    full), or the file could not be saved to incoming/."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def failed_download(reason: str, record_ref: str, fmt: FileFormat, free: int | None) -> SideEffectUncertain:
    """SIDE_EFFECT_UNCERTAIN for a download that failed: no file arrived, and whether CNKI charged
    for it stays unknown (the click keeps no outcome, so the next call asks for `retry`). It said
    the download might still be in progress; it says what happened, and the free space when the
    disk holding the data directory is (nearly) full. `free`: the free bytes of that disk, as the
    caller read them (`files.free_space`; None when unknown)."""
    low = free is not None and free < LOW_DISK_BYTES
    message = "浏览器报告下载失败，文件没有保存" + (
        "：数据目录所在磁盘空间不足，腾出空间后" if low else "；"
    ) + "用相同参数再调用（知网是否已计费未知，确认要再次点击时传 retry=true）"
    return SideEffectUncertain(message, record_ref=record_ref, format=fmt, browser_failure=reason,
                               free_bytes=free, no_space=low)  # fmt: skip


class Refused(Exception):
    def __init__(self, text: str):
        super().__init__(text)
        self.text = text


INVALID_AGAIN = (
    "上次点击后知网给出的文件无效（不是所请求格式的完整文件），知网是否已计费未知；"
    "确认要再次点击时传 retry=true"
)
STILL_DOWNLOADING = (
    "文件仍在下载中（知网已开始发送这次点击的文件）；稍后用相同参数再调用 download_paper 取得它，"
    "下载完成前不会再次点击（retry=true 也不会）"
)
ORDER_TAB_OPEN = (
    "上次点击的下载页仍开着等知网应答（最长 10 分钟），文件仍可能到达：稍后用相同参数再调用；"
    "现在传 retry=true 会再下一次单，可能重复计费"
)
AGAIN_AFTER_ERROR_PAGE = "没有给出文件；稍后用相同参数再调用 download_paper（无需 retry）"


class ErrorPage(Exception):
    """The order URL itself answered 429 or 404/410: CNKI did not handle the order, so nothing
    was charged."""

    def __init__(self, error: SiteError, status: int):
        super().__init__(error.message)
        self.error = error
        self.status = status


class OrderFailed(Exception):
    """The order page is a 5xx (or a 4xx other than 404/410/429) error page, or any error page at
    another URL the order led to (the file host): no file follows it, and whether CNKI charged
    before it failed is unknown."""

    def __init__(self, status: int, text: str, url: str):
        super().__init__(f"HTTP {status}")
        self.status = status
        self.text = text
        self.url = url


def order_error(status: int, url: str, text: str) -> ErrorPage | OrderFailed:
    """What an error page (HTTP `status` >= 400, the final response's) on a tab of the order says.
    Only on the order URL itself is a 429, 404/410 the order not handled (`ErrorPage`, nothing
    charged); a server error, another 4xx, or any error page past the order URL (an order
    redirected on to a file URL that answered 404 was taken by CNKI) leaves the charge unknown."""
    at_order = urlsplit(url).path == ORDER_PATH
    failure = error_page(status, "下载页", AGAIN_AFTER_ERROR_PAGE) if at_order and status < 500 else None
    if failure is not None:
        return ErrorPage(failure, status)
    return OrderFailed(status, re.sub(r"\s+", " ", text).strip(), url)


class NetFailed(Exception):
    """A tab the click opened shows the browser's error page: its request (the order URL, or the
    file URL the order led to) failed in the network (`error`, e.g. net::ERR_CONNECTION_RESET)."""

    def __init__(self, url: str, error: str):
        super().__init__(error)
        self.url = url
        self.error = error

    @property
    def unsent(self) -> bool:
        """Nothing reached CNKI: the order URL itself failed before a connection was made."""
        return urlsplit(self.url).path == ORDER_PATH and request_never_left(self.error)


_UNSENT_ORDER = "点击下载后浏览器没能连上知网的下载地址，订单没有发出，未计费（再调用 download_paper 无需 retry）。"


def unsent_order(lost: NetFailed, record_ref: str, fmt: FileFormat) -> SiteUnavailable:
    """SITE_UNAVAILABLE for an order that never left (`NetFailed.unsent`): its net error's cause
    and advice as any page's (`unreachable`: a proxy down or a refused certificate not retryable),
    else a plain "call again"."""
    details = {"record_ref": record_ref, "format": fmt, "page_url": lost.url}
    known = network_cause(lost.error)
    if known is not None:
        return unreachable(lost.error, known, lead=_UNSENT_ORDER, **details)
    return SiteUnavailable(_UNSENT_ORDER + "稍后用相同参数再调用", net_error=lost.error, **details)
