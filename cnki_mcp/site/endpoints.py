"""CNKI's URLs: entry pages on the real hosts or on one origin (`CNKI_SITE_ORIGIN`, the
simulator), which URLs count as CNKI's, which are login pages, and what may be shown to a client."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from cnki_mcp.errors import CnkiError, SiteUnavailable, network_path_refused
from cnki_mcp.identity import SECRET_QUERY_WORDS, is_cnki_host, odd_authority, public_url
from cnki_mcp.settings import Settings

ADV_SEARCH_PATH = "/kns8s/AdvSearch"
GRID_PATH_MARK = "/brief/grid"
# CNKI's guest session cookie, planted by the home page; without it kns8s pages redirect to the
# slider and grid POSTs are refused (docs/simulator.md "Challenges, blocks and sessions").
SESSION_COOKIES = frozenset({"KNS2COOKIE"})
# Query keys that make a URL secret (site-rules.md §1.1 PublicURL rule).
SECRET_KEYS = SECRET_QUERY_WORDS

# The paths of CNKI's search, detail and journal pages, as a path-mode proxy keeps them.
_CNKI_PATH = re.compile(r"/(?:kns8s|kns8|kns|kcms2|kcms|knavi)/", re.IGNORECASE)
_URL_IN_TEXT = re.compile(r"""(https?://[^\s?#'"()<>]*)[?#][^\s'"()<>]*""")


def without_query(text: str) -> str:
    """`text` with every URL cut to scheme://host/path: a detail locator's query (`v=`), reader
    invoice/nonce and tokens stay internal when an error detail reaches the client."""
    return _URL_IN_TEXT.sub(r"\1", text)


# Failures of a navigation or request that reached no server: no connection was made, so nothing
# was sent (`download_outcomes`: an order CNKI could charge for; `login.py`: a login page). Any
# other (a reset, a timeout mid-answer) may come after the server took the request.
UNSENT_NET_ERRORS = frozenset({
    "net::ERR_NAME_NOT_RESOLVED", "net::ERR_NAME_RESOLUTION_FAILED", "net::ERR_CONNECTION_REFUSED",
    "net::ERR_INTERNET_DISCONNECTED", "net::ERR_ADDRESS_UNREACHABLE", "net::ERR_PROXY_CONNECTION_FAILED",
    "net::ERR_CONNECTION_TIMED_OUT",
})  # fmt: skip
_NET_ERROR = re.compile(r"net::ERR_[A-Z0-9_]+")


# What a net error on the way to CNKI usually means for a person, and what to do: details.network_cause
# and the message's advice (docs/simulator.md "The network path"). Exact names are looked up before
# prefixes: several errors share a prefix with a different cause (ERR_PROXY_AUTH_* is a proxy that
# is up, ERR_NETWORK_CHANGED a switch of network that a retry survives, ERR_CERT_DATE_INVALID a wrong clock).
_CNKI_DIRECT = "在代理软件中把 cnki.net 设为直连（Linux 上也可在 AI 客户端配置的 env 中设 NO_PROXY=cnki.net,.cnki.net；GNOME 桌面会话中改在系统的网络代理设置里把 *.cnki.net 设为忽略的主机）"
_PROXY_UPSTREAM = ("浏览器的代理在运行，但代理自己连不上知网（代理的节点或上游出了问题）：在代理软件中换一个节点，或"
                   + _CNKI_DIRECT + "后重试")
_NET_CAUSE_NAMES: dict[str, tuple[str, str]] = {
    "net::ERR_PROXY_AUTH_REQUESTED": ("proxy_auth", "代理要求登录（用户名和密码），浏览器无法代为登录：改用不需登录的代理，或" + _CNKI_DIRECT + "后重试"),
    "net::ERR_PROXY_AUTH_UNSUPPORTED": ("proxy_auth", "代理要求一种浏览器不支持的登录方式：改用不需登录的代理，或" + _CNKI_DIRECT + "后重试"),
    "net::ERR_PROXY_AUTH_REQUESTED_WITH_NO_CONNECTION": ("proxy_auth", "代理要求登录（用户名和密码），浏览器无法代为登录：改用不需登录的代理，或" + _CNKI_DIRECT + "后重试"),
    # Chromium refuses every proxy of --proxy-server that it cannot use: one given with user:password, or an unknown scheme
    "net::ERR_NO_SUPPORTED_PROXIES": ("proxy_invalid", "浏览器的代理设置不能使用（--proxy-server 不能带用户名和密码，或代理的协议不受支持）："
                                      "改正或删去 CNKI_BROWSER_ARGS 中的 --proxy-server 后重试"),
    # the proxy answered, but its own connection onward (its node, its upstream) did not reach CNKI
    "net::ERR_TUNNEL_CONNECTION_FAILED": ("proxy_upstream", _PROXY_UPSTREAM),
    "net::ERR_SOCKS_CONNECTION_FAILED": ("proxy_upstream", _PROXY_UPSTREAM),
    "net::ERR_SOCKS_CONNECTION_HOST_UNREACHABLE": ("proxy_upstream", _PROXY_UPSTREAM),
    "net::ERR_NETWORK_CHANGED": ("network_changed", "访问途中网络切换了（Wi-Fi、VPN 或代理的开关）：网络稳定后重试即可"),
    "net::ERR_NETWORK_IO_SUSPENDED": ("network_changed", "访问途中电脑进入了睡眠，网络被挂起：唤醒后重试即可"),
    "net::ERR_NETWORK_ACCESS_DENIED": ("blocked", "本机拦截了浏览器的网络访问（防火墙、安全软件或系统的隐私设置）：允许浏览器（Chrome/Edge/Chromium）联网后重试"),
    "net::ERR_CERT_DATE_INVALID": ("clock", "知网的证书被判为过期或尚未生效：多半是本机的日期、时间或时区不对，校准系统时间后重试；"
                                   "时间无误时，可能是要网页登录的 Wi-Fi 或解密 HTTPS 的代理拦在前面"),
}
_NET_CAUSES: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("net::ERR_PROXY_", "net::ERR_SOCKS_"), "proxy_down",
     "浏览器被设为经代理访问（系统或代理软件的代理设置，Linux 上还有环境变量 HTTPS_PROXY / ALL_PROXY，"
     "或 CNKI_BROWSER_ARGS 的 --proxy-server），代理却连不上（代理软件没有运行）。启动代理，或关闭这些代理设置；只让知网不经代理时，"
     + _CNKI_DIRECT + "，然后重试"),
    (("net::ERR_CERT_", "net::ERR_SSL_", "net::ERR_BAD_SSL_"), "tls",
     "知网的 HTTPS 连接无法验证：常见于要网页登录的 Wi-Fi（酒店、校园网的登录页拦在前面）或解密 HTTPS 的"
     "代理、安全软件。先在浏览器里完成网络登录，或关闭该代理后重试"),
    (("net::ERR_NAME_NOT_RESOLVED", "net::ERR_NAME_RESOLUTION_FAILED"), "dns",
     "无法解析知网的域名：检查网络连接和 DNS 设置；要网页登录的 Wi-Fi 须先登录"),
    (("net::ERR_INTERNET_DISCONNECTED", "net::ERR_ADDRESS_UNREACHABLE"), "offline",
     "本机没有可用的网络：连上网络后重试"),
    (("net::ERR_CONNECTION_", "net::ERR_TIMED_OUT", "net::ERR_EMPTY_RESPONSE"), "connection",
     "连接知网失败：检查网络；经代理或 VPN 时知网常断开其连接，关闭代理或把 cnki.net 设为直连后重试"),
)  # fmt: skip


