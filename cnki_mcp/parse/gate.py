"""The page gate: what a CNKI response is (challenge, login, denied, ...) before a content parser runs,
and who the kns header says we are. Pure: HTML text, URL and HTTP status in, verdicts out.

Only what a person could see counts: hidden elements are removed first, including the
`opacity:0` / far-offscreen wrappers CNKI uses to park its embedded captcha widget."""

from __future__ import annotations

import json
import re
from html import unescape
from urllib.parse import urlsplit

from selectolax.lexbor import LexborHTMLParser

from cnki_mcp.errors import (
    AccessDenied,
    CnkiError,
    LocatorExpired,
    LoginRequired,
    ParserUnsupported,
    RateLimited,
    SiteError,
    SiteTemporarilyEmpty,
    SiteUnavailable,
    VerificationRequired,
    network_path_refused,
)
from cnki_mcp.models import GateKind, GateVerdict, HeaderIdentity, IdentityKind
from cnki_mcp.parse._html import attr, body_text, parse_html, text_of

# site-rules.md §1.4: checked on the raw body, quotes optional.
_VERICODE = re.compile(r"""id\s*=\s*["']?vericode\b|name\s*=\s*["']?vericodeForm\b""", re.I)
# `_VERICODE` has no literal to scan for, so it tries every position (~14 ms on a 330 KB grid
# page). Every match holds "vericode" in some letter case, which lower() turns into one of these
# (re.I also folds İ and ı to i): a search of the lowered text with a literal prefix, ~3 ms.
_VERICODE_HINT = re.compile("ver(?:i\u0307?|\u0131)code")
_TITLE = re.compile(r"<title[^>]*>\s*([^<]*?)\s*</title>", re.I)
# Every kns8s page embeds a Tencent captcha widget inside `#tcaptcha_transform_dy` styled
# `opacity: 0; top: -1e+06px`: invisible until the site raises it. Such wrappers are hidden.
_INVISIBLE_STYLE = re.compile(
    r"opacity\s*:\s*0(?:\.0+)?\s*(?:;|$|!)|(?:top|left)\s*:\s*-(?:\d{4,}|\d(?:\.\d+)?e\+?\d+)", re.I
)
_CAPTCHA_WORD = re.compile(r"captcha|verify", re.I)
# CNKI's WAF answers an API call it wants verified with HTTP 403 and
# {"code":-403,"message":"https://kns.cnki.net/verify/home?captchaType=blockPuzzle&ident=…&captchaId=…&returnUrl=…"}
# (docs/simulator.md "Challenges, blocks and sessions"); a rendered tab shows the same text in a <pre>.
_CHALLENGE_JSON = re.compile(r"""\{[^{}]*"code"\s*:\s*-403\b[^{}]*\}""")
_CAPTCHA_SELECTORS = (
    "#tCaptchaDyMainWrap",
    ".captcha-dialog",
    ".geetest_panel",
    "[id^=nc_][id$=_wrapper]",
    ".tcaptcha-transform",
)
_SLIDER_TEXT = re.compile(r"滑动验证|继续阅读全文")
_CHALLENGE_TEXT = re.compile(r"请完成安全验证|向右滑动完成验证")
_RATE_TEXT = re.compile(r"访问过于频繁|系统检测到异常访问")
# site-rules.md §2.6 denied texts; plus the bar.cnki.net reader paywall (`账户余额不足，请充值或开通会员后下载全文`),
# which refuses the full text for lack of entitlement: a denial, not a login prompt.
_DENIED_TEXT = re.compile(r"机构未订购|无权访问|您没有.{0,8}权限|账户余额不足")
_TEMP_EMPTY_TEXT = re.compile(r"暂无数据|稍后重试|服务繁忙")
# A page that shows papers (a detail page's title or abstract, the reader's body, result rows):
# the words of a challenge, a rate limit or a refusal in it are a paper's own (a study of
# crawlers quoting 访问过于频繁, of captchas quoting 请完成安全验证), never the site's verdict.
_CONTENT = "#paperRead, #ChDivSummary, table.result-table-list, .wx-tit h1, .wxTitle h2"
_GRID_CONTEXT = "table.result-table-list, table.GridTableContent, #gridTable, .pagerTitleCell"
_LOGIN_PATH = re.compile(r"/(?:t?login|signin|sso)(?:[/._?]|$)", re.I)
_LOGOUT_TEXTS = {"退出登录", "安全退出", "退出账号", "logout", "sign out"}
_HEADER_AREAS = ".ecp_header_login_area, header, .header, .topbar, .top-bar, .topLogin"
_HEADER_WORDS = re.compile(r"登录|退出|注册")
_INSTITUTION_SELECTORS = (
    ".ecp_header_unitName, .org-name, .institution-name, [data-institution-name], #Ecp_top_orgName"
)
_SHORT_BODY = 200
# An answer with no document at all (an empty body, as a browser renders it: only the html, head and
# body tags it adds). CNKI's CDN answers traffic it distrusts (a proxy's or data centre's address)
# with HTTP 418 or such an empty page (docs/simulator.md "The network path"); no CNKI page is empty.
_BLANK = re.compile(r"\s*(?:<!doctype[^>]*>\s*)?(?:</?(?:html|head|body)\b[^>]*>\s*)*", re.I)
CDN_STATUS = 418
CDN_REFUSED = "cdn_refused"  # SITE_UNAVAILABLE's details.reason
CDN_ADVICE = (
    "经代理、VPN 或数据中心 IP 访问时，知网的 CDN 常这样拒绝。请关闭代理，或在代理软件中把 cnki.net 设为直连"
    "（Linux 上也可在 AI 客户端配置的 env 中设 NO_PROXY=cnki.net,.cnki.net；GNOME 桌面会话中改在系统的网络代理设置里把 *.cnki.net 设为忽略的主机）后重试"
)  # a bare message page (no layout) is judged by its text alone


