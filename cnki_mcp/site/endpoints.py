"""CNKI's URLs: entry pages on the real hosts or on one origin (`CNKI_SITE_ORIGIN`, the
simulator), which URLs count as CNKI's, which are login pages, and what may be shown to a client."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

from cnki_mcp.settings import Settings

ADV_SEARCH_PATH = "/kns8s/AdvSearch"
GRID_PATH_MARK = "/brief/grid"
# Query keys that make a URL secret (facts §1.1 PublicURL rule).
SECRET_KEYS = ("token", "ticket", "session", "password", "signature", "invoice", "nonce")


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
        parts = urlsplit(url)
        if self.one_origin:
            o = urlsplit(self.one_origin)
            if (parts.scheme, parts.netloc) == (o.scheme, o.netloc):
                return True
        host = (parts.hostname or "").lower()
        return parts.scheme == "https" and (host == "cnki.net" or host.endswith(".cnki.net"))

    def is_login_url(self, url: str | None) -> bool:
        if not url:
            return False
        if "//login." in url:
            return True
        if self.one_origin and self.is_site_url(url):
            return urlsplit(url).path.lower().startswith("/login")
        return False

    def public_url(self, url: str | None) -> str | None:
        """A detail URL safe to show: a CNKI page whose path holds `abstract` and whose query
        carries no secret-looking key. Anything else is internal only."""
        if not url or not self.is_site_url(url):
            return None
        parts = urlsplit(url)
        if "abstract" not in parts.path.lower():
            return None
        for key, _ in parse_qsl(parts.query, keep_blank_values=True):
            if any(s in key.lower() for s in SECRET_KEYS):
                return None
        return url