# Causes only the person can end (start or correct the proxy, log in to the Wi-Fi's page, set the
# clock, let the browser through the firewall): asked again from the same computer they fail the
# same, so they are the network path refused (`network_path_refused`: not retried, `retryable`
# false), as the CDN's refusal is. DNS, no network, a reset or a network switch can pass by themselves.
PERSON_ENDS_CAUSES = frozenset({"proxy_down", "proxy_upstream", "proxy_auth", "proxy_invalid", "tls", "clock", "blocked"})
# ... but these net errors of theirs also clear within seconds: a proxy app restarting (its port
# closed for about a second), a proxy node failing one CONNECT, a TLS handshake reset on a flaky
# link or a record corrupted on it. `CnkiSite._with_retries` asks once more, a few seconds later,
# before one is final. A proxy wanting a login, an unusable proxy setting, a certificate refused (a
# captive portal, an inspecting proxy, the clock), a firewall and the other TLS errors (no common
# version or cipher, a client certificate wanted, a pinned key missing) answer the same every time.
MAY_CLEAR_NET_ERRORS = frozenset({
    "net::ERR_PROXY_CONNECTION_FAILED", "net::ERR_TUNNEL_CONNECTION_FAILED", "net::ERR_SOCKS_CONNECTION_FAILED",
    "net::ERR_SOCKS_CONNECTION_HOST_UNREACHABLE", "net::ERR_SSL_PROTOCOL_ERROR", "net::ERR_SSL_BAD_RECORD_MAC_ALERT",
})  # fmt: skip