def visible_tree(html: str) -> LexborHTMLParser:
    """Parse and drop everything invisible, including opacity:0 and far-offscreen wrappers."""
    tree = parse_html(html)
    for node in tree.css("[style]"):
        if _INVISIBLE_STYLE.search(node.attributes.get("style") or ""):
            node.decompose()
    # `is-hide` is CNKI's CSS class for hidden badges (e.g. `i.freeIdent.is-hide`).
    for node in tree.css(".is-hide"):
        node.decompose()
    return tree


def is_login_url(url: str | None) -> bool:
    """A login host (`//login.cnki.net`) or a login path."""
    if not url:
        return False
    if "//login." in url.lower():
        return True
    return bool(_LOGIN_PATH.search(urlsplit(url).path))


def challenge_url(text: str) -> str | None:
    """The slider page a `{"code":-403,"message":URL}` answer names (raw JSON, or a tab's rendering
    of it), or None when `text` is not such an answer. The URL is CNKI's own (ident, captchaId and
    its opaque returnUrl): the page a person must be shown, never one built from parts."""
    m = _CHALLENGE_JSON.search(text[:20_000])
    if m is None:
        return None
    try:
        data = json.loads(unescape(m.group(0)))
    except ValueError:
        return None
    message = data.get("message") if isinstance(data, dict) else None
    if not isinstance(message, str):
        return None
    message = message.strip()
    if not message.lower().startswith(("https://", "http://")) or "/verify/" not in message.lower():
        return None
    return message


def error_page(status: int, what: str, again: str) -> SiteError | None:
    """The error a tab CNKI answered with an HTTP error page is (its document's `status`), when a
    reader or a download's order page was expected: 429 RATE_LIMITED, 404/410 and 5xx
    SITE_UNAVAILABLE, both retryable, 418 (the CDN's refusal) SITE_UNAVAILABLE `cdn_refused`; None for any other status. `what` names the page, `again`
    says what to do. Such a page was waited on to the end of the call's time and then reported as
    something else (SIDE_EFFECT_UNCERTAIN 未见拒绝页面, READER_UNSUPPORTED 阅读页缺少正文容器).
    Unlike `classify_page`, a 404 here is no expired locator: the reader entry and the order URL
    are the site's own links of a paper just shown, so their 404 is the site failing."""
    if status == 429:
        return RateLimited(f"知网限制当前请求频率（{what}返回 HTTP 429）：{again}", evidence="status 429")
    if status == CDN_STATUS:
        return network_path_refused(
            f"知网拒绝了{what}（HTTP 418）：{CDN_ADVICE}", reason=CDN_REFUSED, evidence="status 418"
        )
    if status in (404, 410) or status >= 500:
        return SiteUnavailable(f"知网的{what}返回错误（HTTP {status}）：{again}", evidence=f"status {status}")
    return None


