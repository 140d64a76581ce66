"""CNKI's URLs: entry pages on the real hosts or on one origin (`CNKI_SITE_ORIGIN`, the
simulator), which URLs count as CNKI's, which are login pages, and what may be shown to a client."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlsplit

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


def unsent_net_error(exc: BaseException) -> str | None:
    """The `net::ERR_…` an exception names when it is one of UNSENT_NET_ERRORS, else None."""
    found = _NET_ERROR.search(str(exc))
    return found.group(0) if found and found.group(0) in UNSENT_NET_ERRORS else None


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