def unreachable(what: str, known: tuple[str, str, str], *, lead: str = "", **details: Any) -> SiteUnavailable:
    """SITE_UNAVAILABLE for a failure to reach CNKI whose cause is known (`network_cause`): its
    advice in the message (after `lead`), `details.network_cause` and `net_error`; not retryable
    when the person must act."""
    message = f"{lead}无法连接知网（{what}）：{known[2]}"
    if known[1] in PERSON_ENDS_CAUSES:
        return network_path_refused(message, **details, network_cause=known[1], net_error=known[0])
    return SiteUnavailable(message, **details, network_cause=known[1], net_error=known[0])


def may_clear(error: CnkiError) -> bool:
    """A refused network path (`unreachable`) whose net error can clear within seconds
    (MAY_CLEAR_NET_ERRORS): worth one more request a few seconds later."""
    net = error.details.get("net_error")
    return not error.retryable and isinstance(net, str) and net in MAY_CLEAR_NET_ERRORS


def network_cause(text: str) -> tuple[str, str, str] | None:
    """(net error, cause, advice) for the first `net::ERR_…` in `text` that is a known failure to
    reach CNKI (the proxy, TLS, the clock, DNS, no network, the connection), else None."""
    found = _NET_ERROR.search(text)
    if found is None:
        return None
    if (named := _NET_CAUSE_NAMES.get(found.group(0))) is not None:
        return found.group(0), *named
    for prefixes, cause, advice in _NET_CAUSES:
        if found.group(0).startswith(prefixes):
            return found.group(0), cause, advice
    return None


# ... and, for an order CNKI could charge for (`download_outcomes.NetFailed.unsent`), the failures
# that come before the request leaves: the proxy refused it or reached no server, the certificate was
# refused, no TLS version or cipher was agreed, the firewall refused the socket. Not
# ERR_SSL_PROTOCOL_ERROR or another TLS record error: Chromium also raises them for a record read
# after the request was written (a reused keep-alive connection to the order host, TLS False
# Start), so whether CNKI took the order is unknown (docs/site-rules.md §2.7).
_UNSENT_BEFORE_REQUEST = (
    "net::ERR_PROXY_", "net::ERR_TUNNEL_CONNECTION_FAILED", "net::ERR_SOCKS_", "net::ERR_NO_SUPPORTED_PROXIES",
    "net::ERR_CERT_", "net::ERR_SSL_VERSION_OR_CIPHER_MISMATCH", "net::ERR_NETWORK_ACCESS_DENIED",
)  # fmt: skip


def request_never_left(error: str) -> bool:
    """Whether a request failing with the net error `error` was never sent to the server."""
    return error in UNSENT_NET_ERRORS or error.startswith(_UNSENT_BEFORE_REQUEST)


def unsent_net_error(exc: BaseException) -> str | None:
    """The `net::ERR_…` an exception names when it is one of UNSENT_NET_ERRORS, else None."""
    found = _NET_ERROR.search(str(exc))
    return found.group(0) if found and found.group(0) in UNSENT_NET_ERRORS else None


# CNKI sends a visitor from outside the mainland (or through a foreign proxy or VPN) to its overseas
# site: oversea.cnki.net, chn.oversea.cnki.net (docs/simulator.md "The network path"). Its pages
# are not the domestic site's: the product never reads them as if they were.
OVERSEAS_SITE = "overseas_site"  # SITE_UNAVAILABLE's details.reason


def overseas_host(url: str | None) -> str | None:
    """The host of `url` when it is CNKI's overseas site (a cnki.net host with an `oversea…` label),
    else None."""
    try:
        host = (urlsplit(url or "").hostname or "").lower()
    except ValueError:
        return None
    if not is_cnki_host(host) or not any(label.startswith("oversea") for label in host.split(".")):
        return None
    return host