def classify_page(html: str, url: str | None = None, status: int | None = None) -> GateVerdict:
    """Classify a response before any content parser sees it. Order follows site-rules.md §1.4, then §2.5/2.6."""
    if status == 429:
        return GateVerdict(kind=GateKind.RATE_LIMITED, evidence="status 429")
    if challenge_url(html) is not None:  # before the 403 rule: this 403 is a slider, not a refusal
        return GateVerdict(kind=GateKind.CHALLENGE, evidence='{"code":-403} verify URL')
    title = _TITLE.search(html[:20_000])
    if title and title.group(1).strip() == "安全验证":
        return GateVerdict(kind=GateKind.CHALLENGE, evidence="<title>安全验证</title>")
    if _VERICODE_HINT.search(html.lower()) and (m := _VERICODE.search(html)):
        return GateVerdict(kind=GateKind.CHALLENGE, evidence=m.group(0))
    if status == 401:
        return GateVerdict(kind=GateKind.LOGIN, evidence="status 401")
    if url and "//login." in url.lower():
        return GateVerdict(kind=GateKind.LOGIN, evidence="url //login.")
    if status == 403:
        return GateVerdict(kind=GateKind.DENIED, evidence="status 403")
    if status == 404:
        return GateVerdict(kind=GateKind.NOT_FOUND, evidence="status 404")
    if status is not None and status >= 500:
        return GateVerdict(kind=GateKind.SERVER_ERROR, evidence=f"status {status}")
    if status == CDN_STATUS:
        return GateVerdict(kind=GateKind.CDN_REFUSED, evidence=f"status {status}")
    if status == 200 and len(html) < 2_000 and _BLANK.fullmatch(html):  # a page still drawing has no status
        return GateVerdict(kind=GateKind.CDN_REFUSED, evidence="empty answer")
    if url and "/verify/" in url.lower():
        return GateVerdict(kind=GateKind.CHALLENGE, evidence="url /verify/")

    tree = visible_tree(html)
    if evidence := _challenge_marker(tree):
        return GateVerdict(kind=GateKind.CHALLENGE, evidence=evidence)
    text = body_text(tree)
    has_rows = _has_rows(tree)
    has_content = has_rows or tree.css_first(_CONTENT) is not None
    if not has_content and (m := _CHALLENGE_TEXT.search(text)):
        return GateVerdict(kind=GateKind.CHALLENGE, evidence=m.group(0))
    if tree.css_first("input[type=password]") is not None and (
        is_login_url(url) or (url is None and not has_content)
    ):
        return GateVerdict(kind=GateKind.LOGIN, evidence="visible input[type=password]")
    if not has_content and (m := _RATE_TEXT.search(text)):
        return GateVerdict(kind=GateKind.RATE_LIMITED, evidence=m.group(0))
    if not has_content and (m := _DENIED_TEXT.search(text)):
        return GateVerdict(kind=GateKind.DENIED, evidence=m.group(0))
    grid_context = tree.css_first(_GRID_CONTEXT) is not None or len(text) < _SHORT_BODY
    # The real zero-result answer is `p.no-content` (value="") reading 抱歉，暂无数据，请稍后重试。:
    # the words of a busy site, but the grid parser's to judge (zero, or a refused query), never
    # a temporarily empty page. A busy site answers `div.no-content > p` without that paragraph.
    zero_paragraph = tree.css_first("p.no-content") is not None
    if not has_rows and grid_context and not zero_paragraph and (m := _TEMP_EMPTY_TEXT.search(text)):
        return GateVerdict(kind=GateKind.TEMPORARILY_EMPTY, evidence=m.group(0))
    return GateVerdict(kind=GateKind.CLEAR)


def _challenge_marker(tree: LexborHTMLParser) -> str | None:
    for frame in tree.css("iframe"):
        probe = f"{attr(frame, 'src') or ''} {attr(frame, 'title') or ''}"
        if _CAPTCHA_WORD.search(probe):
            return "iframe captcha/verify"
    for sel in _CAPTCHA_SELECTORS:
        if tree.css_first(sel) is not None:
            return sel
    box = tree.css_first(".read-btn-boxXml")
    if box is not None and box.css_first(".slider-wrapper") is not None and _SLIDER_TEXT.search(text_of(box)):
        return ".read-btn-boxXml .slider-wrapper"
    if tree.css_first(".verifycode #vericode") and tree.css_first(".verifycode #changeVercode"):
        return ".verifycode #vericode"
    return None


def _has_rows(tree: LexborHTMLParser) -> bool:
    for tr in tree.css("table.result-table-list tbody tr, table.GridTableContent tr"):
        link = tr.css_first("td.name a, a.fz14")
        if link is not None and text_of(link):
            return True
    return False


def raise_for_verdict(verdict: GateVerdict) -> None:
    """Turn a non-clear verdict into its typed error (callers that want exceptions, not verdicts)."""
    errors: dict[GateKind, type[CnkiError]] = {
        GateKind.CHALLENGE: VerificationRequired,
        GateKind.LOGIN: LoginRequired,
        GateKind.DENIED: AccessDenied,
        GateKind.TEMPORARILY_EMPTY: SiteTemporarilyEmpty,
        GateKind.RATE_LIMITED: RateLimited,
        GateKind.NOT_FOUND: LocatorExpired,
        GateKind.UNSUPPORTED: ParserUnsupported,
        GateKind.SERVER_ERROR: SiteUnavailable,
    }
    if verdict.kind is GateKind.CDN_REFUSED:
        what = "HTTP 418" if verdict.evidence.startswith("status") else "空白页面"
        raise network_path_refused(
            f"知网拒绝了这次访问（{what}）：{CDN_ADVICE}", reason=CDN_REFUSED, evidence=verdict.evidence
        )
    error = errors.get(verdict.kind)
    if error is not None:
        raise error(evidence=verdict.evidence)


# --- header identity ----------------------------------------------------------------------


# An account name that is a phone number or an e-mail address (CNKI accounts are often registered
# with one; the badge's `title` holds it whole): it goes to the MCP client and its model provider,
# and into saved operation records, so only enough of it to tell two accounts apart is kept.
_PHONE = re.compile(r"\+?(?:86)?(1\d{2})\d{4}(\d{4})")
_EMAIL = re.compile(r"([^@\s]{1,2})[^@\s]*(@\S+)")


def masked_account(name: str | None) -> str:
    """`name` with a phone number's middle digits and an e-mail's local part masked."""
    text = (name or "").strip()
    if (phone := _PHONE.fullmatch(text)) is not None:
        return f"{phone.group(1)}****{phone.group(2)}"
    if (email := _EMAIL.fullmatch(text)) is not None:
        return f"{email.group(1)}***{email.group(2)}"
    return text


def read_header_identity(html: str) -> HeaderIdentity:
    """Who the kns header says we are (site-rules.md §2.6), from visible elements only."""
    tree = visible_tree(html)
    institutions: list[str] = []
    for node in tree.css(_INSTITUTION_SELECTORS):
        name = text_of(node) or attr(node, "data-institution-name") or ""
        if name and name not in institutions:
            institutions.append(name)

    personal_name: str | None = None
    personal = False
    badge = tree.css_first(".ecp_header_personalName_loginbg")
    if badge is not None:
        personal = True
        name_node = badge.css_first(".ecp_header_personalName")
        personal_name = masked_account(attr(name_node, "title") or text_of(name_node)) or None
    if not personal:
        personal = any(text_of(n).lower() in _LOGOUT_TEXTS for n in tree.css("a, button"))

    ready = bool(institutions) or any(_HEADER_WORDS.search(text_of(n)) for n in tree.css(_HEADER_AREAS))
    return HeaderIdentity(
        ready=ready,
        personal=IdentityKind.AUTHENTICATED if personal else IdentityKind.NOT_OBSERVED,
        personal_name=personal_name,
        institutions=institutions,
    )