def overseas_refusal(host: str) -> SiteUnavailable:
    """SITE_UNAVAILABLE for a CNKI page that sent the browser to the overseas site `host`."""
    return network_path_refused(
        f"知网把访问转到了海外版（{host}）：知网按 IP 判断访问者在中国大陆以外（境外网络，或经境外代理/VPN）。"
        "本服务只使用国内站 www.cnki.net / kns.cnki.net：关闭境外代理或 VPN（或把 cnki.net 设为直连），"
        "或在中国大陆网络（如所在机构的网络）中使用后重试",
        reason=OVERSEAS_SITE, host=host,
    )  # fmt: skip


REASON_CHARS = 200  # an error's `reason` from an exception's text is cut to this many characters


def error_reason(exc: BaseException, *, first_line: bool = False) -> str:
    """An exception's text as an error's `reason` for the client: every URL cut to its path
    (`without_query`), at most REASON_CHARS characters; `first_line`: only its first line (a
    Playwright error goes on with its call log). An exception without text is named by its class."""
    text = str(exc)
    if first_line and text:
        text = text.splitlines()[0]
    return without_query(text or type(exc).__name__)[:REASON_CHARS]


@dataclass(frozen=True, slots=True)
class Endpoints:
    settings: Settings

    @property
    def one_origin(self) -> str | None:
        return self.settings.site_origin

    @property
    def adv_search(self) -> str:
        return self.settings.origin("kns") + ADV_SEARCH_PATH

    @property
    def www_home(self) -> str:
        return self.settings.origin("www") + "/"

    def is_site_url(self, url: str | None) -> bool:
        """True for CNKI's own pages: https on cnki.net (or the configured single origin)."""
        if not url:
            return False
        try:  # a page may name anything: `https://[evil/…`, a host NFKC-folding to `@` (`\uff20`)
            parts = urlsplit(url)
            host = (parts.hostname or "").lower()
        except ValueError:  # these raised, and ended the call INTERNAL
            return False
        if odd_authority(parts.netloc):
            return False  # a host the browser reads otherwise (`evil.com\\.cnki.net`), or user info
        if self.one_origin:
            o = urlsplit(self.one_origin)
            if (parts.scheme, parts.netloc) == (o.scheme, o.netloc):
                return True
        return parts.scheme == "https" and is_cnki_host(host)

    def is_verify_url(self, url: str | None) -> bool:
        """CNKI's slider page (`/verify/home?captchaType=…`, site-rules.md §2.5): solving one sets
        the browser's verification cookie, whatever tab it is solved in."""
        return self.is_site_url(url) and urlsplit(url or "").path.lower().startswith("/verify/")

    def is_login_url(self, url: str | None) -> bool:
        if not url:
            return False
        if "//login." in url:
            return True
        if self.one_origin and self.is_site_url(url):
            return urlsplit(url).path.lower().startswith("/login")
        return False

    def proxied_host(self, url: str | None) -> str | None:
        """The host of a CNKI page a library proxy serves under its own host (site-rules.md §2.6):
        EZproxy and host-mode WebVPN write the CNKI host into theirs (`kns-cnki-net-s.libproxy.…`,
        `kns.cnki.net.ezproxy.…`), path-mode WebVPN keeps CNKI's path after its own
        (`webvpn.…/https/<hex>/kns8s/AdvSearch`). None for CNKI's own pages and any other page."""
        if not url or self.is_site_url(url):
            return None
        try:
            parts = urlsplit(url)
            host = (parts.hostname or "").lower()
        except ValueError:
            return None
        if parts.scheme not in ("http", "https") or not host or is_cnki_host(host):
            return None  # CNKI's own host over http is CNKI, not a proxy named kns.cnki.net
        if "cnki-net" in host or "cnki.net." in host or _CNKI_PATH.search(parts.path):
            return host
        return None

    def public_url(self, url: str | None) -> str | None:
        """A detail URL safe to show: the one rule of `identity.public_url` (a CNKI page whose
        path holds `abstract`, no secret-looking key, no user info); the single origin counts
        as CNKI's. Anything else is internal only."""
        return public_url(url, (self.one_origin,) if self.one_origin else ())


def same_url(a: str, b: str) -> bool:
    """One URL however it is written: host case, percent-encoding, query order and fragment aside
    (the page a solved slider or a login returns a tab to is the one asked for, written its way)."""
    x, y = urlsplit(a), urlsplit(b)
    return (x.scheme, x.netloc.lower(), unquote(x.path), sorted(parse_qsl(x.query, keep_blank_values=True))) == (
        y.scheme, y.netloc.lower(), unquote(y.path), sorted(parse_qsl(y.query, keep_blank_values=True))
    )  # fmt: skip
